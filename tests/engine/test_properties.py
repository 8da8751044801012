"""Properties of whole random games, in the three presets and in mixed settings.

Every move is a random legal one, picked from the mover's own view
(``view(state, seat)["options"]`` and ``fifteen_to_take``).
"""

import dataclasses
import json
import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import PRESETS, custom_settings, event_data, event_from, event_type, replay
from engine import events as ev
from engine.capture import captures
from engine.cards import FULL_DECK, total, value
from engine.rules import CHOICES
from engine.state import evolve

from .helpers import random_game

EVERY_CARD = Counter(FULL_DECK)
MAX_ROUNDS = 200


def mixed_settings():
    # every rule of play; not ``rated``, which only says who may sit (these games are of guests)
    return st.fixed_dictionaries(
        {key: st.sampled_from(values) for key, values in CHOICES.items() if key != "rated"}
    ).map(lambda options: custom_settings(**options))


class Checker:
    """Checks every command's events against the rules, as the game goes."""

    def __init__(self, rules):
        self.rules = rules
        self.rounds = 0

    def __call__(self, before, command, events, after):
        self.accounted(after, events)
        scored = [e for e in events if isinstance(e, ev.RoundScored)]
        if not scored and before.status != "waiting":
            assert after.scores == before.scores, "scores change only at the end of a round"
        for e in scored:
            self.rounds += 1
            totals = [
                b + side["round_points"] for b, side in zip(before.scores, e.sides, strict=True)
            ]
            assert list(e.scores) == totals
            for side in e.sides:
                assert side["round_points"] == sum(side["points"].values())
        state = before.copy()
        for e in events:
            self.one(state, e)
            evolve(state, e)
        assert state == after
        assert after.version == before.version + len(events)

    def one(self, s, e):
        """``e`` against the state ``s`` just before it."""
        rules = self.rules
        if isinstance(e, ev.CardPlayed):
            legal = captures(e.card, s.table, rules)
            if e.captured:
                assert frozenset(e.captured) in {frozenset(x) for x in legal}
                made = value(e.card) + total(e.captured)
                if rules.capture == "spanish":
                    assert made == 15
                else:
                    assert made == 15 or total(e.captured) == value(e.card)
                last = not s.stock and sum(len(h) for h in s.hands.values()) == 1
                sweep = len(e.captured) == len(s.table)
                assert e.escoba == (sweep and (rules.last_sweep_escoba or not last))
            else:
                assert not (legal and rules.mandatory_capture), "a card that can capture must"
                assert not e.escoba
                assert e.fifteen_left == bool(legal and rules.take_the_fifteen)
        elif isinstance(e, ev.FifteenTaken):
            assert rules.take_the_fifteen and s.fifteen is not None and s.fifteen[0] == e.card
            if rules.capture == "spanish":
                assert value(e.card) + total(e.captured) == 15
            assert e.escoba == (len(e.captured) + 1 == len(s.table))
        elif isinstance(e, ev.OpeningTableTaken):
            assert rules.opening_fifteen and e.seat == s.dealer and len(e.cards) == 4
            assert (total(e.cards), e.escobas) in ((15, 1), (30, 2))
            assert rules.opening_thirty != "nothing" or e.escobas == 1
        elif isinstance(e, ev.RoundEnded):
            assert e.to_seat == s.last_capturer
            if rules.capture == "spanish":
                assert total(e.leftovers) % 15 == 10, "220 = 14 * 15 + 10"
        elif isinstance(e, ev.GameFinished):
            assert e.reason == "target"
            scores = s.scores
            best = max(scores)
            assert best >= rules.target and scores.count(best) == 1
            assert tuple(e.winners) == s.sides[scores.index(best)]

    def accounted(self, s, events):
        """The 40 cards are always in hands, on the table, in the stock or in piles."""
        where = Counter(s.table) + Counter(s.stock)
        for hand in s.hands.values():
            where += Counter(hand)
        for pile in s.piles:
            where += Counter(pile)
        if s.status in ("round_over", "finished"):
            ended = [e for e in events if isinstance(e, ev.RoundEnded)]
            if ended and ended[-1].to_seat is None:
                where += Counter(ended[-1].leftovers)  # counted for nobody
        if s.status == "playing" or any(isinstance(e, ev.RoundEnded) for e in events):
            assert where == EVERY_CARD, "40 cards accounted for"


def play_game(rules, players, seed):
    checker = Checker(rules)
    final, events = random_game(rules, players, random.Random(seed), MAX_ROUNDS, checker)
    # every game ends, with winners that satisfy the target rule (checked on GameFinished)
    assert final.status == "finished" and final.ended_by == "target"
    assert final.winners and checker.rounds == final.round
    # folding the log from scratch reaches the same state, also through JSON
    assert replay(events) == final
    stored = [
        json.loads(json.dumps({"type": event_type(e), "data": event_data(e)})) for e in events
    ]
    assert replay([event_from(r["type"], r["data"]) for r in stored]) == final
    return final


@settings(max_examples=18, deadline=None)
@given(
    preset=st.sampled_from(sorted(PRESETS)),
    players=st.sampled_from([2, 3, 4]),
    seed=st.integers(0, 2**32),
)
def test_random_games_in_the_presets(preset, players, seed):
    play_game(PRESETS[preset], players, seed)


@settings(max_examples=35, deadline=None)
@given(rules=mixed_settings(), players=st.sampled_from([2, 3, 4]), seed=st.integers(0, 2**32))
def test_random_games_in_mixed_settings(rules, players, seed):
    final = play_game(rules, players, seed)
    if rules.teams and players == 4:
        assert final.sides == ((0, 2), (1, 3)) and len(final.winners) == 2
    else:
        assert len(final.sides) == players and len(final.winners) == 1


def test_every_preset_and_player_count_once():
    for preset in sorted(PRESETS):
        for players in (2, 3, 4):
            play_game(PRESETS[preset], players, seed=players)


def test_a_copy_owns_its_lists_and_dicts_and_equals_its_original():
    state, _ = random_game(PRESETS["selminha"], 2, random.Random(7), MAX_ROUNDS)
    copy = state.copy()
    assert copy == state and copy is not state
    # every field that can change in place, including any added later, is the copy's own
    mutable = [f.name for f in dataclasses.fields(state) if isinstance(getattr(state, f.name), list | dict | set)]
    assert {"seats", "hands", "table", "stock", "piles", "history"} <= set(mutable)
    for name in mutable:
        assert getattr(copy, name) is not getattr(state, name), name
    for seat, hand in state.hands.items():
        assert copy.hands[seat] is not hand
    for mine, theirs in zip(copy.piles, state.piles, strict=True):
        assert mine is not theirs
