"""Luna's fast simulator against the engine: the same moves give the same round."""

from __future__ import annotations

import random

import pytest

from engine import decide, fold, view
from engine.bots.common import Reading
from engine.bots.luna import _root
from engine.bots.match import table
from engine.bots.sim import CODE, INDEX, subsets, sums_of
from engine.capture import captures
from engine.cards import FULL_DECK
from engine.rules import PRESETS
from engine.scoring import score_round

CASES = [
    ("selminha", 2, None), ("selminha", 4, None), ("del15", 2, None), ("del15", 4, {"capture": "hybrid"}),
    ("cardgames", 3, None), ("del15", 3, {"capture": "hybrid"}),
]


def _same_sets(a, b) -> bool:
    return sorted(tuple(sorted(x)) for x in a) == sorted(tuple(sorted(x)) for x in b)


@pytest.mark.parametrize("capture", ["spanish", "hybrid"])
def test_sets_match_the_engine(capture):
    rng = random.Random(7)
    settings = PRESETS["del15"].__class__(capture=capture)
    for _ in range(300):
        cards = rng.sample(FULL_DECK, rng.randint(1, 9))
        card, tab = cards[0], cards[1:]
        ints = [INDEX[c] for c in tab]
        mine = subsets(ints, 15 - int(card[:-1]))
        by_total = sums_of(ints)
        fast = list(by_total.get(15 - int(card[:-1]), []))
        if capture == "hybrid":
            mine += subsets(ints, int(card[:-1]))
            fast += by_total.get(int(card[:-1]), [])
        engine_sets = [[INDEX[c] for c in s] for s in captures(card, tab, settings)]
        assert _same_sets(mine, engine_sets)
        assert _same_sets(fast, engine_sets)


@pytest.mark.parametrize("preset,players,settings", CASES)
def test_a_round_in_the_simulator_is_the_engines_round(preset, players, settings):
    """Play random legal moves in both; the piles, escobas and points agree at the end."""
    for seed in range(6):
        rng = random.Random(seed)
        s = table(preset, ["carmen"] * players, rng, settings=settings)
        v = view(s, s.turn)
        sim = _root(Reading(v))
        for seat in s.players:  # the hidden cards, for this test only
            sim.hands[seat] = [INDEX[c] for c in s.hands[seat]]
        sim.stock = [INDEX[c] for c in s.stock]
        while s.status == "playing":
            seat = s.turn
            assert sim.turn == seat
            v = view(s, seat)
            if v["fifteen_to_take"] and rng.random() < 0.7:
                cards = rng.choice(v["fifteen_to_take"]["sets"])
                s = fold(s, decide(s, {"type": "take_fifteen", "by": seat, "cards": cards}))
                assert sim.pending == INDEX[cards[0]]
                sim.take_fifteen(seat, [INDEX[c] for c in cards[1:]])
                continue
            opt = rng.choice(v["options"])
            sets = opt["captures"]
            capture = [] if opt["may_leave"] and (not sets or rng.random() < 0.3) else rng.choice(sets)
            s = fold(s, decide(s, {"type": "play", "by": seat, "card": opt["card"], "capture": capture}))
            sim.pending = sim.pending if v["fifteen_to_take"] is None else -1
            sim.play(seat, INDEX[opt["card"]], [INDEX[c] for c in capture])
            if s.status == "playing":
                assert sorted(CODE[c] for c in sim.table) == sorted(s.table)
                assert (sim.pending >= 0) == (s.fifteen is not None and bool(view(s, s.turn)["fifteen_to_take"]))
        assert sim.over()
        assert [sorted(CODE[c] for c in p) for p in sim.piles] == [sorted(p) for p in s.piles]
        assert sim.escobas == s.escobas
        expected = [t["round_points"] for t in score_round(s.sides, s.piles, s.escobas, s.settings)]
        assert sim.score(s.sides) == expected
