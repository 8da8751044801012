"""RQ's job loop, made to outlive its store.

RQ's own loop quits on an error it did not expect, and its failure handling itself
needs the queue Redis: with that Redis killed, ``escoba worker`` used to log "found an
unhandled exception, quitting" and stop for good. ``run_jobs`` runs RQ's loop again
instead: it waits for the queue Redis with a backoff (logged once, then every 10 s),
puts back the job the dead loop had in hand, and starts a new loop (a new worker
name: RQ refuses a name still registered). A job that failed because a store was
away is retried with a backoff (``STORE_RETRIES`` times, 1, 2, 4, then every 5 s);
any other error, a bug, only ``BUG_RETRIES`` times.

``EscobaWorker`` is RQ's in-process ``SimpleWorker`` plus a heartbeat of our own
(``workers.liveness``), so a worker killed mid-job has its job found in seconds, and
cheaper per job: RQ 3 spent some 64 commands of the queue Redis running one job
(the worker's heartbeat three times, its state twice, the suspension flag, an execution
record in four keys, the dependents' WATCH, the counters). For a job that keeps no
result and has no dependents (every job the timers hand over: ``result_ttl=0``) it
takes 7: RQ's own dequeue (LMOVE, HGETALL), one pipeline to start it (the started
registry, the job's status and worker, out of the intermediate list) and one to end it
(out of the registry, the job hash gone). The worker's registration is kept fresh every
``REGISTRY_EVERY`` s with the jobs counted meanwhile; a failure takes RQ's own path
(retries, the failed registry), unchanged.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
import threading
import time
import uuid

from rq import Retry, SimpleWorker, Worker
from rq.executions import Execution
from rq.job import JobStatus
from rq.timeouts import JobTimeoutException, TimerDeathPenalty
from rq.utils import now, utcformat

from events import patches
from events.connection import store_down

from . import liveness, queues
from .metrics import MeasuredJobs

log = logging.getLogger("escoba.workers")

BUG_RETRIES = 2  # an error that is not a store away: run again this often (a flaky bug), then failed
STORE_RETRIES = 30  # a store away: about 2.5 min of retries before the job counts as failed
STORE_BACKOFF = (1, 2, 4, 5)  # seconds before each retry; the last repeats
MAINTENANCE_EVERY = 60  # seconds between RQ's own cleanups in a job loop
REGISTRY_EVERY = 10.0  # seconds between writes of the worker's RQ registration (RQ: three per job)
SUSPENSION_EVERY = 1.0  # seconds between looks at RQ's suspension flag (RQ: before every job)
WAIT_MAX = 1.0  # the longest pause between two looks at a queue Redis that is away
LISTEN_WAIT = 1.0  # the longest wait of the thread that listens for RQ's commands (RQ: 60 s)


class _Survives:
    """What our workers add to RQ's: the heartbeat, retries that tell a store away from a bug, and
    ``died_of``: the error RQ's loop quit on (RQ only logs it), so ``run_jobs`` knows a loop that
    ended by itself from one that was done."""

    died_of: BaseException | None = None
    # (job id, queue name) from its pop until its start is written (EscobaWorker; RQ's own start for the
    # others: the entry then stays, and a started job is not put back by it): a loop that dies in between
    # leaves that job in no list (liveness.stranded), and run_jobs puts it back
    taken: tuple[str, str] | None = None
    # SIGTERM/SIGINT: RQ's warm shutdown. An idle loop ends at once without setting RQ's
    # _stop_requested (that is only for a loop busy with a job), so the ask is noted here too:
    # else run_jobs took the ending for one by itself and started another loop, and the worker
    # never stopped (docker stop then killed it 10 s later, mid-job)
    stop_asked: bool = False
    # RQ's dequeue waits 1, 2, 4... up to 60 s between tries while its Redis is away: a table
    # would then wait up to a minute after the store is back. A try a second costs nothing.
    max_connection_wait_time = WAIT_MAX

    def _noting(self, step, *args, **kwargs):
        try:
            return step(*args, **kwargs)
        except Exception as exc:  # RQ's loop logs it and quits: noted for run_jobs
            self.died_of = exc
            raise

    def execute_job(self, job, queue):
        return self._noting(super().execute_job, job, queue)

    def handle_warm_shutdown_request(self):
        self.stop_asked = True
        super().handle_warm_shutdown_request()

    def dequeue_job_and_maintain_ttl(self, *args, **kwargs):
        taken = self._noting(super().dequeue_job_and_maintain_ttl, *args, **kwargs)
        if taken:
            job, queue = taken
            self.taken = (job.id, queue.name)
        return taken

    def heartbeat(self, *args, **kwargs):
        return self._noting(super().heartbeat, *args, **kwargs)

    def check_for_suspension(self, *args, **kwargs):
        return self._noting(super().check_for_suspension, *args, **kwargs)

    def run_maintenance_tasks(self):
        return self._noting(super().run_maintenance_tasks)

    def subscribe(self):
        # RQ's own, with a shorter wait. Its listener waits up to 60 s at a time, and redis-py 8.2's
        # stop() waits for it to end: a listener that had read its own unsubscribe went on to wait
        # the whole 60 s for a subscription that never came, and the loop's teardown (every burst,
        # every stop) hung a minute. A wait of a second costs one select a second.
        self.pubsub = self.connection.pubsub()
        self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
        self.pubsub_thread = self.pubsub.run_in_thread(sleep_time=LISTEN_WAIT, daemon=True,
                                                       exception_handler=self._pubsub_exception_handler)

    def bootstrap(self, *args, **kwargs):
        self._beat = liveness.Heartbeat(self.connection, self.name).start()
        return super().bootstrap(*args, **kwargs)

    def teardown(self):
        beat = getattr(self, "_beat", None)
        if beat is not None:
            beat.stop()
        try:
            super().teardown()
        except Exception as exc:  # unregistering needs the queue Redis; the registration expires anyway
            log.warning("worker %s: could not unregister (%s: %s)", self.name, type(exc).__name__, exc)

    def handle_exception(self, job, *exc_info):
        exc = exc_info[1]
        transient = store_down(exc) or getattr(exc, "transient", False)  # a notice's receiver away
        if exc is not None and not transient and job.retries_left:
            done = (job.number_of_retries or 0)
            job.retries_left = min(job.retries_left, max(0, BUG_RETRIES - done))
        return super().handle_exception(job, *exc_info)


class _Lean:
    """RQ's worker bookkeeping cut to what a job without a result needs (the module's docstring); RQ's
    own with the stock libraries (events/patches.py ``RQ_LEAN``)."""

    _registered_at = -1e18
    _suspension_at = -1e18
    _counted = 0

    def heartbeat(self, timeout=None, pipeline=None):
        """The registration's TTL and the jobs done, at most every ``REGISTRY_EVERY`` s (it lives
        ``worker_ttl`` + 60 s; our own liveness key says within seconds that a worker is gone)."""
        if not patches.RQ_LEAN.on:
            return super().heartbeat(timeout, pipeline)
        moment = time.monotonic()
        if moment - self._registered_at < REGISTRY_EVERY:
            return
        self._registered_at = moment
        connection = pipeline if pipeline is not None else self.connection
        if self._counted:
            connection.hincrby(self.key, "successful_job_count", self._counted)
            self._counted = 0
        super().heartbeat(None, pipeline)

    def set_state(self, state, pipeline=None):
        if not patches.RQ_LEAN.on:
            return super().set_state(state, pipeline)
        self._state = state  # idle/busy twice a job: not written (no dashboard of ours reads it)

    def check_for_suspension(self, burst):
        if not patches.RQ_LEAN.on:
            return super().check_for_suspension(burst)
        moment = time.monotonic()
        if moment - self._suspension_at >= SUSPENSION_EVERY:
            self._suspension_at = moment
            super().check_for_suspension(burst)

    def execute_job(self, job, queue):
        # RQ's own path for a job that keeps a result or repeats; a job others depend on must keep
        # a result (the lean end does not look for dependents: a command per job for none of ours)
        if job.result_ttl != 0 or job.repeats_left or not patches.RQ_LEAN.on:
            return super().execute_job(job, queue)
        execution = Execution(id=uuid.uuid4().hex, job_id=job.id, connection=self.connection)
        job.worker_name, job.started_at, job._status = self.name, now(), JobStatus.STARTED
        with self.connection.pipeline(transaction=False) as pipe:
            job.started_job_registry.add_execution(execution, pipeline=pipe, ttl=self.get_heartbeat_ttl(job))
            pipe.hset(job.key, mapping={"status": JobStatus.STARTED, "worker_name": self.name,
                                        "started_at": utcformat(job.started_at)})
            if len(self.queues) == 1:  # RQ's dequeue moved it to the intermediate list (one queue only)
                pipe.lrem(queue.intermediate_queue_key, 1, job.id)
            pipe.execute()
        self.taken = None
        try:
            with self.death_penalty_class(job.timeout or self.queue_class.DEFAULT_TIMEOUT, JobTimeoutException,
                                          job_id=job.id):
                value = job.perform()
        except:  # noqa: E722 - RQ's own failure path, for anything the job raised (as RQ does)
            self._job_ok = False  # for the job metrics (workers/metrics.py), read after this returns
            self._finalize_failure(job, queue, execution, sys.exc_info())
            return None
        self._job_ok = True
        if isinstance(value, Retry):
            return self._finalize_success(job, queue, execution, value)
        job.ended_at = now()
        with self.connection.pipeline(transaction=False) as pipe:
            job.started_job_registry.remove_execution(execution, pipeline=pipe)
            pipe.delete(job.key)
            pipe.execute()
        self._counted += 1
        return None


class EscobaWorker(MeasuredJobs, _Survives, _Lean, SimpleWorker):
    """Jobs in process (no fork per job), at the lean cost."""


class ForkingWorker(MeasuredJobs, _Survives, Worker):
    """RQ's forking worker (``escoba worker --fork``)."""


class ThreadWorker(EscobaWorker):
    """An EscobaWorker that can run outside the main thread (no signal handlers, job timeouts
    by timer rather than SIGALRM), and counts the jobs it ran."""

    death_penalty_class = TimerDeathPenalty

    jobs_run = 0

    def execute_job(self, job, queue):
        self.jobs_run += 1
        return super().execute_job(job, queue)

    def _install_signal_handlers(self):
        if threading.current_thread() is threading.main_thread():
            super()._install_signal_handlers()


def wait_for(queue_redis, trouble: liveness.Throttled, stop: threading.Event | None = None) -> bool:
    """Until ``queue_redis`` answers (pauses doubling up to ``WAIT_MAX``); False when stopped."""
    pause = 0.2
    while stop is None or not stop.is_set():
        try:
            queue_redis.ping()
            trouble.ok()
            return True
        except Exception as exc:
            trouble.failed(exc)
        time.sleep(pause)
        pause = min(pause * 2, WAIT_MAX)
    return False


def requeue_abandoned(queue_redis, worker_name: str, taken: tuple[str, str] | None = None) -> str | None:
    """The job a dead job loop (or process) was running goes back on its queue now, not when
    a sweep finds its worker silent; so does ``taken`` (the loop's ``taken``: popped, its start
    never written) if it waits in no list. Its id, if there was one."""
    found = Worker.find_by_key(Worker.redis_worker_namespace_prefix + worker_name, connection=queue_redis)
    if found is not None:
        with contextlib.suppress(Exception):
            found.register_death()
    back = liveness.requeue_worker_jobs(queue_redis, worker_name,
                                        f"its job loop {worker_name} died running it")
    why = f"its job loop {worker_name} died between taking and starting it"
    if taken is not None and liveness.requeue_stranded(queue_redis, taken, why):
        back.append(taken[0])
    return back[0] if back else None


def _asked_to_stop(worker) -> bool:
    return worker._stop_requested or worker.stop_asked


def settle_heap() -> None:
    """Keep what the process has built before its first job (modules, the bots' tables) out of the
    collector's full passes, as the API servers do (api/server/serve.py): it lives as long as the
    process. A full pass that began inside a bot's decision ran it past its budget; frozen, the
    slowest decisions come in under it (bench/decisions.py: docs/bots.md).
    A forking worker's job processes share these pages instead of copying them."""
    gc.freeze()


def run_jobs(queue_redis, *, fork: bool = False, name: str | None = None, burst: bool = False,
             logging_level: str = "INFO") -> int:
    """RQ's job loop over ``queues.QUEUE_NAMES`` on one queue Redis, started again whenever it
    ends by itself (a store away) until it is asked to stop; how many loops it took."""
    cls = ForkingWorker if fork else EscobaWorker
    trouble = liveness.Throttled("the job loop's queue Redis")
    settle_heap()
    loops = 0
    while True:
        loops += 1
        loop_name = name if name is None or loops == 1 else f"{name}.{loops}"
        worker = None
        try:
            worker = cls(queues.worker_queues(queue_redis), connection=queue_redis, name=loop_name,
                         maintenance_interval=MAINTENANCE_EVERY)
            worker.work(burst=burst, logging_level=logging_level)
            if _asked_to_stop(worker) or (burst and worker.died_of is None):
                return loops
        except SystemExit:
            raise
        except Exception as exc:  # RQ's teardown or a registration that needs the store
            trouble.failed(exc)
            if worker is not None and _asked_to_stop(worker):
                return loops
        log.warning("job loop %s ended by itself; starting another once its queue Redis answers",
                    worker.name if worker is not None else "?")
        wait_for(queue_redis, trouble)
        if worker is not None:
            try:
                requeue_abandoned(queue_redis, worker.name, getattr(worker, "taken", None))
            except Exception as exc:  # a sweep finds it once its heartbeat lapses
                trouble.failed(exc)


__all__ = ["BUG_RETRIES", "STORE_BACKOFF", "STORE_RETRIES", "EscobaWorker", "ForkingWorker", "ThreadWorker",
           "requeue_abandoned", "run_jobs", "settle_heap", "wait_for"]
