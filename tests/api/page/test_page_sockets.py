"""The page sends its moves over its socket (api/static/sockets.js), and by POST with the same id
when the socket is not open or drops before the answer; in Debian's chromium."""

from __future__ import annotations

import json

import pytest

from ..browser import (
    ADMIN,
    Page,
    add_bots,
    http,
    needs_chromium,
    open_table,
    play_turn,
    seat_token,
    settled,
    start,
    until,
)

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


def _moves_posted(page) -> list:
    posted = []
    page.on("request", lambda r: posted.append(r) if r.method == "POST" and r.url.endswith("/moves") else None)
    return posted


def _frames_sent(page) -> list[dict]:
    sent = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(json.loads(payload))))
    return sent


def _frames_received(page) -> tuple[list[str], list[dict]]:
    urls, got = [], []

    def opened(ws):
        urls.append(ws.url)
        ws.on("framereceived", lambda payload: got.append(json.loads(payload)))

    page.on("websocket", opened)
    return urls, got


def test_the_pages_moves_go_over_its_socket(server, browser):
    """... and its socket takes each change as a patch of the view it holds (frames=patch): the page
    shows what the server's view says."""
    p = Page(browser, "desktop")
    page = p.page
    try:
        posted, sent = _moves_posted(page), _frames_sent(page)
        urls, received = _frames_received(page)
        table_id = open_table(page, server.url)
        until(page, "document.body.dataset.live === 'yes'", what="the socket open")
        add_bots(page, 1)
        start(page)
        for _ in range(2):
            # the bot may lead, and it plays between ours: a card is ours to pick only on our turn
            until(page, "!!document.querySelector('.seat.you.turn') && !window.escobaShowing() && "
                        "document.body.dataset.status === 'playing'", what="our turn, settled", timeout=60)
            play_turn(page)
        moves = [f for f in sent if f.get("type") == "move"]
        assert [m["move"]["type"] for m in moves][:2] == ["add_bot", "start"]
        assert sum(m["move"]["type"] in ("play", "take_fifteen") for m in moves) >= 2  # TAKE THE 15 when offered
        assert len({m["id"] for m in moves}) == len(moves)  # one id a move
        assert posted == []  # no move went by HTTP
        assert len(urls) == 1 and "frames=patch" in urls[0]  # one socket: no patch it could not apply
        assert sum(m["type"] == "patch" for m in received) >= 4 and received[0]["type"] == "table"
        token = json.loads(page.evaluate(f"localStorage.getItem('escoba.table.{table_id}')"))["token"]
        for _ in range(100):  # the bot may still move: compare what the page shows of the table's last version
            view = http("GET", f"{server.url}/tables/{table_id}", token=token)
            shown = page.eval_on_selector_all("#hand .card", "cards => cards.map(c => c.dataset.card)")
            on_table = page.eval_on_selector_all("#table-cards .card", "cards => cards.map(c => c.dataset.card)")
            if settled(page) and int(page.get_attribute("body", "data-version")) == view["version"] == int(
                    http("GET", f"{server.url}/tables/{table_id}")["version"]):
                break
            page.wait_for_timeout(100)
        else:
            raise AssertionError("the page never showed the table's last version")
        assert sorted(shown) == sorted(view["hand"]) and sorted(on_table) == sorted(view["table_cards"])
        assert not p.errors, p.errors
    finally:
        p.close()


def test_a_move_whose_answer_is_lost_with_the_socket_is_posted_with_its_id_and_applied_once(server, browser):
    base = server.url
    host = http("POST", f"{base}/tables", {"name": "Ana", "preset": "selminha"})
    table_id = host["table_id"]
    http("POST", f"{base}/tables/{table_id}/seats", {"name": "Bruno"})
    p = Page(browser, "desktop")
    page = p.page
    dropped = []

    def route(ws):
        server_side = ws.connect_to_server()
        ws.on_message(lambda message: server_side.send(message))

        def from_server(message):
            if not dropped and '"type":"ack"' in message:  # the move landed; its answer is lost
                dropped.append(json.loads(message))
                ws.close()
                return
            ws.send(message)

        server_side.on_message(from_server)

    try:
        page.route_web_socket("**/ws*", route)
        posted, sent = _moves_posted(page), _frames_sent(page)
        seat_token(page, base, table_id, host["token"])
        page.goto(f"{base}/t/{table_id}")
        page.wait_for_selector("#waiting:not([hidden])")
        until(page, "document.body.dataset.live === 'yes'", what="the socket open")
        start(page)
        until(page, "document.body.dataset.status === 'playing'", what="the game shown as started")
        [frame] = [f for f in sent if f.get("type") == "move"]
        assert dropped and dropped[0]["id"] == frame["id"]
        assert len(posted) == 1 and posted[0].headers.get("idempotency-key") == frame["id"]
        answer = posted[0].response()
        assert answer.status == 200 and answer.json()["version"] == dropped[0]["version"]
        log = _log(base, table_id)
        assert sum(e["type"] == "GameStarted" for e in log) == 1 and log[-1]["version"] == dropped[0]["version"]
        assert page.locator("#error").is_hidden()
        assert not p.errors, p.errors
    finally:
        p.close()


def _log(base, table_id) -> list[dict]:
    import urllib.request

    req = urllib.request.Request(f"{base}/admin/tables/{table_id}/log", headers={"Authorization": f"Bearer {ADMIN}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return [json.loads(line) for line in r.read().decode().splitlines() if line.strip()]
