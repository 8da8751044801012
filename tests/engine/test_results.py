"""A finished game's places from its log (engine/results.py) and the rated table's start check."""

from __future__ import annotations

import random

import pytest

from engine import RuleError, State, decide_and_fold, replay
from engine.cards import FULL_DECK
from engine.results import finished_games, mode_of, rated_seats

from .helpers import random_command


def _table(players=2, accounts=True, preset="del15", rated=True, bot=False):
    events = []
    state = State()

    def do(command):
        nonlocal state
        new, state = decide_and_fold(state, command)
        events.extend(new)

    do({"type": "open", "name": "t", "preset": preset, "settings": {"rated": rated}, "player": "a0",
        "host_name": "Ana", "account": accounts})
    for i in range(1, players):
        if bot and i == players - 1:
            do({"type": "add_bot", "by": 0, "bot": "tito"})
        else:
            do({"type": "sit", "player": f"a{i}", "name": f"P{i}", "account": accounts})
    return state, events, do


def _game(players=2, preset="del15", seed=1, resign_at=None, how="resign"):
    state, events, _ = _table(players, preset=preset)
    rng = random.Random(seed)
    deck = list(FULL_DECK)
    rng.shuffle(deck)
    new, state = decide_and_fold(state, {"type": "start", "by": 0, "deck": deck, "pick": 0})
    events += new
    moves = 0
    while True:
        if resign_at is not None and moves == resign_at:
            new, state = decide_and_fold(state, {"type": how, "by": 1})
            events += new
            break
        command = random_command(state, rng)
        if command is None:
            break
        new, state = decide_and_fold(state, command)
        events += new
        moves += 1
    return state, events


def test_rated_seats_are_the_accounts():
    state, _, _ = _table(3)
    assert rated_seats(state) == ["a0", "a1", "a2", None]
    guests, _, _ = _table(2, accounts=False)
    assert rated_seats(guests) == [None, None, None, None]


def test_a_rated_table_with_a_guest_or_a_bot_does_not_start_and_names_the_seats():
    for state in (_table(2, accounts=False)[0], _table(3, bot=True)[0]):
        with pytest.raises(RuleError) as refused:
            decide_and_fold(state, {"type": "start", "by": 0, "deck": list(FULL_DECK), "pick": 0})
        assert refused.value.code == "not_rated" and refused.value.status == 409
    assert refused.value.details == {"seats": [2]}  # the bot's
    state, _, _ = _table(2, accounts=False, rated=False)
    decide_and_fold(state, {"type": "start", "by": 0, "deck": list(FULL_DECK), "pick": 0})


def test_a_game_won_at_the_target_ranks_by_score():
    state, events = _game(2, seed=3)
    [result] = finished_games(events)
    assert result.reason == "target" and result.mode == "two" and result.rated and result.game == 1
    assert replay(events[:result.version]).status == "finished"
    winner = state.winners[0]
    by_seat = {p.seat: p for p in result.placings}
    assert by_seat[winner].place == 1 and by_seat[winner].result == "win"
    assert by_seat[1 - winner].place == 2 and by_seat[1 - winner].result == "loss"
    assert {p.player for p in result.placings} == {"a0", "a1"}
    assert not any(p.abandoned for p in result.placings)


def test_a_resignation_is_a_loss_and_an_abandon_even_when_ahead():
    for how in ("resign", "exit"):
        state, events = _game(3, seed=5, resign_at=7, how=how)
        [result] = finished_games(events)
        by_seat = {p.seat: p for p in result.placings}
        assert result.mode == "three" and result.reason == how
        assert by_seat[1].place == 3 and by_seat[1].result == "loss" and by_seat[1].abandoned
        assert sorted(p.place for p in result.placings if p.seat != 1)[0] == 1


def test_an_expired_table_has_no_result():
    state, events = _game(2, seed=2, resign_at=4, how="resign")
    before_end = events[:-2]  # the resignation's two events left out: mid-game
    state = replay(before_end)
    assert state.status == "playing"
    new, after = decide_and_fold(state, {"type": "expire"})
    assert after.status == "expired"
    assert finished_games(before_end + new) == []


def test_modes():
    assert [mode_of(2, 2), mode_of(3, 3), mode_of(4, 2), mode_of(4, 4)] == ["two", "three", "teams", "four"]


def test_teams_share_a_place():
    state, events = _game(4, preset="del15", seed=9)
    [result] = finished_games(events)
    assert result.mode == "teams"
    places = {p.side: p.place for p in result.placings}
    assert sorted(places.values()) == [1, 2]
    assert all(p.place == places[p.side] for p in result.placings)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_what_a_result_never_reads_may_be_left_out(players):
    from engine.results import ESCOBA_EVENTS, NOT_READ

    for seed in range(4):
        state, events = _game(players, seed=seed, resign_at=30 if seed == 3 else None)
        light = [None if type(e).__name__ in NOT_READ
                 or (type(e).__name__ in ESCOBA_EVENTS and not getattr(e, "escoba", getattr(e, "escobas", 0)))
                 else e for e in events]
        assert None in light
        full = finished_games(events)
        assert finished_games(light) == full
        [result] = full
        assert replay(events).winners == state.winners
        assert {p.seat for p in result.placings if p.result == "win"} == set(state.winners)
        assert sum(p.escobas for p in result.placings) == sum(
            getattr(e, "escobas", 0) if type(e).__name__ == "OpeningTableTaken" else int(getattr(e, "escoba", 0))
            for e in events if type(e).__name__ in ESCOBA_EVENTS)
