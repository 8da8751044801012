"""A turn: mandatory capture, escobas, TAKE THE 15, the hybrid's last card, errors."""

import dataclasses

import pytest

from engine import PRESETS, RuleError, custom_settings, decide, fold, view
from engine import events as ev
from engine.capture import captures
from engine.play import OPTIONS_LIMIT

from .helpers import apply, deck_with, open_table, play, started, started_custom

# seat 0 deals, seat 1 leads; seat 1's hand is dealt first
TABLE = ["3o", "5c", "8e", "10b"]  # 26: the seed 002 table plus a Rey
LEAD = ["7b", "6c", "1e"]  # 7 can take (8) or (3, 5); 6 and 1 take nothing
SECOND = ["2o", "4c", "9o"]


def game(preset="del15", settings=None, table=TABLE, lead=LEAD, second=SECOND):
    return started(preset, 2, settings, deck_with(table, lead, second), first_dealer=0)


def refused(state, command):
    with pytest.raises(RuleError) as err:
        decide(state, command)
    return err.value


# --- capture, mandatory or not ---------------------------------------------


@pytest.mark.parametrize("preset", ["del15", "cardgames"])
def test_a_card_that_can_capture_must(preset):
    state = game(preset)
    err = refused(state, {"type": "play", "by": 1, "card": "7b", "capture": []})
    assert err.code == "must_capture" and err.status == 422
    assert err.details["captures"] == [["8e"], ["3o", "5c"]]
    assert "7b can capture" in err.message and "play another card" in err.message


@pytest.mark.parametrize("preset", ["del15", "cardgames"])
def test_mandatory_capture_binds_the_card_not_the_hand(preset):
    state = play(game(preset), "6c")
    assert state.table == [*TABLE, "6c"]
    assert state.turn == 0


def test_capture_is_optional_in_selminha():
    state = play(game("selminha"), "7b")
    assert state.table == [*TABLE, "7b"]


def test_options_say_what_each_card_may_take_and_whether_it_may_stay():
    opts = {o["card"]: o for o in view(game("del15"), 1)["options"]}
    assert opts["7b"] == {"card": "7b", "captures": [["8e"], ["3o", "5c"]], "may_leave": False,
                          "more_captures": False}
    assert opts["6c"] == {"card": "6c", "captures": [], "may_leave": True, "more_captures": False}
    assert view(game("selminha"), 1)["options"][0]["may_leave"] is True
    assert view(game("del15"), 0)["options"] is None  # not seat 0's turn


def test_the_player_chooses_the_set():
    a = play(game(), "7b", ["8e"])
    assert a.table == ["3o", "5c", "10b"] and sorted(a.piles[1]) == ["7b", "8e"]
    b = play(game(), "7b", ["5c", "3o"])
    assert b.table == ["8e", "10b"] and sorted(b.piles[1]) == ["3o", "5c", "7b"]
    assert b.last_capturer == 1 and b.escobas == [0, 0]


def test_illegal_capture_is_refused_with_the_sum():
    err = refused(game(), {"type": "play", "by": 1, "card": "6c", "capture": ["10b"]})
    assert err.code == "illegal_capture" and err.message == "6 + 10 makes 16, not 15."
    state = started("del15", 2, None, deck_with(["5c", "2e", "8b", "10o"], ["7o", "1c", "1e"]))
    err = refused(state, {"type": "play", "by": 1, "card": "7o", "capture": ["5c", "2e"]})
    assert err.code == "illegal_capture" and err.message == "7 + 5 + 2 makes 14, not 15."


def test_turn_and_hand_errors():
    state = game()
    err = refused(state, {"type": "play", "by": 0, "card": "2o", "capture": []})
    assert err.code == "not_your_turn" and err.status == 409
    err = refused(state, {"type": "play", "by": 1, "card": "2o", "capture": []})
    assert err.code == "card_not_in_hand" and err.status == 422
    err = refused(state, {"type": "play", "by": 1, "card": None})
    assert err.code == "card_not_in_hand"
    err = refused(open_table("del15", 2), {"type": "play", "by": 0, "card": "2o"})
    assert err.code == "not_playing"
    err = refused(state, {"type": "fly", "by": 1})
    assert err.code == "bad_request"


# --- escobas -----------------------------------------------------------------


def test_capturing_the_whole_table_is_an_escoba():
    state = started("del15", 2, None, deck_with(["1o", "2c", "3e", "4b"], ["5o", "6c", "1e"]))
    state = play(state, "5o", ["1o", "2c", "3e", "4b"])
    assert state.table == [] and state.escobas == [0, 1]
    events = decide(
        started("del15", 2, None, deck_with(["1o", "2c", "3e", "4b"], ["5o"])),
        {"type": "play", "by": 1, "card": "5o", "capture": ["4b", "3e", "2c", "1o"]},
    )
    assert events == [ev.CardPlayed(1, "5o", ("4b", "3e", "2c", "1o"), True, False)]


def last_card(settings, table, card):
    """The round's very last card is seat 1's ``card``, with ``table`` on the table."""
    state = started_custom(settings, 2, deck_with(["1o", "2c", "3e", "4b"]))
    state = state.copy()
    state.stock, state.hands, state.table, state.turn = [], {0: [], 1: [card]}, list(table), 1
    return state


def test_hybrid_last_card_sweep_is_not_an_escoba():
    settings = custom_settings(capture="hybrid", last_sweep_escoba=False, mandatory_capture=True)
    state = last_card(settings, ["7c"], "7o")
    events = decide(state, {"type": "play", "by": 1, "card": "7o", "capture": ["7c"]})
    assert events[0] == ev.CardPlayed(1, "7o", ("7c",), False, False)
    assert isinstance(events[1], ev.RoundEnded) and events[1].leftovers == ()
    assert events[2].sides[1]["escobas"] == 0


def test_hybrid_sweep_before_the_last_card_is_an_escoba():
    settings = custom_settings(capture="hybrid", last_sweep_escoba=False, mandatory_capture=True)
    state = started_custom(settings, 2, deck_with(["1o", "2c", "3e", "4b"])).copy()
    state.hands, state.table, state.turn = {0: ["2e"], 1: ["7o", "1c"]}, ["7c"], 1
    state = play(state, "7o", ["7c"])
    assert state.escobas == [0, 1] and state.table == []


@pytest.mark.parametrize("preset", ["selminha", "del15", "cardgames"])
def test_a_last_card_sweep_is_an_escoba_in_the_presets(preset):
    state = last_card(PRESETS[preset], ["8c"], "7o")
    events = decide(state, {"type": "play", "by": 1, "card": "7o", "capture": ["8c"]})
    assert events[0].escoba is True
    assert events[2].sides[1]["escobas"] == 1


# --- end of the round: leftovers ---------------------------------------------


def test_leftovers_go_to_the_last_capturer_and_are_never_an_escoba():
    settings = custom_settings()
    state = last_card(settings, ["8c", "1o"], "9e")  # 9 takes nothing here
    state.last_capturer = 0
    events = decide(state, {"type": "play", "by": 1, "card": "9e", "capture": []})
    ended = events[1]
    assert ended == ev.RoundEnded(("8c", "1o", "9e"), 0)
    side0 = events[2].sides[0]
    assert side0["escobas"] == 0 and side0["cards"] == 3


def test_leftovers_go_to_nobody_when_nobody_captured():
    state = started("selminha", 2, None, deck_with(["1o", "2c", "3e", "4b"]))
    # in selminha nothing forces a capture: leaving everything, nobody captured
    events = []
    while state.status == "playing":
        new = decide(state, {"type": "play", "by": state.turn, "card": state.hands[state.turn][0]})
        events += new
        state = fold(state, new)
    ended = next(e for e in events if isinstance(e, ev.RoundEnded))
    assert ended.to_seat is None and len(ended.leftovers) == 40
    scored = next(e for e in events if isinstance(e, ev.RoundScored))
    assert all(side["cards"] == 0 and side["round_points"] == 0 for side in scored.sides)
    assert state.piles == [[], []]


# --- TAKE THE 15 (selminha) -------------------------------------------------


def left_behind():
    """Seat 1 leaves its 7, which could have taken the Sota or 3 + 5."""
    return apply(game("selminha"), {"type": "play", "by": 1, "card": "7b", "capture": []})


def test_leaving_a_card_that_could_capture_opens_the_fifteen():
    state = left_behind()
    assert state.fifteen == ("7b", 1)
    seen = view(state, 0)["fifteen_to_take"]
    assert seen == {"card": "7b", "left_by": 1, "sets": [["7b", "8e"], ["7b", "3o", "5c"]], "more_sets": False}
    assert view(state, None)["fifteen_to_take"] == seen  # public


def test_a_fifteen_with_more_sets_than_listed_says_so_and_any_set_is_taken():
    """The view lists 64 sets of a 15 left behind and flags the cut (as more_captures)."""
    import copy

    from engine.capture import captures
    from engine.play import OPTIONS_LIMIT

    state = copy.deepcopy(left_behind())
    # a big table: the 7 left behind makes 15 with a great many sets of small cards
    small = [f"{v}{s}" for v in (1, 2, 3, 4) for s in "oceb"]
    state.table = ["7b", *small]
    every = captures("7b", small, state.settings)
    assert len(every) > OPTIONS_LIMIT
    seen = view(state, 0)["fifteen_to_take"]
    assert len(seen["sets"]) == OPTIONS_LIMIT and seen["more_sets"] is True
    unlisted = ["7b", *every[-1]]
    assert unlisted not in seen["sets"]
    after = apply(state, {"type": "take_fifteen", "by": 0, "cards": unlisted})
    assert sorted(after.piles[0]) == sorted(unlisted)


def test_leaving_a_card_that_could_not_capture_opens_nothing():
    state = apply(game("selminha"), {"type": "play", "by": 1, "card": "6c", "capture": []})
    assert state.fifteen is None and view(state, 0)["fifteen_to_take"] is None


def test_take_the_fifteen_then_play():
    state = left_behind()
    state = apply(state, {"type": "take_fifteen", "by": 0, "cards": ["8e", "7b"]})
    assert sorted(state.piles[0]) == ["7b", "8e"] and state.table == ["3o", "5c", "10b"]
    assert state.escobas == [0, 0] and state.last_capturer == 0
    assert state.turn == 0 and state.fifteen is None  # still seat 0's turn
    err = refused(state, {"type": "take_fifteen", "by": 0, "cards": ["7b", "3o", "5c"]})
    assert err.code == "no_fifteen_to_take"
    state = play(state, "9o")
    assert state.turn == 1


def test_take_the_fifteen_that_clears_the_table_is_an_escoba():
    state = game("selminha", table=["1o", "2c", "3e", "4b"], lead=["5o", "6c", "1e"])
    state = apply(state, {"type": "play", "by": 1, "card": "5o", "capture": []})
    events = decide(
        state, {"type": "take_fifteen", "by": 0, "cards": ["5o", "1o", "2c", "3e", "4b"]}
    )
    assert events == [ev.FifteenTaken(0, "5o", ("1o", "2c", "3e", "4b"), True)]
    state = apply(state, {"type": "take_fifteen", "by": 0, "cards": ["5o", "1o", "2c", "3e", "4b"]})
    assert state.escobas == [1, 0] and state.table == []


def test_the_chance_lapses_once_a_card_is_played():
    state = play(left_behind(), "9o")
    assert state.fifteen is None
    err = refused(state, {"type": "take_fifteen", "by": 1, "cards": ["7b", "8e"]})
    assert err.code == "no_fifteen_to_take" and err.status == 422


def test_no_fifteen_to_take_at_the_start():
    err = refused(game("selminha"), {"type": "take_fifteen", "by": 1, "cards": ["3o", "5c"]})
    assert err.code == "no_fifteen_to_take"


def test_no_fifteen_to_take_where_the_rule_is_off():
    settings = custom_settings(take_the_fifteen=False)
    state = started_custom(settings, 2, deck_with(TABLE, LEAD, SECOND))
    state = play(state, "7b")
    assert state.fifteen is None
    err = refused(state, {"type": "take_fifteen", "by": 0, "cards": ["7b", "8e"]})
    assert err.code == "no_fifteen_to_take"


def test_only_the_player_to_move_takes_the_fifteen():
    err = refused(left_behind(), {"type": "take_fifteen", "by": 1, "cards": ["7b", "8e"]})
    assert err.code == "not_your_turn"


def test_a_wrong_fifteen_is_refused():
    state = left_behind()
    err = refused(state, {"type": "take_fifteen", "by": 0, "cards": ["7b", "3o"]})
    assert err.code == "illegal_capture" and "7 + 3 makes 10, not 15" in err.message
    err = refused(state, {"type": "take_fifteen", "by": 0, "cards": ["8e", "3o", "4c"]})
    assert err.code == "illegal_capture" and "7b" in err.message


def test_a_card_named_twice_does_not_make_a_fifteen_an_escoba():
    state = left_behind()  # table: 3o 5c 8e 10b 7b
    cards = ["7b", "7b", "7b", "7b", "8e"]
    try:
        events = decide(state, {"type": "take_fifteen", "by": 0, "cards": cards})
    except RuleError as err:
        assert err.code == "illegal_capture"
    else:
        assert events[0].escoba is False
        state = apply(state, {"type": "take_fifteen", "by": 0, "cards": cards})
        assert state.escobas == [0, 0] and state.table == ["3o", "5c", "10b"]


def test_hybrid_seven_facing_a_seven_must_take_it():
    state = started(
        "del15",
        2,
        {"capture": "hybrid"},
        deck_with(["7c", "2o", "2c", "10b"], ["7o", "6c", "1e"]),
    )
    err = refused(state, {"type": "play", "by": 1, "card": "7o", "capture": []})
    assert err.code == "must_capture" and ["7c"] in err.details["captures"]
    state = play(state, "7o", ["7c"])
    assert sorted(state.piles[1]) == ["7c", "7o"]
    spanish = started("del15", 2, None, deck_with(["7c", "2o", "2c", "10b"], ["7o", "6c", "1e"]))
    assert play(spanish, "7o").table == ["7c", "2o", "2c", "10b", "7o"]  # 14: no capture


def test_seed_004_ten_facing_two_and_three_in_play():
    state = started("cardgames", 2, None, deck_with(["2o", "3e", "1c", "1b"], ["10c", "6c", "6e"]))
    assert refused(state, {"type": "play", "by": 1, "card": "10c", "capture": []}).code == (
        "must_capture"
    )
    err = refused(state, {"type": "play", "by": 1, "card": "10c", "capture": ["2o"]})
    assert err.code == "illegal_capture" and err.message == "10 + 2 makes 12, not 15."
    state = play(state, "10c", ["3e", "2o"])
    assert state.table == ["1c", "1b"]


def test_seed_000_seven_takes_five_and_three_in_play():
    state = started("selminha", 2, None, deck_with(["5o", "3c", "9b", "10e"], ["7e", "6e", "1e"]))
    state = play(state, "7e", ["5o", "3c"])
    assert state.table == ["9b", "10e"]
    nxt = started("selminha", 2, None, deck_with(["5o", "3c", "9b", "10e"], ["6e", "7e", "1e"]))
    assert play(nxt, "6e", ["9b"]).table == ["5o", "3c", "10e"]  # a jack is worth 9


def test_take_the_fifteen_with_the_card_left_behind_alone_is_refused():
    err = refused(left_behind(), {"type": "take_fifteen", "by": 0, "cards": ["7b"]})
    assert err.code == "illegal_capture" and err.status == 422
    assert err.details == {"card": "7b", "sets": [["8e"], ["3o", "5c"]]}


@pytest.mark.parametrize("cards", [
    ["7b", "8c"],  # 8c is not on the table
    ["7b", "3o", "3o", "5c"],  # a table card named twice
    ["7b", "7b", "8e", "3o"],  # the card left behind named again, as a table card
])
def test_take_the_fifteen_names_only_table_cards_each_once(cards):
    state = left_behind()
    err = refused(state, {"type": "take_fifteen", "by": 0, "cards": cards})
    assert err.code == "illegal_capture" and err.status == 422
    assert err.details["card"] == "7b"


def test_take_the_fifteen_refusal_names_the_card_left_behind_and_its_sets():
    err = refused(left_behind(), {"type": "take_fifteen", "by": 0, "cards": ["8e", "3o", "4c"]})
    assert err.details == {"card": "7b", "sets": [["8e"], ["3o", "5c"]]}
    assert "takes the card left behind, 7b" in err.message


# --- how many sets the view lists -------------------------------------------


def _many_sets_table(n_small: int):
    """Seat 1 holds a 5 facing ``n_small`` small cards (aces first): many sets make 10."""
    small = ["1o", "1c", "1e", "1b", "2o", "2c", "2e", "2b", "3o", "3c", "3e", "3b", "4o", "4c"]
    table = small[:n_small]
    state = started_custom(custom_settings(mandatory_capture=False), 2,
                           deck_with(table[:4], ["5o", "6c", "9e"], ["10o", "10c", "10e"]))
    return replace_table(state, table)


def replace_table(state, table):
    """The same turn with another table, as if players had let it grow (the listing is what is tested)."""
    return dataclasses.replace(state.copy(), table=list(table))


def test_every_set_is_listed_up_to_the_limit_without_the_more_flag():
    state = _many_sets_table(8)  # the aces and twos: ten sets make 10 with the 5
    five = next(o for o in view(state, 1)["options"] if o["card"] == "5o")
    expected = captures("5o", state.table, state.settings)
    assert 2 < len(expected) <= OPTIONS_LIMIT
    assert five["captures"] == [list(s) for s in expected] and five["more_captures"] is False


def test_more_than_the_limit_lists_the_limit_and_says_there_are_more():
    state = _many_sets_table(10)  # and two threes: 121 sets
    five = next(o for o in view(state, 1)["options"] if o["card"] == "5o")
    assert len(captures("5o", state.table, state.settings)) > OPTIONS_LIMIT
    assert len(five["captures"]) == OPTIONS_LIMIT and five["more_captures"] is True
    # a set beyond the listed ones is still accepted
    listed = {tuple(s) for s in five["captures"]}
    extra = next(s for s in captures("5o", state.table, state.settings) if s not in listed)
    after = apply(state, {"type": "play", "by": 1, "card": "5o", "capture": list(extra)})
    assert sorted(after.piles[1]) == sorted(["5o", *extra])


def test_exactly_the_limit_lists_every_set_and_no_more_flag(monkeypatch):
    import engine.play

    monkeypatch.setattr(engine.play, "OPTIONS_LIMIT", 10)
    state = _many_sets_table(8)  # exactly ten sets
    assert len(captures("5o", state.table, state.settings)) == 10
    five = next(o for o in view(state, 1)["options"] if o["card"] == "5o")
    assert len(five["captures"]) == 10 and five["more_captures"] is False
    state = _many_sets_table(9)  # 50 sets
    five = next(o for o in view(state, 1)["options"] if o["card"] == "5o")
    assert len(five["captures"]) == 10 and five["more_captures"] is True
