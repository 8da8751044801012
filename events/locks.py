"""A lock for a few instructions that never wait, and what the OS's modules hold under gevent.

Under gunicorn's gevent worker ``threading.Lock`` is gevent's, written in Python: an
acquire and release cost about 630 ns against 240 ns for the C lock, and a socket move
took some 26 of them (the views' cache, the mailboxes, the tables' cache, the metrics).
Where the lock guards only a few dict or deque operations no greenlet can switch while it
is held, so nothing can wait on it in the same thread, and the C lock is as correct there
as under real threads (where it is what ``threading.Lock`` is anyway).

Never for a section that may wait: I/O, a sleep, a socket, another greenlet's lock.
"""

from __future__ import annotations

import importlib
from _thread import LockType as Lock
from typing import Any


def unpatched(module: str, name: str) -> Any:
    """``module.name`` as the operating system's module has it, also where gevent has patched it
    (the C lock, a real thread, the OS's poll or sleep)."""
    try:
        from gevent.monkey import get_original
    except ImportError:  # pragma: no cover - gevent is a dependency
        return getattr(importlib.import_module(module), name)
    return get_original(module, name)  # the module's own attribute where nothing was patched


def short_lock() -> Lock:
    """A new lock for a section that never waits on anything (see the module's docstring)."""
    lock: Lock = unpatched("_thread", "allocate_lock")()
    return lock


__all__ = ["short_lock", "unpatched"]
