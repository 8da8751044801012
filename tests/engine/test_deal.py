"""The deal: operator decks, the opening table (15 and 30), dealer and leader."""

import random

import pytest

from engine import RuleError, custom_settings, decide, fold
from engine import events as ev
from engine.cards import FULL_DECK
from engine.deal import opening_escobas, play_order, splits_into_fifteens

from .helpers import apply, deck_with, open_table, play_out_round, shuffled, start, started

FIFTEEN = ["1o", "2c", "3e", "9b"]
THIRTY_SPLIT = ["7o", "8c", "5e", "10b"]  # 7+8 and 5+10
THIRTY_NO_SPLIT = ["10o", "10c", "4e", "6b"]  # no two of them make 15
PLAIN = ["1o", "2c", "3e", "4b"]  # 10


def test_table_examples_add_up():
    assert sum(int(c[:-1]) for c in FIFTEEN) == 15
    assert sum(int(c[:-1]) for c in THIRTY_SPLIT) == 30 == sum(int(c[:-1]) for c in THIRTY_NO_SPLIT)
    assert splits_into_fifteens(THIRTY_SPLIT)
    assert not splits_into_fifteens(THIRTY_NO_SPLIT)


@pytest.mark.parametrize("thirty", ["two_escobas", "two_escobas_if_split", "nothing"])
def test_opening_fifteen_goes_to_the_dealer_with_one_escoba_whatever_the_thirty_rule(thirty):
    state = started("del15", 2, {"opening_thirty": thirty}, deck_with(FIFTEEN), first_dealer=0)
    assert state.table == []
    assert state.piles[0] == FIFTEEN and state.escobas == [1, 0]
    assert state.last_capturer == 0
    assert state.turn == 1  # the player after the dealer leads, on an empty table


@pytest.mark.parametrize(
    ("thirty", "table", "escobas"),
    [
        ("two_escobas", THIRTY_SPLIT, 2),
        ("two_escobas", THIRTY_NO_SPLIT, 2),
        ("two_escobas_if_split", THIRTY_SPLIT, 2),
        ("two_escobas_if_split", THIRTY_NO_SPLIT, 0),
        ("nothing", THIRTY_SPLIT, 0),
        ("nothing", THIRTY_NO_SPLIT, 0),
    ],
)
def test_opening_thirty_in_each_of_its_three_values(thirty, table, escobas):
    state = started("del15", 2, {"opening_thirty": thirty}, deck_with(table), first_dealer=1)
    if escobas:
        assert state.table == [] and sorted(state.piles[1]) == sorted(table)
        assert state.escobas == [0, escobas]
    else:
        assert state.table == table and state.piles == [[], []] and state.escobas == [0, 0]
    assert state.turn == 0


@pytest.mark.parametrize("preset", ["selminha", "cardgames"])
def test_selminha_and_cardgames_give_any_thirty_two_escobas(preset):
    state = started(preset, 2, None, deck_with(THIRTY_NO_SPLIT), first_dealer=0)
    assert state.escobas == [2, 0] and state.table == []


@pytest.mark.parametrize("thirty", ["two_escobas", "two_escobas_if_split", "nothing"])
@pytest.mark.parametrize("table", [FIFTEEN, THIRTY_SPLIT, THIRTY_NO_SPLIT])
def test_no_opening_rule_is_read_when_opening_fifteen_is_off(thirty, table):
    settings = {"opening_fifteen": False, "opening_thirty": thirty}
    state = started("del15", 2, settings, deck_with(table), first_dealer=0)
    assert state.table == table and state.escobas == [0, 0]
    assert (
        opening_escobas(table, custom_settings(opening_fifteen=False, opening_thirty=thirty)) == 0
    )


def test_an_ordinary_opening_table_stays():
    state = started("selminha", 2, None, deck_with(PLAIN), first_dealer=0)
    assert state.table == PLAIN and state.escobas == [0, 0]


def test_the_opening_take_is_an_event_after_the_deal():
    state = open_table("del15", 2, None, [deck_with(FIFTEEN)], first_dealer=0)
    events = decide(state, {"type": "start", "by": 0, "deck": list(FULL_DECK), "pick": 0})
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["GameStarted", "RoundDealt", "OpeningTableTaken"]
    assert events[-1] == ev.OpeningTableTaken(0, tuple(FIFTEEN), 1)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_operator_deck_dealing_order(players):
    # the 4 table cards, then 3 to each player from the leader; later deals the same order
    deck = list(reversed(FULL_DECK))
    state = open_table("selminha", players, None, [deck], first_dealer=1)
    state = start(state)
    order = play_order(state.players, 1)
    assert order[0] == state.turn == (2 % players)
    assert state.table == deck[:4]
    for i, seat in enumerate(order):
        assert state.hands[seat] == deck[4 + 3 * i : 7 + 3 * i]
    at = 4 + 3 * players
    assert state.stock == deck[at:]
    # everybody plays their three cards (nothing is captured: leave them all)
    events = []
    for _ in range(3 * players):
        card = state.hands[state.turn][0]
        new = decide(state, {"type": "play", "by": state.turn, "card": card, "capture": []})
        events += new
        state = fold(state, new)
    dealt = [e for e in events if isinstance(e, ev.HandsDealt)]
    assert len(dealt) == 1
    assert [seat for seat, _ in dealt[0].hands] == list(order)
    for i, seat in enumerate(order):
        assert state.hands[seat] == deck[at + 3 * i : at + 3 + 3 * i]


def test_operator_decks_serve_rounds_in_turn_then_the_shell_deck():
    rng = random.Random(5)
    d1, d2, d3 = shuffled(rng), shuffled(rng), shuffled(rng)
    state = start(open_table("del15", 2, {"target": 30}, [d1, d2], first_dealer=0), deck=d3)
    assert state.table == d1[:4] or state.escobas != [0, 0]
    state, _ = play_out_round(state, rng)
    state = apply(state, {"type": "next_round", "by": 1, "deck": d3})
    assert state.round == 2 and state.hands[0] == d2[4:7]
    state, _ = play_out_round(state, rng)
    if state.status == "round_over":
        state = apply(state, {"type": "next_round", "by": 0, "deck": d3})
        assert state.hands[1] == d3[4:7]


def test_open_refuses_bad_operator_decks():
    for decks in ([], [FULL_DECK[:39]], [list(FULL_DECK[:39]) + ["1o"]], "nope"):
        with pytest.raises(RuleError) as err:
            open_table("del15", 1, None, decks)
        assert err.value.code == "bad_request"
    with pytest.raises(RuleError) as err:
        open_table("del15", 1, None, None, first_dealer=4)
    assert err.value.code == "bad_request"


def test_a_shell_deck_must_be_the_forty_cards():
    state = open_table("del15", 2)
    with pytest.raises(RuleError) as err:
        apply(state, {"type": "start", "by": 0, "deck": list(FULL_DECK[:-1]) + ["1o"], "pick": 0})
    assert err.value.code == "bad_request"


@pytest.mark.parametrize(("preset", "seat"), [("selminha", 0), ("del15", 0)])
def test_the_host_deals_first(preset, seat):
    state = open_table(preset, 3)
    state = start(state, pick=2)
    assert state.dealer == seat
    assert state.turn == 1  # the player after the dealer leads


def test_cardgames_first_dealer_is_random_from_the_shells_pick():
    dealers = set()
    for pick in range(6):
        state = start(open_table("cardgames", 3), pick=pick)
        assert state.dealer == state.players[pick % 3]
        assert state.turn == state.next_seat(state.dealer)
        dealers.add(state.dealer)
    assert dealers == {0, 1, 2}


@pytest.mark.parametrize("preset", ["selminha", "del15", "cardgames"])
@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_deal_passes_round_by_round_and_the_next_player_leads(preset, players):
    rng = random.Random(players)
    state = started(
        preset, players, {"target": 31} if preset == "selminha" else None, first_dealer=players - 1
    )
    seen = []
    while state.status == "round_over" or state.status == "playing":
        if state.status == "playing":
            seen.append((state.dealer, state.turn))
            state, _ = play_out_round(state, rng)
        else:
            state = apply(
                state, {"type": "next_round", "by": state.players[0], "deck": shuffled(rng)}
            )
        if len(seen) == 5:
            break
    for n, (dealer, leader) in enumerate(seen):
        assert dealer == (players - 1 + n) % players
        assert leader == (dealer + 1) % players


@pytest.mark.parametrize(("players", "deals"), [(2, 6), (3, 4), (4, 3)])
def test_the_stock_divides_into_whole_deals(players, deals):
    rng = random.Random(players)
    state = started("selminha", players, None, shuffled(rng))
    state, events = play_out_round(state, rng)
    dealt = [e for e in events if isinstance(e, ev.HandsDealt)]
    assert len(dealt) + 1 == deals
    assert [e.last_deal for e in dealt] == [False] * (deals - 2) + [True]
    assert all(len(cards) == 3 for e in dealt for _, cards in e.hands)


def test_last_deal_flag_in_state():
    rng = random.Random(1)
    state = started("selminha", 4, None, shuffled(rng))
    assert not state.last_deal
    while state.stock:
        card = state.hands[state.turn][0]
        state = apply(state, {"type": "play", "by": state.turn, "card": card, "capture": []})
    assert state.last_deal
