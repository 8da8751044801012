"""Two queue shards on real Redises, on both topologies: ``escoba worker --shard 0`` and
``--shard 1`` play whole bots-only games and open PLAYER AWAY and expire tables on both shards;
every job a queue Redis received (its MONITOR) belongs to a table of that shard."""

from __future__ import annotations

import contextlib
import threading

import pytest
import redis

from events.connection import queue_shard

from ..redis_servers import start_plain
from .chaos import Scene, Worker, wait

pytestmark = pytest.mark.integration

SETTINGS = {"ESCOBA_BOT_DELAY": "0.05", "ESCOBA_AWAY_AFTER": "1", "ESCOBA_EXPIRE_AFTER": "2",
            "ESCOBA_COMPACT_AFTER": "1"}


class Received:
    """The job ids pushed onto a queue Redis's ``escoba`` queue, read from its MONITOR."""

    def __init__(self, port: int):
        self.ids: list[str] = []
        self._monitor = redis.Redis(port=port).monitor()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        with contextlib.suppress(Exception), self._monitor as m:
            for cmd in m.listen():
                parts = cmd["command"].split()
                if len(parts) >= 3 and parts[0] in ("RPUSH", "LPUSH") and parts[1] == "rq:queue:escoba":
                    job_id = parts[2]
                    if not job_id.startswith("escoba_reconcile_"):  # each shard's own, not a table's
                        self.ids.append(job_id)


@pytest.fixture
def two_shards(topology, tmp_path):
    topology.flush()
    servers = [start_plain(tmp_path / f"q{i}") for i in range(2)]
    yield servers
    for s in servers:
        s.stop()
    topology.flush()


def test_two_shards_play_games_and_fire_timers_each_on_its_own(topology, two_shards, tmp_path):
    urls = ",".join(s.url for s in two_shards)
    env = {**topology.env, "ESCOBA_QUEUE_URL": urls, **SETTINGS}
    received = [Received(s.port) for s in two_shards]
    b = topology.backends()
    workers = []
    try:
        from rq import Worker as RQWorker

        workers = [Worker(tmp_path / f"w{i}.log", env, ("--shard", str(i))) for i in range(2)]
        logs = [w.log for w in workers]
        wait(lambda: all(RQWorker.all(connection=s.client()) for s in two_shards), 60, "the workers", logs)
        scene = Scene.on(b.tables, SETTINGS)
        while {queue_shard(t, 2) for t in scene.bots} != {0, 1} or len(scene.bots) < 2:
            scene.open_bots(1)
        humans = []
        while {queue_shard(t, 2) for t in humans} != {0, 1}:
            humans.append(scene._human_vs_bot())
        wait(lambda: all(scene.svc.load(t).status == "finished" for t in scene.bots), 180, "the bots' games", logs)
        wait(lambda: all(scene.svc.load(t).status == "expired" for t in humans), 60, "the human tables to expire",
             logs)
        for tid in humans:
            types = [r["type"] for r in scene.svc.records(tid)]
            assert types.count("AwayOpened") == 1 and types[-1] == "TableExpired"
        for shard, got in enumerate(received):
            assert got.ids, f"shard {shard} received no job"
            assert {queue_shard(j[:8], 2) for j in got.ids} == {shard}
        tables = set(scene.bots + humans)
        seen = {j[:8] for got in received for j in got.ids}
        assert tables <= seen  # every table's jobs went somewhere: to its own shard
    finally:
        for w in workers:
            w.stop()
        b.close()
