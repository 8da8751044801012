"""A local Web Push service for tests: it takes what the worker POSTs and decrypts it
with the subscription's own keys, as the subscribed browser would (RFC 8291, http-ece).

``Subscriber`` makes a browser's side of a subscription: a P-256 key pair and a 16-byte
auth secret (``cryptography``), and the JSON a browser's ``PushSubscription.toJSON()``
gives. ``PushService`` answers each POST with the statuses it is given, then 201.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Subscriber:
    """A browser's keys for one subscription."""

    def __init__(self):
        self.private_key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)
        self.p256dh = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)

    def subscription(self, endpoint: str) -> dict:
        return {"endpoint": endpoint, "expirationTime": None,
                "keys": {"p256dh": b64(self.p256dh), "auth": b64(self.auth)}}

    def decrypt(self, body: bytes) -> bytes:
        return http_ece.decrypt(body, private_key=self.private_key, auth_secret=self.auth,
                                version="aes128gcm")


class PushService:
    def __init__(self, subscriber: Subscriber, statuses=()):
        self.subscriber = subscriber
        self.statuses = list(statuses)
        self.attempts: list[dict] = []  # every POST: headers, status answered
        self.messages: list[dict] = []  # decrypted payloads of the POSTs answered 201
        self.errors: list[str] = []
        self.lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with service.lock:
                    status = service.statuses.pop(0) if service.statuses else 201
                    service.attempts.append({"path": self.path, "headers": dict(self.headers),
                                             "status": status})
                    if status == 201:
                        try:
                            service.messages.append(json.loads(service.subscriber.decrypt(body)))
                        except Exception as exc:  # a message we cannot read fails the test
                            service.errors.append(f"{type(exc).__name__}: {exc}")
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}/push/abc123"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
