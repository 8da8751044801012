"""Bots playing whole games through ``engine.decide`` and ``engine.fold``.

For the tests and the tournament bench: every command a bot returns goes
through the engine's own ``decide``, so an illegal one raises ``RuleError``.
Chance comes from the ``rng`` passed in (decks and the bots' own choices).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from .. import decide, fold, view
from ..cards import FULL_DECK
from ..commands import NextRound, Open, Sit, Start, parse_command
from ..state import State
from ..view import View
from . import choose as bot_choose
from .common import Move

Chooser = Callable[[str, View, random.Random], Move]


def shuffled(rng: random.Random) -> list[str]:
    deck = list(FULL_DECK)
    rng.shuffle(deck)
    return deck


def table(preset: str, bots: list[str], rng: random.Random, *, settings: dict[str, Any] | None = None,
          first_dealer: int | None = None) -> State:
    """A table with ``bots[i]`` in seat i (a human placeholder holds seat 0 as host), started."""
    s = State()
    opening = Open(name="bots", preset=preset, player="p0", host_name="A", settings=settings or None,
                   first_dealer=first_dealer)
    s = fold(s, decide(s, opening))
    for i in range(1, len(bots)):
        s = fold(s, decide(s, Sit(player=f"p{i}", name=f"P{i}")))
    return fold(s, decide(s, Start(by=0, deck=shuffled(rng), pick=rng.randrange(4))))


def play_game(
    preset: str,
    bots: list[str],
    rng: random.Random,
    *,
    settings: dict[str, Any] | None = None,
    first_dealer: int | None = None,
    max_rounds: int = 30,
    chooser: Chooser | None = None,
    on_round: Callable[[State], None] | None = None,
    deck_rng: random.Random | None = None,
) -> State:
    """Play one game to its end (or ``max_rounds``); ``bots[seat]`` names the bot in each seat.

    ``deck_rng`` (default ``rng``) shuffles the decks and draws the first dealer's pick, apart
    from the bots' own chance: two games on the same ``deck_rng`` seed get the same decks
    round by round (duplicate format), whatever the bots choose.
    """
    chooser = chooser or (lambda bot, v, r: bot_choose(bot, v, r))
    deck_rng = deck_rng or rng
    s = table(preset, bots, deck_rng, settings=settings, first_dealer=first_dealer)
    while s.status != "finished":
        if s.status == "round_over":
            if on_round:
                on_round(s)
            if s.round >= max_rounds:
                break
            s = fold(s, decide(s, NextRound(by=0, deck=shuffled(deck_rng))))
            continue
        seat = s.turn
        assert seat is not None  # a round under way
        s = fold(s, decide(s, parse_command({**chooser(bots[seat], view(s, seat), rng), "by": seat})))
    if s.status == "finished" and on_round:
        on_round(s)
    return s
