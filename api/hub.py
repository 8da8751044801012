"""Fan-out of change notices to this process's sockets, through Redis pub/sub.

The listener (api/notices.py: PSUBSCRIBE on one Redis, SSUBSCRIBE per watched
table and a thread per node on a cluster) hears every change of the tables
watched here, so a socket here hears a move made through any other process.
Each notice loads the table once, however many sockets here watch it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
from collections import defaultdict

from .notices import listener_for

log = logging.getLogger("escoba.hub")


class Hub:
    def __init__(self, redis, service):
        self.redis = redis
        self.service = service
        self._lock = threading.Lock()
        self._watchers: dict[str, set[queue.Queue]] = defaultdict(set)
        # subscription changes in order (a table's last socket leaving while its next one
        # arrives must end subscribed); dispatch never waits for this one
        self._subscribing = threading.Lock()
        self.listener = listener_for(redis, self._dispatch, self.watched)

    def watch(self, table_id: str) -> queue.Queue:
        q: queue.Queue = queue.Queue(maxsize=256)
        with self._subscribing:
            with self._lock:
                first = not self._watchers.get(table_id)
                self._watchers[table_id].add(q)
            if first:  # the first socket here on this table: subscribe (it resyncs once confirmed)
                self.listener.add(table_id)
        return q

    def unwatch(self, table_id: str, q: queue.Queue) -> None:
        with self._subscribing:
            with self._lock:
                self._watchers[table_id].discard(q)
                last = not self._watchers[table_id]
                if last:
                    del self._watchers[table_id]
            if last:
                self.listener.remove(table_id)

    def watched(self) -> list[str]:
        with self._lock:
            return list(self._watchers)

    def open_sockets(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._watchers.values())

    def stop(self) -> None:
        self.listener.stop()

    def _dispatch(self, raw) -> None:
        notice = json.loads(raw)
        table_id = notice.get("table_id")
        with self._lock:
            targets = list(self._watchers.get(table_id, ()))
        if not targets:
            return
        if "chat" in notice:
            item = ("chat", notice["chat"])
        else:
            item = ("state", self.service.load(table_id))
        for q in targets:
            with contextlib.suppress(queue.Full):  # a stuck socket must not hold up the others
                q.put_nowait(item)
