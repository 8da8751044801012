"""Shared fixtures: an in-memory Redis (fakeredis with Lua) and a real Redis of the suite's own.

``redis_server`` is a ``redis-server`` this suite starts on a free port for the
whole session (``tests/redis_servers.py``) and stops at the end; the suite never
connects to a Redis it did not start, so it may flush its own databases. Tests
that need it are skipped, saying why, only when the ``redis-server`` binary is
missing.
"""

from __future__ import annotations

import fakeredis
import pytest

from .redis_servers import RedisServer, redis_binary, start_plain


@pytest.fixture
def fake_redis():
    """A fresh, isolated fakeredis (Lua scripts supported through lupa)."""
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server)
    yield client
    client.close()


@pytest.fixture
def redis_server_binary():
    """Path of the ``redis-server`` binary, or skip when it is not installed."""
    path = redis_binary()
    if path is None:
        pytest.skip("redis-server binary not installed (needed to start a private Redis)")
    return path


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory) -> RedisServer:
    """The suite's own plain Redis, one for the session (AOF with appendfsync always, as in production)."""
    if redis_binary() is None:
        pytest.skip("redis-server binary not installed (needed to start a private Redis)")
    server = start_plain(tmp_path_factory.mktemp("redis"), durable=True)
    yield server
    server.stop()


@pytest.fixture
def real_redis(redis_server):
    """A client of the suite's own Redis (db 0); tests use fresh random table ids."""
    client = redis_server.client()
    yield client
    client.close()
