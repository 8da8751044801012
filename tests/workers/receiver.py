"""Local HTTP receivers for what the workers send: turn notices, and (push_receiver.py) Web Push.

``LocalReceiver`` runs a threaded HTTP server on a free loopback port for the length of a
``with`` block; each POST is handed to ``received(path, headers, body)``, which answers
with the status to send. ``Receiver`` answers turn notices with the statuses it is given,
then 200.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalReceiver:
    path = "/"

    def __init__(self):
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    status = receiver.received(self.path, dict(self.headers), body)
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}{self.path}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def received(self, path: str, headers: dict, body: bytes) -> int:
        raise NotImplementedError

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class Receiver(LocalReceiver):
    path = "/notice"

    def __init__(self, statuses=()):
        self.statuses = list(statuses)
        self.attempts: list[dict] = []
        self.delivered: list[dict] = []
        super().__init__()

    def received(self, path, headers, body) -> int:
        notice = json.loads(body)
        self.attempts.append(notice)
        status = self.statuses.pop(0) if self.statuses else 200
        if status == 200:
            self.delivered.append(notice)
        return status
