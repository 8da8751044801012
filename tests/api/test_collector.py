"""Held sockets go to the collector's permanent generation, and come back after enough have closed."""

from __future__ import annotations

import gc
import weakref

import pytest

from api import collector


@pytest.fixture(autouse=True)
def thawed(monkeypatch):
    gc.unfreeze()
    monkeypatch.setattr(collector, "_state", {"frozen_at": -1e9, "closed": 0})
    yield
    gc.unfreeze()


def test_a_socket_set_up_freezes_what_is_alive_at_most_once_a_second():
    collector.socket_ready()
    frozen = gc.get_freeze_count()
    assert frozen > 0
    kept = [[i] for i in range(1000)]  # new tracked objects
    collector.socket_ready()  # within FREEZE_EVERY: nothing more is frozen
    assert gc.get_freeze_count() == frozen
    collector._state["frozen_at"] -= collector.FREEZE_EVERY
    collector.socket_ready()
    assert gc.get_freeze_count() >= frozen + len(kept)


def test_after_enough_sockets_closed_everything_is_thawed_for_the_collector():
    collector.socket_ready()
    assert gc.get_freeze_count() > 0
    for _ in range(collector.THAW_AFTER - 1):
        collector.socket_closed()
    assert gc.get_freeze_count() > 0
    collector.socket_closed()
    assert gc.get_freeze_count() == 0
    assert collector._state["closed"] == 0


def test_a_cycle_left_by_a_closed_socket_is_collected_once_thawed():
    class Held:
        pass

    a, b = Held(), Held()
    a.other, b.other = b, a  # a reference cycle, as a socket's objects may hold
    collector.socket_ready()
    probe = weakref.ref(a)
    del a, b
    gc.collect()
    assert probe() is not None  # frozen: the full pass does not see it
    for _ in range(collector.THAW_AFTER):
        collector.socket_closed()
    gc.collect()
    assert probe() is None
