"""The ticker: hands RQ only what is due now.

Every worker runs one (a thread, or the supervisor of ``--processes N``). Each
tick, for each bucket of the due index (``workers.index``), it claims the
tables due by now (a lease of ``index.LEASE`` seconds), reads each one's
timers hash, enqueues on the queue Redis every timer that is due and not yet
handed (under its deterministic job id), notes ``sent:<kind>`` in the hash,
and puts the table's next due time back in the index. It also moves RQ's own
scheduled jobs (the notices' retries) to the queue (``enqueue_due``).

Crash windows, each repaired without a transaction across the two stores:

* claimed, nothing enqueued yet: the lease runs out, the next tick of any
  worker claims the table again.
* enqueued, ``sent:<kind>`` not noted yet: the claim is found again; the job
  is found live under the same id and not enqueued twice (or, if it already
  ran, it runs again and, being idempotent, appends nothing).
* noted, the next due time not put back: the lease runs out; the table is
  claimed again and its next due time is written then.
"""

from __future__ import annotations

import logging
import threading
import time

from rq import Retry
from rq.job import Job
from rq.registry import ScheduledJobRegistry

from . import index, scheduling

log = logging.getLogger("escoba.workers")

TICK = 0.2  # seconds between ticks: how late a timer may fire at most (plus a job's own wait)
CLAIM_BATCH = 100  # tables claimed per bucket per tick
JOB_TIMEOUT = 120
FAILURE_TTL = 7 * 24 * 3600
# A timer job is run again this often when it raises or its process dies mid-job (RQ's cleanup
# of abandoned jobs retries them): it is idempotent, so a second run appends nothing.
TIMER_RETRIES = 2


def _retry(entry: dict) -> Retry:
    intervals = entry.get("retry")
    if intervals:
        return Retry(max=len(intervals), interval=list(intervals))
    return Retry(max=TIMER_RETRIES)


def enqueue_once(queue_redis, entry: dict) -> bool:
    """Enqueue the timer ``entry`` under its id unless a live job holds that id already."""
    job_id = entry["id"]
    status = queue_redis.hget(Job.key_for(job_id), "status")
    if status is not None and scheduling._text(status) in scheduling.LIVE:
        return False
    queue = scheduling.queue_for(queue_redis)
    with queue_redis.pipeline() as pipe:
        pipe.multi()
        pipe.delete(Job.key_for(job_id))  # a finished or failed copy of the same id
        queue.enqueue(entry["func"], *entry.get("args", ()), **(entry.get("kwargs") or {}),
                      job_id=job_id, job_timeout=JOB_TIMEOUT, result_ttl=0,
                      failure_ttl=FAILURE_TTL, retry=_retry(entry), pipeline=pipe)
        pipe.execute()
    return True


def hand_table(tables, queue_redis, table_id: str, now: float) -> tuple[list[str], float | None]:
    """Enqueue the table's timers due by ``now``; (the ids enqueued, the next due time left)."""
    stored = scheduling.read_timers(tables, table_id)
    pending = scheduling.unsent(stored)
    due = {k: e for k, e in sorted(pending.items(), key=lambda item: float(item[1]["due"]))
           if float(e["due"]) <= now}  # the earliest first: RQ runs them in that order
    handed = [e["id"] for e in due.values() if enqueue_once(queue_redis, e)]
    if due:
        _note_sent(tables, table_id, {scheduling.SENT + k: e["id"] for k, e in due.items()})
    rest = [float(e["due"]) for k, e in pending.items() if k not in due]
    return handed, (min(rest) if rest else None)


def _note_sent(tables, table_id: str, marks: dict[str, str]) -> None:
    """``sent:<kind>`` = the id handed. No compare-and-set needed: a mark counts only while it
    names the entry's id, so a timer rewritten meanwhile stays unsent. (A seam for tests.)"""
    tables.hset(scheduling.timers_key(table_id), mapping=marks)


def tick(tables, queue_redis, now: float | None = None, *, limit: int = CLAIM_BATCH,
         lease: float = index.LEASE) -> list[str]:
    """One tick over every bucket; the ids of the jobs handed to RQ."""
    now = time.time() if now is None else now
    handed: list[str] = []
    for bucket in range(index.BUCKETS):
        lease_end, claimed = index.claim(tables, bucket, now, limit, lease)
        for table_id in claimed:
            try:
                ids, next_due = hand_table(tables, queue_redis, table_id, now)
                index.release(tables, table_id, lease_end, next_due)
            except Exception:  # its claim lapses and the table is found again
                log.exception("ticker: table %s", table_id)
                continue
            handed += ids
    handed += enqueue_due(queue_redis, now)
    return handed


def enqueue_due(queue_redis, now: float | None = None) -> list[str]:
    """Move RQ's own scheduled jobs (the notices' retries) due at ``now`` to the queue. Several
    tickers may race: only the one whose ZREM removed the entry enqueues it."""
    queue = scheduling.queue_for(queue_redis)
    registry = ScheduledJobRegistry(queue=queue)
    now = time.time() if now is None else now
    moved = []
    for job_id in registry.get_jobs_to_schedule(int(now)):
        if not queue_redis.zrem(registry.key, job_id):
            continue  # another ticker took it
        job = Job.fetch_many([job_id], connection=queue_redis)[0]
        if job is not None:
            queue.enqueue_job(job, at_front=job.should_enqueue_at_front())
            moved.append(job_id)
    return moved


class Ticker:
    """A thread that ticks every ``every`` seconds until ``stop()``; ``also`` runs after each tick
    (the periodic reconcile's trigger)."""

    def __init__(self, tables, queue_redis, *, every: float = TICK, clock=time.time, also=None):
        self.tables, self.queue_redis = tables, queue_redis
        self.every, self.clock, self.also = every, clock, also
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="escoba-ticker", daemon=True)

    def start(self) -> Ticker:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self.every)

    def run_once(self) -> list[str]:
        try:
            handed = tick(self.tables, self.queue_redis, self.clock())
            if self.also is not None:
                self.also()
            return handed
        except Exception:  # a store that is down for a moment must not end the ticker
            log.exception("ticker")
            return []

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)


__all__ = ["CLAIM_BATCH", "TICK", "Ticker", "enqueue_due", "enqueue_once", "hand_table", "tick"]
