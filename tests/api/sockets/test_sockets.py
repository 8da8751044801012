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
from .test_reader import _frames_to_close


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


@pytest.mark.parametrize("late", [False, True], ids=["wrapped-first", "closed-before-the-handler-wrapped-it"])
def test_nothing_follows_the_close_frame_when_the_client_leaves_at_once(client, live, monkeypatch, late):
    """A page left at once closes its socket right after the handshake: the server's close frame is the last
    thing on the wire. Closed before the handler had wrapped the connection (``late``: forced here, a loaded
    machine's order), werkzeug's HTTP answer followed it, and Chromium said "Invalid frame header"."""
    import base64
    import os
    import socket

    from api.sockets import route

    if late:
        wrap = route.connection

        def connection(sock, handler_reads):  # the handler wraps the socket only once the reader has closed it
            deadline = time.monotonic() + 5
            while not getattr(sock, "_closed", False) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert getattr(sock, "_closed", False), "the reader did not close the socket"
            return wrap(sock, handler_reads)

        monkeypatch.setattr(route, "connection", connection)
    table_id = client.create()["table_id"]
    host, port = live.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall((f"GET /tables/{table_id}/ws HTTP/1.1\r\nHost: {live}\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(4096)
        head, data = data.split(b"\r\n\r\n", 1)
        assert head.startswith(b"HTTP/1.1 101")
        sock.sendall(bytes([0x88, 0x82, 1, 2, 3, 4, 0x03 ^ 1, 0xE8 ^ 2]))  # close 1000, masked as a client must
        while chunk := sock.recv(4096):
            data += chunk
    frames, rest = _frames_to_close(data)
    opcodes = [opcode for opcode, _ in frames]
    assert opcodes and opcodes[-1] == 8, opcodes
    assert rest == b"", rest[:80]
