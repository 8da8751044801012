"""Fixtures for the workers: a controllable clock, a TableService wired to the scheduler,
and helpers to run RQ's jobs in burst mode at the clock's time."""

from __future__ import annotations

import time

import pytest

from events.config import Config
from events.records import to_record
from events.service import TableService, iso_utc
from workers import jobs, runner, scheduling


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
    def __init__(self, redis, clock: Clock, config: Config):
        self.redis = redis
        self.clock = clock
        self.config = config
        self.svc = TableService(redis, clock=clock,
                                on_change=scheduling.on_change_hook(redis, config))

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
        """A started game with only bots in it: the host's seat is handed to a bot by an
        operator's record (the API cannot make one; the timers must still drive it)."""
        tid = self.open(bots=bots)
        state = self.start(tid)
        append_operator_bot(self.svc, tid, state, self.clock())
        return tid

    def state(self, tid: str):
        return self.svc.load(tid)

    def types(self, tid: str) -> list[str]:
        return [r["type"] for r in self.svc.records(tid)]

    def drain(self) -> int:
        return runner.run_burst(self.redis, self.clock.now)

    def pending(self, tid: str) -> list[str]:
        return scheduling.pending_jobs(self.redis, tid)


def append_operator_bot(svc: TableService, tid: str, state, now: float, seat: int = 0,
                        bot: str = "carmen") -> None:
    """Seat ``seat`` becomes a bot (an operator's BotAdded record), then the scheduler hook."""
    from engine import fold
    from engine.events import BotAdded

    event = BotAdded(seat, bot, bot.title())
    record = to_record(event, version=state.version + 1, at=iso_utc(now), actor="operator")
    svc.store.append(tid, state.version, [record])
    new_state = fold(state, [event])
    svc.on_change(tid, new_state, [record])


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def config() -> Config:
    return Config(bot_delay=0.0, away_after=60.0, expire_after=600.0, rematch_window=300.0)


@pytest.fixture
def env(fake_redis, clock, config):
    jobs.configure(config, clock)
    yield Env(fake_redis, clock, config)
    jobs.configure(None, None)
