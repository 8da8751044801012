"""Drive a table with random legal moves through a TableService (tests, bench, demos).

``next_command(state, rng)`` picks a legal command for whoever must act, read
from the seat's own view (``options``, ``fifteen_to_take``) as a client would;
``play(service, table_id, rng, ...)`` executes commands until a limit.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import engine
from engine.state import State

from .service import Outcome, TableService

ACTOR_SYSTEM = "system"


def open_command(player: str = "p0", name: str = "Ana", preset: str = "del15", **extra: Any) -> dict[str, Any]:
    return {"type": "open", "name": "autoplay", "preset": preset, "player": player,
            "host_name": name, **extra}


def next_command(state: State, rng: random.Random) -> tuple[dict[str, Any], str] | None:
    """A legal command at ``state`` and its actor, or None when nothing is left to do."""
    s = state
    if s.status == "waiting":
        return {"type": "start", "by": 0}, "seat:0"
    if s.status == "round_over":
        seat = s.players[0]
        return {"type": "next_round", "by": seat}, f"seat:{seat}"
    if s.status == "playing" and s.turn is not None:
        seat = s.turn
        v = engine.view(s, seat)
        fifteen = v.get("fifteen_to_take")
        if fifteen and rng.random() < 0.7:
            return ({"type": "take_fifteen", "by": seat, "cards": rng.choice(fifteen["sets"])},
                    f"seat:{seat}")
        options = v["options"]
        if not options:  # (a seat whose turn it is always has a card to play)
            return None
        option = rng.choice(options)
        capture: list[str] = []
        if option["captures"] and (not option["may_leave"] or rng.random() < 0.8):
            capture = rng.choice(option["captures"])
        command = {"type": "play", "by": seat, "card": option["card"], "capture": capture}
        return command, f"seat:{seat}"
    if s.status == "finished" and s.rematch_allowed():
        if s.rematch_ready():
            return {"type": "start_rematch"}, ACTOR_SYSTEM
        seat = next(x for x in s.humans() if not s.rematch.get(x))
        return {"type": "rematch", "by": seat, "accept": True}, f"seat:{seat}"
    return None


def new_table(service: TableService, *, players: int = 2, preset: str = "del15", **open_extra: Any) -> str:
    """A table opened by p0 with ``players`` humans seated; not started."""
    table_id, _ = service.create(open_command(preset=preset, **open_extra))
    for i in range(1, players):
        service.execute(table_id, {"type": "sit", "player": f"p{i}", "name": f"P{i}"},
                        actor=f"seat:{i}")
    return table_id


def play(service: TableService, table_id: str, rng: random.Random, *, until_version: int | None = None,
         games: int | None = 1, max_commands: int = 100_000,
         on_outcome: Callable[[Outcome], object] | None = None) -> State:
    """Execute random legal commands until ``until_version`` is reached (or passed),
    ``games`` games are finished, or nothing is left; the last state."""
    state = service.load(table_id)
    for _ in range(max_commands):
        if until_version is not None and state.version >= until_version:
            break
        if games is not None and state.status == "finished" and state.game >= games:
            break
        nxt = next_command(state, rng)
        if nxt is None:
            break
        command, actor = nxt
        outcome = service.execute(table_id, command, actor=actor)
        if on_outcome is not None:
            on_outcome(outcome)
        state = outcome.state
    return state
