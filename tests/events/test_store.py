"""The event store, on fakeredis[lua] and (marked integration) on the real Redis."""

from __future__ import annotations

import json
import secrets
import time

import pytest

import events.store as store_module
from events.connection import is_cluster
from events.records import dumps
from events.store import (
    AlreadyApplied,
    Count,
    EventStore,
    OverLimit,
    VersionConflict,
    acked_key,
    changes_channel,
    events_key,
    idempotency_key,
    index_key,
    limit_key,
    table_key,
)

from ..redis_servers import command_calls, command_calls_since


def rec(version: int, seat: int = 0) -> dict:
    return {"type": "BotRemoved", "v": 1, "version": version, "at": "2024-01-01T00:00:00.000Z",
            "actor": "seat:0", "data": {"seat": seat}}


def tid() -> str:
    return "t" + secrets.token_urlsafe(8)


def test_append_read_version(any_redis):
    store, t = EventStore(any_redis), tid()
    assert store.version(t) == 0 and not store.exists(t) and store.read(t) == []
    assert store.append(t, 0, [rec(1), rec(2)]) == 2
    assert store.append(t, 2, [rec(3)]) == 3
    assert store.exists(t) and store.version(t) == 3
    assert [r["version"] for r in store.read(t)] == [1, 2, 3]
    assert [r["version"] for r in store.read(t, after=1)] == [2, 3]
    assert [r["version"] for r in store.read(t, after=1, until=2)] == [2]
    assert store.read(t, after=3) == []
    ids = [i.decode() if isinstance(i, bytes) else i for i, _ in any_redis.xrange(events_key(t))]
    assert ids == ["1-0", "2-0", "3-0"]
    raw = any_redis.xrange(events_key(t))[0][1]
    assert json.loads(raw.get(b"e") or raw.get("e")) == rec(1)


def test_read_in_chunks(any_redis, monkeypatch):
    import events.store as store_mod

    monkeypatch.setattr(store_mod, "READ_CHUNK", 3)
    store, t = EventStore(any_redis), tid()
    store.append(t, 0, [rec(i) for i in range(1, 11)])
    assert [r["version"] for r in store.read(t)] == list(range(1, 11))
    assert [r["version"] for r in store.read(t, after=4, until=9)] == [5, 6, 7, 8, 9]


def test_append_reads_back_the_tables_hashes_and_stamps_the_first(any_redis):
    store, t = EventStore(any_redis), tid()
    stamp, other = table_key(t, "timers"), table_key(t, "notify")
    any_redis.hset(stamp, mapping={"version": "0", "bot": "job-1"})
    any_redis.hset(other, "1", "https://example.test/hook")
    key = idempotency_key(t, "seat:0", "k")
    done = store.append_reading(t, 0, [rec(1), rec(2)], idempotency=(key, {"version": 2}, 60),
                                read_back=(stamp, other), stamp=True)
    assert done.version == 2 and done.stamped_over == 0
    assert done.hashes == ({"version": "2", "bot": "job-1"}, {"1": "https://example.test/hook"})
    # without an idempotency key too; a hash that is not there reads back empty
    done = store.append_reading(t, 2, [rec(3)], read_back=(stamp, table_key(t, "none")), stamp=True)
    assert (done.version, done.stamped_over) == (3, 2)
    assert done.hashes == ({"version": "3", "bot": "job-1"}, {})
    # a stamp is never lowered, and read_back alone stamps nothing
    any_redis.hset(stamp, "version", "9")
    done = store.append_reading(t, 3, [rec(4)], read_back=(stamp,), stamp=True)
    assert done.stamped_over == 9 and done.hashes[0]["version"] == "9"
    assert store.append_reading(t, 4, [rec(5)], read_back=(other,)).hashes == ({"1": "https://example.test/hook"},)
    # a conflict reads and stamps nothing
    with pytest.raises(VersionConflict):
        store.append_reading(t, 1, [rec(2)], read_back=(other,), stamp=True)
    assert "version" not in {k.decode() if isinstance(k, bytes) else k for k in any_redis.hkeys(other)}


def test_a_moves_append_is_one_step_of_seven_calls(real_redis):
    """What a move's append asks of Redis, call by call (each redis.call is most of the step's cost,
    docs/benchmarks.md): a call added here is a cost every move pays."""
    store, t = EventStore(real_redis), tid()
    timers, notify = table_key(t, "timers"), table_key(t, "notify")
    real_redis.hset(timers, mapping={"version": "1", "away": "{}"})
    store.listen(t, "me")
    store.append(t, 0, [rec(1)])  # the stream made and the script loaded, as for a table in play
    before = command_calls(real_redis)
    store.append_reading(t, 1, [rec(2)], idempotency=(idempotency_key(t, "seat:0", "m2"), {"version": 2}, 60),
                         read_back=(timers, notify), stamp=True, local="me")
    made = command_calls_since(real_redis, before)
    assert made == {"evalsha": 1, "xlen": 1, "set": 1, "xadd": 1, "smembers": 1, "hgetall": 2, "hset": 1}


def test_with_replica_acks_a_view_reads_up_to_the_acknowledged_mark_and_without_them_as_ever(real_redis):
    """A view's read (``acknowledged``) with replica acks stops at ``table:{ID}:acked`` (a table with
    no mark, from before: the whole log), in one step; a writer's read, and any read without replica
    acks, is the one XRANGE it always was (no command added to the plain path)."""
    plain, t = EventStore(real_redis), tid()
    for v in (1, 2, 3):
        plain.append(t, v - 1, [rec(v)], notice=False)
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


def _count(raw) -> int:
    return int(raw) if raw is not None else 0


def test_a_request_is_counted_once_in_the_append_step_and_refused_over_its_limit(any_redis):
    store, t = EventStore(any_redis), tid()
    key = limit_key(t, "moves:abc")
    count = Count(key, limit=2, window=60)
    assert store.append(t, 0, [rec(1)], notice=False) == 1
    store.append_reading(t, 1, [rec(2)], count=count)
    assert count.counted and _count(any_redis.get(key)) == 1 and 0 < any_redis.ttl(key) <= 60
    store.append_reading(t, 2, [rec(3)], count=count)  # counted already: not again
    assert _count(any_redis.get(key)) == 1
    # a conflict counts too, and a repeat, and each is refused as before
    with pytest.raises(VersionConflict):
        store.append_reading(t, 1, [rec(2)], count=Count(key, 2, 60))
    idem = idempotency_key(t, "seat:0", "k")
    with pytest.raises(OverLimit) as over:  # the third in the window: nothing appended, no key set
        store.append_reading(t, 3, [rec(4)], idempotency=(idem, {"version": 4}, 60), count=Count(key, 2, 60))
    assert 1 <= over.value.retry_after <= 60
    assert store.version(t) == 3 and any_redis.get(idem) is None and _count(any_redis.get(key)) == 3
    # over the limit, a repeat still gets its first answer
    store.append_reading(t, 3, [rec(4)], idempotency=(idem, {"version": 4}, 60))
    with pytest.raises(AlreadyApplied) as repeat:
        store.append_reading(t, 3, [rec(4)], idempotency=(idem, {"version": 4}, 60), count=Count(key, 2, 60))
    assert repeat.value.version == 4 and store.version(t) == 4
    # a request that reaches no append is counted by itself, on the same key
    alone = Count(key, 2, 60)
    assert 1 <= store.count(alone) <= 60 and alone.counted and _count(any_redis.get(key)) == 5
    assert store.count(alone) == 0 and _count(any_redis.get(key)) == 5  # once
    fresh = Count(limit_key(t, "moves:other"), 2, 60)
    assert store.count(fresh) == 0 and any_redis.ttl(fresh.key) > 0
    with pytest.raises(ValueError, match="own"):
        store.append_reading(t, 4, [rec(5)], count=Count("escoba:elsewhere", 2, 60))


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
        store.append(t, 0, [rec(1)], idempotency=(key, {"version": 1}, 60))
        with pytest.raises(redis_lib.exceptions.OutOfMemoryError):  # noqa: PT012
            for i in range(100_000):
                client.set(f"filler:{i}", b"x" * 1000)
        client.config_set("maxmemory", client.info("memory")["used_memory"] - 64 * 1024)
        for count in (None, Count(limit_key(t, "moves:abc"), 10, 60)):  # the SET refused, or the count first
            with pytest.raises(AlreadyApplied) as repeat:  # at the log's version: the step's SET NX GET
                store.append_reading(t, 1, [rec(2)], idempotency=(key, {"version": 2}, 60), count=count)
            assert repeat.value.version == 1
            with pytest.raises(redis_lib.exceptions.OutOfMemoryError):
                store.append_reading(t, 1, [rec(2)], idempotency=(other, {"version": 2}, 60), count=count)
        assert store.version(t) == 1 and client.get(other) is None
    finally:
        client.close()
        server.stop()


def test_read_back_takes_only_the_tables_own_keys(any_redis):
    store, t = EventStore(any_redis), tid()
    with pytest.raises(ValueError, match="own keys"):
        store.append_reading(t, 0, [rec(1)], read_back=("escoba:elsewhere",))
    with pytest.raises(ValueError, match="stamp"):
        store.append_reading(t, 0, [rec(1)], stamp=True)
    assert store.version(t) == 0


def test_conflict_appends_nothing(any_redis):
    store, t = EventStore(any_redis), tid()
    store.append(t, 0, [rec(1)])
    with pytest.raises(VersionConflict) as exc:
        store.append(t, 0, [rec(1), rec(2), rec(3)])
    assert exc.value.current == 1
    with pytest.raises(VersionConflict) as exc:
        store.append(t, 5, [rec(6)])
    assert exc.value.current == 1
    assert store.version(t) == 1 and len(store.read(t)) == 1


def test_no_partial_batch_on_conflict_or_repeat(any_redis):
    store, t = EventStore(any_redis), tid()
    key = idempotency_key(t, "seat:0", "k")
    assert store.append(t, 0, [rec(1), rec(2)], idempotency=(key, {"version": 2}, 60)) == 2
    # the same key again, even at the right version: nothing is appended
    with pytest.raises(AlreadyApplied) as exc:
        store.append(t, 2, [rec(3), rec(4), rec(5)], idempotency=(key, {"version": 5}, 60))
    assert exc.value.version == 2
    assert store.version(t) == 2
    assert 0 < any_redis.ttl(key) <= 60
    assert json.loads(any_redis.get(key)) == {"version": 2}
    assert store.idempotent_version(t, "seat:0", "k") == 2
    # at an older version (a resend after the first's answer was lost): a repeat, not a conflict
    with pytest.raises(AlreadyApplied) as exc:
        store.append(t, 0, [rec(1)], idempotency=(key, {"version": 1}, 60))
    assert exc.value.version == 2
    # a new key at the wrong version: a conflict, and the key stays free for its retry
    fresh = idempotency_key(t, "seat:0", "k2")
    with pytest.raises(VersionConflict):
        store.append(t, 1, [rec(2)], idempotency=(fresh, {"version": 2}, 60))
    assert any_redis.get(fresh) is None
    assert store.append(t, 2, [rec(3)], idempotency=(fresh, {"version": 3}, 60)) == 3
    assert store.version(t) == 3 and json.loads(any_redis.get(fresh)) == {"version": 3}


def test_records_must_carry_the_versions_they_make(any_redis):
    store, t = EventStore(any_redis), tid()
    with pytest.raises(ValueError):
        store.append(t, 0, [rec(2)])
    with pytest.raises(ValueError):
        store.append(t, 0, [])
    assert not store.exists(t)


def _next_message(pubsub, timeout=2.0):
    end = time.time() + timeout
    while time.time() < end:
        m = pubsub.get_message(ignore_subscribe_messages=True, timeout=0.1)
        if m:
            return m
    return None


def _notices_subscriber(redis, t: str):
    pubsub = redis.pubsub()
    if is_cluster(redis):
        pubsub.ssubscribe(changes_channel(t))
        pubsub.get_message = pubsub.get_sharded_message
    else:
        pubsub.subscribe(changes_channel(t))
    _next_message(pubsub, 0.2)
    return pubsub


def test_the_notice_is_left_out_only_when_the_appender_is_the_tables_only_listener(any_redis):
    """``local``: the appender posts the change to its own sockets itself. Its notice is then
    needed by no one while the table's listeners are only that appender; anyone else in the set,
    or an empty set (a listener that never joined, such as this raw subscriber), and it is sent."""
    store, t = EventStore(any_redis), tid()
    pubsub = _notices_subscriber(any_redis, t)
    heard = []

    def append(version: int, local):
        store.append_reading(t, version, [rec(version + 1)], local=local)
        m = _next_message(pubsub, 0.3)
        heard.append(m is not None and json.loads(m["data"])["version"] == version + 1)

    append(0, "a")  # no listeners at all: sent
    store.listen(t, "a")
    append(1, "a")  # "a" alone: left out
    append(2, None)  # an appender that posts nothing itself (a worker): sent
    store.listen(t, "b")
    append(3, "a")  # "b" listens too: sent
    store.unlisten(t, "b")
    append(4, "a")  # "a" alone again: left out
    append(5, "b")  # "b" is not "a": sent
    store.unlisten(t, "a")
    append(6, "a")
    assert heard == [True, False, True, True, False, True, True]
    assert store.version(t) == 7  # every append went in, published or not
    pubsub.close()


def test_change_notice_is_published_with_the_append(any_redis):
    """PUBLISH on one Redis, SPUBLISH on a cluster (a sharded channel in the table's slot)."""
    store, t = EventStore(any_redis), tid()
    pubsub = any_redis.pubsub()
    if is_cluster(any_redis):
        assert store.publish == "SPUBLISH"
        pubsub.ssubscribe(changes_channel(t))
        pubsub.get_message = pubsub.get_sharded_message
    else:
        assert store.publish == "PUBLISH"
        pubsub.subscribe(changes_channel(t))
    _next_message(pubsub, 0.2)
    store.append(t, 0, [rec(1), rec(2)])
    m = _next_message(pubsub)
    assert m is not None
    # the batch's records as the log holds them, so a process at version 0 needs no read
    assert json.loads(m["data"]) == {"table_id": t, "version": 2, "after": 0,
                                     "records": [raw.decode() for _, raw in store.read_raw(t)]}
    store.append(t, 2, [rec(3)], notice=False)
    assert _next_message(pubsub, 0.3) is None
    pubsub.close()


def test_a_notice_of_a_large_batch_carries_no_records(monkeypatch):
    """Past NOTICE_RECORDS_MAX the notice is the version alone: its readers read the log."""
    monkeypatch.setattr(store_module, "NOTICE_RECORDS_MAX", 10)
    notice = json.loads(store_module.change_notice("T", 4, 5, ['{"type":"X","version":5}']))
    assert notice == {"table_id": "T", "version": 5}
    monkeypatch.setattr(store_module, "NOTICE_RECORDS_MAX", 100)
    notice = json.loads(store_module.change_notice("T", 4, 5, ['{"type":"X","version":5}']))
    assert notice["after"] == 4 and notice["records"] == ['{"type":"X","version":5}']


def test_every_key_is_hash_tagged_by_table(any_redis):
    store, t = EventStore(any_redis), tid()
    store.append(t, 0, [rec(1)], idempotency=(idempotency_key(t, "seat:1", "abc"), "{}", 60))
    assert changes_channel(t) == f"table:{{{t}}}:changes"
    keys = [k.decode() if isinstance(k, bytes) else k for k in _keys(any_redis, f"table:{{{t}}}:*")]
    assert sorted(keys) == sorted([f"table:{{{t}}}:events", f"table:{{{t}}}:idem:seat:1:abc"])


def _keys(client, pattern: str) -> list:
    if is_cluster(client):
        return client.keys(pattern, target_nodes=client.ALL_NODES)
    return client.keys(pattern)


def test_table_index(any_redis):
    store, a, b = EventStore(any_redis), tid(), tid()
    store.add_to_index(a, 1.0)
    store.add_to_index(b, 2.0)
    ids = store.table_ids()
    assert a in ids and b in ids and ids.index(a) < ids.index(b)
    assert any_redis.zscore(index_key(a), a) == 1.0
    any_redis.zrem(index_key(a), a)
    any_redis.zrem(index_key(b), b)


def test_decoded_responses_work_too(real_or_fake_decoded):
    store, t = EventStore(real_or_fake_decoded), tid()
    store.append(t, 0, [rec(1)], idempotency=(idempotency_key(t, "seat:0", "x"), {"version": 1}))
    assert store.read(t) == [rec(1)] and store.version(t) == 1
    assert store.idempotent_version(t, "seat:0", "x") == 1
    assert dumps(rec(1))


@pytest.fixture
def real_or_fake_decoded():
    import fakeredis

    return fakeredis.FakeRedis(server=fakeredis.FakeServer(), decode_responses=True)
