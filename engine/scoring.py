"""Scoring a round, and when a game is won.

Per side: escobas; most cards; most coins; the 7 of coins (siete de velo);
most sevens or the setenta; the bonuses for all ten coins and all four sevens.
A tie in a "most" category scores nothing for anybody.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TypedDict

from .cards import SEVEN_OF_COINS, SUITS, is_coin, is_seven, suit, value
from .rules import Settings

# The setenta's scale: the best card of each suit counts this much.
SETENTA_SCALE = {7: 21, 6: 18, 1: 16, 5: 15, 4: 14, 3: 13, 2: 12, 8: 10, 9: 10, 10: 10}


def setenta(pile: Iterable[str]) -> int | None:
    """The best card of each suit on the scale, added up; None when a suit is missing.

    >>> setenta(["7o", "6c", "1e", "5b", "2b"])  # 21 + 18 + 16 + 15
    70
    >>> setenta(["7o", "7c"]) is None  # no swords, no clubs
    True
    """
    best: dict[str, int] = {}
    for card in pile:
        points = SETENTA_SCALE[value(card)]
        if points > best.get(suit(card), 0):
            best[suit(card)] = points
    if len(best) < len(SUITS):
        return None
    return sum(best.values())


def sole_best(counts: Sequence[int | None]) -> int | None:
    """The index of the one side strictly ahead, or None on a tie (or nothing to count).

    >>> sole_best([3, 5, 2]), sole_best([4, 4, 1]), sole_best([None, 2])
    (1, None, 1)
    """
    eligible = [c for c in counts if c is not None]
    if not eligible:
        return None
    top = max(eligible)
    leaders = [i for i, c in enumerate(counts) if c == top]
    return leaders[0] if len(leaders) == 1 else None


class Tally(TypedDict):
    """One side's round: what it captured, and the points of each category (the contract's last_round)."""

    seats: list[int]
    cards: int
    coins: int
    sevens: int
    seven_of_coins: bool
    setenta: int | None
    escobas: int
    points: dict[str, int]  # by category
    round_points: int


def score_round(sides: Iterable[Iterable[int]], piles: Iterable[Collection[str]], escobas: Iterable[int],
                settings: Settings) -> list[Tally]:
    """The breakdown per side: what it captured, and the points of each category.

    >>> from engine.rules import PRESETS
    >>> mine, theirs = score_round([(0,), (1,)], [["7o", "7c", "1o", "2o"], ["3e", "4b"]], [1, 0],
    ...                            PRESETS["selminha"])
    >>> mine["points"], mine["round_points"], theirs["round_points"]
    ({'escobas': 1, 'cards': 2, 'coins': 1, 'seven_of_coins': 1, 'sevens': 1}, 6, 0)
    """
    tallies = [_tally(seats, pile, n, settings) for seats, pile, n in zip(sides, piles, escobas, strict=True)]
    cards = [t["cards"] for t in tallies]
    coins = [t["coins"] for t in tallies]
    sevens = [t["sevens"] for t in tallies]

    most_cards = sole_best(cards)
    most_coins = sole_best(coins)
    most_sevens = sole_best(sevens)
    best_setenta = sole_best([t["setenta"] for t in tallies]) if settings.sevens == "setenta" else None

    for i, t in enumerate(tallies):
        points = {"escobas": t["escobas"], "cards": 0, "coins": 0, "seven_of_coins": int(t["seven_of_coins"])}
        if i == most_cards:
            others_under_ten = all(c < 10 for j, c in enumerate(cards) if j != i)
            points["cards"] = 2 if settings.most_cards_double and others_under_ten else 1
        if i == most_coins:
            points["coins"] = 1
        if settings.all_coins_extra and t["coins"] == 10:
            points["coins"] += 1
        points["sevens"] = 0
        if settings.sevens == "most" and i == most_sevens:
            points["sevens"] = 1
        if settings.all_sevens_extra and t["sevens"] == 4:
            points["sevens"] += 1
        if settings.sevens == "setenta":
            points["setenta"] = int(i == best_setenta)
        t["points"] = points
        t["round_points"] = sum(points.values())
    return tallies


def _tally(seats: Iterable[int], pile: Collection[str], escobas: int, settings: Settings) -> Tally:
    return {
        "seats": list(seats),
        "cards": len(pile),
        "coins": sum(1 for c in pile if is_coin(c)),
        "sevens": sum(1 for c in pile if is_seven(c)),
        "seven_of_coins": SEVEN_OF_COINS in pile,
        "setenta": setenta(pile) if settings.sevens == "setenta" else None,
        "escobas": escobas,
        "points": {},  # (set by score_round)
        "round_points": 0,
    }


def game_winner(scores: Sequence[int], target: int) -> int | None:
    """The side that won: at least the target and strictly ahead of every other side.

    >>> game_winner([21, 19], 21), game_winner([21, 21], 21), game_winner([22, 23], 21)
    (0, None, 1)
    """
    leader = sole_best(scores)
    if leader is not None and scores[leader] >= target:
        return leader
    return None
