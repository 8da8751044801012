"""Finding a dead worker's job within seconds, and putting it back on its queue.

RQ counts a job as running until its started-registry entry expires: the job timeout
plus a minute (minutes), so a worker killed mid-job stranded its table that long. Each
job loop of ours beats instead: ``SET escoba:alive:<worker name> 1 EX ALIVE_TTL`` every
``BEAT_EVERY`` seconds from a thread of its own (so a long job does not stop it), on its
shard's queue Redis. The ticker of every worker ``sweep``s each shard at most once a
second (a ``SET NX`` slot over all of them): a job RQ calls started whose worker no longer
beats goes back to the front of its queue; so does a job left in RQ's intermediate list
(taken from the queue, never started) for more than ``STUCK_AFTER`` seconds. Running a
job twice is harmless: every job checks the table's version and executes with an
idempotency key.
"""

from __future__ import annotations

import logging
import threading
import time

from rq.job import Job
from rq.registry import StartedJobRegistry

from events.text import as_text

from . import queues

log = logging.getLogger("escoba.workers")

ALIVE_TTL = 5  # seconds without a beat before a worker counts as dead
BEAT_EVERY = 1.0
SWEEP_EVERY = 1  # seconds between sweeps of one shard, over every ticker
STUCK_AFTER = 3.0  # seconds a job may sit taken from its queue without starting
SETTLE_SECONDS = 0.5  # a live worker writes "started" within milliseconds of popping a job


def alive_key(worker_name: str) -> str:
    return f"escoba:alive:{worker_name}"


class Throttled:
    """Logs a failure that repeats (a store that is down) once, then at most every ``every``
    seconds, and says when it is over."""

    def __init__(self, what: str, every: float = 10.0, clock=time.monotonic):
        self.what, self.every, self.clock = what, every, clock
        self.since: float | None = None
        self._said = 0.0

    def failed(self, exc: BaseException) -> None:
        now = self.clock()
        if self.since is None:
            self.since = self._said = now
            log.warning("%s failed (%s: %s); trying again", self.what, type(exc).__name__, exc)
        elif now - self._said >= self.every:
            self._said = now
            log.warning("%s still failing after %.0f s (%s: %s)", self.what, now - self.since,
                        type(exc).__name__, exc)

    def ok(self) -> None:
        if self.since is not None:
            log.warning("%s works again after %.1f s", self.what, self.clock() - self.since)
            self.since = None


class Heartbeat:
    """A thread that says ``name`` is alive on ``queue_redis`` until ``stop()``."""

    def __init__(self, queue_redis, name: str, every: float = BEAT_EVERY, ttl: int = ALIVE_TTL):
        self.queue_redis, self.name, self.every, self.ttl = queue_redis, name, every, ttl
        self._stop = threading.Event()
        self._trouble = Throttled(f"heartbeat of {name}")
        self._thread = threading.Thread(target=self._run, name=f"escoba-beat-{name}", daemon=True)

    def start(self) -> Heartbeat:
        self.beat()
        self._thread.start()
        return self

    def beat(self) -> None:
        try:
            self.queue_redis.set(alive_key(self.name), "1", ex=self.ttl)
            self._trouble.ok()
        except Exception as exc:  # the queue Redis is away: beat again when it is back
            self._trouble.failed(exc)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.beat()

    def stop(self) -> None:
        """No more beats; the key is left to expire (a worker that ended has no job in hand)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.every + 1)


def stranded(queue_redis, queued: list[tuple[str, str]], settle: float = SETTLE_SECONDS) -> set[str]:
    """Of ``(job id, its queue's name)`` whose hashes say "queued", those in neither the queue nor
    its intermediate list: nothing will run them. RQ pops a job of a worker serving several queues
    (ours: escoba and analysis) with LPOP, not into the intermediate list, so from its pop to its
    start a job is in no list at all, and a store or worker that dies there strands it. LPOS walks
    the list: this runs only for jobs handed before (a repeat hand-off, the reconciler, a dead job
    loop's job), never on a move's path.

    A live worker is in that window too, for the milliseconds between its pop and its start: one
    found there is looked at again after ``settle`` seconds, and is stranded only if it still
    says queued and still waits nowhere (else the reconciler would hand a second copy of a job a
    worker is starting, and both would run). ``settle=0`` for a job whose taker is known dead."""
    found = _nowhere(queue_redis, queued)
    if not found or not settle:
        return found
    time.sleep(settle)
    again = [(job_id, name) for job_id, name in queued if job_id in found]
    with queue_redis.pipeline(transaction=False) as pipe:
        for job_id, _ in again:
            pipe.hget(Job.key_for(job_id), "status")
        still = [taken for taken, status in zip(again, pipe.execute(), strict=True) if as_text(status) == "queued"]
    return _nowhere(queue_redis, still)


def _nowhere(queue_redis, queued: list[tuple[str, str]]) -> set[str]:
    if not queued:
        return set()
    with queue_redis.pipeline(transaction=False) as pipe:
        for job_id, name in queued:
            key = queues.queue_for(queue_redis, name).key
            pipe.lpos(key, job_id)
            pipe.lpos(f"{key}:intermediate", job_id)
        found = pipe.execute()
    return {job_id for (job_id, _), waiting, taken in zip(queued, found[::2], found[1::2], strict=True)
            if waiting is None and taken is None}


def requeue_stranded(queue_redis, taken: tuple[str, str], why: str) -> bool:
    """Put ``taken`` (job id, queue name) back at the front of its queue if its hash says queued and
    it waits in no list (``stranded``)."""
    job_id, name = taken
    if as_text(queue_redis.hget(Job.key_for(job_id), "status")) != "queued" \
            or not stranded(queue_redis, [taken], settle=0):  # its taker is this dead loop
        return False
    queues.queue_for(queue_redis, name).enqueue_job(Job.fetch(job_id, connection=queue_redis), at_front=True)
    log.warning("job %s put back on its queue: %s", job_id, why)
    return True


def requeue(queue_redis, job_id: str, members: list[str], why: str) -> bool:
    """Put the started job ``job_id`` back at the front of its queue (it is idempotent);
    ``members``: its entries in the started registry."""
    job = Job.fetch_many([job_id], connection=queue_redis)[0]
    rq_queue = queues.queue_for(queue_redis, job.origin if job is not None else queues.QUEUE_NAME)
    registry = StartedJobRegistry(queue=rq_queue)
    if job is None or job.get_status() != "started":
        if members:
            queue_redis.zrem(registry.key, *members)
        return False
    # on its queue first, out of the registry after: a store that dies in between leaves it in both
    # (the next sweep finds it queued and only takes it out of the registry), where the other order
    # left a "started" job in neither, which nothing would ever run
    rq_queue.enqueue_job(job, at_front=True)
    if members:
        queue_redis.zrem(registry.key, *members)
    log.warning("job %s put back on its queue: %s", job_id, why)
    return True


def _running(queue_redis, rq_queue) -> dict[str, tuple[str | None, list[str]]]:
    """The jobs in ``rq_queue``'s started registry: id -> (its worker's name, its entries)."""
    members = [as_text(m) for m in queue_redis.zrange(StartedJobRegistry(queue=rq_queue).key, 0, -1)]
    found: dict[str, list[str]] = {}
    for member in members:
        found.setdefault(member.split(":", 1)[0], []).append(member)
    if not found:
        return {}
    with queue_redis.pipeline(transaction=False) as pipe:
        for job_id in found:
            pipe.hget(Job.key_for(job_id), "worker_name")
        workers = pipe.execute()
    return {job_id: (as_text(w) if w else None, entries)
            for (job_id, entries), w in zip(found.items(), workers, strict=True)}


def requeue_worker_jobs(queue_redis, worker_name: str, why: str) -> list[str]:
    """The jobs ``worker_name`` (known to be dead) was running, back on their queues."""
    back = []
    for name in queues.QUEUE_NAMES:
        running = _running(queue_redis, queues.queue_for(queue_redis, name))
        for job_id, (worker, members) in running.items():
            if worker == worker_name and requeue(queue_redis, job_id, members, why):
                back.append(job_id)
    return back


def sweep(queue_redis, now: float | None = None, *, force: bool = False) -> list[str]:
    """One shard's jobs whose worker is dead (and jobs stuck between dequeue and start), put
    back on their queues; at most once every ``SWEEP_EVERY`` s over every ticker unless
    ``force``. The ids put back."""
    now = time.time() if now is None else now
    if not force and not queue_redis.set(f"escoba:sweep:{int(now // SWEEP_EVERY)}", "1", nx=True,
                                         ex=SWEEP_EVERY * 2 + 1):
        return []
    back = []
    for name in queues.QUEUE_NAMES:
        rq_queue = queues.queue_for(queue_redis, name)
        running = _running(queue_redis, rq_queue)
        names = sorted({w for w, _ in running.values() if w})
        if names:
            with queue_redis.pipeline(transaction=False) as pipe:
                for w in names:
                    pipe.exists(alive_key(w))
                alive = {w for w, n in zip(names, pipe.execute(), strict=True) if n}
            for job_id, (worker, members) in running.items():
                if worker and worker not in alive and \
                        requeue(queue_redis, job_id, members, f"its worker {worker} is gone"):
                    back.append(job_id)
        back += _unstick(queue_redis, rq_queue, now)
    return back


def _unstick(queue_redis, rq_queue, now: float) -> list[str]:
    """Jobs in RQ's intermediate list (dequeued, not started) for over ``STUCK_AFTER`` s: the
    worker that took them died before starting them."""
    key = f"{rq_queue.key}:intermediate"
    taken = [as_text(x) for x in queue_redis.lrange(key, 0, -1)]
    back = []
    for job_id in taken:
        seen = f"escoba:taken:{job_id}"
        first = queue_redis.set(seen, repr(now), nx=True, ex=60, get=True)
        if first is None or now - float(first) < STUCK_AFTER:
            continue
        status = queue_redis.hget(Job.key_for(job_id), "status")
        if as_text(status) == "started":
            continue  # started after all: the registry's check covers it
        if queue_redis.lrem(key, 1, job_id):  # only the sweeper that took it out puts it back
            queue_redis.delete(seen)
            job = Job.fetch_many([job_id], connection=queue_redis)[0]
            if job is not None:
                rq_queue.enqueue_job(job, at_front=True)
                log.warning("job %s put back on its queue: taken by a worker that never started it", job_id)
                back.append(job_id)
    return back


__all__ = ["ALIVE_TTL", "BEAT_EVERY", "Heartbeat", "Throttled", "alive_key", "requeue", "requeue_worker_jobs",
           "sweep"]
