"""Under gevent, a table socket's handler reads its own client frames: no reader greenlet.

simple-websocket gives every connection a reader thread (under gevent a greenlet) that
waits for the socket, reads, parses, puts each message in the input buffer and sets the
connection's event, which wakes the handler. So every client frame cost two greenlet
switches more than the handler's own wake, and a fresh gevent watcher and ``Timeout``
for every wait (its ping interval bounds each one). ``HandlerReads`` takes the reader
thread's place (simple-websocket's ``thread_class``) and starts no greenlet. It arms
two of gevent's watchers. One watches the socket for reading. The other is a timer, one
tick per ping interval. Each only notes what happened and sets the connection's event.
The handler, once woken, calls ``pump``, which does the reader's work in the handler's
own greenlet: one read, simple-websocket's own ``_handle_events`` (pongs, the close
handshake, the 4 KB bound), and the ping or the ping timeout.

What a client sees is the reader thread's behaviour: the same frames in the same order,
a ping every ``ping_interval`` with the same rule (no pong since the last one: closed,
1008), the same 1009 close for an oversize message, and the same lingering close. The
socket is read only while the handler is not busy with what it read before. So a client
that sends faster than it is answered waits in its own socket buffer, not in this
process: the socket's watcher stops from the moment it fires until the handler has read.

Under the gthread worker (no gevent) simple-websocket keeps its reader thread, and
``pump`` is never called.
"""

from __future__ import annotations

import contextlib

from simple_websocket import ConnectionClosed
from wsproto.events import Ping
from wsproto.utilities import LocalProtocolError

from api.sockets.moves import POLICY_VIOLATION
from events import patches


class HandlerReads:
    """simple-websocket's reader "thread" for gevent: ``start`` arms the watchers; ``pump`` reads."""

    __slots__ = ("_ws", "name", "_io", "_ticks", "_readable", "_ping_due", "_done", "_raw")

    def __init__(self, target):
        self._ws = target.__self__  # simple-websocket passes its own ``_thread`` method
        self.name = "simple_websocket.HandlerReads"
        self._io = self._ticks = self._raw = None
        self._readable = self._ping_due = False
        self._done = False

    @property
    def raw(self):
        """The connection's non-blocking socket, under gevent's (a write to it never waits)."""
        return self._raw

    def start(self) -> None:
        from gevent import get_hub

        ws = self._ws
        loop = get_hub().loop
        self._raw = getattr(ws.sock, "_sock", ws.sock)  # the non-blocking socket under gevent's
        self._io = loop.io(ws.sock.fileno(), 1)
        self._io.start(self._on_readable)
        if ws.ping_interval:
            self._ticks = loop.timer(ws.ping_interval, ws.ping_interval)
            self._ticks.start(self._on_tick)

    # the watchers' callbacks run in gevent's loop: they must not block, so they only note and wake
    def _on_readable(self) -> None:
        self._readable = True
        self._io.stop()  # until the handler has read: a busy handler leaves the bytes in the kernel
        self._ws.event.set()

    def _on_tick(self) -> None:
        self._ping_due = True
        self._ws.event.set()

    @property
    def pending(self) -> bool:
        """Whether a watcher fired since the last ``pump``: the handler must not spend that wake."""
        return self._readable or self._ping_due

    def pump(self) -> None:
        """What came on the socket since the last call: frames to the input buffer, control frames
        answered; a ping sent when one is due. Ends the connection (``connected`` False) as the
        reader thread would."""
        ws = self._ws
        if self._done or not ws.connected:
            return
        if self._ping_due:
            self._ping_due = False
            self._ping(ws)
            if not ws.connected:
                return
        if self._readable:
            self._readable = False
            self._read(ws)
            if ws.connected and not self._done:
                self._io.start(self._on_readable)

    def _ping(self, ws) -> None:
        try:
            if not ws.pong_received:
                ws.close(reason=POLICY_VIOLATION, message="Ping/Pong timeout")
                return
            ws.pong_received = False
            ws.sock.send(ws.ws.send(Ping()))
        except (OSError, ConnectionClosed, LocalProtocolError):
            ws.connected = False

    def _read(self, ws) -> None:
        try:
            try:
                data = self._raw.recv(ws.receive_bytes)
            except BlockingIOError:  # woken for nothing: the next bytes wake it again
                return
            if not data:
                raise OSError("the client closed its side")
            ws.ws.receive_data(data)
            ws.connected = ws._handle_events()
        except (OSError, LocalProtocolError):
            ws.connected = False

    def is_alive(self) -> bool:
        return not self._done

    def join(self, timeout: float | None = None) -> None:
        """The reader thread's end: the watchers stopped and the socket closed (lingering, so the
        client gets the close frame); once. ``timeout`` is the socket's own (its lingering)."""
        if self._done:
            return
        self._done = True
        for watcher in (self._io, self._ticks):
            if watcher is not None:
                watcher.stop()
                watcher.close()
        ws = self._ws
        if ws.connected:  # the handler ends with the socket open (a failure): say goodbye first
            try:
                ws.close()
            except (OSError, ConnectionClosed, LocalProtocolError):
                ws.connected = False
        with contextlib.suppress(OSError):
            ws.sock.close()


def thread_class():
    """The reader class for simple-websocket in this process: HandlerReads where gevent has patched
    the standard library's sockets (gunicorn's gevent worker), else None (its reader thread); None too
    with the stock libraries (events/patches.py ``WEBSOCKET_READS``)."""
    if not patches.WEBSOCKET_READS.on:
        return None
    try:
        from gevent import monkey
    except ImportError:
        return None
    return HandlerReads if monkey.is_module_patched("socket") else None
