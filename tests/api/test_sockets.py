"""The WebSocket against a real server in a thread, and fan-out across two API processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import websocket
from werkzeug.serving import make_server

from .conftest import recv

ROOT = Path(__file__).resolve().parents[2]


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


def test_closed_sockets_are_let_go(client, live, app):
    table_id = client.create()["table_id"]
    hub = app.extensions["escoba"].hub
    sockets = [websocket.create_connection(f"ws://{live}/tables/{table_id}/ws", timeout=5) for _ in range(5)]
    for ws in sockets:
        recv(ws, "table")
    assert hub.open_sockets() == 5
    for ws in sockets:
        ws.close()
    client.sit(table_id)  # a change wakes the handlers, which find their clients gone
    deadline = time.monotonic() + 10
    while hub.open_sockets() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert hub.open_sockets() == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_api(port: int, env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "api.cli", "serve", "--port", str(port)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _wait_healthy(port: int) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"API on port {port} did not come up")


def _post(port, path, body, token=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {token}"} if token else {})})
    with urllib.request.urlopen(request, timeout=5) as r:
        return json.loads(r.read())


@pytest.mark.integration
def test_fan_out_between_two_api_processes(redis_server):
    env = {**os.environ, "REDIS_URL": redis_server.url, "PYTHONPATH": str(ROOT)}
    ports = [_free_port(), _free_port()]
    procs = [_start_api(p, env) for p in ports]
    try:
        for p in ports:
            _wait_healthy(p)
        host = _post(ports[0], "/tables", {"name": "Ana", "preset": "selminha"})
        table_id = host["table_id"]
        ws = websocket.create_connection(f"ws://127.0.0.1:{ports[0]}/tables/{table_id}/ws?token={host['token']}",
                                         timeout=5)
        assert recv(ws, "table")["version"] == 1
        guest = _post(ports[1], f"/tables/{table_id}/seats", {"name": "Bea"})  # through the other process
        change = recv(ws, "table")
        assert change["version"] == 2 and change["table"]["seats"][guest["seat"]]["name"] == "Bea"
        ws.close()
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
