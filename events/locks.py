"""A lock for a few instructions that never wait: the C lock, also in a process gevent has patched.

Under gunicorn's gevent worker ``threading.Lock`` is gevent's, written in Python: an
acquire and release cost about 630 ns against 240 ns for the C lock, and a socket move
took some 26 of them (the views' cache, the mailboxes, the tables' cache, the metrics).
Where the lock guards only a few dict or deque operations no greenlet can switch while it
is held, so nothing can wait on it in the same thread, and the C lock is as correct there
as under real threads (where it is what ``threading.Lock`` is anyway).

Never for a section that may wait: I/O, a sleep, a socket, another greenlet's lock.
"""

from __future__ import annotations

import threading


def _os_lock():
    try:
        from gevent import monkey
    except ImportError:
        return threading.Lock
    if not monkey.is_module_patched("threading"):
        return threading.Lock
    return monkey.get_original("_thread", "allocate_lock")


def short_lock():
    """A new lock for a section that never waits on anything (see the module's docstring)."""
    return _os_lock()()


__all__ = ["short_lock"]
