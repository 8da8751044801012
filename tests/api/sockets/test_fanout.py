"""api/sockets/fanout.py ``Fanout.ahead``: the other sockets' frames of a move are built while its append is
in flight (on one Redis, between the step's send and its reply), and only the state appended ever reaches
the views' caches and so a socket."""

from __future__ import annotations

import random

import pytest

from api.sockets.fanout import Fanout, Mailbox
from api.sockets.frames import ViewFrames
from events import autoplay, direct
from events.service import TableService

from .test_notices import next_state

pytestmark = pytest.mark.integration


def test_frames_are_built_beside_the_append_and_only_the_appended_states_are_kept(backends, topology, monkeypatch):
    client = backends.tables
    views = ViewFrames()
    service = TableService(client, rng=random.Random(3))  # caches its states, as the API's does
    fanout = Fanout(client, service, frames=views)
    other = TableService(client, rng=random.Random(4))  # another process
    said: list[tuple] = []  # what happened, in order
    table = autoplay.new_table(service, players=1)

    append = service.store.append

    def appending(request, meanwhile=None):
        said.append(("step", request.expected_version + 1))
        try:
            return append(request, meanwhile)
        finally:
            said.append(("answered", request.expected_version + 1))

    monkeypatch.setattr(service.store, "append", appending)
    send = direct._send

    def sending(conn, data, meanwhile=None):
        said.append(("sent",))
        return send(conn, data, meanwhile)

    monkeypatch.setattr(direct, "_send", sending)

    def reader(seat):
        def frames_for(state, ahead=None):
            if ahead is not None:
                said.append(("built", state.version))
            return views.frames(table, state, seat, seat == 0, None, ahead)

        q = Mailbox(frames_for=frames_for)
        fanout.subscribe(table, q)
        return q

    readers = [reader(0), reader(1)]
    next_state(readers[0], 1)  # the subscription confirmed and its resync done: no read of the log comes later

    def move(name):
        return service.execute(table, {"type": "sit", "player": name, "name": name}, actor="guest",
                               ahead=lambda state: fanout.ahead(table, state),
                               posted=lambda state: fanout.published(table, state))

    def right(state):  # what a process that built nothing ahead sends each reader
        fresh = ViewFrames()
        return all(views.frames(table, state, seat, seat == 0, None) == fresh.frames(table, state, seat, seat == 0,
                                                                                     None) for seat in (0, 1))

    try:
        said.clear()
        first = move("p1")
        v = first.version
        # on one Redis the step is sent on a direct connection and the frames built before its reply is
        # read; a cluster's client sends and reads in one call, so they are built just before
        built = [("built", v), ("built", v)]
        inside = [("step", v), ("sent",), *built, ("answered", v)] if not topology.is_cluster else \
            [("step", v), *built, ("answered", v)]
        assert said == inside
        count = views.built
        assert right(first.state) and views.built == count  # sent from what was built ahead: none built again

        # another process appends the next version before this one hears of it: its cached state is stale,
        # its first attempt refused; the frames built for that attempt are dropped, the retry's kept
        fanout.listener.on_notice = lambda raw: None
        theirs = other.execute(table, {"type": "sit", "player": "x2", "name": "X2"}, actor="guest")
        said.clear()
        second = move("p3")
        tried = [e for e in said if e[0] in ("step", "built")]
        assert tried == [("step", theirs.version), ("built", theirs.version), ("built", theirs.version),
                         ("step", second.version), ("built", second.version), ("built", second.version)]
        assert right(theirs.state) and right(second.state)
        assert fanout._ahead == {}  # kept by the post, or dropped
    finally:
        for q in readers:
            fanout.unsubscribe(table, q)
        fanout.stop()
