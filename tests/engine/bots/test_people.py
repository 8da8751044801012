"""Luna's reading of the others' hands under a model of people: each guess at the hidden cards
weighed by how likely the others' plays were with it, not rejected unless Tito would have made them."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from engine import decide, fold, view
from engine.bots import choose, luna, people
from engine.bots.common import Reading
from engine.bots.match import table
from engine.bots.people import TITO, Softmax, TitoOrAny
from engine.bots.sim import INDEX, VAL

from .agreement import agreed

PRESETS = ("selminha", "del15", "cardgames")
MODELS = [TitoOrAny(0.8), TitoOrAny(0.5), Softmax(0.3), Softmax(1.0)]


def _positions(lineup: list[str], seeds, plays_max: int = 9):
    """(state, Luna's reading at the turn) along games whose seats play ``lineup``'s bots."""
    for seed in seeds:
        rng = random.Random(seed)
        preset = PRESETS[seed % 3]
        s = table(preset, lineup, rng, first_dealer=seed % len(lineup))
        for _ in range(rng.randint(1, plays_max)):
            if s.status != "playing":
                break
            bot = lineup[s.turn]
            command = dict(choose(bot, view(s, s.turn), rng, budget_ms=1))
            command["by"] = s.turn
            s = fold(s, decide(s, command))
        if s.status == "playing":
            r = Reading(view(s, s.turn))
            if not r.fifteen_sets:
                yield s, r


# --- the models ---------------------------------------------------------------

@pytest.mark.parametrize("model", [TITO, *MODELS])
def test_a_models_chances_over_the_legal_plays_add_up_to_one(model):
    rng = random.Random(1)
    for _ in range(200):
        scores = [round(rng.uniform(-2, 2), 1) for _ in range(rng.randint(1, 9))]
        total = sum(model.chance(scores, s) for s in scores)
        assert total == pytest.approx(1.0)
        assert model.chance(scores, None) == 0.0  # a play the hand did not allow


def test_tito_or_any_gives_tito_his_share_and_everybody_else_the_rest():
    scores = [1.0, 0.2, -0.5, 1.0]
    m = TitoOrAny(0.6)
    assert m.chance(scores, 1.0) == pytest.approx(0.6 / 2 + 0.4 / 4)  # two tied best plays
    assert m.chance(scores, -0.5) == pytest.approx(0.4 / 4)
    assert TITO.chance(scores, 0.2) == 0.0 and TITO.chance(scores, 1.0) == 0.5
    with pytest.raises(ValueError):
        TitoOrAny(1.2)
    with pytest.raises(ValueError):
        Softmax(0.0)


def test_a_softmax_player_favours_better_plays_more_when_colder():
    scores = [1.0, 0.5, -1.0]
    cold, warm = Softmax(0.1), Softmax(2.0)
    assert cold.chance(scores, 1.0) > warm.chance(scores, 1.0) > warm.chance(scores, 0.5) > warm.chance(scores, -1.0)


def test_models_are_named_for_the_bench():
    assert people.parse("tito:0.7") == TitoOrAny(0.7)
    assert people.parse("softmax:0.25") == Softmax(0.25)
    assert people.parse("tito") == TITO
    with pytest.raises(ValueError):
        people.parse("carmen:1")


# --- what the simulator judges is every legal play ------------------------------

def test_judge_scores_every_legal_play_of_the_real_hand_and_finds_the_one_made():
    checked = 0
    for s, r in _positions(["tito", "tito20", "greedy"], range(40)):
        root = luna._root(r)
        for seat in s.players:  # the real cards, for this test only
            root.hands[seat] = [INDEX[c] for c in s.hands[seat]]
        v = view(s, s.turn)
        legal = [(INDEX[o["card"]], frozenset(INDEX[c] for c in cap)) for o in v["options"] for cap in o["captures"]]
        legal += [(INDEX[o["card"]], frozenset()) for o in v["options"] if o["may_leave"]]
        for card, taken in legal:
            scores, played = root.copy().judge(s.turn, card, taken)
            assert len(scores) == len(legal) and played in scores
        off_table = frozenset({INDEX[r.unseen[0]]})  # a "capture" of a card not on the table
        scores, played = root.judge(s.turn, INDEX[v["options"][0]["card"]], off_table)
        assert played is None
        checked += 1
    assert checked > 20


# --- the weighting ----------------------------------------------------------------

def test_with_p_one_a_hand_counts_exactly_when_the_old_tito_reading_kept_it():
    """Under TITO a hand weighs more than 0 iff every play of its seat this deal is one Tito's
    judgement ranks best holding it (``agreed``, the old reading's test); under a model short of certainty, always."""
    rng = random.Random(5)
    kept = dropped = 0
    for _s, r in _positions(["tito", "greedy", "carmen"], range(60)):
        root = luna._root(r)
        reads = luna.past_choices(r, root)
        unseen = [INDEX[c] for c in r.unseen]
        for seat, checks in reads.items():
            n = r.hand_count[seat]
            for _ in range(20):
                hand = rng.sample(unseen, n)
                old = agreed(hand, checks) == len(checks)
                assert (luna.hand_weight(hand, checks, TITO) > 0) == old
                assert luna.hand_weight(hand, checks, TitoOrAny(0.8)) > 0
                assert luna.hand_weight(hand, checks, Softmax(0.3)) > 0
                kept += old
                dropped += not old
    assert kept > 50 and dropped > 50


def test_drawing_deals_is_deterministic_for_a_given_rng():
    for _s, r in itertools.islice(_positions(["tito20", "tito"], range(100, 160)), 12):
        deals = luna.Deals(r, people=TitoOrAny(0.8))
        a = [deals.draw(random.Random(7)) for _ in range(3)]
        b = [deals.draw(random.Random(7)) for _ in range(3)]
        assert [(d.hands, d.stock, w) for d, w in a] == [(d.hands, d.stock, w) for d, w in b]
        rng1, rng2 = random.Random(3), random.Random(3)
        run1 = [deals.draw(rng1) for _ in range(5)]
        run2 = [deals.draw(rng2) for _ in range(5)]
        assert [(d.hands, d.stock, w) for d, w in run1] == [(d.hands, d.stock, w) for d, w in run2]
    # and so is her choice with a model passed in, without a clock
    _s, r = next(_positions(["greedy", "tito"], range(200, 260)))
    v = r.view
    for model in (TitoOrAny(0.7), Softmax(0.5)):
        assert luna.choose(v, random.Random(1), 5, people=model) == luna.choose(v, random.Random(1), 5, people=model)


@pytest.mark.parametrize("model", [TITO, TitoOrAny(0.8), Softmax(0.3)])
def test_a_deal_the_view_rules_out_never_gets_weight(model):
    checked = 0
    for s, r in _positions(["tito", "tito20", "greedy"], range(300, 340)):
        deals = luna.Deals(r, people=model)
        seen = [INDEX[c] for c in r.hand + r.table]
        other = next(p for p in r.players if p != r.me)
        truth = deals.root.copy()
        for seat in s.players:
            truth.hands[seat] = [INDEX[c] for c in s.hands[seat]]
        truth.stock = [INDEX[c] for c in s.stock]
        if model is not TITO:
            assert deals.weight(truth) > 0  # the real cards: never ruled out
        if not truth.hands[other]:
            continue
        bad = []
        for card in seen:  # a card the seat holds or sees on the table, in another hand
            d = truth.copy()
            d.hands[other] = [card, *d.hands[other][1:]]
            bad.append(d)
        d = truth.copy()  # a hand one card short, the card in the stock
        d.stock.append(d.hands[other].pop())
        bad.append(d)
        d = truth.copy()  # her own hand not hers
        if d.stock:
            d.hands[r.me] = [d.stock[0], *d.hands[r.me][1:]]
            bad.append(d)
        assert all(deals.weight(d) == 0.0 for d in bad)
        rng = random.Random(checked)
        for _ in range(5):
            deal, w = deals.draw(rng)
            if w > 0:  # a drawn deal is always one the view allows, and weighs what its hands weigh
                assert deals.weight(deal) > 0
        checked += 1
    assert checked > 15


def test_under_tito_a_drawn_deal_of_weight_has_only_hands_tito_would_have_played():
    rng = random.Random(2)
    checked = 0
    for _s, r in _positions(["tito", "carmen", "greedy"], range(400, 460)):
        deals = luna.Deals(r, people=TITO)
        for _ in range(4):
            deal, w = deals.draw(rng)
            for seat, checks in deals.reads.items():
                if w > 0:
                    assert agreed(deal.hands[seat], checks) == len(checks)
                    checked += 1
    assert checked > 30


@pytest.mark.parametrize("model", [TitoOrAny(0.6), Softmax(0.3), people.Styles((0.5, 0.2, 0.2, 0.1))])
def test_a_hands_weight_is_kept_by_its_cards_whatever_their_order(model):
    """Deals keep each hand's weight and style chances by seat and cards (a decision draws the
    same few hands thousands of times): that holds only if the order of a hand's cards changes
    neither, and the kept value must be what a fresh reading gives."""
    checked = 0
    for _s, r in itertools.islice(_positions(["carmen", "tito", "greedy"], range(700, 800)), 25):
        deals = luna.Deals(r, people=model)
        for seat, checks in deals.reads.items():
            rng = random.Random(seat)
            for _ in range(6):
                hand = rng.sample(deals.unseen, r.hand_count[seat])
                fresh = luna.hand_weight(list(hand), checks, model)
                fresh_chances = []
                for before, s, card, taken, since in checks:
                    before.hands[s] = list(hand) + since
                    fresh_chances.append(people.style_chances(before, s, card, taken, luna.STYLE_NOISE))
                for order in (hand, hand[::-1], sorted(hand)):
                    assert luna.hand_weight(list(order), checks, model) == fresh
                    assert deals.hand_weight(seat, list(order), checks) == fresh
                    assert deals.style_chances(seat, list(order)) == fresh_chances
                checked += 1
    assert checked > 40


@pytest.mark.parametrize("tries", [12, 2])
def test_the_weighted_deals_read_a_hand_as_the_model_does(tries):
    """Against the exact answer, every possible hand enumerated and weighed: the chance that the
    other player holds a card of each value, as the weighted draws estimate it. With two hands
    tried a deal, picking one by weight alone is far off (0.19 here): the deal's weight mends it."""
    def told(r):  # how many plays the other made this deal, if it still holds a card (else nothing to read)
        reads = luna.past_choices(r, luna._root(r))
        return sum(len(c) for seat, c in reads.items() if r.hand_count[seat])

    positions = [r for _s, r in _positions(["tito20", "tito"], range(500, 600), plays_max=5) if told(r)]
    r = max(positions[:12], key=told)
    model = TitoOrAny(0.8)
    deals = luna.Deals(r, people=model, tries=tries)
    (seat, checks), = deals.reads.items()
    n = r.hand_count[seat]
    exact = [0.0] * 11
    total = 0.0
    for hand in itertools.combinations(deals.unseen, n):
        w = luna.hand_weight(list(hand), checks, model)
        total += w
        for v in {VAL[c] for c in hand}:
            exact[v] += w
    exact = [x / total for x in exact]
    rng = random.Random(11)
    est = [0.0] * 11
    weights = 0.0
    for _ in range(1500):
        deal, w = deals.draw(rng)
        weights += w
        for v in {VAL[c] for c in deal.hands[seat]}:
            est[v] += w
    est = [x / weights for x in est]
    assert max(abs(a - b) for a, b in zip(exact[1:], est[1:], strict=True)) < 0.05
    uniform = [0.0] * 11  # and the plays do say something: the exact answer is not the blind one
    combos = list(itertools.combinations(deals.unseen, n))
    for hand in combos:
        for v in {VAL[c] for c in hand}:
            uniform[v] += 1 / len(combos)
    assert max(abs(a - b) for a, b in zip(exact[1:], uniform[1:], strict=True)) > 0.05


def test_the_search_counts_deals_by_their_weight(monkeypatch):
    """Equal weights give the plain paired test; a deal's weight moves the pruning's mean."""
    results = [[1, 1, 1, 1], [0, 0, 0, 3]]
    totals_plain = [sum(x) for x in results]
    assert luna._prune([0, 1], results, totals_plain, 4) == luna._prune([0, 1], results, totals_plain, 4, [1.0] * 4)
    assert luna.effective_count([1.0] * 4) == pytest.approx(4)
    assert luna.effective_count([1.0, 0.0, 0.0, 0.0]) == pytest.approx(1)


# --- the sampler the game analysis calls ---------------------------------------------

def _late_position():
    """Three players, the stock empty: the hidden cards are the two other hands, every split listable."""
    lineup = ["tito20", "tito", "greedy"]
    for seed in range(700, 800):
        rng = random.Random(seed)
        s = table("del15", lineup, rng)
        while s.status == "playing" and (s.stock or sum(map(len, s.hands.values())) > 6):
            command = dict(choose(lineup[s.turn], view(s, s.turn), rng))
            command["by"] = s.turn
            s = fold(s, decide(s, command))
        if s.status == "playing":
            r = Reading(view(s, s.turn))
            others = [p for p in r.players if p != r.me]
            if not r.fifteen_sets and all(r.hand_count[p] for p in others) and luna.past_choices(r, luna._root(r)):
                return s, r
    raise AssertionError("no late position found")


def test_the_sampler_lists_every_deal_with_its_weight_once_the_stock_is_empty():
    s, r = _late_position()
    model = TitoOrAny(0.6)
    sample = luna.sampler(model)
    deals, exact = sample(r, luna._root(r), random.Random(0), 1000)
    assert exact
    a, b = [p for p in r.players if p != r.me]
    unseen = [INDEX[c] for c in r.unseen]
    splits = {tuple(sorted(d.hands[a])) for d, _ in deals}
    assert len(deals) == len(splits) == len(list(itertools.combinations(unseen, r.hand_count[a]))) > 1
    for d, _ in deals:
        assert sorted(d.hands[a] + d.hands[b]) == sorted(unseen) and not d.stock
    reads = luna.past_choices(r, luna._root(r))
    for d, w in deals:
        expect = math.prod(luna.hand_weight(list(d.hands[p]), reads[p], model) for p in reads)
        assert w == pytest.approx(expect) and w > 0
    assert tuple(sorted(INDEX[c] for c in s.hands[a])) in splits
    # too many to list: drawn deals, with their weights, deterministic for the rng
    few, exact = sample(r, luna._root(r), random.Random(4), 1)
    again, _ = sample(r, luna._root(r), random.Random(4), 1)
    assert not exact and len(few) == 1 and [(d.hands, w) for d, w in few] == [(d.hands, w) for d, w in again]


def test_the_sampler_under_tito_alone_falls_back_on_the_blind_reading_rather_than_nothing():
    checked = 0
    for _s, r in _positions(["tito", "greedy"], range(800, 900)):
        deals, exact = luna.sampler(TITO)(r, luna._root(r), random.Random(1), 3)
        assert exact or (len(deals) == 3 and sum(w for _, w in deals) > 0)
        checked += 1
    assert checked > 20
