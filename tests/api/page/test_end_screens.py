"""The score where the eye is (issue 57): at a round's end and at the game's end the totals stand in
their headlines ("21–19"), inside the window without scrolling at every screen size the issue
names, and the round box's table fits a phone held either way. The games are played out through
HTTP (two seated players), then each screen opens the table with a player's seat token."""

from __future__ import annotations

import random
import re

import pytest

from ..browser import Page, needs_chromium, say, seat_token, shot, until, words
from ..conftest import Client, play_out

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

# name: (width, height, touch), the reader's language turning from one size to the next
SIZES = {
    "phone-390x844": ((390, 844, True), "es"),
    "phone-sideways-844x390": ((844, 390, True), "pt-BR"),
    "tablet-upright-820x1180": ((820, 1180, True), "en"),
    "tablet-sideways-1180x820": ((1180, 820, True), "es"),
    "desktop-1280x800": ((1280, 800, False), "pt-BR"),
}

# the element's box against the window's, and the overlay's own scrolling
LOOK = """(sel) => {
  const el = document.querySelector(sel);
  const r = el.getBoundingClientRect();
  const o = document.getElementById('overlay');
  const t = document.getElementById('score-table').getBoundingClientRect();
  const s = document.querySelector('#round-box .scroll');
  return { box: [r.left, r.top, r.right, r.bottom], w: innerWidth, h: innerHeight, text: el.textContent,
           overlayScrolls: o.scrollHeight > o.clientHeight + 1, overlayTop: o.scrollTop,
           table: [t.left, t.top, t.right, t.bottom], tableScrolls: s.scrollWidth > s.clientWidth + 1 };
}"""


def _open(browser, size, lang):
    (w, h, touch) = size
    extra = {"viewport": {"width": w, "height": h}, "locale": lang}
    if touch:
        extra.update(is_mobile=True, has_touch=True, device_scale_factor=2)
    return Page(browser, "phone" if touch else "desktop", **extra)


def _inside(look):
    x0, y0, x1, y1 = look["box"]
    return x0 >= -0.5 and y0 >= -0.5 and x1 <= look["w"] + 0.5 and y1 <= look["h"] + 0.5


@pytest.fixture(scope="module")
def games(server):
    """One table stopped at its first round's end, one played to its end (Ana and Bea, del15 to 10)."""
    client = Client(server.app.test_client())
    out = {}
    for until_status in ("round_over", "finished"):
        host = client.create(preset="del15", settings={"target": 10})
        tid = host["table_id"]
        guest = client.sit(tid, name="Bea")
        client.ok(tid, host["token"], type="start")
        view = play_out(client, tid, {0: host["token"], 1: guest["token"]}, random.Random(57), until=until_status)
        assert view["status"] == until_status
        out[until_status] = (tid, host["token"], client.view(tid, host["token"]))
    return out


@pytest.mark.parametrize("screen", list(SIZES))
def test_the_round_and_the_game_score_are_in_view(server, browser, games, screen):
    size, lang = SIZES[screen]
    cat = words(lang)
    for state in ("round_over", "finished"):
        tid, token, view = games[state]
        p = _open(browser, size, lang)
        page = p.page
        try:
            seat_token(page, server.url, tid, token)
            page.goto(f"{server.url}/t/{tid}")
            page.wait_for_selector("#overlay:not([hidden])")
            until(page, "!window.escobaShowing()")
            shot(page, f"end-{state}-{screen}")
            sides = [s["seats"] for s in view["last_round"]]
            game = [next(x["points"] for x in view["scores"] if x["seats"] == seats) for seats in sides]
            if state == "round_over":
                look = page.evaluate(LOOK, "#round-score")
                assert _inside(look), f"{screen}: the round's headline is off the window: {look}"
                rnd = [s["round_points"] for s in view["last_round"]]
                want = f"{cat['round.headline_round']}{rnd[0]}–{rnd[1]}{cat['round.headline_game']}{game[0]}–{game[1]}"
                assert re.sub(r"\s", "", look["text"]).startswith(re.sub(r"\s", "", want)), look["text"]
                # the whole box in view: no scrolling inside it, the table as wide as the box at most
                assert not look["overlayScrolls"], f"{screen}: the round box scrolls"
                assert not look["tableScrolls"], f"{screen}: the round box's table scrolls sideways"
                tx0, ty0, tx1, ty1 = look["table"]
                assert tx0 >= 0 and ty0 >= 0 and tx1 <= look["w"] and ty1 <= look["h"], f"{screen}: table {look}"
                next_round = page.evaluate(LOOK, "#next-round")
                assert _inside(next_round), f"{screen}: NEXT ROUND is off the window: {next_round}"
            else:
                look = page.evaluate(LOOK, "#result-score")
                assert _inside(look), f"{screen}: the game's score is off the window: {look}"
                assert look["overlayTop"] == 0
                final = [x["points"] for x in view["scores"]]
                assert f"{final[0]}–{final[1]}" in look["text"], look["text"]
                # the screen reader hears the sides with their points, in the reader's language
                said = page.evaluate("document.querySelector('#result-score .sr-only').textContent")
                word = say(cat, "score.side_has", lang, names="", count=2).split("2")[-1].strip()
                assert "Ana" in said and "Bea" in said and word in said, said
                assert page.locator("#result-text").is_visible()
                assert not look["tableScrolls"], f"{screen}: the round box's table scrolls sideways"
            assert not p.errors, p.errors
        finally:
            p.close()
