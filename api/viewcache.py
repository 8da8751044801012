"""The public (spectator) view of a table version, built once per process for every reader.

A version of a table never changes (the log is append-only), so the view of
(table, version, deck) for a reader without a seat is the same for everyone who
asks: built the first time, then shared. The dicts handed out are shared: callers
only encode them. A small LRU bounds it (a view is about 3 KB).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import engine

SIZE = 512


class PublicViews:
    def __init__(self, size: int = SIZE):
        self.size = size
        self._views: OrderedDict[tuple, dict] = OrderedDict()
        self._lock = threading.Lock()
        self.built = 0  # how many were built (tests: once per version)

    def get(self, table_id: str, state, deck: str | None) -> dict:
        key = (table_id, state.version, deck)
        with self._lock:
            view = self._views.get(key)
            if view is not None:
                self._views.move_to_end(key)
                return view
        view = {"table_id": table_id, **engine.view(state, None, deck=deck), "you_are_host": False}
        with self._lock:
            self.built += 1
            self._views[key] = view
            while len(self._views) > self.size:
                self._views.popitem(last=False)
        return view
