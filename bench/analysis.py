"""Benchmark: the game analysis (engine/analysis.py), CPU per game and per play, and its stability.

Plays ``--games`` two-player games to 21 (``cardgames``, whose target is 21) between Tito and
Carmen (seeded: every run judges the same logs), then judges every play of each game in this
one process, as the ``analysis`` job does (``judge`` at ``PLAYS_BUDGET``), and prints:

- CPU seconds per game and per judged play (``time.process_time``: one core), against the
  budget of 30 s of one core for a whole game (the ratio printed: under 1 is within it);
- the stability between two seeds: each game judged again with another seed (other deals),
  the mean and 95th percentile of the change of each play's loss, the change of each
  seat's accuracy, and how often the label and the best move agree;
- with ``--budgets``, the same for smaller budgets (the cost of halving the deals).

Left out: reading the log from Redis and writing each row back (a few ms a game), RQ's own
cost per slice (a job per second of work), and other machines: the CPU figures are this
machine's, which may be shared.

Run from the repository root: ``python bench/analysis.py [--games N] [--seed S] [--budgets 5000,10000]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine import analysis, decide, fold, view  # noqa: E402
from engine.bots import choose  # noqa: E402
from engine.bots.match import shuffled  # noqa: E402
from engine.state import State  # noqa: E402

GAME_BUDGET = 30.0  # seconds of one core for a whole two-player game to 21


def game(seed: str) -> list:
    """A Tito-against-Carmen game of cardgames (to 21), its log as engine events."""
    rng = random.Random(seed)
    log: list = []
    state = State()

    def apply(command: dict) -> None:
        nonlocal state
        events = decide(state, command)
        log.extend(events)
        state = fold(state, events)

    apply({"type": "open", "name": "bench", "preset": "cardgames", "player": "p0", "host_name": "A"})
    apply({"type": "sit", "player": "p1", "name": "B"})
    apply({"type": "start", "by": 0, "deck": shuffled(rng), "pick": rng.randrange(4)})
    bots = ("tito", "carmen")
    while state.status != "finished":
        if state.status == "round_over":
            apply({"type": "next_round", "by": 0, "deck": shuffled(rng)})
            continue
        seat = state.turn
        apply({**choose(bots[seat], view(state, seat), rng), "by": seat})
    return log


def judge_all(log: list, seed: str, budget: int) -> tuple[list[dict], float]:
    found = analysis.decisions(log)
    start = time.process_time()
    rows = [analysis.judge(d, seed, budget=budget).row() for d in found]
    return rows, time.process_time() - start


def accuracies(rows: list[dict]) -> dict[int, float]:
    return {s["seat"]: s["accuracy"] for s in analysis.report(rows, {r["seat"] for r in rows})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--seed", default="bench-analysis")
    parser.add_argument("--budgets", default=str(analysis.PLAYS_BUDGET),
                        help="simulated plays per judged play, comma-separated (default: %(default)s)")
    args = parser.parse_args()
    logs = [game(f"{args.seed}:{i}") for i in range(args.games)]
    print(f"{args.games} games of cardgames to 21, Tito against Carmen; "
          f"{sum(len(analysis.decisions(g)) for g in logs)} plays to judge")
    for budget in (int(b) for b in args.budgets.split(",")):
        seconds, plays, loss_moves, acc_moves, labels_same, best_same, labelled = [], 0, [], [], 0, 0, 0
        worst_game = 0.0
        for i, log in enumerate(logs):
            a, spent = judge_all(log, f"table-{i}", budget)
            b, _ = judge_all(log, f"other-{i}", budget)
            seconds.append(spent)
            worst_game = max(worst_game, spent)
            plays += len(a)
            for x, y in zip(a, b, strict=True):
                loss_moves.append(abs(x["loss"] - y["loss"]))
                labels_same += x["label"] == y["label"]
                best_same += x["best"] == y["best"]
                labelled += x["label"] is not None
            acc_a, acc_b = accuracies(a), accuracies(b)
            acc_moves += [abs(acc_a[s] - acc_b[s]) for s in acc_a]
        per_game = statistics.mean(seconds)
        print(f"\nbudget {budget} simulated plays a judged play (MIN_DEALS {analysis.MIN_DEALS}, "
              f"MAX_DEALS {analysis.MAX_DEALS}):")
        print(f"  CPU a game   {per_game:6.2f} s (worst {worst_game:.2f} s); "
              f"against the {GAME_BUDGET:.0f} s budget: {worst_game / GAME_BUDGET:.2f}")
        print(f"  CPU a play   {1000 * sum(seconds) / plays:6.1f} ms ({plays} plays)")
        print(f"  labelled     {labelled} plays ({100 * labelled / plays:.1f}%)")
        print("  between two seeds (other deals):")
        loss_moves.sort()
        print(f"    loss moved       mean {statistics.mean(loss_moves):.3f}, "
              f"p95 {loss_moves[int(0.95 * (len(loss_moves) - 1))]:.3f}, max {loss_moves[-1]:.3f} points")
        print(f"    accuracy moved   mean {statistics.mean(acc_moves):.2f}, max {max(acc_moves):.2f} (0..100)")
        print(f"    same label       {100 * labels_same / plays:.1f}% of plays; "
              f"same best move {100 * best_same / plays:.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
