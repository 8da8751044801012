"""How a socket's reader waits for its client under gevent: no timer of its own per read.

simple-websocket's reader, given a ping interval, asks a selector before every read
whether its socket is readable before the next ping is due: under gevent that is an
io watcher and a ``Timeout`` (a timer watcher) made, started, stopped and closed for
every client frame, some 5 to 7% of a worker's CPU under ``bench/games.py --transport
socket`` (py-spy). Here the reader is given no ping interval (so no selector): its
socket (``PingedReads``) waits on one io watcher kept for the socket's life, with no
timeout, and one ``Pinger`` per process keeps every socket's next ping in order of due
time and interrupts a waiting reader when its ping is due (gevent's ``cancel_wait``:
the wait raises ``PingDue``). The reader then does what simple-websocket's does at a
ping: a peer that answered no ping since the last one is closed (1008, "Ping/Pong
timeout"), any other is sent a ping. Every write stays in the reader's and the
handler's greenlets, as before.

Under the gthread worker (no gevent) simple-websocket keeps its own selector and pings.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque

from wsproto.events import Ping

POLICY_VIOLATION = 1008


class PingDue(Exception):
    """Thrown into a reader's wait: its socket's ping is due."""


def gevent_patched() -> bool:
    """Whether gevent has patched the standard library's sockets here (gunicorn's gevent worker)."""
    try:
        from gevent import monkey
    except ImportError:
        return False
    return monkey.is_module_patched("socket")


class Pinger:
    """Every socket's next ping, in order of due time, for one process: one greenlet sleeps until
    the first is due. The interval is the same for every socket, so a socket put back at the end
    is due no sooner than the ones before it."""

    def __init__(self, interval: float, clock=time.monotonic):
        self.interval = interval
        self.clock = clock
        self._due: deque[tuple[float, PingedReads]] = deque()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, reads: PingedReads) -> None:
        with self._lock:
            self._due.append((self.clock() + self.interval, reads))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="escoba-pinger", daemon=True)
                self._thread.start()

    def due(self) -> float | None:
        """Seconds until the next ping is due (None: no socket)."""
        with self._lock:
            return self._due[0][0] - self.clock() if self._due else None

    def ping_due(self) -> int:
        """Tells every socket whose ping is due; a closed one leaves the line. How many were told."""
        told, now = 0, self.clock()
        while True:
            with self._lock:
                if not self._due or self._due[0][0] > now:
                    return told
                due, reads = self._due.popleft()
                if not reads.closed:
                    self._due.append((max(now, due) + self.interval, reads))
            if not reads.closed:
                reads.ping_due()
                told += 1

    def _run(self) -> None:
        while True:
            self.ping_due()
            wait = self.due()
            time.sleep(self.interval if wait is None else min(self.interval, max(0.0, wait)))


class PingedReads:
    """A served gevent socket, for simple-websocket's reader: ``recv`` waits with no timeout on the
    socket's own read watcher (so a close of the socket in another greenlet ends the wait, as it
    ends gevent's own reads), and does the ping the ``Pinger`` says is due (``ws``: the
    simple-websocket connection whose ``pong_received`` it reads). Anything else is the socket's.

    It is put in the request's environ before simple-websocket's connection is made: starting
    its reader runs it at once, into its first read."""

    def __init__(self, sock):
        self._sock = sock
        self.ws = None
        self._io = sock._read_event  # gevent's: cancelled with an OSError when the socket closes
        self._waiting = False
        self._ping = False
        self.closed = False

    def attach(self, ws, pinger: Pinger | None) -> None:
        """Pinged from now on (``pinger`` None: no ping interval, no pings), as ``ws``'s socket."""
        self.ws = ws
        if pinger is not None:
            pinger.add(self)

    def ping_due(self) -> None:
        """(The pinger's greenlet) the next read pings first; a waiting reader is woken for it."""
        from gevent.socket import cancel_wait

        self._ping = True
        if self._waiting:
            cancel_wait(self._io, PingDue)

    def recv(self, n: int) -> bytes:
        """Up to ``n`` bytes from the client; b"" when the connection ends (here too after a ping
        the peer never answered, once its close frame is sent)."""
        from gevent.socket import wait

        while True:
            if self._ping and not self._pinged():
                self.closed = True
                return b""
            self._waiting = True
            try:
                wait(self._io)
            except PingDue:
                continue
            except OSError:
                self.closed = True
                raise
            finally:
                self._waiting = False
            data = self._sock.recv(n)  # readable: gevent's recv takes it at once
            if not data:
                self.closed = True
            return data

    def _pinged(self) -> bool:
        """simple-websocket's ping: False (after closing it) when the peer answered none since the last."""
        self._ping = False
        ws = self.ws
        if not ws.pong_received:
            with contextlib.suppress(Exception):  # closed already, or the peer gone: the reader ends anyway
                ws.close(reason=POLICY_VIOLATION, message="Ping/Pong timeout")
            ws.event.set()
            return False
        ws.pong_received = False
        self._sock.send(ws.ws.send(Ping()))
        return True

    def __getattr__(self, name):
        return getattr(self._sock, name)

    def send(self, data) -> int:
        return self._sock.send(data)

    def close(self) -> None:
        self.closed = True
        self._sock.close()
