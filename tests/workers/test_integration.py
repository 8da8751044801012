"""A real ``python -m workers.cli worker`` on real Redis, with timers of a second or two.

On both topologies (the suite's ``topology`` fixture, parametrized): ``plain``, the tables
and RQ on the suite's own Redis; ``cluster``, the tables on its own 3-master Redis Cluster
and RQ on a plain queue Redis (``ESCOBA_QUEUE_URL``). Emptied before and after.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rq.job import Job

from events import compaction
from events.config import Config
from events.service import TableService
from workers import index, scheduling, ticker

from .conftest import start_bots_only
from .receiver import Receiver

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FAST = {"ESCOBA_BOT_DELAY": "0.05", "ESCOBA_AWAY_AFTER": "1", "ESCOBA_EXPIRE_AFTER": "2",
        "ESCOBA_COMPACT_AFTER": "1"}


@pytest.fixture
def rdb(stores):
    """The tables' client (a RedisCluster on the cluster topology)."""
    return stores.tables


@pytest.fixture
def qdb(stores):
    """The queue Redis."""
    return stores.queue


class WorkerProcess:
    """``python -m workers.cli worker`` in its own session, so its job processes go too."""

    def __init__(self, tmp_path: Path, topology, settings: dict,
                 name: str = "worker", args: tuple = ()):
        # a topology (tables and queue), or one URL for both (other modules' tests)
        stores = {"REDIS_URL": topology} if isinstance(topology, str) else topology.env
        env = {**os.environ, **stores, "PYTHONPATH": str(ROOT), **settings}
        self.log = tmp_path / f"{name}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "workers.cli", "worker", *args], cwd=ROOT, env=env,
            stdout=self.log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self, sig=signal.SIGTERM) -> None:
        with contextlib.suppress(ProcessLookupError):  # the group: the worker and its children
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


@pytest.fixture
def start_worker(tmp_path, topology, stores):
    started = []

    def start(settings=FAST, name="worker", args=()):
        w = WorkerProcess(tmp_path, topology, settings, f"{name}{len(started)}", args)
        started.append(w)
        # ready: its job processes registered with RQ (a start on a loaded machine takes
        # seconds, longer than these tests' timers)
        processes = int(args[args.index("--processes") + 1]) if "--processes" in args else 1
        _wait(lambda: w.proc.poll() is None and _registered(stores.queue, w) >= processes,
              60, "the worker to start", w)
        return w

    yield start
    for w in started:
        w.stop()


def _registered(queue, worker) -> int:
    """RQ workers registered by ``worker``'s process or its job processes."""
    from rq import Worker

    pids = {worker.proc.pid}
    with contextlib.suppress(Exception):
        pids |= {int(p) for p in subprocess.run(["pgrep", "-P", str(worker.proc.pid)],
                                                capture_output=True, text=True).stdout.split()}
    return sum(1 for w in Worker.all(connection=queue) if w.pid in pids)


def _service(rdb, settings=FAST) -> tuple[TableService, Config]:
    config = Config.from_env(settings)
    return TableService(rdb, on_change=scheduling.on_change_hook(rdb, config)), config


def _open(svc, bots=("tito",)) -> str:
    tid, _ = svc.create({"type": "open", "name": "it", "preset": "del15",
                         "settings": {"target": 10}, "player": "p0", "host_name": "Ana"})
    for bot in bots:
        svc.execute(tid, {"type": "add_bot", "by": 0, "bot": bot}, actor="seat:0")
    return tid


def _bots_only(svc) -> str:
    return start_bots_only(svc, bots=("carmen", "tito"))


def _wait(predicate, timeout: float, what: str, worker=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    log = worker.log.read_text()[-3000:] if worker is not None else ""
    raise AssertionError(f"timed out waiting for {what}\n{log}")


def _kinds(job_ids) -> set[str]:
    """``<table>_<kind>`` of each id (the lazy ones end in their due second)."""
    return {j.rsplit("_", 1)[0] for j in job_ids}


def _types(svc, tid):
    return [r["type"] for r in svc.records(tid)]


def _at(svc, tid, kind):
    return [scheduling.parse_at(r["at"]) for r in svc.records(tid) if r["type"] == kind]


@pytest.mark.parametrize("processes", [1, 2])
def test_worker_drives_bots_opens_away_and_expires(rdb, qdb, start_worker, processes):
    svc, _ = _service(rdb)
    worker = start_worker(args=("--processes", str(processes)))
    bots = _bots_only(svc)
    human = _open(svc)
    svc.execute(human, {"type": "start", "by": 0}, actor="seat:0")

    _wait(lambda: svc.load(bots).status == "finished", 120, "the bots-only game", worker)
    assert svc.load(bots).ended_by == "target"

    _wait(lambda: "TableExpired" in _types(svc, human), 30, "the human table to expire", worker)
    records = svc.records(human)
    types = [r["type"] for r in records]
    assert types.count("AwayOpened") == 1 and types.count("TableExpired") == 1
    assert types.index("AwayOpened") < types.index("TableExpired")
    moves = [r for r in records if r["type"] not in scheduling.NOT_MOVES]
    turn_start = [r for r in records if r["type"] in scheduling.TURN_STARTS][-1]
    away_at, expired_at = _at(svc, human, "AwayOpened")[0], _at(svc, human, "TableExpired")[0]
    assert away_at - scheduling.parse_at(turn_start["at"]) >= 1.0  # never early
    assert expired_at - scheduling.parse_at(moves[-1]["at"]) >= 2.0
    # expired: closed for good, so the worker compacts it a second later
    _wait(lambda: compaction.is_compacted(rdb, human), 30, "the expired table to be compacted", worker)
    assert not rdb.exists(f"table:{{{human}}}:events", f"table:{{{human}}}:timers",
                          f"table:{{{human}}}:snapshot")
    assert TableService(rdb, cache_size=0).records(human) == records  # still reads as before
    assert scheduling.pending_jobs(rdb, human, qdb) == []
    # RQ never held a future deadline: nothing scheduled, only work in flight
    assert qdb.zcard("rq:scheduled:escoba") == 0


# the bots' game must outlast the pause between the kill and the next worker (two processes
# starting on a loaded machine): a longer expiry than FAST's
SLOWER_EXPIRY = {**FAST, "ESCOBA_EXPIRE_AFTER": "16"}


def test_reconciler_recovers_every_timer_after_the_worker_is_killed(rdb, qdb, topology,
                                                                    start_worker):
    svc, config = _service(rdb, SLOWER_EXPIRY)
    worker = start_worker(SLOWER_EXPIRY)
    bots = _bots_only(svc)
    _wait(lambda: svc.load(bots).version >= 25, 60, "the bots to get going", worker)
    worker.kill()  # SIGKILL, mid-game, maybe mid-job
    mid = svc.load(bots)
    assert mid.status != "finished"
    human = _open(svc)
    svc.execute(human, {"type": "start", "by": 0}, actor="seat:0")
    time.sleep(0.3)
    bot_job = f"{bots}_bot_{mid.version}"

    def handed():
        ticker.tick(rdb, qdb, time.time() + 0.1)
        return qdb.exists(Job.key_for(bot_job)) or bot_job not in scheduling.pending_jobs(rdb, bots, qdb)

    # whatever is due is handed to RQ (as the dead worker's ticker would have): once the claim the
    # dead worker's ticker may have held on the table has run out (index.LEASE)...
    _wait(handed, index.LEASE + 3, "the bot job handed to RQ")
    # (either handed now, or the kill came between the append and its hook's write: the
    # hash then still names the previous bot job, and the reconciler must add this one)
    # ...and the queue Redis loses every RQ key: the queue, job hashes, registries
    for key in qdb.scan_iter("rq:*"):
        qdb.delete(key)
    assert bot_job not in scheduling.pending_jobs(rdb, bots, qdb)

    env = {**os.environ, **topology.env, "PYTHONPATH": str(ROOT), **SLOWER_EXPIRY}
    out = subprocess.run([sys.executable, "-m", "workers.cli", "reconcile"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    state = svc.load(human)
    mid = svc.load(bots)
    # rebuilt from the log: lazy timers (away, expire) named by their due second, bots by version
    wanted_human = {t.job_id for t in scheduling.timers_from_log(rdb, human, state, config).values()}
    assert any("_expire_" in j for j in wanted_human)
    assert f"{human}_bot_{state.version}" in wanted_human or state.turn == 0
    wanted_bots = {t.job_id for t in scheduling.timers_from_log(rdb, bots, mid, config).values()}
    assert f"{bots}_bot_{mid.version}" in wanted_bots
    # the bot job handed to RQ and lost with it is re-armed; the timers not due yet never left
    # the tables' store
    assert f"{bots}_bot_{mid.version}" in summary["scheduled"]
    # every kind the log wants is pending (a lazy one may be an earlier copy: it moves itself)
    assert _kinds(scheduling.pending_jobs(rdb, human, qdb)) == _kinds(wanted_human)
    assert _kinds(scheduling.pending_jobs(rdb, bots, qdb)) == _kinds(wanted_bots)

    worker2 = start_worker(SLOWER_EXPIRY, name="after")
    _wait(lambda: svc.load(bots).status == "finished", 120, "the bots game to finish", worker2)
    _wait(lambda: "TableExpired" in _types(svc, human), 30, "the human table to expire", worker2)
    assert _types(svc, human).count("AwayOpened") == 1
    assert _types(svc, bots).count("TableExpired") == 0


def test_a_job_process_killed_mid_job_loses_no_job(rdb, qdb, start_worker):
    """``--processes 2``: SIGKILL the process running a job; the supervisor puts the job back
    on the queue and starts another process; the job runs to its end."""
    from rq import Queue, Worker

    worker = start_worker(args=("--processes", "2"))
    _wait(lambda: len(Worker.all(connection=qdb)) == 2, 30, "two job processes", worker)
    Queue("escoba", connection=qdb).enqueue("tests.workers.slow.slow_job", "slow", 3.0,
                                            job_id="slow_1", result_ttl=0)
    _wait(lambda: qdb.llen("slow:started") == 1, 30, "the slow job to start", worker)
    from rq.job import Job

    runner_name = Job.fetch("slow_1", connection=qdb).worker_name  # the job says who runs it
    running = [w for w in Worker.all(connection=qdb) if w.name == runner_name]
    assert len(running) == 1
    os.kill(running[0].pid, signal.SIGKILL)
    _wait(lambda: qdb.get("slow:done") == b"1", 30, "the job to run again to its end", worker)
    started = [x.decode() for x in qdb.lrange("slow:started", 0, -1)]
    assert len(started) == 2 and started[0] == running[0].name != started[1]
    _wait(lambda: len(Worker.all(connection=qdb)) == 2, 30, "a new job process", worker)
    assert "put back on its queue" in worker.log.read_text()


def test_turn_notice_reaches_a_receiver_after_two_failures(rdb, qdb, start_worker):
    slow = {"ESCOBA_BOT_DELAY": "0.05", "ESCOBA_AWAY_AFTER": "60", "ESCOBA_EXPIRE_AFTER": "120",
            "ESCOBA_NOTIFY_ALLOW_PRIVATE": "1"}  # the receiver listens on 127.0.0.1
    svc, _ = _service(rdb, slow)
    with Receiver(statuses=[500, 500]) as rx:
        worker = start_worker(slow)
        tid = _open(svc)
        rdb.hset(scheduling.notify_key(tid), "0", rx.url)
        svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0")
        _wait(lambda: rx.delivered, 30, "the turn notice", worker)
        assert len(rx.attempts) == 3
        notice = rx.delivered[0]
        state = svc.load(tid)
        assert notice == {"table_id": tid, "seat": 0, "version": notice["version"], "turn": 0}
        assert notice["version"] <= state.version and state.turn == 0
