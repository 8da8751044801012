"""Keep the sockets a worker holds out of the garbage collector's full passes.

A held socket is a few hundred objects that live as long as the reader keeps the
page open (greenlets, the WebSocket and its protocol state, the request's
environ). CPython's full collection walks every one of them: with 10,000 sockets
open, each full pass held the whole worker, every socket and request with it,
for a long pause (docs/benchmarks.md, "Sockets at scale"; the worker logs "garbage collection
held the worker"), and a full pass comes whenever the long-lived objects have grown by a
quarter, so sockets arriving keep bringing them back.

So a socket, once it is set up, is moved into the collector's permanent
generation with ``gc.freeze()`` (it splices lists: O(1)), at most once per
``FREEZE_EVERY`` seconds for all the sockets set up since. Frozen objects are
still freed by reference counting when their socket closes; only a reference
cycle among them would wait. Those are bounded: after ``THAW_AFTER`` sockets
have closed since the last thaw, everything is unfrozen and the next full pass
collects what they left (one pause per so many closed sockets, instead of one
per quarter more sockets).
"""

from __future__ import annotations

import gc
import threading
import time

FREEZE_EVERY = 1.0  # seconds between two freezes
THAW_AFTER = 5_000  # closed sockets between two thaws

_lock = threading.Lock()
_state = {"frozen_at": 0.0, "closed": 0}


def socket_ready() -> None:
    """A socket is set up and will likely live long: freeze what is alive (rate-limited)."""
    now = time.monotonic()
    with _lock:
        if now - _state["frozen_at"] < FREEZE_EVERY:
            return
        _state["frozen_at"] = now
    gc.freeze()


def socket_closed() -> None:
    """A socket closed: after ``THAW_AFTER`` of them, let the collector see everything again."""
    with _lock:
        _state["closed"] += 1
        if _state["closed"] < THAW_AFTER:
            return
        _state["closed"] = 0
    gc.unfreeze()
