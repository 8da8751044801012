"""Benchmark: loading a table's log, in events per second per core, the real path and the fold alone.

Plays several full two-player games to 21 with random legal moves (a seeded
``random.Random``, so every run folds the same logs), stores each event as the
log does (``records.to_record`` + ``records.dumps``: JSON text), then times in
this one process, per CPU second (i.e. per core):

- the real path: stored records decoded (events/decoding.py, msgspec) and
  folded, as ``TableService.load`` does (``fold_entries``); target 250,000;
- the strict decoder (marshmallow, ``records.from_record``, what the read path
  used before) + the fold: the baseline the decoding speed-up is measured against
  (target: the fast decoder at least 5 times faster);
- the fold alone of events already decoded (``engine.replay``), which flatters:
  printed for comparison.

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
from events import decoding  # noqa: E402
from events.records import dumps, from_record, loads, to_record  # noqa: E402
from events.service import fold_entries  # noqa: E402

# the same random legal player the engine's property tests use
from tests.engine.helpers import random_command, shuffled  # noqa: E402

TARGET = 250_000  # stored events decoded and folded per second per core
DECODE_TARGET = 5.0  # the fast decoder against the strict one


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


def _rate(work, per_pass: int, seconds: float) -> float:
    """Events per CPU second of ``work()`` (one pass over every log), measured for ``seconds``."""
    work()  # warm up
    passes = 0
    cpu_started = time.process_time()
    while True:
        work()
        passes += 1
        # measure for a set amount of CPU time, so a busy machine does not shorten the sample
        if time.process_time() - cpu_started >= seconds:
            break
    return passes * per_pass / (time.process_time() - cpu_started)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=30, help="games to generate (default 30)")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="CPU seconds per measurement (default 3)"
    )
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    presets = ("selminha", "del15", "cardgames")
    logs = [play_game(presets[i % len(presets)], rng) for i in range(args.games)]
    per_pass = sum(len(log) for log in logs)
    at = "2026-01-01T12:00:00.000Z"
    stored = [[(i + 1, dumps(to_record(e, version=i + 1, at=at, actor="seat:0")).encode())
               for i, e in enumerate(log)] for log in logs]
    finals = [replay(log) for log in logs]  # check the fold is deterministic, and both decoders agree
    assert all(fold_entries(State(), s) == f for s, f in zip(stored, finals, strict=True))
    assert all(from_record(loads(raw)) == decoding.decode(raw)[1] for s in stored for _, raw in s)

    def real():
        for entries in stored:
            fold_entries(State(), entries)

    def strict():
        for entries in stored:
            fold(State(), [from_record(loads(raw)) for _, raw in entries])

    def fast_decode_only():
        for entries in stored:
            decoding.decode_many(entries)

    def strict_decode_only():
        for entries in stored:
            [from_record(loads(raw)) for _, raw in entries]

    def fold_only():
        for log in logs:
            replay(log)

    rates = {name: _rate(work, per_pass, args.seconds) for name, work in (
        ("real", real), ("strict", strict), ("fast decode", fast_decode_only),
        ("strict decode", strict_decode_only), ("fold", fold_only))}
    print(
        f"games: {len(logs)} two-player games to 21 ({', '.join(PRESETS)}), "
        f"{per_pass} events, {per_pass / len(logs):.0f} events a game on average "
        f"(per core = per CPU second of this process; the machine may be shared)"
    )
    print(f"real path, stored records decoded (msgspec) + folded: {rates['real']:>12,.0f} events/s per core")
    print(f"before: strict decode (marshmallow) + fold:           {rates['strict']:>12,.0f} events/s per core")
    print(f"fold alone, events already decoded (flatters):        {rates['fold']:>12,.0f} events/s per core")
    speedup = rates["fast decode"] / rates["strict decode"]
    print(f"decoding alone: msgspec {rates['fast decode']:,.0f}/s, marshmallow {rates['strict decode']:,.0f}/s: "
          f"{speedup:.1f}x faster (target >= {DECODE_TARGET:g}x)")
    print(f"target: {TARGET:,} events/s per core on the real path; measured/target = "
          f"{rates['real'] / TARGET:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
