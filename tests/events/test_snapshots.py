"""Checkpoints are named by their stretch of versions: found in one round trip, pruned as the table grows."""

from __future__ import annotations

import random

from events import autoplay, snapshots
from events.service import TableService

EVERY = snapshots.SNAPSHOT_EVERY


def _played(fake_redis, until):
    svc = TableService(fake_redis, rng=random.Random(3))
    tid = autoplay.new_table(svc)
    autoplay.play(svc, tid, random.Random(3), until_version=until, games=None)
    return svc, tid


def test_checkpoints_are_stretches_and_only_the_recent_and_sparse_ones_stay(fake_redis):
    svc, tid = _played(fake_redis, 2000)
    version = svc.load(tid).version
    fields = sorted(int(f) for f in fake_redis.hkeys(snapshots.checkpoints_key(tid)))
    assert all(f % EVERY == 0 for f in fields), fields
    newest = version // EVERY * EVERY
    recent = [f for f in fields if f > newest - snapshots.KEEP_RECENT * EVERY]
    older = [f for f in fields if f <= newest - snapshots.KEEP_RECENT * EVERY]
    assert len(recent) <= snapshots.KEEP_RECENT
    assert all(f % (EVERY * snapshots.SPARSE_EVERY) == 0 for f in older), older
    assert len(fields) <= snapshots.KEEP_RECENT + version // (EVERY * snapshots.SPARSE_EVERY)
    # each holds the first state saved in its stretch
    for f in fields:
        state = snapshots.loads_snapshot(fake_redis.hget(snapshots.checkpoints_key(tid), str(f)))
        assert f <= state.version < f + EVERY


def test_a_read_of_the_recent_past_finds_its_checkpoint_without_listing_the_hash(fake_redis, monkeypatch):
    svc, tid = _played(fake_redis, 700)
    version = svc.load(tid).version
    listed = []
    real = fake_redis.hkeys
    monkeypatch.setattr(fake_redis, "hkeys", lambda *a: listed.append(a) or real(*a))
    for at_most in range(version - snapshots.KEEP_RECENT * EVERY + EVERY, version + 1):
        state = snapshots.load_checkpoint(fake_redis, tid, at_most)
        assert state is not None and at_most - 2 * EVERY < state.version <= at_most, (at_most, state.version)
        assert state == svc.load(tid, until=state.version)
    assert not listed


def test_an_older_version_falls_back_to_a_sparse_checkpoint_at_or_before_it(fake_redis):
    svc, tid = _played(fake_redis, 1500)
    for at_most in (430, 801, 999):
        state = snapshots.load_checkpoint(fake_redis, tid, at_most)
        assert state is not None and state.version <= at_most
        assert state == svc.load(tid, until=state.version)
    assert snapshots.load_checkpoint(fake_redis, tid, EVERY - 1) is None


def test_a_snapshot_is_saved_in_one_step_on_both_topologies_and_again_after_a_script_flush(tables, monkeypatch):
    """The save is the store's step (its direct connection on one Redis), no pipeline; a server that
    lost the script is given it again."""
    monkeypatch.setattr(type(tables), "pipeline", lambda *a, **k: (_ for _ in ()).throw(AssertionError("pipeline")))
    svc = TableService(tables, rng=random.Random(5))
    tid = autoplay.new_table(svc)
    autoplay.play(svc, tid, random.Random(5), until_version=2 * EVERY + 5, games=None)
    saved = snapshots.loads_snapshot(tables.get(snapshots.snapshot_key(tid)))
    assert saved is not None and saved.version >= 2 * EVERY and saved == svc.load(tid, until=saved.version)
    assert {int(f) for f in tables.hkeys(snapshots.checkpoints_key(tid))} >= {EVERY, 2 * EVERY}
    tables.script_flush()
    state = svc.load(tid)
    snapshots.save_snapshot(svc.store, tid, state)
    assert snapshots.loads_snapshot(tables.get(snapshots.snapshot_key(tid))) == state
