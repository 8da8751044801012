"""Luna's experiments: the switches bench/bots.py flips (``--luna NAME=VALUE``, ``--compare``), out of the product.

engine/bots/luna.py plays one way: the leaf weighs the race to the target, each drawn deal counts
by its importance weight, each opponent is read and played out in its fitted styles. The other
ways she was measured against (docs/bots.md) live here, so that they stay measurable without
switches in the product. Each switch's product value is in ``PRODUCT``; while every switch holds
it, ``install`` leaves Luna as she is, and her decisions are the product's by construction. Once a
switch differs, ``install`` puts this module's ``search``, ``leaf_value`` and ``Deals`` in
``engine.bots.luna`` (her ``choose`` looks them up there), and ``uninstall`` puts hers back.

The switches:

- ``INFER`` (0): inference from what opponents chose: a card left on the table (no capture) while
  some card value could have captured says the player held no card of that value (Tito-like
  players nearly always take); their deals are drawn from the other cards. Only without a reading
  (``READ_TRIES=0``).
- ``GAME_VALUE`` (1): the leaf weighs a round's points by the race to the game's target (0: the
  round's points less the best other side's).
- ``POINTS_WEIGHT`` (0.0): the round's point difference, added to the leaf with this weight (0: the
  race alone): a game nearly decided either way still prefers more points to fewer.
- ``WEIGH_DEALS`` (1): each drawn deal counts by its importance weight (0: only the choice among
  the tried hands follows the weights, and every deal counts the same).
- ``FIT_STYLES`` (1): each opponent plays her rollouts in a style drawn from its fitted mixture
  (0: everybody as Tito in the rollouts, the search before).
- ``READ_STYLES`` (1): the others' hands are read under the styles fitted to each
  (``people.Styles``), not ``luna.PEOPLE``.
- ``REJECT`` (0): the reading before people were modelled (hands drawn again until Tito's
  judgement agrees with every play, else the most agreeing of ``READ_TRIES``), kept to measure
  the new one against.

Luna's other constants (``MARGIN``, ``READ_TRIES``, ``STYLE_PRIOR``, ...) are still hers: this
module reads them from ``engine.bots.luna`` when it runs.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from engine.bots import luna
from engine.bots.common import Reading
from engine.bots.luna import Budget, PastChoice, Round
from engine.bots.people import Model, Styles
from engine.bots.sim import INDEX, TITO, VAL

PRODUCT: dict[str, float] = {"INFER": 0, "GAME_VALUE": 1, "POINTS_WEIGHT": 0.0, "WEIGH_DEALS": 1,
                             "FIT_STYLES": 1, "READ_STYLES": 1, "REJECT": 0}
INFER = 0
GAME_VALUE = 1
POINTS_WEIGHT = 0.0
WEIGH_DEALS = 1
FIT_STYLES = 1
READ_STYLES = 1
REJECT = 0

# Luna's own, as imported: what ``uninstall`` puts back
_HERS = {"search": luna.search, "leaf_value": luna.leaf_value, "Deals": luna.Deals}


def switches() -> dict[str, float]:
    """The switches as they are now."""
    return {name: globals()[name] for name in PRODUCT}


def install() -> None:
    """Luna as the switches say: hers while every switch has its product value, else this module's."""
    if switches() == PRODUCT:
        uninstall()
        return
    luna.search = search
    luna.leaf_value = leaf_value
    luna.Deals = Deals


def uninstall() -> None:
    for name, value in _HERS.items():
        setattr(luna, name, value)


def search(root: Round, r: Reading, moves: list[tuple[int, list[int]]], rng: random.Random,
           budget: Budget, max_iterations: int, stats: dict[str, Any] | None = None,
           prior: list[float] | None = None, people: Model | None = None) -> int:
    """``luna.search`` with ``WEIGH_DEALS``, ``FIT_STYLES`` and ``READ_STYLES`` (see there)."""
    prior = prior or [0.0] * len(moves)
    fitted = luna.styles_read(r, root) if FIT_STYLES or READ_STYLES else {}
    seats: dict[int, Model] | None = {seat: Styles(tuple(ws), luna.STYLE_NOISE) for seat, ws in fitted.items()} \
        if READ_STYLES else None
    deals = Deals(r, root, people, seats=seats)
    fitted = {seat: ws for seat, ws in fitted.items() if ws[TITO] < 1.0} if FIT_STYLES else {}
    leaf = leaf_value(r)
    stop = budget.over
    alive = list(range(len(moves)))
    totals = [0.0] * len(moves)
    results: list[list[float]] = [[] for _ in moves]
    weights: list[float] = []
    iterations = 0
    while iterations < max_iterations and len(alive) > 1 and not stop():
        deal, weight = deals.draw(rng)
        if weight <= 0.0:
            continue
        if not WEIGH_DEALS:
            weight = 1.0
        if fitted:  # one style per opponent for this deal, the same for every candidate
            styles: dict[int, int] = {}
            for seat, ws in fitted.items():
                for chances in deals.style_chances(seat, deal.hands[seat]):
                    ws = [w * c for w, c in zip(ws, chances, strict=True)]
                total = sum(ws)
                ws = [w / total for w in ws] if total > 0 else fitted[seat]
                at = rng.random()
                style = TITO
                while style < len(ws) - 1 and at >= ws[style]:
                    at -= ws[style]
                    style += 1
                if style != TITO:
                    styles[seat] = style
            deal.styles = styles or None
            deal.seed = rng.getrandbits(31)
        got = []
        for i in alive:
            sim = deal.copy()
            card, taken = moves[i]
            sim.pending = -1
            sim.play(r.me, card, taken)
            if not sim.rollout(999, stop, luna.CHECK_EVERY):
                break
            got.append(leaf(sim.points()))
        else:
            for i, v in zip(alive, got, strict=True):
                results[i].append(v)
                totals[i] += weight * v
            weights.append(weight)
            iterations += 1
            if iterations >= luna.MIN_ITERATIONS and iterations % 4 == 0:
                alive = luna._prune(alive, results, totals, iterations, weights)
            continue
        break
    ess = luna.effective_count(weights)
    if stats is not None:
        stats["iterations"] = iterations
        stats["alive"] = len(alive)
        stats["effective"] = ess
    if iterations == 0:
        return 0
    total = sum(weights)
    return max(alive, key=lambda i: (ess * totals[i] / total + luna.PRIOR_WEIGHT * prior[i], -i))


def leaf_value(r: Reading) -> Callable[[list[int]], float]:
    """``luna.leaf_value`` with ``GAME_VALUE`` and ``POINTS_WEIGHT``: without the game's value, the
    round's points less the best other side's."""
    mine = r.my_side
    others = [j for j in range(len(r.sides)) if j != mine]
    if not GAME_VALUE:
        return lambda points: points[mine] - max(points[j] for j in others)
    if not POINTS_WEIGHT:
        return _HERS["leaf_value"](r)  # type: ignore[no-any-return, operator]
    race_value = _HERS["leaf_value"](r)  # type: ignore[operator]

    def value(points: list[int]) -> float:
        return race_value(points) + POINTS_WEIGHT * (points[mine] - max(points[j] for j in others))

    return value


class Deals(luna.Deals):
    """``luna.Deals`` with ``INFER`` and ``REJECT``."""

    def __init__(self, r: Reading, root: Round | None = None, people: Model | None = None,
                 tries: int | None = None, seats: dict[int, Model] | None = None):
        super().__init__(r, root, people, tries, seats)
        self.lacks = inferred_lacks(r, self.root) if INFER and not self.reads else {}
        self.others.sort(key=lambda x: x[0] not in self.lacks)  # the constrained hands are drawn first

    def draw(self, rng: random.Random) -> tuple[Round, float]:
        if REJECT and self.reads:
            deal = self.root.copy()
            pool = list(self.unseen)
            rng.shuffle(pool)
            _deal_read(deal, pool, self.others, self.reads, rng)
            return deal, 1.0
        if self.lacks:
            deal = self.root.copy()
            pool = list(self.unseen)
            rng.shuffle(pool)
            _deal_inferred(deal, pool, self.others, self.lacks)
            return deal, 1.0
        return super().draw(rng)


def inferred_lacks(r: Reading, root: Round) -> dict[int, set[int]]:
    """Per opponent, the card values their hand is read not to hold, from this deal's plays.

    The history is walked back from the table as it is now, to see the table each play
    was made on; a play that took nothing, by an opponent, in the current deal (the cards
    they hold now were all dealt at its start), rules out every value that could have
    taken something from that table.
    """
    history = r.view["history"]
    per_deal = 3 * len(r.players)
    plays = sum(1 for h in history if h["kind"] == "play")
    first = plays - plays % per_deal  # the number of plays before this deal
    table = list(root.table)
    lacks: dict[int, set[int]] = {}
    count = plays
    for h in reversed(history):
        kind, card, taken = h["kind"], h["card"], [INDEX[c] for c in h["captured"]]
        if kind == "opening" or card is None:  # (only the opening has no card)
            break
        if kind == "fifteen":
            table += [*taken, INDEX[card]]
            continue
        count -= 1
        if taken:
            table += taken
        else:
            table.remove(INDEX[card])
            seat = h["seat"]
            if count >= first and seat != r.me and r.side_of[seat] != r.my_side:
                could = {v for v in range(1, 11) if root.sets_for(v - 1, table)}
                # leaving a card that could itself have taken is a choice not to take: no reading
                if could and VAL[INDEX[card]] not in could:
                    lacks.setdefault(seat, set()).update(could)
        if count < first:
            break
    return lacks


def _deal_inferred(deal: Round, pool: list[int], others: list[tuple[int, int]],
                   lacks: dict[int, set[int]]) -> None:
    """Deal ``pool`` (shuffled) so each constrained hand holds none of its ruled-out values, if it can."""
    rest = pool
    for seat, n in others:
        ruled = lacks.get(seat)
        if ruled:
            fits = [c for c in rest if VAL[c] not in ruled]
            if len(fits) >= n:
                hand = fits[:n]
                deal.hands[seat] = hand
                rest = [c for c in rest if c not in hand]
                continue
        deal.hands[seat] = rest[:n]
        rest = rest[n:]
    deal.stock = rest


def _agreed(hand: list[int], checks: list[PastChoice]) -> int:
    """How many of a seat's plays this deal Tito's judgement would make, had it held ``hand``."""
    n = 0
    for before, seat, card, taken, since in checks:
        before.hands[seat] = hand + since
        n += before.tito(seat, (card, taken))
    return n


def _deal_read(deal: Round, pool: list[int], others: list[tuple[int, int]], reads: dict[int, list[PastChoice]],
               rng: random.Random) -> None:
    """Deal ``pool`` (shuffled) so each hand agrees with the plays its seat made, as far as draws find one."""
    rest = pool
    for seat, n in others:
        checks = reads.get(seat)
        hand = rest[:n]
        if checks:
            best = -1
            for _ in range(luna.READ_TRIES):
                agree = _agreed(hand, checks)
                if agree > best:
                    best, chosen = agree, hand
                if agree == len(checks):
                    break
                hand = rng.sample(rest, n)
            hand = chosen
            held = set(hand)
            rest = [c for c in rest if c not in held]
        else:
            rest = rest[n:]
        deal.hands[seat] = hand
    deal.stock = rest
