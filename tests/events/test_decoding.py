"""The fast decoder (msgspec) accepts and refuses exactly what the strict one (marshmallow) does."""

from __future__ import annotations

import pytest

from engine import events as ev
from events import decoding, records
from events.decoding import Envelope
from events.records import LogError, from_record, to_record

AT = "2024-05-01T12:00:00.000Z"


@pytest.mark.parametrize("preset,players", [("selminha", 4), ("del15", 3), ("cardgames", 2),
                                            ("selminha", 2)])
def test_every_event_of_random_games_decodes_as_the_strict_path_does(game_in_memory, preset, players):
    seen = set()
    for seed in range(3):
        for i, (event, _) in enumerate(game_in_memory(seed, preset=preset, players=players, games=2)):
            raw = records.dumps(to_record(event, version=i + 1, at=AT, actor="seat:1")).encode()
            env, fast = decoding.decode(raw, i + 1)
            assert isinstance(env, Envelope), f"{type(event).__name__} took the slow path"
            assert fast == from_record(records.loads(raw)) == event
            assert type(fast) is type(event)
            assert decoding.meta(env) == (i + 1, type(event).__name__, AT, "seat:1")
            seen.add(type(event).__name__)
    assert {"TableOpened", "RoundDealt", "HandsDealt", "CardPlayed", "RoundScored",
            "GameFinished"} <= seen


def _card(**data):
    base = {"seat": 0, "card": "7o", "captured": [], "escoba": False, "fifteen_left": False}
    base.update(data)
    return {"type": "CardPlayed", "v": 1, "version": 9, "at": AT, "actor": "seat:0", "data": base}


@pytest.mark.parametrize("data", [
    {"seat": "0"}, {"seat": 7}, {"seat": True}, {"card": "11o"}, {"captured": ["7o", "zz"]},
    {"escoba": 1}, {"escoba": "yes"}, {"extra": True}, {"captured": "7o"},
])
def test_bad_data_is_refused_with_its_version_by_both_paths(data):
    raw = records.dumps(_card(**data))
    with pytest.raises(LogError) as strict:
        from_record(records.loads(raw))
    with pytest.raises(LogError) as fast:
        decoding.decode(raw, 9)
    with pytest.raises(LogError) as many:
        decoding.decode_many([(9, raw)])
    assert fast.value.version == strict.value.version == many.value.version == 9
    assert str(fast.value) == str(strict.value) == str(many.value)


@pytest.mark.parametrize("record", [
    {**_card(), "type": "CardsJuggled"},
    {**_card(), "version": 0},
    {**_card(), "v": 2},  # newer than this server knows
    {"type": "CardPlayed", "version": 9},  # no data
])
def test_records_the_strict_path_refuses_the_fast_one_refuses(record):
    with pytest.raises(LogError):
        decoding.decode(records.dumps(record), 9)
    with pytest.raises(LogError):
        decoding.decode(b"not json", 9)


def test_other_value_checks_seat_groups_hands_and_operator_decks():
    bad_sides = to_record(ev.GameStarted(1, (0, 1), ((0,), (5,)), 0), version=3, at=AT, actor="s")
    bad_hands = to_record(ev.HandsDealt(((0, ("7o",)), (9, ("1o",))), False), version=4, at=AT,
                          actor="s")
    short_deck = to_record(ev.TableOpened("t", "del15", {}, "p", "A", (("7o",),)), version=1, at=AT,
                           actor="s")
    for record in (bad_sides, bad_hands, short_deck):
        with pytest.raises(LogError):
            decoding.decode(records.dumps(record), record["version"])


def test_an_old_schema_version_is_upcast_through_the_strict_path():
    record = _card()
    record["v"] = 0
    del record["data"]["fifteen_left"]
    env, event = decoding.decode(records.dumps(record), 9)
    assert isinstance(env, dict)  # the strict path took it
    assert event == ev.CardPlayed(0, "7o", (), False, False)


def test_data_not_in_the_stores_own_encoding_still_decodes_strictly():
    # spaces and another key order: valid, only not what the store writes
    raw = ('{"type": "CardPlayed", "v": 1, "version": 9, "at": "' + AT + '", "actor": "seat:0", '
           '"data": {"card": "7o", "seat": 0, "captured": [], "escoba": false}}')
    env, event = decoding.decode(raw, 9)
    assert event == ev.CardPlayed(0, "7o", (), False, False)
