"""Records: one schema per event type, strict validation, upcasting."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine import events as ev
from events import records
from events.records import LogError, from_record, to_record

AT = "2024-05-01T12:00:00.000Z"


def test_every_event_type_has_its_own_schema_and_version():
    assert set(records.SCHEMAS) == set(engine.EVENT_TYPES)
    assert set(records.SCHEMA_VERSIONS) == set(engine.EVENT_TYPES)
    classes = {type(s) for s in records.SCHEMAS.values()}
    assert len(classes) == len(engine.EVENT_TYPES)
    for name, schema in records.SCHEMAS.items():
        assert type(schema).__name__ == f"{name}Schema"


def test_record_format():
    e = ev.CardPlayed(1, "7o", ("8c",), False)
    r = to_record(e, version=12, at=AT, actor="seat:1")
    assert r == {"type": "CardPlayed", "v": 1, "version": 12, "at": AT, "actor": "seat:1",
                 "data": {"seat": 1, "card": "7o", "captured": ["8c"], "escoba": False,
                          "fifteen_left": False}}
    assert from_record(json.loads(json.dumps(r))) == e


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), preset=st.sampled_from(["del15", "selminha", "cardgames"]),
       players=st.integers(2, 4))
def test_every_event_of_a_game_round_trips(game_in_memory, seed, preset, players):
    for i, (event, _) in enumerate(game_in_memory(seed, preset=preset, players=players)):
        r = json.loads(records.dumps(to_record(event, version=i + 1, at=AT, actor="system")))
        assert from_record(r) == event


def _card_record(**data):
    base = {"seat": 0, "card": "7o", "captured": [], "escoba": False, "fifteen_left": False}
    base.update(data)
    return {"type": "CardPlayed", "v": 1, "version": 9, "at": AT, "actor": "seat:0", "data": base}


@pytest.mark.parametrize("data", [
    {"seat": "0"},  # a string for an int
    {"seat": 7},  # not a seat
    {"card": "11o"},  # not a card
    {"captured": ["7o", "zz"]},
    {"escoba": 1},  # not a bool
    {"escoba": "yes"},
    {"extra": True},  # unknown field
])
def test_bad_data_is_refused_with_its_version(data):
    with pytest.raises(LogError) as exc:
        from_record(_card_record(**data))
    assert exc.value.version == 9
    assert str(exc.value).startswith("log breaks at version 9:")


def test_missing_field_and_unknown_type():
    r = _card_record()
    del r["data"]["card"]
    with pytest.raises(LogError, match="card"):
        from_record(r)
    with pytest.raises(LogError, match="unknown event type 'CardsJuggled'") as exc:
        from_record({**_card_record(), "type": "CardsJuggled"})
    assert exc.value.version == 9
    with pytest.raises(LogError):
        from_record({**_card_record(), "version": "nine"})
    with pytest.raises(LogError):
        from_record("not a dict")


def test_an_event_that_breaks_its_schema_is_refused_by_the_check_and_on_read():
    record = to_record(ev.CardPlayed(9, "7o", (), False), version=3, at=AT, actor="seat:0")
    with pytest.raises(LogError):
        records.check_record(record)
    with pytest.raises(LogError):
        from_record(record)


@pytest.mark.parametrize("preset", ["selminha", "del15", "cardgames"])
def test_every_event_the_engine_makes_fits_its_schema(preset):
    import random

    import engine
    from engine.cards import FULL_DECK

    def shuffled(rng):
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        return deck

    seen = set()
    for seed in range(3):
        rng = random.Random(seed)
        state, log = engine.State(), []

        def do(command, log=log):
            nonlocal state
            events = engine.decide(state, command)
            state = engine.fold(state, events)
            log.extend(events)

        do({"type": "open", "name": "t", "preset": preset, "player": "p0", "host_name": "Ana",
            "settings": {"target": 10} if preset == "del15" else {}})
        for i in range(1, 2 + seed):
            do({"type": "sit", "player": f"p{i}", "name": f"P{i}"})
        do({"type": "start", "by": 0, "deck": shuffled(rng), "pick": rng.randrange(4)})
        while state.status != "finished":
            if state.status == "round_over":
                do({"type": "next_round", "by": 0, "deck": shuffled(rng)})
                continue
            sets = engine.view(state, state.turn)["fifteen_to_take"]
            if sets:
                do({"type": "take_fifteen", "by": state.turn, "cards": sets["sets"][0]})
            option = rng.choice(engine.view(state, state.turn)["options"])
            capture = option["captures"][0] if option["captures"] and rng.random() < 0.8 else []
            if not option["may_leave"]:
                capture = option["captures"][0]
            do({"type": "play", "by": state.turn, "card": option["card"], "capture": capture})
        for version, event in enumerate(log, start=1):
            record = to_record(event, version=version, at=AT, actor="system")
            records.check_record(record)
            seen.add(record["type"])
            assert from_record(record) == engine.event_from(record["type"], record["data"])
    assert {"TableOpened", "GameStarted", "RoundDealt", "CardPlayed", "RoundScored", "GameFinished"} <= seen


# --- upcasting ----------------------------------------------------------------

def test_v0_card_played_without_fifteen_left_is_upcast():
    r = _card_record()
    del r["data"]["fifteen_left"]
    r["v"] = 0
    assert ("CardPlayed", 0) in records.UPCASTERS
    assert from_record(r) == ev.CardPlayed(0, "7o", (), False, False)


def test_upcasters_chain_and_an_unknown_step_breaks_the_log(monkeypatch):
    # pretend PlayerSeated is at v3: v1 -> v2 renames "nick" to "name", v2 -> v3 adds nothing
    monkeypatch.setitem(records.SCHEMA_VERSIONS, "PlayerSeated", 3)
    monkeypatch.setitem(records.UPCASTERS, ("PlayerSeated", 1),
                        lambda d: {"seat": d["seat"], "player": d["player"], "name": d["nick"]})
    old = {"type": "PlayerSeated", "v": 1, "version": 2, "at": AT, "actor": "seat:1",
           "data": {"seat": 1, "player": "p1", "nick": "Bo"}}
    with pytest.raises(LogError, match="no upcaster for PlayerSeated from v2"):
        from_record(old)
    monkeypatch.setitem(records.UPCASTERS, ("PlayerSeated", 2), lambda d: d)
    assert from_record(old) == ev.PlayerSeated(1, "p1", "Bo")
    # a record newer than the server knows is refused, not guessed at
    with pytest.raises(LogError, match="newer"):
        from_record({**old, "v": 4})


def test_an_upcaster_registers_once():
    with pytest.raises(ValueError):
        records.upcaster("CardPlayed", 0)(lambda d: d)


def test_old_log_replays_through_the_service(fake_redis, service):
    """A v0 CardPlayed already in a table's log still loads."""
    from events import autoplay

    tid = autoplay.new_table(service)
    state = autoplay.play(service, tid, __import__("random").Random(1), until_version=8)
    key = f"table:{{{tid}}}:events"
    entries = fake_redis.xrange(key)
    fake_redis.delete(key, f"table:{{{tid}}}:snapshot")
    rewritten = 0
    for entry_id, fields in entries:
        r = json.loads(fields[b"e"])
        if r["type"] == "CardPlayed":
            r["v"] = 0
            del r["data"]["fifteen_left"]
            rewritten += 1
        fake_redis.xadd(key, {"e": json.dumps(r)}, id=entry_id)
    assert rewritten
    from events.service import TableService

    assert TableService(fake_redis, cache_size=0, snapshot_every=0).load(tid) == state


def test_v1_seats_are_upcast_to_guests_and_v2_keeps_the_account():
    opened = {"type": "TableOpened", "v": 1, "version": 1, "at": AT, "actor": "seat:0",
              "data": {"name": "t", "preset": "del15", "settings": {}, "host": "p_1", "host_name": "A",
                       "decks": None, "first_dealer": None, "host_seated": True}}
    seated = {"type": "PlayerSeated", "v": 1, "version": 2, "at": AT, "actor": "seat:1",
              "data": {"seat": 1, "player": "p_2", "name": "Bo"}}
    assert from_record(opened).host_account is False
    assert from_record(seated) == ev.PlayerSeated(1, "p_2", "Bo", False)
    record = to_record(ev.PlayerSeated(1, "p9", "Bo", True), version=2, at=AT, actor="seat:1")
    assert record["v"] == 2 and from_record(record).account is True
    claimed = to_record(ev.SeatClaimed(1, "p9", "Bo"), version=3, at=AT, actor="seat:1")
    assert from_record(claimed) == ev.SeatClaimed(1, "p9", "Bo")
