"""Running the jobs: ``escoba worker``, the reconciler, and an in-process runner for ``escoba dev``.

``escoba worker`` is an RQ ``Worker`` on the ``escoba`` queue with RQ's own
scheduler (``with_scheduler=True``: a scheduler process moves due jobs from
the scheduled registry to the queue, about once a second). On start it runs a
reconcile pass and schedules the periodic reconciler.

The reconciler rebuilds every table's timers from its log
(``scheduling.timers_from_log``) and reschedules any that is missing, failed or
not the one the log calls for. So a Redis that lost its scheduled jobs, or a
worker that died mid-job, loses no timeout: the next pass puts it back, and a
timer already overdue runs at once. It runs as the job
``escoba_reconcile_<slot>`` every ``RECONCILE_EVERY`` seconds (each run
schedules the next slot; the slot number makes the id the same for every
worker, so several workers never double it), at worker start, and by
``escoba reconcile``.

``start_background_worker(redis, config)`` (for ``escoba dev``): one thread
that, in a loop, moves due jobs from the scheduled registry to the queue
(``enqueue_due``, our own small mover: RQ's scheduler runs in a forked
process, which cannot share an in-process fakeredis) and then runs a
``SimpleWorker`` in burst mode over the queue. Returns ``stop()``.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

from rq import SimpleWorker, Worker
from rq.job import Job
from rq.registry import ScheduledJobRegistry
from rq.timeouts import TimerDeathPenalty

from . import jobs, scheduling

log = logging.getLogger("escoba.workers")

RECONCILE_EVERY = 600  # seconds
POLL = 0.1  # the in-process runner's loop
MAINTENANCE_EVERY = 60  # seconds


# --- the reconciler --------------------------------------------------------------

def reconcile(redis, config, table_ids=None, clock=time.time) -> dict:
    """One pass: every table's due timers rebuilt from its log. A summary dict."""
    from events.service import TableService

    svc = TableService(redis, cache_size=0)
    try:  # jobs of a worker that died mid-job: RQ marks them failed, so they are rescheduled
        scheduling.queue_for(redis).started_job_registry.cleanup()
    except Exception:
        log.exception("reconcile: cleaning RQ's started registry")
    ids = svc.table_ids() if table_ids is None else list(table_ids)
    summary = {"tables": 0, "scheduled": [], "removed": [], "errors": []}
    for table_id in ids:
        try:
            if svc.compacted(table_id):  # read-only for good: no timers, and no hot key again
                continue
            state = svc.load(table_id)
            wanted = scheduling.timers_from_log(redis, table_id, state, config)
            result = scheduling.apply_timers(redis, table_id, state.version, wanted,
                                             now=clock(), verify=True)
        except Exception as exc:  # one broken table must not stop the pass
            log.exception("reconcile: table %s", table_id)
            summary["errors"].append(f"{table_id}: {type(exc).__name__}: {exc}")
            continue
        summary["tables"] += 1
        summary["scheduled"] += result["scheduled"]
        summary["removed"] += result["removed"]
    if summary["scheduled"]:
        log.info("reconcile: %d tables, rescheduled %s", summary["tables"], summary["scheduled"])
    return summary


def reconcile_job(every: float = RECONCILE_EVERY) -> dict:
    """The periodic reconciler (an RQ job): one pass, then the next pass is scheduled."""
    redis = jobs._connection()
    try:
        return reconcile(redis, jobs.get_config())
    finally:
        schedule_reconcile(redis, every)


def schedule_reconcile(redis, every: float = RECONCILE_EVERY, now: float | None = None) -> str:
    """Schedule the next periodic reconcile (idempotent: one id per time slot)."""
    now = time.time() if now is None else now
    slot = int(now // every) + 1
    job_id = f"escoba_reconcile_{slot}"
    if redis.exists(Job.key_for(job_id)):
        return job_id
    scheduling.queue_for(redis).enqueue_at(
        datetime.fromtimestamp(slot * every, tz=UTC), "workers.runner.reconcile_job", every,
        job_id=job_id, result_ttl=0, failure_ttl=24 * 3600, job_timeout=3600,
    )
    return job_id


# --- moving due jobs ourselves -------------------------------------------------

def enqueue_due(redis, now: float | None = None) -> list[str]:
    """Move jobs due at ``now`` from the scheduled registry to the queue (what RQ's scheduler
    does, with a clock of our choosing). Their ids."""
    queue = scheduling.queue_for(redis)
    registry = ScheduledJobRegistry(queue=queue)
    now = time.time() if now is None else now
    moved = []
    for job_id in registry.get_jobs_to_schedule(int(now)):
        job = Job.fetch_many([job_id], connection=redis)[0]
        with redis.pipeline() as pipe:
            pipe.multi()
            registry.remove(job_id, pipeline=pipe)
            if job is not None:
                queue.enqueue_job(job, pipeline=pipe, at_front=job.should_enqueue_at_front())
            pipe.execute()
        if job is not None:
            moved.append(job_id)
    return moved


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


def run_burst(redis, now: float | None = None, max_rounds: int = 100_000) -> int:
    """Run due and queued jobs until nothing is left to do at ``now``; how many ran.

    (Tests and the in-process runner.) Jobs enqueued by jobs run in the same call.
    """
    queue = scheduling.queue_for(redis)
    worker = ThreadWorker([queue], connection=redis)
    for _ in range(max_rounds):
        enqueue_due(redis, now)
        if not queue.count:
            break
        worker.work(burst=True, logging_level="WARNING")
    return worker.jobs_run


def start_background_worker(redis, config, *, clock=time.time, poll: float = POLL):
    """A worker thread with its own scheduling loop on a shared connection; returns ``stop()``."""
    jobs.configure(config)
    stop = threading.Event()
    queue = scheduling.queue_for(redis)

    def loop():
        worker = ThreadWorker([queue], connection=redis)
        next_reconcile = 0.0
        while not stop.is_set():
            try:
                if clock() >= next_reconcile:
                    reconcile(redis, config)
                    next_reconcile = clock() + RECONCILE_EVERY
                enqueue_due(redis, clock())
                if queue.count:
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

def run_worker(config, *, burst: bool = False, simple: bool = False, redis=None) -> int:
    """``escoba worker``: an RQ worker with its scheduler on ``config.redis_url``."""
    if redis is None:
        from redis import Redis

        redis = Redis.from_url(config.redis_url)
    jobs.configure(config)
    queue = scheduling.queue_for(redis)
    summary = reconcile(redis, config)
    log.info("worker start: reconciled %d tables", summary["tables"])
    schedule_reconcile(redis)
    cls = SimpleWorker if simple else Worker
    # Maintenance every minute (RQ's default: ten): it cleans up after dead workers and takes
    # over the scheduler lock a crashed worker left behind (it lapses after about a minute).
    worker = cls([queue], connection=redis, maintenance_interval=MAINTENANCE_EVERY)
    worker.work(with_scheduler=True, burst=burst, logging_level="INFO")
    return 0


__all__ = [
    "RECONCILE_EVERY", "ThreadWorker", "enqueue_due", "reconcile", "reconcile_job", "run_burst",
    "run_worker", "schedule_reconcile", "start_background_worker",
]
