"""Carmen, Tito and Luna: always legal, in every ruleset, and blind to hidden cards."""

from __future__ import annotations

import copy
import itertools
import random

import pytest

from engine import State, decide, fold, view
from engine.bots import BOTS, carmen, choose, luna, tito
from engine.bots.match import play_game
from engine.cards import FULL_DECK

TABLES = [
    ("selminha", None), ("del15", None), ("cardgames", None), ("del15", {"capture": "hybrid"}),
]
HIDDEN = ("hands", "stock", "piles")


def fast_chooser(seen: list):
    """Every bot through ``engine.bots.choose``; Luna on a small budget. Checks what a bot is handed."""

    def chooser(bot, v, rng):
        assert isinstance(v, dict) and not any(k in v for k in HIDDEN)
        before = copy.deepcopy(v)
        command = choose(bot, v, rng, budget_ms=2)
        assert v == before, "a bot must not change the view it reads"
        assert "by" not in command and command["type"] in ("play", "take_fifteen")
        seen.append(command["type"])
        return command

    return chooser


@pytest.mark.parametrize("preset,settings", TABLES)
@pytest.mark.parametrize("players", [2, 3, 4])
def test_every_bot_command_is_accepted_by_the_engine(preset, settings, players):
    """Whole games with every bot seated with the others; decide() raises on any illegal move."""
    seen: list = []
    lineups = list(itertools.permutations(BOTS, 2)) if players == 2 else [
        tuple(BOTS[(i + k) % 3] for i in range(players)) for k in range(3)
    ]
    for g, lineup in enumerate(lineups):
        rounds = 1 if "luna" in lineup else 4
        rng = random.Random(f"{preset}{settings}{players}{g}")
        s = play_game(preset, list(lineup), rng, settings=settings, max_rounds=rounds,
                      first_dealer=g % players, chooser=fast_chooser(seen))
        assert s.status in ("round_over", "finished")
    assert seen.count("play") > 50


@pytest.mark.parametrize("preset,settings", TABLES)
def test_carmen_and_tito_play_many_games_to_the_end(preset, settings):
    for g in range(6):
        rng = random.Random(g)
        lineup = ["tito", "carmen", "tito", "carmen"][: 2 + g % 3]
        s = play_game(preset, lineup, rng, settings=settings, max_rounds=60, chooser=fast_chooser([]))
        assert s.status == "finished"


def test_take_the_fifteen_is_taken_when_offered():
    taken = {b: 0 for b in BOTS}
    offered = {b: 0 for b in BOTS}

    def chooser(bot, v, rng):
        command = choose(bot, v, rng, budget_ms=2)
        if v["fifteen_to_take"]:
            offered[bot] += 1
            taken[bot] += command["type"] == "take_fifteen"
            if command["type"] == "take_fifteen":
                assert command["cards"] in v["fifteen_to_take"]["sets"]
        return command

    for g in range(12):
        play_game("selminha", ["carmen", "carmen", "tito", "luna"][g % 3 :][:2] or ["carmen", "tito"],
                  random.Random(g), max_rounds=3, chooser=chooser)
    assert offered["carmen"] > 0
    assert taken["tito"] == offered["tito"] and taken["luna"] == offered["luna"]


# --- the view-only rule ------------------------------------------------------

def _mid_round(preset: str, players: int, seed: int, plays: int) -> State:
    rng = random.Random(seed)
    from engine.bots.match import table

    s = table(preset, ["tito"] * players, rng)
    for _ in range(plays):
        if s.status != "playing":
            break
        command = dict(tito.choose(view(s, s.turn), rng))
        command["by"] = s.turn
        s = fold(s, decide(s, command))
    return s


def _reshuffle_hidden(s: State, seat: int, rng: random.Random) -> State:
    """The same state from ``seat``: every card it cannot see dealt again among the others and the stock."""
    other = s.copy()
    hidden = [c for p in s.players if p != seat for c in s.hands[p]] + list(s.stock)
    rng.shuffle(hidden)
    at = 0
    for p in s.players:
        if p != seat:
            n = len(s.hands[p])
            other.hands[p] = hidden[at : at + n]
            at += n
    other.stock = hidden[at:]
    return other


def _fake_clock():
    ticks = itertools.count()
    return lambda: next(ticks) / 1000.0  # one millisecond a reading


@pytest.mark.parametrize("preset,players,plays", [
    ("selminha", 2, 3), ("selminha", 4, 5), ("del15", 2, 7), ("del15", 4, 2), ("cardgames", 3, 4),
])
def test_hidden_cards_do_not_change_a_decision(preset, players, plays):
    s = _mid_round(preset, players, seed=players * 100 + plays, plays=plays)
    assert s.status == "playing"
    seat = s.turn
    t = _reshuffle_hidden(s, seat, random.Random(1))
    assert t.hands != s.hands or t.stock != s.stock
    v1, v2 = view(s, seat), view(t, seat)
    assert v1 == v2
    assert not any(k in v1 for k in HIDDEN)
    mine = set(s.hands[seat])
    shown = repr(v1)
    assert all(f"'{c}'" not in shown for p in s.players if p != seat for c in s.hands[p] if c not in mine)
    for bot in ("carmen", "tito"):
        assert choose(bot, v1, random.Random(9)) == choose(bot, v2, random.Random(9))
    a = luna.choose(v1, random.Random(9), 30, clock=_fake_clock())
    b = luna.choose(v2, random.Random(9), 30, clock=_fake_clock())
    assert a == b


def test_a_bot_is_handed_a_view_dict_and_nothing_else():
    s = _mid_round("del15", 2, seed=3, plays=2)
    for bot in BOTS:
        with pytest.raises(TypeError):
            choose(bot, s, random.Random(0))
    with pytest.raises(ValueError):
        choose("nobody", view(s, s.turn), random.Random(0))
    not_mine = view(s, s.players[(s.players.index(s.turn) + 1) % 2])
    with pytest.raises(ValueError):
        carmen.choose(not_mine, random.Random(0))


# --- a few things each bot should know ----------------------------------------

def _position(preset: str, table_cards, hand, settings=None) -> dict:
    """Two players; seat 0 leads holding ``hand`` with ``table_cards`` turned up."""
    rest = [c for c in FULL_DECK if c not in (*table_cards, *hand)]
    deck = [*table_cards, *hand, *rest]
    s = State()
    opening = {"type": "open", "name": "t", "preset": preset, "player": "p0", "host_name": "A",
               "decks": [deck], "first_dealer": 1}
    if settings:
        opening["settings"] = settings
    s = fold(s, decide(s, opening))
    s = fold(s, decide(s, {"type": "sit", "player": "p1", "name": "B"}))
    s = fold(s, decide(s, {"type": "start", "by": 0, "deck": list(FULL_DECK), "pick": 0}))
    assert s.turn == 0 and s.hands[0] == list(hand)
    return view(s, 0)


@pytest.mark.parametrize("bot", ["tito", "luna"])
def test_the_stronger_bots_take_an_escoba(bot):
    v = _position("selminha", ["1c", "2c", "3e", "4b"], ["5c", "9e", "8b"])
    command = choose(bot, v, random.Random(0), budget_ms=20)
    assert command == {"type": "play", "card": "5c", "capture": ["1c", "2c", "3e", "4b"]}


@pytest.mark.parametrize("bot", ["tito", "luna"])
def test_the_stronger_bots_go_for_the_seven_of_coins(bot):
    v = _position("del15", ["7o", "9c", "10e", "2b"], ["8b", "6c", "4e"])
    command = choose(bot, v, random.Random(0), budget_ms=20)
    assert "7o" in command["capture"]  # 8 + 7, or 6 + 2 + 7


def test_tito_keeps_the_table_out_of_a_single_cards_reach():
    # table 10: leaving a 1 makes 11 (a 4 sweeps it); a 6 makes 16 (nothing sweeps 16)
    v = _position("selminha", ["10c", "9e", "8b", "3o"], ["1e", "6c", "2b"])  # 30: no opening escoba
    command = tito.choose(v, random.Random(0))
    assert command["type"] == "play"
    table_after = [c for c in v["table_cards"] if c not in command["capture"]]
    if not command["capture"]:
        table_after.append(command["card"])
    total = sum(int(c[:-1]) for c in table_after)
    assert not 5 <= total <= 14


def test_carmen_prefers_a_capture_when_she_has_one():
    v = _position("del15", ["7o", "9c", "10e", "2b"], ["8b", "1c", "4e"])
    picks = [carmen.choose(v, random.Random(i)) for i in range(50)]
    assert sum(bool(p["capture"]) for p in picks) >= 35
