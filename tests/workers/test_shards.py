"""Queue shards: a table's jobs go only to its shard (its cluster slot modulo the shards), each
shard's jobs run on that shard's worker, and bots, PLAYER AWAY, expiry and compaction fire on
every shard. Two fakeredis queue servers beside the tables' store, timers driven by the test's
clock (as tests/workers/test_timers.py); tests/workers/test_shards_integration.py runs real
``escoba worker --shard N`` processes on real Redises."""

from __future__ import annotations

import fakeredis
import pytest

from events import compaction
from events.connection import queue_shard
from workers import queues, runner, scheduling, ticker

from .conftest import Env


@pytest.fixture
def shards():
    clients = [fakeredis.FakeRedis(server=fakeredis.FakeServer()) for _ in range(2)]
    yield clients
    for c in clients:
        c.close()


@pytest.fixture
def senv(fake_redis, shards, clock, config):
    from workers import context

    context.configure(config, clock, tables=fake_redis, queues=shards)
    yield Env(fake_redis, clock, config, shards)
    context.configure(None)


@pytest.fixture
def handed(monkeypatch):
    """(shard index, job id) of every hand-off to RQ."""
    seen = []
    original = ticker.enqueue_once

    def record(queue_redis, entry):
        seen.append((queue_redis, entry["id"]))
        return original(queue_redis, entry)

    monkeypatch.setattr(ticker, "enqueue_once", record)
    return seen


def _table(job_id: str) -> str:
    """The table of a job id ``<table>_<kind>_<n>`` (table ids are 8 URL-safe characters, ``_`` too)."""
    return job_id[:8]


def _on_each_shard(make, count: int = 2) -> list[str]:
    """Tables made by ``make()`` until each of ``count`` shards has one; one per shard, in order."""
    found: dict[int, str] = {}
    for _ in range(200):
        tid = make()
        found.setdefault(queue_shard(tid, count), tid)
        if len(found) == count:
            return [found[i] for i in range(count)]
    raise AssertionError("no table landed on every shard")


def _only_on_own_shard(handed, shards) -> None:
    assert handed
    for client, job_id in handed:
        table_id = _table(job_id)
        assert client is shards[queue_shard(table_id, len(shards))], job_id


def test_the_shard_is_the_tables_cluster_slot_modulo_the_shards():
    from redis.crc import key_slot

    ids = [f"t{i:07d}" for i in range(2000)]
    for tid in ids[:50]:
        slot = key_slot(f"table:{{{tid}}}:events".encode())  # the slot every key of the table is in
        assert queue_shard(tid, 3) == slot % 3 and queue_shard(tid, 1) == 0
    on_first = sum(queue_shard(t, 2) == 0 for t in ids)
    assert 800 < on_first < 1200  # spread over both


def test_bots_only_games_play_through_with_each_tables_jobs_on_its_shard(senv, shards, handed):
    tids = _on_each_shard(senv.bots_only)
    ran = senv.drain()
    assert ran > 20
    for tid in tids:
        assert senv.state(tid).status == "finished"
    _only_on_own_shard(handed, shards)
    assert {queue_shard(_table(j), 2) for _, j in handed} == {0, 1}
    for client in shards:  # nothing left behind on either
        assert queues.queue_for(client).count == 0 and client.zcard("rq:failed:escoba") == 0


def test_away_expiry_and_compaction_fire_on_both_shards(senv, shards, handed, config):
    away = _on_each_shard(lambda: senv.open(bots=("tito",)))
    for tid in away:
        senv.start(tid)
    senv.drain()  # the bot's move if it starts: then the human's turn
    senv.clock.advance(config.away_after + 1)
    senv.drain()
    assert all(senv.types(t).count("AwayOpened") == 1 for t in away)
    senv.clock.advance(config.expire_after + 1)
    senv.drain()
    assert all(senv.types(t)[-1] == "TableExpired" for t in away)
    senv.clock.advance(config.compact_after + 1)
    senv.drain()
    assert all(compaction.is_compacted(senv.redis, t) for t in away)
    _only_on_own_shard(handed, shards)
    kinds = {(queue_shard(_table(j), 2), j[9:].split("_")[0]) for _, j in handed}
    for shard in (0, 1):
        assert {(shard, k) for k in ("away", "expire", "compact")} <= kinds


def test_the_reconciler_rearms_a_lost_job_on_its_own_shard(senv, shards, handed, config):
    tids = _on_each_shard(lambda: senv.open(bots=("tito",)))
    for tid in tids:
        senv.start(tid)
    senv.drain()
    senv.clock.advance(config.away_after + 1)
    ticker.tick(senv.redis, shards, senv.clock.now)  # handed, never run...
    for client in shards:  # ...and each shard loses its jobs
        client.flushall()
    summary = runner.reconcile(senv.redis, shards, config, clock=senv.clock)
    assert set(tids) <= {_table(j) for j in summary["scheduled"]}
    senv.drain()
    assert all(senv.types(t).count("AwayOpened") == 1 for t in tids)
    _only_on_own_shard(handed, shards)


def test_a_shard_away_does_not_hold_up_the_other(senv, shards, monkeypatch):
    """The ticker skips a shard that fails and hands the other shard's timers; the failed shard's
    tables are due again a moment later."""
    tids = _on_each_shard(senv.bots_only)
    broken = shards[1]

    def refuse(*args, **kwargs):
        from redis.exceptions import ConnectionError

        raise ConnectionError("shard 1 is away")

    monkeypatch.setattr(broken, "hget", refuse)
    with pytest.raises(ticker.ShardAway) as raised:
        ticker.tick(senv.redis, shards, senv.clock.now)
    assert raised.value.shard == 1
    handed_now = {_table(j) for j in raised.value.handed}  # shard 0's tables (there may be more than one)
    assert tids[0] in handed_now and {queue_shard(t, 2) for t in handed_now} == {0}
    from workers import index

    assert index.due_at(senv.redis, tids[1], 2) == senv.clock.now + ticker.RETRY_SOON
    monkeypatch.undo()
    later = {_table(j) for j in ticker.tick(senv.redis, shards, senv.clock.now + ticker.RETRY_SOON)}
    assert tids[1] in later and {queue_shard(t, 2) for t in later} == {1}


def test_pending_jobs_ask_the_tables_own_shard(senv, shards):
    tid = _on_each_shard(senv.bots_only)[1]
    ticker.tick(senv.redis, shards, senv.clock.now)
    bot = f"{tid}_bot_{senv.state(tid).version}"
    assert bot in scheduling.pending_jobs(senv.redis, tid, shards)  # live on shard 1
    assert bot not in scheduling.pending_jobs(senv.redis, tid, shards[:1] * 2)  # not on the other
    assert bot in queues.queue_for(shards[1]).job_ids and bot not in queues.queue_for(shards[0]).job_ids


def _drain_per_shard(senv, shards, rounds: int = 10_000) -> dict[int, list[str]]:
    """Each shard's own ticker (``own=(shard,)``, as ``escoba worker --shard N`` runs it) and its
    own worker, in turn, until nothing is due at the clock's time: the jobs each ticker handed."""
    from workers.jobloop import ThreadWorker

    workers = [ThreadWorker(queues.worker_queues(q), connection=q) for q in shards]
    handed: dict[int, list[str]] = {i: [] for i in range(len(shards))}
    for _ in range(rounds):
        busy = False
        for shard, worker in enumerate(workers):
            ids = ticker.tick(senv.redis, shards, senv.clock.now, own=(shard,))
            handed[shard] += ids
            if ids or any(q.count for q in worker.queues):
                busy = True
                worker.work(burst=True, logging_level="WARNING")
        if not busy:
            return handed
    raise AssertionError("the shards' jobs did not run out")


def test_each_shards_ticker_hands_only_its_own_tables_and_both_shards_timers_fire(senv, shards, handed, config):
    bots = _on_each_shard(senv.bots_only)
    away = _on_each_shard(lambda: senv.open(bots=("tito",)))
    for tid in away:
        senv.start(tid)
    # shard 0's ticker alone: shard 1's tables stay due in shard 1's sets, nothing reaches shard 1
    first = ticker.tick(senv.redis, shards, senv.clock.now, own=(0,))
    assert bots[0] in {_table(j) for j in first} and {queue_shard(_table(j), 2) for j in first} == {0}
    from workers import index

    assert index.due_at(senv.redis, bots[1], 2) is not None and queues.queue_for(shards[1]).count == 0
    by_ticker = _drain_per_shard(senv, shards)
    senv.clock.advance(config.away_after + 1)
    more = _drain_per_shard(senv, shards)
    for shard in (0, 1):
        by_ticker[shard] += more[shard]
        assert by_ticker[shard], f"shard {shard}'s ticker handed nothing"
        assert {queue_shard(_table(j), 2) for j in by_ticker[shard]} == {shard}
    assert all(senv.state(t).status == "finished" for t in bots)
    assert all(senv.types(t).count("AwayOpened") == 1 for t in away)
    kinds = {(queue_shard(_table(j), 2), j[9:].split("_")[0]) for s in by_ticker for j in by_ticker[s]}
    assert {(0, "away"), (1, "away"), (0, "bot"), (1, "bot")} <= kinds
    _only_on_own_shard(handed, shards)


def test_an_entry_written_under_another_shard_count_moves_to_its_own_shard(senv, shards):
    """A process that still counts one shard (settings rolled out one process at a time) writes a
    shard-1 table into shard 0's sets: shard 0's ticker moves it, shard 1's hands it."""
    from workers import index

    tid = _on_each_shard(senv.bots_only)[1]
    due = index.due_at(senv.redis, tid, 2)
    assert due is not None and index.due_at(senv.redis, tid, 1) is None  # the hook split by two
    senv.redis.zrem(index.due_key(index.bucket_of(tid), 1), tid)
    index.mark_due(senv.redis, tid, due, 1)  # as a writer that knows one shard
    assert index.due_at(senv.redis, tid, 1) == due
    first = ticker.tick(senv.redis, shards, senv.clock.now, own=(0,))  # shard 0's tables only
    assert tid not in {_table(j) for j in first} and {queue_shard(_table(j), 2) for j in first} <= {0}
    assert index.due_at(senv.redis, tid, 1) is None and index.claimed_until(senv.redis, tid, 1) is None
    assert index.due_at(senv.redis, tid, 2) <= senv.clock.now
    moved = ticker.tick(senv.redis, shards, senv.clock.now, own=(1,))
    assert f"{tid}_bot_{senv.state(tid).version}" in moved
    assert tid not in {_table(j) for j in queues.queue_for(shards[0]).job_ids}
    on_one = {_table(j) for j in queues.queue_for(shards[1]).job_ids}
    assert tid in on_one and {queue_shard(t, 2) for t in on_one} == {1}


def test_one_shard_keeps_the_due_index_names_it_always_had():
    from workers import index

    assert index.due_key(3) == index.due_key(3, 0) == "timers:{tb3}:due"
    assert index.claims_key(3, 0) == "timers:{tb3}:claims" and index.due_key(3, 2) == "timers:{tb3}:due:2"


def test_a_master_away_holds_up_only_its_own_buckets_and_tables(senv, shards, monkeypatch):
    """The tables' store failing for one table (its master away) or one bucket (the bucket's slot's
    master) does not stop the tick: every other table of the same shard is handed, and the
    failed table is due again a moment later."""
    from redis.exceptions import ConnectionError

    from workers import index

    tids = [senv.bots_only() for _ in range(6)]
    down_table = tids[0]
    down_bucket = next(index.bucket_of(t) for t in tids[1:] if index.bucket_of(t) != index.bucket_of(down_table))
    in_down_bucket = {t for t in tids if index.bucket_of(t) == down_bucket}
    real_read, real_claim = scheduling.read_timers, index.claim

    def read(tables, table_id):
        if table_id == down_table:
            raise ConnectionError("its master is away")
        return real_read(tables, table_id)

    def claim(redis, bucket, *args, **kwargs):
        if bucket == down_bucket:
            raise ConnectionError("the bucket's master is away")
        return real_claim(redis, bucket, *args, **kwargs)

    monkeypatch.setattr(scheduling, "read_timers", read)
    monkeypatch.setattr(index, "claim", claim)
    monkeypatch.setattr(ticker, "is_cluster", lambda _: True)  # the store stands for a cluster's masters
    with pytest.raises(ticker.StoreAway) as raised:
        ticker.tick(senv.redis, shards, senv.clock.now)
    handed = {_table(j) for j in raised.value.handed}
    assert handed >= set(tids) - {down_table} - in_down_bucket and down_table not in handed
    assert set(tids) - {down_table} - in_down_bucket, "every table was on the failed master"
    assert index.due_at(senv.redis, down_table, 2) == senv.clock.now + ticker.RETRY_SOON
    monkeypatch.undo()
    later = {_table(j) for j in ticker.tick(senv.redis, shards, senv.clock.now + ticker.RETRY_SOON)}
    assert {down_table} | in_down_bucket <= later


def test_on_one_redis_a_failed_claim_ends_the_tick(senv, shards, monkeypatch):
    """One Redis holds every bucket: after one claim fails the ticker does not try the other 31
    (each could wait out a connect timeout)."""
    from redis.exceptions import ConnectionError

    from workers import index

    tried = []

    def claim(redis, bucket, *args, **kwargs):
        tried.append(bucket)
        raise ConnectionError("away")

    monkeypatch.setattr(index, "claim", claim)
    with pytest.raises(ticker.StoreAway):
        ticker.tick(senv.redis, shards, senv.clock.now)
    assert tried == [0]
