"""The capture rule: which sets of table cards a played card may take.

Spanish (sum to 15): the played card and the set add up to exactly 15.
Italian hybrid (del15 option): besides that, a table card of the played card's
own value, or table cards adding up to its value, as in Scopa.
Exactly one set is taken per play; the player chooses among them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from functools import lru_cache

from .cards import FULL_DECK, total, value
from .errors import RuleError
from .rules import Settings

FIFTEEN = 15


def subsets_summing_to(cards: Iterable[str], goal: int, limit: int | None = None) -> list[tuple[str, ...]]:
    """Every non-empty set of ``cards`` whose values add up to ``goal``.

    >>> sorted(subsets_summing_to(["3o", "5c", "8e"], 8))
    [('3o', '5c'), ('8e',)]
    """
    ordered = sorted(cards, key=value)
    found: list[tuple[str, ...]] = []

    def walk(start: int, left: int, chosen: list[str]) -> None:
        for i in range(start, len(ordered)):
            if limit is not None and len(found) >= limit:
                return
            v = value(ordered[i])
            if v > left:
                break  # sorted: nothing further fits either
            chosen.append(ordered[i])
            if v == left:
                found.append(tuple(chosen))
            else:
                walk(i + 1, left - v, chosen)
            chosen.pop()

    if goal > 0:
        walk(0, goal, [])
    return found


def captures(card: str, table: Iterable[str], settings: Settings, limit: int | None = None) -> list[tuple[str, ...]]:
    """Every distinct set of table cards ``card`` may take, in a stable order.

    ``limit`` bounds the search: a table that players let grow to thirty
    cards holds thousands of sets, and listing them all helps nobody.

    Which sets make 15 with the 7 of coins (7 + 8, 7 + 3 + 5, 7 + 1 + 3 + 4), the smallest first:

    >>> from engine.rules import PRESETS, custom_settings
    >>> captures("7o", ["8c", "3e", "5b", "4o", "1c"], PRESETS["selminha"])
    [('8c',), ('3e', '5b'), ('1c', '3e', '4o')]

    The Italian hybrid also takes a card of the played card's value, or cards adding up to it:

    >>> captures("5o", ["5c", "10e", "2b", "3o"], custom_settings(capture="hybrid"))
    [('5c',), ('10e',), ('2b', '3o'), ('2b', '3o', '5c')]
    >>> captures("5o", ["5c", "10e", "2b", "3o"], PRESETS["del15"])
    [('10e',), ('2b', '3o', '5c')]
    """
    return list(_captures(value(card), tuple(table), settings.capture == "hybrid", limit))


# The same question comes back again and again: the options a view lists are the ones the next
# move is checked against, and a bot's rollouts ask it of the same few tables thousands of times.
# Only the card's value and the table's cards matter (the sets come out in one order whatever the
# table's), so the answers are kept; a key is a few small ints and strings.
@lru_cache(maxsize=16384)
def _captures(v: int, table: tuple[str, ...], hybrid: bool, limit: int | None) -> tuple[tuple[str, ...], ...]:
    ordered = sorted(table, key=_ORDER.__getitem__)  # a set is found as positions in this order, so in order
    values = [_ORDER[c][0] for c in ordered]
    found: list[tuple[int, ...]] = []
    _sums(values, 0, FIFTEEN - v, [], found, limit)
    if hybrid:  # (no set makes both v and 15 - v: the two lists never share one)
        _sums(values, 0, v, [], found, None if limit is None else len(found) + limit)
    found.sort(key=lambda at: (len(at), at))  # the positions sort as the cards' (value, suit)
    return tuple(tuple(ordered[i] for i in at) for at in found)


def _sums(values: list[int], start: int, left: int, chosen: list[int], found: list[tuple[int, ...]],
          limit: int | None) -> None:
    """``subsets_summing_to`` over values in order, as positions, into ``found``."""
    for i in range(start, len(values)):
        if limit is not None and len(found) >= limit:
            return
        v = values[i]
        if v > left:
            return  # in order: nothing further fits either
        chosen.append(i)
        if v == left:
            found.append(tuple(chosen))
        else:
            _sums(values, i + 1, left - v, chosen, found, limit)
        chosen.pop()


def is_capture(card: str, chosen: Collection[str], settings: Settings) -> bool:
    """Whether a set of distinct table cards is one ``card`` may take (checked by sum, not by listing).

    >>> from engine.rules import PRESETS
    >>> is_capture("7o", ["3e", "5b"], PRESETS["selminha"]), is_capture("7o", ["3e", "4b"], PRESETS["selminha"])
    (True, False)
    """
    if not chosen:
        return False
    made = total(chosen)
    return made + value(card) == FIFTEEN or (settings.capture == "hybrid" and made == value(card))


def _order(card: str) -> tuple[int, str]:
    return (value(card), card[-1])


class _Orders(dict[str, tuple[int, str]]):
    """Each card's place in ``_order``, looked up rather than called: every new table asks it of each card."""

    def __missing__(self, card: str) -> tuple[int, str]:
        return _order(card)


_ORDER = _Orders({card: _order(card) for card in FULL_DECK})


def check_capture(card: str, chosen: list[str], table: Collection[str], settings: Settings) -> None:
    """Refuse a chosen set that the card may not take, saying why in numbers."""
    missing = [c for c in chosen if c not in table]
    if missing:
        raise RuleError(
            "illegal_capture",
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not on the table.",
            {"not_on_table": missing},
        )
    if len(set(chosen)) != len(chosen):
        raise RuleError("illegal_capture", "A table card can be taken only once.", {"capture": chosen})
    if is_capture(card, chosen, settings):
        return
    sums = " + ".join(str(value(c)) for c in [card, *chosen])
    made = value(card) + total(chosen)
    message = f"{sums} makes {made}, not 15."
    if settings.capture == "hybrid":
        message = f"{sums} makes {made}, not 15, and {total(chosen)} is not {value(card)}."
    raise RuleError("illegal_capture", message, {"card": card, "capture": chosen, "sum": made})
