"""What a seat, a spectator and an operator may see; redacted events."""

import json
import random

import pytest

from engine import decide, redact, view
from engine import events as ev
from engine.cards import FULL_DECK

from .helpers import (
    LAST_ROUND_FIELDS,
    apply,
    deck_with,
    open_table,
    play,
    play_out_round,
    random_command,
    shuffled,
    start,
    started,
)

CARDS = frozenset(FULL_DECK)
DECK = deck_with(
    ["1o", "2c", "3e", "4b"], ["5o", "6c", "1e"], ["2o", "4c", "9o"], ["8b", "8c", "10e"]
)


def cards_in(value) -> set[str]:
    """Every card code anywhere in a JSON-like value, keys included."""
    if isinstance(value, str):
        return {value} if value in CARDS else set()
    if isinstance(value, dict):
        return (
            set().union(*(cards_in(k) | cards_in(v) for k, v in value.items())) if value else set()
        )
    if isinstance(value, list | tuple):
        return set().union(*(cards_in(v) for v in value)) if value else set()
    return set()


def test_a_seat_sees_its_own_hand_and_no_other():
    state = started("del15", 3, None, DECK, first_dealer=0)  # seat 1 leads, then 2, then 0
    assert state.hands == {1: ["5o", "6c", "1e"], 2: ["2o", "4c", "9o"], 0: ["8b", "8c", "10e"]}
    for seat in (0, 1, 2):
        seen = view(state, seat)
        assert seen["you"] == seat and seen["hand"] == state.hands[seat]
        visible = cards_in(seen)
        assert visible == set(state.hands[seat]) | set(state.table)
        assert "stock" not in seen and "hands" not in seen and "piles" not in seen
        assert seen["stock_count"] == 40 - 4 - 9
        json.dumps(seen)  # JSON-ready


def test_a_spectator_sees_no_hand():
    state = started("del15", 2, None, DECK)
    for reader in (None, 3, 7):
        seen = view(state, reader)
        assert seen["you"] is None and seen["hand"] == [] and seen["options"] is None
        assert cards_in(seen) == set(state.table)
    assert [s["hand_count"] for s in view(state)["seats"]] == [3, 3, 0, 0]


def test_the_operator_sees_everything():
    state = started("del15", 2, None, DECK)
    full = view(state, None, full=True)
    assert full["stock"] == state.stock
    assert full["hands"] == {"0": state.hands[0], "1": state.hands[1]}
    assert cards_in(full) == CARDS


def test_no_stock_order_and_no_hidden_card_through_a_whole_round():
    rng = random.Random(4)
    state = started("selminha", 4, None, shuffled(rng))
    while state.status == "playing":
        for reader in (None, 0, 1, 2, 3):
            seen = view(state, reader)
            hidden = set(state.stock) | {
                c for seat, h in state.hands.items() if seat != reader for c in h
            }
            assert not (cards_in(seen) & hidden), reader
            assert seen["hand"] == (state.hands[reader] if reader is not None else [])
        state = apply(state, random_command(state, rng))


def test_options_only_for_the_player_to_move():
    state = started("del15", 2, None, DECK)
    mover = view(state, state.turn)
    assert [o["card"] for o in mover["options"]] == state.hands[state.turn]
    other = 1 - state.turn
    assert view(state, other)["options"] is None


def test_the_view_carries_the_contract_fields():
    state = started("del15", 4, None, DECK)
    seen = view(state, 0)
    for key in (
        "version",
        "status",
        "preset",
        "settings",
        "seats",
        "you",
        "hand",
        "table_cards",
        "stock_count",
        "dealer",
        "turn",
        "round",
        "scores",
        "last_round",
        "fifteen_to_take",
        "options",
        "last_deal",
        "winners",
    ):
        assert key in seen, key
    assert seen["status"] == "playing" and seen["preset"] == "del15"
    assert seen["scores"] == [{"seats": [0, 2], "points": 0}, {"seats": [1, 3], "points": 0}]
    assert [s["team"] for s in seen["seats"]] == [0, 1, 0, 1]
    assert seen["labels"]["1o"] == "As de oros"
    assert view(state, 0, deck="french")["labels"]["1o"] == "A♦"


def test_the_view_after_a_round_and_at_the_end():
    rng = random.Random(2)
    state, _ = play_out_round(started("cardgames", 2, None, shuffled(rng)), rng)
    seen = view(state, 0)
    assert seen["status"] == "round_over" and seen["hand"] == [] and seen["options"] is None
    assert len(seen["last_round"]) == 2
    for side in seen["last_round"]:
        assert set(side) >= LAST_ROUND_FIELDS
    assert sum(side["cards"] for side in seen["last_round"]) <= 40
    done = apply(state, {"type": "resign", "by": 0})
    assert view(done, 1)["winners"] == [1] and view(done, None)["status"] == "finished"


def test_redacted_round_dealt_hides_the_deck_and_other_hands():
    state = open_table("del15", 3, None, [DECK], first_dealer=0)
    events = decide(state, {"type": "start", "by": 0, "deck": list(FULL_DECK), "pick": 0})
    dealt = next(e for e in events if isinstance(e, ev.RoundDealt))
    for reader, hand in ((1, DECK[4:7]), (2, DECK[7:10]), (0, DECK[10:13])):
        out = redact(dealt, reader)
        assert out["type"] == "RoundDealt" and "deck" not in out["data"]
        assert out["data"]["table"] == DECK[:4] and out["data"]["hand"] == hand
        assert cards_in(out) == set(DECK[:4]) | set(hand)
    spectator = redact(dealt, None)
    assert "hand" not in spectator["data"] and cards_in(spectator) == set(DECK[:4])


def test_redacted_hands_dealt_shows_counts_and_only_your_hand():
    dealt = ev.HandsDealt(((1, ("1o", "2o", "3o")), (0, ("4o", "5o", "6o"))), last_deal=False)
    mine = redact(dealt, 0)
    assert mine == {
        "type": "HandsDealt",
        "data": {"last_deal": False, "counts": {"1": 3, "0": 3}, "hand": ["4o", "5o", "6o"]},
    }
    assert cards_in(redact(dealt, None)) == set()
    assert cards_in(redact(dealt, 3)) == set()


def test_redacted_table_opened_hides_the_operator_deck():
    opened = ev.TableOpened("t", "del15", {}, "p0", "Ana", (tuple(DECK),), 1)
    out = redact(opened, 0)
    assert "decks" not in out["data"] and "first_dealer" not in out["data"]
    assert cards_in(out) == set()


def test_public_events_pass_unchanged():
    played = ev.CardPlayed(1, "7o", ("8c",), True, False)
    assert redact(played, None) == {
        "type": "CardPlayed",
        "data": {
            "seat": 1,
            "card": "7o",
            "captured": ["8c"],
            "escoba": True,
            "fifteen_left": False,
        },
    }


def test_every_event_of_a_game_redacts_to_json_without_hidden_cards():
    rng = random.Random(9)
    state = start(open_table("selminha", 2), deck=shuffled(rng))
    _, events = play_out_round(state, rng)
    hands = {}
    for event in events:
        if isinstance(event, ev.HandsDealt):
            hands = dict(event.hands)
            out = redact(event, 0)
            assert cards_in(out) == set(hands[0])
            json.dumps(out)
    assert hands


def test_played_card_leaves_the_hand_in_the_view():
    state = started("selminha", 2, None, DECK)
    state = play(state, "6c")
    assert "6c" not in view(state, 1)["hand"] and "6c" in view(state, None)["table_cards"]


def test_a_jack_eight_tables_values_decide_the_faces_whatever_design_a_reader_picks():
    """At a french_swapped table the 8 is a J and the 9 a Q, for a reader who picks ``french`` too;
    another drawing (Spanish, numbers) is still the reader's to pick."""
    deck = deck_with(["8o", "9c", "10e", "1b"])
    swapped = started("selminha", 2, {"deck": "french_swapped"}, deck)
    for asked in (None, "french", "french_swapped"):
        seen = view(swapped, 0, deck=asked)
        assert seen["labels"]["8o"] == "J♦" and seen["labels"]["9c"] == "Q♥", asked
        assert seen["deck"] == "french_swapped"
    assert view(swapped, 0, deck="spanish")["labels"]["8o"] == "Sota de oros"
    assert view(swapped, 0, deck="numeric")["labels"]["8o"] == "8♦"
    plain = started("selminha", 2, {"deck": "french"}, deck)
    assert view(plain, 0, deck="french_swapped")["labels"]["8o"] == "Q♦"


def test_redacted_events_carry_no_player_id():
    opened = redact(ev.TableOpened("t", "del15", {}, "p_0123456789abcdef", "Ana"), None)
    seated = redact(ev.PlayerSeated(1, "p_fedcba9876543210", "Bea"), 1)
    claimed = redact(ev.SeatClaimed(1, "p0123456789abcdef", "Bea"), None)
    assert "p_" not in json.dumps([opened, seated])
    assert "p0123" not in json.dumps(claimed)
    assert seated["data"] == {"seat": 1, "name": "Bea", "account": False}
    assert claimed["data"] == {"seat": 1, "name": "Bea"}


@pytest.mark.parametrize("preset", ["selminha", "del15", "cardgames"])
def test_the_shared_part_of_a_view_names_no_hand_and_completes_to_each_readers_view(preset):
    from engine import for_reader, table_view

    rng = random.Random(9)
    state = started(preset, 4, None, shuffled(rng))
    while state.status == "playing":
        base = table_view(state)
        in_hands = {c for h in state.hands.values() for c in h}
        assert not (cards_in(base.fields) | base.shown) & (in_hands | set(state.stock))
        for reader in (None, 0, 1, 2, 3):
            # one shared part for every reader, and nothing of one reader left in it for the next
            assert for_reader(base, state, reader) == view(state, reader)
        assert for_reader(base, state, None, full=True) == view(state, None, full=True)
        state = apply(state, random_command(state, rng))


@pytest.mark.parametrize("preset", ["selminha", "del15", "cardgames"])
def test_a_shared_part_built_from_the_previous_versions_is_the_one_built_afresh(preset):
    """table_view(state, previous=...) takes the previous version's history entries again; across
    rounds, and for a late reader of an older version, it is the fresh build."""
    from engine import table_view
    from engine.view import _shown_cards

    rng = random.Random(3)
    state = started(preset, 2, None, shuffled(rng))
    states, previous, rounds, kept = [], None, set(), 0
    while state.status in ("playing", "round_over") and len(states) < 400:
        fresh = table_view(state)
        chained = table_view(state, previous=previous)
        assert chained == fresh
        if previous is not None:  # the fields a move left as they were are the previous part's own
            kept += sum(chained.fields[k] is previous.fields[k] for k in ("settings", "seats", "captured", "scores"))
            kept += sum(a is b for a, b in zip(chained.fields["seats"], previous.fields["seats"], strict=True))
        assert fresh.shown == frozenset(_shown_cards(fresh.fields))  # every card its fields name
        states.append(state)
        rounds.add(state.round)
        previous = chained
        state = apply(state, random_command(state, rng))
    assert len(rounds) >= 2  # a new round's history starts afresh from a previous one's
    assert kept > len(states) * 4  # settings, the seats no play changed (the empty ones, the other player's)
    for older in rng.sample(states, 20):  # a late reader: previous is a later version
        assert table_view(older, previous=previous) == table_view(older)


def _patched(before: dict, fields: dict, added, own: dict) -> dict:
    """A client's view of the next version: ``before`` with a patch's parts applied (shared/API.md)."""
    labels = own.pop("labels")
    after = {**before, **fields, **own}
    if added is not None:
        after["history"] = before["history"] + added
    after["labels"] = {**before["labels"], **labels}
    return after


@pytest.mark.parametrize("preset", ["selminha", "del15", "cardgames"])
@pytest.mark.parametrize("players", [2, 4])
def test_what_a_version_changed_takes_each_readers_view_to_the_next(preset, players):
    """changed + reader_changes, applied to a reader's view of the version before, give that reader's
    view of this one (the labels may keep cards shown before), through rounds and the game's end, and
    name no card the reader may not see."""
    from engine import table_view
    from engine.view import changed, reader_changes

    rng = random.Random(players * 7)
    state = started(preset, players, None, shuffled(rng))
    readers = (None, *range(players))
    held = {r: view(state, r) for r in readers}
    base, steps, rounds, appended = table_view(state), 0, set(), 0
    while state.status in ("playing", "round_over") and steps < 600:
        state = apply(state, random_command(state, rng))
        new = table_view(state, previous=base)
        fields, added = changed(base, new)
        hidden = {c for h in state.hands.values() for c in h} | set(state.stock)
        assert not cards_in(fields) & hidden and not cards_in(added or []) & hidden
        assert "version" in fields and not {"you", "hand", "options", "labels"} & fields.keys()
        appended += added is not None and len(added) > 0
        for r in readers:
            own = reader_changes(base, new, state, r)
            full = view(state, r)
            assert set(own["labels"]) <= set(full["labels"])  # only cards this reader is shown now
            got = _patched(held[r], fields, added, dict(own))
            labels, kept = full.pop("labels"), got.pop("labels")
            assert {c: kept.get(c) for c in labels} == labels  # each named as the reader's view names it
            assert got == full
            held[r] = {**got, "labels": {**held[r]["labels"], **own["labels"]}}
        base, steps = new, steps + 1
        rounds.add(state.round)
    assert len(rounds) >= 2 and appended > 10  # across a new round, and mostly as appended plays
