"""The capture rule: which sets of table cards a played card may take.

Spanish (sum to 15): the played card and the set add up to exactly 15.
Italian hybrid (del15 option): besides that, a table card of the played card's
own value, or table cards adding up to its value, as in Scopa.
Exactly one set is taken per play; the player chooses among them.
"""

from __future__ import annotations

from .cards import total, value
from .errors import RuleError
from .rules import Settings

FIFTEEN = 15


def subsets_summing_to(cards, goal: int, limit: int | None = None) -> list[tuple[str, ...]]:
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


def captures(card: str, table, settings: Settings, limit: int | None = None) -> list[tuple[str, ...]]:
    """Every distinct set of table cards ``card`` may take, in a stable order.

    ``limit`` bounds the search: a table that players let grow to thirty
    cards holds thousands of sets, and listing them all helps nobody.
    """
    sets = subsets_summing_to(table, FIFTEEN - value(card), limit)
    if settings.capture == "hybrid":
        sets += subsets_summing_to(table, value(card), limit)
    unique = sorted({tuple(sorted(s, key=_order)) for s in sets}, key=lambda s: (len(s), [_order(c) for c in s]))
    return unique


def is_capture(card: str, chosen, settings: Settings) -> bool:
    """Whether a set of distinct table cards is one ``card`` may take (checked by sum, not by listing)."""
    if not chosen:
        return False
    made = total(chosen)
    return made + value(card) == FIFTEEN or (settings.capture == "hybrid" and made == value(card))


def _order(card: str) -> tuple[int, str]:
    return (value(card), card[-1])


def check_capture(card: str, chosen: list[str], table, settings: Settings) -> None:
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
