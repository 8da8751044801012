"""What a seat may know, read from its view alone, and the moves it may make.

Every bot starts here: ``Reading(view)`` gathers the seat's hand, the table,
the cards seen this round (the history lists the opening capture and every
play with what it took), the cards still unseen, this round's capture piles
rebuilt from the public history, and the sides. Nothing here can reach a
hidden card: the only input is the view dict.
"""

from __future__ import annotations

from math import comb
from typing import Literal, Required, TypedDict

from ..cards import FULL_DECK, SEVEN_OF_COINS, is_coin, is_seven, value
from ..rules import Settings, settings_from_dict
from ..view import View

ESCOBA = 1.0


class Move(TypedDict, total=False):
    """A bot's command for its seat, without ``by`` (the caller adds it): a ``play`` names its
    ``card`` and ``capture``, a ``take_fifteen`` its ``cards``."""

    type: Required[Literal["play", "take_fifteen"]]
    card: str
    capture: list[str]
    cards: list[str]


class Reading:
    """The round as one seat sees it."""

    def __init__(self, view: View):
        if not isinstance(view, dict):
            raise TypeError("a bot reads a view dict, nothing else")
        me = view.get("you")
        if me is None or view.get("turn") != me or not view.get("options"):
            raise ValueError("a bot is asked only on its own turn")
        self.view = view
        self.me: int = me
        self.settings: Settings = settings_from_dict(view["settings"])
        self.hand: list[str] = list(view["hand"])
        self.table: list[str] = list(view["table_cards"])
        in_game = [s for s in view["seats"] if not s.get("empty") and s.get("in_game", True)]
        self.players: list[int] = sorted(s["seat"] for s in in_game)
        self.hand_count: dict[int, int] = {s["seat"]: s["hand_count"] for s in in_game}
        self.hand_count[me] = len(self.hand)
        self.sides: list[tuple[int, ...]] = [tuple(x["seats"]) for x in view["scores"]]
        self.side_of: dict[int, int] = {seat: i for i, side in enumerate(self.sides) for seat in side}
        self.my_side: int = self.side_of[me]
        self.stock_count: int = view["stock_count"]
        self.escobas: list[int] = [c["escobas"] for c in view["captured"]]
        self.scores: list[int] = [x["points"] for x in view["scores"]]
        self.piles: list[list[str]] = [[] for _ in self.sides]
        self.last_capturer: int | None = None
        seen = set(self.hand) | set(self.table)
        for h in view["history"]:
            taken = list(h["captured"])
            if h["card"] is not None:
                seen.add(h["card"])
            seen.update(taken)
            if h["kind"] == "opening":
                self.piles[self.side_of[h["seat"]]].extend(taken)
                self.last_capturer = h["seat"]
            elif h["card"] is not None and (taken or h["kind"] == "fifteen"):  # (only the opening has no card)
                self.piles[self.side_of[h["seat"]]].extend([*taken, h["card"]])
                self.last_capturer = h["seat"]
        self.seen = seen
        self.unseen: list[str] = [c for c in FULL_DECK if c not in seen]
        fifteen = view.get("fifteen_to_take")
        self.fifteen_sets: list[list[str]] = [list(x) for x in fifteen["sets"]] if fifteen else []

    def next_seat(self, seat: int) -> int:
        players = self.players
        return players[(players.index(seat) + 1) % len(players)]

    def plays_left(self) -> int:
        """Cards still to be played this round, the seat's own included."""
        return sum(self.hand_count.values()) + self.stock_count

    def moves(self) -> list[Move]:
        """Every legal command, TAKE THE 15 first; read from the view's options."""
        result: list[Move] = [{"type": "take_fifteen", "cards": list(s)} for s in self.fifteen_sets]
        for opt in self.view["options"] or ():  # (never None: a bot is asked on its turn)
            for s in opt["captures"]:
                result.append({"type": "play", "card": opt["card"], "capture": list(s)})
            if opt["may_leave"]:
                result.append({"type": "play", "card": opt["card"], "capture": []})
        return result


def card_worth(settings: Settings) -> dict[str, float]:
    """Roughly what capturing each card is worth in points, for the heuristics."""
    worth: dict[str, float] = {}
    for c in FULL_DECK:
        w = 0.12
        if is_coin(c):
            w += 0.2
        if settings.sevens == "setenta":
            w += {7: 0.4, 6: 0.22, 1: 0.1, 5: 0.05}.get(value(c), 0.0)
        elif is_seven(c):
            w += 0.35
        if c == SEVEN_OF_COINS:
            w += 1.0
        worth[c] = w
    return worth


def chance_holds(unseen_of_value: int, unseen: int, hand: int) -> float:
    """Chance that a hand of ``hand`` cards drawn from ``unseen`` holds one of ``unseen_of_value``."""
    if unseen_of_value <= 0 or hand <= 0 or unseen <= 0:
        return 0.0
    hand = min(hand, unseen)
    return 1.0 - comb(unseen - unseen_of_value, hand) / comb(unseen, hand)
