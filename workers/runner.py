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
from multiprocessing.process import BaseProcess
from typing import Any

from events.text import as_text

from . import analysis, context, index, jobloop, liveness, metrics, queues, scheduling, ticker
from .jobloop import ThreadWorker, requeue_abandoned

log = logging.getLogger("escoba.workers")

RECONCILE_EVERY = 60  # seconds between incremental passes
RECONCILE_BATCH = 500  # live tables per pass (plus the repair sets)
CURSOR_KEY = "timers:{reconcile}:cursor"  # "<bucket>:<sscan cursor>": one small key, one writer per slot
POLL = 0.1  # the in-process runner's loop
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
    bucket, cursor = (int(x) for x in as_text(raw).split(":")) if raw else (0, 0)
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
    for shard in queues.shards(queue):
        try:  # jobs of a worker that died mid-job: RQ retries them or marks them failed
            for rq_queue in queues.worker_queues(shard):
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
    summary: dict[str, Any] = {"tables": 0, "scheduled": [], "removed": [], "errors": []}
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
    """The periodic reconciler (an RQ job, one per shard and minute): one incremental pass."""
    return reconcile(context.tables(), context.queues(), context.get_config(), batch=batch)


def maybe_schedule_reconcile(queue, now: float | None = None, every: float = RECONCILE_EVERY) -> str | None:
    """Enqueue this time slot's reconcile job, once over every worker (the first ticker to set the
    slot's key on the queue Redis). Its id, or None when another ticker took the slot."""
    return _reconcile_once(queue, "", now, every)


def _reconcile_once(queue, kind: str, now: float | None, every: float) -> str | None:
    """The reconcile job of ``kind`` ('' = the periodic one) for the slot of ``every`` s holding ``now``,
    enqueued by the first ticker to set the slot's key; its id, or None."""
    now = time.time() if now is None else now
    slot = int(now // every)
    if not queue.set(f"escoba:reconcile:{kind + ':' if kind else ''}{slot}", "1", nx=True, ex=int(every * 2) + 1):
        return None
    job_id = f"escoba_reconcile_{kind + '_' if kind else ''}{slot}"
    scheduling.queue_for(queue).enqueue("workers.runner.reconcile_job", job_id=job_id,
                                        result_ttl=0, failure_ttl=24 * 3600, job_timeout=3600)
    return job_id


RECOVERY_SLOT = 10  # seconds: one reconcile pass after an outage per slot, over every worker's ticker


def reconcile_now(queue, now: float | None = None) -> str | None:
    """A reconcile pass now (a store came back: ``Ticker``'s ``recovered``), once over every worker
    whose ticker saw the same outage end. Its id, or None when another ticker asked already."""
    return _reconcile_once(queue, "recovery", now, RECOVERY_SLOT)


# --- in-process runners --------------------------------------------------------

def run_burst(tables, queue=None, now: float | None = None, max_rounds: int = 100_000) -> int:
    """Hand out the timers due at ``now`` and run them, and what they schedule, until nothing
    is left to do at ``now``; how many jobs ran. (Tests and ``escoba worker --burst``.)
    ``queue``: the queue Redis or the queue shards; each shard's jobs run on its own worker."""
    shards = queues.shards(tables if queue is None else queue)
    workers = [ThreadWorker(queues.worker_queues(q), connection=q) for q in shards]
    for _ in range(max_rounds):
        handed = ticker.tick(tables, shards, now)
        waiting = [w for w in workers if any(q.count for q in w.queues)]
        if not handed and not waiting:
            break
        for worker in waiting:
            worker.work(burst=True, logging_level="WARNING")
    return sum(w.jobs_run for w in workers)


def start_background_worker(tables, config, *, queue=None, clock=time.time, poll: float = POLL):
    """A worker thread with its own ticker on shared connections (``queue``: the queue Redis,
    by default the same connection as ``tables``, as in ``escoba dev``); returns ``stop()``."""
    shards = queues.shards(tables if queue is None else queue)
    # the jobs stamp their records on the same clock as the ticker reads due times by
    job_clock = None if clock is time.time else clock
    context.configure(config, job_clock, tables=tables, queues=shards)
    stop = threading.Event()

    def loop():
        workers = [ThreadWorker(queues.worker_queues(q), connection=q) for q in shards]
        next_reconcile = 0.0
        trouble = liveness.Throttled("the background worker")
        while not stop.is_set():
            try:
                if clock() >= next_reconcile:
                    reconcile(tables, shards, config, clock=clock)
                    next_reconcile = clock() + RECONCILE_EVERY
                with contextlib.suppress(ticker.Away):  # the other shards' (and masters') jobs still run
                    ticker.tick(tables, shards, clock())
                for worker in workers:
                    if any(q.count for q in worker.queues):
                        # the jobs read their store from the process (workers.context); a second
                        # in-process server (tests) must not leave this one's jobs on its store
                        context.configure(config, job_clock, tables=tables, queues=shards)
                        worker.work(burst=True, logging_level="WARNING")
                trouble.ok()
            except Exception as exc:  # keep the dev server's worker alive
                trouble.failed(exc)
            stop.wait(poll)

    thread = threading.Thread(target=loop, name="escoba-worker", daemon=True)
    thread.start()

    def stop_worker(timeout: float = 5.0) -> None:
        stop.set()
        thread.join(timeout)

    return stop_worker


# --- escoba worker ---------------------------------------------------------------

def _run_jobs(config, fork: bool, name: str | None = None, burst: bool = False, shard: int = 0,
              metrics_port: int | None = None) -> None:
    """One job process: its own connections (never shared across a fork), RQ's work loop on
    one shard's queue Redis, started again whenever a store away ends it; its job metrics on
    ``metrics_port``."""
    from .backends import connect

    metrics.serve(metrics_port)
    stores = connect(config)
    context.configure(config, tables=stores.tables, queues=stores.queues)
    jobloop.run_jobs(stores.queues[shard], fork=fork, name=name, burst=burst)


def _periodic(queue):
    """After each tick, per shard the ticker owns: the reconcile job of this minute."""
    del queue  # kept for old callers: the shard is passed to the returned function

    def also(shard_redis=None):
        if shard_redis is not None:
            maybe_schedule_reconcile(shard_redis)
    return also


class Supervisor:
    """Job processes for the shards it serves (``processes`` per shard), the ticker, and a look
    at the processes every ``CHECK_CHILDREN`` seconds (one that died is replaced; its job goes
    back on its queue)."""

    def __init__(self, config, stores, processes: int, fork: bool = False, shards=None,
                 metrics_port: int | None = None):
        self.config, self.stores = config, stores
        self.processes, self.fork = processes, fork
        self.shards = tuple(range(len(stores.queues))) if shards is None else tuple(shards)
        # job process k (k-th of its shard's slots, shards in order) serves metrics on metrics_port + k
        self.metrics_port = metrics_port
        self.ctx = multiprocessing.get_context("fork")  # the settings and imports carry over
        self.children: dict[str, BaseProcess] = {}
        self.generation = 0
        self._stop = threading.Event()

    def _spawn(self, shard: int, slot: int) -> None:
        self.generation += 1
        name = f"escoba-{os.getpid()}-{slot}-{self.generation}-s{shard}"
        port = None
        if self.metrics_port is not None:
            port = self.metrics_port + self.shards.index(shard) * self.processes + slot
        proc = self.ctx.Process(target=_run_jobs, args=(self.config, self.fork, name, False, shard, port),
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
            slot, shard = int(name.split("-")[2]), int(name.rsplit("-s", 1)[1])
            try:
                job_id = requeue_abandoned(self.stores.queues[shard], name)
            except Exception:  # its queue Redis is away: the sweep puts the job back later
                log.warning("could not look for the job of %s (its queue Redis is away)", name)
                job_id = None
            if job_id:
                back.append(job_id)
            if not self._stop.is_set():
                log.warning("job process %s exited (%s): starting another", name, proc.exitcode)
                self._spawn(shard, slot)
        return back

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self._stop.set())
        for shard in self.shards:
            for slot in range(self.processes):
                self._spawn(shard, slot)
        tick = ticker.Ticker(self.stores.tables, self.stores.queues, also=_periodic(None),
                             own=self.shards, recovered=reconcile_now).start()
        try:
            while not self._stop.wait(CHECK_CHILDREN):
                self.check()
        finally:
            tick.stop()
            for proc in self.children.values():
                if proc.is_alive():
                    proc.terminate()  # SIGTERM, RQ's warm shutdown: the job in hand ends
            for proc in self.children.values():
                proc.join(30)
        return 0


def _reconcile_at_start(stores, config) -> None:
    """A pass at start, once its stores answer (a worker started beside a store that is still
    coming up waits for it rather than exiting)."""
    trouble = liveness.Throttled("the reconcile pass at start")
    while True:
        try:
            summary = reconcile(stores.tables, stores.queues, config)
            trouble.ok()
            log.info("worker start: reconciled %d tables", summary["tables"])
            return
        except Exception as exc:
            trouble.failed(exc)
            time.sleep(1.0)


def run_worker(config, *, burst: bool = False, processes: int = 1, fork: bool = False,
               stores=None, shard: int | None = None, metrics_port: int | None = None) -> int:
    """``escoba worker``: jobs in process (``fork``: a fork per job), a ticker; ``processes`` job
    processes under one supervisor; ``shard``: only that queue shard's jobs (default: every
    shard, a job process each when there are several); each job process's metrics on
    ``metrics_port`` (+ its place among the job processes)."""
    from .backends import connect

    stores = stores or connect(config)
    count = len(stores.queues)
    if shard is not None and not 0 <= shard < count:
        raise ValueError(f"--shard {shard}: ESCOBA_QUEUE_URL names {count} queue shard(s), 0 to {count - 1}")
    own = tuple(range(count)) if shard is None else (shard,)
    context.configure(config, tables=stores.tables, queues=stores.queues)
    _reconcile_at_start(stores, config)
    if burst:
        run_burst(stores.tables, stores.queues, time.time())
        return 0
    if processes > 1 or len(own) > 1:
        return Supervisor(config, stores, processes, fork, shards=own, metrics_port=metrics_port).run()
    metrics.serve(metrics_port)
    tick = ticker.Ticker(stores.tables, stores.queues, also=_periodic(None), own=own,
                         recovered=reconcile_now).start()
    try:
        jobloop.run_jobs(stores.queues[own[0]], fork=fork)
    finally:
        tick.stop()
    return 0


__all__ = [
    "RECONCILE_BATCH", "RECONCILE_EVERY", "Supervisor", "ThreadWorker", "maybe_schedule_reconcile",
    "reconcile", "reconcile_job", "reconcile_table", "requeue_abandoned", "run_burst", "run_worker",
    "start_background_worker",
]
