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

import http_ece
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from .receiver import LocalReceiver


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


class PushService(LocalReceiver):
    path = "/push/abc123"

    def __init__(self, subscriber: Subscriber, statuses=()):
        self.subscriber = subscriber
        self.statuses = list(statuses)
        self.attempts: list[dict] = []  # every POST: headers, status answered
        self.messages: list[dict] = []  # decrypted payloads of the POSTs answered 201
        self.errors: list[str] = []
        super().__init__()
        self.endpoint = self.url

    def received(self, path, headers, body) -> int:
        status = self.statuses.pop(0) if self.statuses else 201
        self.attempts.append({"path": path, "headers": headers, "status": status})
        if status == 201:
            try:
                self.messages.append(json.loads(self.subscriber.decrypt(body)))
            except Exception as exc:  # a message we cannot read fails the test
                self.errors.append(f"{type(exc).__name__}: {exc}")
        return status
