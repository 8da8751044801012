"""The analysis job on real Redis (both topologies): asked once, behind every bot turn, in slices that
a dead worker or a lost job leave resumable, and kept through compaction."""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import random
import signal
import threading
import time

import pytest
from rq import Worker
from rq.job import Job
from rq.registry import StartedJobRegistry

from engine import analysis as judging
from engine import view
from engine.bots import choose
from events import analysis as stored
from events import compaction
from events.config import Config
from events.records import from_record
from events.service import TableService
from workers import analysis as job
from workers import context, jobs, runner, scheduling, ticker

from .conftest import start_bots_only
from .test_integration import FAST, WorkerProcess, _registered, _wait

pytestmark = pytest.mark.integration
CONFIG = Config(bot_delay=0.0, away_after=60.0, expire_after=600.0, rematch_window=300.0)


@pytest.fixture
def stores(topology):
    topology.flush()
    b = topology.backends()
    context.configure(CONFIG, tables=b.tables)
    yield b
    context.configure(None, None)
    b.close()
    topology.flush()


@pytest.fixture
def small(monkeypatch):
    monkeypatch.setattr(job, "BUDGET", 1000)  # fewer deals a play: the same code, quicker


def _bot_move(svc, tid) -> None:
    state = svc.load(tid)
    if state.status == "round_over":
        command = {"type": "next_round", "by": state.players[0]}
    else:
        rng = random.Random(f"{tid}:{state.version}")
        command = {**choose("tito", view(state, state.turn), rng), "by": state.turn}
    svc.execute(tid, command, actor=f"seat:{command['by']}")


def _resigned_after_a_round(svc) -> str:
    """A bots' game (no timers: the service has no hook) played through its first round, then resigned."""
    tid = start_bots_only(svc, bots=("tito", "tito"))
    while svc.load(tid).status == "playing":
        _bot_move(svc, tid)
    if svc.load(tid).status != "finished":  # a first round may reach the target of 10 itself (a CI run's did)
        svc.execute(tid, {"type": "resign", "by": 0}, actor="seat:0")
    assert svc.load(tid).status == "finished"
    return tid


def _rows_clock():
    """A clock for ``workers.analysis.work`` that advances one second a row: a slice of ``n + 0.5``
    seconds judges ``n`` rows on any machine."""
    return itertools.count().__next__


def _events(svc, tid) -> list:
    return [from_record(r) for r in svc.records(tid)]


def test_asking_twice_starts_one_job_and_the_result_survives_compaction(stores, small):
    tables, queue = stores.tables, stores.queue
    svc = TableService(tables)
    tid = _resigned_after_a_round(svc)
    version = svc.load(tid).version
    first = job.request(tables, queue, tid, version)
    second = job.request(tables, queue, tid, version)
    assert first.status == second.status == stored.PENDING
    assert job.queue_for(queue).job_ids == [job.job_id(tid, version)]
    assert scheduling.queue_for(queue).count == 0  # never on the bots' and timers' queue
    runner.run_burst(tables, queue)
    found = stored.load(tables, tid)
    assert found.status == stored.DONE and found.version == version and not found.rows
    expected = judging.analyse(_events(svc, tid), tid, budget=1000)
    assert found.result == expected
    assert not tables.sismember(job.PENDING_KEY, tid)
    # compaction keeps the analysis (derived data beside the log, not a hot key)
    assert compaction.compact(tables, tid, version) is not None
    assert stored.load(tables, tid).result == expected
    assert job.request(tables, queue, tid, version).status == stored.DONE
    assert job.queue_for(queue).count == 0


def test_analysis_jobs_never_delay_a_bot_turn(stores, small, monkeypatch):
    """An analysis and a bot turn both queued, the analysis first: the worker takes the bot turn first,
    and no analysis slice starts while a bot turn or a timer waits."""
    tables, queue = stores.tables, stores.queue
    svc = TableService(tables, on_change=scheduling.on_change_hook(tables, CONFIG))
    tid = start_bots_only(svc, bots=("tito", "carmen"))
    for _ in range(6):
        jobs.bot_turn(tid, svc.load(tid).version)
    version = svc.load(tid).version
    job.request(tables, queue, tid, version)  # the admin's, mid-game: queued first
    handed = ticker.tick(tables, queue, time.time() + 5)
    assert handed and scheduling.queue_for(queue).count == 1
    assert job.queue_for(queue).count == 1
    ran = []
    original = runner.ThreadWorker.execute_job

    def execute(self, rq_job, rq_queue):
        ran.append((rq_job.origin, scheduling.queue_for(queue).count))
        return original(self, rq_job, rq_queue)

    # many slices, interleaved with the bots: a row a slice, whatever the machine's speed (a slice
    # of 0.05 s of CPU judged a fast machine's whole analysis in one)
    monkeypatch.setattr(job, "work", functools.partial(job.work, clock=_rows_clock()))
    monkeypatch.setattr(job, "SLICE_SECONDS", 1.5)
    monkeypatch.setattr(runner.ThreadWorker, "execute_job", execute)
    # the bots' timers stay due for 30 s of the wall clock (their moves are stamped with it): a loaded
    # machine whose slices took 5 s ended the bots' chain there once, and the slices went on alone.
    # Still under every other timer's delay (CONFIG: away 60 s, for humans only; rematch 300; expire 600)
    runner.run_burst(tables, queue, time.time() + 30)
    assert ran[0][0] == scheduling.QUEUE_NAME
    slices = [waiting for origin, waiting in ran if origin == job.QUEUE_NAME]
    assert len(slices) >= 2 and all(waiting == 0 for waiting in slices)
    assert sum(origin == scheduling.QUEUE_NAME for origin, _ in ran) > len(slices)
    assert stored.load(tables, tid).status == stored.DONE


def test_a_lost_job_is_resumed_by_the_reconciler_from_the_rows_already_judged(stores, small, monkeypatch):
    tables, queue = stores.tables, stores.queue
    svc = TableService(tables)
    tid = _resigned_after_a_round(svc)
    version = svc.load(tid).version
    job.request(tables, queue, tid, version)
    # a slice judged some rows, then its worker and the queue Redis were lost with the job
    outcome, done = job.work(tables, svc, tid, version, 9.5, clock=_rows_clock())
    assert outcome == "continued" and done == 9  # (0.3 s of CPU judged all 36 on a fast CI machine)
    for key in queue.scan_iter("rq:*"):
        queue.delete(key)
    judged = []
    original = judging.judge
    monkeypatch.setattr(judging, "judge", lambda d, *a, **k: judged.append(d.version) or original(d, *a, **k))
    summary = runner.reconcile(tables, queue, CONFIG)
    assert summary["errors"] == []
    assert job.queue_for(queue).job_ids == [job.job_id(tid, version, done)]
    runner.run_burst(tables, queue)
    found = stored.load(tables, tid)
    assert found.status == stored.DONE
    assert len(judged) == 36 - done  # only what was missing
    assert found.result == judging.analyse(_events(svc, tid), tid, budget=1000)


def test_a_worker_process_killed_mid_analysis_leaves_a_job_that_finishes(stores, topology, tmp_path):
    """``escoba worker --processes 2``: SIGKILL the process judging; the supervisor puts the slice back
    on the analysis queue and the analysis ends with the result an unbroken one gives."""
    tables, queue = stores.tables, stores.queue
    svc = TableService(tables)
    tid = _resigned_after_a_round(svc)
    version = svc.load(tid).version
    worker = WorkerProcess(tmp_path, topology, FAST, "analysis-worker", ("--processes", "2"))
    try:
        _wait(lambda: worker.proc.poll() is None and _registered(queue, worker) >= 2, 60,
              "the worker to start", worker)
        job.request(tables, queue, tid, version)
        killed = None
        deadline = time.time() + 60
        while killed is None and time.time() < deadline:
            found = stored.load(tables, tid)
            assert found.status == stored.PENDING, "finished before it could be killed"
            # the lean worker writes no current job on its own hash: the job's hash names its worker
            started = StartedJobRegistry(job.QUEUE_NAME, connection=queue).get_job_ids()
            running = [j for j in started if j.startswith(f"{tid}_analysis")]
            by_name = {w.name: w for w in Worker.all(connection=queue)}
            for current in running if found.rows else []:
                name = queue.hget(Job.key_for(current), "worker_name")
                w = by_name.get(name.decode() if isinstance(name, bytes) else name)
                if w is not None and w.pid:
                    os.kill(w.pid, signal.SIGKILL)
                    killed = (len(found.rows), current)
                    break
            time.sleep(0.02)
        assert killed, "no analysis job seen running"
        _wait(lambda: stored.load(tables, tid).status == stored.DONE, 120, "the analysis to finish", worker)
        assert "put back on its queue" in worker.log.read_text()
    finally:
        worker.stop()
    expected = judging.analyse(_events(svc, tid), tid)
    assert stored.load(tables, tid).result == expected


def test_a_request_and_the_reconciler_at_once_enqueue_one_job(stores, small, monkeypatch):
    """The POST has written the pending analysis and the minute's reconcile pass finds it before
    the POST has queued its job: both look for the job at the same moment, and only one pushes it
    (two copies of one id would run the same slice on two workers)."""
    tables, queue = stores.tables, stores.queue
    svc = TableService(tables)
    tid = _resigned_after_a_round(svc)
    version = svc.load(tid).version
    original = scheduling.job_alive
    both_looking = threading.Barrier(2, timeout=0.5)

    def alive_slowly(queue_redis, jid):
        with contextlib.suppress(threading.BrokenBarrierError):
            both_looking.wait()  # without the claim both callers meet here, both finding no job
        return original(queue_redis, jid)

    monkeypatch.setattr(scheduling, "job_alive", alive_slowly)
    stored.ask(tables, tid, version)
    tables.sadd(job.PENDING_KEY, tid)
    found = stored.load(tables, tid)
    results = []
    callers = [threading.Thread(target=lambda: results.append(job._ensure(tables, queue, tid, found))),
               threading.Thread(target=lambda: results.append(job.resume(tables, queue)))]
    for t in callers:
        t.start()
    for t in callers:
        t.join(10)
    assert len(results) == 2
    assert job.queue_for(queue).job_ids == [job.job_id(tid, version)]
    assert not queue.exists(job.CLAIM_PREFIX + job.job_id(tid, version))  # the claim is let go
    runner.run_burst(tables, queue)
    assert stored.load(tables, tid).status == stored.DONE
