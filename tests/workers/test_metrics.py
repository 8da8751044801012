"""workers/metrics.py: a worker counts the jobs it ran, how long each waited and ran, and serves them."""

from __future__ import annotations

import socket
import urllib.request

from rq import Queue

from workers import metrics
from workers.scheduling import QUEUE_NAME


def _value(name: str, **labels) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_worker_counts_each_job_by_outcome_with_its_wait_and_run_time(fake_queue):
    queue = Queue(QUEUE_NAME, connection=fake_queue)
    ok_before = _value("escoba_job_runs_total", queue=QUEUE_NAME, function="len", outcome="ok")
    failed_before = _value("escoba_job_runs_total", queue=QUEUE_NAME, function="int", outcome="failed")
    waits_before = _value("escoba_job_wait_seconds_count", queue=QUEUE_NAME)
    queue.enqueue("builtins.len", [1, 2])
    queue.enqueue("builtins.int", "not a number")  # raises: RQ fails it
    metrics.MeasuredSimpleWorker([queue], connection=fake_queue).work(burst=True, logging_level="WARNING")
    assert _value("escoba_job_runs_total", queue=QUEUE_NAME, function="len", outcome="ok") == ok_before + 1
    assert _value("escoba_job_runs_total", queue=QUEUE_NAME, function="int", outcome="failed") == failed_before + 1
    assert _value("escoba_job_wait_seconds_count", queue=QUEUE_NAME) == waits_before + 2
    assert _value("escoba_job_seconds_count", queue=QUEUE_NAME, function="int") >= 1


def test_every_job_the_project_enqueues_is_counted_from_zero():
    """A rate over a job that has not run yet is 0, not "no data" (the alerts compare them)."""
    for job in metrics.JOBS:
        for outcome in ("ok", "failed"):
            labels = {"queue": QUEUE_NAME, "function": job, "outcome": outcome}
            assert metrics.REGISTRY.get_sample_value("escoba_job_runs_total", labels) is not None


def test_the_metrics_are_served_over_http():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    metrics.serve(port, host="127.0.0.1")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    assert "escoba_job_runs_total" in text and "escoba_schedule_failures_total" in text
