"""On the real Redis, one and clustered (``topology``): concurrent appends, idempotency
across processes; and a crash of one Redis."""

from __future__ import annotations

import json
import os
import random
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from events import autoplay
from events.service import TableService
from events.store import Append, EventStore, VersionConflict

from ..redis_servers import start_plain

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def rec(version: int) -> dict:
    return {"type": "BotRemoved", "v": 1, "version": version, "at": "2024-01-01T00:00:00.000Z",
            "actor": "system", "data": {"seat": 1}}


def test_many_threads_one_expected_version_exactly_one_wins(tables):
    t = "race-" + secrets.token_urlsafe(6)
    store = EventStore(tables)
    store.append(Append(t, 0, [rec(1)]))
    threads, n = [], 24
    barrier = threading.Barrier(n)
    wins, conflicts, errors = [], [], []

    def worker(i):
        own = EventStore(tables)  # a store of its own on the (thread-safe) shared client
        batch = [rec(2), rec(3)] if i % 2 else [rec(2)]
        barrier.wait()
        try:
            wins.append(own.append(Append(t, 1, batch)).version)
        except VersionConflict as exc:
            conflicts.append(exc.current)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    for i in range(n):
        threads.append(threading.Thread(target=worker, args=(i,)))
        threads[-1].start()
    for th in threads:
        th.join()
    assert not errors
    assert len(wins) == 1 and len(conflicts) == n - 1
    assert set(conflicts) == {wins[0]}
    versions = [r["version"] for r in store.read(t)]
    assert versions == list(range(1, wins[0] + 1))


def test_many_threads_appending_with_retries_leave_no_gap_or_duplicate(tables):
    t = "race-" + secrets.token_urlsafe(6)
    store = EventStore(tables)
    n, each = 8, 25
    barrier = threading.Barrier(n)

    def worker():
        barrier.wait()
        done = 0
        while done < each:
            v = store.version(t)
            try:
                store.append(Append(t, v, [rec(v + 1)]))
                done += 1
            except VersionConflict:
                pass

    threads = [threading.Thread(target=worker) for _ in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert [r["version"] for r in store.read(t)] == list(range(1, n * each + 1))


def test_service_threads_on_one_table(tables):
    """Threads sitting players at once through TableService: every append lands, in order."""
    svc = TableService(tables, rng=random.Random(1))
    tid = autoplay.new_table(svc, players=1)
    barrier = threading.Barrier(3)
    results, errors = [], []

    def sit(i):
        own = TableService(tables)
        barrier.wait()
        try:
            results.append(own.execute(tid, {"type": "sit", "player": f"x{i}", "name": "X"},
                                       actor=f"guest{i}"))
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=sit, args=(i,)) for i in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert sorted(o.version for o in results) == [2, 3, 4]
    state = TableService(tables, cache_size=0).load(tid)
    assert sorted(s.player for s in state.seats) == ["p0", "x0", "x1", "x2"]
    assert [r["version"] for r in svc.records(tid)] == [1, 2, 3, 4]


_CHILD = r"""
import json, os, sys, time
from events.config import Config
from events.connection import connect
from events.service import TableService
client = connect(Config.from_env()).tables  # REDIS_URL: one Redis or any node of the cluster
go = float(os.environ["GO"])
svc = TableService(client)
svc.load(os.environ["TID"])          # warm up before the start line
while time.time() < go:
    time.sleep(0.0005)
out = svc.execute(os.environ["TID"], {"type": "sit", "player": "late", "name": "Late"},
                  actor="guest", idempotency_key="same-key")
print(json.dumps({"version": out.version, "repeated": out.repeated,
                  "seats": [s.player if s else None for s in out.state.seats]}))
"""


def test_idempotency_across_processes(tables, topology):
    """Four processes send the same request (same actor and key) at the same instant."""
    svc = TableService(tables, rng=random.Random(2))
    tid = autoplay.new_table(svc, players=1)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **topology.env, "TID": tid,
           "GO": str(time.time() + 3.0)}
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    answers = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        answers.append(json.loads(out))
    assert {a["version"] for a in answers} == {2}
    assert sorted(a["repeated"] for a in answers) == [False, True, True, True]
    assert all(a["seats"] == ["p0", "late", None, None] for a in answers)
    assert [r["type"] for r in svc.records(tid)] == ["TableOpened", "PlayerSeated"]


# --- durability: kill -9 a Redis with AOF, restart it, find every acknowledged append ----

def test_acknowledged_appends_survive_kill_9(redis_server_binary, tmp_path):
    server = start_plain(tmp_path, durable=True)
    try:
        client = server.client()
        svc = TableService(client, rng=random.Random(8))
        tid = autoplay.new_table(svc)
        acknowledged = []
        autoplay.play(svc, tid, random.Random(8), until_version=150,
                      on_outcome=lambda o: acknowledged.append(o))
        last = acknowledged[-1]
        records = svc.records(tid)
        assert len(records) == last.version >= 150
        client.close()
    finally:
        server.kill()
    server.start()  # same port, same directory: it reads its AOF back
    try:
        client = server.client()
        again = TableService(client, cache_size=0, snapshot_every=0)
        assert again.records(tid) == records
        assert again.load(tid) == last.state
        assert again.table_ids() == [tid]
        client.close()
    finally:
        server.kill()
