"""A job that takes a while, for killing a job process while it runs one."""

from __future__ import annotations

import time

from rq import get_current_job


def slow_job(key: str, seconds: float) -> str:
    """Note the start (``<key>:started``, a list of worker names), wait, count a finish
    (``<key>:done``), on the job's own connection (the queue Redis)."""
    job = get_current_job()
    job.connection.rpush(f"{key}:started", job.worker_name or "?")
    time.sleep(seconds)
    job.connection.incr(f"{key}:done")
    return "done"
