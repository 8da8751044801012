"""Luna's simulator compiled by mypyc (setup.py) against its Python source: CPU for the same decisions.

    python bench/compiled.py [--games 6] [--budget-ms 60]
    python bench/compiled.py --against PATH    # this checkout's Luna against another checkout's, both installed

Two processes side by side (so the machine's load is the same for both): one imports
``engine.bots.sim`` and ``engine.bots.people`` as installed (the extensions the build
made), the other is made to load their ``.py`` source. Each plays the same games, Luna
against Carmen, the three presets in turn, Luna's budget counted in plays
(``--budget-ms`` at ``luna.PLAYS_PER_MS``, no clock, her chance seeded per decision), so
both make exactly the same decisions: the run checks that (a CRC of every command) and
prints the CPU each spent, and the ratio. Then each side plays the same positions with her
real budget (CPU time, as the workers give it) and prints how many deals a searched
decision got: what the speed buys her.

What it leaves out: the games differ once she has a clock (the deals are the ones her CPU
reaches), so the second figure compares the same positions' deal counts, not games;
her strength is bench/bots.py's (docs/bots.md); Tito, Carmen and the engine's own
moves run as Python on both sides.

``--against PATH``: the second side runs the checkout at ``PATH`` (a ``git worktree`` of an
earlier commit, its extensions built or copied in) instead of the source: a change to her
search measured the same way, the same decisions when it changes none (the CRC), and the deals a
decision gets with her budget.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPILED = ("engine.bots.sim", "engine.bots.people")


def one(side: str, games: int, budget_ms: float, root: Path = ROOT) -> dict:
    if side == "source":
        source_first()
    sys.path.insert(0, str(root))
    import gc
    import random
    import time
    import zlib

    import engine.bots.people as people
    import engine.bots.sim as sim
    from engine.bots import choose, luna
    from engine.bots.match import play_game

    gc.freeze()
    made: list[str] = []
    positions: list[tuple[dict, str]] = []

    def chooser(bot, view, rng):
        if bot != "luna":
            return choose(bot, view, rng)
        seed = f"{len(made)}"
        command = luna.choose(view, random.Random(seed), budget_ms=budget_ms)
        made.append(json.dumps(command, sort_keys=True))
        positions.append((view, seed))
        return command

    started = time.process_time()
    for g in range(games):
        play_game(("selminha", "del15", "cardgames")[g % 3], ["luna", "carmen"], random.Random(g), chooser=chooser)
    cpu = time.process_time() - started
    deals: list[int] = []
    for view, seed in positions[::3]:  # a third of them with the real clock: the deals a decision gets
        stats: dict = {}
        luna.choose(view, random.Random(seed), clock=time.process_time, stats=stats)
        if "iterations" in stats:
            deals.append(stats["iterations"])
    deals.sort()
    return {"side": side if root == ROOT else str(root), "files": [Path(m.__file__).name for m in (sim, people)],
            "cpu_s": cpu,
            "decisions": len(made), "crc": zlib.crc32("".join(made).encode()),
            "deals_mean": sum(deals) / max(1, len(deals)), "deals_p50": deals[len(deals) // 2] if deals else 0,
            "searched": len(deals)}


def source_first() -> None:
    """From now on, this process loads the compiled modules' .py source instead of their extensions
    (tests/engine/bots/test_compiled.py uses it too)."""
    import importlib.machinery
    import importlib.util

    class SourceFirst:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name not in COMPILED:
                return None
            source = str(Path(list(path)[0]) / (name.rsplit(".", 1)[1] + ".py"))
            return importlib.util.spec_from_file_location(
                name, source, loader=importlib.machinery.SourceFileLoader(name, source))

    sys.meta_path.insert(0, SourceFirst)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=6)
    parser.add_argument("--budget-ms", type=float, default=60.0)
    parser.add_argument("--against", type=Path, help="another checkout, run in place of the source")
    parser.add_argument("--one", choices=("installed", "source"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.games, args.budget_ms, args.against or ROOT)))
        return 0
    second = ["--one", "installed", "--against", str(args.against.resolve())] if args.against else ["--one", "source"]
    common = ["--games", str(args.games), "--budget-ms", str(args.budget_ms)]
    procs = {"installed": subprocess.Popen([sys.executable, __file__, "--one", "installed", *common],
                                           stdout=subprocess.PIPE, text=True),
             "source": subprocess.Popen([sys.executable, __file__, *second, *common], stdout=subprocess.PIPE,
                                        text=True)}
    got = {side: json.loads(p.communicate()[0]) for side, p in procs.items()}
    for r in got.values():
        print(f"{r['side']:>9} ({', '.join(r['files'])}): {r['decisions']} decisions in {r['cpu_s']:.2f} s CPU; "
              f"with her CPU budget, deals a searched decision: mean {r['deals_mean']:.1f}, p50 {r['deals_p50']} "
              f"({r['searched']} searched)")
    same = got["installed"]["crc"] == got["source"]["crc"]
    other = "the other checkout's" if args.against else "source"
    print(f"summary: the same decisions: {'yes' if same else 'NO'}; {other} CPU / installed CPU "
          f"{got['source']['cpu_s'] / got['installed']['cpu_s']:.2f}x; deals a decision with her budget "
          f"{got['installed']['deals_mean'] / max(1e-9, got['source']['deals_mean']):.2f}x")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
