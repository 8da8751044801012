"""The due-time index of the timers: sharded sorted sets on the tables' store.

A table's timers themselves live in its own hash ``table:{ID}:timers`` (the
source of truth, ``workers.scheduling``). This index only says *when to look*
at a table: each table maps to one of ``BUCKETS`` buckets (crc32 of its id),
and each bucket has its own hash tag, so its keys share one cluster slot and
bucket ``n`` is a shard of its own:

- ``timers:{tb<n>}:due``     sorted set: table id -> the earliest due time of its
  timers not yet handed to RQ (epoch seconds). Only ever *lowered* by a writer
  (``ZADD LT``): an entry earlier than needed costs one look, never a miss.
- ``timers:{tb<n>}:claims``  sorted set: table id -> lease end. A ticker moves due
  tables here while it hands their jobs to RQ; a lease that runs out (the
  ticker crashed) puts the table back in ``due``: a claim lost is found again.
- ``timers:{tb<n>}:live``    set: tables that have (or may have) timers, walked by the
  incremental reconciler from a cursor (``SSCAN``).
- ``timers:{tb<n>}:repair``  set: tables whose change hook failed; the reconciler
  takes them first.

**Per queue shard.** With several queue shards (``ESCOBA_QUEUE_URL``) each bucket's
``due`` and ``claims`` are split by the table's shard (``events.connection.queue_shard``):
shard 0 keeps the names above (so one shard is exactly as before), shard ``k`` > 0 has
``timers:{tb<n>}:due:<k>`` and ``timers:{tb<n>}:claims:<k>`` (the same hash tag: the same
slot). The ticker of shard ``k`` claims only its shard's sets, so it never hands a table of
another shard. Writers compute the shard from the shard count they were given; an entry
written under another count (settings rolled out one process at a time, a shard added) is
found by the ticker of the set it is in and moved, in one step, to its table's own shard
(``hand_over``). ``live`` and ``repair`` are not split (the reconciler walks every table).

Every script here touches one bucket's keys only (one slot). Nothing here
touches a table's own keys or RQ's: that is what lets the tables live on a
Redis Cluster and RQ on a plain Redis of its own.
"""

from __future__ import annotations

import zlib

from events.connection import queue_shard
from events.text import as_text

BUCKETS = 32  # fixed: a table's bucket is crc32(id) % BUCKETS, so changing it needs a migration
# seconds a ticker holds a claimed table before another may take it: a ticker that died
# mid-hand-off strands its claims this long (a hand-off takes milliseconds; two tickers
# handing the same timer enqueue it once, under its id)
LEASE = 5.0


def bucket_of(table_id: str) -> int:
    return zlib.crc32(table_id.encode()) % BUCKETS


def _key(bucket: int, name: str, shard: int = 0) -> str:
    return f"timers:{{tb{bucket}}}:{name}" + (f":{shard}" if shard else "")


def due_key(bucket: int, shard: int = 0) -> str:
    """Bucket ``bucket``'s due set of queue shard ``shard`` (shard 0: the one-shard name)."""
    return _key(bucket, "due", shard)


def claims_key(bucket: int, shard: int = 0) -> str:
    return _key(bucket, "claims", shard)


def live_key(bucket: int) -> str:
    return _key(bucket, "live")


def repair_key(bucket: int) -> str:
    return _key(bucket, "repair")


# KEYS: due, claims. ARGV: now, lease end, limit.
# Claims that ran out go back to due (at once, never later than an entry already there); then
# up to `limit` tables due by `now` move from due to claims until the lease end. Returns them.
_CLAIM = """
local lost = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, m in ipairs(lost) do
  redis.call('ZREM', KEYS[2], m)
  redis.call('ZADD', KEYS[1], 'LT', ARGV[1], m)
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, m in ipairs(due) do
  redis.call('ZREM', KEYS[1], m)
  redis.call('ZADD', KEYS[2], ARGV[2], m)
end
return due
"""

# KEYS: due, claims. ARGV: table, lease end of this claim, next due ('' = none).
# Ends this ticker's claim (only while it is still this one's) and puts the table's next due
# time back, never later than what a hook wrote meanwhile.
_RELEASE = """
local held = redis.call('ZSCORE', KEYS[2], ARGV[1])
if held and tonumber(held) == tonumber(ARGV[2]) then redis.call('ZREM', KEYS[2], ARGV[1]) end
if ARGV[3] ~= '' then redis.call('ZADD', KEYS[1], 'LT', ARGV[3], ARGV[1]) end
return 1
"""

# KEYS: claims (of the shard it was claimed from), due (of its own shard). ARGV: table, lease
# end of this claim, due. A table found in another shard's sets: its claim ends and it is due
# on its own shard no later than ``due``.
_HAND_OVER = """
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
if held and tonumber(held) == tonumber(ARGV[2]) then redis.call('ZREM', KEYS[1], ARGV[1]) end
redis.call('ZADD', KEYS[2], 'LT', ARGV[3], ARGV[1])
return 1
"""

# KEYS: due, live. ARGV: table, due. The hook's write: the table is live and due no later.
_MARK = """
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
return 1
"""


class _Scripts:
    """The scripts, registered once per connection (redis-py keeps the SHA and falls back to EVAL)."""

    def __init__(self, redis):
        self.claim = redis.register_script(_CLAIM)
        self.release = redis.register_script(_RELEASE)
        self.mark = redis.register_script(_MARK)
        self.hand_over = redis.register_script(_HAND_OVER)


_registered: dict[int, _Scripts] = {}


def _scripts(redis) -> _Scripts:
    found = _registered.get(id(redis))
    if found is None or found.claim.registered_client is not redis:
        found = _registered[id(redis)] = _Scripts(redis)
    return found


def mark_due(redis, table_id: str, due: float, shards: int = 1) -> None:
    """The table is live and has a timer due at ``due`` (lowers its entry, never raises it), in
    its shard's set (``shards``: how many queue shards there are)."""
    b = bucket_of(table_id)
    _scripts(redis).mark(keys=[due_key(b, queue_shard(table_id, shards)), live_key(b)],
                         args=[table_id, repr(float(due))])


def add_live(redis, table_id: str) -> None:
    """Before a table's first timer is written: the reconciler can find it from then on."""
    redis.sadd(live_key(bucket_of(table_id)), table_id)


def drop_live(redis, table_id: str) -> None:
    redis.srem(live_key(bucket_of(table_id)), table_id)


def note_repair(redis, table_id: str) -> None:
    redis.sadd(repair_key(bucket_of(table_id)), table_id)


def take_repairs(redis, bucket: int, count: int) -> list[str]:
    return [as_text(x) for x in redis.spop(repair_key(bucket), count) or []]


def claim(redis, bucket: int, now: float, limit: int, lease: float = LEASE,
          shard: int = 0) -> tuple[float, list[str]]:
    """Claim up to ``limit`` tables of ``bucket`` due by ``now`` in queue shard ``shard``'s sets:
    (the lease end, their ids)."""
    until = now + lease
    found = _scripts(redis).claim(keys=[due_key(bucket, shard), claims_key(bucket, shard)],
                                  args=[repr(float(now)), repr(until), limit])
    return until, [as_text(x) for x in found]


def release(redis, table_id: str, lease_end: float, next_due: float | None, shards: int = 1) -> None:
    b, shard = bucket_of(table_id), queue_shard(table_id, shards)
    _scripts(redis).release(keys=[due_key(b, shard), claims_key(b, shard)],
                            args=[table_id, repr(lease_end), "" if next_due is None else repr(float(next_due))])


def hand_over(redis, table_id: str, lease_end: float, claimed_in: int, shards: int, due: float) -> int:
    """A table claimed from shard ``claimed_in``'s sets that belongs to another shard: its claim
    ends there and it is due on its own shard by ``due``. Its own shard's number."""
    b, shard = bucket_of(table_id), queue_shard(table_id, shards)
    _scripts(redis).hand_over(keys=[claims_key(b, claimed_in), due_key(b, shard)],
                              args=[table_id, repr(lease_end), repr(float(due))])
    return shard


def due_at(redis, table_id: str, shards: int = 1) -> float | None:
    """The table's entry in the due index (None: none)."""
    score = redis.zscore(due_key(bucket_of(table_id), queue_shard(table_id, shards)), table_id)
    return None if score is None else float(score)


def claimed_until(redis, table_id: str, shards: int = 1) -> float | None:
    score = redis.zscore(claims_key(bucket_of(table_id), queue_shard(table_id, shards)), table_id)
    return None if score is None else float(score)


def scan_live(redis, bucket: int, cursor: int, count: int) -> tuple[int, list[str]]:
    cursor, found = redis.sscan(live_key(bucket), cursor, count=count)
    return int(cursor), [as_text(x) for x in found]


__all__ = [
    "BUCKETS", "LEASE", "add_live", "bucket_of", "claim", "claimed_until", "claims_key", "drop_live",
    "due_at", "due_key", "hand_over", "live_key", "mark_due", "note_repair", "release", "repair_key",
    "scan_live", "take_repairs",
]
