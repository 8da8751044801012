"""What a worker process tells Prometheus: the jobs it ran, how long they waited and ran, and its
failed schedules, on ``escoba worker --metrics-port PORT`` (``GET /metrics``).

The counts that live in Redis (jobs queued, started, failed; the oldest queued job; timers due and
late; workers registered) are reported by every API process's ``/metrics`` instead
(api/server/observability.py): they are the same numbers from anywhere, and an API process is always
scraped. What only the process that ran a job knows is here.

A job is counted where it ran: the in-process worker (the default) counts its own jobs; under
``--fork`` the horse runs the job and this process asks RQ how it ended.
"""

from __future__ import annotations

import time
from datetime import UTC

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily
from rq import SimpleWorker, Worker

from .scheduling import FAILURES, QUEUE_NAME

REGISTRY = CollectorRegistry()

# every job function the project enqueues (workers/scheduling.py, runner.py), counted from 0
JOBS = ("bot_turn", "away", "expire", "start_rematch", "lapse_rematch", "compact", "notify", "turn_push",
        "reconcile_job")
# (not "job": Prometheus's own label for the scrape job would rename it)
RUNS = Counter("escoba_job_runs_total", "Jobs this worker ran, by queue, function and outcome",
               ["queue", "function", "outcome"], registry=REGISTRY)
WAIT = Histogram("escoba_job_wait_seconds", "From a job's enqueueing to its start, by queue", ["queue"],
                 registry=REGISTRY, buckets=(.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300))
RUN_TIME = Histogram("escoba_job_seconds", "A job's run, by queue and function", ["queue", "function"],
                     registry=REGISTRY, buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10, 60))
for _job in JOBS:
    for _outcome in ("ok", "failed"):
        RUNS.labels(QUEUE_NAME, _job, _outcome)
    RUN_TIME.labels(QUEUE_NAME, _job)
WAIT.labels(QUEUE_NAME)


class _ScheduleFailures:
    """Jobs of this process whose appends' timers could not be written (``workers.scheduling.FAILURES``)."""

    def collect(self):
        family = CounterMetricFamily("escoba_schedule_failures",
                                     "Moves whose timers could not be scheduled (repaired by the reconciler)")
        family.add_metric([], FAILURES.value)
        yield family


class _Replication:
    """The bots' and timers' moves whose replicas did not hold them in time (retried), and those
    acknowledged on a master with no replica online (events/replication.py), as the API reports its own."""

    def collect(self):
        from events.replication import UNACKNOWLEDGED, UNREPLICATED

        family = CounterMetricFamily("escoba_unacknowledged_appends",
                                     "Appends fewer replicas than ESCOBA_REPLICA_ACKS held in time (retried)")
        family.add_metric([], UNACKNOWLEDGED.total())
        yield family
        family = CounterMetricFamily("escoba_unreplicated_acks", "Writes acknowledged on a master with no replica "
                                     "online, held by its AOF alone (ESCOBA_UNREPLICATED=accept)")
        family.add_metric([], UNREPLICATED.total())
        yield family


REGISTRY.register(_ScheduleFailures())
REGISTRY.register(_Replication())


def job_name(job) -> str:
    try:
        return job.func_name.rsplit(".", 1)[-1]
    except Exception:  # a job whose data cannot be read: RQ fails it; count it under a name
        return "unknown"


class MeasuredJobs:
    """A mixin for an RQ worker class: each job's wait, run time and outcome."""

    _job_ok: bool | None = None

    def execute_job(self, job, queue):
        started = time.time()
        if job.enqueued_at is not None:
            WAIT.labels(queue.name).observe(max(0.0, started - job.enqueued_at.replace(tzinfo=UTC).timestamp()))
        self._job_ok = None
        try:
            return super().execute_job(job, queue)
        finally:
            ok = self._job_ok
            if ok is None:  # run by a forked horse: how it ended is in RQ (a job of result_ttl=0 is gone: done)
                try:
                    ok = job.get_status(refresh=True) not in ("failed", "scheduled", "stopped", "canceled")
                except Exception:
                    ok = True
            name = job_name(job)
            RUNS.labels(queue.name, name, "ok" if ok else "failed").inc()
            RUN_TIME.labels(queue.name, name).observe(time.time() - started)

    def perform_job(self, job, queue, execution):
        ok = super().perform_job(job, queue, execution)
        self._job_ok = bool(ok)
        return ok


class MeasuredSimpleWorker(MeasuredJobs, SimpleWorker):
    """Jobs in process (``escoba worker``'s default), measured."""


class MeasuredWorker(MeasuredJobs, Worker):
    """A fork per job (``escoba worker --fork``), measured."""


def serve(port: int | None, host: str = "0.0.0.0") -> None:
    """``GET /metrics`` of this process on ``port`` (a thread of prometheus_client's); None: none."""
    if port is not None:
        start_http_server(port, addr=host, registry=REGISTRY)


__all__ = ["REGISTRY", "MeasuredJobs", "MeasuredSimpleWorker", "MeasuredWorker", "serve"]
