"""A tournament of the bots, heads-up, in duplicate format, through the engine itself.

    python bench/bots.py [--games N] [--preset P] [--pairing luna-tito[:N]] [--workers 2] [--out F.jsonl]
    python bench/bots.py --report F.jsonl      # the tables again, from the games saved so far

Duplicate format: games come in pairs on the same decks, round by round (a deck
generator of their own, apart from the bots' chance), with the seats swapped
and the same first dealer's seat, so each bot plays the other's cards once.
For each preset and pairing it prints:

- wins, draws and losses of the first bot, with a 95% Wilson interval of its win rate;
- the per-round point difference (first bot less second), with a 95% interval over
  the duplicate pairs (a ratio estimate: a pair's total difference over its rounds);
- per bot and per 100 games: 7-of-coins dumps by choice (the 7o laid on the table
  when another move was legal) and missed 7-of-coins captures (a legal move would
  have taken the 7o, the chosen one did not);
- decision CPU time per bot (``time.process_time`` around each call, p50, p99, max),
  and the wall-time maximum.

Luna is handed ``clock=time.process_time`` and ``wall_clock=time.monotonic``, as the
worker does. The machine may be loaded: CPU time is what her budget counts, and her
wall-time bound here (``--wall-ms``, 2 s) is wider than the worker's (5 budgets), so that
a starved bench process measures her strength at her CPU budget, not the machine's load.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import pool_starmap  # noqa: E402
from engine.bots import choose  # noqa: E402
from engine.bots.match import play_game  # noqa: E402
from engine.cards import SEVEN_OF_COINS  # noqa: E402

PAIRINGS = (("luna", "tito"), ("tito", "carmen"), ("luna", "carmen"))
PRESETS = ("selminha", "del15", "cardgames")
MAX_ROUNDS = 40
SEVEN = SEVEN_OF_COINS


def legal_moves(view: dict) -> list[dict]:
    """Every command the view offers (TAKE THE 15 sets, then each card's captures or leaving it)."""
    moves = []
    fifteen = view.get("fifteen_to_take")
    if fifteen:
        moves += [{"type": "take_fifteen", "cards": list(s)} for s in fifteen["sets"]]
    for opt in view["options"]:
        moves += [{"type": "play", "card": opt["card"], "capture": list(s)} for s in opt["captures"]]
        if opt["may_leave"]:
            moves.append({"type": "play", "card": opt["card"], "capture": []})
    return moves


def takes_seven(move: dict) -> bool:
    if move["type"] == "take_fifteen":
        return SEVEN in move["cards"]
    return bool(move["capture"]) and (move["card"] == SEVEN or SEVEN in move["capture"])


def dumps_seven(move: dict) -> bool:
    return move["type"] == "play" and move["card"] == SEVEN and not move["capture"]


def seven_of_coins(view: dict, command: dict) -> tuple[int, int]:
    """(dumped by choice, missed a capture) for one decision."""
    moves = legal_moves(view)
    dumped = dumps_seven(command) and any(not dumps_seven(m) for m in moves)
    missed = any(takes_seven(m) for m in moves) and not takes_seven(command)
    return int(dumped), int(missed)


def one_game(job: tuple, out: str | None = None) -> dict:
    result = _one_game(job)
    if out:  # one line per game, in one write() under O_APPEND: the workers' lines never interleave
        fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(result) + "\n").encode())
        finally:
            os.close(fd)
    return result


def _one_game(job: tuple) -> dict:
    preset, a, b, g, seed, budget, wall_ms = job
    pair, swapped = divmod(g, 2)
    deck_rng = random.Random(f"{seed}:{preset}:{a}:{b}:pair{pair}")
    rng = random.Random(f"{seed}:{preset}:{a}:{b}:{g}:bots")
    bots = [b, a] if swapped else [a, b]
    first_dealer = pair % 2
    cpu: dict[str, list[float]] = {a: [], b: []}
    wall: dict[str, list[float]] = {a: [], b: []}
    sevens = {a: [0, 0], b: [0, 0]}
    diffs: list[int] = []

    def chooser(bot, view, r):
        w, t = time.monotonic(), time.process_time()
        if bot == "luna":
            command = choose(bot, view, r, budget_ms=budget, clock=time.process_time, wall_clock=time.monotonic,
                             wall_ms=wall_ms)
        else:
            command = choose(bot, view, r)
        cpu[bot].append(round((time.process_time() - t) * 1000, 3))
        wall[bot].append(round((time.monotonic() - w) * 1000, 3))
        dumped, missed = seven_of_coins(view, command)
        sevens[bot][0] += dumped
        sevens[bot][1] += missed
        return command

    def on_round(s):
        if s.last_round:
            points = {bots[side[0]]: tally["round_points"] for side, tally in zip(s.sides, s.last_round, strict=True)}
            diffs.append(points[a] - points[b])

    s = play_game(preset, bots, rng, first_dealer=first_dealer, max_rounds=MAX_ROUNDS,
                  chooser=chooser, on_round=on_round, deck_rng=deck_rng)
    winners = {bots[seat] for seat in (s.winners or ())}
    result = "draw" if s.status != "finished" or len(winners) != 1 else ("win" if a in winners else "loss")
    return {"preset": preset, "a": a, "b": b, "g": g, "pair": pair, "result": result, "cpu": cpu,
            "wall": wall, "sevens": sevens, "diffs": diffs}


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def per_round(rows: list[dict], z: float = 1.96) -> tuple[float, float, float]:
    """The mean per-round difference and its 95% interval, the duplicate pair as the unit."""
    pairs: dict[int, list[int]] = {}
    for r in rows:
        pairs.setdefault(r["pair"], []).extend(r["diffs"])
    d = [sum(x) for x in pairs.values()]
    n = [len(x) for x in pairs.values()]
    if not d or sum(n) == 0:
        return (float("nan"),) * 3
    est = sum(d) / sum(n)
    k = len(d)
    if k < 2:
        return est, float("nan"), float("nan")
    resid = [di - est * ni for di, ni in zip(d, n, strict=True)]
    se = math.sqrt(k / (k - 1) * sum(e * e for e in resid)) / sum(n)
    return est, est - z * se, est + z * se


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def parse_pairing(text: str, games: int) -> tuple[str, str, int]:
    names, _, count = text.partition(":")
    a, _, b = names.partition("-")
    n = int(count) if count else games
    return a, b, n + n % 2  # whole duplicate pairs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=100, help="games per pairing and preset (even: pairs)")
    parser.add_argument("--preset", choices=PRESETS, action="append", help="repeatable; default: all")
    parser.add_argument("--pairing", action="append",
                        help="e.g. luna-tito or luna-tito:200 (games); repeatable; default: all three")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", default="bench")
    parser.add_argument("--budget", type=float, default=None, help="Luna's budget in CPU ms (default hers)")
    parser.add_argument("--wall-ms", type=float, default=2000.0,
                        help="Luna's wall-time bound (default 2000: on a loaded machine the bench measures her "
                             "strength at her CPU budget; the worker keeps her own, 5 budgets)")
    parser.add_argument("--out", help="append each finished game here (JSON lines), to report on a run cut short")
    parser.add_argument("--report", action="append",
                        help="print the tables from --out files (repeatable: runs on other seeds) and stop; "
                             "whole pairs only")
    parser.add_argument("--luna", action="append", default=[], metavar="NAME=VALUE",
                        help="set one of engine.bots.luna's constants for this run (tuning), e.g. PRIOR_WEIGHT=8")
    args = parser.parse_args(argv)
    from engine.bots import luna
    for item in args.luna:  # set before the pool forks, so every worker has it
        name, _, val = item.partition("=")
        if not hasattr(luna, name):
            parser.error(f"engine.bots.luna has no {name}")
        setattr(luna, name, type(getattr(luna, name))(val))
    if args.luna:
        print(f"== Luna's settings changed: {', '.join(args.luna)}")
    if args.report:
        rows = []
        for k, path in enumerate(args.report):
            with open(path) as f:
                for line in f:
                    if line.strip():
                        r = json.loads(line)
                        r["pair"] = (k, r["pair"])  # pairs of different runs are different decks
                        rows.append(r)
        games: dict = {}
        for r in rows:
            games.setdefault((r["preset"], r["a"], r["b"], r["pair"]), []).append(r)
        whole = [r for pair in games.values() if len(pair) == 2 for r in pair]
        presets = [p for p in PRESETS if any(r["preset"] == p for r in whole)]
        specs = sorted({(r["a"], r["b"], 0) for r in whole}, key=lambda x: PAIRINGS.index(x[:2])
                       if x[:2] in PAIRINGS else 9)
        print(f"== from {', '.join(args.report)}: {len(whole)} games in whole pairs ({len(rows)} saved)")
        report(whole, presets, specs)
        return 0
    presets = args.preset or list(PRESETS)
    specs = [parse_pairing(p, args.games) for p in args.pairing] if args.pairing else [
        (a, b, args.games + args.games % 2) for a, b in PAIRINGS]
    jobs = [(preset, a, b, g, args.seed, args.budget, args.wall_ms)
            for a, b, n in specs for preset in presets for g in range(n)]
    # the quick games (no Luna) first, then Luna's pair by pair across the presets and pairings:
    # a run cut short (see --out, --report) still has whole pairs of every preset
    jobs.sort(key=lambda j: ("luna" in j[1:3], j[3] // 2, j[0]))
    started = time.time()
    print(f"== {len(jobs)} games on {args.workers} workers, Luna's budget "
          f"{args.budget if args.budget is not None else 'default'} ms CPU (wall bound {args.wall_ms:.0f} ms), "
          f"seed {args.seed!r}", flush=True)
    results = pool_starmap(one_game, [(job, args.out) for job in jobs], args.workers, unordered=True)
    report(results, presets, specs)
    print(f"== {len(jobs)} games in {time.time() - started:.0f} s")
    return 0


def report(results: list[dict], presets: list[str], specs: list[tuple]) -> None:
    cpu: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    for preset in presets:
        print(f"== {preset}")
        for a, b, _ in specs:
            rows = [r for r in results if r["preset"] == preset and r["a"] == a and r["b"] == b]
            n = len(rows)
            wins = sum(r["result"] == "win" for r in rows)
            draws = sum(r["result"] == "draw" for r in rows)
            losses = n - wins - draws
            lo, hi = wilson(wins, n)
            est, elo, ehi = per_round(rows)
            rounds = sum(len(r["diffs"]) for r in rows)
            print(f"  {a:>6} vs {b:<6} {n:4d} games ({n // 2} pairs, {rounds} rounds)  "
                  f"W {wins:4d} D {draws:3d} L {losses:4d}  win {wins / max(1, n):6.1%} [95% {lo:5.1%}..{hi:5.1%}]  "
                  f"points/round {a}-{b} {est:+.2f} [95% {elo:+.2f}..{ehi:+.2f}]")
            for bot in (a, b):
                dumped = sum(r["sevens"][bot][0] for r in rows)
                missed = sum(r["sevens"][bot][1] for r in rows)
                print(f"      {bot:>6}: 7o dumped by choice {dumped:4d} ({100 * dumped / max(1, n):5.1f}/100 games)"
                      f"  7o capture missed {missed:4d} ({100 * missed / max(1, n):5.1f}/100 games)")
            for r in rows:
                for bot, ts in r["cpu"].items():
                    cpu.setdefault(bot, []).extend(ts)
                for bot, ts in r["wall"].items():
                    wall.setdefault(bot, []).extend(ts)
    print("== decision time (ms): CPU (process_time) p50 p99 max; wall p99 max")
    for bot, ts in sorted(cpu.items()):
        ws = wall[bot]
        print(f"  {bot:>6}: n {len(ts):6d}  CPU p50 {pct(ts, 0.5):7.2f}  p99 {pct(ts, 0.99):7.2f}  "
              f"max {max(ts):7.2f}   wall p99 {pct(ws, 0.99):7.2f}  max {max(ws):7.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
