"""Deciding a command: which events it makes, or why it is refused.

A command is one of ``engine.commands``' classes (``Play(by=1, card="7o", capture=("8c",))``),
parsed from the shell's dict by ``parse_command``; a dict handed to ``decide`` is parsed
first, once. ``by`` is the actor's seat, or ``player`` the actor's id, set by the shell
after it has checked who is asking. Chance arrives inside the command (``deck``: a shuffled
deck; ``pick``: a random number), put there by the shell, and is recorded in the events.
System commands (``OpenAway``, ``Expire``, ``StartRematch``, ``LapseRematch``) come from the
workers' timers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TypeVar, assert_never

from . import flow, play, table
from .commands import (
    PLAYER_MOVES,
    SYSTEM_COMMANDS,
    Acting,
    AddBot,
    ChangeSettings,
    ChoosePartner,
    Claim,
    ClaimAway,
    Command,
    Exit,
    Expire,
    LapseRematch,
    NextRound,
    Open,
    OpenAway,
    Play,
    Rematch,
    RemoveBot,
    Resign,
    Sit,
    Start,
    StartRematch,
    TakeFifteen,
    parse_command,
)
from .decision import Decision
from .errors import RuleError
from .events import Event
from .state import State


def decide(state: State, command: Command | Mapping[str, object]) -> list[Event]:
    """The events ``command`` makes at ``state``; raises RuleError if refused."""
    return decide_and_fold(state, command)[0]


def decide_and_fold(state: State, command: Command | Mapping[str, object]) -> tuple[list[Event], State]:
    """The events ``command`` makes at ``state``, and the state they lead to.

    The decision folds each event as it adds it, so its state is ``fold(state, events)``
    already: a shell that needs both gets them without folding twice.
    """
    if isinstance(command, Mapping):
        command = parse_command(command)
    if isinstance(command, Acting):
        command = _with_actor(state, command)
    if state.status == "expired" and not isinstance(command, Open):
        raise RuleError("table_expired", "This table has expired; it can be read but not played.")
    d = Decision(state)
    _apply(d, command)
    return d.events, d.state


A = TypeVar("A", bound=Acting)


def _with_actor(state: State, command: A) -> A:
    """Both the actor's seat (``by``) and id (``player``), from whichever the shell gave.

    The API knows who is asking, not where they sit: seats move with partner choice.
    """
    by = command.by
    if command.player is not None and by is None:
        return replace(command, by=state.seat_of(command.player))
    if command.player is None and by is not None and 0 <= by < 4 and (seat := state.seats[by]) is not None:
        return replace(command, player=seat.player)
    return command


def _apply(d: Decision, c: Command) -> None:
    # a play first: nearly every command is one
    match c:
        case Play():
            play.play_card(d, c.by, c.card, list(c.capture))
        case TakeFifteen():
            play.take_fifteen(d, c.by, list(c.cards))
        case Open():
            table.open_table(d, c.name, c.preset, c.settings, c.player, c.host_name, c.decks, c.first_dealer,
                             c.host_seated, c.account)
        case Sit():
            table.sit(d, c.player, c.name, c.account)
        case Claim():  # a guest's seat (its seat token's player) becomes an account's: POST /me/claim
            table.claim(d, c.by, c.account, c.name)
        case AddBot():
            table.add_bot(d, c.player, c.bot, c.seat)
        case RemoveBot():
            table.remove_bot(d, c.player, c.seat)
        case ChoosePartner():
            table.choose_partner(d, c.player, c.seat)
        case ChangeSettings():
            table.change_settings(d, c.player, c.settings or {})
        case Start():
            table.start(d, c.player, c.deck, c.pick or 0)
        case NextRound():
            flow.next_round(d, c.by, c.deck)
        case Resign():
            flow.resign(d, c.by, "resign")
        case Exit():
            flow.resign(d, c.by, "exit")
        case ClaimAway():
            flow.claim_away(d, c.by)
        case Rematch():
            flow.answer_rematch(d, c.by, c.accept, c.teams)
        # from the workers' timers
        case OpenAway():
            flow.open_away(d, c.turn)
        case Expire():
            flow.expire(d)
        case StartRematch():
            flow.start_rematch(d, c.deck, c.pick or 0)
        case LapseRematch():
            flow.lapse_rematch(d)
        case _:
            assert_never(c)


__all__ = ["PLAYER_MOVES", "SYSTEM_COMMANDS", "decide", "decide_and_fold"]
