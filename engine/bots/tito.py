"""Tito, the careful club player: a one-move heuristic with a memory.

He prizes the 7 of coins, sevens (or the setenta's cards), coins and plain
card count, and an escoba above all. Before leaving a table he asks what the
next opponent could take from it: for each card value still unseen (he
remembers this round's plays), the chance that the opponent holds one, and
what it would capture. He always takes a 15 left behind.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

from ..capture import captures
from ..cards import value
from ..rules import Settings
from ..view import View
from .common import ESCOBA, Move, Reading, card_worth, chance_holds

RISK = 0.9


def choose(view: View, rng: random.Random) -> Move:
    r = Reading(view)
    moves = r.moves()
    if len(moves) == 1:
        return moves[0]
    worth = card_worth(r.settings)
    takes = [m for m in moves if m["type"] == "take_fifteen"]
    if takes:
        full = len(r.table)
        return max(takes, key=lambda m: sum(worth[c] for c in m["cards"]) + ESCOBA * (len(m["cards"]) == full))
    best, best_score = moves[0], None  # (two moves or more: one is chosen below)
    for m in moves:
        score = evaluate(r, worth, m) + rng.random() * 1e-6
        if best_score is None or score > best_score:
            best, best_score = m, score
    return best


def evaluate(r: Reading, worth: dict[str, float], move: Move) -> float:
    card, taken = move["card"], move["capture"]
    last_card = r.plays_left() == 1
    if taken:
        gain = worth[card] + sum(worth[c] for c in taken)
        after = [c for c in r.table if c not in taken]
        if not after and not (last_card and not r.settings.last_sweep_escoba):
            gain += ESCOBA
        return gain - exposure(r, worth, after, r.me, last_card)
    after = [*r.table, card]
    loss = exposure(r, worth, after, r.last_capturer, last_card)
    if r.settings.take_the_fifteen and not last_card:
        sets = captures(card, r.table, r.settings)
        if sets:  # the next player takes the 15 for free
            loss += max(worth[card] + sum(worth[c] for c in s) + ESCOBA * (len(s) == len(r.table)) for s in sets)
    return -loss


def exposure(r: Reading, worth: dict[str, float], table: list[str], capturer: int | None, last_card: bool) -> float:
    """What the next opponent may expect to take from ``table`` (negative: what we keep)."""
    if last_card:
        if capturer is None or not table:
            return 0.0
        mine = r.side_of[capturer] == r.my_side
        return -sum(worth[c] for c in table) if mine else sum(worth[c] for c in table)
    if not table:
        return 0.0
    nxt = r.next_seat(r.me)
    if r.side_of[nxt] == r.my_side:
        return 0.0
    hand = r.hand_count.get(nxt, 0) or 3
    unseen = Counter(value(c) for c in r.unseen)
    pool = len(r.unseen)
    ends_round = r.plays_left() <= len(r.players)
    gains = []
    for v in range(1, 11):
        p = chance_holds(unseen[v], pool, hand)
        if p <= 0:
            continue
        best = 0.0
        for s in _sets_for_value(v, table, r.settings):
            g = 0.12 + sum(worth[c] for c in s)
            if len(s) == len(table) and not (ends_round and not r.settings.last_sweep_escoba):
                g += ESCOBA
            best = max(best, g)
        if best > 0:
            gains.append((best, p))
    gains.sort(reverse=True)
    expected, miss = 0.0, 1.0
    for g, p in gains:
        expected += g * p * miss
        miss *= 1 - p
    return RISK * expected


def _sets_for_value(v: int, table: Sequence[str], settings: Settings) -> list[tuple[str, ...]]:
    # a stand-in card of value v: only its value matters for which sets it may take
    return captures(f"{v}b", table, settings)
