"""Where a socket move's time goes in this process, stage by stage: for bench/latency.py only.

Off unless ``ESCOBA_STAGE_TIMES`` names a file. Every call site asks ``stages.ON`` first, so a
production worker pays one attribute read a stage and keeps nothing. On, each socket move's
greenlet keeps the ``perf_counter`` at each of its marks (``begin`` at the handler's wake, then
``mark(name)`` after each stage); ``end`` files the move's marks. A watcher thread (a greenlet
under gevent) notes how late it wakes from each short sleep (the event loop's lag), the
collector's passes are timed (``gc.callbacks``), and ``note`` files one-off samples (the time a
change waited in a mailbox). Everything goes to ``<file>.<pid>``, a JSON list of rows a line, every
half second. The watcher and the writes cost the worker some CPU of their own (bench/latency.py
``--timers off`` runs without them, for CPU figures alone).
``perf_counter`` is CLOCK_MONOTONIC on Linux, one clock for every process of the machine, so the
bench lines these up with its own stamps.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections import deque

PATH = os.environ.get("ESCOBA_STAGE_TIMES") or None
ON = PATH is not None
LAG_EVERY = 0.005  # seconds the lag watcher sleeps: it notes how much later than that it woke
FLUSH_EVERY = 0.5  # seconds between two writes, each one line of every row since (orjson: the write is short)

_local = threading.local()  # a greenlet's own under gevent's monkey-patching
_out: deque[list[object]] = deque()  # JSON-ready rows, until the flusher writes them
_gc_started: list[float] = []


def begin() -> None:
    """A socket handler woke: the moves it answers now are timed from here."""
    _local.marks = [("wake", time.perf_counter())]
    _local.tags = []


def mark(name: str) -> None:
    marks = getattr(_local, "marks", None)
    if marks is not None:
        marks.append((name, time.perf_counter()))


def tag(table_id: str, version: int) -> None:
    """The move being timed appended ``version`` at ``table_id``: the bench finds its client's span by it."""
    if getattr(_local, "marks", None) is not None:
        _local.tags.append((table_id, version))


def end() -> None:
    """The handler wrote its answers: file the marks (and the moves' tags) if a move was appended since
    ``begin``."""
    marks = getattr(_local, "marks", None)
    tags = getattr(_local, "tags", None) or []
    _local.marks = _local.tags = None
    if marks is not None and any(name == "appended" for name, _ in marks):
        marks.append(("written", time.perf_counter()))
        _out.append(["move", marks, tags])


def note(kind: str, at: float, took: float) -> None:
    _out.append([kind, at, took])


def mailed(at: float) -> float:
    """A state a mover left to a socket's mailbox at ``at`` is sent by its handler now: note the wait
    (0.0, the caller's stamp cleared)."""
    now = time.perf_counter()
    _out.append(["mailbox", now, now - at])
    return 0.0


def _on_gc(phase: str, info: dict[str, int]) -> None:
    # the pass's wall time, and the process's CPU time over it: on a busy machine the first also
    # holds the time the process waited for a core, which the second leaves out
    if phase == "start":
        _gc_started[:] = [time.perf_counter(), time.process_time()]
    elif _gc_started:
        now = time.perf_counter()
        _out.append(["gc", now, now - _gc_started[0], info.get("generation"), info.get("collected"),
                     time.process_time() - _gc_started[1]])


def _watch_lag() -> None:
    while True:
        before = time.perf_counter()
        time.sleep(LAG_EVERY)
        now = time.perf_counter()
        _out.append(["lag", now, now - before - LAG_EVERY])


def _flush() -> None:
    import orjson

    path = f"{PATH}.{os.getpid()}"
    while True:
        time.sleep(FLUSH_EVERY)
        rows = []
        while _out:
            rows.append(_out.popleft())
        if rows:
            with open(path, "ab") as f:
                f.write(orjson.dumps(rows) + b"\n")


def start() -> None:
    """In the worker, once its app is built (after gevent has patched threads into greenlets)."""
    if not ON:
        return
    gc.callbacks.append(_on_gc)
    threading.Thread(target=_watch_lag, name="escoba-stage-lag", daemon=True).start()
    threading.Thread(target=_flush, name="escoba-stage-flush", daemon=True).start()
