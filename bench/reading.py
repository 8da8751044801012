"""How well Luna's reading names the others' hidden hands, under each model of people.

    python bench/reading.py [--positions N] [--seed S] [--model tito:0.8 --model softmax:0.3 ...]

For each opponent (Tito, Tito with a random play one time in five, Carmen, a greedy taker,
Luna), heads-up games are played against Tito on every preset; at Tito's turns where the
opponent has made plays this deal and still holds cards, every hand it could hold (every set
of its hand's size from the cards Tito cannot see) is weighed by each model
(``luna.hand_weight``), exactly, no sampling. The score is the log score of the real hand: the
log of its share of the weight, times the number of hands, so the blind reading (every hand
alike) scores 0 and a reading that puts more weight on the truth scores more; a model that
rules the truth out scores minus infinity there (counted apart: "ruled out"). It is the
reading alone, apart from the search it feeds: what it leaves out is what the search makes of
it, measured by bench/bots.py --field.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine import decide, fold, view  # noqa: E402
from engine.bots import choose, luna, people  # noqa: E402
from engine.bots.common import Reading  # noqa: E402
from engine.bots.match import table  # noqa: E402
from engine.bots.sim import INDEX  # noqa: E402

OPPONENTS = ("tito", "tito20", "carmen", "greedy", "luna")
PRESETS = ("selminha", "del15", "cardgames")
MODELS = ("tito:1", "tito:0.95", "tito:0.9", "tito:0.8", "tito:0.65", "tito:0.5", "tito:0.3",
          "softmax:0.1", "softmax:0.2", "softmax:0.3", "softmax:0.5", "softmax:1")


def positions(opponent: str, count: int, seed: str):
    """(Reading at Tito's turn, the opponent's seat, its real hand) from Tito-vs-opponent games."""
    found = 0
    g = 0
    while found < count:
        rng = random.Random(f"{seed}:{opponent}:{g}")
        preset = PRESETS[g % 3]
        lineup = ["tito", opponent] if g % 2 == 0 else [opponent, "tito"]
        s = table(preset, lineup, rng, first_dealer=g % 2)
        g += 1
        while s.status == "playing" and found < count:
            v = view(s, s.turn)
            if lineup[s.turn] == "tito":
                r = Reading(v)
                other = 1 - s.turn
                reads = luna.past_choices(r, luna._root(r)) if not r.fifteen_sets else {}
                if reads.get(other) and s.hands[other] and rng.random() < 0.5:
                    found += 1
                    yield r, other, [INDEX[c] for c in s.hands[other]], reads[other]
            command = dict(choose(lineup[s.turn], v, rng, budget_ms=5))
            command["by"] = s.turn
            s = fold(s, decide(s, command))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--positions", type=int, default=150, help="positions per opponent")
    parser.add_argument("--seed", default="reading")
    parser.add_argument("--model", action="append",
                        help="repeatable; default: a grid of both kinds; 'styles': Luna's styles fitted to "
                             "the opponent's plays this round (luna.styles_read), 'styles:T,G,A' fixed weights")
    parser.add_argument("--opponent", action="append", choices=OPPONENTS)
    args = parser.parse_args(argv)
    models = [(m, None if m == "styles" else people.parse(m)) for m in (args.model or MODELS)]
    print(f"== log score of the opponent's real hand (0: the blind reading; higher is better), "
          f"{args.positions} positions per opponent, seed {args.seed!r}")
    print("  " + " " * 14 + "".join(f"{m:>13}" for m, _ in models))
    for opponent in args.opponent or OPPONENTS:
        score = {m: 0.0 for m, _ in models}
        ruled = {m: 0 for m, _ in models}
        n = 0
        for r, _seat, truth, checks in positions(opponent, args.positions, args.seed):
            unseen = [INDEX[c] for c in r.unseen]
            hands = [list(h) for h in itertools.combinations(unseen, len(truth))]
            # the judged plays of every hand once; each model's chances are cheap from them
            judged = []
            for hand in hands:
                row = []
                for before, s, card, taken, since in checks:
                    before.hands[s] = hand + since
                    row.append(before.judge(s, card, taken))
                judged.append(row)
            real = next(i for i, h in enumerate(hands) if sorted(h) == sorted(truth))
            for name, model in models:
                if name == "styles":  # Luna's styles, fitted to this opponent's plays of the deals played out
                    fitted = people.Styles(tuple(luna.styles_read(r, luna._root(r))[_seat]), luna.STYLE_NOISE)
                    weights = [luna.hand_weight(hand, checks, fitted) for hand in hands]
                elif isinstance(model, people.Styles):
                    weights = [luna.hand_weight(hand, checks, model) for hand in hands]
                else:
                    weights = [math.prod(model.chance(sc, p) for sc, p in row) for row in judged]
                total = sum(weights)
                if weights[real] <= 0:
                    ruled[name] += 1
                    continue
                score[name] += math.log(weights[real] / total * len(hands))
            n += 1
        cells = []
        for name, _ in models:
            cell = f"{score[name] / n:+.3f}"
            if ruled[name]:
                cell = f"-inf({ruled[name]})"
            cells.append(f"{cell:>13}")
        print(f"  {opponent:>8} {n:4d}" + "".join(cells))
    print("  -inf(k): the model rules the real hand out in k positions (a log score of minus infinity)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
