"""The commands as typed values (engine/commands.py): parsed once from a shell's dict, the same
decisions as the dict gave, and a clear refusal for a malformed one."""

from __future__ import annotations

import dataclasses
import random

import pytest

from engine import RuleError, State, decide, fold, parse_command, view
from engine import commands as c
from engine.bots import choose
from engine.cards import FULL_DECK

from .helpers import open_table, started


def test_every_type_of_the_contract_parses_to_its_own_class():
    # claim is the shell's (POST /me/claim), never a move a client names
    assert set(c.COMMANDS) == {"open", "sit", "claim", *c.PLAYER_MOVES, *c.SYSTEM_COMMANDS}
    assert len(set(c.COMMANDS.values())) == len(c.COMMANDS)
    for kind, cls in c.COMMANDS.items():
        assert cls.type == kind
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen


@pytest.mark.parametrize(("data", "expected"), [
    ({"type": "open", "name": "t", "preset": "del15", "player": "p0", "host_name": "Ana"},
     c.Open(name="t", preset="del15", player="p0", host_name="Ana")),
    ({"type": "sit", "player": "p1", "name": "Bea"}, c.Sit(player="p1", name="Bea")),
    ({"type": "sit", "player": "P1", "name": "Bea", "account": True}, c.Sit(player="P1", name="Bea", account=True)),
    ({"type": "claim", "player": "g1", "account": "P1", "name": "Bea"},
     c.Claim(player="g1", account="P1", name="Bea")),
    ({"type": "add_bot", "player": "p0", "bot": "tito", "seat": 2}, c.AddBot(player="p0", bot="tito", seat=2)),
    ({"type": "settings", "player": "p0"}, c.ChangeSettings(player="p0", settings={})),
    ({"type": "start", "by": 0}, c.Start(by=0)),
    ({"type": "play", "by": 1, "card": "7o", "capture": ["8c"], "expected_version": 3},
     c.Play(by=1, card="7o", capture=("8c",))),
    ({"type": "play", "by": 1, "card": "7o", "capture": None}, c.Play(by=1, card="7o")),
    ({"type": "take_fifteen", "player": "p1", "cards": ["7o", "8c"]}, c.TakeFifteen(player="p1", cards=("7o", "8c"))),
    ({"type": "rematch", "by": 0}, c.Rematch(by=0, accept=True)),
    ({"type": "rematch", "by": 0, "accept": False, "teams": "swap"}, c.Rematch(by=0, accept=False, teams="swap")),
    ({"type": "open_away", "turn": 4, "by": None}, c.OpenAway(turn=4)),
    ({"type": "start_rematch", "deck": list(FULL_DECK), "pick": 5}, c.StartRematch(deck=list(FULL_DECK), pick=5)),
    ({"type": "lapse_rematch", "by": None}, c.LapseRematch()),
])
def test_a_dict_parses_to_its_command_with_the_old_defaults(data, expected):
    command = parse_command(data)
    assert command == expected
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(command, dataclasses.fields(command)[0].name, None)  # a parsed command stays as parsed


@pytest.mark.parametrize(("data", "code", "message", "details"), [
    # word for word the refusal decide always gave for an unknown type
    ({"type": "castle"}, "bad_request", "Unknown move 'castle'.", {"type": "unknown move"}),
    ({}, "bad_request", "Unknown move None.", {"type": "unknown move"}),
    # what no rule checks, checked here (before: a KeyError or a TypeError deep in a rule)
    ({"type": ["play"]}, "bad_request", "Unknown move ['play'].", {"type": "unknown move"}),
    ({"type": "sit", "player": "p1"}, "bad_request", "A sit command needs name.", {"name": "missing"}),
    ({"type": "open", "name": 7, "preset": "del15", "player": "p0", "host_name": "A"},
     "bad_request", "name must be text.", {"name": "not text"}),
    ({"type": "play", "by": "1", "card": "7o"}, "bad_request", "by is a seat, 0 to 3.", {"by": "invalid"}),
    ({"type": "play", "by": True, "card": "7o"}, "bad_request", "by is a seat, 0 to 3.", {"by": "invalid"}),
    ({"type": "play", "player": 3, "card": "7o"}, "bad_request", "player is a player's id.", {"player": "invalid"}),
    ({"type": "play", "by": 1, "card": "7o", "capture": [8]}, "bad_request", "capture lists cards.",
     {"capture": "not a list of cards"}),
    ({"type": "take_fifteen", "by": 1, "cards": {"7o": 1}}, "bad_request", "cards lists cards.",
     {"cards": "not a list of cards"}),
    ({"type": "start", "by": 0, "pick": 1.5}, "bad_request", "pick is a whole number.", {"pick": "invalid"}),
    ({"type": "rematch", "by": 0, "teams": 1}, "bad_request", "teams is keep or swap.", {"teams": "invalid"}),
])
def test_a_malformed_command_is_refused_clearly(data, code, message, details):
    with pytest.raises(RuleError) as err:
        parse_command(data)
    assert (err.value.code, err.value.message, err.value.details) == (code, message, details)
    with pytest.raises(RuleError) as err:  # decide parses a dict it is handed: the same refusal
        decide(State(), data)
    assert (err.value.code, err.value.message) == (code, message)


def test_a_typed_command_decides_as_its_dict_did_through_a_whole_game():
    """Bots play a game by dicts; every command, parsed, makes the same events at the same state."""
    rng = random.Random(7)
    state = started("selminha", 2, None, None)
    for _ in range(200):
        if state.status != "playing":
            break
        seat = state.turn
        move = {**choose("tito", view(state, seat), rng), "by": seat}
        events = decide(state, move)
        assert decide(state, parse_command(move)) == events
        assert decide(state, parse_command({**move, "player": state.seats[seat].player})) == events
        state = fold(state, events)
    assert state.version > 20


def test_the_actor_is_filled_in_from_whichever_the_shell_gave():
    state = open_table("del15", 2)
    host = state.seats[0].player
    by_id = decide(state, c.AddBot(player=host, bot="luna"))
    assert by_id == decide(state, c.AddBot(by=0, bot="luna"))
    with pytest.raises(RuleError) as err:  # the seat's holder is not the host
        decide(state, c.AddBot(by=1, bot="luna"))
    assert err.value.code == "host_only"


def test_chance_rides_in_the_command():
    state = open_table("del15", 2)
    deck = list(FULL_DECK)
    random.Random(3).shuffle(deck)
    [started_, dealt, *_] = decide(state, c.Start(by=0, deck=deck, pick=1))
    assert list(dealt.deck) == deck and started_.players == (0, 1)
