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


# --- Tito's fast judgement (bitmasks, cached sets) is the plain one -----------------

def _plain_ranked(table, w, hybrid, escoba):
    """What a table exposes, by listing every set of it: (the best gain, the value), the most first."""
    from engine.bots.sim import VAL

    best = [0.0] * 15
    subs = [(0, 0.0, 0)]
    for c in table:
        subs += [(t + VAL[c], x + w[c], k + 1) for t, x, k in subs if t + VAL[c] <= 14]
    for t, x, k in subs[1:]:
        x += 1.0 if k == len(table) and escoba else 0.0
        best[t] = max(best[t], x)
    return sorted(((max(best[15 - v], best[v] if hybrid else 0.0) + 0.12, v) for v in range(1, 11)
                   if max(best[15 - v], best[v] if hybrid else 0.0) > 0), reverse=True)


def _plain_tito(r, seat, want=None):
    """The simulator's Tito as first written (lists, a sort-keyed exposure): the reference."""
    from engine.bots.sim import CHANCE, HAND, RISK, VAL

    def exposure(table, odds, w, hybrid, escoba):
        ranked = _plain_ranked(table, w, hybrid, escoba)
        expected, miss = 0.0, 1.0
        for g, v in ranked:
            expected += g * odds[v] * miss
            miss *= 1 - odds[v]
        return expected

    w, table, hand = r.worth, r.table, r.hands[seat]
    n, left = len(table), len(r.stock) + r.cards_left()
    last_card = left == 1
    escoba_counts = r.last_sweep or not last_card
    nxt = r.nxt[seat]
    threat = r.side_of[nxt] != r.side_of[seat] and not last_card
    if threat:
        mine = [sum(VAL[c] == v for c in hand) for v in range(11)]
        pool = 40 - sum(r.public) - len(hand)
        chance = CHANCE[min(len(r.hands[nxt]) or HAND, pool)][pool]
        odds = [chance[max(0, 4 - r.public[v] - mine[v])] for v in range(11)]
        opp_escoba = r.last_sweep or not left <= len(r.order)
    by_total = sums_of(table)
    scored = []
    for card in hand:
        v = VAL[card]
        sets = by_total.get(15 - v, []) + (by_total.get(v, []) if r.hybrid else [])
        moves = [(s, w[card] + sum(w[c] for c in s)) for s in sets]
        if not sets or not r.mandatory:
            moves.append(((), 0.0))
        for s, score in moves:
            after = [c for c in table if c not in s] if s else [*table, card]
            if s and not after and escoba_counts:
                score += 1.0
            if not s and sets and r.take15 and not last_card:
                score -= max(w[card] + sum(w[c] for c in x) + (len(x) == n) for x in sets)
            if last_card:
                capturer = seat if s else r.last
                if capturer >= 0 and after:
                    lump = sum(w[c] for c in after)
                    score += lump if r.side_of[capturer] == r.side_of[seat] else -lump
            elif threat and after:
                score -= RISK * exposure(after, odds, w, r.hybrid, opp_escoba)
            scored.append((score, card, frozenset(s)))
    return scored


@pytest.mark.parametrize("preset,players,settings", CASES)
def test_the_fast_tito_judges_as_the_plain_one(preset, players, settings):
    """At every play of random rounds: the fast judgement's choice scores the plain one's best,
    and asked about each move (``want``), it says best exactly for the moves the plain one ties at best."""
    checked = 0
    for seed in range(4):
        rng = random.Random(100 + seed)
        s = table(preset, ["carmen"] * players, rng, settings=settings)
        sim = _root(Reading(view(s, s.turn)))
        for seat in s.players:
            sim.hands[seat] = [INDEX[c] for c in s.hands[seat]]
        sim.stock = [INDEX[c] for c in s.stock]
        while not sim.over():
            seat = sim.turn
            sim.pending = -1
            scored = _plain_tito(sim, seat)
            top = max(x for x, _, _ in scored)
            card, taken = sim.tito(seat)
            assert max(x for x, c, t in scored if c == card and t == frozenset(taken)) == pytest.approx(top)
            for x, c, t in scored:
                assert sim.tito(seat, (c, t)) == (x >= top - 1e-9)
            checked += 1
            moves = [(c, t) for _, c, t in scored]
            card, taken = rng.choice(moves)  # on random moves, to reach all sorts of tables
            sim.play(seat, card, list(taken))
    assert checked > 50


@pytest.mark.parametrize("preset", ["selminha", "del15"])
def test_what_a_table_exposes_is_every_sets_best_to_the_last_bit(preset):
    """``_ranked``'s knapsack gives what walking every set gives, float for float (Tito's ties hang on it)."""
    from engine.bots.common import card_worth
    from engine.bots.sim import _ranked, worth_table

    w = worth_table(card_worth(PRESETS[preset]))
    rng = random.Random(preset)
    for _ in range(400):
        table = sorted(rng.sample(range(40), rng.randint(1, 9)))
        mask = sum(1 << c for c in table)
        for hybrid in (False, True):
            for escoba in (False, True):
                flat = _ranked(mask, {}, w, hybrid, escoba)
                pairs = list(zip(flat[::2], map(int, flat[1::2]), strict=True))
                assert pairs == _plain_ranked(table, w, hybrid, escoba)
