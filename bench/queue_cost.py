"""What one RQ job costs the queue Redis: memory while it waits, CPU to run it through.

    python bench/queue_cost.py [--jobs 2000] [--volatile]

Starts its own plain Redis (AOF, appendfsync always, as the queue Redis runs), enqueues
``--jobs`` no-op jobs on the ``escoba`` queue the way the timers do (a job id per
timer, ``result_ttl=0``), prints the memory they hold while queued, then runs them
with one SimpleWorker in burst mode and prints the queue Redis's CPU per job (enqueue
plus run) and the commands it served per job.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rq import Queue, SimpleWorker  # noqa: E402

from tests.redis_servers import start_plain  # noqa: E402


def cpu(client) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def commands(client) -> int:
    return int(client.info("stats")["total_commands_processed"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--volatile", action="store_true", help="no AOF (how much of the cost is the fsync)")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-queue-"))
    server = start_plain(workdir, durable=not args.volatile)
    try:
        client = server.client()
        queue = Queue("escoba", connection=client)
        m0, c0, n0, t0 = int(client.info("memory")["used_memory"]), cpu(client), commands(client), time.time()
        for i in range(args.jobs):
            queue.enqueue("builtins.len", "x", job_id=f"tbl{i:07d}_bot_{i}", result_ttl=0, failure_ttl=3600)
        held = (int(client.info("memory")["used_memory"]) - m0) / args.jobs
        SimpleWorker([queue], connection=client).work(burst=True, logging_level="WARNING")
        per_cpu = (cpu(client) - c0) / args.jobs
        per_cmd = (commands(client) - n0) / args.jobs
        left = queue.count
        print(f"{args.jobs} jobs: {held:.0f} B each while queued; queue Redis CPU {per_cpu * 1e3:.3f} ms and "
              f"{per_cmd:.1f} commands per job (enqueue + run), {time.time() - t0:.1f}s; {left} left queued")
        client.close()
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
