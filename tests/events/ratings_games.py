"""Rated games played through the TableService, for the ratings' tests (events, workers, api)."""

from __future__ import annotations

import random
import secrets

from tests.engine.helpers import random_command


def new_players(n: int) -> list[str]:
    return ["p" + secrets.token_hex(8) for _ in range(n)]


def open_rated(svc, players: list[str], *, preset: str = "del15", target: int = 10, rated: bool = True,
               names: list[str] | None = None) -> str:
    names = names or [f"N{p[1:7]}" for p in players]
    settings = {"rated": rated, "target": target} if preset == "del15" else {"rated": rated}
    tid, _ = svc.create({"type": "open", "name": "rated", "preset": preset, "settings": settings,
                         "player": players[0], "host_name": names[0], "account": True})
    for i, (p, name) in enumerate(zip(players[1:], names[1:], strict=True), start=1):
        svc.execute(tid, {"type": "sit", "player": p, "name": name, "account": True}, actor=f"seat:{i}")
    return tid


def play(svc, tid: str, *, seed: int = 1, resign_after: int | None = None, resigner: int = 1,
         how: str = "resign", stop_after: int | None = None):
    """Start and play the table's game with random legal moves to its end (or ``resign_after``
    moves then ``how`` by seat ``resigner``; or stop after ``stop_after`` moves). The final state."""
    rng = random.Random(seed)
    state = svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0").state
    moves = 0
    while True:
        if resign_after is not None and moves == resign_after:
            return svc.execute(tid, {"type": how, "by": resigner}, actor=f"seat:{resigner}").state
        if stop_after is not None and moves == stop_after:
            return state
        command = random_command(state, rng)
        if command is None:
            return state
        command.pop("deck", None)  # the service deals
        state = svc.execute(tid, command, actor=f"seat:{command['by']}").state
        moves += 1


def rated_game(svc, players: list[str], **kw) -> tuple[str, object]:
    tid = open_rated(svc, players, preset=kw.pop("preset", "del15"))
    return tid, play(svc, tid, **kw)
