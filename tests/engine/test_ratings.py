"""The rating math (engine/ratings.py): Glickman's worked example, Lichess's choices, OpenSkill."""

from __future__ import annotations

import pytest

from engine import ratings
from engine.ratings import Rating, glicko2, provisional, rate, start


def test_the_glicko2_papers_worked_example():
    # glicko.net/glicko/glicko2.pdf: 1500/200/0.06 beats 1400/30, loses to 1550/100 and 1700/300 (tau 0.5)
    player = Rating(1500, 200, 0.06)
    after = glicko2(player, [(Rating(1400, 30), 1.0), (Rating(1550, 100), 0.0), (Rating(1700, 300), 0.0)],
                    tau=0.5, clamp=False)
    assert after.rating == pytest.approx(1464.06, abs=0.01)
    assert after.deviation == pytest.approx(151.52, abs=0.01)
    assert after.volatility == pytest.approx(0.05999, abs=0.00001)
    assert after.games == 3


def test_a_new_two_player_rating_is_lichesss_and_provisional():
    r = start("two")
    assert (r.rating, r.deviation, r.volatility, r.games) == (1500, 500, 0.09, 0)
    assert provisional("two", r)
    assert not provisional("two", Rating(1500, 109.9, 0.09))
    assert provisional("two", Rating(1500, 110, 0.09))


def test_two_players_the_winner_goes_up_by_what_the_loser_loses_at_equal_ratings():
    (w,), (lo,) = rate("two", [[start("two")], [start("two")]], [1, 2])
    assert w.rating > 1500 > lo.rating
    assert w.rating - 1500 == pytest.approx(1500 - lo.rating)
    assert w.deviation < 500 and w.games == lo.games == 1


def test_glicko2_clamps_as_lichess_does():
    strong, weak = Rating(3990, 45, 0.1), Rating(1000, 500, 0.09)
    (s,), _ = rate("two", [[strong], [weak]], [1, 2])
    assert s.rating <= 4000 and s.deviation >= 45 and s.volatility <= 0.1


def test_rating_a_game_is_deterministic():
    before = [[Rating(1612.5, 180.25, 0.0901, 7)], [Rating(1480.0, 240.0, 0.089, 3)]]
    assert rate("two", before, [2, 1]) == rate("two", before, [2, 1])


def test_openskill_teams_partners_move_together_and_the_winners_up():
    a, b, c, d = (start("teams") for _ in range(4))
    after = rate("teams", [[a, b], [c, d]], [1, 2])
    (a2, b2), (c2, d2) = after
    assert a2.rating > 1500 and a2.rating == b2.rating
    assert c2.rating < 1500 and c2.rating == d2.rating
    assert a2.deviation < 500 and a2.games == 1
    # a stronger team that wins gains less than an even one
    strong = [Rating(1800, 200), Rating(1800, 200)]
    (s1, _), _ = rate("teams", [strong, [Rating(1400, 200), Rating(1400, 200)]], [1, 2])
    (e1, _), _ = rate("teams", [[Rating(1600, 200)] * 2, [Rating(1600, 200)] * 2], [1, 2])
    assert 0 < s1.rating - 1800 < e1.rating - 1600


def test_openskill_three_players_by_place():
    after = rate("three", [[start("three")], [start("three")], [start("three")]], [2, 1, 3])
    second, first, third = (side[0].rating for side in after)
    assert first > second > third
    assert first > 1500 > third


def test_openskill_is_the_package_at_our_scale():
    model = ratings._openskill()
    assert (model.mu, model.sigma, model.beta, model.tau) == (1500, 500, 250, 5)


def test_a_place_per_side():
    with pytest.raises(ValueError):
        rate("three", [[start("three")], [start("three")]], [1, 2, 3])
