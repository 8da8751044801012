"""WS /seeks/{id}/ws: under ``escoba serve`` (gunicorn's gevent worker) on one Redis and on the cluster,
with the waves run here; and under ``escoba dev`` (threads, its own worker), end to end."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest
import websocket

from workers import context, runner

from ...redis_servers import free_port
from ..served import ROOT, Served

pytestmark = pytest.mark.integration


def _post(base: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as r:
        return json.loads(r.read())


def _socket(base: str, seek: dict):
    url = base.replace("http://", "ws://") + f"/seeks/{seek['seek_id']}/ws?token={seek['token']}"
    return websocket.create_connection(url, timeout=15)


def _paired(ws) -> dict:
    message = json.loads(ws.recv())
    assert message["type"] == "paired", message
    return message


def _after_the_close(ws) -> bytes:
    """The server's close frame read off the wire and answered, as a browser does; then every byte
    the server still sends until it closes the connection."""
    ws.sock.settimeout(5)

    def take(n: int) -> bytes:
        got = b""
        while len(got) < n:
            chunk = ws.sock.recv(n - len(got))
            assert chunk, "the connection ended inside a frame"
            got += chunk
        return got

    head = take(2)
    assert head[0] == 0x88 and head[1] < 126, head  # a whole close frame, unmasked, short
    take(head[1])
    ws.send_close()
    rest = b""
    while chunk := ws.sock.recv(4096):
        rest += chunk
    return rest


def _playing(base: str, message: dict) -> dict:
    request = urllib.request.Request(f"{base}/tables/{message['table_id']}",
                                     headers={"Authorization": f"Bearer {message['token']}"})
    with urllib.request.urlopen(request, timeout=5) as r:
        return json.loads(r.read())


@pytest.fixture
def served(topology):
    topology.flush()
    server = Served(topology.tables_url, ESCOBA_QUEUE_URL=topology.queue_url, ESCOBA_RATE_LIMITS="off")
    backends = topology.backends()
    context.configure(dataclasses.replace(topology.config(), bot_delay=0.0), None, tables=backends.tables,
                   queues=backends.queues)
    yield server, backends
    context.configure(None, None)
    server.stop()
    backends.close()
    topology.flush()


def test_the_seek_socket_tells_each_seeker_its_seat_under_gevent(served):
    server, backends = served
    seeks = [_post(server.url, "/seeks", {"name": n, "preset": "cardgames", "players": 2}) for n in ("Ana", "Bea")]
    sockets = [_socket(server.url, s) for s in seeks]
    try:
        time.sleep(0.3)  # both sockets are open and waiting
        runner.run_burst(backends.tables, backends.queues, time.time())
        a, b = (_paired(ws) for ws in sockets)
    finally:
        for ws in sockets:
            ws.close()
    assert a["table_id"] == b["table_id"] and {a["seat"], b["seat"]} == {0, 1}
    assert _playing(server.url, a)["you"] == a["seat"] and _playing(server.url, b)["you"] == b["seat"]


def test_the_seek_socket_refuses_a_wrong_token(served):
    server, _ = served
    seek = _post(server.url, "/seeks", {"name": "Ana", "preset": "cardgames", "players": 2})
    ws = _socket(server.url, {**seek, "token": "not-it"})
    try:
        message = json.loads(ws.recv())
    finally:
        ws.close()
    assert message["type"] == "error" and message["error"]["code"] == "unauthorized"


def test_the_seek_socket_says_when_its_seek_is_cancelled(served):
    server, _ = served
    seek = _post(server.url, "/seeks", {"name": "Ana", "preset": "del15", "players": 2})
    ws = _socket(server.url, seek)
    try:
        time.sleep(0.3)
        request = urllib.request.Request(f"{server.url}/seeks/{seek['seek_id']}", method="DELETE",
                                         headers={"Authorization": f"Bearer {seek['token']}"})
        with urllib.request.urlopen(request, timeout=5) as r:
            assert r.status == 204
        message = json.loads(ws.recv())
    finally:
        ws.close()
    assert message == {"type": "seek", "status": "cancelled"}


def test_escoba_dev_pairs_two_seekers_on_their_sockets(tmp_path):
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ESCOBA_BOT_DELAY": "0.01", "XDG_DATA_HOME": str(tmp_path)}
    env.pop("REDIS_URL", None)
    env.pop("ESCOBA_VAPID_PRIVATE_KEY", None)
    log = (tmp_path / "dev.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "api.cli", "dev", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=2).read()
                break
            except OSError:
                assert time.monotonic() < deadline, "escoba dev did not come up"
                time.sleep(0.2)
        seeks = [_post(base, "/seeks", {"name": n, "preset": "del15", "players": 2}) for n in ("Ana", "Bea")]
        sockets = [_socket(base, s) for s in seeks]
        try:
            a, b = (_paired(ws) for ws in sockets)  # the dev server's own worker pairs them
            # the server's close frame is the last thing it sends: werkzeug wrote an HTTP answer after
            # it, which Chromium reported as "Invalid frame header"
            assert [_after_the_close(ws) for ws in sockets] == [b"", b""]
        finally:
            for ws in sockets:
                ws.close()
        assert a["table_id"] == b["table_id"] and {a["seat"], b["seat"]} == {0, 1}
        assert _playing(base, a)["status"] == "playing"
        refused = _socket(base, {**_post(base, "/seeks", {"name": "Cris", "preset": "del15", "players": 2}),
                                 "token": "not-it"})
        try:
            assert json.loads(refused.recv())["error"]["code"] == "unauthorized"
            assert _after_the_close(refused) == b""
        finally:
            refused.close()
    finally:
        proc.terminate()
        proc.wait(15)
        log.close()
