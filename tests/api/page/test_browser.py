"""The table page in Debian's chromium: whole games against bots in each preset on a
390x844 touch phone and a 1280x800 screen, two players and a spectator with chat, the
end of a game. Screenshots go to ``test-artifacts/`` (look at them as a player would).

The app is served with its own strict Content-Security-Policy (api/http/headers.py: no inline script
or style, no eval); a violation is a console error, and every test fails on one.
"""

from __future__ import annotations

import re
import time

import pytest

from ..browser import (
    Page,
    add_bots,
    axe_check,
    http,
    in_viewport,
    my_turn,
    needs_chromium,
    no_overflow,
    open_table,
    play_turn,
    serve,
    shot,
    start,
    status,
    touch_drag,
    until,
    version,
)

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed")

BOT_NAMES = ("Carmen", "Tito", "Luna")
LOOK = """[document.body.dataset.status || '', window.escobaShowing(), !!document.querySelector('.seat.you.turn'),
  (document.querySelector('#strip li.latest') || {}).textContent || '']"""



def _round_over_checks(p, base, table_id, tag, rounds, preset):
    page = p.page
    # the score box comes into view over the felt, NEXT ROUND on screen
    in_viewport(page, "#round-box h2")
    in_viewport(page, "#next-round")
    no_overflow(page)
    text = page.text_content("#score-table")
    if preset == "del15":  # the setenta replaces most sevens
        assert "Setenta" in text and "Most sevens" not in text
    else:
        assert "Most sevens" in text
    # what was left on the table went to the last to capture: the server's event, shown
    events = http("GET", f"{base}/tables/{table_id}/events?after=0&limit=1000")["events"]
    ended = [e for e in events if e["type"] == "RoundEnded"][-1]["data"]
    if ended["leftovers"] and ended["to_seat"] is not None:
        assert "the last to capture:" in page.text_content("#strip")
        assert "went to" in page.text_content("#round-note")
    if rounds == 1:
        shot(page, f"{tag}-score-box")
        axe_check(page, f"{tag} score box")


class Game:
    """One page playing a whole game against bots, a step at a time (two games run side by side)."""

    def __init__(self, p, base, table_id, tag, preset, players, deadline_s=300):
        self.p, self.base, self.table_id, self.tag, self.preset, self.players = p, base, table_id, tag, preset, players
        self.rounds = self.moves = 0
        self.used_keys = self.used_drag = self.done = False
        self.bot_lines = set()
        self.deadline = time.time() + deadline_s

    def step(self):
        """Look once at the page and act if it is the player's to act; True once the game is over."""
        if self.done:
            return True
        page = self.p.page
        assert time.time() < self.deadline, f"{self.tag}: the game did not end ({self.rounds} rounds)"
        # one look at the page: the status, whether plays wait to be shown, whose turn, the latest play
        st, busy, mine, line = page.evaluate(LOOK)
        if line.startswith(BOT_NAMES):
            self.bot_lines.add(line)
        if busy:
            return False
        if st == "finished":
            self.finish()
            return True
        if st == "round_over":
            self.rounds += 1
            _round_over_checks(self.p, self.base, self.table_id, self.tag, self.rounds, self.preset)
            before = version(page)
            page.get_by_role("button", name="NEXT ROUND").click()
            until(page, f"Number(document.body.dataset.version) > {before}", what="the next deal")
        elif st == "playing" and mine:
            self.play()
        return False

    def play(self):
        page = self.p.page
        first = page.locator("#hand button.card").first.get_attribute("aria-label") or ""
        if self.p.kind == "phone" and not self.used_drag and self.moves >= 2 \
                and not page.locator("#fifteen button").count() and ("no 15" in first or "1 way " in first):
            # a finger drags the card onto the felt: it is played (its one 15, or left there)
            before = version(page)
            touch_drag(page, "#hand button.card", "#felt")
            until(page, f"Number(document.body.dataset.version) > {before}", what="the dragged card played")
            self.used_drag = True
        elif not self.used_keys and self.moves >= 1:
            play_turn(page, "keys")
            self.used_keys = True
        else:
            play_turn(page, "tap" if self.moves < 4 else "dom")
        self.moves += 1
        if self.moves == 3:
            shot(page, f"{self.tag}-playing")
            no_overflow(page)
            # the whole table on one screen: seats, felt, hand and buttons
            for sel in ["#felt", "#hand", "#capture", "#leave", ".seat.you"]:
                in_viewport(page, sel)
            seats = page.evaluate("[...document.querySelectorAll('.seat')].map(s => s.getBoundingClientRect())"
                                  ".map(r => [r.top, r.bottom, r.left, r.right])")
            vp = page.viewport_size
            assert len(seats) == self.players
            for top, bottom, left, right in seats:
                assert top >= 0 and bottom <= vp["height"] and left >= 0 and right <= vp["width"], seats
            axe_check(page, f"{self.tag} playing")

    def finish(self):
        page = self.p.page
        self.done = True
        # the game's end, in view
        in_viewport(page, "#result h2")
        in_viewport(page, "#rematch-yes")
        no_overflow(page)
        assert re.search(r"wins?\b", page.text_content("#result-text"))
        shot(page, f"{self.tag}-game-over")
        axe_check(page, f"{self.tag} game over")
        assert self.rounds >= 1 and self.moves >= 5
        assert self.used_keys
        if self.p.kind == "phone":
            assert self.used_drag
        # bots' plays were shown one by one: the strip named them as they came
        assert len(self.bot_lines) >= 3, self.bot_lines
        assert not self.p.errors, self.p.errors


GAMES = {
    # preset: on the phone and on the big screen, (bots, host's choices, the host's deck design)
    "selminha": {"phone": (3, {"target": 21}, None), "desktop": (3, {}, "spanish")},  # four: two teams
    "del15": {"phone": (3, {"target": 10}, None), "desktop": (1, {"target": 10}, None)},
    "cardgames": {"phone": (1, {}, "french_swapped"), "desktop": (1, {}, None)},
}


def _open_game(server, browser, kind, preset, bots, settings, deck):
    p = Page(browser, kind)
    page = p.page
    tag = f"game-{kind}-{preset}-{bots + 1}p"
    page.goto(f"{server.url}/")
    no_overflow(page)
    axe_check(page, f"{tag} home")
    table_id = open_table(page, server.url, preset, deck=deck, settings=settings)
    add_bots(page, bots)
    no_overflow(page)
    shot(page, f"{tag}-waiting", full_page=True)
    axe_check(page, f"{tag} waiting room")
    start(page)
    # you at the bottom, partners across, play turning as the preset says
    pos = dict(page.evaluate("[...document.querySelectorAll('.seat')].map(s => [s.dataset.seat, s.dataset.pos])"))
    after = "left" if preset == "cardgames" else "right"  # cardgames plays clockwise
    expect = {1: {"1": "top"}, 3: {"1": after, "2": "top", "3": "left" if after == "right" else "right"}}[bots]
    assert pos == {"0": "bottom", **expect}, pos
    assert ("to the left" if after == "left" else "to the right") in page.text_content("#direction")
    if deck == "spanish":
        until(page, "document.querySelectorAll('#table-cards .card').length > 0")
        # the baraja's cards named in the page's language (English here), never "7 de oros, worth 7"
        assert re.match(r"(?:Ace|Jack|Knight|King|[2-7]) of (?:coins|cups|swords|clubs), worth",
                        page.locator("#table-cards .card").first.get_attribute("aria-label"))
    return p, Game(p, server.url, table_id, tag, preset, bots + 1)


@pytest.mark.parametrize("preset", list(GAMES))
def test_a_whole_game_against_bots_on_a_phone_and_a_big_screen(server, browser, preset):
    """Two whole games of the preset at once: a 390x844 touch phone and a 1280x800 screen."""
    pages, games = [], []
    try:
        for kind, (bots, settings, deck) in GAMES[preset].items():
            p, game = _open_game(server, browser, kind, preset, bots, settings, deck)
            pages.append(p)
            games.append(game)
        while not all([g.step() for g in games]):
            time.sleep(0.02)
    finally:
        for p in pages:
            p.close()


def test_two_players_and_a_spectator_with_chat(server, browser):
    base = server.url
    host = Page(browser, "desktop")
    guest = Page(browser, "phone")
    watcher = Page(browser, "phone")
    try:
        table_id = open_table(host.page, base, "selminha")
        invite = host.page.input_value("#invite-url")
        assert invite.endswith(f"/t/{table_id}")
        host.page.get_by_role("button", name="COPY", exact=True).click()

        # the guest opens the link on a phone and takes a seat
        g = guest.page
        g.goto(invite)
        g.fill("#join-name", "Bruno")
        no_overflow(g)
        g.get_by_role("button", name="TAKE A SEAT").click()
        g.wait_for_selector("#waiting:not([hidden])")
        host.page.wait_for_selector(".waiting-seat:has-text('Bruno')")
        start(host.page)
        g.wait_for_selector("#felt:not([hidden])")

        # a spectator on a phone: no hand, the chat read only
        w = watcher.page
        w.goto(invite)
        w.get_by_role("button", name="WATCH").click()
        w.wait_for_selector("#felt:not([hidden])")
        assert w.locator("#me").is_hidden()

        # chat: the host writes; the phones show an unread mark on CHAT until opened
        host.page.fill("#chat-text", "hola")
        host.page.get_by_role("button", name="SEND").click()
        for ph in (g, w):
            ph.wait_for_selector("#chat-unread:not([hidden])")
            assert ph.text_content("#chat-unread").strip() == "1"
            assert "unread" in ph.get_attribute("#chat-toggle", "aria-label")
        shot(g, "humans-guest-unread")
        g.get_by_role("button", name="CHAT").click()
        g.wait_for_selector("#chat-lines li:has-text('hola')")
        assert g.locator("#chat-unread").is_hidden()
        g.fill("#chat-text", "buenas")
        g.get_by_role("button", name="SEND").click()
        host.page.wait_for_selector("#chat-lines li:has-text('buenas')")
        no_overflow(g)
        shot(g, "humans-guest-chat-open")
        axe_check(g, "guest chat open")
        g.get_by_role("button", name="Close the chat").click()
        assert g.locator("#chat").is_hidden()
        w.get_by_role("button", name="CHAT").click()
        w.wait_for_selector("#chat-lines li:has-text('buenas')")
        assert w.locator("#chat-form").is_hidden() and w.locator("#chat-note").is_visible()
        w.keyboard.press("Escape")  # Esc closes the chat panel too
        assert w.locator("#chat").is_hidden()

        # play the round out from both pages; the spectator follows
        deadline = time.time() + 120
        compared = False
        while status(host.page) == "playing" or status(g) == "playing":
            assert time.time() < deadline, "the round did not end"
            for pg in (host.page, g):
                if my_turn(pg):
                    if not compared:
                        v = version(pg)
                        until(w, f"Number(document.body.dataset.version) >= {v}")
                        until(w, "!window.escobaShowing()")
                        labels = "Array.from(document.querySelectorAll('#table-cards .card')).map(b => b.dataset.card)"
                        assert w.evaluate(labels) == pg.evaluate(labels)
                        shot(w, "humans-spectator-phone")
                        axe_check(w, "spectator")
                        compared = True
                    play_turn(pg)
            time.sleep(0.03)
        for pg in (host.page, g, w):
            pg.wait_for_selector("#round-box:not([hidden])", timeout=15000)
            until(pg, "!window.escobaShowing()")
            in_viewport(pg, "#round-box h2")
            no_overflow(pg)
        in_viewport(g, "#next-round")
        assert w.locator("#next-round").is_hidden()
        shot(w, "humans-spectator-score-box")
        g.get_by_role("button", name="NEXT ROUND").click()
        host.page.wait_for_selector("#round-box", state="hidden", timeout=10000)
        assert "Round 2" in host.page.text_content("#round-info")
        for x in (host, guest, watcher):
            assert not x.errors, x.errors
    finally:
        for x in (host, guest, watcher):
            x.close()


def test_a_bots_play_is_shown_at_a_pace_a_person_can_follow(browser):
    """At the page's own pace: the card travels, stays lit, and the strip and the live line say it."""
    s = serve()
    p = Page(browser, "phone", pace="1")
    page = p.page
    try:
        open_table(page, s.url, "selminha")
        add_bots(page, 1)
        start(page)  # the host deals: the bot leads
        page.wait_for_selector(".figure.flying", timeout=15000)  # the card on its way from the bot's seat
        t0 = time.time()
        shot(page, "bot-play-flying")
        page.wait_for_selector("#strip li.latest:has-text('Carmen')", timeout=10000)
        line = page.text_content("#strip li.latest")
        assert "Carmen" in line and ("left on the table" in line or "takes" in line)
        assert "Carmen" in page.text_content("#live")
        lit = page.locator("#table-cards .card.just-played, #table-cards .card.taking")
        if "left on the table" in line:
            assert lit.count() == 1
        shot(page, "bot-play-shown")
        # the turn passes only once the play has been shown
        page.wait_for_selector(".seat.you.turn", timeout=10000)
        assert time.time() - t0 >= 0.5
        assert not p.errors, p.errors
    finally:
        p.close()
        s.stop()


def test_the_page_works_under_its_content_security_policy(server, browser):
    """The app's own CSP blocks nothing the page needs while it opens a table, takes a socket,
    shows plays and the score; and no site can frame the page."""
    p = Page(browser, "desktop")
    page = p.page
    try:
        response = page.goto(f"{server.url}/")
        csp = response.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "style-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "unsafe" not in csp
        open_table(page, server.url, "del15")
        add_bots(page, 1)
        start(page)
        until(page, "document.body.dataset.live === 'yes'", what="the socket open")
        until(page, "!!document.querySelector('.seat.you.turn') && !window.escobaShowing()", what="a bot's play shown",
              timeout=60)  # the suite's first browser game: a cold server and browser on a busy machine
        play_turn(page)
        assert not p.errors, p.errors
    finally:
        p.close()
