"""Fan-out of change notices to this process's sockets, through Redis pub/sub.

One listener thread per API process subscribes to every table's channel, so a
socket here hears a move made through any other process. Each notice loads
the table once, however many sockets here watch it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
from collections import defaultdict

log = logging.getLogger("escoba.hub")


class Hub:
    def __init__(self, redis, service):
        self.redis = redis
        self.service = service
        self._lock = threading.Lock()
        self._watchers: dict[str, set[queue.Queue]] = defaultdict(set)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def watch(self, table_id: str) -> queue.Queue:
        self._ensure_listening()
        q: queue.Queue = queue.Queue(maxsize=256)
        with self._lock:
            self._watchers[table_id].add(q)
        return q

    def unwatch(self, table_id: str, q: queue.Queue) -> None:
        with self._lock:
            self._watchers[table_id].discard(q)
            if not self._watchers[table_id]:
                del self._watchers[table_id]

    def open_sockets(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._watchers.values())

    def _ensure_listening(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._listen, name="escoba-hub", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _listen(self) -> None:
        while not self._stop.is_set():
            try:
                pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
                pubsub.psubscribe("table:*:changes")
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message and message.get("type") == "pmessage":
                        self._dispatch(message["data"])
            except Exception:  # Redis went away: wait and subscribe again
                log.exception("pub/sub listener failed; retrying")
                self._stop.wait(1.0)

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
