"""Luna's rollouts play each opponent in the style its plays this round show (issue 29).

``luna.known_choices`` rebuilds the opponents' plays of the deals already played out, with
the hands they held (shown by their own later plays); ``luna.styles_read`` weighs four
generic styles by them; ``sim.Round`` plays a seat in the rollouts as its style says.
"""

from __future__ import annotations

import random

import pytest

from engine import decide, fold, view
from engine.bots import carmen, luna, sim, sparring, tito
from engine.bots.common import Reading
from engine.bots.match import table
from engine.bots.sim import ANY, GRAB, INDEX, TAKE, TITO

from .test_luna import TABLES, _reshuffled, legal, random_position

CHOOSE = {"tito": tito.choose, "greedy": sparring.choose_greedy, "carmen": carmen.choose}


def _play(s, chooser, rng):
    command = dict(chooser(view(s, s.turn), rng))
    command["by"] = s.turn
    return fold(s, decide(s, command))


@pytest.mark.parametrize("preset,overrides", TABLES)
@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_known_plays_carry_the_hands_and_tables_as_they_were(preset, overrides, players):
    """Every play of a deal played out, by a seat not on the reader's side, is listed once with
    the hand, the table and the stock's size it was made with (taken from the real state)."""
    checked = 0
    for seed in range(2):
        rng = random.Random(seed * 31 + players)
        s = table(preset, ["tito"] * players, rng, settings=overrides)
        rnd = s.round
        made = []  # (seat, hand, table, stock size, card, taken) of this round's plays
        while s.status == "playing":
            if s.round != rnd:
                rnd, made = s.round, []
            v = view(s, s.turn)
            r = Reading(v)
            if not r.fifteen_sets:
                known = luna.known_choices(r, luna._root(r))
                per_deal = 3 * len(r.players)
                done = len(made) - len(made) % per_deal
                expect = [m for m in made[:done] if r.side_of[m[0]] != r.my_side]
                got = [(seat, sorted(before.hands[seat]), sorted(before.table), len(before.stock), card, set(taken))
                       for seat, plays in known.items() for before, _, card, taken in plays]
                want = [(m[0], sorted(INDEX[c] for c in m[1]), sorted(INDEX[c] for c in m[2]), m[3],
                         INDEX[m[4]], {INDEX[c] for c in m[5]}) for m in expect]
                assert sorted(got, key=repr) == sorted(want, key=repr)
                checked += len(got)
            command = dict(tito.choose(v, rng))
            command["by"] = s.turn
            if command["type"] == "play":
                before = (s.turn, list(s.hands[s.turn]), list(s.table), len(s.stock), command["card"],
                          list(command["capture"]))
            s = fold(s, decide(s, command))
            if command["type"] == "play":
                made.append(before)
    assert checked > 20


@pytest.mark.parametrize("preset,opponent,style", [
    *((p, o, s) for p in ("selminha", "del15", "cardgames") for o, s in (("tito", TITO), ("greedy", GRAB))),
    # Carmen (who nearly always takes, any capture) is read as the taker
    *(("selminha", "carmen", TAKE), ("del15", "carmen", TAKE))])
def test_an_opponent_is_read_as_the_style_it_plays(preset, opponent, style):
    """Late in a round, a Tito is read as Tito, the greedy taker as the greedy style and Carmen
    as the taker, most of the time (the styles agree on many plays, so not every time)."""
    right = seen = 0
    for seed in range(3):
        rng = random.Random(seed)
        s = table(preset, ["tito", opponent], rng)
        while s.status == "playing":
            if s.turn == 0:
                r = Reading(view(s, 0))
                if not r.fifteen_sets and len(luna.known_choices(r, luna._root(r)).get(1, [])) >= 6:
                    ws = luna.styles_read(r, luna._root(r))[1]
                    assert abs(sum(ws) - 1) < 1e-9 and min(ws) > 0
                    seen += 1
                    right += max(range(4), key=lambda i: ws[i]) == style
            s = _play(s, CHOOSE["tito" if s.turn == 0 else opponent], rng)
    assert seen >= 10 and right / seen > 0.6


def test_before_any_deal_is_played_out_the_styles_are_the_prior():
    s = table("del15", ["tito", "tito"], random.Random(2))
    r = Reading(view(s, s.turn))
    assert luna.styles_read(r, luna._root(r)) == {1 - s.turn: list(luna.STYLE_PRIOR)}


@pytest.mark.parametrize("preset,overrides", TABLES)
def test_the_simulators_legal_plays_are_the_engines(preset, overrides):
    checked = 0
    for seed in range(12):
        s = random_position(preset, overrides, 2 + seed % 3, seed, plays=seed * 3)
        if s.status != "playing" or s.fifteen is not None:
            continue
        v = view(s, s.turn)
        r = Reading(v)
        root = luna._root(r)
        mine = sorted((sim.CODE[c], sorted(sim.CODE[x] for x in t)) for c, t in root.legal(r.me))
        engine = sorted((m["card"], sorted(m["capture"])) for m in legal(v) if m["type"] == "play")
        assert mine == engine
        card, taken = root.grab(r.me)
        want = sparring.choose_greedy(v, random.Random(0))
        got = {"type": "play", "card": sim.CODE[card], "capture": [sim.CODE[c] for c in taken]}
        # the greedy taker's key (most cards, then their worth; else the cheapest card) is the sparring bot's
        worth = luna.card_worth(r.settings)

        def key(m, worth=worth):
            if m["capture"]:
                return len(m["capture"]) + 1, sum(worth[c] for c in [m["card"], *m["capture"]])
            return 0, -worth[m["card"]]

        assert key(got)[0] == key(want)[0] and abs(key(got)[1] - key(want)[1]) < 1e-9
        checked += 1
    assert checked >= 5


def test_a_rollout_plays_each_seat_in_its_style():
    """GRAB plays the greedy taker's move, ANY a legal move drawn from the round's own seed
    (the same seed, the same rollout), TAKE a capture drawn so when there is one, the others
    Tito's; a 15 left behind is taken first, as Tito would, whatever the style. (cardgames: no
    15 left behind; selminha: a card may be left though it could take.)"""
    checked = taking = 0
    for seed in range(6):
        s = random_position("cardgames" if seed % 2 else "selminha", None, 2, seed, plays=2 + seed)
        if s.status != "playing" or s.fifteen is not None:
            continue
        r = Reading(view(s, s.turn))
        root = luna._root(r)
        other = 1 - r.me
        deal, _ = luna.Deals(r, root).draw(random.Random(seed))
        for style in (TITO, GRAB, ANY, TAKE):
            a = deal.copy()
            a.styles = {other: style}
            a.seed = 77 + seed
            while a.turn >= 0:
                seat = a.turn
                want = a.copy()
                if want.pending >= 0:
                    fifteen = want.best_take()
                    if fifteen:
                        want.take_fifteen(seat, fifteen)
                if seat == other and style == GRAB:
                    card, taken = want.grab(seat)
                    assert taken or not any(t for _, t in want.legal(seat))
                elif seat == other and style in (ANY, TAKE):
                    want.seed = (want.seed * 1103515245 + 12345) & 0x7FFFFFFF
                    options = want.legal(seat)
                    if style == TAKE:
                        options = [o for o in options if o[1]] or options
                        taking += bool(options[0][1])
                    card, taken = options[(want.seed >> 8) % len(options)]
                    assert style == ANY or taken or not any(t for _, t in want.legal(seat))
                else:
                    card, taken = want.tito(seat)
                want.play(seat, card, taken)
                a.rollout(1)
                assert (a.hands, a.table, a.piles, a.seed) == (want.hands, want.table, want.piles, want.seed)
                checked += 1
            b, c = deal.copy(), deal.copy()
            for x in (b, c):
                x.styles, x.seed = {other: style}, 5
                x.rollout()
            assert (b.piles, b.escobas) == (c.piles, c.escobas)
    assert checked > 100 and taking > 5


def test_hidden_cards_never_change_the_styles_read():
    checked = 0
    for seed in range(6):
        s = random_position("selminha", None, 2, seed, plays=8 + seed * 3)
        if s.status != "playing":
            continue
        seat = s.turn
        t = _reshuffled(s, seat, random.Random(seed))
        r1, r2 = Reading(view(s, seat)), Reading(view(t, seat))
        assert luna.styles_read(r1, luna._root(r1)) == luna.styles_read(r2, luna._root(r2))
        checked += 1
    assert checked >= 3


@pytest.mark.parametrize("weights", [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.6, 0.2, 0.2),
                                     (0.0, 0.0, 0.0, 1.0), (0.6, 0.2, 0.1, 0.1)])
def test_a_mixture_of_styles_is_a_chance_over_the_legal_plays(weights):
    """Summed over every legal play of a hand, ``Styles.chance_of`` is 1; a play the hand did
    not allow has chance 0; ``people.parse`` names the same model."""
    from engine.bots import people

    model = people.parse("styles:" + ",".join(map(str, weights)))
    assert model == people.Styles(weights)
    checked = 0
    for seed in range(10):
        s = random_position(("selminha", "del15", "cardgames")[seed % 3], None, 2, seed, plays=seed * 2)
        if s.status != "playing" or s.fifteen is not None:
            continue
        r = Reading(view(s, s.turn))
        root = luna._root(r)
        plays = root.legal(r.me)
        total = sum(model.chance_of(root, r.me, card, taken) for card, taken in plays)
        assert abs(total - 1) < 1e-9
        held = set(root.hands[r.me])
        stranger = next(c for c in range(40) if c not in held)
        assert model.chance_of(root, r.me, stranger, ()) == 0.0
        checked += 1
    assert checked >= 5
