"""The ticker: hands RQ only what is due now.

Every worker runs one (a thread, or the supervisor of ``--processes N``). Each
tick, for each bucket of the due index (``workers.index``) of each queue shard its
worker serves (``escoba worker --shard N``: shard N's only), it claims the
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

import contextlib
import logging
import threading
import time

from rq import Retry
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry
from rq.utils import now

from events.connection import is_cluster, store_down
from events.text import as_text

from . import index, jobloop, liveness, pairing, queues, scheduling

log = logging.getLogger("escoba.workers")

TICK = 0.2  # seconds between ticks: how late a timer may fire at most (plus a job's own wait)
CLAIM_BATCH = 100  # tables claimed per bucket per tick
JOB_TIMEOUT = 120
FAILURE_TTL = 7 * 24 * 3600
RETRY_SOON = 1.0  # seconds before a table whose hand-off failed (its shard away) is looked at again


def _retry(entry: dict) -> Retry:
    """Notices: their own backoff. Timers: retried with a backoff while a store is away (a bug
    only ``jobloop.BUG_RETRIES`` times); each is idempotent, so a second run appends nothing."""
    intervals = entry.get("retry")
    if intervals:
        return Retry(max=len(intervals), interval=list(intervals))
    return Retry(max=jobloop.STORE_RETRIES, interval=list(jobloop.STORE_BACKOFF))


def enqueue_once(queue_redis, entry: dict) -> bool:
    """Enqueue the timer ``entry`` under its id unless a live job holds that id already.

    RQ's own job hash (``Job.to_dict``), written as RQ's ``enqueue`` would minus what nothing
    reads: no description (RQ renders the call as text for its dashboards), none of RQ's
    empty fields, and no transaction (the status check before it is outside any
    transaction anyway; two tickers handing one id at once leave a job that runs twice,
    appending once). Three commands, four when a finished or failed copy is replaced. A copy whose
    hash says queued but that waits in no list (``liveness.stranded``) is replaced too.
    """
    job_id = entry["id"]
    queue = queues.queue_for(queue_redis)
    status = queue_redis.hget(Job.key_for(job_id), "status")
    if status is not None and as_text(status) in scheduling.LIVE:
        if as_text(status) != "queued" or not liveness.stranded(queue_redis, [(job_id, queue.name)]):
            return False
        log.warning("job %s was queued and waits nowhere (taken and never started): handed again", job_id)
    job = queue.create_job(entry["func"], args=tuple(entry.get("args", ())), kwargs=entry.get("kwargs") or {},
                           job_id=job_id, timeout=JOB_TIMEOUT, result_ttl=0, failure_ttl=FAILURE_TTL,
                           retry=_retry(entry), status=JobStatus.QUEUED)
    job.description, job.origin, job.enqueued_at = None, queue.name, now()
    fields = {k: v for k, v in job.to_dict().items() if v != ""}
    with queue_redis.pipeline(transaction=False) as pipe:
        if status is not None:
            pipe.delete(job.key)  # a finished or failed copy of the same id
        _known_queue(queue_redis, queue, pipe)
        pipe.hset(job.key, mapping=fields)
        pipe.rpush(queue.key, job_id)
        pipe.execute()
    return True


_queues_known: set = set()


def _known_queue(queue_redis, queue, pipe) -> None:
    """RQ lists its queues in ``rq:queues`` (``rq info``, Queue.all): once per client and process."""
    mark = (id(queue_redis), queue.key)
    if mark not in _queues_known:
        _queues_known.add(mark)
        pipe.sadd(queue.redis_queues_keys, queue.key)


def hand_table(tables, queue_redis, table_id: str, now: float) -> tuple[list[str], float | None]:
    """Enqueue the table's timers due by ``now``; (the ids enqueued, the next due time left)."""
    stored = scheduling.read_timers(tables, table_id)
    pending = scheduling.unsent(stored)
    due = {k: e for k, e in sorted(pending.items(), key=lambda item: float(item[1]["due"]))
           if float(e["due"]) <= now}  # the earliest first: RQ runs them in that order
    try:
        handed = [e["id"] for e in due.values() if enqueue_once(queue_redis, e)]
    except Exception as exc:  # the queue shard, not the table's store: the caller skips the shard
        if store_down(exc):
            raise QueueAway(str(exc)) from exc
        raise
    if due:
        _note_sent(tables, table_id, {scheduling.SENT + k: e["id"] for k, e in due.items()})
    rest = [float(e["due"]) for k, e in pending.items() if k not in due]
    return handed, (min(rest) if rest else None)


def _note_sent(tables, table_id: str, marks: dict[str, str]) -> None:
    """``sent:<kind>`` = the id handed. No compare-and-set needed: a mark counts only while it
    names the entry's id, so a timer rewritten meanwhile stays unsent. (A seam for tests.)"""
    tables.hset(scheduling.timers_key(table_id), mapping=marks)


def tick(tables, queue, now: float | None = None, *, limit: int = CLAIM_BATCH,
         lease: float = index.LEASE, own=None) -> list[str]:
    """One tick over every bucket of the shards this ticker owns; the ids of the jobs handed to
    RQ. ``queue``: the queue Redis, or the queue shards (a sequence); ``own``: the shards whose
    due timers and scheduled retries this ticker hands (default: all). A table found in an owned
    shard's sets that belongs to another shard (written under another shard count) is moved to
    its own shard's sets, never handed from here."""
    now = time.time() if now is None else now
    shards = queues.shards(queue)
    count = len(shards)
    owned = tuple(range(count)) if own is None else tuple(own)
    failed: dict[int, BaseException] = {}
    store_away: BaseException | None = None  # a master of the tables' store (its buckets, its tables)
    handed: list[str] = []
    for shard in owned:
        for bucket in range(index.BUCKETS):
            try:
                lease_end, claimed = index.claim(tables, bucket, now, limit, lease, shard=shard)
            except Exception as exc:  # the bucket's master is away: the other buckets are served
                if not store_down(exc):
                    raise
                if not is_cluster(tables):  # one Redis: every other bucket is on it too
                    raise StoreAway(handed) from exc
                store_away = store_away or exc
                continue
            for table_id in claimed:
                try:
                    if queues.shard_of(table_id, count) != shard:
                        index.hand_over(tables, table_id, lease_end, shard, count, now)
                        continue
                    if shard in failed:
                        raise failed[shard]
                    ids, next_due = hand_table(tables, shards[shard], table_id, now)
                    index.release(tables, table_id, lease_end, next_due, count)
                except Exception as exc:  # looked at again in a moment (else its claim lapses)
                    if isinstance(exc, QueueAway):
                        failed.setdefault(shard, exc.__cause__ or exc)
                    elif store_down(exc):  # the table's master (its timers): the others go on
                        store_away = store_away or exc
                    else:
                        log.exception("ticker: table %s", table_id)
                    with contextlib.suppress(Exception):
                        index.release(tables, table_id, lease_end, now + RETRY_SOON, count)
                    continue
                handed += ids
    try:  # the seek pools due now: a wave each (workers/pairing.py)
        handed += pairing.tick_pools(tables, shards, now, owned)
    except Exception as exc:
        if not store_down(exc):
            raise
        store_away = store_away or exc
    for shard in owned:
        if shard in failed:
            continue
        try:
            handed += enqueue_due(shards[shard], now)
        except Exception as exc:
            failed.setdefault(shard, exc)
    if failed:  # the ticker's caller logs it (throttled); the other shards had their tick
        shard, error = next(iter(failed.items()))
        raise ShardAway(shard, handed) from error
    if store_away is not None:
        raise StoreAway(handed) from store_away
    return handed


class QueueAway(Exception):
    """A queue shard refused a hand-off (``hand_table``): its tables wait, the others go on."""


class Away(Exception):
    """A store failed during a tick; what could be served was (``handed``: what went out)."""

    def __init__(self, message: str, handed: list[str]):
        super().__init__(message)
        self.handed = handed


class StoreAway(Away):
    """A master of the tables' store failed during a tick: the buckets and tables on the others
    were served, its own are looked at again in a moment."""

    def __init__(self, handed: list[str]):
        super().__init__("the tables' store is away (a master)", handed)


class ShardAway(Away):
    """A queue shard failed during a tick (the others were served); ``handed``: what went out."""

    def __init__(self, shard: int, handed: list[str]):
        super().__init__(f"queue shard {shard} is away", handed)
        self.shard = shard


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
    """A thread that ticks every ``every`` seconds until ``stop()``; then, on each shard it
    owns, sweeps for dead workers' jobs (at most once a second over all tickers) and runs
    ``also(queue_redis)`` (the periodic reconcile's trigger). A store that is away is logged
    once, then every 10 s, and never ends the ticker. The first run that works after one that
    failed calls ``recovered(queue_redis)`` per shard (a reconcile pass at once: a job the outage
    stranded would otherwise wait for the next minute's)."""

    def __init__(self, tables, queue, *, every: float = TICK, clock=time.time, also=None, own=None,
                 recovered=None):
        self.tables, self.queues = tables, queues.shards(queue)
        self.queue_redis = self.queues[0]
        self.own = tuple(range(len(self.queues))) if own is None else tuple(own)
        self.every, self.clock, self.also, self.recovered = every, clock, also, recovered
        self._stop = threading.Event()
        self._trouble = liveness.Throttled("the ticker")
        self._thread = threading.Thread(target=self._run, name="escoba-ticker", daemon=True)

    def start(self) -> Ticker:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self.every)

    def run_once(self) -> list[str]:
        handed: list[str] = []
        ok, was_failing = True, self._trouble.since is not None
        try:
            handed = tick(self.tables, self.queues, self.clock(), own=self.own)
        except Away as exc:
            handed, ok = exc.handed, False
            self._trouble.failed(exc.__cause__ or exc)
        except Exception as exc:  # a store that is down for a moment must not end the ticker
            ok = False
            if store_down(exc):
                self._trouble.failed(exc)
            else:
                log.exception("ticker")
        for shard in self.own:
            try:
                liveness.sweep(self.queues[shard], self.clock())
                if self.also is not None:
                    self.also(self.queues[shard])
            except Exception as exc:
                ok = False
                self._trouble.failed(exc)
        if ok:
            self._trouble.ok()
            if was_failing and self.recovered is not None:
                for shard in self.own:
                    try:
                        self.recovered(self.queues[shard])
                    except Exception:  # the store away again: the minute's pass will do
                        log.warning("could not ask for a reconcile pass after the outage", exc_info=True)
        return handed

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)


__all__ = ["CLAIM_BATCH", "RETRY_SOON", "TICK", "Away", "QueueAway", "ShardAway", "StoreAway", "Ticker",
           "enqueue_due", "enqueue_once", "hand_table", "tick"]
