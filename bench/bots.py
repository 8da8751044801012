"""A tournament of the bots, heads-up, through the engine itself.

    python bench/bots.py [--games N] [--preset P] [--pairing luna-tito] [--workers 2]

For each preset and pairing, N games: seats and the first dealer rotate, the
decks come from a seeded random generator. Prints wins, draws and losses with
a 95% Wilson interval for the first bot's win rate, the average points per
round, and the p50/p99 decision time per bot.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import pool_starmap  # noqa: E402
from engine.bots import choose  # noqa: E402
from engine.bots.match import play_game  # noqa: E402

PAIRINGS = (("luna", "tito"), ("tito", "carmen"), ("luna", "carmen"))
PRESETS = ("selminha", "del15", "cardgames")
MAX_ROUNDS = 40


def one_game(job: tuple) -> dict:
    preset, a, b, g, seed, budget = job
    rng = random.Random(f"{seed}:{preset}:{a}:{b}:{g}")
    bots = [a, b] if g % 2 == 0 else [b, a]
    first_dealer = (g // 2) % 2
    times: dict[str, list[float]] = {a: [], b: []}
    points: dict[str, list[int]] = {a: [], b: []}

    def chooser(bot, view, r):
        t = time.perf_counter()
        command = choose(bot, view, r, budget_ms=budget if bot == "luna" else None)
        times[bot].append((time.perf_counter() - t) * 1000)
        return command

    def on_round(s):
        if s.last_round:
            for side, tally in zip(s.sides, s.last_round, strict=True):
                points[bots[side[0]]].append(tally["round_points"])

    s = play_game(preset, bots, rng, first_dealer=first_dealer, max_rounds=MAX_ROUNDS,
                  chooser=chooser, on_round=on_round)
    winners = {bots[seat] for seat in (s.winners or ())}
    result = "draw" if s.status != "finished" or len(winners) != 1 else ("win" if a in winners else "loss")
    return {"preset": preset, "a": a, "b": b, "result": result, "times": times, "points": points,
            "rounds": s.round}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=100, help="games per pairing and preset")
    parser.add_argument("--preset", choices=PRESETS, action="append", help="repeatable; default: all")
    parser.add_argument("--pairing", action="append", help="e.g. luna-tito; repeatable; default: all three")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", default="bench")
    parser.add_argument("--budget", type=float, default=None, help="Luna's budget in ms (default hers)")
    args = parser.parse_args(argv)
    presets = args.preset or list(PRESETS)
    pairings = [tuple(p.split("-")) for p in args.pairing] if args.pairing else list(PAIRINGS)
    jobs = [(preset, a, b, g, args.seed, args.budget)
            for preset in presets for a, b in pairings for g in range(args.games)]
    # the slowest games first, so the two workers finish together
    jobs.sort(key=lambda j: ("luna" not in j[1:3]))
    started = time.time()
    results = pool_starmap(one_game, [(job,) for job in jobs], args.workers, unordered=True)
    times: dict[str, list[float]] = {}
    for preset in presets:
        print(f"== {preset}")
        for a, b in pairings:
            rows = [r for r in results if r["preset"] == preset and r["a"] == a and r["b"] == b]
            n = len(rows)
            wins = sum(r["result"] == "win" for r in rows)
            draws = sum(r["result"] == "draw" for r in rows)
            losses = n - wins - draws
            lo, hi = wilson(wins, n)
            ppr = {x: _mean([p for r in rows for p in r["points"][x]]) for x in (a, b)}
            rounds = _mean([r["rounds"] for r in rows])
            print(f"  {a:>6} vs {b:<6} {n:4d} games  W {wins:4d} D {draws:3d} L {losses:4d}  "
                  f"win {wins / max(1, n):6.1%} [95% {lo:5.1%}..{hi:5.1%}]  "
                  f"pts/round {a} {ppr[a]:.2f} {b} {ppr[b]:.2f}  rounds/game {rounds:.1f}")
            for r in rows:
                for bot, ts in r["times"].items():
                    times.setdefault(bot, []).extend(ts)
    print("== decision time (ms)")
    for bot, ts in sorted(times.items()):
        print(f"  {bot:>6}: n {len(ts):6d}  p50 {pct(ts, 0.5):7.2f}  p99 {pct(ts, 0.99):7.2f}  max {max(ts):7.2f}")
    print(f"== {len(jobs)} games in {time.time() - started:.0f} s")
    return 0


def _mean(xs) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


if __name__ == "__main__":
    raise SystemExit(main())
