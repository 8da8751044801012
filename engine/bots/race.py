"""What a round's points are worth in the game: the chance to win the race to the target.

Luna's leaf scores the round as the engine does; the game is won by the side at the
target and strictly ahead, so two points when the other side needs one are not two
points at the start of a game. ``chance(a, b, target)`` is the chance that a side with
``a`` points wins against one with ``b`` (the other sides set aside), the rounds to come
drawn from a model of one heads-up round between equals: a bell over the grid of each
side's whole round points, around a total of ``TOTAL_MEAN`` and a difference of 0. Its
three numbers are set so that its total (5.5 +- 1.6) and difference (0 +- 3.4) match 700
Tito-against-Tito rounds per preset (5.5 +- 1.5 to 1.7, and +-3.3 to 3.5, alike in the
three presets); the model is the same at every table: it only changes how a close game
is weighed, never a rule.

Pure: the tables are computed on first use, per target, and kept.
"""

from __future__ import annotations

from functools import cache
from math import exp

# the bell's centre and spreads (the grid's edge at 0 points narrows it: these give the moments above)
TOTAL_MEAN = 5.2
TOTAL_SD = 1.75
DIFF_SD = 5.5
MOST = 12  # a side's round points, at most, in the model


@cache
def outcomes() -> tuple[tuple[int, int, float], ...]:
    """One round's (points of one side, of the other, probability); never (0, 0)."""
    weights = []
    for x in range(MOST + 1):
        for y in range(MOST + 1):
            if x or y:
                t, d = x + y - TOTAL_MEAN, x - y
                weights.append((x, y, exp(-t * t / (2 * TOTAL_SD**2) - d * d / (2 * DIFF_SD**2))))
    kept = [(x, y, w) for x, y, w in weights if w > 1e-6 * sum(w for _, _, w in weights)]
    total = sum(w for _, _, w in kept)
    return tuple((x, y, w / total) for x, y, w in kept)


@cache
def _table(target: int) -> tuple[tuple[float, ...], ...]:
    """``win[a][b]`` for scores under the target, filled from the end of the game backwards."""
    win = [[0.0] * target for _ in range(target)]
    # a round always adds a point somewhere, so every state leads to states with a bigger sum
    for total in range(2 * target - 2, -1, -1):
        for a in range(max(0, total - target + 1), min(total, target - 1) + 1):
            b = total - a
            win[a][b] = sum(p * _after(win, a + x, b + y, target) for x, y, p in outcomes())
    return tuple(tuple(row) for row in win)


def _after(win: list[list[float]], a: int, b: int, target: int) -> float:
    if a >= target or b >= target:
        # ahead at the target wins; level at or past it plays on, between equals a coin toss
        return 1.0 if a > b else 0.0 if b > a else 0.5
    return win[a][b]


def chance(a: int, b: int, target: int) -> float:
    """The chance that the side with ``a`` points wins, against the side with ``b``, once a round is scored."""
    if a >= target or b >= target:
        return 1.0 if a > b else 0.0 if b > a else 0.5
    return _table(target)[a][b]
