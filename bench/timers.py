"""The timers' costs, measured on a private redis-server this bench starts (and stops).

Prints:
  1. the reconciler: ms per table and per pass (batch B) at two table counts, to show a
     pass costs O(batch), not O(tables);
  2. the change hook: ms per move with the timers hook against the same moves without it;
  3. a bot move's CPU (ms, this process and its children) in RQ's forking ``Worker``
     against the no-fork ``SimpleWorker`` (the default now).

    python bench/timers.py [--tables 1000] [--batch 200] [--moves 300] [--games 2]
                           [--parts reconcile,hook,bots]

Ratios and costs from one run on whatever the machine is doing: a loaded machine reads
slower, but both sides of each comparison ran in the same minute.
"""

from __future__ import annotations

import argparse
import random
import resource
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from events.autoplay import new_table, next_command  # noqa: E402
from events.config import Config  # noqa: E402
from events.service import TableService  # noqa: E402
from tests.redis_servers import start_plain  # noqa: E402
from workers import context, runner, scheduling, ticker  # noqa: E402


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def open_tables(svc, n: int) -> None:
    for _ in range(n):
        svc.create({"type": "open", "name": "b", "preset": "del15", "settings": {"target": 10},
                    "player": "p0", "host_name": "Ana"})


def bench_reconcile(tables, queue, config, counts, batch) -> None:
    svc = TableService(tables, on_change=scheduling.on_change_hook(tables, config))
    made = 0
    for n in counts:
        open_tables(svc, n - made)
        made = n
        runner.reconcile(tables, queue, config, batch=batch)  # warm
        passes = []
        for _ in range(3):
            start = time.perf_counter()
            summary = runner.reconcile(tables, queue, config, batch=batch)
            passes.append((time.perf_counter() - start, summary["tables"]))
        secs, done = min(passes)
        print(f"reconcile: {n:6d} tables, batch {batch}: one pass {secs * 1000:7.1f} ms for "
              f"{done} tables = {secs * 1000 / max(done, 1):.2f} ms/table")


def play(svc, tid, moves, rng) -> int:
    state = svc.load(tid)
    done = 0
    while done < moves:
        command, actor = next_command(state, rng)
        state = svc.execute(tid, command, actor=actor).state
        done += 1
    return done


def bench_hook(tables, config, moves) -> None:
    results = {}
    for rounds in range(2):
        for name, hook in (("no hook", None), ("timers hook", scheduling.on_change_hook(tables, config))):
            svc = TableService(tables, on_change=hook)
            tid = new_table(svc, players=2)
            start = time.perf_counter()
            n = play(svc, tid, moves, random.Random(rounds))
            results.setdefault(name, []).append((time.perf_counter() - start) * 1000 / n)
    base, hooked = min(results["no hook"]), min(results["timers hook"])
    print(f"hook: {base:.3f} ms/move without, {hooked:.3f} ms/move with the timers hook: "
          f"+{hooked - base:.3f} ms per move")


def bench_bots(tables, queue, config, games) -> None:
    from rq import SimpleWorker, Worker

    context.configure(config, tables=tables)
    for cls in (Worker, SimpleWorker, Worker, SimpleWorker):
        svc = TableService(tables, on_change=scheduling.on_change_hook(tables, config))
        moves, spent, ticking = 0, 0.0, 0.0
        for _ in range(games):
            from tests.workers.conftest import start_bots_only

            tid = start_bots_only(svc)
            worker = cls([scheduling.queue_for(queue)], connection=queue)
            before_version = svc.load(tid).version
            while svc.load(tid).status != "finished":
                before = cpu()
                handed = ticker.tick(tables, queue, time.time() + 1)
                ticking += cpu() - before
                if not handed:
                    time.sleep(0.01)
                    continue
                before = cpu()  # the jobs' CPU only: in this process and in forked children
                worker.work(burst=True, logging_level="ERROR")
                spent += cpu() - before
                # RQ's handlers outlive a burst and take a late signal for a stop request
                signal.signal(signal.SIGINT, signal.default_int_handler)
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
            moves += svc.load(tid).version - before_version
        print(f"bot moves: {cls.__name__:12s} {spent * 1000 / moves:6.2f} ms CPU per record in jobs "
              f"(ticker: {ticking * 1000 / moves:.2f} ms; {moves} records)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tables", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--moves", type=int, default=300)
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--parts", default="reconcile,hook,bots",
                        help="which of reconcile, hook, bots to run")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        server = start_plain(Path(tmp) / "tables")
        queue_server = start_plain(Path(tmp) / "queue")
        # the URLs too: nothing here may fall back on a default Redis
        config = Config(redis_url=server.url, queue_url=queue_server.url, bot_delay=0.0)
        try:
            tables, queue = server.client(), queue_server.client()
            parts = args.parts.split(",")
            if "reconcile" in parts:
                bench_reconcile(tables, queue, config, (args.tables, args.tables * 2), args.batch)
            if "hook" in parts:
                bench_hook(tables, config, args.moves)
            if "bots" in parts:
                bench_bots(tables, queue, config, args.games)
        finally:
            server.stop()
            queue_server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
