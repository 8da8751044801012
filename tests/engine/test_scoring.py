"""Scoring a round: each category, ties, bonuses, the setenta, and the target."""

import pytest

from engine import PRESETS, custom_settings
from engine.cards import FULL_DECK, SUITS
from engine.scoring import game_winner, score_round, setenta, sole_best

from .helpers import LAST_ROUND_FIELDS

PLAIN = custom_settings()  # most sevens, no bonuses
SELMINHA = PRESETS["selminha"]
DEL15 = PRESETS["del15"]
CARDGAMES = PRESETS["cardgames"]


def score(piles, settings=PLAIN, escobas=None):
    sides = [(i,) for i in range(len(piles))]
    return score_round(sides, piles, escobas or [0] * len(piles), settings)


def points(piles, settings=PLAIN, escobas=None):
    return [side["points"] for side in score(piles, settings, escobas)]


def cards(*codes):
    return list(codes)


# a split of the deck: side 0 the low cards of every suit, side 1 the rest
LOW = [f"{v}{s}" for s in SUITS for v in (1, 2, 3, 4, 5)]
HIGH = [c for c in FULL_DECK if c not in LOW]


def test_escobas_count_one_each_and_always():
    got = score([["1c"], ["2c"]], escobas=[3, 1])
    assert got[0]["points"]["escobas"] == 3 and got[1]["points"]["escobas"] == 1
    assert got[0]["escobas"] == 3


def test_most_cards_one_point_and_a_tie_scores_nothing():
    assert [p["cards"] for p in points([["1o", "2o", "3o"], ["4o", "5o"]])] == [1, 0]
    assert [p["cards"] for p in points([["1o", "2o"], ["4o", "5o"]])] == [0, 0]
    assert [p["cards"] for p in points([["1o", "2o"], ["4o", "5o"], ["6o"]])] == [0, 0, 0]


def test_most_cards_two_when_every_other_side_under_ten():
    big = [f"{v}c" for v in range(1, 11)] + ["1e", "2e", "3e"]
    small = [f"{v}b" for v in range(1, 10)]
    assert points([big, small], SELMINHA)[0]["cards"] == 2
    assert points([big, small, ["4e"]], SELMINHA)[0]["cards"] == 2
    assert points([big, small + ["10b"]], SELMINHA)[0]["cards"] == 1  # the other has 10
    assert points([big, small], PLAIN)[0]["cards"] == 1  # the option is off
    assert points([big, small], CARDGAMES)[0]["cards"] == 1
    assert points([big, small], DEL15)[0]["cards"] == 1


def test_most_coins_and_its_tie():
    assert [p["coins"] for p in points([["1o", "2o", "1c"], ["3o", "2c", "3c"]])] == [1, 0]
    assert [p["coins"] for p in points([["1o", "1c"], ["3o", "2c"]])] == [0, 0]


def test_all_ten_coins_score_two_with_the_bonus():
    coins = [f"{v}o" for v in range(1, 11)]
    with_bonus = custom_settings(all_coins_extra=True)
    assert points([coins, ["1c"]], with_bonus)[0]["coins"] == 2
    assert points([coins, ["1c"]], PLAIN)[0]["coins"] == 1
    assert points([coins, ["1c"]], SELMINHA)[0]["coins"] == 2
    assert points([coins, ["1c"]], CARDGAMES)[0]["coins"] == 2
    assert points([coins, ["1c"]], DEL15)[0]["coins"] == 1  # del15: off unless the host sets it


def test_seven_of_coins_always_counts_for_whoever_has_it():
    got = points([["7o"], ["1c", "2c"]])
    assert got[0]["seven_of_coins"] == 1 and got[1]["seven_of_coins"] == 0
    assert points([["7o"], ["7c"]])[0]["seven_of_coins"] == 1  # no majority needed


def test_most_sevens_and_its_tie():
    assert [p["sevens"] for p in points([["7c", "7e"], ["7b"]])] == [1, 0]
    assert [p["sevens"] for p in points([["7c", "1c"], ["7b"]])] == [0, 0]
    assert [p["sevens"] for p in points([["1c"], ["2b"]])] == [0, 0]  # none at all: a tie


def test_all_four_sevens_score_three_with_the_seven_of_coins():
    sevens = ["7o", "7c", "7e", "7b"]
    for settings in (SELMINHA, CARDGAMES, custom_settings(all_sevens_extra=True)):
        got = points([sevens, ["1c"]], settings)[0]
        assert got["sevens"] == 2 and got["seven_of_coins"] == 1
        assert got["sevens"] + got["seven_of_coins"] == 3
    got = points([sevens, ["1c"]], PLAIN)[0]
    assert got["sevens"] + got["seven_of_coins"] == 2


def test_setenta_scale_and_a_missing_suit():
    assert setenta(["7o", "6c", "1e", "5b"]) == 21 + 18 + 16 + 15
    assert setenta(["7o", "1o", "4c", "3e", "2b", "8b"]) == 21 + 14 + 13 + 12
    assert setenta(["10o", "9c", "8e", "2b"]) == 10 + 10 + 10 + 12
    assert setenta(["7o", "7c", "7e"]) is None
    assert setenta([]) is None
    assert setenta(FULL_DECK) == 84


def test_setenta_replaces_the_sevens_point_in_del15():
    a = ["7o", "7c", "7e", "1b"]  # 21 * 3 + 16 = 79
    b = ["6o", "6c", "6e", "7b", "5o"]  # 18 * 3 + 21 = 75; more cards
    got = score([a, b], DEL15)
    assert got[0]["setenta"] == 79 and got[1]["setenta"] == 75
    assert got[0]["points"]["setenta"] == 1 and got[1]["points"]["setenta"] == 0
    assert got[0]["points"]["sevens"] == 0  # no sevens point with the setenta
    assert got[1]["points"]["cards"] == 1


def test_a_side_missing_a_suit_cannot_win_the_setenta():
    a = ["7o", "7c", "7e", "6o", "6c"]  # no bastos
    b = ["1o", "2c", "3e", "4b"]
    got = score([a, b], DEL15)
    assert got[0]["setenta"] is None and got[1]["setenta"] == 16 + 12 + 13 + 14
    assert got[1]["points"]["setenta"] == 1 and got[0]["points"]["setenta"] == 0
    # nobody has all four suits: nobody wins it
    got = score([["7o"], ["7c"]], DEL15)
    assert [side["points"]["setenta"] for side in got] == [0, 0]


def test_a_setenta_tie_scores_nothing():
    got = score([["7o", "7c", "1e", "2b"], ["7e", "7b", "1o", "2c"]], DEL15)
    assert got[0]["setenta"] == got[1]["setenta"]
    assert [side["points"]["setenta"] for side in got] == [0, 0]


def test_all_four_sevens_extra_in_del15():
    sevens = ["7o", "7c", "7e", "7b"]
    with_bonus = custom_settings(sevens="setenta", all_sevens_extra=True)
    got = points([sevens, ["1c"]], with_bonus)[0]
    assert got["sevens"] == 1 and got["setenta"] == 1 and got["seven_of_coins"] == 1
    got = points([sevens, ["1c"]], DEL15)[0]
    assert got["sevens"] == 0


def test_round_points_add_up_and_the_breakdown_has_the_contracts_fields():
    got = score([LOW, HIGH], SELMINHA, escobas=[2, 0])
    for side in got:
        assert set(side) >= LAST_ROUND_FIELDS
        assert side["round_points"] == sum(side["points"].values())
    # 20 cards each and 5 coins each: ties; the sevens and the 7 of coins are in HIGH
    assert got[0]["points"] == {
        "escobas": 2,
        "cards": 0,
        "coins": 0,
        "seven_of_coins": 0,
        "sevens": 0,
    }
    assert got[1]["points"] == {
        "escobas": 0,
        "cards": 0,
        "coins": 0,
        "seven_of_coins": 1,
        "sevens": 2,
    }


def test_teams_score_as_one_side():
    got = score_round([(0, 2), (1, 3)], [HIGH, LOW], [1, 0], DEL15)
    assert got[0]["seats"] == [0, 2] and got[0]["round_points"] >= 1


def test_sole_best():
    assert sole_best([3, 1, 2]) == 0
    assert sole_best([3, 3, 2]) is None
    assert sole_best([None, 80, 70]) == 1
    assert sole_best([None, None]) is None


@pytest.mark.parametrize(
    ("scores", "target", "winner"),
    [
        ([21, 20], 21, 0),
        ([20, 21], 21, 1),
        ([20, 20], 21, None),
        ([25, 25], 21, None),  # tied at the top: play on, however high
        ([30, 22], 21, 0),  # both over the target: the higher wins
        ([22, 30, 30], 21, None),
        ([14, 15, 3], 15, 1),
        ([9, 8], 10, None),
    ],
)
def test_game_winner(scores, target, winner):
    assert game_winner(scores, target) == winner


@pytest.mark.parametrize("settings", [SELMINHA, CARDGAMES, PLAIN])
def test_without_the_setenta_no_side_shows_one(settings):
    # each side holds every suit, so a setenta could be counted for both
    low = [c for c in FULL_DECK if int(c[:-1]) <= 5]
    whole = [low, [c for c in FULL_DECK if c not in low]]
    assert setenta(whole[0]) is not None and setenta(whole[1]) is not None
    assert [side["setenta"] for side in score(whole, settings)] == [None, None]
    assert all("setenta" not in side["points"] for side in score(whole, settings))


def test_with_the_setenta_every_side_shows_its_own():
    whole = [[c for c in FULL_DECK if c.startswith("7")], [c for c in FULL_DECK if not c.startswith("7")]]
    sides = score(whole, DEL15)
    assert sides[0]["setenta"] == 84 and sides[1]["setenta"] == 72  # four sevens; four sixes
    assert [s["points"]["setenta"] for s in sides] == [1, 0]
