"""A tournament of the bots, heads-up, in duplicate format, through the engine itself.

    python bench/bots.py [--games N] [--preset P] [--pairing luna-tito[:N]] [--workers 2] [--out F.jsonl]
    python bench/bots.py --report F.jsonl      # the tables again, from the games saved so far
    python bench/bots.py --field [--field-games N] [--pairing luna-tito:N] ...   # against the field
    python bench/bots.py ... --plays-budget 60 [--compare 'NAME=VALUE ...'] ...  # the same games (tuning)

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

``--field``: opponents Luna's reading does not model (``FIELD``: Tito with a random play
one time in five, Carmen, a greedy taker of the most cards; ``engine.bots.sparring``).
Luna and Tito each play every one of them on the same decks (the decks depend on the
opponent, not on who faces it), and the report sets Luna's margin (points a round, hers
less the opponent's) beside Tito's, with the difference and its 95% interval paired over
the deck pairs, per preset and over all presets. The goal (issue 29) is a difference of at
least ``GOAL`` against each. What it leaves out: people (the field stands in for them),
tables of three and four, and other targets than each preset's own.

Luna is handed ``clock=time.process_time`` and ``wall_clock=time.monotonic``, as the
worker does. The machine may be loaded: CPU time is what her budget counts, and her
wall-time bound here (``--wall-ms``, 2 s) is wider than the worker's (5 budgets), so that
a starved bench process measures her strength at her CPU budget, not the machine's load.

``--plays-budget MS``, the same games: Luna gets no clock, so her budget is counted in simulated
plays (``MS`` at ``luna.PLAYS_PER_MS`` plays a ms, checked every ``luna.CHECK_EVERY``), and her
chance is a ``random.Random`` of its own for each of her decisions, seeded from (seed, preset,
pairing, game, her decision's number), the other bots keeping theirs. Her games then depend on
neither the machine's speed nor its load, and two settings of hers play the same game until
one of her choices differs. 60 gives her decisions that end at the budget about what her
CPU budget gives them on a 2-core AMD EPYC (a median of about 42 deals); the plays count leaves
out reading the hands, so her times in this mode are not her CPU's (the p99 is far above
100 ms): the CPU-clocked default is the measure of the goal, this the measure of a change.

``--compare 'NAME=VALUE [NAME=VALUE ...]'`` (repeatable, one variant each): every job with
Luna is played with main's settings (with ``--luna``'s, if any) and with each variant's, and
after each variant's tables the report sets them side by side: her margin (her points a round
less the opponent's) and her win rate with each, the variant's margin less main's with a 95%
interval paired over the deck pairs (``field_gap``), how many games were played move for move
alike, and against the field Luna less Tito with each. Meant with ``--plays-budget``: CPU-clocked,
the two play the same decks but not the same games, and the interval is the bench's noise.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import random
import sys
import time
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import pool_starmap  # noqa: E402
from engine.bots import choose  # noqa: E402
from engine.bots.match import play_game  # noqa: E402
from engine.cards import SEVEN_OF_COINS  # noqa: E402

PAIRINGS = (("luna", "tito"), ("tito", "carmen"), ("luna", "carmen"))
FIELD = ("tito20", "carmen", "greedy")
# Luna's margin over Tito's against each of the field, in points a round (issue 29)
GOAL = 0.3
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


class Job(NamedTuple):
    """One game: ``a`` against ``b`` (seats swapped in odd games) on the decks of pair ``g // 2``."""

    preset: str
    a: str
    b: str
    g: int
    seed: str
    budget: float | None  # Luna's CPU budget in ms (None: hers)
    wall_ms: float
    field: bool
    # same games: Luna's budget counted in simulated plays, this many ms at luna.PLAYS_PER_MS, no clock
    plays_budget: float | None = None
    # Luna's settings changed for this game alone (NAME=VALUE, as --luna): --compare's variants
    luna: tuple[str, ...] = ()


def _setting_home(name: str):
    """Where setting ``name`` lives: Luna's experiments' switches (bench/luna_experiments.py), else
    engine.bots.luna's constants."""
    from bench import luna_experiments
    from engine.bots import luna
    return luna_experiments if name in luna_experiments.PRODUCT else luna


def luna_setting(item: str) -> tuple[str, object]:
    """``NAME=VALUE`` as the name of one of engine.bots.luna's constants, or of her experiments'
    switches (bench/luna_experiments.py), and its new value."""
    from engine.bots import people
    name, _, text = item.partition("=")
    home = _setting_home(name)
    if not name.isupper() or not hasattr(home, name):
        raise ValueError(f"engine.bots.luna has no setting {name!r}")
    old = getattr(home, name)
    if name == "PEOPLE":
        return name, people.parse(text)
    if isinstance(old, tuple):  # e.g. STYLE_PRIOR=0.5,0.2,0.1,0.2
        return name, tuple(type(x)(t) for x, t in zip(old, text.split(","), strict=True))
    return name, type(old)(text)


def set_luna(items: tuple[str, ...] | list[str]) -> list[tuple[str, object]]:
    """Set engine.bots.luna's constants and her experiments' switches from ``items`` (NAME=VALUE);
    what they were before. A switch away from the product's value puts the experiments' search in
    Luna (``luna_experiments.install``)."""
    from bench import luna_experiments
    changes = [luna_setting(item) for item in items]
    saved = [(name, getattr(_setting_home(name), name)) for name, _ in changes]
    for name, value in changes:
        setattr(_setting_home(name), name, value)
    luna_experiments.install()
    return saved


@contextmanager
def luna_settings(items: tuple[str, ...] | list[str]):
    """engine.bots.luna with ``items`` set, and as it was again afterwards."""
    from bench import luna_experiments
    saved = set_luna(items)
    try:
        yield
    finally:
        for name, value in reversed(saved):
            setattr(_setting_home(name), name, value)
        luna_experiments.install()


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
    job = Job(*job)
    with luna_settings(job.luna):
        return _play(job)


def _play(job: Job) -> dict:
    preset, a, b, g, seed = job.preset, job.a, job.b, job.g, job.seed
    pair, swapped = divmod(g, 2)
    # against the field the decks depend on the opponent alone: Luna and Tito get the same ones
    decks = f"field:{b}" if job.field else f"{a}:{b}"
    deck_rng = random.Random(f"{seed}:{preset}:{decks}:pair{pair}")
    rng = random.Random(f"{seed}:{preset}:{a}:{b}:{g}:bots")
    bots = [b, a] if swapped else [a, b]
    first_dealer = pair % 2
    cpu: dict[str, list[float]] = {a: [], b: []}
    wall: dict[str, list[float]] = {a: [], b: []}
    sevens = {a: [0, 0], b: [0, 0]}
    diffs: list[int] = []
    trace = [0, 0]  # every command of the game (a CRC), and Luna's decisions so far

    def chooser(bot, view, r):
        w, t = time.monotonic(), time.process_time()
        if bot == "luna" and job.plays_budget is not None:
            # same games: no clock, and her own chance for each decision (the others keep theirs),
            # so two settings of hers play the same game until one of her choices differs
            mine = random.Random(f"{seed}:{preset}:{a}:{b}:{g}:luna:{trace[1]}")
            trace[1] += 1
            command = choose(bot, view, mine, budget_ms=job.plays_budget)
        elif bot == "luna":
            command = choose(bot, view, r, budget_ms=job.budget, clock=time.process_time,
                             wall_clock=time.monotonic, wall_ms=job.wall_ms)
        else:
            command = choose(bot, view, r)
        cpu[bot].append(round((time.process_time() - t) * 1000, 3))
        wall[bot].append(round((time.monotonic() - w) * 1000, 3))
        dumped, missed = seven_of_coins(view, command)
        sevens[bot][0] += dumped
        sevens[bot][1] += missed
        trace[0] = zlib.crc32(json.dumps(command, sort_keys=True).encode(), trace[0])
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
            "wall": wall, "sevens": sevens, "diffs": diffs, "field": job.field,
            "plays": job.plays_budget, "luna": " ".join(job.luna), "trace": trace[0]}


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


def field_gap(luna_rows: list[dict], tito_rows: list[dict], z: float = 1.96) -> tuple[float, float, float]:
    """Luna's per-round margin less Tito's against one opponent, on the same deck pairs, with a 95% interval.

    Each margin is a ratio estimate (a pair's point difference over its rounds); the
    interval linearises the difference pair by pair (the delta method), so the decks'
    luck, shared by both, cancels. Pairs only one of them finished are left out.
    """
    def by_pair(rows):
        pairs: dict = {}
        for r in rows:
            d, n = pairs.get(r["pair"], (0, 0))
            pairs[r["pair"]] = (d + sum(r["diffs"]), n + len(r["diffs"]))
        return pairs

    lp, tp = by_pair(luna_rows), by_pair(tito_rows)
    common = sorted(set(lp) & set(tp), key=str)
    nl = sum(lp[k][1] for k in common)
    nt = sum(tp[k][1] for k in common)
    if len(common) < 2 or not nl or not nt:
        return (float("nan"),) * 3
    el = sum(lp[k][0] for k in common) / nl
    et = sum(tp[k][0] for k in common) / nt
    resid = [(lp[k][0] - el * lp[k][1]) / nl - (tp[k][0] - et * tp[k][1]) / nt for k in common]
    k = len(common)
    se = math.sqrt(k / (k - 1) * sum(e * e for e in resid))
    est = el - et
    return est, est - z * se, est + z * se


def report_field(results: list[dict], presets: list[str]) -> None:
    rows = [r for r in results if r.get("field")]
    opponents = [x for x in FIELD if any(r["b"] == x for r in rows)]
    if not opponents:
        return
    print(f"== the field (same decks for Luna and Tito): margin in points a round, on the deck pairs both played; "
          f"goal Luna >= Tito {GOAL:+.2f} (met: the point estimate, see the interval)")
    for preset in [*presets, "all"]:
        for x in opponents:
            mine = [r for r in rows if r["b"] == x and preset in ("all", r["preset"])]
            if preset == "all":  # pairs of different presets are different decks
                mine = [{**r, "pair": (r["preset"], r["pair"])} for r in mine]
            # only the deck pairs both played whole (a run cut short has more of Tito's)
            both = {r["pair"] for r in mine if r["a"] == "luna"} & {r["pair"] for r in mine if r["a"] == "tito"}
            luna_rows = [r for r in mine if r["a"] == "luna" and r["pair"] in both]
            tito_rows = [r for r in mine if r["a"] == "tito" and r["pair"] in both]
            lm, llo, lhi = per_round(luna_rows)
            tm, tlo, thi = per_round(tito_rows)
            gap, glo, ghi = field_gap(luna_rows, tito_rows)
            met = "n/a" if math.isnan(gap) else "met" if gap >= GOAL else "NOT met"
            print(f"  {preset:>9} vs {x:<6} {len(luna_rows):4d}+{len(tito_rows):<4d} games  "
                  f"Luna {lm:+.2f} [{llo:+.2f}..{lhi:+.2f}]  Tito {tm:+.2f} [{tlo:+.2f}..{thi:+.2f}]  "
                  f"Luna-Tito {gap:+.2f} [95% {glo:+.2f}..{ghi:+.2f}]  {met}")


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
    parser.add_argument("--field", action="store_true",
                        help=f"Luna and Tito each against {', '.join(FIELD)} on the same decks "
                             "(with --pairing, those pairings too)")
    parser.add_argument("--field-games", type=int, default=None,
                        help="games per opponent, preset and player of the field (default --games)")
    parser.add_argument("--opponent", action="append", choices=FIELD,
                        help="with --field: only these opponents (repeatable)")
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
                        help="set one of engine.bots.luna's constants for this run (tuning), e.g. PRIOR_WEIGHT=8, "
                             "PEOPLE=tito:0.8 (or softmax:0.3; see engine.bots.people.parse) or "
                             "STYLE_PRIOR=0.5,0.2,0.1,0.2")
    parser.add_argument("--plays-budget", type=float, default=None, metavar="MS",
                        help="same games: Luna's budget counted in simulated plays (MS at luna.PLAYS_PER_MS), with "
                             "no clock, and her chance seeded apart for each decision, so her games do not depend on "
                             "the machine's speed or load (60 gives her about what her CPU budget does on a 2-core "
                             "AMD EPYC); her times are then not her CPU's")
    parser.add_argument("--compare", action="append", default=[], metavar="'NAME=VALUE [NAME=VALUE ...]'",
                        help="repeatable: Luna with these settings changed (one variant each, over main's or "
                             "--luna's) plays the same jobs as Luna with main's; prints her margin with each and "
                             "the paired difference. Meant with --plays-budget")
    args = parser.parse_args(argv)
    variants = [tuple(text.split()) for text in args.compare]
    try:
        for item in [*args.luna, *(x for v in variants for x in v)]:
            luna_setting(item)
    except ValueError as e:
        parser.error(str(e))
    set_luna(args.luna)  # before the pool forks, so every worker has it
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
            games.setdefault((r["preset"], r["a"], r["b"], r.get("luna", ""), r["pair"]), []).append(r)
        whole = [r for pair in games.values() if len(pair) == 2 for r in pair]
        presets = [p for p in PRESETS if any(r["preset"] == p for r in whole)]
        specs = sorted({(r["a"], r["b"], 0, bool(r.get("field"))) for r in whole},
                       key=lambda x: (x[3], PAIRINGS.index(x[:2]) if x[:2] in PAIRINGS else 9, x[1], x[0]))
        print(f"== from {', '.join(args.report)}: {len(whole)} games in whole pairs ({len(rows)} saved)")
        report_all(whole, presets, specs)
        return 0
    presets = args.preset or list(PRESETS)
    specs = [(*parse_pairing(p, args.games), False) for p in args.pairing] if args.pairing else (
        [] if args.field else [(a, b, args.games + args.games % 2, False) for a, b in PAIRINGS])
    if args.field:
        n = args.field_games if args.field_games is not None else args.games
        specs += [(a, x, n + n % 2, True) for x in (args.opponent or FIELD) for a in ("luna", "tito")]
    jobs = [Job(preset, a, b, g, args.seed, args.budget, args.wall_ms, field, args.plays_budget, variant)
            for a, b, n, field in specs for preset in presets for g in range(n)
            for variant in ([(), *variants] if "luna" in (a, b) else [()])]
    # the quick games (no Luna) first, then Luna's pair by pair across the presets and pairings:
    # a run cut short (see --out, --report) still has whole pairs of every preset (and variant)
    jobs.sort(key=lambda j: ("luna" in j[1:3], j[3] // 2, j[0]))
    started = time.time()
    if args.plays_budget is not None:
        from engine.bots import luna
        budget = (f"counted in plays ({args.plays_budget:g} ms at {luna.PLAYS_PER_MS} plays a ms, no clock: "
                  f"the same games whatever the machine)")
    else:
        budget = (f"{args.budget if args.budget is not None else 'default'} ms CPU "
                  f"(wall bound {args.wall_ms:.0f} ms)")
    print(f"== {len(jobs)} games on {args.workers} workers, Luna's budget {budget}, seed {args.seed!r}"
          + "".join(f"; and Luna with {' '.join(v)}" for v in variants), flush=True)
    # as the worker does before its first job (workers/jobloop.settle_heap): the games' processes
    # fork from here and inherit it
    gc.freeze()
    results = pool_starmap(one_game, [(job, args.out) for job in jobs], args.workers, unordered=True)
    report_all(results, presets, specs)
    print(f"== {len(jobs)} games in {time.time() - started:.0f} s")
    return 0


def report_all(results: list[dict], presets: list[str], specs: list[tuple]) -> None:
    """The tables; with --compare's variants, once for each (the games without Luna in all), then set side by side."""
    variants = sorted({r.get("luna", "") for r in results if "luna" in (r["a"], r["b"])})  # main's ("") first
    if len(variants) <= 1:
        report(results, presets, specs)
        return
    for v in variants:
        label = v or "main's settings"
        print(f"==== Luna with {label}")
        report([r for r in results if r.get("luna", "") == v or "luna" not in (r["a"], r["b"])], presets, specs)
    for v in variants[1:]:
        report_compare(results, presets, v)


def report_compare(results: list[dict], presets: list[str], variant: str) -> None:
    """Luna's margin with main's settings and with ``variant``, on the same jobs, and the paired difference.

    Her margin is her points a round less her opponent's (a ratio estimate over each group's
    rounds); "changed-main" is the variant's margin less main's with its 95% interval over the
    deck pairs both played whole (``field_gap``); "same" counts the games played move for
    move alike. Against the field, Luna less Tito with each is on Tito's same decks.
    """
    plays = {r.get("plays") for r in results if r.get("luna") == variant}
    how = ("same games (her budget counted in plays)" if plays != {None}
           else "same decks (CPU-clocked: not the same games)")
    print(f"== {how}: Luna with {variant!r} against main's settings; her margin in points a round, "
          f"changed-main paired over deck pairs")
    opponents = sorted({(r["b"], bool(r.get("field"))) for r in results if r["a"] == "luna"},
                       key=lambda x: (not x[1], x[0]))
    for b, field in opponents:
        for preset in [*presets, "all"]:
            def rows(a, v, b=b, field=field, preset=preset):
                mine = [r for r in results if r["a"] == a and r["b"] == b and bool(r.get("field")) == field
                        and r.get("luna", "") == v and preset in ("all", r["preset"])]
                return {(r["preset"], r["pair"], r["g"]): r for r in mine}
            main, changed, tito = rows("luna", ""), rows("luna", variant), rows("tito", "") if field else {}
            # deck pairs both played whole
            whole = [{k[:2] for k in x} - {k[:2] for k in x if (k[0], k[1], k[2] ^ 1) not in x}
                     for x in (main, changed)]
            both = whole[0] & whole[1]
            if not both:
                continue

            def on(x, both=both):
                # pairs keyed by (preset, pair): pairs of different presets are different decks
                return [{**r, "pair": k[:2]} for k, r in sorted(x.items(), key=str) if k[:2] in both]

            m, c = on(main), on(changed)
            same = sum(r["diffs"] == main[k]["diffs"] and r.get("trace") == main[k].get("trace")
                       for k, r in changed.items() if k[:2] in both)
            line = f"  {preset:>9} vs {b:<6}{' (field decks)' if field else ''} {len(m):4d}+{len(c):<4d} games"
            for name, x in (("main", m), ("changed", c)):
                est, lo, hi = per_round(x)
                wins = sum(r["result"] == "win" for r in x)
                wlo, whi = wilson(wins, len(x))
                line += (f"  {name} {est:+.2f} [{lo:+.2f}..{hi:+.2f}] win {wins / len(x):.1%} "
                         f"[{wlo:.1%}..{whi:.1%}]")
            gap, glo, ghi = field_gap(c, m)
            print(f"{line}\n{'':13}changed-main {gap:+.3f} [95% {glo:+.3f}..{ghi:+.3f}]  same games {same}/{len(c)}"
                  + _tito_gaps(m, c, on(tito) if tito else []))


def _tito_gaps(main: list[dict], changed: list[dict], tito: list[dict]) -> str:
    """Luna less Tito on the same decks, with main's settings and with the variant (the goal's measure)."""
    pairs = {r["pair"] for r in tito}
    if not pairs:
        return ""
    gaps = [field_gap([r for r in x if r["pair"] in pairs], tito) for x in (main, changed)]
    return "  Luna-Tito: " + ", ".join(f"{name} {g:+.2f} [{lo:+.2f}..{hi:+.2f}]"
                                       for name, (g, lo, hi) in zip(("main", "changed"), gaps, strict=True))


def report(results: list[dict], presets: list[str], specs: list[tuple]) -> None:
    cpu: dict[str, list[float]] = {}
    wall: dict[str, list[float]] = {}
    for preset in presets:
        print(f"== {preset}")
        for a, b, _, field in specs:
            rows = [r for r in results if r["preset"] == preset and r["a"] == a and r["b"] == b
                    and bool(r.get("field")) == field]
            n = len(rows)
            wins = sum(r["result"] == "win" for r in rows)
            draws = sum(r["result"] == "draw" for r in rows)
            losses = n - wins - draws
            lo, hi = wilson(wins, n)
            est, elo, ehi = per_round(rows)
            rounds = sum(len(r["diffs"]) for r in rows)
            where = " (field decks)" if field else ""
            print(f"  {a:>6} vs {b:<6}{where} {n:4d} games ({n // 2} pairs, {rounds} rounds)  "
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
    report_field(results, presets)
    print("== decision time (ms): CPU (process_time) p50 p99 max; wall p99 max")
    for bot, ts in sorted(cpu.items()):
        ws = wall[bot]
        print(f"  {bot:>6}: n {len(ts):6d}  CPU p50 {pct(ts, 0.5):7.2f}  p99 {pct(ts, 0.99):7.2f}  "
              f"max {max(ts):7.2f}   wall p99 {pct(ws, 0.99):7.2f}  max {max(ws):7.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
