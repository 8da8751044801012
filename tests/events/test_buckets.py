"""Index buckets live in the slot of the tables they hold, so a create is one Lua step anywhere."""

from __future__ import annotations

import random
import secrets

import pytest
from redis.crc import key_slot

from events import autoplay
from events.buckets import RENOTE_EVERY, SLOTS, SLOTS_KEY, bucket_key, slot_of, slot_tags
from events.service import TableService
from events.store import COUNTS, STATUS, TABLES, EventStore, events_key, index_key, tokens_key


def test_every_slot_has_a_tag_that_hashes_to_it():
    tags = slot_tags()
    assert len(tags) == SLOTS and len(set(tags)) == SLOTS
    assert all(key_slot(f"escoba:tables:{{{tag}}}".encode()) == slot for slot, tag in enumerate(tags))


@pytest.mark.parametrize("seed", range(5))
def test_a_tables_buckets_share_its_slot(seed):
    rng = random.Random(seed)
    for _ in range(200):
        table_id = "".join(rng.choice("abcXYZ019-_") for _ in range(8))
        slot = key_slot(events_key(table_id).encode())
        assert slot_of(table_id) == slot
        for kind in (TABLES, STATUS, COUNTS):
            assert key_slot(bucket_key(kind, table_id).encode()) == slot


def test_create_writes_event_index_status_and_token_in_one_step(any_redis):
    svc = TableService(any_redis, clock=lambda: 1_800_000_000.0)
    tid, outcome = svc.create(autoplay.open_command(), grant=("hash-of-token", "p0"))
    assert any_redis.xlen(events_key(tid)) == 1
    assert any_redis.zscore(index_key(tid), tid) == 1_800_000_000.0
    assert any_redis.hget(tokens_key(tid), "hash-of-token") == b"p0"
    assert any_redis.hget(bucket_key(STATUS, tid), tid) == b"waiting"
    assert int(any_redis.hget(bucket_key(COUNTS, tid), "waiting")) >= 1
    assert any_redis.sismember(SLOTS_KEY, slot_of(tid))
    assert tid in svc.table_ids()


def test_status_counters_follow_every_status_change(fake_redis):
    svc = TableService(fake_redis, rng=random.Random(3))
    a = autoplay.new_table(svc)
    b = autoplay.new_table(svc)
    assert svc.status_counts() == {"waiting": 2}
    svc.execute(a, {"type": "start", "player": "p0"}, actor="seat:0")
    assert svc.status_counts() == {"waiting": 1, "playing": 1}
    autoplay.play(svc, b, random.Random(3))  # a whole game: playing, round_over..., finished
    counts = svc.status_counts()
    assert counts == {"playing": 1, "finished": 1}
    statuses = [svc.load(t).status for t in (a, b)]
    assert counts == {s: statuses.count(s) for s in set(statuses)}


@pytest.mark.integration
def test_tables_spread_over_all_three_masters(redis_cluster):
    """Tables land on every master, and each table's keys are on the node owning its slot."""
    client = redis_cluster.client()
    try:
        svc = TableService(client)
        tables = [svc.create(autoplay.open_command(), grant=(secrets.token_hex(8), "p0"))[0] for _ in range(30)]
        owners = {}
        for tid in tables:
            slot = int(client.cluster_keyslot(events_key(tid)))
            assert slot == slot_of(tid) == int(client.cluster_keyslot(index_key(tid)))
            node = client.nodes_manager.get_node_from_slot(slot)
            owners[tid] = node.name
            with redis_cluster_node(redis_cluster, node.port) as direct:  # the key really is there
                assert direct.exists(events_key(tid), index_key(tid), tokens_key(tid)) == 3
        assert len(set(owners.values())) == 3
        assert set(tables) <= set(svc.table_ids())
    finally:
        client.close()


def redis_cluster_node(cluster, port: int):
    node = next(n for n in cluster.nodes if n.port == port)
    return node.client()


def test_the_slot_directory_is_written_once_per_slot_per_process_and_hour(fake_redis, monkeypatch):
    store = EventStore(fake_redis)
    now = [0.0]
    store.slots.clock = lambda: now[0]
    calls = []
    real = fake_redis.sadd
    monkeypatch.setattr(fake_redis, "sadd", lambda *a: calls.append(a) or real(*a))
    for _ in range(3):
        store.add_to_index("same-table", 1.0)
    assert len(calls) == 1
    fake_redis.delete(SLOTS_KEY)  # the directory lost that write (a failover)
    now[0] += RENOTE_EVERY
    store.add_to_index("same-table", 1.0)
    assert len(calls) == 2 and "same-table" in store.table_ids()
