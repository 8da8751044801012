"""Compaction: a table that can no longer change becomes one compressed value.

A finished game whose rematch was refused or lapsed, or an expired table, is
closed for good (``closed_for_good``). The worker's ``compact`` timer
(workers/scheduling.py, workers/jobs.py) then calls ``compact``: the whole log
and the chat, as they are stored, go into ``table:{ID}:archive`` (zstandard),
and every hot key of the table is deleted in the same MULTI/EXEC, guarded by
WATCH on the stream (a table that moved meanwhile is left alone):

- dropped: ``events`` (the stream), ``snapshot``, ``checkpoints``, ``timers``,
  ``notify`` (webhook URLs and push markers), ``push`` (Web Push subscriptions),
  ``chat``, ``chatseq``, ``listeners`` (nothing is published for a table that cannot change);
- kept: ``tokens`` (a seat's token still shows its own view, ~100 B a player), ``row`` (the table in
  its players' lists of games, events/my_tables.py: ~600 B),
  the table's entry in the index and the status hash (a few dozen bytes), and
  ``analysis`` (the game analysis, derived data with its version: events/analysis.py);
- idempotency keys (``idem:*``) cannot be named without a SCAN of the whole
  keyspace; they carry a TTL (store.IDEMPOTENCY_TTL, 24 h) and the timer waits
  at least that long after the last append (``Config.compact_after``), so they
  are gone by then.

Every reader goes on as before (``TableService`` falls back to the archive when
the stream is absent): views, ``/events``, chat, the admin log (the same bytes:
the records are archived exactly as stored), ``escoba replay``. A compacted
table is read-only: a write answers 409 ``table_closed``.

Why zstandard: on the logs of finished games (bench/retention.py, docs/benchmarks.md
"Storage") it packs a little better than zlib at its best and unpacks in about half the
time, and every read of a compacted table unpacks it. Level 12: packing is a one-off per game.
The archive format is one line of header, then the stored records, then the chat
lines, one JSON text per line (JSON text never holds a raw newline).
"""

from __future__ import annotations

import zstandard

from engine.state import State

from .connection import Client
from .store import EventStore, events_key, table_key

FORMAT = b"escoba-archive/1"
LEVEL = 12  # a one-off per game: a few ms for a 60 KB log
HOT = ("events", "snapshot", "checkpoints", "timers", "notify", "push", "chat", "chatseq", "listeners", "acked")


def archive_key(table_id: str) -> str:
    return table_key(table_id, "archive")


def closed_for_good(state: State) -> bool:
    """Whether nothing can ever change this table again (the engine's own statuses)."""
    if state.status == "expired":
        return True
    return state.status == "finished" and not state.rematch_allowed()


class Archive:
    """A compacted table: ``entries`` ``[(version, record JSON)]`` and chat ``lines`` (JSON)."""

    __slots__ = ("entries", "lines")

    def __init__(self, entries: list[tuple[int, bytes]], lines: list[bytes]):
        self.entries = entries
        self.lines = lines

    @property
    def version(self) -> int:
        return self.entries[-1][0] if self.entries else 0


def pack(entries: list[tuple[int, bytes]], lines: list[bytes], level: int = LEVEL) -> bytes:
    body = b"\n".join([FORMAT + b" %d %d" % (len(entries), len(lines)),
                       *(raw for _, raw in entries), *lines])
    return zstandard.ZstdCompressor(level=level).compress(body)


def unpack(blob: bytes) -> Archive:
    body = zstandard.ZstdDecompressor().decompress(blob)
    parts = body.split(b"\n")
    head = parts[0].split(b" ")
    if head[0] != FORMAT:
        raise ValueError(f"not an archive this server reads: {head[0][:40]!r}")
    n, m = int(head[1]), int(head[2])
    if len(parts) != 1 + n + m:
        raise ValueError("the archive's record count does not match its header")
    # versions run 1..n without a gap: compact() archives only a whole log
    entries = [(i + 1, parts[1 + i]) for i in range(n)]
    return Archive(entries, parts[1 + n:])


def load(redis: Client, table_id: str) -> Archive | None:
    blob = redis.get(archive_key(table_id))
    if isinstance(blob, str):  # a client that decodes replies cannot read an archive (zstandard)
        raise ValueError(f"table {table_id}: an archive needs a client that does not decode replies")
    return None if blob is None else unpack(blob)


def is_compacted(redis: Client, table_id: str) -> bool:
    return bool(redis.exists(archive_key(table_id)))


def _chat_lines(redis: Client, table_id: str) -> list[bytes]:
    out: list[bytes] = []
    for _, fields in redis.xrange(table_key(table_id, "chat")) or []:
        raw = fields.get(b"line", fields.get("line")) if fields else None
        if raw is None:
            raise ValueError(f"table {table_id}: a chat entry has no line")
        out.append(raw.encode() if isinstance(raw, str) else raw)
    return out


# KEYS[1] the log, KEYS[2] the chat's line counter, KEYS[3] the archive, KEYS[4..] the hot keys to drop;
# ARGV[1] the version archived, ARGV[2] the chat counter read, ARGV[3] the archive. One slot (the
# table's hash tag), so it runs on a Redis Cluster, where WATCH/MULTI does not: the step stores the
# archive and drops the hot keys only while the log and the chat are as they were read. 1 or 0.
_SWAP = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last == 0 then return 0 end
if tonumber(string.match(last[1][1], '^(%d+)-')) ~= tonumber(ARGV[1]) then return 0 end
if (redis.call('GET', KEYS[2]) or '0') ~= ARGV[2] then return 0 end
redis.call('SET', KEYS[3], ARGV[3])
for i = 4, #KEYS do redis.call('DEL', KEYS[i]) end
return 1
"""


def compact(redis: Client, table_id: str, expected_version: int) -> dict[str, int] | None:
    """Archive the table at ``expected_version`` and drop its hot keys; what it did, or None
    when the table is not at that version any more (or has no log: gone or compacted)."""
    store = EventStore(redis)
    chatseq = table_key(table_id, "chatseq")
    seq = redis.get(chatseq)  # before the lines: a line posted after this makes the swap refuse
    seq = "0" if seq is None else (seq.decode() if isinstance(seq, bytes) else str(seq))
    entries = [(v, raw.encode() if isinstance(raw, str) else raw) for v, raw in store.read_raw(table_id)]
    if not entries or entries[-1][0] != expected_version or len(entries) != expected_version:
        return None
    lines = _chat_lines(redis, table_id)
    blob = pack(entries, lines)
    check = unpack(blob)  # never drop a log the archive does not give back whole
    if check.entries != entries or check.lines != lines:
        raise RuntimeError(f"table {table_id}: the archive does not read back")
    before = sum(len(raw) for _, raw in entries) + sum(len(x) for x in lines)
    keys = [events_key(table_id), chatseq, archive_key(table_id), *(table_key(table_id, name) for name in HOT)]
    if not int(redis.register_script(_SWAP)(keys=keys, args=[expected_version, seq, blob])):
        return None  # a write landed meanwhile: leave the table be
    return {"version": expected_version, "events": len(entries), "chat": len(lines),
            "raw_bytes": before, "archive_bytes": len(blob)}


__all__ = ["Archive", "HOT", "archive_key", "closed_for_good", "compact", "is_compacted", "load",
           "pack", "unpack"]
