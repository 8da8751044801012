"""The change hook's abilities as protocols (events/hooks.py): declared by the hooks, found by the
service once when its hook is set, each called as it says."""

from __future__ import annotations

import random

from events import autoplay
from events.hooks import NotesUnacknowledged, ReadsBack
from events.service import TableService
from events.store import Appended
from workers.scheduling import TimersHook


class Reading(ReadsBack, NotesUnacknowledged):
    def __init__(self):
        self.calls = []
        self.noted = []

    def read_back(self, table_id):
        return (f"table:{{{table_id}}}:mine",), True

    def __call__(self, table_id, state, records, appended=None, /):
        self.calls.append((state.version, len(records), appended))

    def unacknowledged(self, table_id):
        self.noted.append(table_id)


def test_the_timers_hook_declares_both_abilities():
    assert issubclass(TimersHook, ReadsBack) and issubclass(TimersHook, NotesUnacknowledged)
    assert ReadsBack in TimersHook.__mro__ and NotesUnacknowledged in TimersHook.__mro__  # by name, not by shape


def test_a_hook_that_reads_back_gets_the_append_and_a_plain_one_does_not(fake_redis):
    hook = Reading()
    svc = TableService(fake_redis, rng=random.Random(3), on_change=hook)
    table_id, out = svc.create(autoplay.open_command())
    [(version, count, appended)] = hook.calls
    assert (version, count) == (1, 1) and isinstance(appended, Appended)
    assert appended.stamped_over == 0 and len(appended.hashes) == 1  # its one key, read in the append's step
    svc._unacknowledged(table_id)
    assert hook.noted == [table_id]

    plain = []
    svc.on_change = lambda t, s, r: plain.append((t, s.version, len(r)))  # found again when set
    svc.execute(table_id, {"type": "sit", "player": "p1", "name": "Bea"}, actor="guest")
    assert plain == [(table_id, 2, 1)] and len(hook.calls) == 1
    svc._unacknowledged(table_id)  # a plain hook has no ear for it: nothing called, nothing raised
    assert hook.noted == [table_id]
