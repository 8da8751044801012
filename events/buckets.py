"""Sharded index buckets: one per cluster slot, each in the slot of the tables it holds.

A global key (``escoba:tables``, ``escoba:status``) is one hot key on one cluster node,
and it cannot be written in the Lua step that appends a table's first event, because
that step may touch only the table's own slot. So each such index is split into one
bucket per hash slot (16384), and the bucket of a table lives in the table's slot:
its key's hash tag is a short string chosen to hash to that slot
(``escoba:tables:{<tag>}``). The step that creates a table can then write its first
event, its host's token and its index entry together, or none of them; on one Redis
the same keys are just keys.

Empty buckets do not exist (no memory). ``escoba:slots`` lists the slots that have
ever held a table (written before a table's create step, so a crash in between
lists an empty bucket, never hides a table; each process writes a slot at most
once an hour, so it is not a hot key).
Reading a whole index (``escoba reconcile``, ``/metrics``) reads only those buckets:
a bounded number of calls, at most 16384 per index pipelined per node, whatever
the number of tables.
"""

from __future__ import annotations

import binascii
import functools
import time
from collections.abc import Callable
from typing import Any

from redis.client import Pipeline
from redis.cluster import ClusterPipeline

from .connection import Client

SLOTS = 16384
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"


def slot_of(table_id: str) -> int:
    """The cluster slot of a table's keys (their hash tag is the table id): Redis's CRC16."""
    return binascii.crc_hqx(table_id.encode(), 0) % SLOTS


@functools.cache
def slot_tags() -> tuple[str, ...]:
    """For every slot, a hash tag (three characters) whose CRC16 lands in it.

    Searched once per process (about 25 ms): the three-character strings over 64
    characters cover all 16384 slots well before the search runs out.
    """
    tags: list[str | None] = [None] * SLOTS
    left = SLOTS
    for a in _ALPHABET:
        for b in _ALPHABET:
            for c in _ALPHABET:
                tag = a + b + c
                slot = binascii.crc_hqx(tag.encode(), 0) % SLOTS
                if tags[slot] is None:
                    tags[slot] = tag
                    left -= 1
                    if not left:
                        return tuple(tags)  # type: ignore[arg-type]
    raise AssertionError("three characters did not cover every slot")  # pragma: no cover


@functools.lru_cache(maxsize=16_384)
def bucket_key(kind: str, table_id: str) -> str:
    """The key of ``table_id``'s bucket of index ``kind``, in the table's own slot.

    Kept for the tables in play: every append names three (its index and status buckets), and
    working one out is six calls (a CRC16 of the id, the slot's tag), one when kept."""
    return slot_bucket(kind, slot_of(table_id))


def slot_bucket(kind: str, slot: int) -> str:
    return f"escoba:{kind}:{{{slot_tags()[slot]}}}"


SLOTS_KEY = "escoba:slots"

# a slot this process listed is listed again after this long: a directory that lost a write
# (a failover, an older AOF) is whole again within the hour, at one SADD per slot per hour
RENOTE_EVERY = 3600.0


class SlotDirectory:
    """The slots that hold tables (``escoba:slots``), remembered by this process."""

    def __init__(self, redis: Client, clock: Callable[[], float] = time.monotonic):
        self.redis = redis
        self.clock = clock
        self._known: dict[int, float] = {}  # slot -> when this process last listed it

    def note(self, table_id: str) -> None:
        """Before a table's first write: list its slot (once per process per slot per hour)."""
        slot = slot_of(table_id)
        now = self.clock()
        if now - self._known.get(slot, -RENOTE_EVERY) >= RENOTE_EVERY:
            self.redis.sadd(SLOTS_KEY, slot)
            self._known[slot] = now

    def slots(self) -> list[int]:
        return sorted(int(x) for x in self.redis.smembers(SLOTS_KEY))

    def buckets(self, kind: str) -> list[str]:
        """The keys of index ``kind`` that may hold something."""
        return [slot_bucket(kind, slot) for slot in self.slots()]


def read_buckets(redis: Client, keys: list[str], read: Callable[[Pipeline | ClusterPipeline, str], object],
                 chunk: int = 2048) -> list[Any]:
    """``read(pipe, key)`` for every key, pipelined (a cluster client groups the pipeline
    by node), in chunks; the replies in key order."""
    out: list[Any] = []
    for start in range(0, len(keys), chunk):
        with redis.pipeline(transaction=False) as pipe:
            for key in keys[start:start + chunk]:
                read(pipe, key)
            out.extend(pipe.execute())
    return out


__all__ = ["SLOTS", "SLOTS_KEY", "SlotDirectory", "bucket_key", "read_buckets", "slot_bucket",
           "slot_of", "slot_tags"]
