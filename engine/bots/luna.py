"""Luna, the strongest: determinized search to the end of the round.

She sees only her seat's view. Each iteration deals the cards unseen from
her seat (the forty, less her hand, the table and every card in this round's
history) into the other hands (by their counts) and the stock, and weighs the
deal by how likely the others' plays since the hands were dealt were, had they
held the hands it gives them (``Deals``, ``hand_weight``): what a player chose
to take, or to leave, says what they hold. How likely is a model of people
(``PEOPLE``, ``engine.bots.people``): Tito's choice with probability ``p``, any
legal play otherwise, so that a player who is not Tito is read too and no hand
is ever ruled out (the reading before, ``people.TITO``, redrew a hand until
every play was Tito's: against Carmen it ruled out the real hand more often
than not; ``bench/reading.py``). ``READ_TRIES`` hands are drawn for each seat,
one kept by weight, and the deal carries their mean weight (importance
weights, not rejection). Then, in that same deal, every candidate move is
played and the round is played out to its end with a fast Tito-like policy for her side
(``engine.bots.sim``), and for each opponent in the style its plays this round show: a
mixture of four generic styles (Tito's, the greedy taker of the most cards, any legal play,
the taker of any capture;
``styles_read``, from the plays of the deals already played out, whose hands are known), one
style drawn per deal and opponent, the current deal's plays weighing it with the hand the deal
gives. The hands are read under that fitted mixture as well (``people.Styles``) instead of
``PEOPLE``. The leaf is what the round really scores, counted as
``engine.scoring`` counts it (escobas, cards, coins, the 7 of coins, sevens or
the setenta, the bonuses) on the piles at the round's end, the cards left on
the table included (they go to whoever captured last), weighed by the game:
her side's chance to win the race to the target once the round is scored,
against the other side furthest ahead (``engine.bots.race``), in round points
of the game as it stands (``leaf_value``). Teams share a pile and a score; at
a four-player table without teams each player is a side.

Every candidate is scored on the same deals (paired samples), so a move that
falls clearly behind is dropped and the others get more deals; the search ends
as soon as one move is left. Means and spreads are weighted by the deals'
weights, and count the deals' effective number (``effective_count``).

Her budget is CPU time, read from the ``clock`` the caller passes in (the
engine reads no clock itself): it is checked before every rollout and every
few plays inside one (``CHECK_EVERY``), so a decision ends within a few plays
of the budget. ``wall_clock``, if passed, bounds the wall time as well
(``wall_ms``, by default ``WALL_FACTOR`` times the budget: a starved process still
answers). With no
clock at all the budget is counted in simulated plays (``PLAYS_PER_MS``), so
the search is deterministic for a given ``rng``. An iteration cut short is
dropped for every candidate, to keep the samples paired.

A 15 left behind is always taken (the set chosen as Tito would).

How well she plays (against Tito and the field, duplicate games by bench/bots.py) and her
decision CPU are measured figures: docs/bots.md and docs/benchmarks.md.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from itertools import combinations
from math import comb
from typing import Any

from ..cards import SEVEN_OF_COINS as SEVEN
from ..view import View
from . import race, tito
from .common import Move, Reading, card_worth
from .people import Model, Styles, TitoOrAny, style_chances
from .sim import ANY, INDEX, TITO, VAL, Round, worth_table

# one of a seat's plays this deal, as past_choices finds it: (the round just before it, its hand
# left empty; the seat; the card; the set it took; the cards that seat has played since)
PastChoice = tuple[Round, int, int, frozenset[int], list[int]]
# one of a seat's plays of a deal played out (known_choices): the round before it, its hand filled in
KnownChoice = tuple[Round, int, int, frozenset[int]]
# deals for judging a seat's moves, with their weights, and whether they are every deal (sampler)
Sampler = Callable[[Reading, Round, random.Random, int], tuple[list[tuple[Round, float]], bool]]

BUDGET_MS = 100.0
# the share of the budget the search may use; the rest is room for choosing and returning, and
# for the odd slow decision (a collection of the garbage, a deal drawn past the last check). Set
# from the decisions' CPU p99 and max in bench/bots.py runs, as high as keeps every decision within
# the budget (raised once the simulator's caches left the collector little to walk: docs/bots.md)
MARGIN = 0.92
MAX_ITERATIONS = 600
MIN_ITERATIONS = 12
CANDIDATES = 4
CHECK_EVERY = 3
# the wall-time bound, in budgets, when the caller passes a wall clock but no bound of its own:
# a process starved of CPU (a loaded server) still answers within half a second
WALL_FACTOR = 5.0
# the budget's size in simulated plays when no clock is passed (about this machine's speed with the
# simulator as Python; compiled, as installed, she plays about twice as many a ms: bench/compiled.py).
# Kept at 40 so that runs of bench/bots.py --plays-budget stay comparable with the earlier ones
PLAYS_PER_MS = 40
# a move is dropped when it trails the leader by this many paired standard errors
PRUNE_Z = 2.5
# Tito's judgement of each move counts as this many deals (in round points, relative to his
# best): the search's deals are noisy (a paired difference has a spread of about 2.7
# points), so with few deals she stays near Tito, and the deals take over as they add up
PRIOR_WEIGHT = 8.0
# a side's points in a round's first part, about: where a point's worth is read for the scale
ROUND_SHARE = 2
# the least a point is taken to be worth in win chance (a game nearly decided either way)
SLOPE_MIN = 0.02
# reading what the others chose this deal, with the simulator's policy (Tito's judgement,
# theirs in the rollouts too), judged by PEOPLE: this many hands drawn per seat and deal, one
# kept by its weight (0: no reading). The reading wins her more points and games than none
# (bench/bots.py: docs/bots.md).
READ_TRIES = 12
# how the others are taken to choose (engine.bots.people), for reading their hands: not
# certainly Tito, so that a player who is not (a person, Carmen, a greedy bot) is read too.
# p from bench/reading.py: the log score of the real hand, summed over Tito, tito20, Carmen,
# greedy and Luna, is best around 0.6 (1.0 rules the truth out too often: docs/bots.md)
PEOPLE: Model = TitoOrAny(0.6)
# how each opponent plays in her rollouts, and how its hand is read: a mixture of generic styles
# (sim.TITO, the careful club player; sim.GRAB, the greedy taker of the most cards; sim.ANY, any legal
# play; sim.TAKE, any capture there is, else any card), its weights updated from the plays of this
# round whose hand is known (the deals already played out: ``styles_read``); each deal's rollouts
# draw one style per opponent from them. The other ways she was measured against (every deal
# alike, everybody as Tito, the leaf without the race, the old readings) are bench/luna_experiments.py's.
# the styles' weights before any play is seen, in sim.TITO, GRAB, ANY, TAKE order (ANY and TAKE
# share what ANY had alone before the taker)
STYLE_PRIOR = (0.6, 0.2, 0.1, 0.1)
# each style's own choice is taken to be made with 1 - STYLE_NOISE, any legal play otherwise
# (no play rules a style out)
STYLE_NOISE = 0.1


class Budget:
    """When the search must stop: CPU budget, wall budget, or a count of simulated plays."""

    def __init__(self, budget_ms: float, clock: Callable[[], float] | None,
                 wall_clock: Callable[[], float] | None, wall_ms: float | None = None):
        seconds = budget_ms / 1000.0
        wall = seconds * WALL_FACTOR if wall_ms is None else wall_ms / 1000.0
        self.clock = clock
        self.wall_clock = wall_clock
        self.cpu_end = clock() + seconds * MARGIN if clock is not None else None
        self.wall_end = wall_clock() + wall if wall_clock is not None else None
        # without a clock: this many checks (each about CHECK_EVERY plays)
        self.checks_left = None if (clock or wall_clock) else max(1, int(budget_ms * PLAYS_PER_MS / CHECK_EVERY))
        self.spent = False

    def over(self) -> bool:
        if self.spent:
            return True
        if self.checks_left is not None:
            self.checks_left -= 1
            self.spent = self.checks_left < 0
        else:
            # (an end is None exactly when its clock is)
            cpu_over = self.clock is not None and self.cpu_end is not None and self.clock() >= self.cpu_end
            self.spent = cpu_over or (self.wall_clock is not None and self.wall_end is not None
                                      and self.wall_clock() >= self.wall_end)
        return self.spent


def choose(
    view: View,
    rng: random.Random,
    budget_ms: float | None = None,
    *,
    clock: Callable[[], float] | None = None,
    wall_clock: Callable[[], float] | None = None,
    wall_ms: float | None = None,
    max_iterations: int | None = None,
    candidates: int | None = None,
    stats: dict[str, Any] | None = None,
    people: Model | None = None,
) -> Move:
    """Luna's command for her seat.

    ``clock``: CPU seconds (``time.process_time``), read for ``budget_ms``; ``wall_clock``:
    seconds (``time.monotonic``), read for ``wall_ms`` (default ``WALL_FACTOR`` budgets).
    ``people``: how the others are taken to choose (``engine.bots.people``; ``PEOPLE`` if None).
    """
    budget = Budget(BUDGET_MS if budget_ms is None else budget_ms, clock, wall_clock, wall_ms)
    max_iterations = MAX_ITERATIONS if max_iterations is None else max_iterations
    candidates = CANDIDATES if candidates is None else candidates
    r = Reading(view)
    if r.fifteen_sets:  # a 15 left behind is always worth taking: Tito picks the set
        return tito.choose(view, rng)
    moves = seven_of_coins_first(r.moves())
    if len(moves) == 1:
        return moves[0]
    worth = card_worth(r.settings)
    # Tito's order: the first candidates to keep, and the fallback when nothing was searched
    judged = [tito.evaluate(r, worth, m) for m in moves]
    ranked = sorted(range(len(moves)), key=lambda i: -judged[i])[:candidates]
    moves = [moves[i] for i in ranked]
    prior = [judged[i] - judged[ranked[0]] for i in ranked]
    root = _root(r)
    if root is None:  # the view does not add up (never expected): fall back on Tito
        return moves[0]
    best = search(root, r, [_as_ints(m) for m in moves], rng, budget, max_iterations, stats, prior, people)
    return moves[best]


def search(root: Round, r: Reading, moves: list[tuple[int, list[int]]], rng: random.Random,
           budget: Budget, max_iterations: int, stats: dict[str, Any] | None = None,
           prior: list[float] | None = None, people: Model | None = None) -> int:
    """The index of the best of ``moves`` (``moves[0]`` when no deal was finished in time).

    ``prior``: a judgement of each move in round points, worth ``PRIOR_WEIGHT`` deals.
    ``people``: the model the others' hands are read by (``PEOPLE`` by default).

    Each deal comes with its importance weight (``Deals.draw``); a move's value is its
    weighted mean over the deals, and the prior counts against the deals' effective number.
    A deal of weight 0 (only under ``people.TITO``: no hand found that explains the plays)
    is not played out. Each opponent plays its rollouts in a style drawn for the deal (the same
    for every candidate, so the samples stay paired), and its hand is read under its fitted
    ``people.Styles`` (``styles_read``).
    """
    prior = prior or [0.0] * len(moves)
    fitted = styles_read(r, root)
    seats: dict[int, Model] = {seat: Styles(tuple(ws), STYLE_NOISE) for seat, ws in fitted.items()}
    deals = Deals(r, root, people, seats=seats)
    fitted = {seat: ws for seat, ws in fitted.items() if ws[TITO] < 1.0}
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
        if fitted:  # one style per opponent for this deal, the same for every candidate
            styles: dict[int, int] = {}
            for seat, ws in fitted.items():
                # this deal's plays too, with the hand the deal gives the seat
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
            sim.pending = -1  # not taken: the chance is gone once she plays
            sim.play(r.me, card, taken)
            if not sim.rollout(999, stop, CHECK_EVERY):
                break
            got.append(leaf(sim.points()))
        else:
            for i, v in zip(alive, got, strict=True):
                results[i].append(v)
                totals[i] += weight * v
            weights.append(weight)
            iterations += 1
            if iterations >= MIN_ITERATIONS and iterations % 4 == 0:
                alive = _prune(alive, results, totals, iterations, weights)
            continue
        break
    ess = effective_count(weights)
    if stats is not None:
        stats["iterations"] = iterations
        stats["alive"] = len(alive)
        stats["effective"] = ess
    if iterations == 0:
        return 0
    # the best weighted mean over the deals every live move was scored on, with the prior's
    # pseudo-deals against the deals' effective number; ties go to Tito's order
    total = sum(weights)
    return max(alive, key=lambda i: (ess * totals[i] / total + PRIOR_WEIGHT * prior[i], -i))


def effective_count(weights: list[float]) -> float:
    """Kish's effective number of deals: as many equally weighted deals would tell as much."""
    square = sum(w * w for w in weights)
    return sum(weights) ** 2 / square if square > 0 else 0.0


def leaf_value(r: Reading) -> Callable[[list[int]], float]:
    """The leaf: a round's points per side, as her side's gain in the game, in round points.

    The chance to win the game once the round is scored (``race``: against the other side
    furthest ahead then), over what one round point is worth in that chance about the end of
    this round, so that early in a game it is the round's point difference and the prior and
    the pruning keep their scale; near the target a point that wins or saves the game counts
    for more, a point past need for less.
    """
    mine = r.my_side
    others = [j for j in range(len(r.sides)) if j != mine]
    target = r.settings.target
    scores = r.scores
    a, b = scores[mine], max(scores[j] for j in others)
    c = ROUND_SHARE
    slope = max(SLOPE_MIN, (race.chance(a + c + 1, b + c, target) - race.chance(a + c, b + c + 1, target)) / 2)
    seen: dict[tuple[int, ...], float] = {}

    def value(points: list[int]) -> float:
        key = tuple(points)
        v = seen.get(key)
        if v is None:
            other = max(scores[j] + points[j] for j in others)
            v = race.chance(a + points[mine], other, target) / slope
            seen[key] = v
        return v

    return value


def _prune(alive: list[int], results: list[list[float]], totals: list[float], n: int,
           weights: list[float] | None = None) -> list[int]:
    """Drop the moves behind the leader by more than ``PRUNE_Z`` paired standard errors.

    Every live move has been scored on all ``n`` deals (a move is only ever
    dropped, never added), so the lists line up. With ``weights`` (one a deal, ``totals``
    then weighted sums) the mean and spread are weighted and the error counts the deals'
    effective number; equal weights give the plain paired test.
    """
    ws = weights[-n:] if weights is not None else [1.0] * n
    total = sum(ws)
    ess = effective_count(ws)
    lead = max(alive, key=lambda i: totals[i])
    best = results[lead][-n:]
    keep = []
    for i in alive:
        if i == lead:
            keep.append(i)
            continue
        diffs = [a - b for a, b in zip(best, results[i][-n:], strict=True)]
        mean = sum(w * d for w, d in zip(ws, diffs, strict=True)) / total
        spread = sum(w * (d - mean) ** 2 for w, d in zip(ws, diffs, strict=True)) / total
        if ess <= 1.0:
            keep.append(i)
            continue
        var = spread * ess / (ess - 1)
        if mean <= PRUNE_Z * (var / ess) ** 0.5 + 1e-9:
            keep.append(i)
    return keep


def _plays_back(r: Reading, root: Round, *, whole_round: bool
                ) -> Iterator[tuple[int, int, int, list[int], list[int], list[int], dict[int, list[int]]]]:
    """The round's plays walked back from now, newest first, each undone as it is yielded:
    ``(count, seat, card, taken, table, public, since)``, with ``count`` the plays before it,
    ``table`` and ``public`` (the cards of each value in sight) as they stood just before it,
    and ``since`` per seat the cards it played from then to the end of that deal, this one
    included. Only the current deal's plays unless ``whole_round``. The lists are the walk's
    own: a caller keeps a copy."""
    per_deal = 3 * len(r.players)
    plays = sum(1 for h in r.view["history"] if h["kind"] == "play")
    first = plays - plays % per_deal
    table = list(root.table)
    public = list(root.public)
    since: dict[int, list[int]] = {s: [] for s in r.players}
    count = plays
    for h in reversed(r.view["history"]):
        played = h["card"]
        if h["kind"] == "opening" or played is None or (not whole_round and count <= first):  # (the opening: no card)
            break
        card, taken = INDEX[played], [INDEX[c] for c in h["captured"]]
        if h["kind"] == "fifteen":
            table += [*taken, card]
            continue
        if count % per_deal == 0:  # walking back into the deal before: its hands were all played
            since = {s: [] for s in r.players}
        count -= 1
        seat = h["seat"]
        if taken:
            table += taken
        else:
            table.remove(card)
        public[VAL[card]] -= 1
        since[seat].append(card)
        yield count, seat, card, taken, table, public, since


def past_choices(r: Reading, root: Round) -> dict[int, list[PastChoice]]:
    """Per other seat, each of its plays in the current deal, as the round stood before it.

    A play is (the round just before it, its hand left empty; the card; the set it took; the
    cards that seat has played since, this one included: its hand then was what it holds now
    and those). Walked back from the round now (``_plays_back``). Earlier deals
    tell nothing: the hands they dealt have been played, in sight.
    """
    found: dict[int, list[PastChoice]] = {}
    for _, seat, card, taken, table, public, since in _plays_back(r, root, whole_round=False):
        if seat != r.me:
            before = root.copy()
            before.table = list(table)
            before.public = list(public)
            before.stock = [0] * r.stock_count
            before.hands = {s: [0] * (r.hand_count[s] + len(since[s])) for s in r.players}
            found.setdefault(seat, []).append((before, seat, card, frozenset(taken), list(since[seat])))
    return found


def known_choices(r: Reading, root: Round) -> dict[int, list[KnownChoice]]:
    """Per opponent, each of its plays this round whose hand is known: those of the deals played out.

    A play is (the round just before it, the seat's hand then filled in: the cards it played
    from then to the end of that deal; the seat; the card; the set it took). The plays of the
    current deal are left out: their hands are still partly hidden.
    """
    per_deal = 3 * len(r.players)
    plays = sum(1 for h in r.view["history"] if h["kind"] == "play")
    first = plays - plays % per_deal
    found: dict[int, list[KnownChoice]] = {}
    for count, seat, card, taken, table, public, since in _plays_back(r, root, whole_round=True):
        if count < first and r.side_of[seat] != r.my_side:
            before = root.copy()
            before.table = list(table)
            before.public = list(public)
            # the stock then: what is left now, and every deal dealt since that play's
            before.stock = [0] * (r.stock_count + (first // per_deal - count // per_deal) * per_deal)
            before.hands = {s: [0] * len(since[s]) for s in r.players}
            before.hands[seat] = list(since[seat])
            found.setdefault(seat, []).append((before, seat, card, frozenset(taken)))
    return found


def styles_read(r: Reading, root: Round) -> dict[int, list[float]]:
    """Per opponent, the weight of each generic style (sim.TITO, GRAB, ANY, TAKE) given its known plays this round.

    Bayes from ``STYLE_PRIOR``: each style's chance of a play is ``1 - STYLE_NOISE`` shared
    among its own best plays, and ``STYLE_NOISE`` spread over every legal play (ANY: 1 / the
    number of legal plays). Only public plays, with hands shown by their own later plays.
    """
    found: dict[int, list[float]] = {}
    known = known_choices(r, root)
    for seat in r.players:
        if r.side_of[seat] == r.my_side:
            continue
        ws = list(STYLE_PRIOR)
        for before, s, card, taken in known.get(seat, []):
            chances = style_chances(before, s, card, taken, STYLE_NOISE)
            if not chances[ANY]:
                continue
            ws = [w * c for w, c in zip(ws, chances, strict=True)]
            total = sum(ws)
            ws = [x / total for x in ws]
        found[seat] = ws
    return found


def hand_weight(hand: list[int], checks: list[PastChoice], people: Model) -> float:
    """The chance, under ``people``, that a seat holding ``hand`` made its plays of this deal.

    ``checks``: the seat's plays (``past_choices``). The product of ``people.chance`` over
    them, each judged on the round as it stood before that play, the seat then holding
    ``hand`` and the cards it has played since. Under ``people.TITO`` it is 0 exactly when one
    of those plays is not the one Tito's judgement makes holding that hand.
    """
    weight = 1.0
    for before, seat, card, taken, since in checks:
        before.hands[seat] = hand + since
        weight *= people.chance_of(before, seat, card, taken)
        if weight <= 0.0:
            return 0.0
    return weight


class Deals:
    """Guesses at the cards a seat cannot see, each with its importance weight.

    From a seat's ``Reading`` (its view at its turn): the unseen cards (the forty, less its
    hand, the table and every card in this round's history) go into the other hands (by their
    counts) and the stock. A guess is weighed by how likely the others' plays of this deal
    were, had they held the hands it gives them, under ``people`` (``engine.bots.people``):

    - ``weight(deal)``: a deal's own weight (its hands' ``hand_weight``s), 0 for a deal the
      seat's view rules out (a card it has seen, a card twice or missing, a wrong count);
    - ``draw(rng)``: a deal and its weight, drawn so that few are wasted: for each seat whose
      plays say something, ``tries`` hands are drawn from the cards left, one is kept with a
      chance in proportion to its weight, and the deal's weight is multiplied by their mean
      weight (sampling-importance-resampling: the weighted deals stand for the deals as
      ``people`` would have them, without rejecting any).

    ``seats``: a model of its own for some seats (Luna's search passes each opponent's fitted
    ``people.Styles``); the others are read under ``people``.

    A hand's weight and its plays' chances under each style are computed once a decision, kept
    by seat and cards (``hand_weight``, ``style_chances``): a seat's few unseen cards make few
    hands, drawn again and again (the same decisions for less CPU: ``bench/compiled.py --against``).

    Weighted means over drawn deals (``sum(w * value) / sum(w)``) are the estimates; the only
    chance is ``rng``, so a given rng gives the same deals and weights.
    """

    def __init__(self, r: Reading, root: Round | None = None, people: Model | None = None,
                 tries: int | None = None, seats: dict[int, Model] | None = None):
        root = _root(r) if root is None else root
        if root is None:
            raise ValueError("the view's counts of unseen cards do not add up")
        self.r = r
        self.root = root
        self.people = PEOPLE if people is None else people
        # a model of its own for some seats (Luna's styles fitted to each opponent)
        self.models = {seat: seats.get(seat, self.people) for seat in r.players} if seats else {}
        self.tries = READ_TRIES if tries is None else tries
        self.unseen = [INDEX[c] for c in r.unseen]
        self.others = [(s, r.hand_count[s]) for s in r.players if s != r.me]
        self.reads = past_choices(r, root) if self.tries else {}
        # a hand's weight and its plays' chances under each style, by seat and the hand's cards: the
        # same few cards are drawn again and again (a seat holding two of 25 unseen cards has 300
        # hands; a decision draws thousands), and each is worth a Tito judgement a play. A hand's
        # order changes neither (the judgement reads it as a set), so the key is sorted
        self._weights: dict[tuple[int, ...], float] = {}
        self._chances: dict[tuple[int, ...], list[tuple[float, float, float, float]]] = {}

    def draw(self, rng: random.Random) -> tuple[Round, float]:
        deal = self.root.copy()
        pool = list(self.unseen)
        rng.shuffle(pool)
        weight = 1.0
        rest = pool
        for seat, n in self.others:
            checks = self.reads.get(seat)
            if not checks:
                deal.hands[seat] = rest[:n]
                rest = rest[n:]
                continue
            hands = [rest[:n]] + [rng.sample(rest, n) for _ in range(self.tries - 1)]
            ws = [self.hand_weight(seat, h, checks) for h in hands]
            total = sum(ws)
            if total <= 0.0:
                weight = 0.0
                hand = hands[0]
            else:
                at = rng.random() * total
                k = 0
                while k < len(hands) - 1 and at >= ws[k]:
                    at -= ws[k]
                    k += 1
                while ws[k] <= 0.0:  # rounding at the end of the walk never picks a weightless hand
                    k -= 1
                hand = hands[k]
                weight *= total / len(hands)
            held = set(hand)
            rest = [c for c in rest if c not in held]
            deal.hands[seat] = hand
        deal.stock = rest
        return deal, weight

    def hand_weight(self, seat: int, hand: list[int], checks: list[PastChoice]) -> float:
        """``hand_weight`` of ``seat`` holding ``hand`` under its model, computed once a hand."""
        key = (seat, *sorted(hand))
        weight = self._weights.get(key)
        if weight is None:
            weight = self._weights[key] = hand_weight(hand, checks, self.models.get(seat, self.people))
        return weight

    def style_chances(self, seat: int, hand: list[int]) -> list[tuple[float, float, float, float]]:
        """Per play of ``seat`` this deal (``reads``), its chance under each style (``people.style_chances``)
        had the seat held ``hand``, computed once a hand."""
        key = (seat, *sorted(hand))
        chances = self._chances.get(key)
        if chances is None:
            chances = []
            for before, s, card, taken, since in self.reads.get(seat, ()):
                before.hands[s] = hand + since
                chances.append(style_chances(before, s, card, taken, STYLE_NOISE))
            self._chances[key] = chances
        return chances

    def every(self, limit: int) -> list[tuple[Round, float]] | None:
        """Every deal of the unseen cards with its weight, when the stock is empty and there are at most ``limit``.

        None otherwise (too many, or a stock still to come: draw instead). The weights are
        each deal's own (``weight``), so weighted means over the list are exact.
        """
        if self.r.stock_count:
            return None
        total, left = 1, len(self.unseen)
        for _, n in self.others:
            total *= comb(left, n)
            left -= n
        if total > limit:
            return None
        ways: list[tuple[dict[int, list[int]], list[int]]] = [({}, list(self.unseen))]
        for seat, n in self.others:
            ways = [({**hands, seat: list(hand)}, [c for c in rest if c not in hand])
                    for hands, rest in ways for hand in combinations(rest, n)]
        found = []
        for hands, _ in ways:
            deal = self.root.copy()
            deal.hands.update(hands)
            deal.stock = []
            found.append((deal, self.weight(deal)))
        return found

    def weight(self, deal: Round) -> float:
        """How likely the others' plays were with the hands ``deal`` gives them; 0 if the view rules it out."""
        root = self.root
        if deal.hands.get(self.r.me) != root.hands[self.r.me] or deal.table != root.table:
            return 0.0
        hidden: list[int] = list(deal.stock)
        for seat, n in self.others:
            hand = deal.hands.get(seat, [])
            if len(hand) != n:
                return 0.0
            hidden += hand
        if sorted(hidden) != sorted(self.unseen):
            return 0.0
        weight = 1.0
        for seat, _ in self.others:
            checks = self.reads.get(seat)
            if checks:
                weight *= self.hand_weight(seat, list(deal.hands[seat]), checks)
        return weight


def sampler(people: Model | None = None, tries: int | None = None) -> Sampler:
    """Deals for judging a seat's moves (``engine.analysis``'s ``Sampler``), read under ``people``.

    ``sample(r, root, rng, n) -> (deals, exact)``: every deal with its weight when the stock
    is empty and there are at most ``n`` (``exact`` True), else ``n`` drawn deals with their
    importance weights (``Deals.draw``). Weighted means over them are the estimates. Should
    every weight be 0 (only under ``people.TITO``, against a player who is not Tito) the deals
    count alike: the blind reading, rather than nothing.
    """

    def sample(r: Reading, root: Round, rng: random.Random, n: int) -> tuple[list[tuple[Round, float]], bool]:
        deals = Deals(r, root, people, tries)
        every = deals.every(n)
        if every is not None and any(w > 0 for _, w in every):
            return every, True
        drawn = [deals.draw(rng) for _ in range(n)]
        if not any(w > 0 for _, w in drawn):
            drawn = [(deal, 1.0) for deal, _ in drawn]
        return drawn, False

    return sample


def seven_of_coins_first(moves: list[Move]) -> list[Move]:
    """The moves a strong player weighs where the 7 of coins is at stake.

    When a move takes the 7 of coins (played with a capture, or taken off the table),
    only such moves are kept: its point is certain now, and holding it risks having to
    lay it later. Laying the 7 of coins on the table is kept only when every move does.
    (Searched freely, in short duplicate runs of bench/bots.py she held it or laid it as
    bait several times as often as Tito: a round point at risk, judged on few, noisy deals.)
    """
    plays = [m for m in moves if m["type"] == "play"]
    takes = [m for m in plays if m["capture"] and (m["card"] == SEVEN or SEVEN in m["capture"])]
    if takes:
        return takes
    keeps = [m for m in moves if not (m["type"] == "play" and m["card"] == SEVEN and not m["capture"])]
    return keeps or moves


def _as_ints(move: Move) -> tuple[int, list[int]]:
    return INDEX[move["card"]], [INDEX[c] for c in move["capture"]]


def _root(r: Reading) -> Round | None:
    players = r.players
    nxt = {s: r.next_seat(s) for s in players}
    side_of = dict(r.side_of)
    sim = Round(r.settings, worth_table(card_worth(r.settings)), _deal_order(r), side_of, nxt)
    others_cards = sum(n for s, n in r.hand_count.items() if s != r.me)
    if others_cards + r.stock_count != len(r.unseen):
        return None
    sim.hands = {s: [] for s in players}
    sim.hands[r.me] = [INDEX[c] for c in r.hand]
    sim.table = [INDEX[c] for c in r.table]
    sim.piles = [[INDEX[c] for c in p] for p in r.piles]
    sim.escobas = list(r.escobas)
    for c in [*r.table, *(x for p in r.piles for x in p)]:
        sim.public[VAL[INDEX[c]]] += 1
    sim.gain = [0.0] * len(r.sides)
    sim.last = r.last_capturer if r.last_capturer is not None else -1
    sim.turn = r.me
    fifteen = r.view.get("fifteen_to_take")
    sim.pending = INDEX[fifteen["card"]] if fifteen else -1
    return sim


def _deal_order(r: Reading) -> list[int]:
    dealer = r.view.get("dealer")
    players = r.players
    if dealer not in players:
        return list(players)
    i = players.index(dealer)
    return players[i + 1 :] + players[: i + 1]
