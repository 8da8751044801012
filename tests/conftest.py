"""Shared fixtures: an in-memory Redis (fakeredis with Lua) and the real Redis.

``real_redis`` connects to ``ESCOBA_TEST_REDIS_URL`` (default
``redis://127.0.0.1:6379/0``) and skips the test, saying why, when no Redis
answers there. Tests on the real Redis use fresh random table ids, so they
never flush the database and can run beside other tests.
"""

from __future__ import annotations

import os
import shutil

import fakeredis
import pytest
import redis as redis_lib

REAL_REDIS_URL = os.environ.get("ESCOBA_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture
def fake_redis():
    """A fresh, isolated fakeredis (Lua scripts supported through lupa)."""
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server)
    yield client
    client.close()


def _real_redis_or_reason() -> tuple[redis_lib.Redis | None, str]:
    try:
        client = redis_lib.Redis.from_url(REAL_REDIS_URL, socket_connect_timeout=1)
        client.ping()
    except Exception as exc:  # any failure to reach it means: skip, with the reason
        why = f"{exc.__class__.__name__}: {exc}"
        return None, f"real Redis not reachable at {REAL_REDIS_URL} ({why})"
    return client, ""


@pytest.fixture
def real_redis():
    """A client of the real Redis; the test is skipped with a clear reason when it is absent."""
    client, reason = _real_redis_or_reason()
    if client is None:
        pytest.skip(reason)
    yield client
    client.close()


@pytest.fixture
def redis_server_binary():
    """Path of the ``redis-server`` binary, or skip when it is not installed."""
    path = shutil.which("redis-server")
    if path is None:
        pytest.skip("redis-server binary not installed (needed to start a private Redis)")
    return path
