"""Deciding a command: which events it makes, or why it is refused.

A command is a plain dict: ``{"type": "play", "by": 1, "card": "7o", "capture": ["8c"]}``.
``by`` is the actor's seat, or ``player`` the actor's id, set by the shell
after it has checked who is asking. Chance arrives inside the command
(``deck``: a shuffled deck; ``pick``: a random number), put there by the
shell, and is recorded in the events.
System commands (``open_away``, ``expire``, ``start_rematch``,
``lapse_rematch``) come from the workers' timers.
"""

from __future__ import annotations

from . import flow, play, table
from .decision import Decision
from .errors import RuleError
from .state import State


def decide(state: State, command: dict) -> list:
    """The events ``command`` makes at ``state``; raises RuleError if refused."""
    return decide_and_fold(state, command)[0]


def decide_and_fold(state: State, command: dict) -> tuple[list, State]:
    """The events ``command`` makes at ``state``, and the state they lead to.

    The decision folds each event as it adds it, so its state is ``fold(state, events)``
    already: a shell that needs both gets them without folding twice.
    """
    kind = command.get("type")
    handler = _COMMANDS.get(kind)
    if handler is None:
        raise RuleError("bad_request", f"Unknown move {kind!r}.", {"type": "unknown move"})
    if kind not in ("open", "sit"):
        command = _with_actor(state, command)
    if state.status == "expired" and kind not in ("open",):
        raise RuleError("table_expired", "This table has expired; it can be read but not played.")
    d = Decision(state)
    handler(d, command)
    return d.events, d.state


def _with_actor(state: State, command: dict) -> dict:
    """Both the actor's seat (``by``) and id (``player``), from whichever the shell gave.

    The API knows who is asking, not where they sit: seats move with partner choice.
    """
    if "player" in command and "by" not in command:
        return {**command, "by": state.seat_of(command["player"])}
    by = command.get("by")
    if "player" not in command and isinstance(by, int) and 0 <= by < 4 and state.seats[by] is not None:
        return {**command, "player": state.seats[by].player}
    return command


def _by(c: dict):
    return c.get("by")


def _who(c: dict):
    return c.get("player")


_COMMANDS = {
    "open": lambda d, c: table.open_table(
        d, c["name"], c["preset"], c.get("settings"), c["player"], c["host_name"],
        c.get("decks"), c.get("first_dealer"), c.get("host_seated", True), c.get("account", False),
    ),
    "sit": lambda d, c: table.sit(d, c["player"], c["name"], c.get("account", False)),
    # a guest's seat (its seat token's player) becomes an account's: POST /me/claim
    "claim": lambda d, c: table.claim(d, _by(c), c["account"], c["name"]),
    "add_bot": lambda d, c: table.add_bot(d, _who(c), c.get("bot"), c.get("seat")),
    "remove_bot": lambda d, c: table.remove_bot(d, _who(c), c.get("seat")),
    "choose_partner": lambda d, c: table.choose_partner(d, _who(c), c.get("seat")),
    "settings": lambda d, c: table.change_settings(d, _who(c), c.get("settings") or {}),
    "start": lambda d, c: table.start(d, _who(c), c.get("deck"), c.get("pick", 0)),
    "play": lambda d, c: play.play_card(d, _by(c), c.get("card"), list(c.get("capture") or [])),
    "take_fifteen": lambda d, c: play.take_fifteen(d, _by(c), list(c.get("cards") or [])),
    "next_round": lambda d, c: flow.next_round(d, _by(c), c.get("deck")),
    "resign": lambda d, c: flow.resign(d, _by(c), "resign"),
    "exit": lambda d, c: flow.resign(d, _by(c), "exit"),
    "claim_away": lambda d, c: flow.claim_away(d, _by(c)),
    "rematch": lambda d, c: flow.answer_rematch(d, _by(c), c.get("accept", True), c.get("teams")),
    # from the workers' timers
    "open_away": lambda d, c: flow.open_away(d, c.get("turn")),
    "expire": lambda d, c: flow.expire(d),
    "start_rematch": lambda d, c: flow.start_rematch(d, c.get("deck"), c.get("pick", 0)),
    "lapse_rematch": lambda d, c: flow.lapse_rematch(d),
}

PLAYER_MOVES = (
    "add_bot", "remove_bot", "choose_partner", "settings", "start", "play", "take_fifteen",
    "next_round", "resign", "exit", "claim_away", "rematch",
)
SYSTEM_COMMANDS = ("open_away", "expire", "start_rematch", "lapse_rematch")
