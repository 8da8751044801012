"""A player token acts for the seat its account holds (docs/api.md v1.3), over HTTP and the socket, on
one Redis and on a cluster; it is refused (403) at a table where its account holds no seat."""

from __future__ import annotations

import dataclasses
import json
import threading

import pytest
from werkzeug.serving import make_server

from api.app import create_app
from events.config import Config

from ..conftest import ADMIN
from ..socket_player import SocketPlayer
from .test_players import bearer, sign_up, unique_name


@pytest.fixture
def served(backends):
    app = create_app(backends, dataclasses.replace(Config(), admin_token=ADMIN, bot_delay=0.0, rate_limits="off"))
    app.testing = True
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield app.test_client(), f"127.0.0.1:{server.server_port}"
    server.shutdown()
    app.extensions["escoba"].fanout.stop()


def _move(http, table_id, token, **move):
    return http.post(f"/tables/{table_id}/moves", json=move, headers=bearer(token))


def _log(http, table_id):
    r = http.get(f"/admin/tables/{table_id}/log", headers=bearer(ADMIN))
    return [json.loads(line) for line in r.get_data(as_text=True).splitlines() if line.strip()]


@pytest.mark.integration
def test_player_tokens_seat_their_accounts_and_act_for_those_seats_only(served):
    http, base = served
    ana, bea, cid = (sign_up(http, unique_name(n)) for n in ("ana", "bea", "cid"))
    r = http.post("/tables", json={"preset": "del15"}, headers=bearer(ana["token"]))
    assert r.status_code == 201, r.get_json()
    made = r.get_json()
    table_id = made["table_id"]
    assert made["seat"] == 0 and made["token"] == ana["token"]
    seats = made["table"]["seats"]
    assert seats[0]["name"] == ana["name"] and seats[0]["account"] is True

    # whatever name the body holds, the account's is used; an account sits once
    r = http.post(f"/tables/{table_id}/seats", json={"name": "Someone else"}, headers=bearer(bea["token"]))
    assert r.status_code == 201 and r.get_json()["seat"] == 1
    assert r.get_json()["table"]["seats"][1]["name"] == bea["name"]
    again = http.post(f"/tables/{table_id}/seats", json={"name": "x"}, headers=bearer(bea["token"]))
    assert again.status_code == 409 and again.get_json()["error"]["code"] == "already_seated"
    guest = http.post(f"/tables/{table_id}/seats", json={"name": "Guest"}).get_json()
    assert guest["table"]["seats"][2]["account"] is False

    log = _log(http, table_id)
    assert log[0]["data"]["host_account"] is True and log[0]["data"]["host"] == ana["player_id"]
    assert [e["data"]["account"] for e in log if e["type"] == "PlayerSeated"] == [True, False]

    # an account with no seat here reads as a spectator and may not act
    assert http.get(f"/tables/{table_id}", headers=bearer(cid["token"])).get_json()["you"] is None
    for move in ({"type": "start"}, {"type": "resign"}):
        r = _move(http, table_id, cid["token"], **move)
        assert r.status_code == 403 and r.get_json()["error"]["code"] == "forbidden", r.get_json()
    r = http.post(f"/tables/{table_id}/chat", json={"text": "hi"}, headers=bearer(cid["token"]))
    assert r.status_code == 403
    version = http.get(f"/tables/{table_id}").get_json()["version"]

    # the host's player token starts the game; each view is its own seat's
    r = _move(http, table_id, ana["token"], type="start")
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["version"] > version
    view = http.get(f"/tables/{table_id}", headers=bearer(bea["token"])).get_json()
    assert view["you"] == 1 and len(view["hand"]) == 3
    # the feed reads as that seat too: its own hand in the deal, no other
    feed = http.get(f"/tables/{table_id}/events?after=0", headers=bearer(bea["token"])).get_json()["events"]
    dealt = [e["data"] for e in feed if e["type"] == "RoundDealt"]
    assert dealt and sorted(dealt[-1]["hand"]) == sorted(view["hand"])
    watched = http.get(f"/tables/{table_id}/events?after=0", headers=bearer(cid["token"])).get_json()["events"]
    assert all("hand" not in e["data"] for e in watched if e["type"] == "RoundDealt")

    # the socket takes a player token for its seat, and refuses moves from one without a seat here
    turn = view["turn"]
    token = {0: ana["token"], 1: bea["token"], 2: guest["token"]}[turn]
    mover = SocketPlayer(base, table_id, token)
    watcher = SocketPlayer(base, table_id, cid["token"])
    try:
        assert mover.view["you"] == turn
        card = mover.view["options"][0]
        answer = mover.move({"type": "play", "card": card["card"],
                             "capture": card["captures"][0] if card["captures"] else []})
        assert answer["type"] == "ack", answer
        refused = watcher.move({"type": "resign"})
        assert refused["type"] == "error" and refused["error"]["code"] == "forbidden"
        assert watcher.view["you"] is None and watcher.view["hand"] == []
    finally:
        mover.close()
        watcher.close()
    after = http.get(f"/tables/{table_id}").get_json()
    assert after["version"] == answer["version"] and after["status"] == "playing"

    # a player token signed out no longer acts for its seat
    assert http.delete("/sessions", headers=bearer(bea["token"])).status_code == 204
    r = _move(http, table_id, bea["token"], type="resign")
    assert r.status_code == 401 and r.get_json()["error"]["code"] == "unauthorized"
    assert http.get(f"/tables/{table_id}").get_json()["version"] == after["version"]
