"""Sparring partners for the bench: opponents Luna does not model, never seated at a table.

- ``tito20``: Tito who, one play in five, makes any legal move instead (a tired club player);
- ``greedy``: takes the most cards it can (a 15 left behind included), the most valuable
  set among equals; with nothing to take, leaves its least valuable card.

Like the table's bots they read the seat's view alone and draw chance from the rng passed in.
"""

from __future__ import annotations

import random

from ..view import View
from . import tito
from .common import Move, Reading, card_worth

NOISE = 0.2


def choose_tito20(view: View, rng: random.Random) -> Move:
    if rng.random() < NOISE:
        return rng.choice(Reading(view).moves())
    return tito.choose(view, rng)


def choose_greedy(view: View, rng: random.Random) -> Move:
    r = Reading(view)
    moves = r.moves()
    worth = card_worth(r.settings)

    def taken(m: Move) -> list[str]:
        return m["cards"] if m["type"] == "take_fifteen" else [m["card"], *m["capture"]] if m["capture"] else []

    takes = [m for m in moves if taken(m)]
    if takes:
        return max(takes, key=lambda m: (len(taken(m)), sum(worth[c] for c in taken(m)), rng.random()))
    return min(moves, key=lambda m: (worth[m["card"]], rng.random()))


CHOOSERS = {"tito20": choose_tito20, "greedy": choose_greedy}
