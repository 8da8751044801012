"""api/sockets/fanout.py ``Fanout.ahead``: under gevent, the other sockets' frames of a move are built while
its append waits for Redis's reply, and only the state appended ever reaches a socket or the views' caches.

Run in a process of its own, patched as the served gevent worker is (``monkey.patch_all``), over a real
Redis: what this relies on is gevent's scheduling (a greenlet spawned before the mover's wait runs during
it), which a test process that is not patched cannot show."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

SCRIPT = r"""
import json, random, sys
from gevent import monkey; monkey.patch_all()
import gevent
from api.sockets.fanout import Fanout, Mailbox
from api.sockets.frames import ViewFrames
from events import autoplay
from events.connection import plain_client
from events.service import TableService

client = plain_client(sys.argv[1])
views = ViewFrames()
service = TableService(client, rng=random.Random(3))  # caches its states, as the API's does
fanout = Fanout(client, service, frames=views)
other = TableService(client, rng=random.Random(4))  # another process
said = []  # what happened, in order
mover = gevent.getcurrent()

table = autoplay.new_table(service, players=1)
append = service.store.append
def appending(request):
    said.append(("sent", request.expected_version))
    try:
        return append(request)
    finally:
        said.append(("answered", request.expected_version))
service.store.append = appending

def reader(seat):
    q = Mailbox()
    def frames_for(state):
        return views.frames(table, state, seat, seat == 0, None)
    def frames_ahead(state, ahead):
        said.append(("built", state.version, gevent.getcurrent() is mover))
        return views.frames(table, state, seat, seat == 0, None, ahead)
    q.frames_for, q.frames_ahead = frames_for, frames_ahead
    fanout.subscribe(table, q)
    return q

readers = {seat: reader(seat) for seat in (0, 1)}
gevent.sleep(0.2)  # the subscriptions confirmed

def move(name):
    return service.execute(table, {"type": "sit", "player": name, "name": name}, actor="guest",
                           ahead=lambda state: fanout.ahead(table, state),
                           posted=lambda state: fanout.published(table, state))

first = move("p1")
built = views.built
fresh = ViewFrames()
sent = {seat: views.frames(table, first.state, seat, seat == 0, None) for seat in readers}
out = {"first": said[:], "built_after_post": views.built - built,
       "first_frames_right": all(sent[s] == fresh.frames(table, first.state, s, s == 0, None) for s in readers)}

# another process appends the next version: this one's cached state is stale, its first attempt refused
said.clear()
heard = fanout.listener.on_notice
fanout.listener.on_notice = lambda raw: None  # not yet heard here (it would refresh the cached state)
theirs = other.execute(table, {"type": "sit", "player": "x2", "name": "X2"}, actor="guest")
second = move("p3")
fanout.listener.on_notice = heard
refused_version = theirs.version
fresh = ViewFrames()
ok = True
for s in readers:
    ok &= views.frames(table, theirs.state, s, s == 0, None) == fresh.frames(table, theirs.state, s, s == 0, None)
    ok &= views.frames(table, second.state, s, s == 0, None) == fresh.frames(table, second.state, s, s == 0, None)
out.update(second=said[:], refused_version=refused_version, second_version=second.version, after_refusal_right=ok,
           ahead_left=len(fanout._ahead))
print(json.dumps(out))
"""


def test_frames_are_built_beside_the_append_and_only_the_appended_state_is_kept(redis_server):
    done = subprocess.run([sys.executable, "-c", SCRIPT, redis_server.url], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    # the two readers' frames were built by another greenlet after the append was sent, before its answer
    first = [tuple(e) for e in out["first"]]
    assert first[0][0] == "sent" and first[-1][0] == "answered", first
    assert [e for e in first[1:-1]] == [("built", first[0][1] + 1, False)] * 2, first
    assert out["built_after_post"] == 0 and out["first_frames_right"]  # sent from what was built ahead
    # the stale attempt was refused: its frames were built and dropped; the retry's were kept
    second = [tuple(e) for e in out["second"]]
    assert [e[0] for e in second] == ["sent", "built", "built", "answered"] * 2, second
    assert second[1][1] == out["refused_version"] and second[5][1] == out["second_version"]
    assert out["after_refusal_right"] and out["ahead_left"] == 0
