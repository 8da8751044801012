"""Running the jobs: ``escoba worker``, the reconciler, and an in-process runner for ``escoba dev``.

``escoba worker`` runs jobs in process (RQ's ``SimpleWorker``: no fork per
job; ``--fork`` brings the forking ``Worker`` back) and a ticker
(``workers.ticker``) that hands RQ the timers due now. ``--processes N`` runs
N job processes under one supervisor, which runs the ticker, restarts a
process that dies and puts the job it was running back on the queue at once.

The reconciler is incremental: each pass takes the tables whose change hook
failed (the buckets' ``repair`` sets) and then a bounded batch of the live
tables (``workers.index``, the ``live`` sets) from a cursor kept in the
tables' store, so a pass costs O(batch), never O(every table). For each
table it rebuilds the due timers from the log (``timers_from_log``), writes
what is missing into the table's hash, re-arms a timer handed to RQ whose job
is gone or failed, and puts the table's due-index entry back. It runs at
worker start, every ``RECONCILE_EVERY`` seconds as the job
``escoba_reconcile_<slot>`` (enqueued by whichever ticker first takes the slot's
key on the queue Redis), and as ``escoba reconcile`` (a full pass, or
``--batch N``).

``start_background_worker(tables, config, queue=None)`` (for ``escoba dev``):
one thread that ticks, then runs a ``SimpleWorker`` in burst mode over the
queue, every ``POLL`` seconds. Returns ``stop()``.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
import time

from rq import Queue, SimpleWorker, Worker
from rq.job import Job
from rq.registry import StartedJobRegistry
from rq.timeouts import TimerDeathPenalty

from . import analysis, index, jobs, scheduling, ticker

log = logging.getLogger("escoba.workers")

RECONCILE_EVERY = 60  # seconds between incremental passes
RECONCILE_BATCH = 500  # live tables per pass (plus the repair sets)
CURSOR_KEY = "timers:{reconcile}:cursor"  # "<bucket>:<sscan cursor>": one small key, one writer per slot
POLL = 0.1  # the in-process runner's loop
MAINTENANCE_EVERY = 60  # seconds
CHECK_CHILDREN = 0.5  # seconds between the supervisor's looks at its processes


# --- the reconciler --------------------------------------------------------------

def reconcile_table(tables, queue, svc, table_id: str, config, now: float) -> dict:
    """One table's timers rebuilt from its log (see the module's docstring)."""
    try:
        state = svc.load(table_id)
    except Exception as exc:
        if getattr(exc, "code", None) == "not_found":  # a live entry of a table that is gone
            index.drop_live(tables, table_id)
            return {"scheduled": [], "removed": [], "skipped": False}
        raise
    wanted = scheduling.timers_from_log(tables, table_id, state, config)
    result = scheduling.apply_timers(tables, table_id, state.version, wanted, now=now,
                                     verify=True, queue=queue)
    if not wanted and not result["skipped"] and \
            not scheduling.unsent(scheduling.read_timers(tables, table_id)):
        index.drop_live(tables, table_id)  # nothing more to do for it unless it moves again
    return result


def _next_batch(tables, batch: int) -> list[str]:
    """Up to about ``batch`` live tables from the stored cursor, which moves on (wraps)."""
    raw = tables.get(CURSOR_KEY)
    bucket, cursor = (int(x) for x in scheduling._text(raw).split(":")) if raw else (0, 0)
    bucket %= index.BUCKETS
    start = bucket
    found: list[str] = []
    while len(found) < batch:
        cursor, ids = index.scan_live(tables, bucket, cursor, batch - len(found))
        found += ids
        if cursor == 0:
            bucket = (bucket + 1) % index.BUCKETS
            if bucket == start:
                break  # a whole round over every bucket
    tables.set(CURSOR_KEY, f"{bucket}:{cursor}")
    return list(dict.fromkeys(found))


def _all_live(tables) -> list[str]:
    found: list[str] = []
    for bucket in range(index.BUCKETS):
        cursor = 0
        while True:
            cursor, ids = index.scan_live(tables, bucket, cursor, 1000)
            found += ids
            if cursor == 0:
                break
    return list(dict.fromkeys(found))


def _repairs(tables, limit: int) -> list[str]:
    out: list[str] = []
    for bucket in range(index.BUCKETS):
        if len(out) >= limit:
            break
        out += index.take_repairs(tables, bucket, limit - len(out))
    return out


def reconcile(tables, queue, config, table_ids=None, clock=time.time, *,
              batch: int | None = RECONCILE_BATCH) -> dict:
    """One pass: the repair sets, then ``batch`` live tables from the cursor (``batch=None``: every
    live table; ``table_ids``: only those). A summary dict."""
    from events.service import TableService

    svc = TableService(tables, cache_size=0)
    try:  # jobs of a worker that died mid-job: RQ retries them or marks them failed
        for rq_queue in analysis.queues_for(queue):
            rq_queue.started_job_registry.cleanup()
    except Exception:
        log.exception("reconcile: cleaning RQ's started registry")
    try:  # an analysis whose job died or was lost goes on from its saved rows
        analysis.resume(tables, queue)
    except Exception:
        log.exception("reconcile: resuming analyses")
    if table_ids is not None:
        ids = list(table_ids)
    elif batch is None:
        ids = list(dict.fromkeys(_repairs(tables, 10**9) + _all_live(tables)))
    else:
        ids = list(dict.fromkeys(_repairs(tables, batch) + _next_batch(tables, batch)))
    summary = {"tables": 0, "scheduled": [], "removed": [], "errors": []}
    now = clock()
    for table_id in ids:
        try:
            if svc.compacted(table_id):  # read-only for good: no timers, and no hot key again
                continue
            result = reconcile_table(tables, queue, svc, table_id, config, now)
        except Exception as exc:  # one broken table must not stop the pass
            log.exception("reconcile: table %s", table_id)
            summary["errors"].append(f"{table_id}: {type(exc).__name__}: {exc}")
            with contextlib.suppress(Exception):
                index.note_repair(tables, table_id)
            continue
        summary["tables"] += 1
        summary["scheduled"] += result["scheduled"]
        summary["removed"] += result["removed"]
    if summary["scheduled"]:
        log.info("reconcile: %d tables, rescheduled %s", summary["tables"], summary["scheduled"])
    return summary


def reconcile_job(batch: int = RECONCILE_BATCH) -> dict:
    """The periodic reconciler (an RQ job): one incremental pass."""
    return reconcile(jobs.tables(), jobs._connection(), jobs.get_config(), batch=batch)


def maybe_schedule_reconcile(queue, now: float | None = None, every: float = RECONCILE_EVERY) -> str | None:
    """Enqueue this time slot's reconcile job, once over every worker (the first ticker to set the
    slot's key on the queue Redis). Its id, or None when another ticker took the slot."""
    now = time.time() if now is None else now
    slot = int(now // every)
    if not queue.set(f"escoba:reconcile:{slot}", "1", nx=True, ex=int(every * 2) + 1):
        return None
    job_id = f"escoba_reconcile_{slot}"
    scheduling.queue_for(queue).enqueue("workers.runner.reconcile_job", job_id=job_id,
                                        result_ttl=0, failure_ttl=24 * 3600, job_timeout=3600)
    return job_id


# --- in-process runners --------------------------------------------------------

class ThreadWorker(SimpleWorker):
    """A SimpleWorker that can run outside the main thread (no signal handlers, job timeouts
    by timer rather than SIGALRM), and counts the jobs it ran."""

    death_penalty_class = TimerDeathPenalty

    jobs_run = 0

    def execute_job(self, job, queue):
        self.jobs_run += 1
        return super().execute_job(job, queue)

    def _install_signal_handlers(self):
        if threading.current_thread() is threading.main_thread():
            super()._install_signal_handlers()


def run_burst(tables, queue=None, now: float | None = None, max_rounds: int = 100_000) -> int:
    """Hand out the timers due at ``now`` and run them, and what they schedule, until nothing
    is left to do at ``now``; how many jobs ran. (Tests and ``escoba worker --burst``.)"""
    queue = tables if queue is None else queue
    rq_queues = analysis.queues_for(queue)
    worker = ThreadWorker(rq_queues, connection=queue)
    for _ in range(max_rounds):
        handed = ticker.tick(tables, queue, now)
        if not handed and not any(q.count for q in rq_queues):
            break
        worker.work(burst=True, logging_level="WARNING")
    return worker.jobs_run


def start_background_worker(tables, config, *, queue=None, clock=time.time, poll: float = POLL):
    """A worker thread with its own ticker on shared connections (``queue``: the queue Redis,
    by default the same connection as ``tables``, as in ``escoba dev``); returns ``stop()``."""
    queue = tables if queue is None else queue
    # the jobs stamp their records on the same clock as the ticker reads due times by
    job_clock = None if clock is time.time else clock
    jobs.configure(config, job_clock, tables=tables)
    stop = threading.Event()
    rq_queues = analysis.queues_for(queue)

    def loop():
        worker = ThreadWorker(rq_queues, connection=queue)
        next_reconcile = 0.0
        while not stop.is_set():
            try:
                if clock() >= next_reconcile:
                    reconcile(tables, queue, config, clock=clock)
                    next_reconcile = clock() + RECONCILE_EVERY
                ticker.tick(tables, queue, clock())
                if any(q.count for q in rq_queues):
                    # the jobs read their store from the process (workers.jobs); a second
                    # in-process server (tests) must not leave this one's jobs on its store
                    jobs.configure(config, job_clock, tables=tables)
                    worker.work(burst=True, logging_level="WARNING")
            except Exception:  # keep the dev server's worker alive
                log.exception("background worker")
            stop.wait(poll)

    thread = threading.Thread(target=loop, name="escoba-worker", daemon=True)
    thread.start()

    def stop_worker(timeout: float = 5.0) -> None:
        stop.set()
        thread.join(timeout)

    return stop_worker


# --- escoba worker ---------------------------------------------------------------

def _worker_class(fork: bool):
    from .metrics import MeasuredSimpleWorker, MeasuredWorker

    return MeasuredWorker if fork else MeasuredSimpleWorker


def _run_jobs(config, fork: bool, name: str | None = None, burst: bool = False,
              metrics_port: int | None = None) -> None:
    """One job process: its own connections (never shared across a fork), RQ's work loop, and its
    metrics on ``metrics_port``."""
    from . import metrics
    from .backends import connect

    metrics.serve(metrics_port)

    stores = connect(config)
    jobs.configure(config, tables=stores.tables)
    worker = _worker_class(fork)(analysis.queues_for(stores.queue), connection=stores.queue,
                                 name=name, maintenance_interval=MAINTENANCE_EVERY)
    worker.work(burst=burst, logging_level="INFO")


def _periodic(queue):
    def also():
        maybe_schedule_reconcile(queue)
    return also


def requeue_abandoned(queue, worker_name: str) -> str | None:
    """The job a dead job process was running goes back on the queue now (not when RQ's cleanup
    finds it abandoned, a job timeout later). Its id, if there was one."""
    found = Worker.find_by_key(Worker.redis_worker_namespace_prefix + worker_name, connection=queue)
    if found is None:
        return None
    job_id = found.get_current_job_id()
    with contextlib.suppress(Exception):
        found.register_death()
    if job_id is None:
        return None
    job = Job.fetch_many([job_id], connection=queue)[0]
    if job is None or job.get_status() != "started":
        return None
    rq_queue = Queue(job.origin, connection=queue)  # the escoba queue, or the analysis queue
    StartedJobRegistry(queue=rq_queue).remove_executions(job)
    rq_queue.enqueue_job(job, at_front=True)
    log.warning("job process %s died running %s: put back on the queue", worker_name, job_id)
    return job_id


class Supervisor:
    """``--processes N``: N job processes, the ticker, and a look at the processes every
    ``CHECK_CHILDREN`` seconds (one that died is replaced; its job goes back on the queue)."""

    def __init__(self, config, stores, processes: int, fork: bool = False, metrics_port: int | None = None):
        self.config, self.stores = config, stores
        self.processes, self.fork = processes, fork
        self.metrics_port = metrics_port  # job process k serves its metrics on metrics_port + k
        self.ctx = multiprocessing.get_context("fork")  # the settings and imports carry over
        self.children: dict[str, multiprocessing.Process] = {}
        self.generation = 0
        self._stop = threading.Event()

    def _spawn(self, slot: int) -> None:
        self.generation += 1
        name = f"escoba-{os.getpid()}-{slot}-{self.generation}"
        port = None if self.metrics_port is None else self.metrics_port + slot
        proc = self.ctx.Process(target=_run_jobs, args=(self.config, self.fork, name, False, port),
                                name=name, daemon=False)
        proc.start()
        self.children[name] = proc

    def check(self) -> list[str]:
        """Replace the processes that died; the ids of the jobs put back."""
        back = []
        for name, proc in list(self.children.items()):
            if proc.is_alive():
                continue
            del self.children[name]
            slot = int(name.split("-")[2])
            job_id = requeue_abandoned(self.stores.queue, name)
            if job_id:
                back.append(job_id)
            if not self._stop.is_set():
                log.warning("job process %s exited (%s): starting another", name, proc.exitcode)
                self._spawn(slot)
        return back

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self._stop.set())
        for slot in range(self.processes):
            self._spawn(slot)
        tick = ticker.Ticker(self.stores.tables, self.stores.queue,
                             also=_periodic(self.stores.queue)).start()
        try:
            while not self._stop.wait(CHECK_CHILDREN):
                self.check()
        finally:
            tick.stop()
            for proc in self.children.values():
                if proc.is_alive():
                    os.kill(proc.pid, signal.SIGTERM)  # RQ's warm shutdown: the job in hand ends
            for proc in self.children.values():
                proc.join(30)
        return 0


def run_worker(config, *, burst: bool = False, processes: int = 1, fork: bool = False,
               stores=None, metrics_port: int | None = None) -> int:
    """``escoba worker``: jobs in process (``fork``: a fork per job), a ticker, ``processes``
    job processes under one supervisor; each job process's metrics on ``metrics_port`` (+ its slot)."""
    from . import metrics
    from .backends import connect

    stores = stores or connect(config)
    jobs.configure(config, tables=stores.tables)
    summary = reconcile(stores.tables, stores.queue, config)
    log.info("worker start: reconciled %d tables", summary["tables"])
    if burst:
        run_burst(stores.tables, stores.queue, time.time())
        return 0
    if processes > 1:
        return Supervisor(config, stores, processes, fork, metrics_port).run()
    metrics.serve(metrics_port)
    tick = ticker.Ticker(stores.tables, stores.queue, also=_periodic(stores.queue)).start()
    try:
        worker = _worker_class(fork)(analysis.queues_for(stores.queue), connection=stores.queue,
                                     maintenance_interval=MAINTENANCE_EVERY)
        worker.work(logging_level="INFO")
    finally:
        tick.stop()
    return 0


__all__ = [
    "RECONCILE_BATCH", "RECONCILE_EVERY", "Supervisor", "ThreadWorker", "maybe_schedule_reconcile",
    "reconcile", "reconcile_job", "reconcile_table", "requeue_abandoned", "run_burst", "run_worker",
    "start_background_worker",
]
