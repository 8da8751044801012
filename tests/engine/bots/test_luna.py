"""Luna's search is sound: legal moves only, her seat's view only, the engine's own
scoring at the leaf, and a budget read inside the search. Strength is measured in
bench/bots.py, not here."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import decide, fold, view
from engine.bots import luna, tito
from engine.bots.common import Reading
from engine.bots.match import table
from engine.bots.sim import CODE, INDEX, round_points
from engine.cards import FULL_DECK
from engine.rules import PRESETS, Settings
from engine.scoring import score_round

from .agreement import agreed
from .source import sim_source

# every preset, and the settings that change what a move may do or score
TABLES = [
    ("selminha", None), ("selminha", {"opening_thirty": "nothing"}),
    ("del15", None), ("del15", {"capture": "hybrid"}), ("del15", {"all_coins_extra": True, "all_sevens_extra": True}),
    ("cardgames", None),
]


def random_legal(v: dict, rng: random.Random) -> dict:
    """Any legal command at this view, TAKE THE 15 now and then."""
    fifteen = v["fifteen_to_take"]
    if fifteen and rng.random() < 0.5:
        return {"type": "take_fifteen", "cards": list(rng.choice(fifteen["sets"]))}
    opt = rng.choice(v["options"])
    sets = opt["captures"]
    if opt["may_leave"] and (not sets or rng.random() < 0.3):
        return {"type": "play", "card": opt["card"], "capture": []}
    return {"type": "play", "card": opt["card"], "capture": list(rng.choice(sets))}


def legal(v: dict) -> list[dict]:
    moves = []
    if v["fifteen_to_take"]:
        moves += [{"type": "take_fifteen", "cards": list(s)} for s in v["fifteen_to_take"]["sets"]]
    for opt in v["options"]:
        moves += [{"type": "play", "card": opt["card"], "capture": list(s)} for s in opt["captures"]]
        if opt["may_leave"]:
            moves.append({"type": "play", "card": opt["card"], "capture": []})
    return moves


def random_position(preset, overrides, players, seed, plays):
    """A table some random legal plays (maybe rounds) into a game, at somebody's turn."""
    rng = random.Random(seed)
    s = table(preset, ["carmen"] * players, rng, settings=overrides, first_dealer=seed % players)
    for _ in range(plays):
        if s.status == "round_over":
            deck = list(FULL_DECK)
            rng.shuffle(deck)
            s = fold(s, decide(s, {"type": "next_round", "by": 0, "deck": deck}))
        if s.status != "playing":
            break
        command = random_legal(view(s, s.turn), rng)
        command["by"] = s.turn
        s = fold(s, decide(s, command))
    if s.status == "round_over":
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        s = fold(s, decide(s, {"type": "next_round", "by": 0, "deck": deck}))
    return s


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    table_=st.sampled_from(TABLES),
    players=st.integers(2, 4),
    seed=st.integers(0, 10**6),
    plays=st.integers(0, 60),
)
def test_luna_never_proposes_an_illegal_move(table_, players, seed, plays):
    preset, overrides = table_
    s = random_position(preset, overrides, players, seed, plays)
    if s.status != "playing":
        return
    v = view(s, s.turn)
    command = luna.choose(v, random.Random(seed), 3)  # no clock: a budget of simulated plays
    assert command in legal(v)
    decide(s, {**command, "by": s.turn})  # the engine accepts it (RuleError otherwise)


def _reshuffled(s, seat, rng):
    """The same table from ``seat``'s chair: the cards it cannot see dealt again."""
    other = s.copy()
    hidden = [c for p in s.players if p != seat for c in s.hands[p]] + list(s.stock)
    rng.shuffle(hidden)
    at = 0
    for p in s.players:
        if p != seat:
            other.hands[p] = hidden[at : at + len(s.hands[p])]
            at += len(s.hands[p])
    other.stock = hidden[at:]
    return other


@pytest.mark.parametrize("preset,overrides", TABLES)
@pytest.mark.parametrize("players", [2, 3, 4])
def test_hidden_cards_never_change_what_luna_does(preset, overrides, players):
    """Same view, same seed: the same move, however the cards she cannot see lie."""
    checked = 0
    for seed in range(4):
        s = random_position(preset, overrides, players, seed * 7 + players, plays=3 + seed * 5)
        if s.status != "playing":
            continue
        seat = s.turn
        t = _reshuffled(s, seat, random.Random(seed))
        if t.hands == s.hands and t.stock == s.stock:
            continue
        v1, v2 = view(s, seat), view(t, seat)
        assert v1 == v2
        assert luna.choose(v1, random.Random(seed), 4) == luna.choose(v2, random.Random(seed), 4)
        checked += 1
    assert checked >= 2


def test_luna_reads_only_the_view_she_is_handed():
    """She refuses a state; and a view stripped of a seat's hidden cards is all she reads."""
    s = random_position("del15", None, 2, 5, 4)
    with pytest.raises(TypeError):
        luna.choose(s, random.Random(0), 3)
    v = view(s, s.turn)
    read: set = set()

    class Watched(dict):
        def __getitem__(self, key):
            read.add(key)
            return super().__getitem__(key)

        def get(self, key, default=None):
            read.add(key)
            return super().get(key, default)

    luna.choose(Watched(v), random.Random(0), 3)
    assert read <= set(v) and {"hand", "table_cards", "history"} <= read
    assert not read & {"hands", "stock", "piles"}


# --- the leaf is the engine's scoring -----------------------------------------------

SCORINGS = [PRESETS["selminha"], PRESETS["del15"], PRESETS["cardgames"],
            Settings(sevens="setenta", all_coins_extra=True, all_sevens_extra=True, most_cards_double=True)]


@pytest.mark.parametrize("rules", SCORINGS, ids=["selminha", "del15", "cardgames", "setenta+bonuses"])
@pytest.mark.parametrize("sides", [2, 3, 4])
def test_round_points_equal_engine_scoring_on_any_piles(rules, sides):
    rng = random.Random(sides)
    for k in range(400):
        deck = list(range(40))
        rng.shuffle(deck)
        if k % 5 == 0:  # one side with all ten coins or all four sevens now and then
            lucky = list(range(10)) if k % 10 == 0 else [6, 16, 26, 36]
            deck = lucky + [c for c in deck if c not in lucky]
        cut = sorted(rng.sample(range(1, 40), sides - 1))
        piles = [deck[a:b] for a, b in zip([0, *cut], [*cut, 40], strict=True)]
        if k % 3 == 0:  # cards still unclaimed (a round with no capture at all leaves them)
            piles = [p[: rng.randint(0, len(p))] for p in piles]
        escobas = [rng.randint(0, 3) for _ in piles]
        mine = round_points(piles, escobas, rules)
        seats = [(i,) for i in range(sides)]
        engine = score_round(seats, [[CODE[c] for c in p] for p in piles], escobas, rules)
        assert mine == [t["round_points"] for t in engine]


@pytest.mark.parametrize("preset,overrides", TABLES)
@pytest.mark.parametrize("players", [2, 3, 4])
def test_the_leaf_of_a_completed_round_is_what_the_engine_scored(preset, overrides, players):
    """Replay engine rounds in Luna's simulator; at the end her leaf equals the engine's score box."""
    for seed in range(3):
        rng = random.Random(seed * 31 + players)
        s = table(preset, ["carmen"] * players, rng, settings=overrides)
        root = luna._root(Reading(view(s, s.turn)))
        for seat in s.players:  # the hidden cards, for this test only
            root.hands[seat] = [INDEX[c] for c in s.hands[seat]]
        root.stock = [INDEX[c] for c in s.stock]
        while s.status == "playing":
            seat = s.turn
            command = random_legal(view(s, seat), rng)
            if command["type"] == "take_fifteen":
                root.take_fifteen(seat, [INDEX[c] for c in command["cards"][1:]])
            else:
                root.pending = -1  # a 15 not taken is gone once a card is played
                root.play(seat, INDEX[command["card"]], [INDEX[c] for c in command["capture"]])
            s = fold(s, decide(s, {**command, "by": seat}))
        assert root.over()
        assert root.points() == [t["round_points"] for t in s.last_round]


# --- the budget is read inside the search -------------------------------------------

class Ticker:
    """A fake CPU clock that moves only when the simulator plays a card (``per_play`` seconds)."""

    def __init__(self, per_play: float):
        self.now = 0.0
        self.per_play = per_play
        self.log: list[tuple[str, float]] = []

    def clock(self) -> float:
        self.log.append(("read", self.now))
        return self.now

    def played(self) -> None:
        self.now += self.per_play
        self.log.append(("play", self.now))


@pytest.fixture
def ticker(monkeypatch):
    t = Ticker(per_play=0.0001)  # a tenth of a millisecond a simulated play
    source = sim_source()  # the compiled rollouts would not call a patched play
    real_play = source.Round.play

    def play(self, *args):
        t.played()
        return real_play(self, *args)

    monkeypatch.setattr(source.Round, "play", play)
    monkeypatch.setattr(luna, "Round", source.Round)
    monkeypatch.setattr(luna, "PRUNE_Z", 1e9)  # no early end: the budget alone stops her
    return t


def _opening(preset="del15", players=2, seed=11):
    """A position early in a round where Luna searches (several moves, no 15 to take)."""
    for k in range(50):
        s = random_position(preset, None, players, seed + 1000 * k, plays=1)
        v = view(s, s.turn)
        if s.status == "playing" and not v["fifteen_to_take"] and len({m["card"] for m in legal(v)}) == 3:
            return v
    raise AssertionError("no position found")


@pytest.mark.parametrize("budget_ms", [5, 20, 60])
def test_the_search_stops_within_a_few_plays_of_the_budget(ticker, budget_ms):
    v = _opening()
    luna.choose(v, random.Random(0), budget_ms, clock=ticker.clock, max_iterations=10**6)
    end = budget_ms / 1000.0 * luna.MARGIN
    plays = [t for kind, t in ticker.log if kind == "play"]
    # it searched until the budget was spent...
    assert ticker.now >= end
    # ...and no further than the plays between two readings of the clock
    assert ticker.now <= end + (luna.CHECK_EVERY + 1) * ticker.per_play + 1e-12
    assert len(plays) > budget_ms * 5
    # the clock is read inside rollouts: never more than CHECK_EVERY plays (and a root move) unread
    run = 0
    for kind, _ in ticker.log:
        run = run + 1 if kind == "play" else 0
        assert run <= luna.CHECK_EVERY + 1
    # once a reading says the budget is spent, nothing more is played
    first_over = next(i for i, (kind, t) in enumerate(ticker.log) if kind == "read" and t >= end)
    assert all(kind == "read" for kind, _ in ticker.log[first_over:])


def test_a_starved_process_is_stopped_by_the_wall_clock(ticker):
    """CPU time does not move (the process waits for a core); the wall bound still ends it."""
    v = _opening(seed=12)
    wall = Ticker(per_play=0.0)
    frozen = Ticker(per_play=0.0)

    def wall_clock():
        wall.now = ticker.now  # wall time passes with the plays, CPU time does not
        return wall.clock()

    command = luna.choose(v, random.Random(0), 10, clock=frozen.clock, wall_clock=wall_clock,
                          max_iterations=10**6)
    assert command in legal(v)
    end = 0.010 * luna.WALL_FACTOR
    assert end <= ticker.now <= end + (luna.CHECK_EVERY + 1) * ticker.per_play + 1e-12


def test_a_budget_spent_before_any_deal_is_finished_still_gives_a_legal_move(ticker):
    v = _opening(seed=13)
    command = luna.choose(v, random.Random(0), 0.1, clock=ticker.clock)
    assert command in legal(v)


def test_without_a_clock_the_budget_is_counted_in_plays(ticker):
    v = _opening(seed=14)
    a = luna.choose(v, random.Random(3), 10, max_iterations=10**6)
    plays = sum(kind == "play" for kind, _ in ticker.log)
    limit = 10 * luna.PLAYS_PER_MS
    # a reading stands for CHECK_EVERY plays; a root move is played unread before each rollout
    assert limit / 2 <= plays <= limit * (luna.CHECK_EVERY + 1) / luna.CHECK_EVERY + luna.CHECK_EVERY + 1
    assert luna.choose(v, random.Random(3), 10, max_iterations=10**6) == a  # deterministic


def test_the_engine_reads_no_clock():
    """engine/ stays pure: no module in it imports time or datetime (callers pass clocks in)."""
    root = Path(__file__).resolve().parents[3] / "engine"
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not {n.split(".")[0] for n in names} & {"time", "datetime"}, path


def test_the_seven_of_coins_is_taken_when_it_can_be_and_laid_only_when_it_must():
    take = {"type": "play", "card": "8b", "capture": ["7o"]}
    other = {"type": "play", "card": "3c", "capture": ["2e", "10b"]}
    lay = {"type": "play", "card": "7o", "capture": []}
    leave = {"type": "play", "card": "3c", "capture": []}
    assert luna.seven_of_coins_first([other, take, leave]) == [take]
    assert luna.seven_of_coins_first([lay, leave, other]) == [leave, other]
    assert luna.seven_of_coins_first([lay]) == [lay]
    assert luna.seven_of_coins_first([other, leave]) == [other, leave]


@pytest.mark.parametrize("preset,overrides", TABLES)
def test_luna_takes_the_seven_of_coins_whenever_a_move_does(preset, overrides):
    seen = 0
    for seed in range(120):
        s = random_position(preset, overrides, 2, seed, seed % 30)
        if s.status != "playing":
            continue
        v = view(s, s.turn)
        moves = legal(v)
        if v["fifteen_to_take"] or not any(m["capture"] and "7o" in [m["card"], *m["capture"]] for m in moves):
            continue
        command = luna.choose(v, random.Random(seed), 2)
        assert command in moves and command["capture"] and "7o" in [command["card"], *command["capture"]]
        seen += 1
    assert seen >= 3


# --- reading the others' plays with Tito's judgement --------------------------------

@pytest.mark.parametrize("preset,overrides", TABLES)
@pytest.mark.parametrize("players", [2, 3, 4])
def test_a_tito_players_real_hand_always_agrees_with_his_plays(preset, overrides, players):
    """Tito's hand as it really is passes the reading of every play he made this deal, so the
    reading never rules out the truth against him (the simulator's judgement is his)."""
    checked = 0
    for seed in range(3):
        rng = random.Random(seed * 13 + players)
        s = table(preset, ["tito"] * players, rng, settings=overrides)
        while s.status == "playing":
            v = view(s, s.turn)
            r = Reading(v)
            reads = luna.past_choices(r, luna._root(r))
            assert s.turn not in reads
            for seat, checks in reads.items():
                assert agreed([INDEX[c] for c in s.hands[seat]], checks) == len(checks)
                checked += len(checks)
            command = dict(tito.choose(v, rng))
            command["by"] = s.turn
            s = fold(s, decide(s, command))
    assert checked > 30


def _tito_position(preset, seed, plays):
    """A table some plays into its first round, every play Tito's."""
    rng = random.Random(seed)
    s = table(preset, ["tito", "tito"], rng)
    for _ in range(plays):
        if s.status != "playing":
            break
        command = dict(tito.choose(view(s, s.turn), rng))
        command["by"] = s.turn
        s = fold(s, decide(s, command))
    return s


# --- the leaf weighs the round's points by the race to the target -------------------

def test_the_race_is_fair_and_a_point_never_hurts():
    from engine.bots import race

    assert abs(sum(p for _, _, p in race.outcomes()) - 1) < 1e-9
    for target in (10, 15, 21, 30, 31):
        for a in range(target):
            for b in range(target):
                assert abs(race.chance(a, b, target) + race.chance(b, a, target) - 1) < 1e-9
                assert race.chance(a + 1, b, target) >= race.chance(a, b, target) - 1e-12
        assert race.chance(target, target - 1, target) == 1.0
        assert race.chance(target + 2, target + 2, target) == 0.5  # level past the target: play on


def _reading(scores, target=21, sides=2):
    class R:
        pass

    r = R()
    r.my_side, r.sides, r.scores = 0, [(i,) for i in range(sides)], list(scores)
    r.settings = Settings(target=target)
    return r


def test_early_in_a_game_the_leaf_is_about_the_point_difference():
    leaf = luna.leaf_value(_reading((0, 0)))
    one = leaf([1, 0]) - leaf([0, 0])
    assert 0.8 < one < 1.2
    assert abs((leaf([4, 1]) - leaf([0, 0])) - 3 * one) < 0.5
    assert leaf([2, 2]) == pytest.approx(leaf([0, 0]), abs=0.1)


def test_near_the_target_the_point_that_wins_counts_most():
    leaf = luna.leaf_value(_reading((19, 19)))
    assert leaf([2, 1]) > leaf([1, 0]) > leaf([0, 0])  # reaching 21 ahead wins the game
    assert leaf([3, 0]) - leaf([2, 0]) < 0.2  # a point past winning is worth next to nothing


@pytest.mark.parametrize("preset,overrides", TABLES)
def test_a_decision_leaves_no_reference_cycles_for_the_collector(preset, overrides):
    """All a search drops is freed by reference counting: a cycle a call (the capture sets' walk
    was once a recursive closure) left thousands of objects a decision to the collector, whose
    passes then took some of her CPU budget (docs/bots.md)."""
    import gc

    searched = 0
    for seed in range(6):
        s = random_position(preset, overrides, 2, seed, 4 + 3 * seed)
        if s.status != "playing":
            continue
        stats: dict = {}
        gc.collect()
        gc.disable()
        try:
            luna.choose(view(s, s.turn), random.Random(seed), budget_ms=10, stats=stats)
            assert gc.collect() == 0
        finally:
            gc.enable()
        searched += "iterations" in stats
    assert searched  # at least one position was searched, not answered by a rule
