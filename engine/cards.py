"""The forty cards, their worth when adding to fifteen, and the four deck designs.

A card is a string ``<value><suit>``: ``7o`` is the 7 of coins, ``10b`` the
king (rey) of clubs (bastos). The code never changes with the deck design;
the design only changes the label a player reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import TypedDict

SUITS = ("o", "c", "e", "b")
COINS = "o"
VALUES = tuple(range(1, 11))
SEVEN_OF_COINS = "7o"

FULL_DECK: tuple[str, ...] = tuple(f"{v}{s}" for s in SUITS for v in VALUES)
_DECK_SET = frozenset(FULL_DECK)


def is_card(code: object) -> bool:
    return isinstance(code, str) and code in _DECK_SET


_VALUES = {card: int(card[:-1]) for card in FULL_DECK}


def value(card: str) -> int:
    """What a card is worth when adding to 15 (1..10)."""
    # looked up: the capture search asks this of every table card, every play
    return _VALUES.get(card) or int(card[:-1])


def suit(card: str) -> str:
    return card[-1]


def is_coin(card: str) -> bool:
    return card[-1] == COINS


def is_seven(card: str) -> bool:
    return card[:-1] == "7"


def total(cards: Iterable[str]) -> int:
    return sum(map(value, cards))


# --- deck designs: labels only, never rules -------------------------------

_FRENCH_SUITS = {"o": "♦", "c": "♥", "e": "♠", "b": "♣"}
_SPANISH_SUITS = {"o": "oros", "c": "copas", "e": "espadas", "b": "bastos"}
_SPANISH_RANKS = {1: "As", 8: "Sota", 9: "Caballo", 10: "Rey"}

class Design(TypedDict):
    ranks: dict[int, str]  # a value's rank where it is not the number
    suits: dict[str, str]


DECKS: dict[str, Design] = {
    # Brazilian card maker: Q=8, J=9, K=10
    "french": {"ranks": {1: "A", 8: "Q", 9: "J", 10: "K"}, "suits": _FRENCH_SUITS},
    # the common table swap: J=8, Q=9
    "french_swapped": {"ranks": {1: "A", 8: "J", 9: "Q", 10: "K"}, "suits": _FRENCH_SUITS},
    # Spanish baraja: Sota=8, Caballo=9, Rey=10
    "spanish": {"ranks": _SPANISH_RANKS, "suits": _SPANISH_SUITS},
    # cardgames.io: A..10 spot cards at face value
    "numeric": {"ranks": {1: "A"}, "suits": _FRENCH_SUITS},
}


# Designs that draw the same faces and differ only in which face shows which value.
_SAME_DRAWING = {"french": "french", "french_swapped": "french"}


def design_for(table_deck: str, asked: str | None) -> str:
    """The design a reader's view is labelled in: the one they asked for, except that the faces'
    values are the table's. At a jack-8 table (``french_swapped``) the 8 is a J for everyone,
    whether they picked ``french`` or not: a reader's choice changes the drawing, never which
    face a value is (players at one table must call a card by the same name)."""
    if asked is None:
        return table_deck
    if _SAME_DRAWING.get(asked) is not None and _SAME_DRAWING.get(asked) == _SAME_DRAWING.get(table_deck):
        return table_deck
    return asked


def label(card: str, deck: str = "french") -> str:
    """A human name for a card in one deck design: ``Q♦``, ``Sota de oros``.

    >>> label("8o"), label("8o", "french_swapped"), label("10b", "spanish")
    ('Q♦', 'J♦', 'Rey de bastos')
    """
    design = DECKS[deck]
    v, s = value(card), suit(card)
    rank = design["ranks"].get(v, str(v))
    if deck == "spanish":
        return f"{rank} de {design['suits'][s]}"
    return f"{rank}{design['suits'][s]}"


@cache
def _labels(deck: str) -> tuple[tuple[str, str], ...]:
    return tuple((card, label(card, deck)) for card in FULL_DECK)


def labels(deck: str) -> dict[str, str]:
    return dict(_labels(deck))


@cache
def label_map(deck: str) -> dict[str, str]:
    """``labels(deck)`` shared, for readers that only look up (every view)."""
    return labels(deck)
