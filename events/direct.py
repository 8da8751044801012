"""A hot command sent straight on a connection of our own: the append of every move.

redis-py 8 wraps each command in work of its own: ``get_connection`` behind a
``deprecated_args`` wrapper, observability recorders, a retry closure, a failure
callback, the pool's bookkeeping. Around the one ``EVALSHA`` a move sends, that cost
about as much CPU as sending and reading it (docs/benchmarks.md). ``Direct`` keeps
a few connections of the client's own class and settings and sends a command on one
of them: the same wire bytes, the same reply parsing (the connection's parser), the
same errors.

What redis-py does that matters here is kept:

- a connection handed out is checked first (``can_read``: stray data, or a socket the
  server closed, as after a Redis restart) and reconnected, as the pool's checkout does;
- a reply error (``ResponseError``, ``NoScriptError``...) leaves the connection in use;
  any other failure drops it (disconnected, never reused) and is raised as it came,
  as redis-py does with no retries configured (the clients here have none);
- a process forked after connecting (gunicorn's workers) never uses its parent's
  connections;
- a socket timeout is redis-py's ``TimeoutError``, any other socket error (the kernel's ``ETIMEDOUT``
  too) its ``ConnectionError``.

And what redis-py's connection does that costs a move system calls of its own is not: its
``sendall`` (gevent's asks the kernel for the socket's buffer size first, a ``getsockopt`` on
every write) is one ``send``, unless the server's window is full; under gevent the reply is
waited for before it is read (it cannot be there yet: the step waits for its fsync), where
reading at once fails with ``EAGAIN`` first; and the check for a fork is done once, in the
child (``os.register_at_fork``), not with a ``getpid`` a command.

Only a plain Redis whose pool makes ``events.connection.Connection`` (``plain_client``,
TCP) takes this way; a cluster, a fake or a TLS client, and every client with the stock libraries
(``ESCOBA_STOCK=1``, events/patches.py), is sent the command the ordinary way (``Direct.for_client`` answers None).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, TypeAlias

import redis as redis_lib
from greenlet import getcurrent
from redis.utils import HIREDIS_AVAILABLE

from . import patches, stages
from .connection import Connection

# A parsed RESP reply: bytes, an int, None, an error, or a list of replies (redis-py types its own Any too)
Reply: TypeAlias = Any
# gevent's socket and greenlet (gevent ships no types)
GeventSocket: TypeAlias = Any

_hiredis_pack: Callable[[tuple[Any, ...]], bytes] | None

if HIREDIS_AVAILABLE:  # as redis-py packs with hiredis then (HiredisRespSerializer), less its Python loop
    from hiredis import pack_command as _hiredis_pack
else:
    _hiredis_pack = None

IDLE_MAX = 64  # connections kept; past that (thousands of greenlets at once) the client's own pool serves


class WrongReply(RuntimeError):
    """A reply that is not the shape of the command sent: a defect, said plainly, never read as an answer."""

    def __init__(self, command: str, key: str, reply: Reply):
        super().__init__(f"{command} {key}: the reply is not an {command} reply ({type(reply).__name__})")
        self.command, self.key = command, key


class Direct:
    def __init__(self, client: redis_lib.Redis):
        self.client = client
        pool = client.connection_pool
        self._make: Callable[[], Connection] = lambda: pool.connection_class(**pool.connection_kwargs)
        self._idle: list[Connection] = []
        self._open = 0  # connections of ours, idle or in use
        self._lock = threading.Lock()
        _ALL.add(self)

    @classmethod
    def for_client(cls, client: object) -> Direct | None:
        """The ``Direct`` of ``client`` when it is a plain TCP Redis of ours, else None: one a client,
        kept on it, so a store made for one read (the timers' tail, the compactor) reuses its connections."""
        if not patches.REDIS_DIRECT.on:  # the stock libraries: redis-py's own way (events/patches.py)
            return None
        pool = getattr(client, "connection_pool", None)
        if type(client) is not redis_lib.Redis or pool is None or pool.connection_class is not Connection:
            return None
        direct: Direct | None = getattr(client, "_escoba_direct", None)
        if direct is None:
            direct = client._escoba_direct = cls(client)  # type: ignore[attr-defined]  # kept on the client
        return direct

    def execute(self, *args: str | bytes | int | float, meanwhile: Callable[[], None] | None = None) -> Reply:
        """The reply to one command (as the connection parses it), or its error. ``meanwhile()``: run once the
        command is sent, before its reply is awaited (the server works on it meanwhile); it must not raise."""
        conn = self._take()
        if conn is None:  # as many as we keep are in use: the client's pool (which may wait)
            if meanwhile is not None:
                meanwhile()
            return self._through_pool(args)
        try:
            _send(conn, _packed(conn, args), meanwhile)
            reply = conn.read_response()
        except redis_lib.ResponseError:
            self._give(conn)  # the whole reply was read: the connection is fine
            raise
        except BaseException:
            self._drop(conn)
            raise
        self._give(conn)
        return reply

    def _through_pool(self, args: tuple[str | bytes | int | float, ...]) -> Reply:
        """The reply to one command on a connection of the client's pool, read as ours are: raw, as the
        connection parses it. Not ``client.execute_command``: that applies redis-py's response callbacks,
        and under RESP3 (redis-py 8's default) an XRANGE comes back as ``[(id, {field: value})]`` where
        ours reads ``[[id, [field, value]]]``; past ``IDLE_MAX`` busy connections a load then failed
        (issue 54: ``unhashable type: 'slice'``)."""
        pool = self.client.connection_pool
        conn = pool.get_connection()
        try:
            conn.send_command(*args)
            reply = conn.read_response()
        except redis_lib.ResponseError:
            pool.release(conn)
            raise
        except BaseException:
            try:
                conn.disconnect()  # a reply may be left unread on it: never handed out again as it is
            finally:
                pool.release(conn)
            raise
        pool.release(conn)
        return reply

    def _forked(self) -> None:
        """In a forked child: the parent's connections are not ours (never closed here: the
        parent may still use them)."""
        self._idle, self._open, self._lock = [], 0, threading.Lock()

    def _take(self) -> Connection | None:
        try:
            conn = self._idle.pop()
        except IndexError:
            with self._lock:
                if self._open >= IDLE_MAX:
                    return None
                self._open += 1
            conn = self._make()
        try:
            conn.connect()  # no-op when connected
            try:  # stray data, or a socket the server closed (which raises here): start afresh
                fresh = conn.can_read()
            except (redis_lib.ConnectionError, redis_lib.TimeoutError, OSError):
                fresh = True
            if fresh:
                conn.disconnect()
                conn.connect()
        except BaseException:
            self._drop(conn)
            raise
        return conn

    def _give(self, conn: Connection) -> None:
        self._idle.append(conn)

    def _drop(self, conn: Connection) -> None:
        try:
            conn.disconnect()
        finally:
            with self._lock:
                self._open -= 1


def _packed(conn: Connection, args: tuple[str | bytes | int | float, ...]) -> bytes:
    """The command's wire bytes, as ``conn.pack_command(*args)`` makes them. With hiredis, straight from
    its C packer: redis-py's serializer only splits a first argument holding spaces and copies each
    argument in a Python loop first (bytearrays and memoryviews to bytes), 55 calls for a move's append.
    Our commands are a name without spaces and str, bytes, int and float arguments."""
    if _hiredis_pack is None:
        return b"".join(conn.pack_command(*args))
    return _hiredis_pack(args)


def _send(conn: Connection, data: bytes, meanwhile: Callable[[], None] | None = None) -> None:
    """``data`` on ``conn``'s socket, whole, then ``meanwhile()`` and (under gevent) the wait for its reply; a
    socket's failure as redis-py's connection raises it."""
    sock: GeventSocket = conn._sock
    try:
        sent = sock.send(data)
        if sent < len(data):  # the server's window is full: the rest as redis-py would
            sock.sendall(memoryview(data)[sent:])
    except TimeoutError as e:
        raise _timeout(e, "writing to") from e
    except OSError as e:
        raise redis_lib.ConnectionError(f"Error while writing to socket: {e}") from e
    if stages.ON:  # the append's parts (bench/latency.py): its step on the wire
        stages.mark("sent")
    if meanwhile is not None:
        meanwhile()
        if stages.ON:
            stages.mark("built ahead")
    if hasattr(sock, "_read_event"):  # gevent's socket: its own read watcher, reused
        try:
            _wait_reply(conn, sock)
        except TimeoutError as e:
            raise _timeout(e, "reading from") from e
        if stages.ON:  # Redis's part, and the wait for this greenlet's turn once its reply came
            stages.mark("reply")


def _wait_reply(conn: Connection, sock: GeventSocket) -> None:
    """Wait, as gevent's socket does (``sock._wait``), until the reply can be read or the socket's
    timeout has passed (``TimeoutError``), the timer kept on the connection: gevent's own wait makes a
    ``Timeout`` (an exception instance and a new timer of the loop's) for each, many times what
    starting and stopping a kept timer costs (docs/benchmarks.md)."""
    if sock.timeout is None:
        sock._wait(sock._read_event)
        return
    hub = sock.hub
    kept = getattr(conn, "_reply_timer", None)
    if kept is None or kept[0] is not hub or kept[1] != sock.timeout:  # a connection's first, or a new loop
        timeout = sock.timeout  # repeating: ``again`` starts it with the whole timeout each time (libev's
        # ev_timer_stop leaves a plain timer only what was left of it, so a reused ``start`` would shrink)
        kept = conn._reply_timer = (  # type: ignore[attr-defined]  # kept on the connection
            hub, timeout, hub.loop.timer(timeout, timeout, ref=True, priority=-1))
    timer = kept[2]
    timer.again(_expired, getcurrent(), update=True)  # the loop's clock read now, as Timeout does
    try:
        hub.wait(sock._read_event)
    finally:
        timer.stop()


def _expired(waiting: GeventSocket) -> None:
    waiting.throw(TimeoutError("timed out"))  # what gevent's socket raises: socket.timeout


def _timeout(e: TimeoutError, doing: str) -> Exception:
    """The socket's own timeout as redis-py's ``TimeoutError``; the kernel's ``ETIMEDOUT`` (a dead
    connection, not a slow one) as its ``ConnectionError``, as redis-py's connection tells them apart."""
    if e.errno is not None:
        return redis_lib.ConnectionError(f"Error {e.errno} while {doing} socket. {e.strerror}.")
    return redis_lib.TimeoutError(f"Timeout {doing} socket")


_ALL: weakref.WeakSet[Direct] = weakref.WeakSet()  # every Direct of the process, for a fork
def _after_fork() -> None:
    for direct in list(_ALL):
        direct._forked()


os.register_at_fork(after_in_child=_after_fork)


__all__ = ["Direct", "WrongReply"]
