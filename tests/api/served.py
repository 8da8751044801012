"""``escoba serve`` (gunicorn's gevent worker, as production runs it) in a process of its own, on a
Redis the test names: the sockets' tests and the page's test under the production worker share it."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import websocket

from bench._common import children, heap_env

from ..redis_servers import free_port

ROOT = Path(__file__).resolve().parents[2]


class Served:
    def __init__(self, redis_url: str, **env):
        self.port = free_port()
        # on the image's heap where this machine has jemalloc: the server under test allocates as production's
        full = {**os.environ, **heap_env(), "REDIS_URL": redis_url, "PYTHONPATH": str(ROOT),
                **{k: str(v) for k, v in env.items()}}
        # the log goes to a file: a pipe nobody reads would fill and stop the server
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([sys.executable, "-m", "api.cli", "serve", "--port", str(self.port)],
                                     cwd=ROOT, env=full, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if self.get("/healthz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise AssertionError("escoba serve did not come up")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def metric(self, line_start: str) -> float:
        """The value of the /metrics line that begins with ``line_start`` (a name and its labels)."""
        text = self.get("/metrics")[1].decode()
        return float(re.search(rf"^{re.escape(line_start)} (\S+)$", text, re.M).group(1))

    def get(self, path, timeout=5.0):
        with urllib.request.urlopen(self.url + path, timeout=timeout) as r:
            return r.status, r.read()

    def post(self, path, body, token=None):
        headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
        request = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                         headers=headers)
        with urllib.request.urlopen(request, timeout=5) as r:
            return json.loads(r.read())

    def table(self) -> str:
        return self.post("/tables", {"name": "Ana", "preset": "selminha"})["table_id"]

    def open_sockets(self) -> int:
        return int(self.metric("escoba_open_sockets"))

    def ws(self, table_id, **kw):
        return websocket.create_connection(f"ws://127.0.0.1:{self.port}/tables/{table_id}/ws", timeout=5, **kw)

    def silent(self, table_id, headers="") -> tuple[socket.socket, bytes]:
        """A raw upgrade whose client then never reads a byte or answers a ping; and the 101's head."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        key = base64.b64encode(os.urandom(16)).decode()
        sock.sendall((f"GET /tables/{table_id}/ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                      f"{headers}\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(1)
        return sock, head

    def pids(self) -> list[int]:
        """gunicorn's master and its workers."""
        return [self.proc.pid, *children(self.proc.pid)]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
