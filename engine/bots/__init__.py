"""Carmen, Tito and Luna: bots that see only their seat's view.

``choose(bot, view, rng, budget_ms=None)`` returns one command for the bot's
seat (``play`` or ``take_fifteen``), without ``by``: the caller adds it. The
view is ``engine.view(state, seat)`` for the bot's own seat and its turn; the
only chance is ``rng``. Luna alone reads a clock, to keep within her time
budget (``engine.bots.luna.choose`` takes the clock as an argument).
"""

from __future__ import annotations

import random

from . import carmen, luna, tito

BOTS = ("carmen", "tito", "luna")


def choose(bot: str, view: dict, rng: random.Random, *, budget_ms: float | None = None) -> dict:
    """The bot's command for its seat at this view."""
    if not isinstance(view, dict):
        raise TypeError("a bot is handed a view dict")
    if bot == "carmen":
        return carmen.choose(view, rng)
    if bot == "tito":
        return tito.choose(view, rng)
    if bot == "luna":
        return luna.choose(view, rng, budget_ms)
    raise ValueError(f"unknown bot {bot!r}: choose carmen, tito or luna")


__all__ = ["BOTS", "choose"]
