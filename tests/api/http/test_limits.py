"""Rate limits: per client address for tables and seats, per token for moves and chat."""

from __future__ import annotations

import dataclasses
import os
import secrets
import subprocess
import sys

import pytest

from api.app import create_app
from api.auth import token_hash
from api.http import limits
from events.config import Config
from events.store import EventStore, RateCount

from ...redis_servers import command_calls, command_calls_since
from ..conftest import Client


def _limited(redis, config, **changes):
    app = create_app(redis, dataclasses.replace(config, rate_limits="on", **changes))
    app.testing = True
    return Client(app.test_client())


def _rate_limited(r):
    assert r.status_code == 429, (r.status_code, r.get_json())
    body = r.get_json()
    assert set(body["error"]) == {"code", "message", "details"} and body["error"]["code"] == "rate_limited"
    assert 1 <= int(r.headers["Retry-After"]) <= 3600
    return body


def _count(limit: str) -> int:
    """The first (shortest window's) count of a limit string: "10 per minute;..." -> 10."""
    return int(limit.split(";")[0].split()[0])


def test_table_creation_is_limited_per_client_address(fake_redis, config):
    c = _limited(fake_redis, config)
    n = _count(limits.CREATE_TABLE)
    for _ in range(n):
        c.create()
    before = EventStore(fake_redis).table_ids()
    assert len(before) == n
    _rate_limited(c.http.post("/tables", json={"name": "Ana", "preset": "selminha"}))
    assert EventStore(fake_redis).table_ids() == before  # refused before anything was written
    # another address has its own count
    r = c.http.post("/tables", json={"name": "Ana", "preset": "selminha"},
                    environ_base={"REMOTE_ADDR": "203.0.113.9"})
    assert r.status_code == 201


def test_seat_taking_is_limited_per_client_address(fake_redis, config):
    c = _limited(fake_redis, config)
    table_id = c.create()["table_id"]
    for _ in range(_count(limits.TAKE_SEAT)):
        r = c.http.post(f"/tables/{table_id}/seats", json={"name": "Bea"})
        assert r.status_code in (201, 409)  # the table fills up; the attempts still count
    _rate_limited(c.http.post(f"/tables/{table_id}/seats", json={"name": "Bea"}))


def test_moves_and_chat_are_limited_per_token(fake_redis, config):
    c = _limited(fake_redis, config)
    host = c.create()
    guest = c.sit(host["table_id"])
    tid = host["table_id"]
    refused = None
    for _ in range(_count(limits.MOVES) + 1):  # refused moves count too
        refused = c.move(tid, guest["token"], type="start")
    _rate_limited(refused)
    assert c.move(tid, host["token"], type="start").status_code == 200  # the host's own count
    for i in range(_count(limits.CHAT)):
        r = c.http.post(f"/tables/{tid}/chat", json={"text": f"hola {i}"},
                        headers={"Authorization": f"Bearer {host['token']}"})
        assert r.status_code == 201
    _rate_limited(c.http.post(f"/tables/{tid}/chat", json={"text": "one more"},
                              headers={"Authorization": f"Bearer {host['token']}"}))
    # no token is stored in the counters' keys
    assert not any(host["token"].encode() in k for k in fake_redis.keys("*"))


def test_the_moves_limit_is_the_operators_setting(fake_redis, config):
    """ESCOBA_MOVES_LIMIT: a lower limit refuses the move after it (a token's own count, refused ones too)."""
    c = _limited(fake_redis, config, moves_limit=Config.from_env({"ESCOBA_MOVES_LIMIT": "3 per minute"}).moves_limit)
    host = c.create()
    guest = c.sit(host["table_id"])
    tid = host["table_id"]
    for _ in range(3):
        assert c.move(tid, guest["token"], type="start").status_code == 403  # host_only, counted
    body = _rate_limited(c.move(tid, guest["token"], type="start"))
    assert "3 per 1 minute" in body["error"]["message"], body
    assert c.move(tid, host["token"], type="start").status_code == 200  # the host's own count


@pytest.mark.parametrize("value", ["120 a minute", "10 per minute;100 per hour", "0 per minute", "many"])
def test_a_bad_moves_limit_is_refused_at_start(value):
    with pytest.raises(ValueError, match="ESCOBA_MOVES_LIMIT must be one rate limit"):
        Config.from_env({"ESCOBA_MOVES_LIMIT": value})
    assert Config.from_env({"ESCOBA_MOVES_LIMIT": " "}).moves_limit == limits.MOVES == "120 per minute"
    assert Config.from_env({"ESCOBA_MOVES_LIMIT": "10/second"}).moves_limit == "10/second"


def test_escoba_serve_will_not_start_on_a_bad_moves_limit():
    """Said once by the command, before gunicorn forks a worker that would die booting."""
    env = {**os.environ, "ESCOBA_MOVES_LIMIT": "lots", "REDIS_URL": "redis://127.0.0.1:1/0"}
    done = subprocess.run([sys.executable, "-m", "api.cli", "serve", "--port", "1"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "escoba serve: ESCOBA_MOVES_LIMIT must be one rate limit" in done.stderr, done.stderr[-2000:]
    assert "Booting worker" not in done.stderr


def test_x_forwarded_for_counts_only_behind_a_trusted_proxy(fake_redis, config):
    n = _count(limits.CREATE_TABLE)
    direct = _limited(fake_redis, config)
    for i in range(n):  # a client can't escape its count by sending the header itself
        direct.http.post("/tables", json={"name": "Ana", "preset": "selminha"},
                         headers={"X-Forwarded-For": f"198.51.100.{i}"})
    _rate_limited(direct.http.post("/tables", json={"name": "Ana", "preset": "selminha"},
                                   headers={"X-Forwarded-For": "198.51.100.200"}))
    proxied = _limited(fake_redis, config, trusted_proxies=1)
    for i in range(3):  # behind one proxy, the address it appended is the client's
        r = proxied.http.post("/tables", json={"name": "Ana", "preset": "selminha"},
                              headers={"X-Forwarded-For": f"evil, 198.51.100.{i}"})
        assert r.status_code == 201


def test_limits_off_lets_a_flood_through(fake_redis, config):
    c = Client(create_app(fake_redis, dataclasses.replace(config, rate_limits="off")).test_client())
    for _ in range(_count(limits.CREATE_TABLE) * 2):
        c.create()


def test_limits_are_shared_through_the_store_on_one_redis_and_on_a_cluster(backends, config):
    """Two apps (two API processes) on the same store share one count, the cluster's included."""
    _drop_counters(backends.tables)  # an earlier test's, on the session's store, within the minute
    a, b = _limited(backends, config), _limited(backends, config)
    n = _count(limits.CREATE_TABLE)
    for i in range(n):
        (a if i % 2 else b).create()
    _rate_limited(a.http.post("/tables", json={"name": "Ana", "preset": "selminha"}))
    _rate_limited(b.http.post("/tables", json={"name": "Ana", "preset": "selminha"}))
    # the counters are keys of the tables' store
    assert _drop_counters(backends.tables)


def _drop_counters(client) -> list:
    """The limiter's counters in the store, deleted."""
    keys = [k for node_keys in _all_keys(client) for k in node_keys if b"LIMITER/escoba/" in k]
    for k in keys:
        client.delete(k)
    return keys


def _all_keys(client):
    from redis.cluster import RedisCluster

    if isinstance(client, RedisCluster):
        return [client.keys("*", target_nodes=RedisCluster.PRIMARIES)]
    return [client.keys("*")]


def test_a_retry_with_its_idempotency_key_gets_its_first_answer_over_the_limit(fake_redis, config):
    """Issue 27: a retry (same Idempotency-Key, same seat) over the limit was answered 429 instead of
    the first answer."""
    c = _limited(fake_redis, config)
    host = c.create()
    tid = host["table_id"]
    c.sit(tid)
    key = {"Idempotency-Key": "start-1"}
    first = c.move(tid, host["token"], headers=key, type="start")
    assert first.status_code == 200
    n = _count(limits.MOVES)
    for _ in range(n - 1):  # with the first move, the whole count
        assert c.move(tid, host["token"], type="start").status_code == 409
    _rate_limited(c.move(tid, host["token"], type="start"))
    for _ in range(3):  # over the limit, the retry still gets its stored answer, byte for byte
        again = c.move(tid, host["token"], headers=key, type="start")
        assert again.status_code == 200 and again.data == first.data
    # a new key, or the key of another seat, is a new request: refused
    _rate_limited(c.move(tid, host["token"], headers={"Idempotency-Key": "start-2"}, type="start"))
    assert c.view(tid)["version"] == first.get_json()["version"]


def _moves_counted(redis, table_id: str, token: str) -> int:
    raw = redis.get(limits.limit_key(table_id, "moves:" + token_hash(token)[:32]))
    return int(raw) if raw is not None else 0


def test_a_move_is_counted_once_in_its_own_append_and_a_refused_one_by_itself(real_redis, config):
    """The moves' counter costs a move no round trip of its own: one EVALSHA, the count inside it.
    (flask-limiter's counter was a second durable write a move: 25% more API CPU and 58% more
    Redis a move in bench/games.py, docs/benchmarks.md.)"""
    c = _limited(real_redis, config)
    # an address of its own: the suite's Redis outlives this test, and its per-address counts with it
    c.http.environ_base["REMOTE_ADDR"] = f"198.51.100.{secrets.randbelow(250) + 1}"
    host = c.create()
    tid = host["table_id"]
    guest = c.sit(tid)
    assert c.move(tid, host["token"], type="start").status_code == 200
    assert _moves_counted(real_redis, tid, host["token"]) == 1
    mover = host["token"] if c.view(tid, host["token"])["turn"] == 0 else guest["token"]
    option = c.view(tid, mover)["options"][0]
    play = {"type": "play", "card": option["card"], "capture": option["captures"][0] if option["captures"] else []}
    counted = _moves_counted(real_redis, tid, mover)
    before = command_calls(real_redis)
    r = c.move(tid, mover, **play)
    assert r.status_code == 200, r.get_json()
    made = command_calls_since(real_redis, before)
    assert made.get("evalsha") == 1 and made.get("incr") == 1 and "eval" not in made, made
    assert _moves_counted(real_redis, tid, mover) == counted + 1
    # refused by the rules (not its turn any more): counted too, once
    assert c.move(tid, mover, **play).status_code == 409
    assert _moves_counted(real_redis, tid, mover) == counted + 2


def test_a_requests_count_goes_to_its_first_append_step_only_or_is_counted_alone(fake_redis):
    """``Count``: a request is counted once, in the first append's step it reaches (``step`` hands the
    step its ``RateCount`` once), else by itself (``alone``), on the same key in the table's slot."""
    store, t = EventStore(fake_redis), "t" + secrets.token_urlsafe(8)
    key = limits.limit_key(t, "moves:abc")
    assert key.startswith(f"table:{{{t}}}:")
    count = limits.Count(key, 2, 60)
    assert count.step() == RateCount(key, 2, 60) and count.step() is None and count.alone(store) == 0
    assert fake_redis.get(key) is None  # handed out, not counted: the step counts it
    for i in (1, 2):
        assert limits.Count(key, 2, 60).alone(store) == 0 and int(fake_redis.get(key)) == i
    alone = limits.Count(key, 2, 60)
    assert 1 <= alone.alone(store) <= 60 and int(fake_redis.get(key)) == 3  # over the limit: its window's rest
    assert alone.alone(store) == 0 and alone.step() is None and int(fake_redis.get(key)) == 3  # once
    fresh = limits.Count(limits.limit_key(t, "moves:other"), 2, 60)
    assert fresh.alone(store) == 0 and 0 < fake_redis.ttl(fresh.key) <= 60
