"""The deal: the opening table, later deals, and who deals and leads.

The leader is the player after the dealer in the direction of play, and the
deal passes the same way each round. Seats are numbered in that direction,
so "to the right" (selminha, del15) and "to the left" (cardgames) differ only
in how a client draws the table.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from itertools import combinations

from . import events as ev
from .cards import FULL_DECK, total
from .decision import Decision
from .errors import RuleError
from .rules import Settings

HAND = 3
TABLE = 4


def check_deck(deck: object) -> tuple[str, ...]:
    """A shuffled deck must be the forty cards, each once."""
    if not isinstance(deck, list | tuple) or sorted(deck) != sorted(FULL_DECK):
        raise RuleError("bad_request", "A deck must list the 40 cards, each exactly once.", {"deck": "invalid"})
    return tuple(deck)


def play_order(players: Sequence[int], dealer: int) -> tuple[int, ...]:
    """Everyone in the game, from the player after the dealer."""
    i = players.index(dealer)
    return tuple(players[i + 1 :]) + tuple(players[: i + 1])


def deal_round(d: Decision, round_no: int, dealer: int, deck: object) -> None:
    s = d.state
    d.add(ev.RoundDealt(round_no, dealer, play_order(s.players, dealer), check_deck(deck)))
    escobas = opening_escobas(s.table, s.settings)
    if escobas:
        d.add(ev.OpeningTableTaken(dealer, tuple(s.table), escobas))


def opening_escobas(table: Collection[str], settings: Settings) -> int:
    """Escobas the dealer scores for the four cards turned up (0: they stay)."""
    if not settings.opening_fifteen:
        return 0
    t = total(table)
    if t == 15:
        return 1
    if t != 30 or settings.opening_thirty == "nothing":
        return 0
    if settings.opening_thirty == "two_escobas_if_split" and not splits_into_fifteens(table):
        return 0
    return 2


def splits_into_fifteens(table: Collection[str]) -> bool:
    # No single card reaches 15, so two fifteens out of four cards are two pairs.
    return any(total(pair) == 15 for pair in combinations(table, 2)) and total(table) == 30


def deal_more(d: Decision) -> None:
    """Three more cards each, none to the table, in the same order as the first deal."""
    s = d.state
    assert s.dealer is not None, "a round under way has a dealer"
    order = play_order(s.players, s.dealer)
    hands = tuple((seat, tuple(s.stock[i * HAND : (i + 1) * HAND])) for i, seat in enumerate(order))
    d.add(ev.HandsDealt(hands, last_deal=len(s.stock) == HAND * len(order)))
