"""The table before play: seats, bots, the host's partner, start."""

import pytest

from engine import RuleError, decide

from .helpers import apply, open_table, start


def refused(state, command):
    with pytest.raises(RuleError) as err:
        decide(state, command)
    return err.value


def test_open_seats_the_host_in_seat_0():
    state = open_table("selminha", 1)
    assert state.status == "waiting" and state.preset == "selminha"
    assert state.seats[0].player == "p0" and state.seats[0].kind == "human"
    assert state.seat_of("p0") == 0 and state.host == "p0"
    assert (
        refused(
            state, {"type": "open", "name": "x", "preset": "del15", "player": "q", "host_name": "Q"}
        ).code
        == "bad_request"
    )


def test_seats_fill_in_order_and_then_the_table_is_full():
    state = open_table("del15", 4)
    assert [s.player for s in state.seats] == ["p0", "p1", "p2", "p3"]
    err = refused(state, {"type": "sit", "player": "p4", "name": "Late"})
    assert err.code == "table_full" and err.status == 409


def test_nobody_sits_once_the_game_started():
    state = start(open_table("del15", 2))
    err = refused(state, {"type": "sit", "player": "p9", "name": "Late"})
    assert err.code == "game_started"


def test_bots_fill_empty_seats_before_start_host_only():
    state = open_table("selminha", 2)
    err = refused(state, {"type": "add_bot", "by": 1, "bot": "carmen"})
    assert err.code == "host_only" and err.status == 403
    state = apply(state, {"type": "add_bot", "by": 0, "bot": "carmen"})
    state = apply(state, {"type": "add_bot", "by": 0, "bot": "tito"})
    assert [(s.kind, s.name) for s in state.seats[2:]] == [("bot", "Carmen"), ("bot", "Tito")]
    assert refused(state, {"type": "add_bot", "by": 0, "bot": "luna"}).code == "table_full"
    state = apply(state, {"type": "remove_bot", "by": 0, "seat": 2})
    assert state.seats[2] is None
    assert refused(state, {"type": "remove_bot", "by": 0, "seat": 1}).code == "bad_request"
    assert refused(state, {"type": "add_bot", "by": 0, "bot": "hal"}).code == "bad_request"
    assert (
        refused(state, {"type": "add_bot", "by": 0, "bot": "luna", "seat": 3}).code == "seat_taken"
    )
    state = apply(state, {"type": "add_bot", "by": 0, "bot": "luna", "seat": 2})
    assert state.seats[2].bot == "luna"
    state = start(state)
    assert refused(state, {"type": "add_bot", "by": 0, "bot": "luna"}).code == "game_started"


def test_start_needs_two_seated_and_the_host():
    alone = open_table("del15", 1)
    assert refused(alone, {"type": "start", "by": 0, "deck": None}).code == "not_enough_players"
    two = open_table("del15", 2)
    assert refused(two, {"type": "start", "by": 1}).code == "host_only"
    state = start(two)
    assert state.status == "playing" and state.players == (0, 1)
    assert refused(state, {"type": "start", "by": 0}).code == "game_started"


def test_empty_seats_sit_the_game_out_and_turns_skip_them():
    state = open_table("cardgames", 1)
    state = apply(state, {"type": "add_bot", "by": 0, "bot": "tito", "seat": 2})
    state = start(state)
    assert state.players == (0, 2) and state.sides == ((0,), (2,))
    assert state.turn == 2  # seat 0 deals (the random pick was 0)
    assert state.next_seat(2) == 0 and state.next_seat(0) == 2


def test_three_players_are_every_player_for_themselves():
    state = start(open_table("selminha", 3))
    assert state.sides == ((0,), (1,), (2,))


def test_four_play_in_teams_partners_across():
    state = start(open_table("del15", 4))
    assert state.sides == ((0, 2), (1, 3))
    assert state.side_of == {0: 0, 2: 0, 1: 1, 3: 1}


def test_host_picks_a_partner_in_selminha():
    state = open_table("selminha", 3)
    err = refused(state, {"type": "choose_partner", "by": 0, "seat": 1})
    assert err.code == "not_enough_players"
    state = apply(state, {"type": "sit", "player": "p3", "name": "P3"})
    assert refused(state, {"type": "choose_partner", "by": 1, "seat": 1}).code == "host_only"
    assert refused(state, {"type": "choose_partner", "by": 0, "seat": 0}).code == "bad_request"
    state = apply(state, {"type": "choose_partner", "by": 0, "seat": 1})
    assert state.seats[2].player == "p1" and state.seats[1].player == "p2"
    assert state.seat_of("p1") == 2
    state = start(state)
    assert state.sides == ((0, 2), (1, 3))
    assert state.seats[2].player == "p1"


def test_partners_are_fixed_in_del15():
    state = open_table("del15", 4)
    assert refused(state, {"type": "choose_partner", "by": 0, "seat": 1}).code == "forbidden"
