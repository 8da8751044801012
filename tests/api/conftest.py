"""An app on fakeredis, and a small client that speaks the contract."""

from __future__ import annotations

import dataclasses
import json
import time

import pytest

from api.app import create_app
from events.config import Config

ADMIN = "admin-secret"


class Client:
    def __init__(self, http):
        self.http = http

    def create(self, name="Ana", preset="selminha", **extra):
        r = self.http.post("/tables", json={"name": name, "preset": preset, **extra})
        assert r.status_code == 201, r.get_json()
        return r.get_json()

    def sit(self, table_id, name="Bea", **request):
        # request: what the http client takes beside (tests/api/sockets/test_two_processes.py: port=)
        r = self.http.post(f"/tables/{table_id}/seats", json={"name": name}, **request)
        assert r.status_code == 201, r.get_json()
        return r.get_json()

    def move(self, table_id, token, headers=None, **move):
        return self.http.post(f"/tables/{table_id}/moves", json=move,
                              headers={"Authorization": f"Bearer {token}", **(headers or {})})

    def ok(self, table_id, token, **move):
        r = self.move(table_id, token, **move)
        assert r.status_code == 200, r.get_json()
        return r.get_json()

    def view(self, table_id, token=None):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        r = self.http.get(f"/tables/{table_id}", headers=headers)
        assert r.status_code == 200, r.get_json()
        return r.get_json()

    def admin(self):
        return {"Authorization": f"Bearer {ADMIN}"}


def recv(ws, kind, timeout=10.0):
    """A socket's next message of ``kind``, skipping others (pings, interleaved views)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ws.settimeout(max(0.1, deadline - time.monotonic()))
        message = json.loads(ws.recv())
        if message["type"] == kind:
            return message
    raise AssertionError(f"no {kind} message within {timeout}s")


@pytest.fixture
def config():
    # the limits are off: tests play whole games through HTTP in seconds (tests/api/http/test_limits.py
    # turns them on)
    return dataclasses.replace(Config(), admin_token=ADMIN, bot_delay=0.0, rate_limits="off")


@pytest.fixture
def app(fake_redis, config):
    app = create_app(fake_redis, config)
    app.testing = True
    return app


@pytest.fixture
def client(app):
    return Client(app.test_client())


def two_player_table(client, preset="selminha", **extra):
    host = client.create(preset=preset, **extra)
    guest = client.sit(host["table_id"])
    return host["table_id"], host["token"], guest["token"]


def play_out(client, table_id, tokens, rng, *, until="finished", on_response=None, max_moves=5000):
    """Play random legal moves through HTTP alone until the status is ``until``."""
    for _ in range(max_moves):
        views = {seat: client.view(table_id, token) for seat, token in tokens.items()}
        any_view = next(iter(views.values()))
        status = any_view["status"]
        if status == until or status in ("finished", "expired"):
            return any_view
        if status == "round_over":
            seat = rng.choice(list(tokens))
            r = client.ok(table_id, tokens[seat], type="next_round")
        else:
            turn = any_view["turn"]
            mine = views[turn]
            if mine["fifteen_to_take"] and rng.random() < 0.5:
                move = {"type": "take_fifteen", "cards": rng.choice(mine["fifteen_to_take"]["sets"])}
            else:
                option = rng.choice(mine["options"])
                take = option["captures"] and (not option["may_leave"] or rng.random() < 0.7)
                move = {"type": "play", "card": option["card"],
                        "capture": rng.choice(option["captures"]) if take else []}
            r = client.ok(table_id, tokens[turn], **move)
        if on_response:
            on_response(r)
    raise AssertionError("game did not end")


@pytest.fixture(scope="session")
def _playwright():
    from playwright import sync_api

    with sync_api.sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def _chromium(_playwright):
    """Debian's chromium, one for the session in each process (a launch and its driver cost about a
    second of CPU, and there are some twenty browser modules); each test opens its own context."""
    from .browser import ARGS, CHROMIUM

    launched = []

    def chromium():
        if not launched or not launched[-1].is_connected():
            launched.append(_playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True))
        return launched[-1]

    yield chromium
    for b in launched:
        if b.is_connected():
            b.close()


@pytest.fixture
def browser(_chromium):
    """Debian's chromium through Playwright (the browser tests skip, saying why, when chromium or
    playwright is missing); launched again if a test left it gone."""
    b = _chromium()
    yield b
    # a context a failed test left open would hold its pages (and their timers) into the next test
    for context in b.contexts:
        context.close()
