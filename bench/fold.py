"""Benchmark: folding a table's log (``engine.replay``), in events per second per core.

Plays several full two-player games to 21 with random legal moves (a seeded
``random.Random``, so every run folds the same logs), then times
``engine.replay`` over them in this one process and prints the rate (events per
CPU second of the process, i.e. per core) against the target of 100,000.

Run from the repository root: ``python bench/fold.py [--games N] [--seconds S]``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from engine import PRESETS, State, decide, fold, replay  # noqa: E402

# the same random legal player the engine's property tests use
from tests.engine.helpers import random_command, shuffled  # noqa: E402

TARGET = 100_000  # events folded per second per core


def play_game(preset: str, rng: random.Random) -> list:
    """One whole two-player game to 21: every event from the table's opening."""
    commands = [
        {
            "type": "open",
            "name": "bench",
            "preset": preset,
            "settings": {"target": 21},
            "player": "p0",
            "host_name": "Ana",
        },
        {"type": "sit", "player": "p1", "name": "Bea"},
        {"type": "start", "by": 0, "deck": shuffled(rng), "pick": rng.randrange(2)},
    ]
    state, events = State(), []
    for command in commands:
        new = decide(state, command)
        state = fold(state, new)
        events += new
    while (command := random_command(state, rng)) is not None:
        new = decide(state, command)
        state = fold(state, new)
        events += new
    assert state.status == "finished", state.status
    return events


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=30, help="games to generate (default 30)")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="CPU seconds to spend folding (default 3)"
    )
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    presets = ("selminha", "del15", "cardgames")
    logs = [play_game(presets[i % len(presets)], rng) for i in range(args.games)]
    per_pass = sum(len(log) for log in logs)
    finals = [replay(log) for log in logs]  # warm up, and check the fold is deterministic
    assert all(replay(log) == final for log, final in zip(logs, finals, strict=True))

    passes = 0
    started = time.perf_counter()
    cpu_started = time.process_time()
    while True:
        for log in logs:
            replay(log)
        passes += 1
        # measure for a set amount of CPU time, so a busy machine does not shorten the sample
        if time.process_time() - cpu_started >= args.seconds:
            break
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    folded = passes * per_pass
    rate = folded / elapsed
    cpu_rate = folded / cpu if cpu > 0 else rate

    print(
        f"games: {len(logs)} two-player games to 21 ({', '.join(PRESETS)}), "
        f"{per_pass} events, {per_pass / len(logs):.0f} events a game on average"
    )
    print(f"folded: {folded} events in {elapsed:.2f} s wall, {cpu:.2f} s CPU ({passes} passes)")
    # Per core means per CPU second of this one process; the wall-clock rate is lower
    # whenever other processes share the cores, so it is printed for comparison only.
    print(f"rate: {cpu_rate:,.0f} events/s per core (per CPU second; wall clock: {rate:,.0f}/s)")
    print(f"target: {TARGET:,} events/s per core; measured/target = {cpu_rate / TARGET:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
