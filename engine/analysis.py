"""Game analysis: what each play cost, judged only from what its player could see then.

For every ``play`` and ``take_fifteen`` of every seat in a table's last game
(``decisions``), ``judge`` values every legal alternative in expected round
points: its side's points in the round less the most any other side scores,
as ``engine.scoring`` counts them, averaged over deals of the cards that seat
had not seen. The seat's information set is its own view at that moment
(``engine.view``: its hand, the table, this round's history of plays and
captures, the counts of the others' hands and of the stock), read through
``Reading`` exactly as a bot reads it; the real hidden cards are never read.

Every alternative is scored on the same deals (common random numbers), so the
paired difference between two moves carries none of the deals' own spread.
The deals come from ``random.Random(f"{seed}:{version}")`` (the caller passes
the table id as ``seed``): a re-run gives the same answer, and two logs that
differ only in cards a seat never saw give that seat the same deals.

- ``reads_people`` (the default ``sampler``): Luna's reading of people
  (``engine.bots.luna.sampler`` under ``luna.PEOPLE``, docs/bots.md): each deal
  of the unseen cards is weighted by how likely the others' plays this round
  were had they held it, under a model that is not certainly Tito (Tito's
  choice with probability 0.6, any legal play otherwise), so a human is never
  assumed to play like a bot, and a play Tito would not make rules no hand
  out. Those plays are public: the weights use nothing the seat could not see.
  With the stock empty and few enough deals left, it lists them all (``exact``).
- ``deals_uniform``: every deal equally likely (the blind reading), kept for
  comparison and for tests that need the deals without any reading.
- After the judged move the round is played out by the simulator's Tito-like
  policy for every seat (``engine.bots.sim.Round.rollout``). When the deal is
  certain (nothing hidden: the others' cards are known by elimination) and
  there are two sides, the rest of the round is searched whole instead
  (``_minimax``): the value is then exact.
- ``loss`` = best value less the played one, its uncertainty the standard
  error of the paired difference over the deals (0 when exact). A label is
  given only when the loss reaches its threshold (``LABELS``, in round points)
  and exceeds ``Z`` standard errors.
- Accuracy per seat: Lichess's shape (a move's accuracy
  ``103.1668 * exp(-0.04354 * drop) - 3.1669`` of its drop in winning chance,
  the game's the mean of the arithmetic and harmonic means) with the drop read
  as ``PERCENT_PER_POINT`` per round point of loss, the loss less ``Z`` standard errors
  (not below 0); forced moves do not count.

Cost (``bench/analysis.py``): each decision gets ``PLAYS_BUDGET`` simulated
plays, shared out as deals between its alternatives, at least ``MIN_DEALS``
and at most ``MAX_DEALS`` deals.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from . import events as ev
from .bots import luna
from .bots.common import Move, Reading
from .bots.luna import Sampler, _root
from .bots.sim import INDEX, Round
from .state import State, evolve
from .view import view

# labels, worst first: a loss of at least this many round points (and more than Z standard errors)
LABELS = (("blunder", 0.9), ("mistake", 0.6), ("inaccuracy", 0.3))
# a loss is told apart from the sampling's noise when it exceeds this many standard errors
Z = 2.0
# per decision: simulated plays (about 40 a ms on one core), shared out as deals
PLAYS_BUDGET = 8000
MIN_DEALS = 16
MAX_DEALS = 400
# the whole rest of the round is searched when the deal is certain and at most this many plays remain
EXACT_PLAYS = 8
# Lichess's shape: a move's accuracy from its drop in winning chance, in percent
PERCENT_PER_POINT = 20.0



@dataclass(frozen=True)
class Decision:
    """One play or TAKE THE 15 of the log: the state just before it, and what was done."""

    version: int  # the log version of the CardPlayed or FifteenTaken
    round: int
    seat: int
    state: State = field(repr=False)
    played: Move


@dataclass(frozen=True)
class Judgement:
    version: int
    round: int
    seat: int
    moves: list[Move]
    values: list[float]  # expected round points (the seat's side less the best other side's)
    played: int  # index in moves
    best: int
    loss: float
    se: float  # the standard error of the paired difference best - played
    deals: int
    exact: bool

    @property
    def label(self) -> str | None:
        return label_for(self.loss, self.se)

    def row(self) -> dict[str, Any]:
        """The row as stored and as the contract shows it (``choices``, ``se`` kept for accuracy)."""
        return {"version": self.version, "round": self.round, "seat": self.seat,
                "played": self.moves[self.played], "best": self.moves[self.best],
                "loss": round(self.loss, 3), "label": self.label,
                "se": round(self.se, 3), "choices": len(self.moves), "exact": self.exact}


def label_for(loss: float, se: float) -> str | None:
    if loss <= Z * se + 1e-9:
        return None
    for name, at in LABELS:
        if loss >= at - 1e-9:
            return name
    return None


# --- the decisions of a log ------------------------------------------------------

def played_move(event: ev.CardPlayed | ev.FifteenTaken) -> Move:
    """A CardPlayed or FifteenTaken as the move of ``POST /moves`` that made it."""
    if isinstance(event, ev.FifteenTaken):
        return {"type": "take_fifteen", "cards": [event.card, *event.captured]}
    return {"type": "play", "card": event.card, "capture": list(event.captured)}


def decisions(events: Iterable[ev.Event]) -> list[Decision]:
    """Every play and TAKE THE 15 of the last game in ``events`` (the log in order, from version 1)."""
    state = State().copy()
    found: list[Decision] = []
    for event in events:
        if isinstance(event, ev.GameStarted):
            found = []
        if isinstance(event, ev.CardPlayed | ev.FifteenTaken):
            found.append(Decision(state.version + 1, state.round, event.seat, state.copy(), played_move(event)))
        evolve(state, event)
    return found


# --- the deals ------------------------------------------------------------------

def deals_uniform(r: Reading, root: Round, rng: random.Random, n: int) -> tuple[list[tuple[Round, float]], bool]:
    """``n`` deals of the cards ``r``'s seat has not seen, each equally likely; or, when the stock
    is empty and there are at most ``n`` of them, every deal once (True: the list is exact)."""
    unseen = [INDEX[c] for c in r.unseen]
    others = [(s, r.hand_count[s]) for s in r.players if s != r.me]
    if not r.stock_count:
        every = _every_deal(unseen, others, n)
        if every is not None:
            deals = []
            for hands in every:
                deal = root.copy()
                deal.hands.update(hands)
                deal.stock = []
                deals.append((deal, 1.0))
            return deals, True
    deals = []
    for _ in range(n):
        pool = list(unseen)
        rng.shuffle(pool)
        deal = root.copy()
        at = 0
        for seat, count in others:
            deal.hands[seat] = pool[at: at + count]
            at += count
        deal.stock = pool[at:]
        deals.append((deal, 1.0))
    return deals, False


# the analysis reads the others' hands as Luna does (see the module's docstring)
reads_people: Sampler = luna.sampler()


def _every_deal(cards: list[int], others: list[tuple[int, int]], limit: int) -> list[dict[int, list[int]]] | None:
    """Every way to give ``cards`` to the hands of ``others`` (sizes), or None when more than ``limit``."""
    total, left = 1, len(cards)
    for _, count in others:
        total *= math.comb(left, count)
        left -= count
    if total > limit:
        return None
    ways: list[dict[int, list[int]]] = [{}]
    rests = [cards]
    for seat, count in others:
        new_ways: list[dict[int, list[int]]] = []
        new_rests: list[list[int]] = []
        for hands, rest in zip(ways, rests, strict=True):
            for hand in combinations(rest, count):
                new_ways.append({**hands, seat: list(hand)})
                new_rests.append([c for c in rest if c not in hand])
        ways, rests = new_ways, new_rests
    return ways


# --- judging one decision ---------------------------------------------------------

def _key(move: Move) -> tuple[str, ...] | tuple[str, frozenset[str]] | tuple[str, str, frozenset[str]]:
    if move["type"] == "take_fifteen":
        return ("take_fifteen", frozenset(move["cards"]))
    return ("play", move["card"], frozenset(move["capture"]))


def _apply(sim: Round, me: int, move: Move) -> None:
    if move["type"] == "take_fifteen":
        sim.take_fifteen(me, [INDEX[c] for c in move["cards"] if INDEX[c] != sim.pending])
    else:
        sim.pending = -1  # not taken: the chance is gone once a card is played
        sim.play(me, INDEX[move["card"]], [INDEX[c] for c in move["capture"]])


def judge(decision: Decision, seed: str, *, sampler: Sampler | None = None,
          budget: int = PLAYS_BUDGET) -> Judgement:
    """Every legal move of ``decision``'s seat valued from its view (see the module's docstring)."""
    seat = decision.seat
    r = Reading(view(decision.state, seat))
    moves = r.moves()
    played_key = _key(decision.played)
    keys = [_key(m) for m in moves]
    if played_key not in keys:  # beyond the view's listed options (more_captures): judged as well
        moves.append(decision.played)
        keys.append(played_key)
    played = keys.index(played_key)
    if len(moves) == 1:
        return Judgement(decision.version, decision.round, seat, moves, [0.0], 0, 0, 0.0, 0.0, 0, True)
    root = _root(r)
    if root is None:
        raise ValueError(f"version {decision.version}: seat {seat}'s view does not add up")
    plays_left = r.plays_left()
    n = max(MIN_DEALS, min(MAX_DEALS, budget // max(1, len(moves) * plays_left)))
    rng = random.Random(f"{seed}:{decision.version}")
    deals, exact = (sampler or reads_people)(r, root, rng, n)
    mine = r.my_side
    others = [j for j in range(len(r.sides)) if j != mine]

    def leaf(points: list[int]) -> float:
        return points[mine] - max(points[j] for j in others)

    search = exact and len(deals) == 1 and len(r.sides) == 2 and plays_left <= EXACT_PLAYS
    results: list[list[float]] = []
    for move in moves:
        got = []
        for deal, _ in deals:
            sim = deal.copy()
            _apply(sim, r.me, move)
            if search:
                got.append(_minimax(sim, mine, leaf))
            else:
                sim.rollout()
                got.append(leaf(sim.points()))
        results.append(got)
    weights = [w for _, w in deals]
    total = sum(weights)
    values = [sum(w * v for w, v in zip(weights, got, strict=True)) / total for got in results]
    best = max(range(len(moves)), key=lambda i: values[i])
    if values[best] <= values[played] + 1e-9:  # the played move ties the best: it is the best
        best = played
    loss = max(0.0, values[best] - values[played])
    se = 0.0 if exact else _paired_se(results[best], results[played], weights)
    return Judgement(decision.version, decision.round, seat, moves, values, played, best, loss, se,
                     len(deals), exact)


def _paired_se(a: list[float], b: list[float], weights: list[float]) -> float:
    """The standard error of the weighted mean of ``a - b`` (the ratio estimator's, for weights)."""
    n = len(a)
    if n < 2:
        return 0.0
    total = sum(weights)
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    mean = sum(w * d for w, d in zip(weights, diffs, strict=True)) / total
    spread = sum((w * (d - mean)) ** 2 for w, d in zip(weights, diffs, strict=True))
    return math.sqrt(spread * n / (n - 1)) / total


def _minimax(sim: Round, mine: int, leaf: Callable[[list[int]], float]) -> float:
    """The round's value for side ``mine`` with every seat playing its best, the deal known."""
    if sim.over():
        return leaf(sim.points())
    seat = sim.turn
    ours = sim.side_of[seat] == mine
    best = -math.inf if ours else math.inf
    for child in _children(sim, seat):
        v = _minimax(child, mine, leaf)
        best = max(best, v) if ours else min(best, v)
    return best


def _children(sim: Round, seat: int) -> Iterable[Round]:
    if sim.pending >= 0:
        card = sim.pending
        rest = [c for c in sim.table if c != card]
        for taken in sim.sets_for(card, rest):
            child = sim.copy()
            child.take_fifteen(seat, taken)
            yield child
    for card in sim.hands[seat]:
        sets = sim.sets_for(card, sim.table)
        choices = [*sets, []] if not sets or not sim.mandatory else sets
        for taken in choices:
            child = sim.copy()
            child.pending = -1
            child.play(seat, card, taken)
            yield child


# --- the game's report -----------------------------------------------------------------

def move_accuracy(loss: float) -> float:
    """Lichess's accuracy of a move, 0..100, its drop in winning chance read off the round points lost."""
    drop = PERCENT_PER_POINT * max(0.0, loss)
    return max(0.0, min(100.0, 103.1668 * math.exp(-0.04354 * drop) - 3.1669))


def accuracy(losses: list[float]) -> float:
    """A seat's accuracy: the mean of the arithmetic and harmonic means of its moves' (Lichess's shape,
    without its volatility weights); 100 with no move that was a choice."""
    if not losses:
        return 100.0
    marks = [move_accuracy(x) for x in losses]
    mean = sum(marks) / len(marks)
    harmonic = len(marks) / sum(1.0 / max(m, 1.0) for m in marks)
    return (mean + harmonic) / 2


PUBLIC = ("version", "round", "played", "best", "loss", "label")


def report(rows: list[dict[str, Any]], seats: Iterable[int]) -> list[dict[str, Any]]:
    """The contract's ``seats`` from stored rows (``Judgement.row``), every seat of the game listed."""
    out = []
    for seat in sorted(seats):
        mine = sorted((r for r in rows if r["seat"] == seat), key=lambda r: r["version"])
        # the part of each loss beyond the sampling's noise: noise alone lowers nobody's accuracy
        losses = [max(0.0, r["loss"] - Z * r["se"]) for r in mine if r["choices"] > 1]
        out.append({"seat": seat, "accuracy": round(accuracy(losses), 1),
                    "moves": [{k: r[k] for k in PUBLIC} for r in mine]})
    return out


def analyse(events: Iterable[ev.Event], seed: str, *, sampler: Sampler | None = None,
            budget: int = PLAYS_BUDGET) -> list[dict[str, Any]]:
    """The whole analysis of the last game in ``events``, in one go (the worker does it in slices)."""
    found = decisions(events)
    rows = [judge(d, seed, sampler=sampler, budget=budget).row() for d in found]
    players = found[0].state.players if found else ()
    return report(rows, players)


__all__ = ["LABELS", "PLAYS_BUDGET", "Z", "Decision", "Judgement", "accuracy", "analyse", "deals_uniform",
           "reads_people", "decisions", "judge", "label_for", "move_accuracy", "played_move", "report"]
