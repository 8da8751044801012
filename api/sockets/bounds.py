"""How many WebSockets one client address, and one table, may hold in this process.

A socket costs little but not nothing (a few KiB, a file descriptor, a share of
every change's fan-out), so one address must not be able to open them without
end. The counts live in the process that holds the sockets: they need no round
trip, and they die with it. Behind several API processes a client can reach
each process's bound (they are per process, documented as such).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass
from typing import TypeVar


@dataclass(frozen=True)
class Refusal:
    scope: str  # "address", "address_table" or "table"
    limit: int

    def message(self) -> str:
        return {
            "address": f"This address already holds {self.limit} sockets; close one first.",
            "address_table": f"This address already holds {self.limit} sockets on this table; close one first.",
            "table": f"This table already has {self.limit} sockets; try again later.",
        }[self.scope]

K = TypeVar("K")


class SocketLimits:
    def __init__(self, per_address: int, per_address_table: int, per_table: int):
        self.per_address = per_address
        self.per_address_table = per_address_table
        self.per_table = per_table
        self._lock = threading.Lock()
        self._address: Counter[str] = Counter()
        self._address_table: Counter[tuple[str, str]] = Counter()
        self._table: Counter[str] = Counter()

    def acquire(self, address: str, table_id: str) -> Refusal | None:
        """Count one more socket, or say which bound it would break (and count nothing)."""
        with self._lock:
            if self._address[address] >= self.per_address:
                return Refusal("address", self.per_address)
            if self._address_table[address, table_id] >= self.per_address_table:
                return Refusal("address_table", self.per_address_table)
            if self._table[table_id] >= self.per_table:
                return Refusal("table", self.per_table)
            self._address[address] += 1
            self._address_table[address, table_id] += 1
            self._table[table_id] += 1
            return None

    def release(self, address: str, table_id: str) -> None:
        with self._lock:
            _release(self._address, address)
            _release(self._address_table, (address, table_id))
            _release(self._table, table_id)

    def held(self, address: str, table_id: str | None = None) -> int:
        with self._lock:
            if table_id is None:
                return self._address[address]
            return self._address_table[address, table_id]


def _release(counter: Counter[K], key: K) -> None:
    counter[key] -= 1
    if counter[key] <= 0:
        del counter[key]  # keep the counters as small as the sockets open now
