"""A turn: play one card, capturing a set or leaving it; TAKE THE 15 first.

The capture rule itself lives in ``engine.capture``; this chapter applies it
to a turn: whose turn it is, the mandatory capture, escobas (and the Italian
hybrid's last-card exception), and the 15 left behind.
"""

from __future__ import annotations

from typing import TypedDict

from . import events as ev
from .capture import captures, check_capture, is_capture
from .cards import value
from .deal import deal_more
from .decision import Decision
from .errors import RuleError
from .flow import end_round
from .state import State

# A table left to grow to thirty cards holds thousands of sets for one card;
# views list this many per card and say when there are more (any valid set is still accepted).
OPTIONS_LIMIT = 64


class Option(TypedDict):
    """A card of the hand as a view lists it on its holder's turn (docs/api.md, ``options``)."""

    card: str
    captures: list[list[str]]  # each set it may take, at most OPTIONS_LIMIT
    more_captures: bool  # more sets than listed
    may_leave: bool  # it may be left on the table


def options(state: State, seat: int) -> list[Option]:
    """Every card in the hand with each set it may take, and whether it may stay on the table."""
    settings = state.settings
    result: list[Option] = []
    for card in state.hands.get(seat, ()):
        sets = captures(card, state.table, settings, limit=OPTIONS_LIMIT + 1)
        result.append({
            "card": card,
            "captures": [list(s) for s in sets[:OPTIONS_LIMIT]],
            "more_captures": len(sets) > OPTIONS_LIMIT,
            "may_leave": not (sets and settings.mandatory_capture),
        })
    return result


def fifteen_sets(state: State, limit: int = OPTIONS_LIMIT) -> list[tuple[str, ...]]:
    """The sets the card left behind can be taken with (at most ``limit``), or none."""
    if state.fifteen is None:
        return []
    card = state.fifteen[0]
    rest = list(state.table)
    rest.remove(card)
    return captures(card, rest, state.settings, limit=limit)


def require_turn(state: State, seat: int | None) -> None:
    if state.status != "playing":
        raise RuleError("not_playing", "No round is being played at this table now.")
    if seat != state.turn:
        raise RuleError("not_your_turn", f"It is seat {state.turn}'s turn.", {"turn": state.turn})


def play_card(d: Decision, seat: int | None, card: object, capture: list[str]) -> None:
    s = d.state
    require_turn(s, seat)
    assert seat is not None  # it is the turn's seat
    if card not in s.hands.get(seat, ()):
        raise RuleError("card_not_in_hand", f"{card} is not in your hand.", {"card": card})
    assert isinstance(card, str)  # one in the hand
    fifteen_left = False
    if capture:
        check_capture(card, capture, s.table, s.settings)
    else:
        # the sets it leaves behind: for the mandatory capture, and for TAKE THE 15
        sets = captures(card, s.table, s.settings, limit=OPTIONS_LIMIT)
        if sets and s.settings.mandatory_capture:
            ways = " or ".join(" + ".join(c for c in st) for st in sets[:4]) + (" or ..." if len(sets) > 4 else "")
            raise RuleError(
                "must_capture",
                f"Your {card} can capture ({ways}), so it must: capture, or play another card.",
                {"card": card, "captures": [list(st) for st in sets]},
            )
        fifteen_left = bool(sets) and s.settings.take_the_fifteen
    escoba = bool(capture) and len(capture) == len(s.table)
    if escoba and _last_card_of_round(s) and not s.settings.last_sweep_escoba:
        escoba = False
    d.add(ev.CardPlayed(seat, card, tuple(capture), escoba, fifteen_left))
    _after_play(d)


def take_fifteen(d: Decision, seat: int | None, cards: list[str]) -> None:
    s = d.state
    require_turn(s, seat)
    assert seat is not None  # it is the turn's seat
    sets = fifteen_sets(s)
    if not sets or s.fifteen is None:  # (no 15 left behind: no sets)
        raise RuleError("no_fifteen_to_take", "There is no 15 left behind to take.")
    left = s.fifteen[0]
    if left not in cards:
        raise RuleError(
            "illegal_capture",
            f"TAKE THE 15 takes the card left behind, {left}, with table cards that make 15.",
            {"card": left, "sets": [list(x) for x in sets]},
        )
    rest = [c for c in cards if c != left]
    on_table = [c for c in s.table if c != left]
    if len(set(rest)) != len(rest) or any(c not in on_table for c in rest) or not is_capture(left, rest, s.settings):
        made = value(left) + sum(value(c) for c in rest if c in s.table)
        raise RuleError(
            "illegal_capture",
            f"{' + '.join(str(value(c)) for c in [left, *rest])} makes {made}, not 15.",
            {"card": left, "sets": [list(x) for x in sets]},
        )
    # count the cards taken, not the names given: a card named twice is taken once
    escoba = len(rest) + 1 == len(s.table)
    d.add(ev.FifteenTaken(seat, left, tuple(rest), escoba))


def _last_card_of_round(s: State) -> bool:
    return not s.stock and sum(len(h) for h in s.hands.values()) == 1


def _after_play(d: Decision) -> None:
    s = d.state
    if any(s.hands.values()):
        return
    if s.stock:
        deal_more(d)
    else:
        end_round(d)
