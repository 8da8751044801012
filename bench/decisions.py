"""Luna's decision CPU with the worker's heap frozen, or not: what a full garbage collection adds.

    python bench/decisions.py [--decisions 1500]

Two processes side by side (so the machine's load is the same for both), each playing Luna
against Tito through the engine, whole games (``engine.bots.match.play_game``, as bench/bots.py
plays them), the three presets in turn, and timing her decisions in CPU
(``time.process_time``, as bench/bots.py does): one with the collector as Python leaves it, one
that froze its heap first (``gc.freeze()`` after the imports, as ``escoba worker`` does before
its first job: workers/jobloop.settle_heap). Each prints its decision CPU p50, p99 and max, how
many decisions went over 100 ms and how many full collections ran; the summary gives the frozen
p99 against the other's.

What it leaves out: the worker's own work around a decision (the job, the store), RQ's loop and
its objects, and a worker's heap after days of jobs; Luna's strength (bench/bots.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


class _Enough(Exception):
    """The decisions asked for are timed: the game in hand stops there."""


def one(mode: str, decisions: int) -> dict:
    import gc
    import random
    import time

    from bench.bots import pct
    from engine.bots import choose
    from engine.bots.match import play_game

    if mode == "frozen":
        gc.freeze()
    full = [0]

    def count_full(phase: str, info: dict) -> None:
        if phase == "start" and info["generation"] == 2:
            full[0] += 1

    gc.callbacks.append(count_full)
    times: list[float] = []

    def chooser(bot, view, rng):
        if bot != "luna":
            return choose(bot, view, rng)
        if len(times) >= decisions:
            raise _Enough
        started = time.process_time()
        command = choose(bot, view, rng, clock=time.process_time, wall_clock=time.monotonic, wall_ms=2000)
        times.append((time.process_time() - started) * 1000)
        return command

    seed = 0
    with contextlib.suppress(_Enough):
        while True:  # whole games, as bench/bots.py plays them, the three presets in turn
            seed += 1
            play_game(("selminha", "del15", "cardgames")[seed % 3], ["luna", "tito"], random.Random(seed),
                      chooser=chooser)
    return {"mode": mode, "n": len(times), "p50": pct(times, 0.5), "p99": pct(times, 0.99),
            "max": max(times), "over_100": sum(t > 100 for t in times), "full_collections": full[0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=1500)
    parser.add_argument("--one", choices=("as-is", "frozen"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.decisions)))
        return 0
    procs = {mode: subprocess.Popen([sys.executable, __file__, "--one", mode, "--decisions", str(args.decisions)],
                                    stdout=subprocess.PIPE, text=True)
             for mode in ("as-is", "frozen")}
    got = {mode: json.loads(p.communicate()[0]) for mode, p in procs.items()}
    for r in got.values():
        print(f"{r['mode']:>7}: {r['n']} decisions, CPU p50 {r['p50']:.1f} ms, p99 {r['p99']:.1f} ms, "
              f"max {r['max']:.1f} ms, {r['over_100']} over 100 ms, {r['full_collections']} full collections")
    print(f"summary: frozen p99 {got['frozen']['p99']:.1f} ms = {got['frozen']['p99'] / got['as-is']['p99']:.2f}x "
          f"the as-is {got['as-is']['p99']:.1f} ms (target <= 100 ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
