"""api/sockets/readable.py: the one-socket selector simple-websocket's reader waits in under gevent."""

from __future__ import annotations

import selectors
import socket
import time

import pytest

from api.sockets import readable, route
from events.config import Config


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_select_waits_out_its_timeout_when_nothing_comes_then_answers_at_once_when_something_does(pair):
    ours, theirs = pair
    sel = readable.OneSocket()
    key = sel.register(ours, selectors.EVENT_READ, True)
    assert key.fd == ours.fileno() and key.data is True
    started = time.monotonic()
    assert sel.select(0.2) == []  # the reader sends its ping
    assert time.monotonic() - started >= 0.15
    assert sel.select(0) == []  # due already: no wait
    theirs.sendall(b"x")
    started = time.monotonic()
    assert sel.select(5.0) == [(key, selectors.EVENT_READ)]
    assert time.monotonic() - started < 1.0
    assert sel.select(-1.0) == [(key, selectors.EVENT_READ)]  # a late ping's negative wait: as 0
    assert ours.recv(10) == b"x"
    sel.close()
    with pytest.raises(ValueError):
        sel.select(0)


def test_it_holds_one_socket_for_reading(pair):
    sel = readable.OneSocket()
    with pytest.raises(ValueError):
        sel.register(pair[0], selectors.EVENT_WRITE)
    sel.register(pair[0], selectors.EVENT_READ)
    with pytest.raises(ValueError):
        sel.register(pair[1], selectors.EVENT_READ)


def test_the_sockets_use_it_where_gevent_patched_the_standard_librarys_sockets(monkeypatch):
    from gevent import monkey

    monkeypatch.setattr(monkey, "is_module_patched", lambda name: name == "socket")
    assert route.server_options(Config())["selector_class"] is readable.OneSocket
    monkeypatch.setattr(monkey, "is_module_patched", lambda name: False)  # gthread: simple-websocket's own
    assert "selector_class" not in route.server_options(Config())
