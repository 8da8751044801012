"""Held sockets go to the collector's permanent generation, and come back after enough have closed."""

from __future__ import annotations

import gc
import weakref
from types import SimpleNamespace

import pytest

from api.server import collector


class CountingGc:
    """``gc`` as the collector module sees it, counting freezes and thaws (the real counts move with
    whatever else the process frees meanwhile)."""

    def __init__(self):
        self.freezes = self.thaws = 0

    def freeze(self):
        self.freezes += 1

    def unfreeze(self):
        self.thaws += 1


@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(collector, "_state", {"frozen_at": -1e9, "closed": 0})


def test_a_socket_set_up_freezes_at_most_once_a_second(fresh, monkeypatch):
    counting = CountingGc()
    monkeypatch.setattr(collector, "gc", counting)
    clock = [1000.0]
    monkeypatch.setattr(collector, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    collector.socket_ready()
    assert counting.freezes == 1
    collector.socket_ready()  # within FREEZE_EVERY: no second freeze
    clock[0] += collector.FREEZE_EVERY * 0.9
    collector.socket_ready()
    assert counting.freezes == 1
    clock[0] += collector.FREEZE_EVERY * 0.2
    collector.socket_ready()
    assert counting.freezes == 2


def test_after_enough_sockets_closed_everything_is_thawed_for_the_collector(fresh, monkeypatch):
    counting = CountingGc()
    monkeypatch.setattr(collector, "gc", counting)
    for _ in range(collector.THAW_AFTER - 1):
        collector.socket_closed()
    assert counting.thaws == 0
    collector.socket_closed()
    assert counting.thaws == 1 and collector._state["closed"] == 0
    for _ in range(collector.THAW_AFTER):
        collector.socket_closed()
    assert counting.thaws == 2


def test_a_cycle_left_by_a_closed_socket_is_collected_once_thawed(fresh):
    class Held:
        pass

    gc.unfreeze()
    try:
        a, b = Held(), Held()
        a.other, b.other = b, a  # a reference cycle, as a socket's objects may hold
        collector.socket_ready()  # the real gc.freeze()
        probe = weakref.ref(a)
        del a, b
        gc.collect()
        assert probe() is not None  # frozen: a full pass does not see it
        for _ in range(collector.THAW_AFTER):
            collector.socket_closed()
        gc.collect()
        assert probe() is None
    finally:
        gc.unfreeze()
