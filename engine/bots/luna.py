"""Luna, the strongest: determinized Monte Carlo over the cards she cannot see.

Each iteration deals the cards unseen from her seat (the forty, less her
hand, the table and every card in this round's history) at random into the
other hands (by their counts) and the stock, then plays each candidate move
(Tito's best few) in that same deal and looks ahead with a fast Tito-like
policy for everybody (``engine.bots.sim``):

- early in the round, ``HORIZON`` turns of the table ahead, a move is worth what her side
  took (card worth and escobas) less the best other side's;
- in the round's last ``FULL_BELOW`` plays, the round is played out and a move
  is worth her side's round points (``engine.scoring.score_round``) less the
  best other side's.

Moves are averaged over the deals; a move that falls clearly behind on the
shared deals is dropped, so the others get more deals. A 15 left behind is
always taken (the set chosen as Tito would).

Her only clock is the injected ``clock``, read to keep within ``budget_ms``
(``max_iterations`` caps the deals as well).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from . import tito
from .common import Reading, card_worth
from .sim import INDEX, VAL, Round, worth_table

BUDGET_MS = 100.0
MAX_ITERATIONS = 400
MIN_ITERATIONS = 12
# turns of the table looked ahead (her move, then everybody, then everybody but
# her once more) before judging by the value of what each side took; the last
# FULL_BELOW plays of a round are played out and scored exactly
HORIZON = 2
FULL_BELOW = 8
CANDIDATES = 5


def choose(
    view: dict,
    rng: random.Random,
    budget_ms: float | None = None,
    *,
    clock: Callable[[], float] = time.perf_counter,
    max_iterations: int = MAX_ITERATIONS,
    horizon: int | None = HORIZON,
    full_below: int = FULL_BELOW,
    candidates: int = CANDIDATES,
) -> dict:
    start = clock()
    r = Reading(view)
    if r.fifteen_sets:  # a 15 left behind is always worth taking: Tito picks the set
        return tito.choose(view, rng)
    moves = r.moves()
    if len(moves) == 1:
        return moves[0]
    if len(moves) > candidates:  # look deeper only at Tito's best few
        worth = card_worth(r.settings)
        ranked = sorted(range(len(moves)), key=lambda i: -tito.evaluate(r, worth, moves[i]))
        moves = [moves[i] for i in sorted(ranked[:candidates])]
    budget = (BUDGET_MS if budget_ms is None else budget_ms) / 1000.0
    root = _root(r)
    if root is None:  # the view does not add up (never expected): fall back on Tito
        return tito.choose(view, rng)
    unseen = [INDEX[c] for c in r.unseen]
    others = [(s, r.hand_count[s]) for s in r.players if s != r.me]
    sides = r.sides
    mine = r.my_side

    exact = horizon is None or r.plays_left() <= full_below
    plies = 999 if exact else len(r.players) * horizon - 1
    alive = list(range(len(moves)))
    results: list[list[float]] = [[] for _ in moves]
    iterations = 0
    while iterations < max_iterations:
        if iterations >= 1 and clock() - start >= budget:
            break
        deal = root.copy()
        pool = list(unseen)
        rng.shuffle(pool)
        at = 0
        for seat, n in others:
            deal.hands[seat] = pool[at : at + n]
            at += n
        deal.stock = pool[at:]
        for i in alive:
            sim = deal.copy()
            _apply(sim, r.me, moves[i])
            sim.rollout(plies)
            if exact:
                points = sim.score(sides)
            else:
                points = sim.gain
            best_other = max(p for j, p in enumerate(points) if j != mine)
            results[i].append(points[mine] - best_other)
        iterations += 1
        if iterations >= MIN_ITERATIONS and iterations % 4 == 0 and len(alive) > 1:
            alive = _prune(alive, results, iterations)
    best = max(alive, key=lambda i: (sum(results[i][-iterations:]) / max(1, iterations), -i))
    return moves[best]


def _prune(alive: list[int], results: list[list[float]], n: int) -> list[int]:
    """Drop the moves behind the leader by more than about two and a half paired standard errors."""
    means = {i: sum(results[i][-n:]) / n for i in alive}
    lead = max(alive, key=lambda i: means[i])
    keep = []
    for i in alive:
        if i == lead:
            keep.append(i)
            continue
        diffs = [a - b for a, b in zip(results[lead][-n:], results[i][-n:], strict=True)]
        mean = sum(diffs) / n
        var = sum((d - mean) ** 2 for d in diffs) / (n - 1)
        if mean <= 2.5 * (var / n) ** 0.5 + 1e-9:
            keep.append(i)
    return keep


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


def _apply(sim: Round, me: int, move: dict) -> None:
    sim.pending = -1  # not taken: the chance is gone once she plays
    sim.play(me, INDEX[move["card"]], [INDEX[c] for c in move["capture"]])
