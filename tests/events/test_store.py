"""The event store: its contract (tests/events/store_contract.py) on every backend, then what only
one backend shows (the calls a move's step makes, a full store, replica acks' reads)."""

from __future__ import annotations

import json
from typing import Any

import fakeredis
import pytest

import events.store as store_module
from events.store import (
    AlreadyApplied,
    Append,
    EventStore,
    Idempotency,
    RateCount,
    acked_key,
    idempotency_key,
    table_key,
)

from ..redis_servers import command_calls, command_calls_since
from .store_contract import EventStoreContract, new_id, rec

tid = new_id


class TestOnFakeRedis(EventStoreContract):
    @pytest.fixture
    def client(self, fake_redis: Any) -> Any:
        return fake_redis


class TestOnFakeRedisDecodingResponses(EventStoreContract):
    """A client that decodes responses (``decode_responses=True``): the store reads either."""

    @pytest.fixture
    def client(self) -> Any:
        client = fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True)
        yield client
        client.close()


@pytest.mark.integration
class TestOnRedis(EventStoreContract):
    @pytest.fixture
    def client(self, real_redis: Any) -> Any:
        return real_redis


@pytest.mark.integration
class TestOnRedisCluster(EventStoreContract):
    @pytest.fixture
    def client(self, redis_cluster: Any) -> Any:
        client = redis_cluster.client()
        yield client
        client.close()


def test_a_moves_append_is_one_step_of_seven_calls(real_redis):
    """What a move's append asks of Redis, call by call (each redis.call is most of the step's cost,
    docs/benchmarks.md): a call added here is a cost every move pays."""
    store, t = EventStore(real_redis), tid()
    timers, notify = table_key(t, "timers"), table_key(t, "notify")
    real_redis.hset(timers, mapping={"version": "1", "away": "{}"})
    store.listen(t, "me")
    store.append(Append(t, 0, [rec(1)]))  # the stream made and the script loaded, as for a table in play
    before = command_calls(real_redis)
    store.append(Append(t, 1, [rec(2)], idempotency=Idempotency(idempotency_key(t, "seat:0", "m2"), '{"version": 2}'),
                        read_back=(timers, notify), stamp=True, quiet_for="me"))
    made = command_calls_since(real_redis, before)
    assert made == {"evalsha": 1, "xlen": 1, "set": 1, "xadd": 1, "smembers": 1, "hgetall": 2, "hset": 1}


def test_with_replica_acks_a_view_reads_up_to_the_acknowledged_mark_and_without_them_as_ever(real_redis):
    """A view's read (``acknowledged``) with replica acks stops at ``table:{ID}:acked`` (a table with
    no mark, from before: the whole log), in one step; a writer's read, and any read without replica
    acks, is the one XRANGE it always was (no command added to the plain path)."""
    plain, t = EventStore(real_redis), tid()
    for v in (1, 2, 3):
        plain.append(Append(t, v - 1, [rec(v)], notice=False))
    assert real_redis.get(acked_key(t)) is None  # the step keeps no mark without replica acks
    before = command_calls(real_redis)
    assert [v for v, _ in plain.read_raw(t, acknowledged=True)] == [1, 2, 3]
    assert command_calls_since(real_redis, before) == {"xrange": 1}
    acks = EventStore(real_redis, replica_acks=1)
    assert [v for v, _ in acks.read_raw(t, acknowledged=True)] == [1, 2, 3]  # no mark: all of it
    real_redis.set(acked_key(t), 2)
    before = command_calls(real_redis)
    assert [v for v, _ in acks.read_raw(t, acknowledged=True)] == [1, 2]
    assert command_calls_since(real_redis, before) == {"evalsha": 1, "get": 1, "xrange": 1}
    assert [v for v, _ in acks.read_raw(t, until=1, acknowledged=True)] == [1]
    assert acks.read_raw(t, after=2, acknowledged=True) == []
    assert [v for v, _ in acks.read_raw(t, after=1, limit=1, acknowledged=True)] == [2]
    assert [v for v, _ in acks.read_raw(t)] == [1, 2, 3]  # a writer's read: the whole log


def test_a_full_store_still_answers_a_repeat_from_the_append_step(redis_server_binary, tmp_path):
    """Under maxmemory every write is refused and reads are not: the step's refused first write (the
    count, then the key's SET) reads the key as a repeat would, so a retry still gets its answer."""
    import redis as redis_lib

    from ..redis_servers import RedisServer, free_port

    server = RedisServer(free_port(), tmp_path, extra=("--maxmemory", "4mb")).start()
    client = redis_lib.Redis(port=server.port)
    try:
        store, t = EventStore(client), tid()
        key, other = idempotency_key(t, "seat:0", "k"), idempotency_key(t, "seat:0", "k2")
        store.append(Append(t, 0, [rec(1)], idempotency=Idempotency(key, '{"version": 1}', 60)))
        with pytest.raises(redis_lib.exceptions.OutOfMemoryError):  # noqa: PT012
            for i in range(100_000):
                client.set(f"filler:{i}", b"x" * 1000)
        client.config_set("maxmemory", client.info("memory")["used_memory"] - 64 * 1024)
        for count in (None, RateCount(table_key(t, "limit:moves:abc"), 10, 60)):  # the SET refused, or the count first
            with pytest.raises(AlreadyApplied) as repeat:  # at the log's version: the step's SET NX GET
                store.append(Append(t, 1, [rec(2)], idempotency=Idempotency(key, '{"version": 2}', 60), count=count))
            assert repeat.value.version == 1
            with pytest.raises(redis_lib.exceptions.OutOfMemoryError):
                store.append(Append(t, 1, [rec(2)], idempotency=Idempotency(other, '{"version": 2}', 60), count=count))
        assert store.version(t) == 1 and client.get(other) is None
    finally:
        client.close()
        server.stop()


def test_a_notice_of_a_large_batch_carries_no_records(monkeypatch):
    """Past NOTICE_RECORDS_MAX the notice is the version alone: its readers read the log."""
    monkeypatch.setattr(store_module, "NOTICE_RECORDS_MAX", 10)
    notice = json.loads(store_module.change_notice("T", 4, 5, ['{"type":"X","version":5}']))
    assert notice == {"table_id": "T", "version": 5}
    monkeypatch.setattr(store_module, "NOTICE_RECORDS_MAX", 100)
    notice = json.loads(store_module.change_notice("T", 4, 5, ['{"type":"X","version":5}']))
    assert notice["after"] == 4 and notice["records"] == ['{"type":"X","version":5}']
