"""Fixtures and helpers for the event log's tests."""

from __future__ import annotations

import random

import pytest

import engine
from engine.cards import FULL_DECK
from events import autoplay
from events.service import TableService


@pytest.fixture(params=["fake", pytest.param("real", marks=pytest.mark.integration),
                        pytest.param("cluster", marks=pytest.mark.integration)])
def any_redis(request):
    """The same test on fakeredis[lua], on the real Redis and on the suite's 3-master
    Redis Cluster (skipped, with why, when redis-server is absent)."""
    if request.param == "fake":
        return request.getfixturevalue("fake_redis")
    if request.param == "cluster":
        client = request.getfixturevalue("redis_cluster").client()
        request.addfinalizer(client.close)
        return client
    return request.getfixturevalue("real_redis")


@pytest.fixture
def service(fake_redis):
    return TableService(fake_redis, rng=random.Random(7), clock=lambda: 1_700_000_000.0)


def engine_game(seed: int, *, preset: str = "del15", players: int = 2, games: int = 1,
                max_events: int | None = None):
    """A random game in memory (no Redis): the list of (event, state after it).

    Chance is drawn as TableService draws it, from a seeded generator.
    """
    rng = random.Random(seed)
    state = engine.State()
    out = []

    def run(command):
        nonlocal state
        command = _with_chance(command, rng)
        for event in engine.decide(state, command):
            state = engine.fold(state, [event])
            out.append((event, state))

    run(autoplay.open_command(preset=preset))
    for i in range(1, players):
        run({"type": "sit", "player": f"p{i}", "name": f"P{i}"})
    while max_events is None or len(out) < max_events:
        if state.status == "finished" and state.game >= games:
            break
        nxt = autoplay.next_command(state, rng)
        if nxt is None:
            break
        run(nxt[0])
    return out


def _with_chance(command: dict, rng: random.Random) -> dict:
    if command.get("type") in ("start", "next_round", "start_rematch"):
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        command = {**command, "deck": deck, "pick": rng.randrange(engine.PICK_RANGE)}
    return command


@pytest.fixture
def game_in_memory():
    """``engine_game(seed, preset=..., players=..., games=..., max_events=...)``."""
    return engine_game
