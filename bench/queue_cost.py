"""What a bot turn costs the queue Redis: commands and CPU, RQ as it comes against ours.

    python bench/queue_cost.py [--games 40] [--volatile] [--rounds 2]

Starts its own Redises: one for the tables (no AOF) and a queue Redis (AOF with
``appendfsync always``, as the queue Redis runs; ``--volatile``: none). Plays ``--games``
bots-only games at once (no bot delay) through the timers (the change hook, a ticker
every 0.2 s as a worker's, a job loop in a thread), twice in the same run:

* ``rq``: the hand-off as RQ's ``Queue.enqueue`` writes a job (the status check, a
  transaction, the description) and RQ's ``SimpleWorker`` running it (the baseline, the
  code before this change);
* ``escoba``: ``ticker.enqueue_once`` and ``jobloop.EscobaWorker`` (what runs now), with
  our heartbeat thread and the sweep for dead workers' jobs at their production rates.

For each it prints the queue Redis's commands (``total_commands_processed``) and CPU
(``used_cpu_user + used_cpu_sys``) per bot turn (a ``bot_turn`` job that played), and the
ratio of the two. Left out: the tables' store (the same on both sides), the periodic
reconcile job (one a minute per shard), the worker's start and end. ``--rounds`` runs
both sides that many times, alternating, and prints each round (the machine may be busy).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rq import SimpleWorker  # noqa: E402
from rq.job import Job  # noqa: E402
from rq.timeouts import TimerDeathPenalty  # noqa: E402

from events.config import Config  # noqa: E402
from events.service import TableService  # noqa: E402
from events.text import as_text  # noqa: E402
from tests.redis_servers import start_plain  # noqa: E402
from tests.workers.conftest import start_bots_only  # noqa: E402
from workers import context, jobloop, jobs, liveness, queues, scheduling, ticker  # noqa: E402

TICK = ticker.TICK


def cpu(client) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def commands(client) -> int:
    return int(client.info("stats")["total_commands_processed"])


def rq_enqueue_once(queue_redis, entry: dict) -> bool:
    """The hand-off as it was (RQ's ``Queue.enqueue`` inside a transaction): the baseline."""
    job_id = entry["id"]
    status = queue_redis.hget(Job.key_for(job_id), "status")
    if status is not None and as_text(status) in scheduling.LIVE:
        return False
    queue = queues.queue_for(queue_redis)
    with queue_redis.pipeline() as pipe:
        pipe.multi()
        pipe.delete(Job.key_for(job_id))
        queue.enqueue(entry["func"], *entry.get("args", ()), **(entry.get("kwargs") or {}),
                      job_id=job_id, job_timeout=ticker.JOB_TIMEOUT, result_ttl=0,
                      failure_ttl=ticker.FAILURE_TTL, retry=ticker._retry(entry), pipeline=pipe)
        pipe.execute()
    return True


class RQThreadWorker(SimpleWorker):
    """RQ's SimpleWorker, able to run in a thread (as our ThreadWorker): the baseline."""

    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self):
        pass


class OurThreadWorker(jobloop.EscobaWorker):
    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self):
        pass


PLAYED = {"turns": 0}
_bot_turn = jobs.bot_turn


def counted_bot_turn(*args, **kwargs) -> str:
    """``jobs.bot_turn``, counting the turns that played (RQ looks the function up by name)."""
    outcome = _bot_turn(*args, **kwargs)
    if outcome.startswith("done:"):
        PLAYED["turns"] += 1
    return outcome


def run(side: str, games: int, durable: bool) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="bench-queue-"))
    tables_server = start_plain(workdir / "tables", durable=False)
    queue_server = start_plain(workdir / "queue", durable=durable)
    original = ticker.enqueue_once
    jobs.bot_turn, PLAYED["turns"] = counted_bot_turn, 0
    try:
        tables, queue = tables_server.client(), queue_server.client()
        config = Config(bot_delay=0.0)
        context.configure(config, tables=tables, queues=(queue,))
        svc = TableService(tables, on_change=scheduling.on_change_hook(tables, config), cache_size=0)
        tids = [start_bots_only(svc, target=10) for _ in range(games)]
        if side == "rq":
            ticker.enqueue_once = rq_enqueue_once
            worker = RQThreadWorker(queues.worker_queues(queue), connection=queue)
        else:
            worker = OurThreadWorker(queues.worker_queues(queue), connection=queue)
        thread = threading.Thread(target=worker.work, kwargs={"logging_level": "WARNING", "max_idle_time": 2},
                                  daemon=True)
        c0, n0, t0 = cpu(queue), commands(queue), time.perf_counter()
        thread.start()
        while True:
            ticker.tick(tables, queue, time.time())
            if side == "escoba":
                liveness.sweep(queue, time.time())
            if all(svc.load(t).status == "finished" for t in tids):
                break
            if time.perf_counter() - t0 > 600:
                raise RuntimeError("the games did not finish in 10 minutes")
            time.sleep(TICK)
        elapsed = time.perf_counter() - t0
        # the worker's last job is done once the games are over; what follows is its idling
        c1, n1 = cpu(queue), commands(queue)
        moves = PLAYED["turns"]
        thread.join(5)  # it quits after 2 s idle (max_idle_time)
        return {"side": side, "moves": moves, "commands": (n1 - n0) / moves, "cpu_ms": (c1 - c0) * 1e3 / moves,
                "seconds": elapsed}
    finally:
        ticker.enqueue_once, jobs.bot_turn = original, _bot_turn
        context.configure(None)
        queue_server.stop()
        tables_server.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--volatile", action="store_true", help="no AOF on the queue Redis")
    args = parser.parse_args(argv)
    print(f"{args.games} bots-only games at once, queue Redis {'without AOF' if args.volatile else 'AOF always'}; "
          f"per bot turn on the queue Redis (the machine may be shared: compare within a round)")
    for r in range(args.rounds):
        base = run("rq", args.games, not args.volatile)
        ours = run("escoba", args.games, not args.volatile)
        for res in (base, ours):
            print(f"  round {r + 1} {res['side']:>6}: {res['moves']} bot turns in {res['seconds']:.1f}s, "
                  f"{res['commands']:.1f} commands, {res['cpu_ms']:.3f} ms CPU per bot turn")
        print(f"  round {r + 1}: escoba/rq = {ours['commands'] / base['commands']:.2f} of the commands, "
              f"{ours['cpu_ms'] / base['cpu_ms']:.2f} of the CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
