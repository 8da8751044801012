"""Carmen, Tito and Luna: bots that see only their seat's view.

``choose(bot, view, rng, budget_ms=None)`` returns one command for the bot's
seat (``play`` or ``take_fifteen``), without ``by``: the caller adds it. The
view is ``engine.view(state, seat)`` for the bot's own seat and its turn; the
only chance is ``rng``. Luna keeps within a CPU budget: the caller passes the
clock (``clock=time.process_time``, and ``wall_clock=time.monotonic`` to bound
the wall time too); the engine reads none. Without a clock her budget is
counted in simulated plays, deterministically.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ..view import View
from . import carmen, luna, sparring, tito
from .common import Move

BOTS = ("carmen", "tito", "luna")
# opponents for the bench and the tests only (engine.bots.sparring): no table seats them
SPARRING = tuple(sparring.CHOOSERS)


def choose(bot: str, view: View, rng: random.Random, *, budget_ms: float | None = None,
           clock: Callable[[], float] | None = None, wall_clock: Callable[[], float] | None = None,
           wall_ms: float | None = None) -> Move:
    """The bot's command for its seat at this view (the clocks are read by Luna alone)."""
    if not isinstance(view, dict):
        raise TypeError("a bot is handed a view dict")
    if bot == "carmen":
        return carmen.choose(view, rng)
    if bot == "tito":
        return tito.choose(view, rng)
    if bot == "luna":
        return luna.choose(view, rng, budget_ms, clock=clock, wall_clock=wall_clock, wall_ms=wall_ms)
    if bot in sparring.CHOOSERS:
        return sparring.CHOOSERS[bot](view, rng)
    raise ValueError(f"unknown bot {bot!r}: choose carmen, tito or luna")


__all__ = ["BOTS", "SPARRING", "Move", "choose"]
