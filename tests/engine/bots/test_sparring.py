"""The bench's sparring partners (tito20, greedy): legal in whole games of every preset, and what they claim."""

from __future__ import annotations

import random

import pytest

from engine import State, decide, fold, view
from engine.bots import BOTS, SPARRING, choose, sparring, tito
from engine.bots.match import play_game
from engine.cards import FULL_DECK

from .test_luna import legal

PRESETS = ("selminha", "del15", "cardgames")


def checked_chooser(counts: dict):
    def chooser(bot, v, rng):
        command = choose(bot, v, rng, budget_ms=1)
        assert command in legal(v), (bot, command)
        counts[bot] = counts.get(bot, 0) + 1
        return command

    return chooser


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_sparring_partners_play_only_legal_moves_in_whole_games(preset, players):
    """decide() raises on any illegal command; the chooser also holds each one to the view's options."""
    counts: dict = {}
    for g in range(4):
        lineup = [SPARRING[(g + i) % 2] if i % 2 == 0 else ("carmen", "tito")[g % 2] for i in range(players)]
        s = play_game(preset, lineup, random.Random(f"{preset}{players}{g}"), max_rounds=60,
                      first_dealer=g % players, chooser=checked_chooser(counts))
        assert s.status == "finished"
    assert all(counts.get(b, 0) > 100 for b in SPARRING)


def test_luna_against_each_partner_plays_a_legal_round():
    for preset in PRESETS:
        for other in SPARRING:
            counts: dict = {}
            s = play_game(preset, ["luna", other], random.Random(preset + other), max_rounds=1,
                          chooser=checked_chooser(counts))
            assert s.status in ("round_over", "finished") and counts["luna"] > 5


def test_no_table_seats_a_sparring_partner():
    assert not set(SPARRING) & set(BOTS)
    s = State()
    s = fold(s, decide(s, {"type": "open", "name": "t", "preset": "del15", "player": "p0", "host_name": "A"}))
    from engine.errors import RuleError

    decide(s, {"type": "add_bot", "by": 0, "bot": "tito"})  # the same command seats a table's bot
    for bot in SPARRING:
        with pytest.raises(RuleError):
            decide(s, {"type": "add_bot", "by": 0, "bot": bot})


def _position(table_cards, hand) -> dict:
    rest = [c for c in FULL_DECK if c not in (*table_cards, *hand)]
    s = State()
    s = fold(s, decide(s, {"type": "open", "name": "t", "preset": "del15", "player": "p0", "host_name": "A",
                           "decks": [[*table_cards, *hand, *rest]], "first_dealer": 1}))
    s = fold(s, decide(s, {"type": "sit", "player": "p1", "name": "B"}))
    s = fold(s, decide(s, {"type": "start", "by": 0, "deck": list(FULL_DECK), "pick": 0}))
    return view(s, 0)


def test_greedy_takes_the_most_cards():
    # the 5 takes 1+2+3+4 (five cards with it); the 9 takes the 6 (two); the 8 takes 3+4 (three)
    v = _position(["1c", "2c", "3e", "4b"], ["5c", "9e", "8b"])
    assert sparring.choose_greedy(v, random.Random(0)) == {"type": "play", "card": "5c",
                                                            "capture": ["1c", "2c", "3e", "4b"]}


def test_greedy_with_nothing_to_take_leaves_its_cheapest_card():
    v = _position(["10c", "9e", "8b", "3o"], ["9o", "10b", "8o"])  # no hand card adds up to 15 with any of them
    moves = legal(v)
    assert not any(m["capture"] for m in moves)
    assert sparring.choose_greedy(v, random.Random(0))["card"] == "10b"  # the coins are worth more


def test_tito20_is_tito_four_times_in_five():
    v = _position(["10c", "9e", "8b", "3o"], ["1e", "6c", "2b"])
    own = [tito.choose(v, random.Random(i)) for i in range(400)]
    noisy = [sparring.choose_tito20(v, random.Random(i)) for i in range(400)]
    differs = sum(a != b for a, b in zip(own, noisy, strict=True))
    # a random play is Tito's own a third of the time here (three legal moves)
    assert 0.08 * 400 < differs < 0.2 * 400
