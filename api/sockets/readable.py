"""The selector simple-websocket's reader waits in between its pings, for gevent's worker: one wait a read.

With a ping interval, simple-websocket's reader asks a selector, before every read,
whether its one socket is readable before the next ping is due. Under gevent that
is ``gevent.selectors.GeventSelector``: an Event, a callback, a watcher started and
stopped and a result list for every read, some 3.5% of a worker's CPU under
``bench/games.py --transport socket`` (py-spy). ``OneSocket`` answers the same
question with gevent's ``wait_read`` on the socket's file descriptor and a timeout:
one watcher, one wait.

Under the gthread worker (no gevent) simple-websocket keeps the standard library's
selector.
"""

from __future__ import annotations

import selectors


class OneSocket:
    """The part of ``selectors.BaseSelector`` simple-websocket's reader uses (register one socket,
    select with a timeout, close), for gevent: ``select`` returns the socket's key when it is
    readable, or ``[]`` once ``timeout`` seconds passed (then the reader sends its ping)."""

    def __init__(self):
        from gevent.socket import wait_read

        self._wait_read = wait_read
        self._key = None
        self._ready: list = []

    def register(self, fileobj, events, data=None):
        if self._key is not None:
            raise ValueError("OneSocket holds one socket")
        if events != selectors.EVENT_READ:
            raise ValueError("OneSocket waits for reading only")
        fd = fileobj if isinstance(fileobj, int) else fileobj.fileno()
        if fd < 0:
            raise ValueError(f"invalid file descriptor {fd}")
        self._key = selectors.SelectorKey(fileobj, fd, events, data)
        self._ready = [(self._key, selectors.EVENT_READ)]
        return self._key

    def select(self, timeout=None):
        if self._key is None:
            raise ValueError("no socket registered")
        try:
            self._wait_read(self._key.fd, None if timeout is None else max(0.0, timeout), _TimedOut)
        except _TimedOut:
            return []
        return self._ready

    def close(self) -> None:
        self._key = None
        self._ready = []


class _TimedOut(Exception):
    pass


def selector_class():
    """The selector class for simple-websocket in this process: OneSocket where gevent has patched
    the standard library's sockets (gunicorn's gevent worker), else None (its default)."""
    try:
        from gevent import monkey
    except ImportError:
        return None
    return OneSocket if monkey.is_module_patched("socket") else None
