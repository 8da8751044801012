"""The game review page in a real browser (Debian chromium, Playwright), under a strict CSP.

A finished game is stepped from its first event to its last; at every step each hand,
the table and the stock shown must be the state the log folds to at that version. A
player's review of a game still being played is refused; the operator's review needs the
admin token, which travels in the Authorization header only.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import re
import threading
from pathlib import Path

import pytest

import engine
from events.export import read_text

from ..browser import CHROMIUM
from ..conftest import ADMIN, Client, play_out

CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'"
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian chromium is not installed at /usr/bin/chromium"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


@pytest.fixture(scope="module")
def server():
    import fakeredis
    from werkzeug.serving import make_server

    from api.app import create_app
    from events.config import Config

    redis = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    # a whole game is played through HTTP in seconds: no per-token limit
    app = create_app(redis, dataclasses.replace(Config(), admin_token=ADMIN, bot_delay=0.0, rate_limits="off"))
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_port}", Client(app.test_client())
    srv.shutdown()
    srv.server_close()



def analysis_404(message) -> bool:
    """The browser logs every 404 it fetches; GET .../analysis answers 404 by contract until one is
    asked for (API.md v1.2), which the review page reads to offer ANALYSE."""
    url = (message.location or {}).get("url", "")
    return "status of 404" in message.text and url.endswith("/analysis")


def _page(browser, base, table_id=None, token=None):
    """A page whose HTML answers carry a strict CSP (only the site's own scripts and styles),
    with the seat token where the table page keeps it."""
    context = browser.new_context()
    if token:
        context.add_init_script(
            f"localStorage.setItem('escoba.table.{table_id}', {json.dumps(json.dumps({'token': token}))})")
    page = context.new_page()
    problems = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" and not analysis_404(m) else None)
    requests = []
    page.on("request", lambda r: requests.append(r))

    def with_csp(route):
        response = route.fetch()
        route.fulfill(response=response, headers={**response.headers, "content-security-policy": CSP})

    page.route("**/t/*/review*", with_csp)
    return page, problems, requests


def _log(client, table_id):
    r = client.http.get(f"/admin/tables/{table_id}/log", headers=client.admin())
    return read_text(r.get_data(as_text=True))


def _shown(page) -> dict:
    return page.evaluate("""() => ({
        version: Number(document.body.dataset.version),
        hands: Object.fromEntries([...document.querySelectorAll('#review-seats ul.hand')]
                 .map(u => [u.dataset.seat, u.dataset.cards ? u.dataset.cards.split(' ') : []])),
        shownHands: [...document.querySelectorAll('#review-seats ul.hand')]
                 .map(u => [...u.querySelectorAll('li')].map(li => li.dataset.card)),
        table: [...document.querySelectorAll('#review-table li')].map(li => li.dataset.card),
        stock: document.querySelector('#review-stock').textContent,
        event: document.querySelector('#review-event').dataset.type,
    })""")


def _expected_hands(state) -> dict:
    return {str(s): list(state.hands.get(s, ())) for s in range(4) if state.seats[s] is not None}


def test_a_finished_game_is_stepped_from_first_event_to_last_with_every_hand(server, browser):
    base, client = server
    host = client.create(preset="cardgames")
    tid = host["table_id"]
    guest = client.sit(tid)
    client.ok(tid, host["token"], type="start")
    play_out(client, tid, {0: host["token"], 1: guest["token"]}, random.Random(11))
    records = _log(client, tid)

    page, problems, _ = _page(browser, base, tid, guest["token"])
    page.goto(f"{base}/t/{tid}/review?v=1")  # a link to the first step (unlinked, it opens at the first deal)
    page.wait_for_selector("body[data-version='1']")
    assert page.text_content("#step-label") == f"step 1 of {len(records)}"
    state = engine.State()
    hands_seen = 0
    for i, record in enumerate(records):
        state = engine.fold(state, [engine.event_from(record["type"], record["data"])])
        page.wait_for_selector(f"body[data-version='{record['version']}']")
        shown = _shown(page)
        assert shown["event"] == record["type"]
        assert shown["hands"] == _expected_hands(state), record["version"]
        assert [h for h in shown["shownHands"]] == list(_expected_hands(state).values())
        assert shown["table"] == list(state.table)
        assert shown["stock"].startswith(f"{len(state.stock)} cards in the stock")
        hands_seen += sum(1 for h in state.hands.values() if h)
        if i + 1 < len(records):
            if i % 2:
                page.get_by_role("button", name="NEXT").click()
            else:
                page.keyboard.press("ArrowRight")
    assert hands_seen > 0
    assert page.locator("#step-next").is_disabled()
    assert state.status == "finished" and re.search(r"Winners?: ", page.text_content("#review-scores"))
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "review-finished.png"), full_page=True)
    page.get_by_role("button", name="FIRST").click()
    page.wait_for_selector("body[data-version='1']")
    assert problems == []  # no script error, no CSP violation
    page.context.close()


def test_a_players_review_of_a_game_still_being_played_is_refused(server, browser):
    base, client = server
    host = client.create(preset="del15")
    tid = host["table_id"]
    client.sit(tid)
    client.ok(tid, host["token"], type="start")
    page, _, _ = _page(browser, base, tid, host["token"])
    page.goto(f"{base}/t/{tid}/review")
    page.wait_for_selector("body[data-refused='game_in_progress']")
    assert "still being played" in page.text_content("#error")
    assert page.locator("#review").is_hidden()
    assert page.locator("#review-seats li").count() == 0  # no card of anybody's shown
    page.context.close()


def test_the_operators_review_needs_the_admin_token(server, browser):
    base, client = server
    host = client.create(preset="del15")
    tid = host["table_id"]
    client.sit(tid)
    client.ok(tid, host["token"], type="start")
    version = client.view(tid)["version"]
    page, problems, requests = _page(browser, base)
    page.goto(f"{base}/t/{tid}/review")
    page.wait_for_selector("#admin-form:not([hidden])")
    assert page.locator("#review").is_hidden()
    page.fill("#admin-token", "not-the-token")
    page.get_by_role("button", name="REVIEW AS OPERATOR").click()
    page.wait_for_selector("body[data-refused='unauthorized']")
    assert page.locator("#review").is_hidden()

    page.fill("#admin-token", ADMIN)
    page.get_by_role("button", name="REVIEW AS OPERATOR").click()
    page.wait_for_selector("body[data-operator='true'][data-version]")
    if page.get_by_role("button", name="LAST").is_enabled():  # it opens at the first deal: here the last step
        page.get_by_role("button", name="LAST").click()
    page.wait_for_selector(f"body[data-version='{version}']")
    state = client.http.application.extensions["escoba"].service.load(tid)
    shown = _shown(page)
    assert shown["hands"] == _expected_hands(state)
    assert all(len(h) == 3 for h in shown["hands"].values())  # mid-game: every hand, for the operator
    review_calls = [r for r in requests if "/review" in r.url and "/tables/" in r.url]
    assert review_calls and all(ADMIN not in r.url for r in requests)  # never in a URL
    assert all(r.headers.get("authorization") in (f"Bearer {ADMIN}", "Bearer not-the-token")
               for r in review_calls)
    assert [p for p in problems if "401" not in p] == []  # the refused try logs a 401, nothing else
    page.context.close()


@pytest.mark.parametrize("how", ["address", "menu's pick"])
def test_the_review_is_labelled_in_the_readers_deck_design(server, browser, how):
    """A reader who plays a French table with the Spanish baraja (the menu's pick, kept in
    localStorage, or ?deck= in the address) reviews it in the baraja too."""
    base, client = server
    host = client.create(preset="cardgames")
    tid = host["table_id"]
    client.sit(tid)
    client.ok(tid, host["token"], type="start")
    dealt = client.view(tid, host["token"])["version"]  # the hands are dealt
    client.ok(tid, host["token"], type="resign")

    page, problems, requests = _page(browser, base, tid, host["token"])
    if how == "address":
        page.goto(f"{base}/t/{tid}/review?deck=spanish&v={dealt}")
    else:
        page.context.add_init_script("localStorage.setItem('escoba.deck', 'spanish')")
        page.goto(f"{base}/t/{tid}/review?v={dealt}")
    page.wait_for_selector(f"body[data-version='{dealt}']")
    steps = [r.url for r in requests if "/review/" in r.url]
    assert steps and all(url.endswith("?deck=spanish") for url in steps), steps
    names = page.evaluate("() => [...document.querySelectorAll('#review-seats ul.hand li')]"
                          ".map(li => li.getAttribute('aria-label') || li.textContent)")
    assert names and all(" de " in n or " of " in n for n in names), names
    assert not any(s in "".join(names) for s in "♠♥♦♣"), names  # no French pips left in a name
    assert problems == [], problems
    page.context.close()
