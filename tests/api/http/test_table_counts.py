"""/metrics' tables by status on both topologies: read from the per-slot counters the append
step keeps, at most once per interval per process, never by scanning the tables."""

from __future__ import annotations

import dataclasses
import re

import pytest

from api.app import create_app
from api.server.observability import _RedisCollector
from events.buckets import slot_bucket
from events.config import Config
from events.store import COUNTS, EventStore

from ..conftest import Client, two_player_table


def tables_metric(text: str) -> dict[str, float]:
    return {m[0]: float(m[1]) for m in re.findall(r'escoba_tables\{status="(\w+)"\} ([0-9.]+)', text)}


@pytest.mark.integration
def test_metrics_count_tables_by_status_on_each_topology(backends, topology):
    topology.flush()  # counts are global: start from an empty store (the suite's own servers)
    app = create_app(backends, dataclasses.replace(Config(), bot_delay=0.0, rate_limits="off"))
    app.testing = True
    client = Client(app.test_client())
    playing = []
    for _ in range(4):
        table_id, host, _guest = two_player_table(client, preset="del15")
        playing.append((table_id, host))
    client.ok(playing[0][0], playing[0][1], type="start")
    client.ok(playing[1][0], playing[1][1], type="start")
    counts = tables_metric(client.http.get("/metrics").get_data(as_text=True))
    # every status is reported, at 0 too ("no table playing" is a 0, not a missing series)
    assert counts == {"playing": 2.0, "waiting": 2.0, "round_over": 0.0, "finished": 0.0, "expired": 0.0}
    # the server's index agrees: every table is found through the buckets
    assert {t for t, _ in playing} <= set(app.extensions["escoba"].service.table_ids())


def test_the_counts_come_from_the_slot_counters_and_are_cached(fake_redis):
    from events.connection import from_clients

    fake_redis.hset(slot_bucket(COUNTS, 7), mapping={"playing": 5, "finished": 2})
    fake_redis.hset(slot_bucket(COUNTS, 9000), mapping={"playing": 1, "waiting": 0})
    now = [100.0]
    collector = _RedisCollector(from_clients(fake_redis), cache_for=15.0, clock=lambda: now[0])
    store = collector.store
    store.slots._known.clear()
    fake_redis.sadd("escoba:slots", 7, 9000)
    assert collector.table_counts() == {"playing": 6, "finished": 2}
    reads = []
    real = EventStore.status_counts
    collector.store.status_counts = lambda: reads.append(1) or real(store)
    fake_redis.hset(slot_bucket(COUNTS, 7), "playing", 50)
    now[0] += 10
    assert collector.table_counts()["playing"] == 6 and reads == []  # within 15 s: the cached answer
    now[0] += 6
    assert collector.table_counts()["playing"] == 51 and reads == [1]
