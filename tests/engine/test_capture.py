"""The capture rule, with the worked examples of RULES.md section 4 and the seeds."""

import pytest

from engine import RuleError
from engine.capture import captures, check_capture, subsets_summing_to
from engine.rules import PRESETS, custom_settings

SPANISH = PRESETS["del15"]
HYBRID = custom_settings(capture="hybrid")
SELMINHA = PRESETS["selminha"]
CARDGAMES = PRESETS["cardgames"]

# seed 002: the table shows a 3, a 5 and a Sota (8)
TABLE = ["3o", "5c", "8e"]


def sets(card, table, settings=SPANISH):
    return {frozenset(s) for s in captures(card, table, settings)}


def test_seven_chooses_the_sota_or_three_and_five():
    assert sets("7b", TABLE) == {frozenset({"8e"}), frozenset({"3o", "5c"})}


def test_four_takes_three_and_sota():
    assert sets("4b", TABLE) == {frozenset({"3o", "8e"})}


def test_two_takes_five_and_sota():
    assert sets("2b", TABLE) == {frozenset({"5c", "8e"})}


def test_rey_takes_the_five():
    assert sets("10b", TABLE) == {frozenset({"5c"})}


def test_six_takes_nothing():
    assert sets("6b", TABLE) == set()


def test_seven_against_seven_spanish_none_hybrid_takes_it():
    assert sets("7b", ["7c"]) == set()
    assert sets("7b", ["7c"], HYBRID) == {frozenset({"7c"})}


def test_hybrid_also_takes_cards_adding_to_its_value_and_still_fifteens():
    # seed 002: a seven takes another seven, or a four and a three, as well as an eight
    got = sets("7b", ["7c", "4o", "3e", "8c"], HYBRID)
    assert frozenset({"7c"}) in got
    assert frozenset({"4o", "3e"}) in got
    assert frozenset({"8c"}) in got
    assert frozenset({"4o", "3e", "8c"}) not in got  # 7 + 15 is not 15
    spanish = sets("7b", ["7c", "4o", "3e", "8c"])
    assert frozenset({"7c"}) not in spanish and frozenset({"4o", "3e"}) not in spanish


def test_seed_000_seven_takes_five_and_three_six_takes_a_jack():
    # Brazilian deck: jack = 9
    assert frozenset({"5o", "3c"}) in sets("7e", ["5o", "3c"], SELMINHA)
    assert sets("6e", ["9b"], SELMINHA) == {frozenset({"9b"})}


def test_seed_004_a_ten_facing_two_and_three_must_take_both():
    assert sets("10c", ["2o", "3e"], CARDGAMES) == {frozenset({"2o", "3e"})}
    with pytest.raises(RuleError) as err:
        check_capture("10c", ["2o"], ["2o", "3e"], CARDGAMES)
    assert err.value.code == "illegal_capture"
    assert err.value.message == "10 + 2 makes 12, not 15."


def test_refusal_says_why_in_numbers():
    with pytest.raises(RuleError) as err:
        check_capture("7o", ["5c", "2e"], ["5c", "2e", "8b"], SPANISH)
    assert err.value.code == "illegal_capture"
    assert "7 + 5 + 2 makes 14, not 15" in err.value.message
    assert err.value.details["sum"] == 14


def test_hybrid_refusal_mentions_own_value():
    with pytest.raises(RuleError) as err:
        check_capture("7o", ["5c"], ["5c", "8b"], HYBRID)
    assert "7 + 5 makes 12, not 15, and 5 is not 7" in err.value.message


def test_refusal_for_cards_not_on_the_table_and_twice():
    with pytest.raises(RuleError) as err:
        check_capture("7o", ["8b"], ["5c"], SPANISH)
    assert err.value.code == "illegal_capture"
    assert "8b is not on the table" in err.value.message
    with pytest.raises(RuleError) as err:
        check_capture("5o", ["5c", "5c"], ["5c", "5e"], SPANISH)
    assert err.value.code == "illegal_capture"


def test_check_capture_accepts_each_listed_set_in_any_order():
    check_capture("7b", ["5c", "3o"], TABLE, SPANISH)
    check_capture("7b", ["8e"], TABLE, SPANISH)


def test_subsets_and_stable_order():
    assert sorted(subsets_summing_to(["3o", "5c", "8e"], 8)) == [("3o", "5c"), ("8e",)]
    assert subsets_summing_to(["3o"], 0) == []
    # two cards of the same worth make two different sets
    assert sets("7b", ["8e", "8c"]) == {frozenset({"8e"}), frozenset({"8c"})}
    assert captures("7b", TABLE, SPANISH) == [("8e",), ("3o", "5c")]
    assert captures("7b", list(reversed(TABLE)), SPANISH) == captures("7b", TABLE, SPANISH)


def test_every_listed_set_makes_fifteen():
    table = ["1o", "2c", "3e", "4b", "5o", "6c", "7e", "8b"]
    for card in ["1b", "5b", "7b", "10b"]:
        for s in captures(card, table, SPANISH):
            assert sum(int(c[:-1]) for c in s) + int(card[:-1]) == 15


def test_a_table_of_thirty_cards_stays_cheap_to_list_and_any_valid_set_is_accepted():
    from engine.capture import captures, check_capture
    from engine.cards import FULL_DECK
    from engine.play import OPTIONS_LIMIT
    from engine.rules import PRESETS

    table = [c for c in FULL_DECK if c != "1o"][:39]
    listed = captures("1o", table, PRESETS["selminha"], limit=OPTIONS_LIMIT)
    assert len(listed) == OPTIONS_LIMIT
    everything = captures("1o", table, PRESETS["selminha"])
    assert len(everything) > 1000
    # a set beyond the listed ones is still a legal capture
    check_capture("1o", list(everything[-1]), table, PRESETS["selminha"])


def test_hybrid_ace_takes_an_ace():
    assert sets("1o", ["1c", "9e"], HYBRID) == {frozenset({"1c"})}
    assert sets("1o", ["1c", "9e"], SPANISH) == set()


def test_each_set_lists_its_cards_by_value_not_by_name():
    # "10b" sorts before "2c" as text; a set is shown lowest value first
    assert captures("3o", ["10b", "2c"], SPANISH) == [("2c", "10b")]
