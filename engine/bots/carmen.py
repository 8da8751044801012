"""Carmen, a friendly beginner: she takes cards when she sees a capture.

She picks among her captures at random, leaning a little toward the bigger
ones; with nothing to take she leaves a random card. Now and then she just
plays any legal move, and she sometimes misses a 15 left behind.
"""

from __future__ import annotations

import random

from ..view import View
from .common import Move, Reading


def choose(view: View, rng: random.Random) -> Move:
    r = Reading(view)
    moves = r.moves()
    takes = [m for m in moves if m["type"] == "take_fifteen"]
    if takes and rng.random() < 0.7:
        return rng.choice(takes)
    plays = [m for m in moves if m["type"] == "play"]
    if rng.random() < 0.1:
        return rng.choice(plays)
    captures = [m for m in plays if m["capture"]]
    if captures:
        weights = [1 + len(m["capture"]) for m in captures]
        return rng.choices(captures, weights=weights)[0]
    return rng.choice(plays)
