"""Compaction: a table closed for good becomes one compressed value, and reads as before."""

from __future__ import annotations

import random

import pytest

import engine
from events import autoplay, compaction
from events.export import export_table
from events.replay import main as replay_main
from events.service import TableService


def _finished_and_declined(svc, seed=4):
    tid = autoplay.new_table(svc)
    autoplay.play(svc, tid, random.Random(seed))
    svc.execute(tid, {"type": "rematch", "by": 1, "accept": False}, actor="seat:1")
    state = svc.load(tid)
    assert compaction.closed_for_good(state) and state.rematch_closed == "declined"
    return tid, state


def test_closed_for_good_only_when_nothing_can_change(service):
    tid = autoplay.new_table(service)
    assert not compaction.closed_for_good(service.load(tid))
    autoplay.play(service, tid, random.Random(2))
    finished = service.load(tid)
    assert finished.status == "finished" and finished.rematch_allowed()
    assert not compaction.closed_for_good(finished)  # a rematch may still start
    service.execute(tid, {"type": "rematch", "by": 0, "accept": False}, actor="seat:0")
    assert compaction.closed_for_good(service.load(tid))
    other = autoplay.new_table(service)
    service.execute(other, {"type": "expire"}, actor="system")
    assert compaction.closed_for_good(service.load(other))


def test_pack_and_unpack_round_trip_and_refuse_what_is_not_an_archive():
    entries = [(1, b'{"a":1}'), (2, b'{"b":"x\\ny"}')]
    archive = compaction.unpack(compaction.pack(entries, [b'{"id":1}']))
    assert archive.entries == entries and archive.lines == [b'{"id":1}'] and archive.version == 2
    import zstandard

    with pytest.raises(ValueError):
        compaction.unpack(zstandard.ZstdCompressor().compress(b"something else 1 0\n{}"))


def test_a_compacted_table_reads_as_before_and_keeps_only_small_keys(any_redis, tmp_path, capsys):
    redis = any_redis
    svc = TableService(redis, rng=random.Random(3))
    tid, state = _finished_and_declined(svc)
    records = svc.records(tid)
    exported = export_table(svc, tid)
    past = svc.load(tid, until=state.version - 30)
    redis.xadd(f"table:{{{tid}}}:chat", {"line": '{"seat":0,"name":"Ana","text":"gg","at":"x","id":1}'},
               id="1-0")
    done = compaction.compact(redis, tid, state.version)
    assert done["events"] == state.version and done["chat"] == 1
    assert done["archive_bytes"] * 4 < done["raw_bytes"]  # zstandard packs a log 4x or better
    # SCAN, not KEYS: a cluster client scans every master
    keys = sorted(k.decode().split(":", 2)[2] for k in redis.scan_iter(match=f"table:{{{tid}}}:*"))
    assert keys == ["archive"], keys  # no tokens in this service-only table, no hot key
    for reader in (svc, TableService(redis, cache_size=0)):  # a stale cache and a fresh process
        assert reader.load(tid) == state
        assert reader.load(tid, until=state.version - 30) == past
        assert reader.records(tid) == records
        assert export_table(reader, tid) == exported  # the admin log: byte for byte
        assert reader.entries(tid, after=10, until=20) == [
            (v, r) for v, r in compaction.load(redis, tid).entries if 10 < v <= 20]
    # escoba replay reads it from Redis as before
    fresh = TableService(redis, cache_size=0)
    assert fresh.compacted(tid) and not TableService(redis).compacted("nosuchtable")
    assert fresh.version(tid) == state.version and fresh.exists(tid) and not fresh.exists("nosuchtable")
    path = tmp_path / "log.jsonl"
    path.write_text(exported)
    assert replay_main(["--file", str(path), "--json"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("fresh", [False, True])
def test_a_write_to_a_compacted_table_answers_table_closed(service, fresh):
    tid, state = _finished_and_declined(service)
    assert compaction.compact(service.redis, tid, state.version) is not None
    svc = TableService(service.redis) if fresh else service
    for command, actor in (({"type": "rematch", "by": 0, "accept": True}, "seat:0"),
                           ({"type": "sit", "player": "p9", "name": "Zoe"}, "guest"),
                           ({"type": "expire"}, "system")):
        with pytest.raises(engine.RuleError) as exc:
            svc.execute(tid, command, actor=actor)
        assert exc.value.code == "table_closed" and exc.value.status == 409
    assert not service.redis.exists(f"table:{{{tid}}}:events")  # nothing written back


def test_compaction_leaves_a_table_that_moved_or_is_gone(service):
    tid = autoplay.new_table(service)
    version = service.load(tid).version
    service.execute(tid, {"type": "start", "by": 0}, actor="seat:0")
    assert compaction.compact(service.redis, tid, version) is None  # it moved on
    assert compaction.compact(service.redis, "nosuchtable", 5) is None
    assert not compaction.is_compacted(service.redis, tid)
