"""Every refusal a player can meet, word for word: its code, status, message and details.

A client shows the message and acts on the code (docs/api.md, "Errors"), so a
changed word is a changed answer. Each case builds the situation through the
rules themselves and names the chapter that refuses.
"""

from __future__ import annotations

import pytest

from engine import PRESETS, RuleError, State, decide
from engine import events as ev
from engine.capture import captures
from engine.cards import FULL_DECK

from .helpers import apply, deck_with, open_table, play, started

TABLE = ["3o", "5c", "8e", "10b"]
LEAD = ["7b", "6c", "1e"]
SECOND = ["2o", "4c", "9o"]


def game(preset="del15", players=2, table=TABLE, lead=LEAD, second=SECOND):
    return started(preset, players, None, deck_with(table, lead, second), first_dealer=0)


def finished(how="resign", players=2):
    state = started("del15", players)
    if how == "away":
        state = apply(state, {"type": "open_away", "turn": state.turn_seq})
        return apply(state, {"type": "claim_away", "by": next(p for p in state.players if p != state.turn)})
    return apply(state, {"type": how, "by": 1})


def left_behind():
    return apply(game("selminha"), {"type": "play", "by": 1, "card": "7b", "capture": []})


def refusal(state, command) -> RuleError:
    with pytest.raises(RuleError) as err:
        decide(state, command)
    return err.value


def expired():
    return apply(started("del15", 2), {"type": "expire"})


CASES = {
    # a turn (engine/play.py)
    "card not in hand": (game, {"type": "play", "by": 1, "card": "9o", "capture": []},
                         "card_not_in_hand", 422, "9o is not in your hand.", {"card": "9o"}),
    "no fifteen to take": (game, {"type": "take_fifteen", "by": 1, "cards": ["3o", "5c"]},
                           "no_fifteen_to_take", 422, "There is no 15 left behind to take.", {}),
    "not your turn": (game, {"type": "play", "by": 0, "card": "2o", "capture": []},
                      "not_your_turn", 409, "It is seat 1's turn.", {"turn": 1}),
    "play between rounds": (lambda: apply(finished(), {"type": "rematch", "by": 0, "accept": True}),
                            {"type": "play", "by": 1, "card": "7b", "capture": []},
                            "not_playing", 409, "No round is being played at this table now.", {}),
    # the capture rule (engine/capture.py)
    "a card not on the table": (game, {"type": "play", "by": 1, "card": "7b", "capture": ["8c"]},
                                "illegal_capture", 422, "8c is not on the table.", {"not_on_table": ["8c"]}),
    "cards not on the table": (game, {"type": "play", "by": 1, "card": "7b", "capture": ["8c", "9b"]},
                               "illegal_capture", 422, "8c, 9b are not on the table.", {"not_on_table": ["8c", "9b"]}),
    "a table card twice": (game, {"type": "play", "by": 1, "card": "7b", "capture": ["8e", "8e"]},
                           "illegal_capture", 422, "A table card can be taken only once.", {"capture": ["8e", "8e"]}),
    "a set that is not 15": (game, {"type": "play", "by": 1, "card": "7b", "capture": ["3o"]},
                             "illegal_capture", 422, "7 + 3 makes 10, not 15.",
                             {"card": "7b", "capture": ["3o"], "sum": 10}),
    # an operator's deck (engine/deal.py)
    "a deck with a card twice": (State, {"type": "open", "name": "t", "preset": "del15", "settings": {},
                                         "player": "p0", "host_name": "Ana", "decks": [["1o"] * 40]},
                                 "bad_request", 400, "A deck must list the 40 cards, each exactly once.",
                                 {"deck": "invalid"}),
    # the flow (engine/flow.py)
    "next round mid-round": (game, {"type": "next_round", "by": 0, "deck": list(FULL_DECK)},
                             "not_between_rounds", 409, "NEXT ROUND is for the end of a round.", {}),
    "resign before the game": (lambda: open_table("del15", 2), {"type": "resign", "by": 0},
                               "not_playing", 409, "There is no game under way at this table.", {}),
    "resign at an expired table": (expired, {"type": "resign", "by": 0},
                                   "table_expired", 409, "This table has expired; it can be read but not played.", {}),
    "resign by a stranger": (game, {"type": "resign", "by": 3},
                             "forbidden", 403, "Only a player in this game may do that.", {}),
    "claim away before it opens": (game, {"type": "claim_away", "by": 0},
                                   "away_not_open", 409, "PLAYER AWAY opens 48 hours after a turn began.", {}),
    "open away for a turn gone by": (game, {"type": "open_away", "turn": 99},
                                     "not_playing", 409, "That turn is over; there is nobody to call away.", {}),
    "expire a finished game": (finished, {"type": "expire"},
                               "game_over", 409, "This table's game is already over.", {}),
    "expire an expired table": (expired, {"type": "expire"},
                                "table_expired", 409, "This table has expired; it can be read but not played.", {}),
    # the rematch
    "rematch mid-game": (game, {"type": "rematch", "by": 0, "accept": True},
                         "no_rematch", 409, "A rematch is offered when the game is over.", {}),
    "rematch after a refusal": (lambda: apply(finished(), {"type": "rematch", "by": 0, "accept": False}),
                                {"type": "rematch", "by": 1, "accept": True},
                                "no_rematch", 409, "A player declined the rematch.", {}),
    "rematch after the lapse": (lambda: apply(finished(), {"type": "lapse_rematch"}),
                                {"type": "rematch", "by": 1, "accept": True},
                                "no_rematch", 409, "The rematch offer lapsed.", {}),
    "rematch after exit": (lambda: finished("exit"), {"type": "rematch", "by": 0, "accept": True},
                           "no_rematch", 409, "No rematch after a game ended by EXIT GAME or PLAYER AWAY.", {}),
    "rematch after away": (lambda: finished("away"), {"type": "rematch", "by": 0, "accept": True},
                           "no_rematch", 409, "No rematch after a game ended by EXIT GAME or PLAYER AWAY.", {}),
    "rematch by a stranger": (finished, {"type": "rematch", "by": 3, "accept": True},
                              "forbidden", 403, "Only the players of this game answer a rematch.", {}),
    "teams from a guest": (lambda: finished(players=4), {"type": "rematch", "by": 1, "accept": True, "teams": "swap"},
                           "host_only", 403, "Only the host chooses KEEP or SWAP teams.", {}),
    "teams for two": (finished, {"type": "rematch", "by": 0, "accept": True, "teams": "keep"},
                      "bad_request", 400, "KEEP or SWAP is for four players in teams.", {"teams": "no teams"}),
    "start a rematch not all accepted": (finished, {"type": "start_rematch", "deck": list(FULL_DECK), "pick": 0},
                                         "no_rematch", 409, "Not every player has accepted the rematch.", {}),
    "lapse a closed offer": (lambda: apply(finished(), {"type": "lapse_rematch"}), {"type": "lapse_rematch"},
                             "no_rematch", 409, "There is no open rematch offer.", {}),
    "lapse when all accepted": (lambda: apply(apply(finished(), {"type": "rematch", "by": 0, "accept": True}),
                                              {"type": "rematch", "by": 1, "accept": True}),
                                {"type": "lapse_rematch"},
                                "no_rematch", 409, "There is no open rematch offer.", {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_refusal_names_its_code_and_says_why(case):
    make, command, code, status, message, details = CASES[case]
    err = refusal(make(), command)
    assert (err.code, err.status, err.message, err.details or {}) == (code, status, message, details)


def test_a_rematch_at_an_expired_table_says_it_expired():
    err = refusal(expired(), {"type": "rematch", "by": 0, "accept": True})
    assert (err.code, err.message) == ("table_expired", "This table has expired; it can be read but not played.")


def test_only_the_away_player_cannot_call_themselves_away():
    state = started("del15", 3)
    state = apply(state, {"type": "open_away", "turn": state.turn_seq})
    err = refusal(state, {"type": "claim_away", "by": state.turn})
    assert (err.code, err.message) == ("forbidden", "You cannot call yourself away.")


# --- the mandatory capture says which sets, four at most ----------------------


def test_must_capture_lists_every_set_when_four_or_fewer():
    state = game("del15", table=["3o", "5c", "8e", "10b"])  # 7b takes 8e, or 3o + 5c
    err = refusal(state, {"type": "play", "by": 1, "card": "7b", "capture": []})
    assert err.message == "Your 7b can capture (8e or 3o + 5c), so it must: capture, or play another card."
    assert err.details == {"card": "7b", "captures": [["8e"], ["3o", "5c"]]}


@pytest.mark.parametrize(("table", "shown"), [
    # 5o makes 15 with any 10: four sets exactly, listed in the table's stable order
    (["10o", "10c", "10e", "10b"], "10b or 10c or 10e or 10o"),
    (["1o", "2c", "3e", "4b"], "1o + 2c + 3e + 4b"),
])
def test_must_capture_message_is_the_sets_themselves(table, shown):
    state = game("del15", table=table, lead=["5o", "6c", "9e"], second=["7o", "7c", "7e"])
    err = refusal(state, {"type": "play", "by": 1, "card": "5o", "capture": []})
    assert err.message == f"Your 5o can capture ({shown}), so it must: capture, or play another card."


def test_must_capture_names_four_sets_and_says_there_are_more():
    state = game("del15", table=["10o", "10c", "10e", "10b"], lead=["5o", "6c", "9e"], second=["7o", "7c", "7e"])
    state = state.copy()
    state.table = ["10o", "10c", "10e", "10b", "2o", "8c"]  # and 5 + 2 + 8: a fifth set
    err = refusal(state, {"type": "play", "by": 1, "card": "5o", "capture": []})
    assert len(err.details["captures"]) == 5
    assert err.message == ("Your 5o can capture (10b or 10c or 10e or 10o or ...), "
                           "so it must: capture, or play another card.")


# --- TAKE THE 15 never takes a table card twice -------------------------------


def test_take_the_fifteen_refuses_a_table_card_named_twice_even_when_the_sum_is_fifteen():
    # 7b is left behind facing 2o + 6e; 7 + 4 + 4 makes 15 only by naming the one 4c twice
    state = game("selminha", table=["4c", "2o", "6e", "10b"], second=["3c", "5e", "9o"])
    state = apply(state, {"type": "play", "by": 1, "card": "7b", "capture": []})
    assert state.fifteen == ("7b", 1)
    err = refusal(state, {"type": "take_fifteen", "by": 0, "cards": ["7b", "4c", "4c"]})
    assert err.code == "illegal_capture" and err.details == {"card": "7b", "sets": [["2o", "6e"]]}


# --- what the log records ------------------------------------------------------


def test_the_log_records_who_resigned_and_how():
    events = decide(game(), {"type": "exit", "by": 1})
    assert events[0] == ev.PlayerResigned(1, "exit")
    assert events[1] == ev.GameFinished((0,), "exit")


def test_the_log_records_which_turn_is_away_and_who_claimed_it():
    state = started("del15", 3)
    away, seq = state.turn, state.turn_seq
    opened = decide(state, {"type": "open_away", "turn": seq})
    assert opened == [ev.AwayOpened(away, seq)]
    state = apply(state, {"type": "open_away", "turn": seq})
    claimer = next(p for p in state.players if p != away)
    claimed = decide(state, {"type": "claim_away", "by": claimer})
    assert claimed[0] == ev.AwayClaimed(claimer, away)


def test_the_log_numbers_each_scored_round():
    state = game()
    for _ in range(200):
        if state.status != "playing":
            break
        seat = state.turn
        card = state.hands[seat][0]
        sets = captures(card, state.table, state.settings)
        events = decide(state, {"type": "play", "by": seat, "card": card, "capture": list(sets[0]) if sets else []})
        scored = [e for e in events if isinstance(e, ev.RoundScored)]
        if scored:
            assert scored[0].round == state.round == 1
        state = play(state, card, sets[0] if sets else ())
    assert state.status in ("round_over", "finished")


def test_must_capture_details_list_at_most_the_options_limit():
    from engine.play import OPTIONS_LIMIT

    state = game("selminha").copy()
    state.settings = PRESETS["del15"]  # a mandatory capture, on a table players let grow
    state.hands[1] = ["5o", "6c", "1e"]
    state.table = ["1o", "1c", "1b", "2o", "2c", "2e", "2b", "3c", "3e", "3b"]  # 121 sets make 10
    err = refusal(state, {"type": "play", "by": 1, "card": "5o", "capture": []})
    assert err.code == "must_capture" and len(err.details["captures"]) == OPTIONS_LIMIT
