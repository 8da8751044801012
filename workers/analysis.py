"""The game analysis job, on its own RQ queue (``analysis``), in slices that never hold a worker long.

``request(tables, queue_redis, table_id, version)`` (``POST /tables/{id}/analysis``,
``escoba analyze``) begins the analysis of the log at ``version`` in the table's
hash (``events.analysis``) and enqueues ``run(table_id, version)`` under the id
``<table>_analysis_<version>``: asking again finds it there and starts nothing.

Why a queue of its own, and slices: every worker listens on the ``escoba``
queue first and on ``analysis`` after it (``queues_for``; RQ takes from the
first queue that has a job), so a bot turn or a timer queued behind an analysis
is taken first. A worker busy with an analysis finishes its slice first: a job
judges plays for at most ``SLICE_SECONDS`` of CPU, saves each row as it goes
(that is the progress ``GET`` reads), then enqueues its continuation at the back
of the ``analysis`` queue (``<table>_analysis_<version>_<rows done>``) and returns.
So a bot turn waits at most one slice behind an analysis, never a whole game's.

A worker that dies mid-slice loses at most the row in hand: the continuation
judges only the rows that are missing. Its job is put back on the queue by the
supervisor (``runner.requeue_abandoned``), or by the reconciler: ``resume`` looks
at every table in the ``analysis:{pending}`` set (added before the job is
enqueued, removed once the result is stored) and re-enqueues the pending
analysis whose job is no longer waiting or running. A second POST does the same.
"""

from __future__ import annotations

import logging
import math
import time

from rq import Queue

from engine import analysis as judging
from events import analysis as stored
from events.records import from_record, loads

from . import context, queues, scheduling

log = logging.getLogger("escoba.workers")

QUEUE_NAME = queues.ANALYSIS_QUEUE
SLICE_SECONDS = 1.0  # CPU a job judges for before handing on to its continuation
JOB_TIMEOUT = 120  # a slice is a second of CPU; past this RQ counts it abandoned and it is resumed
FAILURE_TTL = 7 * 24 * 3600
PENDING_KEY = "analysis:{pending}"  # table ids with an analysis under way (its own slot)
FUNC = "workers.analysis.run"
CLAIM_PREFIX = "escoba:analysis:enqueuing:"  # on the queue Redis, beside the job it guards
CLAIM_SECONDS = 30  # a claimer that died mid-enqueue blocks its id no longer than this
BUDGET = judging.PLAYS_BUDGET  # simulated plays per judged play (engine/analysis.py)


def queue_for(queue_redis) -> Queue:
    return Queue(QUEUE_NAME, connection=queue_redis)


def queues_for(queue_redis) -> list[Queue]:
    """The queues a worker listens on, in the order it takes jobs: timers and bots first."""
    return queues.worker_queues(queue_redis)


def job_id(table_id: str, version: int, done: int = 0) -> str:
    return f"{table_id}_analysis_{version}" + (f"_{done}" if done else "")


def _enqueue(queue_redis, table_id: str, version: int, jid: str) -> bool:
    """Enqueue a slice under ``jid`` unless a live job holds that id; whether it was enqueued.

    Two callers at once (a POST and the reconciler's pass, both finding the analysis pending
    and its job not yet queued) would otherwise both find the id free and both push it, and
    two workers would run the same slice side by side. A claim on the id, held from the check
    to the push, lets one of them through; the other gives way (the first's job is live, or,
    if the first died holding the claim, the next reconcile pass after ``CLAIM_SECONDS``
    enqueues it)."""
    claim = f"{CLAIM_PREFIX}{jid}"
    if not queue_redis.set(claim, b"1", nx=True, ex=CLAIM_SECONDS):
        return False
    try:
        if scheduling.job_alive(queue_redis, jid):
            return False
        from rq.job import Job

        queue_redis.delete(Job.key_for(jid))  # a finished or failed copy of the same id
        queue_for(queue_redis).enqueue(FUNC, table_id, version, job_id=jid, job_timeout=JOB_TIMEOUT,
                                       result_ttl=0, failure_ttl=FAILURE_TTL)
        return True
    finally:
        queue_redis.delete(claim)


def request(tables, queue_redis, table_id: str, version: int) -> stored.Stored:
    """Ask for the analysis of the log at ``version``: begun and enqueued once, or left as it is
    (one for this version already, done or on its way). A pending one whose job is gone (a crash
    between the two writes, a dead worker) is enqueued again. What is stored now."""
    tables.sadd(PENDING_KEY, table_id)  # before the analysis exists: the reconciler can always find it
    stored.ask(tables, table_id, version)
    found = stored.load(tables, table_id)
    if found.status == stored.PENDING:
        _ensure(tables, queue_redis, table_id, found)
    else:
        tables.srem(PENDING_KEY, table_id)
    return found


def _ensure(tables, queue_redis, table_id: str, found: stored.Stored) -> str | None:
    """Enqueue the pending analysis ``found`` unless its job is waiting or running; the id enqueued."""
    current = found.job or job_id(table_id, found.version)
    if scheduling.job_alive(queue_redis, current):
        return None
    jid = job_id(table_id, found.version, len(found.rows))
    if jid == current or not scheduling.job_alive(queue_redis, jid):
        stored.save(tables, table_id, found.version, job=jid)
        if _enqueue(queue_redis, table_id, found.version, jid):
            return jid
    return None


def resume(tables, queue_redis) -> list[str]:
    """The reconciler's pass: every pending analysis has a live job again, on its table's queue
    shard (``queue_redis``: one queue Redis, or the shards); the ids enqueued."""
    shards = queues.shards(queue_redis)
    again = []
    for raw in tables.smembers(PENDING_KEY):
        table_id = raw.decode() if isinstance(raw, bytes) else raw
        found = stored.load(tables, table_id)
        if found is None or found.status != stored.PENDING:
            tables.srem(PENDING_KEY, table_id)
            continue
        jid = _ensure(tables, queues.table_queue(shards, table_id), table_id, found)
        if jid:
            log.warning("table %s: analysis of version %s had no job: resumed as %s",
                        table_id, found.version, jid)
            again.append(jid)
    return again


def run(table_id: str, version: int) -> str:
    """The job: judge the missing plays of the analysis of ``version`` for one slice, then hand on."""
    redis = context.tables()
    outcome, done = work(redis, context.service(redis), table_id, version, SLICE_SECONDS)
    if outcome == "continued":
        return _hand_on(redis, table_id, version, done)
    return f"{outcome}:{done}"


def work(redis, svc, table_id: str, version: int, seconds: float = math.inf, *,
         clock=time.process_time) -> tuple[str, int]:
    """Judge the plays the pending analysis of ``version`` misses, for ``seconds`` of CPU at most
    (each row saved as it is judged); store the result once every play is judged.
    (``done``, ``continued`` (time is up) or ``stale`` (no such analysis pending); rows judged."""
    found = stored.load(redis, table_id)
    if found is None or found.version != version or found.status != stored.PENDING:
        return "stale", 0
    events = [from_record(loads(raw, version=v)) for v, raw in svc.entries(table_id, until=version)]
    plays = judging.decisions(events)
    rows = dict(found.rows)
    if found.total is None:
        stored.save(redis, table_id, version, total=len(plays))
    end = clock() + seconds
    for decision in plays:
        if decision.version in rows:
            continue
        if clock() >= end:
            return "continued", len(rows)
        row = judging.judge(decision, table_id, budget=BUDGET).row()
        if not stored.save(redis, table_id, version, rows=[row]):
            return "stale", len(rows)  # a newer analysis replaced this one
        rows[decision.version] = row
    players = plays[0].state.players if plays else ()
    stored.finish(redis, table_id, version, judging.report(list(rows.values()), players))
    redis.srem(PENDING_KEY, table_id)
    return "done", len(rows)


def analyse_now(redis, svc, table_id: str, version: int) -> stored.Stored:
    """``escoba analyze``: the analysis of the log at ``version``, judged in this process if it is
    not done yet (rows already judged, by a worker or an earlier run, are kept)."""
    redis.sadd(PENDING_KEY, table_id)
    stored.ask(redis, table_id, version)
    work(redis, svc, table_id, version)
    found = stored.load(redis, table_id)
    if found.status == stored.DONE:
        redis.srem(PENDING_KEY, table_id)
    return found


def _hand_on(redis, table_id: str, version: int, done: int) -> str:
    from rq import get_current_job

    job = get_current_job()
    queue_redis = job.connection if job is not None else redis
    jid = job_id(table_id, version, done)
    stored.save(redis, table_id, version, job=jid)
    _enqueue(queue_redis, table_id, version, jid)
    return f"continued:{jid}"


__all__ = ["FUNC", "PENDING_KEY", "QUEUE_NAME", "SLICE_SECONDS", "analyse_now", "job_id", "queue_for",
           "queues_for", "request", "resume", "run", "work"]
