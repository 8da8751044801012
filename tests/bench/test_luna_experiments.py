"""bench/luna_experiments.py: Luna's experiment switches, out of the product and still measurable."""

from __future__ import annotations

import random

import pytest

from bench import bots
from bench import luna_experiments as experiments
from engine import decide, fold, view
from engine.bots import luna, tito
from engine.bots.common import Reading
from engine.bots.match import table
from engine.bots.sim import INDEX
from tests.engine.bots.test_luna import TABLES, _reading, _tito_position, random_position


@pytest.fixture(autouse=True)
def hers_again():
    yield
    experiments.uninstall()


def test_at_the_products_values_luna_is_left_as_she_is():
    experiments.install()
    assert (luna.search, luna.leaf_value, luna.Deals) == (experiments._HERS["search"],
                                                       experiments._HERS["leaf_value"], experiments._HERS["Deals"])


def test_a_switch_away_puts_the_experiments_in_and_settings_put_her_back():
    hers = luna.search
    with bots.luna_settings(["GAME_VALUE=0"]):
        assert experiments.GAME_VALUE == 0
        assert luna.search is experiments.search and luna.Deals is experiments.Deals
    assert experiments.GAME_VALUE == 1 and luna.search is hers


def test_the_experiments_search_at_the_products_values_decides_as_luna(monkeypatch):
    """The copy of her search is hers with the switches: at the product's values, the same moves."""
    checked = 0
    for seed in range(12):
        s = random_position("del15", None, 2, seed, seed % 20)
        if s.status != "playing":
            continue
        v = view(s, s.turn)
        mine = luna.choose(v, random.Random(seed), 3)
        monkeypatch.setattr(luna, "search", experiments.search)
        monkeypatch.setattr(luna, "leaf_value", experiments.leaf_value)
        monkeypatch.setattr(luna, "Deals", experiments.Deals)
        assert luna.choose(v, random.Random(seed), 3) == mine
        monkeypatch.undo()
        checked += 1
    assert checked >= 6


def test_points_weight_adds_the_rounds_point_difference_to_the_race(monkeypatch):
    r = _reading((10, 12))
    race = experiments._HERS["leaf_value"](r)
    monkeypatch.setattr(experiments, "POINTS_WEIGHT", 0.5)
    leaf = experiments.leaf_value(r)
    assert leaf([4, 1]) == pytest.approx(race([4, 1]) + 0.5 * 3)
    assert leaf([0, 2]) == pytest.approx(race([0, 2]) - 0.5 * 2)


# --- inference from what an opponent chose to leave ---------------------------------

@pytest.mark.parametrize("preset,overrides", TABLES)
def test_what_an_opponent_left_is_read_from_the_tables_the_engine_had(preset, overrides):
    """Luna's reading (walked back from the table now) against the tables the engine really had:
    a value is ruled out for an opponent only if it could have taken from the table one of their
    plays of this deal left a card on, and every such value is ruled out."""
    from engine.capture import captures

    checked = 0
    for seed in range(8):
        rng = random.Random(seed)
        s = table(preset, ["tito", "tito"], rng, settings=overrides)
        plays = []  # (seat, table before, card, captured) this round, from the engine's states
        while s.status == "playing":
            v = view(s, s.turn)
            r = Reading(v)
            if not r.fifteen_sets and plays:
                per_deal = 6
                this_deal = plays[len(plays) - len(plays) % per_deal:]
                expect: dict = {}
                for seat, before, card, taken in this_deal:
                    if seat == s.turn or taken:
                        continue
                    could = {x for x in range(1, 11) if captures(f"{x}o", before, r.settings)}
                    if could and int(card[:-1]) not in could:
                        expect.setdefault(seat, set()).update(could)
                assert experiments.inferred_lacks(r, luna._root(r)) == expect
                checked += bool(expect)
            command = dict(tito.choose(v, rng))
            command["by"] = s.turn
            if command["type"] == "play":
                plays.append((s.turn, list(s.table), command["card"], command["capture"]))
            s = fold(s, decide(s, command))
    assert checked > 20


def test_inferred_deals_hold_none_of_the_ruled_out_values():
    rng = random.Random(4)
    s = random_position("del15", None, 2, 3, 2)
    root = luna._root(Reading(view(s, s.turn)))
    other = next(p for p in s.players if p != s.turn)
    pool = [c for c in range(40) if c not in root.hands[s.turn] and c not in root.table][:33]
    for _ in range(50):
        rng.shuffle(pool)
        deal = root.copy()
        experiments._deal_inferred(deal, list(pool), [(other, 3)], {other: {1, 5, 9}})
        assert len(deal.hands[other]) == 3 and not {VAL_ % 10 + 1 for VAL_ in deal.hands[other]} & {1, 5, 9}
        assert sorted(deal.hands[other] + deal.stock) == sorted(pool)



def test_read_deals_share_out_the_unseen_cards_and_agree_when_they_can():
    rng = random.Random(9)
    seen = agreed = 0
    for seed in range(40):
        s = _tito_position(("selminha", "del15", "cardgames")[seed % 3], seed, 1 + seed % 5)
        if s.status != "playing":
            continue
        r = Reading(view(s, s.turn))
        root = luna._root(r)
        reads = luna.past_choices(r, root)
        others = [(p, r.hand_count[p]) for p in r.players if p != r.me]
        pool = [INDEX[c] for c in r.unseen]
        for _ in range(5):
            rng.shuffle(pool)
            deal = root.copy()
            experiments._deal_read(deal, list(pool), others, reads, rng)
            dealt = [c for p, _ in others for c in deal.hands[p]] + deal.stock
            assert sorted(dealt) == sorted(pool)
            assert all(len(deal.hands[p]) == n for p, n in others)
            for p, checks in reads.items():
                seen += 1
                agreed += experiments._agreed(deal.hands[p], checks) == len(checks)
    assert seen > 20 and agreed / seen > 0.9



def test_without_game_value_the_leaf_is_the_round_point_difference(monkeypatch):
    monkeypatch.setattr(experiments, "GAME_VALUE", 0)
    leaf = experiments.leaf_value(_reading((18, 3, 9), sides=3))
    assert leaf([2, 5, 1]) == -3
