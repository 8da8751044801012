"""The analysis a player reads (issue 57): the review opens at the first deal (or the step a link names);
per player a summary (accuracy, the counts of inaccuracies, mistakes and blunders) by name, the bot's
too (Carmen, never "Seat 2"); a chart of each move's loss over the game whose points step the review.
A game against a bot is played out through HTTP (the served worker plays Carmen); the analysis is the
contract's shape (docs/api.md, GET /tables/{id}/analysis), given by the test."""

from __future__ import annotations

import json
import time

import pytest

from ..browser import Page, axe_check, http, needs_chromium, say, seat_token, shot, until, words

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed")

LABELS = [None, None, "inaccuracy", None, "mistake", None, None, "blunder"]


@pytest.fixture(scope="module")
def game(server):
    """Ana against Carmen (a bot), del15 to 10, played to its end; Ana's moves the first legal option."""
    base = server.url
    host = http("POST", f"{base}/tables", {"name": "Ana", "preset": "del15", "settings": {"target": 10}})
    tid, token = host["table_id"], host["token"]
    http("POST", f"{base}/tables/{tid}/moves", {"type": "add_bot", "bot": "carmen", "seat": 1}, token)
    http("POST", f"{base}/tables/{tid}/moves", {"type": "start"}, token)
    end = time.time() + 120
    while True:
        assert time.time() < end, "the game against Carmen did not end"
        view = http("GET", f"{base}/tables/{tid}", token=token)
        if view["status"] == "finished":
            break
        if view["status"] == "round_over":
            http("POST", f"{base}/tables/{tid}/moves", {"type": "next_round"}, token)
        elif view["status"] == "playing" and view["turn"] == 0:
            if view["fifteen_to_take"]:
                move = {"type": "take_fifteen", "cards": view["fifteen_to_take"]["sets"][0]}
            else:
                o = view["options"][0]
                move = {"type": "play", "card": o["card"], "capture": o["captures"][0] if o["captures"] else []}
            http("POST", f"{base}/tables/{tid}/moves", move, token)
        else:
            time.sleep(0.02)
    events = http("GET", f"{base}/tables/{tid}/events?after=0&limit=1000", token=token)["events"]
    moves = {0: [], 1: []}
    for e in events:
        if e["type"] in ("CardPlayed", "FifteenTaken"):
            seat = e["data"]["seat"]
            i = len(moves[seat])
            label = LABELS[(i + 3 * seat) % len(LABELS)]
            loss = {None: 0.1 * (i % 3), "inaccuracy": 0.4, "mistake": 0.9, "blunder": 1.6}[label]
            moves[seat].append({"version": e["version"], "round": 1, "loss": loss, "label": label,
                                "played": {"type": "play", "card": e["data"]["card"], "capture": e["data"]["captured"]},
                                "best": {"type": "play", "card": e["data"]["card"], "capture": e["data"]["captured"]}})
    analysis = {"status": "done", "seats": [{"seat": 0, "accuracy": 91.5, "moves": moves[0]},
                                            {"seat": 1, "accuracy": 78.25, "moves": moves[1]}]}
    return tid, token, events, analysis


@pytest.mark.parametrize("lang", ["en", "pt-BR"])
def test_the_analysis_names_every_player_and_its_chart_steps_the_review(server, browser, game, lang):
    tid, token, events, analysis = game
    cat = words(lang)
    p = Page(browser, "desktop", locale=lang)
    page = p.page
    try:
        seat_token(page, server.url, tid, token)
        page.route("**/tables/*/analysis", lambda route: route.fulfill(
            status=200, content_type="application/json", body=json.dumps(analysis)))
        page.goto(f"{server.url}/t/{tid}/review")
        first_deal = next(e["version"] for e in events if e["type"] == "RoundDealt")
        until(page, f"document.body.dataset.version === '{first_deal}'", what="the review at the first deal")
        until(page, "document.body.dataset.analysis === 'done'", what="the analysis shown")
        # the hands are in view at the first deal: three cards each
        assert page.locator("#review-seats ul.hand").first.get_by_role("listitem").count() == 3

        summary = page.get_by_role("region", name=cat["analysis.title"])
        text = summary.text_content()
        you = say(cat, "seat.you", name="Ana") if "(you)" in text or "(você)" in text else "Ana"
        for seat, name in ((0, "Ana"), (1, "Carmen")):
            side = analysis["seats"][seat]
            counted = {k: sum(m["label"] == k for m in side["moves"]) for k in ("inaccuracy", "mistake", "blunder")}
            assert name in text
            assert say(cat, "analysis.counts", lang, inaccuracies=counted["inaccuracy"], mistakes=counted["mistake"],
                       blunders=counted["blunder"]) in text, text
        assert say(cat, "seat.numbered", n=2) not in text, text
        assert you

        # the chart: a point a move, in the order of the game; a point clicked steps the review there
        points = page.get_by_role("link", name=say(cat, "analysis.point", name="Carmen", round=1, loss="", judged="")
                                  .split(":")[0])
        carmen = analysis["seats"][1]["moves"]
        assert points.count() == len(carmen)
        page.get_by_role("heading", name=cat["analysis.title"]).scroll_into_view_if_needed()
        shot(page, f"review-analysis-{lang}")
        axe_check(page, f"review with its analysis ({lang})")
        target = carmen[len(carmen) // 2]
        points.nth(len(carmen) // 2).click()
        until(page, f"document.body.dataset.version === '{target['version']}'", what="the point's move shown")
        assert f"v={target['version']}" in page.url
        # a link to a step opens there
        page.goto(f"{server.url}/t/{tid}/review?v={target['version'] + 1}")
        until(page, f"document.body.dataset.version === '{target['version'] + 1}'", what="the linked step")
        assert not p.errors, p.errors
    finally:
        p.close()
