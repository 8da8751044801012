"""`escoba dev` as a user starts it: one process, embedded store, bots playing."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(port, path, body=None, token=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=5) as r:
        return json.loads(r.read())


@contextlib.contextmanager
def _escoba_dev(tmp_path, **env_vars):
    """``escoba dev`` on a free port, up and answering: yields the port."""
    port = _free_port()
    # the dev server keeps its VAPID key in the user's data dir: here, the test's own
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ESCOBA_BOT_DELAY": "0.01",
           "XDG_DATA_HOME": str(tmp_path / "data"), **env_vars}
    env.pop("REDIS_URL", None)
    env.pop("ESCOBA_VAPID_PRIVATE_KEY", None)
    out = (tmp_path / "dev.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "api.cli", "dev", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                assert _call(port, "/healthz")["ok"] is True
                break
            except OSError:
                assert time.monotonic() < deadline, "escoba dev did not come up"
                time.sleep(0.2)
        yield port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_escoba_dev_serves_and_plays_a_bots_only_game_to_the_end(tmp_path):
    with _escoba_dev(tmp_path) as port:
        banner = (tmp_path / "dev.log").read_text()
        assert f"http://127.0.0.1:{port}/" in banner and "NOTHING SURVIVES A RESTART" in banner
        assert b"<html" in urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read().lower()
        # a Web Push key was made and kept; the page is given its public half
        from workers.push import public_key

        kept = (tmp_path / "data" / "escoba" / "vapid-private-key").read_text().strip()
        assert _call(port, "/push/key")["public_key"] == public_key(kept)
        assert "made and kept in" in banner

        # issue 54: a plain GET of the socket route is 426, and the keep-alive connection it came on is
        # either answered again or closed, said in the one Connection header a client reads
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/tables/abc/ws")
        refused = conn.getresponse()
        refused.read()
        connection = [v for k, v in refused.getheaders() if k.lower() == "connection"]
        assert refused.status == 426 and refused.getheader("Upgrade") == "websocket"
        assert len(connection) == 1 and {"upgrade", "close"} <= {w.strip().lower() for w in connection[0].split(",")}
        conn.request("GET", "/healthz")  # on the same client: a new connection once that one said close
        assert json.loads(conn.getresponse().read())["ok"] is True
        conn.close()

        host = _call(port, "/tables", {"name": "Ana", "preset": "del15", "settings": {"target": 10}, "watch": True})
        table_id, token = host["table_id"], host["token"]
        for bot in ("carmen", "tito"):
            _call(port, f"/tables/{table_id}/moves", {"type": "add_bot", "bot": bot}, token)
        _call(port, f"/tables/{table_id}/moves", {"type": "start"}, token)
        deadline = time.monotonic() + 120
        while (view := _call(port, f"/tables/{table_id}"))["status"] != "finished":
            assert time.monotonic() < deadline, f"bots stuck at {view['status']} v{view['version']}"
            time.sleep(0.3)
        best = max(side["points"] for side in view["scores"])
        assert best >= 10 and [s for s in view["scores"] if s["points"] == best][0]["seats"] == view["winners"]


def _after_the_close(ws, answer: bool = True) -> tuple[int, bytes]:
    """The server's close frame read off the wire (past any frames before it) and, as a browser does,
    answered: its status, then every byte the server still sends until it ends the connection."""
    ws.sock.settimeout(8)
    buffer = b""

    def take(n: int) -> bytes:
        nonlocal buffer
        while len(buffer) < n:
            chunk = ws.sock.recv(4096)
            assert chunk, "the connection ended inside a frame"
            buffer += chunk
        got, buffer = buffer[:n], buffer[n:]
        return got

    while True:
        head = take(2)
        assert not head[1] & 0x80, head  # a server's frames are not masked
        size = head[1] & 0x7F
        if size >= 126:
            size = int.from_bytes(take(2 if size == 126 else 8), "big")
        payload = take(size)
        if head[0] == 0x88:
            break
    if answer:
        ws.send_close()
    rest = buffer
    while chunk := ws.sock.recv(4096):
        rest += chunk
    return int.from_bytes(payload[:2], "big"), rest


def test_escoba_dev_ends_a_table_socket_on_its_close_frame(tmp_path):
    """A table socket the server closes itself: the close frame is the last thing on the wire. werkzeug
    wrote its HTTP answer after it (Chromium: "Invalid frame header") on every refusal."""
    import websocket

    from api.sockets.moves import STRIKES_MAX

    with _escoba_dev(tmp_path, ESCOBA_SOCKETS_PER_ADDRESS_TABLE="1") as port:
        # a table for each case: a closed socket's slot is given back only after its connection ends
        hosts = [_call(port, "/tables", {"name": "Ana", "preset": "del15", "settings": {"target": 10}})
                 for _ in range(3)]

        def opened(host: dict, query: str = ""):
            return websocket.create_connection(f"ws://127.0.0.1:{port}/tables/{host['table_id']}/ws{query}",
                                               timeout=8)

        refused = opened(hosts[0], "?token=not-it")
        try:
            assert json.loads(refused.recv())["error"]["code"] == "unauthorized"
            assert _after_the_close(refused) == (1000, b"")
        finally:
            refused.close()

        striking = opened(hosts[1], f"?token={hosts[1]['token']}")
        try:
            assert json.loads(striking.recv())["type"] == "table"
            for _ in range(STRIKES_MAX):
                striking.send("not json")
            assert _after_the_close(striking) == (1008, b"")
        finally:
            striking.close()

        held = opened(hosts[2])
        try:
            assert json.loads(held.recv())["type"] == "table"
            for answer in (True, False):  # a client that never answers the close is cut off in time too
                extra = opened(hosts[2])
                try:
                    assert json.loads(extra.recv())["error"]["code"] == "too_many_sockets"
                    assert _after_the_close(extra, answer) == (1008, b"")
                finally:
                    extra.close()
        finally:
            held.close()
