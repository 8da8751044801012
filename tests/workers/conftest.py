"""Fixtures for the workers: a controllable clock, a TableService wired to the scheduler,
and helpers to run RQ's jobs in burst mode at the clock's time.

The tables' store and the queue Redis are two separate fakeredis servers, so that nothing
silently relies on their being the same."""

from __future__ import annotations

import time

import fakeredis
import pytest

from events.config import Config
from events.service import TableService
from workers import context, queues, runner, scheduling


class Clock:
    """Starts at the real time (RQ's own retries use the real time) and moves only when told."""

    def __init__(self):
        self.now = float(int(time.time()))

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


class Env:
    def __init__(self, redis, clock: Clock, config: Config, queue=None):
        self.redis = redis  # the tables' store
        self.queue = queue if queue is not None else redis  # RQ's
        self.clock = clock
        self.config = config
        # the hook splits the due index by the queue shards it is told of (as the API and workers do)
        self.svc = TableService(redis, clock=clock,
                                on_change=scheduling.on_change_hook(redis, config, len(queues.shards(self.queue))))

    # --- tables ----------------------------------------------------------------
    def open(self, bots=("tito",), humans: int = 1, preset: str = "del15", target: int = 10) -> str:
        tid, _ = self.svc.create({"type": "open", "name": "w", "preset": preset,
                                  "settings": {"target": target}, "player": "p0",
                                  "host_name": "Ana"})
        for i in range(1, humans):
            self.svc.execute(tid, {"type": "sit", "player": f"p{i}", "name": f"P{i}"},
                             actor=f"seat:{i}")
        for bot in bots:
            self.svc.execute(tid, {"type": "add_bot", "by": 0, "bot": bot}, actor="seat:0")
        return tid

    def start(self, tid: str):
        return self.svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0").state

    def bots_only(self, bots=("carmen", "tito")) -> str:
        """A started game of bots only, at a table its host opened to watch."""
        return start_bots_only(self.svc, bots)

    def state(self, tid: str):
        return self.svc.load(tid)

    def play_first(self, tid: str, state, seat: int = 0):
        """``seat`` plays the first legal move of its view (its first capture, unless it may leave one)."""
        from engine import view

        option = view(state, seat)["options"][0]
        capture = option["captures"][0] if option["captures"] and not option["may_leave"] else []
        return self.svc.execute(tid, {"type": "play", "by": seat, "card": option["card"],
                                      "capture": capture}, actor=f"seat:{seat}").state

    def types(self, tid: str) -> list[str]:
        return [r["type"] for r in self.svc.records(tid)]

    def drain(self) -> int:
        return runner.run_burst(self.redis, self.queue, self.clock.now)

    def pending(self, tid: str) -> list[str]:
        return scheduling.pending_jobs(self.redis, tid, self.queue)


def start_bots_only(svc: TableService, bots=("carmen", "tito"), target: int = 10) -> str:
    """The host opens a table to watch (no seat), seats ``bots`` and starts their game."""
    tid, _ = svc.create({"type": "open", "name": "bots", "preset": "del15",
                         "settings": {"target": target}, "player": "host", "host_name": "Ana",
                         "host_seated": False})
    for bot in bots:
        svc.execute(tid, {"type": "add_bot", "player": "host", "bot": bot}, actor="operator")
    state = svc.execute(tid, {"type": "start", "player": "host"}, actor="operator").state
    assert state.status == "playing" and all(state.seats[p].kind == "bot" for p in state.players)
    return tid


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def config() -> Config:
    # the notices go to a receiver on 127.0.0.1
    return Config(bot_delay=0.0, away_after=60.0, expire_after=600.0, rematch_window=300.0,
                  notify_allow_private=True)


@pytest.fixture
def fake_queue():
    """The queue Redis: a fakeredis server of its own, apart from the tables' store."""
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    yield client
    client.close()


@pytest.fixture
def env(fake_redis, fake_queue, clock, config):
    context.configure(config, clock, tables=fake_redis)
    yield Env(fake_redis, clock, config, fake_queue)
    context.configure(None, None)
