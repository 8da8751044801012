"""Errors in the contract's shape when the store fails: 503 unavailable with Retry-After, never 500."""

from __future__ import annotations

import dataclasses

import pytest
import redis as redis_lib
from redis.backoff import NoBackoff
from redis.retry import Retry

from api.app import create_app
from events.store import table_key

from ..redis_servers import RedisServer, free_port
from .conftest import Client


def _unavailable(r, state=None):
    assert r.status_code == 503, (r.status_code, r.get_json())
    body = r.get_json()
    assert body["error"]["code"] == "unavailable"
    assert int(r.headers["Retry-After"]) > 0
    if state:
        assert body["error"]["details"] == {"store": state}
    return body


@pytest.fixture
def private_redis(redis_server_binary, tmp_path):
    """A redis-server of this test's own: tiny maxmemory, noeviction (as in production)."""
    server = RedisServer(free_port(), tmp_path, extra=("--maxmemory", "4mb")).start()
    yield server
    server.stop()


def _app(server, config):
    # no retries: redis-py's default backoff spends some 3 s on each refused connection
    client = redis_lib.Redis(port=server.port, socket_timeout=2, socket_connect_timeout=1,
                             retry=Retry(NoBackoff(), 0))
    return Client(create_app(client, dataclasses.replace(config, rate_limits="off")).test_client()), client


def test_a_full_store_answers_503_and_healthz_says_so(private_redis, config):
    c, rdb = _app(private_redis, config)
    host = c.create()
    table_id = host["table_id"]
    assert c.http.get("/healthz").status_code == 200
    # fill it: noeviction refuses every write once used memory passes maxmemory
    with pytest.raises(redis_lib.exceptions.OutOfMemoryError):  # noqa: PT012
        for i in range(100_000):  # small values: a big refused one only fills the query buffer
            rdb.set(f"filler:{i}", b"x" * 1000)
    events = table_key(table_id, "events")
    before = rdb.xlen(events)
    assert before > 0
    body = _unavailable(c.http.get("/healthz"), "full")
    assert str(private_redis.port) not in str(body) and "127.0.0.1" not in str(body)
    _unavailable(c.http.post("/tables", json={"name": "Ana", "preset": "selminha"}), "full")
    _unavailable(c.http.post(f"/tables/{table_id}/seats", json={"name": "Bea"}), "full")
    _unavailable(c.move(table_id, host["token"], type="add_bot", bot="tito"), "full")
    assert rdb.xlen(events) == before
    # reads still work: a full store still answers them
    assert c.http.get(f"/tables/{table_id}").status_code == 200
    rdb.config_set("maxmemory", "0")
    assert c.http.get("/healthz").status_code == 200
    assert c.move(table_id, host["token"], type="add_bot", bot="tito").status_code == 200


def test_a_stopped_store_answers_503_everywhere(private_redis, config):
    c, _rdb = _app(private_redis, config)
    host = c.create()
    table_id = host["table_id"]
    private_redis.stop()
    for r in (c.http.get("/healthz"),
              c.http.post("/tables", json={"name": "Ana", "preset": "selminha"}),
              c.http.post(f"/tables/{table_id}/seats", json={"name": "Bea"}),
              c.move(table_id, host["token"], type="add_bot", bot="tito"),
              c.http.get(f"/tables/{table_id}/chat"),
              c.http.get(f"/tables/{table_id}/events")):
        body = _unavailable(r, "unreachable")
        assert str(private_redis.port) not in str(body)


def test_a_read_only_store_answers_503(private_redis, config):
    c, rdb = _app(private_redis, config)
    host = c.create()
    rdb.config_set("replica-read-only", "yes")
    rdb.execute_command("REPLICAOF", "127.0.0.1", str(free_port()))  # a replica of nothing: read-only
    try:
        _unavailable(c.move(host["table_id"], host["token"], type="add_bot", bot="tito"), "read-only")
        _unavailable(c.http.get("/healthz"), "read-only")
    finally:
        rdb.execute_command("REPLICAOF", "NO", "ONE")
