"""The WebSocket against a real server in a thread (fan-out across two API processes, on both
topologies: tests/api/sockets/test_two_processes.py)."""

from __future__ import annotations

import json
import threading
import time

import pytest
import websocket
from werkzeug.serving import make_server

from ..conftest import recv


@pytest.fixture
def live(app):
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()


def test_socket_sends_view_then_changes_then_your_turn(client, live):
    host = client.create(preset="cardgames")
    table_id = host["table_id"]
    guest = client.sit(table_id)
    ws = websocket.create_connection(f"ws://{live}/tables/{table_id}/ws?token={guest['token']}", timeout=5)
    first = recv(ws, "table")
    assert first["table"]["you"] == 1 and first["table"]["status"] == "waiting"
    spectator = websocket.create_connection(f"ws://{live}/tables/{table_id}/ws", timeout=5)
    assert recv(spectator, "table")["table"]["you"] is None

    started = client.ok(table_id, host["token"], type="start")
    change = recv(ws, "table")
    assert change["version"] == started["version"] and change["table"]["status"] == "playing"
    assert change["table"]["hand"] and recv(spectator, "table")["table"]["hand"] == []
    turn = started["table"]["turn"]
    if turn == 1:
        assert recv(ws, "your_turn")["seat"] == 1

    client.http.post(f"/tables/{table_id}/chat", json={"text": "suerte"},
                     headers={"Authorization": f"Bearer {host['token']}"})
    assert recv(ws, "chat")["line"]["text"] == "suerte"
    ws.close()
    spectator.close()

    # a client that reconnects with its last version gets what it missed, with no gap
    back = websocket.create_connection(f"ws://{live}/tables/{table_id}/ws?token={guest['token']}&after=2", timeout=5)
    missed = recv(back, "events")["events"]
    assert [e["version"] for e in missed] == list(range(3, started["version"] + 1))
    assert recv(back, "table")["version"] == started["version"]
    back.close()


def test_socket_with_a_bad_token_gets_an_error(client, live):
    table_id = client.create()["table_id"]
    ws = websocket.create_connection(f"ws://{live}/tables/{table_id}/ws?token=forged", timeout=5)
    message = json.loads(ws.recv())
    assert message["type"] == "error" and message["error"]["code"] == "unauthorized"


@pytest.mark.parametrize("after", ["-1", "x", "1e3", str(2**53), "9" * 40])
def test_socket_with_a_bad_after_gets_an_error_message(client, live, after):
    table_id = client.create()["table_id"]
    ws = websocket.create_connection(f"ws://{live}/tables/{table_id}/ws?after={after}", timeout=5)
    message = json.loads(ws.recv())
    assert message["type"] == "error" and message["error"]["code"] == "bad_request"
    assert "after" in message["error"]["details"]
    ws.close()


@pytest.mark.parametrize("kind", ["patches", "", "PATCH"])
def test_socket_with_an_unknown_frames_kind_gets_an_error_message(client, live, kind):
    table_id = client.create()["table_id"]
    ws = websocket.create_connection(f"ws://{live}/tables/{table_id}/ws?frames={kind}", timeout=5)
    message = json.loads(ws.recv())
    assert message["type"] == "error" and message["error"]["details"] == {"frames": "unknown"}
    ws.close()


def test_a_socket_that_asks_for_patches_is_sent_the_view_then_each_change_as_a_patch_of_it(client, live):
    """POSTed moves, heard as patches: each from the version the socket was sent last, the reader's own
    hand in it and no one else's; ``your_turn`` follows the patch that makes it the reader's turn."""
    host = client.create(preset="cardgames")
    table_id = host["table_id"]
    guest = client.sit(table_id)
    ws = websocket.create_connection(f"ws://{live}/tables/{table_id}/ws?token={guest['token']}&frames=patch",
                                     timeout=5)
    held = recv(ws, "table")["table"]
    moves = [({"type": "start"}, host["token"])]
    while len(moves) <= 5:
        move, token = moves[-1]
        answer = client.ok(table_id, token, **move)
        patch = recv(ws, "patch")
        assert patch["from"] == held["version"] and patch["version"] == answer["version"]
        held = {**held, **patch["set"], "history": held["history"] + patch.get("history_add", []),
                "labels": {**held["labels"], **patch["labels_add"]}}
        fetched = client.view(table_id, guest["token"])
        assert held["hand"] == fetched["hand"] and {**held, "labels": None} == {**fetched, "labels": None}
        assert {c: held["labels"].get(c) for c in fetched["labels"]} == fetched["labels"]
        assert not set(patch["labels_add"]) - set(fetched["labels"])  # no card the guest may not see
        if fetched["turn"] == 1:
            assert recv(ws, "your_turn")["version"] == patch["version"]
        mover = host["token"] if fetched["turn"] == 0 else guest["token"]
        option = client.view(table_id, mover)["options"][0]  # captures, when it may not be left
        moves.append(({"type": "play", "card": option["card"], "capture": (option["captures"] or [[]])[0]}, mover))
    ws.close()


def test_closed_sockets_are_let_go(client, live, app):
    table_id = client.create()["table_id"]
    fanout = app.extensions["escoba"].fanout
    sockets = [websocket.create_connection(f"ws://{live}/tables/{table_id}/ws", timeout=5) for _ in range(5)]
    for ws in sockets:
        recv(ws, "table")
    assert fanout.open_sockets() == 5
    for ws in sockets:
        ws.close()
    client.sit(table_id)  # a change wakes the handlers, which find their clients gone
    deadline = time.monotonic() + 10
    while fanout.open_sockets() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert fanout.open_sockets() == 0
