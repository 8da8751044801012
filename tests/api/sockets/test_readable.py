"""api/sockets/readable.py: a socket's reads under gevent, and the process's pinger.

Under ``escoba serve`` the same is exercised whole by tests/api/sockets/test_sockets_served.py
(a peer that answers no ping is dropped, one that answers stays).
"""

from __future__ import annotations

import threading

import gevent
import pytest
from gevent import socket as gsocket

from api.sockets import readable, route
from events.config import Config


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Told:
    """What the pinger sees of a socket."""

    def __init__(self, name, told):
        self.name = name
        self.closed = False
        self._told = told

    def ping_due(self):
        self._told.append(self.name)


def test_the_pinger_tells_each_socket_once_an_interval_in_the_order_they_came_and_forgets_closed_ones():
    clock, told = Clock(), []
    pinger = readable.Pinger(10.0, clock)
    pinger._thread = threading.Thread()  # not started: the test drives it
    a, b, c = Told("a", told), Told("b", told), Told("c", told)
    pinger.add(a)
    clock.now += 4
    pinger.add(b)
    pinger.add(c)
    assert pinger.due() == pytest.approx(6.0)
    assert pinger.ping_due() == 0 and told == []
    clock.now += 6  # a is due
    assert pinger.ping_due() == 1 and told == ["a"]
    clock.now += 4  # b and c
    assert pinger.ping_due() == 2 and told == ["a", "b", "c"]
    assert pinger.due() == pytest.approx(6.0)  # a again, an interval after its last
    b.closed = True
    clock.now += 100  # late: each is told once, not once per interval missed
    assert pinger.ping_due() == 2 and told[3:] == ["a", "c"]
    assert [r.name for _, r in pinger._due] == ["a", "c"]  # b left the line


class FakeConnection:
    """The part of simple-websocket's connection the reads use."""

    def __init__(self):
        self.pong_received = True
        self.event = threading.Event()
        self.closed_with = None
        self.ws = self  # its wsproto connection: frames as marks

    def send(self, event) -> bytes:
        return b"<%s>" % type(event).__name__.encode()

    def close(self, reason=None, message=None):
        self.closed_with = (reason, message)
        self.sock.send(b"<close>")


@pytest.fixture
def pair():
    ours, theirs = gsocket.socketpair()
    yield ours, theirs
    ours.close()
    theirs.close()


def test_a_read_waits_with_no_timer_and_pings_when_told_then_closes_a_peer_that_answered_none(pair):
    ours, theirs = pair
    ws = FakeConnection()
    reads = readable.PingedReads(ours)
    reads.attach(ws, None)  # the test tells it when
    ws.sock = reads
    reader = gevent.spawn(reads.recv, 64)
    gevent.sleep(0.05)
    assert not reader.ready()  # waiting, with no timeout of its own
    reads.ping_due()
    gevent.sleep(0.05)
    assert theirs.recv(64) == b"<Ping>" and not reader.ready()  # pinged, and still waiting
    assert ws.pong_received is False
    theirs.sendall(b"frame")
    assert reader.get(timeout=2) == b"frame"

    ws.pong_received = True  # the peer answered that ping
    reader = gevent.spawn(reads.recv, 64)
    gevent.sleep(0.02)
    reads.ping_due()
    gevent.sleep(0.05)
    assert theirs.recv(64) == b"<Ping>" and not reader.ready()
    reads.ping_due()  # no pong since: closed, and the reader ends
    assert reader.get(timeout=2) == b""
    assert ws.closed_with == (1008, "Ping/Pong timeout") and ws.event.is_set()
    assert theirs.recv(64) == b"<close>"
    assert reads.closed


def test_a_ping_told_while_the_reader_was_busy_goes_out_before_its_next_wait(pair):
    ours, theirs = pair
    ws = FakeConnection()
    reads = readable.PingedReads(ours)
    reads.attach(ws, None)
    reads.ping_due()  # nobody waiting: only remembered
    theirs.sendall(b"x")
    assert gevent.spawn(reads.recv, 64).get(timeout=2) == b"x"
    assert theirs.recv(64) == b"<Ping>"


def test_closing_the_socket_in_another_greenlet_ends_the_wait(pair):
    ours, _theirs = pair
    reads = readable.PingedReads(ours)
    reader = gevent.spawn(reads.recv, 64)
    gevent.sleep(0.02)
    ours.close()
    with pytest.raises(OSError):
        reader.get(timeout=2)
    assert reads.closed


def test_under_gevent_simple_websockets_reader_is_given_no_ping_interval(monkeypatch):
    monkeypatch.setattr(readable, "gevent_patched", lambda: True)
    assert route.server_options(Config())["ping_interval"] is None  # the pinger pings
    monkeypatch.setattr(readable, "gevent_patched", lambda: False)  # gthread: simple-websocket's own
    assert route.server_options(Config())["ping_interval"] == Config().socket_ping_interval
