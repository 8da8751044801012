"""A whole game played only through the accessibility tree (issue 57), as a screen reader's user plays it:
Playwright's role and label locators and the keyboard, no CSS selector, no coordinates (when to act is read
from the page's state, which the tree must then agree with). In each language,
on a French design, its swapped twin and the Spanish baraja, against a bot to the end. Every play of the
game (the server's events say which) is heard in the live region in the reader's words ("Queen of
diamonds", "Valete de copas", "Sota de oros"), a capture read as its sum, and so are the turns, the
round's end and the game's end with the score. axe finds no serious or critical violation on the way."""

from __future__ import annotations

import re
import time

import pytest

from ..browser import Page, axe_check, button, card_words, http, needs_chromium, say, shot, version, words

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed")

# language: the deck design the reader picks
GAMES = {"en": "french", "pt-BR": "french_swapped", "es": "spanish"}

# every text the live region takes, in order (the observer is set on the element the role names)
HEAR = """(live) => {
  window.heard = [];
  new MutationObserver(() => { if (live.textContent) window.heard.push(live.textContent); })
    .observe(live, { childList: true, characterData: true, subtree: true });
}"""


def spoken_card(card: str, deck: str, cat: dict) -> str:
    return card_words(card, deck, cat)


def spoken_play(event: dict, names: dict, deck: str, cat: dict) -> str:
    d = event["data"]
    who = names[d["seat"]]
    card = spoken_card(d["card"], deck, cat)
    taken = d["captured"]
    if not taken:
        return say(cat, "play.text.left", who=who, card=card)
    cards = " + ".join(spoken_card(c, deck, cat) for c in taken)
    worths = [int(c[:-1]) for c in [d["card"], *taken]]
    total = " + ".join(map(str, worths)) + f" = {sum(worths)}"
    if event["type"] == "FifteenTaken":
        both = " + ".join(spoken_card(c, deck, cat) for c in [d["card"], *taken])
        return say(cat, "play.text.fifteen", who=who, cards=both) + say(cat, "play.sum", sum=total)
    return say(cat, "play.text.takes", who=who, card=card, cards=cards) + say(cat, "play.sum", sum=total)


def _one_play(page, cat, lang):
    """TAKE THE 15 when offered; else the first card of the hand: CAPTURE when one way is marked, LEAVE ON
    TABLE when it may stay, else ↓ marks its first 15 and CAPTURE takes it."""
    take = page.get_by_role("button", name=re.compile("^" + re.escape(cat["play.take_fifteen"].split("{")[0])))
    if take.count():
        take.first.click()
        return
    hand = page.get_by_role("group", name=cat["me.cards"]).get_by_role("button")
    hand.first.click()
    capture = page.get_by_role("button", name=button("CAPTURE", lang))
    leave = page.get_by_role("button", name=button("LEAVE ON TABLE", lang))
    if capture.is_enabled():
        capture.click()
    elif leave.is_enabled():
        leave.click()
    else:
        page.keyboard.press("ArrowDown")  # the picked card has the focus: its first 15 is marked
        capture.click()


@pytest.mark.parametrize("lang", list(GAMES))
def test_a_whole_game_through_the_accessibility_tree(server, browser, lang):
    cat = words(lang)
    deck = GAMES[lang]
    p = Page(browser, "desktop", locale=lang)
    page = p.page
    try:
        page.goto(f"{server.url}/")
        page.get_by_role("button", name=button("OPEN A TABLE", lang)).click()
        home = page.get_by_role("region", name=cat["home.title"])
        home.get_by_label(cat["form.your_name"], exact=True).fill("Ana")
        # a select's name is its label's words, then its choice's ("Rules Selminha (21 or 31...)")
        def field(label):
            return home.get_by_label(re.compile("^" + re.escape(label)))

        field(cat["form.rules"]).select_option("del15")
        field(cat["form.deck"]).select_option(deck)
        field(cat["settings.target"]).select_option("10")
        page.get_by_role("button", name=button("CREATE INVITE", lang)).click()
        page.get_by_role("button", name=say(cat, "waiting.add_bot_to", n=2)).click()
        start = page.get_by_role("button", name=button("START THE GAME", lang))
        start.wait_for()
        page.get_by_role("status").evaluate(HEAR)
        start.click()
        table_id = page.url.split("/t/")[-1].split("?")[0]

        you = say(cat, "seat.you", name="Ana")
        turn = re.escape(cat["seat.describe_turn"])
        mine = page.get_by_role("group", name=re.compile("^" + re.escape(you) + ":.*" + turn))
        next_round = page.get_by_role("button", name=button("NEXT ROUND", lang))
        over = page.get_by_role("heading", name=cat["result.title"])
        plays = rounds = 0
        checked = False
        deadline = time.time() + 420
        # When to act is read from the page's state (one cheap look, as test_screens does); what to act on is
        # found in the accessibility tree, which must agree (our seat named as the one to play). Reading the
        # tree on every poll was the slow part (a game took 90 to 190 s; now about 25).
        while True:
            assert time.time() < deadline, f"{lang}: the game did not end ({rounds} rounds, {plays} plays)"
            status, busy, ours = page.evaluate(
                "[document.body.dataset.status, window.escobaShowing(), !!document.querySelector('.seat.you.turn')]")
            if busy:
                time.sleep(0.01)
                continue
            if status == "finished":
                break
            if status == "round_over":
                next_round.wait_for()
                if not checked:
                    axe_check(page, f"{lang} round over")
                    checked = True
                rounds += 1
                next_round.click()
                next_round.wait_for(state="hidden")
            elif status == "playing" and ours:
                mine.wait_for()
                if plays == 1:
                    axe_check(page, f"{lang} playing")
                seen = version(page)
                _one_play(page, cat, lang)
                plays += 1
                # the play is made: the turn passes (or the round or the game ends)
                page.wait_for_function(f"() => Number(document.body.dataset.version) > {seen}", timeout=20000)
            time.sleep(0.02)
        over.wait_for()
        shot(page, f"reader-game-over-{lang}")
        axe_check(page, f"{lang} game over")
        time.sleep(0.5)  # the last words said
        heard = page.evaluate("window.heard")

        events = http("GET", f"{server.url}/tables/{table_id}/events?after=0&limit=1000")["events"]
        view = http("GET", f"{server.url}/tables/{table_id}")
        names = {0: you, 1: view["seats"][1]["name"]}
        played = [e for e in events if e["type"] in ("CardPlayed", "FifteenTaken")]
        assert len(played) >= plays >= 5 and rounds >= 1
        said = "\n".join(heard)
        missing = [spoken_play(e, names, deck, cat) for e in played if spoken_play(e, names, deck, cat) not in said]
        assert not missing, (f"{lang}: {len(missing)} of {len(played)} plays never heard, first {missing[:3]};"
                             f" heard {heard[-5:]}")
        assert not re.search("[♦♥♠♣]", said), f"{lang}: a card named by its symbol: {said[:300]}"
        # the turns, a round's end and the game's end with its score were heard too
        assert say(cat, "say.your_turn") in said
        assert say(cat, "say.turn_of", name=names[1]) in said
        assert cat["say.round_over"].split("{")[0].strip() in said
        final = [x["points"] for x in view["scores"]]
        game_over = [h for h in heard if cat["say.game_over"].split("}")[1].split("{")[0].strip() in h]
        assert game_over and all(str(n) in game_over[-1] for n in final), (game_over, final)
        assert not p.errors, p.errors
    finally:
        p.close()
