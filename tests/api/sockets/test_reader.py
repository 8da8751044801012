"""api/sockets/reader.py: under gevent the handler reads its own client frames, with no reader greenlet.

A real simple-websocket server connection over a gevent socket pair, its handshake done by
hand: the test plays both the client (raw frames) and the handler (``event``, ``pump``).
"""

from __future__ import annotations

import os
import struct

import gevent
import gevent.event
import gevent.socket
import pytest
from simple_websocket import Server

from api.sockets import reader, route
from events.config import Config

_KEY = "dGhlIHNhbXBsZSBub25jZQ=="


def _client_frame(opcode: int, payload: bytes) -> bytes:
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    if len(payload) < 126:
        head = struct.pack("!BB", 0x80 | opcode, 0x80 | len(payload))
    else:
        head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, len(payload))
    return head + mask + masked


def _server_frames(data: bytes) -> list[tuple[int, bytes]]:
    """(opcode, payload) of each unmasked server frame in ``data``."""
    return _frames_to_close(data, stop_at_close=False)[0]


def _frames_to_close(data: bytes, stop_at_close: bool = True) -> tuple[list[tuple[int, bytes]], bytes]:
    """(opcode, payload) of each unmasked server frame in ``data`` up to and with the first close, and
    the bytes that follow it (a server writes nothing after its close frame)."""
    out, pos = [], 0
    while pos + 2 <= len(data):
        first, second = data[pos], data[pos + 1]
        length, pos = second & 0x7F, pos + 2
        if length == 126:
            length, pos = struct.unpack("!H", data[pos:pos + 2])[0], pos + 2
        elif length == 127:
            length, pos = struct.unpack("!Q", data[pos:pos + 8])[0], pos + 8
        out.append((first & 0x0F, data[pos:pos + length]))
        pos += length
        if stop_at_close and out[-1][0] == 8:
            break
    return out, data[pos:]


class _Connection:
    """A server connection as gunicorn's gevent worker gives it to simple-websocket, and its client."""

    def __init__(self, ping_interval=None):
        self.client, server = gevent.socket.socketpair()
        environ = {"gunicorn.socket": server, "REQUEST_METHOD": "GET", "PATH_INFO": "/", "QUERY_STRING": "",
                   "HTTP_HOST": "test", "HTTP_CONNECTION": "Upgrade", "HTTP_UPGRADE": "websocket",
                   "HTTP_SEC_WEBSOCKET_KEY": _KEY, "HTTP_SEC_WEBSOCKET_VERSION": "13"}
        self.ws = Server(environ, ping_interval=ping_interval, max_message_size=route.MAX_CLIENT_MESSAGE,
                         receive_bytes=route.RECEIVE_BYTES, thread_class=reader.HandlerReads,
                         event_class=gevent.event.Event)
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.client.recv(4096)
        assert head.startswith(b"HTTP/1.1 101")
        self.reads: reader.HandlerReads = self.ws.thread

    def wake(self, timeout=2.0) -> bool:
        """The handler's wait and its pump: whether it was woken."""
        woken = self.ws.event.wait(timeout)
        self.ws.event.clear()
        self.reads.pump()
        self.ws.event.clear()  # what it read, it takes now (the reader's own wake for them is spent)
        return woken

    def received(self, timeout=2.0) -> list[tuple[int, bytes]]:
        with gevent.Timeout(timeout):
            return _server_frames(self.client.recv(65536))

    def close(self):
        self.reads.join(0.5)
        self.client.close()


@pytest.fixture
def connection():
    made = []

    def make(**kwargs):
        made.append(_Connection(**kwargs))
        return made[-1]

    yield make
    for c in made:
        c.close()


def test_frames_wait_in_the_kernel_until_the_handler_reads_them_then_come_in_order(connection):
    c = connection()
    assert c.reads.is_alive() and not c.reads.pending
    c.client.sendall(_client_frame(1, b'{"n":1}') + _client_frame(1, b'{"n":2}'))
    gevent.sleep(0.05)
    assert c.ws.event.is_set() and c.reads.pending  # the watcher woke the handler...
    assert list(c.ws.input_buffer) == []  # ...and read nothing itself
    assert c.wake()
    assert list(c.ws.input_buffer) == ['{"n":1}', '{"n":2}']
    assert not c.reads.pending
    c.client.sendall(_client_frame(1, b'{"n":3}'))
    assert c.wake()
    assert list(c.ws.input_buffer)[-1] == '{"n":3}' and c.ws.connected


def test_a_busy_handler_is_not_woken_over_and_over_by_bytes_it_has_not_read(connection):
    c = connection()
    c.client.sendall(_client_frame(1, b"one"))
    assert c.ws.event.wait(2.0)
    c.ws.event.clear()
    c.client.sendall(_client_frame(1, b"two"))  # more while the handler has not read: no second wake
    gevent.sleep(0.05)
    assert not c.ws.event.is_set()
    c.reads.pump()
    assert list(c.ws.input_buffer) == ["one", "two"]


def test_a_client_ping_is_answered_and_its_close_ends_the_connection(connection):
    c = connection()
    c.client.sendall(_client_frame(9, b"hi"))
    assert c.wake()
    assert c.received() == [(10, b"hi")]  # the pong
    c.client.sendall(_client_frame(8, struct.pack("!H", 1000)))
    assert c.wake()
    assert not c.ws.connected
    assert c.received()[0][0] == 8  # the close's answer
    c.reads.join(0.5)
    assert not c.reads.is_alive()
    with gevent.Timeout(2.0):
        assert c.client.recv(10) == b""  # and the server's side closed


def test_a_message_over_the_bound_is_closed_with_1009(connection):
    c = connection()
    c.client.sendall(_client_frame(1, b"x" * (route.MAX_CLIENT_MESSAGE + 1)))
    while c.ws.connected:
        assert c.wake()
    assert c.received() == [(8, struct.pack("!H", 1009) + b"Message is too big")]
    assert list(c.ws.input_buffer) == []


def test_a_ping_goes_out_each_interval_and_a_client_that_never_answers_is_closed_1008(connection):
    c = connection(ping_interval=0.1)
    assert c.wake()
    assert c.received() == [(9, b"")]
    assert c.wake()  # the next tick, no pong came
    assert not c.ws.connected
    assert c.received() == [(8, struct.pack("!H", 1008) + b"Ping/Pong timeout")]


def test_a_client_that_answers_the_pings_stays(connection):
    c = connection(ping_interval=0.1)
    for _ in range(4):
        while not _readable(c.client):  # woken by a tick (a ping goes out) or by the last pong (read)
            assert c.wake()
        assert c.received() == [(9, b"")]
        c.client.sendall(_client_frame(10, b""))
    assert c.ws.connected


def _readable(sock) -> bool:
    try:  # the socket under gevent's: gevent's own would wait on EAGAIN
        return bool(sock._sock.recv(1, gevent.socket.MSG_PEEK | gevent.socket.MSG_DONTWAIT))
    except BlockingIOError:
        return False


def test_the_handler_ending_with_the_socket_open_closes_it_and_stops_the_watchers(connection):
    c = connection(ping_interval=0.05)
    c.reads.join(0.5)  # as route.table_socket's finally does
    assert not c.ws.connected and not c.reads.is_alive()
    assert c.received()[0][0] == 8
    gevent.sleep(0.2)  # no tick after the end
    assert not c.ws.event.is_set()
    c.reads.pump()  # and a late pump does nothing
    c.reads.join(0.5)


def test_the_sockets_use_it_where_gevent_patched_the_standard_librarys_sockets(monkeypatch, patched):
    from gevent import monkey

    monkeypatch.setattr(monkey, "is_module_patched", lambda name: name == "socket")
    assert route.server_options(Config())["thread_class"] is reader.HandlerReads
    monkeypatch.setattr(monkey, "is_module_patched", lambda name: False)  # gthread: simple-websocket's own
    assert "thread_class" not in route.server_options(Config())


def test_with_the_stock_libraries_simple_websocket_keeps_its_reader_thread(monkeypatch, stock):
    from gevent import monkey

    monkeypatch.setattr(monkey, "is_module_patched", lambda name: name == "socket")
    assert "thread_class" not in route.server_options(Config())
