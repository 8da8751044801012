"""The event store: one Redis stream per table, appended to by one Lua step.

Keys (all in the table's cluster slot: hash-tagged by the table id, or an index
bucket whose tag hashes to the same slot, see ``events/buckets.py``):

- ``table:{ID}:events``   the log: a stream, entry id ``<version>-0``, field ``e`` = record JSON
- ``table:{ID}:idem:<actor>:<key>``  ``{"version": N}`` of a request already applied
- ``table:{ID}:tokens``   seat tokens' hashes -> player id (granted in the append's step)
- ``table:{ID}:changes``  the pub/sub channel of change notices (SPUBLISH on a cluster)
- ``table:{ID}:listeners``  the API processes whose sockets watch the table (``listen``): a set of
  their hubs' ids, each added once its subscription is confirmed and before it reads the log
- ``table:{ID}:analysis``  the game analysis, beside the log (events/analysis.py)
- ``table:{ID}:confirmed``  the version a job last confirmed its replicas hold (``confirm_log``; a minute's TTL)
- ``table:{ID}:acked``  with replica acks: the last version acknowledged (its replicas held it, or
  ESCOBA_UNREPLICATED=accept took it on the master alone); views read the log only up to it
- ``table:{ID}:limit:...``  a caller's rate counter (``Append.count``: the API's per-token move limit,
  api/http/limits.py), counted in the append's step
- ``escoba:tables:{T}``   the index bucket of the table's slot: sorted set of table ids (score: creation time)
- ``escoba:status:{T}``   the status bucket: table id -> status; ``escoba:counts:{T}``: status -> tables
- ``escoba:slots``        the slots whose buckets hold anything (events/buckets.py; not in the step)

``append`` takes one ``Append`` (a frozen value naming every part of the step) and runs a single
Lua script: it checks the table's current version against the expected one, refuses a request
whose idempotency key is already used, XADDs every record, sets the idempotency key, grants a seat
token, keeps the index and status buckets and publishes the change notice, all in one step.
The notice is left out when the appender says it is the table's only listener
(``Append.quiet_for``): it posts the change to its own sockets itself, and no other process
listens. A listener adds itself before it reads the log on each subscription (the
resync, api/sockets/fanout.py), so whatever it was not sent it reads there.
Either the whole batch is in the log, with everything that goes with it, or none
of it: a table's first event, its host's token and its index entry are written
together. Every write comes after every check (but a request's rate count, which
counts whatever follows), and once a script has written, Redis (noeviction) lets it
finish, so a full Redis refuses a create whole.
The same code runs on one Redis, on a Redis Cluster and on fakeredis[lua].

With ``replica_acks`` (ESCOBA_REPLICA_ACKS) the step is followed by ``WAIT`` on the same
connection and the change notice is published only once the replicas hold the batch
(events/replication.py): what sockets and timers follow was acknowledged. What readers see
was too: an append whose ``WAIT`` came back short stays on the master (a retry with its key finds
it), and a view read while the append waits, or after, would show a move a failover may take back
(a GET once served version 181, never acknowledged, and the log was at 180 after the failover). So
the step also sets ``table:{ID}:acked`` to the version it appended after when the table has none
yet (a table from before: its log counts as acknowledged), the acknowledgement raises it to the
new version (in the step that publishes the notice: no round trip of its own), and a view reads
the log only up to it (``read_raw(acknowledged=True)``: one script, a GET and the XRANGE). A
writer reads the whole log (it appends after the last entry: a move made on top of an
unacknowledged one acknowledges both). None of it runs with replica acks off.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

import orjson
import redis as redis_lib
from redis.commands.core import Script
from redis.exceptions import NoScriptError

from . import replication
from .buckets import SlotDirectory, bucket_key, read_buckets
from .connection import Client, is_cluster
from .direct import Direct, Reply, WrongReply
from .records import Entry, Record, dumps, loads
from .text import as_text

# index kinds (events/buckets.py): tables by creation time, status by table, tables by status
TABLES = "tables"
STATUS = "status"
COUNTS = "counts"
IDEMPOTENCY_TTL = 24 * 3600
READ_CHUNK = 1000
NOTICE_RECORDS_MAX = 16 * 1024  # characters of records a change notice carries (a deal is ~1 KB)

log = logging.getLogger("escoba.events")

Arg: TypeAlias = str | int | float  # a script's ARGV item as sent


def table_key(table_id: str, name: str) -> str:
    """A key of one table's: hash-tagged by table id, so a table's keys share a cluster slot
    and one Lua script may touch them all."""
    return f"table:{{{table_id}}}:{name}"


def events_key(table_id: str) -> str:
    return table_key(table_id, "events")


def snapshot_key(table_id: str) -> str:
    return table_key(table_id, "snapshot")


def changes_channel(table_id: str) -> str:
    return table_key(table_id, "changes")


def listeners_key(table_id: str) -> str:
    return table_key(table_id, "listeners")


def confirmed_key(table_id: str) -> str:
    return table_key(table_id, "confirmed")


def acked_key(table_id: str) -> str:
    return table_key(table_id, "acked")


CONFIRMED_TTL_MS = 60_000  # only its write matters: the key is a mark, gone after a minute


def idempotency_key(table_id: str, actor: str, key: str) -> str:
    return table_key(table_id, f"idem:{actor}:{key}")


def tokens_key(table_id: str) -> str:
    return table_key(table_id, "tokens")


def index_key(table_id: str) -> str:
    """The bucket of ``escoba:tables`` that holds ``table_id`` (in the table's slot)."""
    return bucket_key(TABLES, table_id)


class VersionConflict(Exception):
    """The table's version is not the one the append expected."""

    def __init__(self, current: int):
        super().__init__(f"the table is at version {current}")
        self.current = current


class CountOver(Exception):
    """The step's count (``Append.count``) went over its limit: nothing else was written."""

    def __init__(self, retry_after: int):
        super().__init__(f"over the count's limit for {retry_after} s more")
        self.retry_after = retry_after


class AlreadyApplied(Exception):
    """The idempotency key was used already: the request was applied at ``version``."""

    def __init__(self, version: int):
        super().__init__(f"already applied at version {version}")
        self.version = version


class Idempotency(NamedTuple):
    """A request's idempotency key (``idempotency_key``), set in the append's step with ``SET NX``:
    a second request with it appends nothing and is answered ``AlreadyApplied``. (An ``Append``'s
    parts are NamedTuples, as its ``grant`` and ``row`` are tuples: every move builds them, and a
    frozen dataclass costs several times a tuple to build.)"""

    key: str
    value: str  # ``{"version": N}``, the version the append makes
    ttl: int = IDEMPOTENCY_TTL  # seconds


class RateCount(NamedTuple):
    """A fixed-window counter of the table's own (``table_key``) that the step increments before
    anything else, whatever follows: over ``limit`` within ``window`` seconds of its first count, the
    step writes nothing more and the append raises ``CountOver`` (a repeat still gets its first
    answer). The store knows no limit of its own: the API builds these (api/http/limits.py)."""

    key: str
    limit: int
    window: int


@dataclass(frozen=True, slots=True)
class Append:
    """Everything one append's Lua step takes, by name: ``EventStore.append`` builds the step's KEYS
    and ARGV from it and from nothing else (its store's ``publish`` and replica acks aside).

    Every key it names must be the table's own (one cluster slot): ``append`` refuses any other.
    """

    table_id: str
    expected_version: int  # the log's length the append is made at: VersionConflict otherwise
    records: Sequence[Record]  # versions expected_version + 1, + 2, ...
    encoded: Sequence[str] | None = None  # the records as ``records.dumps`` writes them (None: dumped here)
    idempotency: Idempotency | None = None
    notice: bool = True  # publish the change notice (``change_notice``)
    quiet_for: str | None = None  # a listener id (``listen``): no notice when it is the only listener
    read_back: tuple[str, ...] = ()  # hashes of the table's, read after the writes and returned
    stamp: bool = False  # first set read_back[0]'s field ``version`` to the new version (never lowered)
    created_at: float | None = None  # the table's creation: its index entry's score
    status: str | None = None  # the table's status after the batch (its status bucket and counts)
    grant: tuple[str, str] | None = None  # (token hash, player): a seat token granted
    row: tuple[str, Mapping[str, str]] | None = None  # (key, fields): a hash of the table's set
    count: RateCount | None = None  # counted first, whatever follows


# The step's slots are built from an ``Append`` by ``_step_slots`` alone, and named at the script's top
# by the same names (an unused key slot holds the stream again, an unused ARGV slot ''):
# KEYS: [1] the stream, [2] the idempotency key, [3] the index bucket, [4] the status bucket,
#       [5] the status counts bucket, [6] the tokens hash, [7] the listeners set, [8] the count's
#       counter, [9] the row's hash, [10] the acknowledged mark (``acked_key``, when replica acks are
#       waited for), [11..] the hashes to read back
# ARGV: [1] expected_version, [2] the number of records, [3] the notice's channel ('' = none),
#       [4] the notice, [5] the idempotency value, [6] its ttl, [7] stamp ('1'), [8] idempotency ('1'),
#       [9] 'SPUBLISH' (a cluster: sharded pub/sub) or 'PUBLISH', [10] created_at (the index score),
#       [11] table_id, [12] status, [13] the grant's token hash, [14] its player, [15] quiet_for,
#       [16] the count's limit, [17] its window, [18] the new version, [19..] the records, then the
#       row's fields and values
# Returns {1, new_version, old_stamp, hash, ...} | {0, current_version} (conflict)
#       | {2, applied_version} (repeat) | {3, seconds until the count's window ends} (over the count)
# The request is counted first, whatever follows (a conflict, a repeat, the append): the API's
# per-token move limit (api/http/limits.py) costs a move no round trip and no write of its own. Over the
# limit a repeat still gets its first answer, and nothing else happens. So it does when the store
# refuses the step's first write (full: maxmemory, where every write is refused and reads are not):
# the count and the key's SET are pcalls, and a refused one reads the key as a repeat would.
# The log's length is its version: this step alone adds entries, versions 1..n with no gap, and
# nothing trims the stream (compaction drops it whole), so XLEN (O(1), a number) tells the version
# where reading the last entry back would copy its record. Each redis.call is most of the step's
# cost, so the step makes as few as it can: the listeners set in one read; the idempotency key set
# and a repeat found in one (SET NX GET, Redis 7.0 as SPUBLISH: a repeat gets the key's value and
# sets nothing; one at an older version, the common repeat, is told apart from a conflict by a GET
# then); the stamp read from the hash's own HGETALL, not a HGET before it. The key is set before the
# XADDs: one that failed would leave a key that names no append, but an XADD of ID expected + i
# after XLEN said expected cannot fail (and under maxmemory the SET, the step's first write, is the
# one refused, with nothing written).
_APPEND = """
local stream, idem_key, index, status_bucket, counts = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local tokens, listeners, counter, row, acked = KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local first = 11
local expected, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local channel, notice, idem_value, idem_ttl = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local stamp, idem, publish = ARGV[7] == '1', ARGV[8] == '1', ARGV[9]
local created_at, table_id, status = ARGV[10], ARGV[11], ARGV[12]
local token_hash, player, quiet_for = ARGV[13], ARGV[14], ARGV[15]
local count_limit, count_window, new_version = ARGV[16], ARGV[17], ARGV[18]
local function repeated(seen)
  return {2, tonumber(string.match(seen, '"version"%s*:%s*(%d+)') or -1)}
end
local function repeat_or(answer)
  local seen = idem and redis.call('GET', idem_key)
  if seen then return repeated(seen) end
  return answer
end
if count_limit ~= '' then
  local count = redis.pcall('INCR', counter)
  if type(count) == 'table' then return repeat_or(count) end
  if count == 1 then redis.call('EXPIRE', counter, count_window) end
  if count > tonumber(count_limit) then return repeat_or({3, redis.call('TTL', counter)}) end
end
local current = redis.call('XLEN', stream)
if current ~= expected then return repeat_or({0, current}) end
if idem then
  local seen = redis.pcall('SET', idem_key, idem_value, 'NX', 'GET', 'EX', idem_ttl)
  if type(seen) == 'table' then return repeat_or(seen) end
  if seen then return repeated(seen) end
end
if acked ~= stream then redis.call('SET', acked, expected, 'NX') end
for i = 1, n - 1 do
  redis.call('XADD', stream, tostring(expected + i) .. '-0', 'e', ARGV[18 + i])
end
redis.call('XADD', stream, new_version .. '-0', 'e', ARGV[18 + n])
if created_at ~= '' then
  redis.call('ZADD', index, 'NX', created_at, table_id)
end
if status ~= '' then
  local old = redis.call('HGET', status_bucket, table_id)
  if old ~= status then
    redis.call('HSET', status_bucket, table_id, status)
    if old then redis.call('HINCRBY', counts, old, -1) end
    redis.call('HINCRBY', counts, status, 1)
  end
end
if token_hash ~= '' then
  redis.call('HSET', tokens, token_hash, player)
end
if #ARGV > 18 + n then
  redis.call('HSET', row, unpack(ARGV, 19 + n, #ARGV))
end
if channel ~= '' then
  local alone = false
  if quiet_for ~= '' then
    local heard = redis.call('SMEMBERS', listeners)
    alone = #heard == 1 and heard[1] == quiet_for
  end
  if not alone then redis.call(publish, channel, notice) end
end
local out = {1, expected + n, 0}
for i = first, #KEYS do
  out[#out + 1] = redis.call('HGETALL', KEYS[i])
end
if stamp then
  local hash, at = out[4], nil
  for i = 1, #hash, 2 do
    if hash[i] == 'version' then at = i + 1 break end
  end
  out[3] = at and tonumber(hash[at]) or 0
  if expected + n > out[3] then
    redis.call('HSET', KEYS[first], 'version', new_version)
    if not at then at = #hash + 2; hash[at - 1] = 'version' end
    hash[at] = new_version
  end
end
return out
"""


# KEYS: [1] the acknowledged mark, [2] the listeners set. ARGV: [1] a version now acknowledged,
# [2] the notice's channel ('' = none), [3] the notice, [4] 'SPUBLISH' or 'PUBLISH', [5] the append's
# quiet_for ('' = none). Raises the mark to the version (never lowers it), then publishes the
# notice as the append's step would have (not when the appender is the table's only listener).
_ACKED = """
local at = tonumber(redis.call('GET', KEYS[1]) or '-1')
if at < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) end
if ARGV[2] ~= '' then
  local alone = false
  if ARGV[5] ~= '' then
    local listeners = redis.call('SMEMBERS', KEYS[2])
    alone = #listeners == 1 and listeners[1] == ARGV[5]
  end
  if not alone then redis.call(ARGV[4], ARGV[2], ARGV[3]) end
end
return 0
"""

# KEYS: [1] the stream, [2] the acknowledged mark. ARGV: [1] the first entry id, [2] the last version
# ('' = the end), [3] COUNT. XRANGE up to the mark (the whole log when there is none).
_READ_ACKED = """
local stop = ARGV[2]
local acked = redis.call('GET', KEYS[2])
if acked then
  acked = tonumber(acked)
  if stop == '' or tonumber(stop) > acked then stop = tostring(acked) end
end
if stop == '' then stop = '+' else stop = stop .. '-0' end
return redis.call('XRANGE', KEYS[1], ARGV[1], stop, 'COUNT', ARGV[3])
"""


def change_notice(table_id: str, after: int, version: int, encoded: Sequence[str]) -> str:
    """The change notice of a batch appended after version ``after``: the new version, and the
    batch's records (their stored JSON) when they are small, so a process whose copy of the
    table is at ``after`` folds them in and needs no read of the log (api/sockets/fanout.py). The notice
    stays inside the server (Redis pub/sub to the API's listeners), like the log it copies."""
    notice: dict[str, object] = {"table_id": table_id, "version": version}
    if sum(len(e) for e in encoded) <= NOTICE_RECORDS_MAX:
        notice.update(after=after, records=encoded)
    return orjson.dumps(notice).decode()


def flat_hash(flat: list[bytes | str]) -> dict[str, str]:
    """A flat HGETALL reply from Lua as a dict of strings."""
    texts = iter([v.decode() if isinstance(v, bytes) else v for v in flat])
    return dict(zip(texts, texts, strict=True))


def _stream_entries(reply: Reply, key: str, after: int) -> list[Entry]:
    """``[(version, record), ...]`` from a raw XRANGE reply of ``key`` read after version ``after``, checked
    to be that: a list of ``[id, [field, value, ...]]`` holding an ``e`` field, versions rising from after
    ``after``. Anything else is another command's reply, raised as ``WrongReply`` (never read as a log)."""
    if type(reply) is not list:
        raise WrongReply("XRANGE", key, reply)
    out: list[Entry] = []
    last = after
    for entry in reply:
        if type(entry) is not list or len(entry) != 2 or type(entry[0]) is not bytes or type(entry[1]) is not list:
            raise WrongReply("XRANGE", key, reply)
        flat = entry[1]
        try:
            version = _entry_version(entry[0])
            record = flat[flat.index(b"e") + 1]
        except (ValueError, IndexError):
            raise WrongReply("XRANGE", key, reply) from None
        if version <= last:
            raise WrongReply("XRANGE", key, reply)
        out.append((version, record))
        last = version
    return out


def _entry_version(entry_id: bytes | str) -> int:
    return int(as_text(entry_id).split("-", 1)[0])


@dataclass(frozen=True)
class Appended:
    """What one append did: the new version, and the side hashes it read back in its step."""

    version: int
    stamped_over: int = 0  # the stamp hash's ``version`` before this append
    hashes: tuple[dict[str, str], ...] = ()  # one per key of ``read_back``, as it was after the append


# KEYS: [1] an idempotency key. Sets it again as it is (a write the replicas must copy, after
# the append that set it: WAIT after this covers that append). Returns its value or nil.
_TOUCH = """
local seen = redis.call('GET', KEYS[1])
if seen then redis.call('SET', KEYS[1], seen, 'KEEPTTL') end
return seen
"""


class EventStore:
    """A table's log in Redis (``redis`` may decode responses or not).

    ``replica_acks``: how many replicas must hold an append before it counts (0: none, no
    WAIT); ``ack_timeout``: seconds to wait for them (events/replication.py).
    """

    def __init__(self, redis: Client, *, replica_acks: int = 0, ack_timeout: float = replication.ACK_TIMEOUT,
                 unreplicated: str = replication.ACCEPT):
        if unreplicated not in replication.POLICIES:
            raise ValueError(f"ESCOBA_UNREPLICATED must be one of {', '.join(replication.POLICIES)}")
        self.redis = redis
        self.replica_acks = replica_acks
        self.ack_timeout = ack_timeout
        self.unreplicated = unreplicated  # ESCOBA_UNREPLICATED (events/replication.py)
        self._append = redis.register_script(_APPEND)
        self._touch = redis.register_script(_TOUCH)
        self._acked = redis.register_script(_ACKED)
        self._read_acked = redis.register_script(_READ_ACKED)
        self._scripts: dict[str, Script] = {}  # run_script's, by their text
        self._direct = Direct.for_client(redis)  # the append's EVALSHA without redis-py's per-command work
        self.slots = SlotDirectory(redis)
        # sharded pub/sub on a cluster: a notice goes only to the shard that owns the table
        self.publish = "SPUBLISH" if is_cluster(redis) else "PUBLISH"

    # --- writing -----------------------------------------------------------
    def append(self, append: Append, meanwhile: Callable[[], None] | None = None) -> Appended:
        """Run ``append``'s step: every record after ``expected_version``, with every part it names,
        or nothing. What it did (``Appended``: the new version, the hashes read back).

        ``meanwhile()``: the caller's work while the step is in flight, run once, after the step is sent and
        before its reply is awaited where the connection allows (one Redis, the direct way: events/direct.py),
        else just before it is sent; whatever it raises is logged, never the append's.

        Raises VersionConflict when the table is at another version, AlreadyApplied when the
        idempotency key was used (``version``: the first request's), CountOver when ``count`` went
        over its limit (and the request is no repeat); nothing is appended then (the count aside).
        ValueError for an ``Append`` the step must not run: no records, versions that do not follow
        ``expected_version``, a key that is not the table's own (another cluster slot).
        """
        table_id = append.table_id
        waits = self.replica_acks > 0
        keys, args, channel, message = self._step_slots(append, waits)
        if append.created_at is not None:
            self.slots.note(table_id)
        stream = keys[0]
        meanwhile = _quiet(meanwhile) if meanwhile is not None else None
        if waits:
            if meanwhile is not None:
                meanwhile()
            waited = replication.run_then_wait(
                self.redis, stream, ("EVALSHA", self._append.sha, len(keys), *keys, *args),
                self.replica_acks, self.ack_timeout, script=_APPEND, mark=confirmed_key(table_id))
            reply, node = waited[0], waited[2]
        else:
            reply = self._run(self._append, keys, args, meanwhile)
        status, version = int(reply[0]), int(reply[1])
        if status == 3:
            raise CountOver(max(1, version))
        if status == 0:
            raise VersionConflict(version)
        if status == 2:  # (the WAIT above counted an older write: the caller confirms the repeat)
            raise AlreadyApplied(version)
        if waits:
            replication.settle(table_id, version, waited, self.replica_acks, self.unreplicated)
            self._mark_acked(node, table_id, version, channel, message, append.quiet_for)
        return Appended(version, int(reply[2]), tuple(flat_hash(flat) for flat in reply[3:]))

    def _step_slots(self, append: Append, waits: bool) -> tuple[list[str], list[Arg], str, str]:
        """The step's KEYS and ARGV (see ``_APPEND``) for ``append``, checked; and its notice's
        channel and text ('' when it has none), which follow the replicas' acknowledgement when
        ``waits`` (the step then publishes nothing)."""
        table_id, expected, records = append.table_id, append.expected_version, append.records
        if not records:
            raise ValueError("append needs at least one record")
        for i, record in enumerate(records):
            if record.get("version") != expected + i + 1:
                raise ValueError(f"record {i} carries version {record.get('version')}, expected {expected + i + 1}")
        read_back = append.read_back
        if append.stamp and not read_back:
            raise ValueError("stamp needs a hash to stamp (read_back[0])")
        prefix = table_key(table_id, "")
        if any(not key.startswith(prefix) for key in read_back):
            raise ValueError("read_back takes only the table's own keys (one cluster slot)")
        idem, count, row = append.idempotency, append.count, append.row
        if idem is not None and not idem.key.startswith(prefix):
            raise ValueError("the idempotency key must be the table's own (one cluster slot)")
        if count is not None and not count.key.startswith(prefix):
            raise ValueError("the count's counter must be the table's own (one cluster slot)")
        if row is not None and not row[0].startswith(prefix):
            raise ValueError("the row must be the table's own hash (one cluster slot)")
        new_version = expected + len(records)
        stream = events_key(table_id)
        keys = [stream, idem.key if idem is not None else stream, index_key(table_id),
                bucket_key(STATUS, table_id), bucket_key(COUNTS, table_id), tokens_key(table_id),
                listeners_key(table_id), count.key if count is not None else stream,
                row[0] if row is not None else stream, acked_key(table_id) if waits else stream, *read_back]
        encoded = append.encoded if append.encoded is not None else [dumps(r) for r in records]
        channel = changes_channel(table_id) if append.notice else ""
        message = change_notice(table_id, expected, new_version, encoded) if append.notice else ""
        token_hash, player = append.grant if append.grant is not None else ("", "")
        args: list[Arg] = [
            expected, len(records), "" if waits else channel, message,
            idem.value if idem is not None else "", idem.ttl if idem is not None else 0,
            "1" if append.stamp else "0", "1" if idem is not None else "0", self.publish,
            "" if append.created_at is None else repr(float(append.created_at)), table_id,
            append.status or "", token_hash, player, append.quiet_for or "",
            count.limit if count is not None else "", count.window if count is not None else "",
            new_version, *encoded]
        if row is not None:
            for name, value in row[1].items():
                args.extend((name, value))
        return keys, args, channel, message

    def run_script(self, text: str, keys: list[str], args: Sequence[Arg | bytes]) -> Reply:
        """The Lua ``text`` run on keys of one table's (one cluster slot), as the append's step is run."""
        script = self._scripts.get(text)
        if script is None:
            script = self._scripts.setdefault(text, self.redis.register_script(text))
        return self._run(script, keys, args)

    def _run(self, script: Script, keys: list[str], args: Sequence[Arg | bytes],
             meanwhile: Callable[[], None] | None = None) -> Reply:
        """``script(keys=keys, args=args)``, on a direct connection when there is one (events/direct.py);
        a server that lacks the script (restarted, SCRIPT FLUSH) is given it, as redis-py's Script does.
        ``meanwhile()`` once: after the command is sent on a direct connection, else before it."""
        if self._direct is None:
            if meanwhile is not None:
                meanwhile()
            return script(keys=keys, args=args)
        try:
            return self._direct.execute("EVALSHA", script.sha, len(keys), *keys, *args, meanwhile=meanwhile)
        except NoScriptError:  # (``meanwhile`` ran: the command was sent)
            script.sha = self.redis.script_load(script.script)
            return self._direct.execute("EVALSHA", script.sha, len(keys), *keys, *args)

    def confirm(self, table_id: str, actor: str, key: str) -> int | None:
        """The version a request with this idempotency key made (None: no such request), once
        ``replica_acks`` replicas hold it: a repeat answers the first result only when that
        result is acknowledged. Raises NotAcknowledged when they do not in time."""
        if not self.replica_acks:
            return self.idempotent_version(table_id, actor, key)
        idem = idempotency_key(table_id, actor, key)
        if self.redis.get(idem) is None:  # the common case: no WAIT for a write this is not
            return None
        waited = replication.run_then_wait(
            self.redis, idem, ("EVALSHA", self._touch.sha, 1, idem), self.replica_acks, self.ack_timeout,
            script=_TOUCH, mark=confirmed_key(table_id))
        raw = waited[0]
        if raw is None:  # expired in between
            return None
        version = int(json.loads(as_text(raw))["version"])
        replication.settle(table_id, version, waited, self.replica_acks, self.unreplicated)
        self._mark_acked(waited[2], table_id, version)
        return version

    def confirm_log(self, table_id: str, version: int) -> None:
        """With ``replica_acks``: return once that many replicas hold the table's log as it is now,
        else raise NotAcknowledged. A job that finds its table moved on follows the log only then:
        the move that moved it may be an append the replicas never acknowledged (its job retried
        while a replica was away), which a failover would take back. A write of its own on the
        slot's master, then ``WAIT``: a replica that acknowledged it holds every earlier write."""
        if not self.replica_acks:
            return
        key = confirmed_key(table_id)
        waited = replication.run_then_wait(self.redis, key, ("SET", key, version, "PX", CONFIRMED_TTL_MS),
                                           self.replica_acks, self.ack_timeout, mark=key)
        replication.settle(table_id, version, waited, self.replica_acks, self.unreplicated)
        self._mark_acked(waited[2], table_id, version)

    def _mark_acked(self, node: redis_lib.Redis, table_id: str, version: int, channel: str = "", message: str = "",
                    quiet_for: str | None = None) -> None:
        """``version`` is acknowledged: views may read up to it (``acked_key``), and the change notice,
        if any, is published; one step on the node that acknowledged it. Best effort: the move stands,
        and a mark not raised now is by the table's next acknowledged write (views wait until then)."""
        keys = [acked_key(table_id), listeners_key(table_id)]
        args: list[Arg] = [version, channel, message, self.publish, quiet_for or ""]
        try:
            try:
                node.evalsha(self._acked.sha, len(keys), *keys, *args)
            except NoScriptError:
                node.script_load(_ACKED)
                node.evalsha(self._acked.sha, len(keys), *keys, *args)
        except Exception:
            log.warning("table %s: could not mark version %s acknowledged%s", table_id, version,
                        " or publish its change notice" if channel else "", exc_info=True)

    def listen(self, table_id: str, listener: str) -> None:
        """``listener`` (an API process's hub) hears the table's notices: an append by another
        process publishes them. Called once its subscription is confirmed, before it reads the log."""
        self.redis.sadd(listeners_key(table_id), listener)

    def unlisten(self, table_id: str, listener: str) -> None:
        """``listener`` no longer hears the table (a process that dies without this leaves its id:
        the table's appends then publish as if it listened, which costs a notice, nothing more)."""
        self.redis.srem(listeners_key(table_id), listener)

    def notify(self, table_id: str, version: int) -> None:
        """Publish a change notice of ``version`` (no records: a listener loads the table)."""
        message = orjson.dumps({"table_id": table_id, "version": version}).decode()
        self._publish(replication.node_client(self.redis, events_key(table_id)), table_id,
                      changes_channel(table_id), message)

    def _publish(self, client: redis_lib.Redis, table_id: str, channel: str, message: str) -> None:
        # the move stands and is acknowledged: a lost notice only delays sockets to the next one
        try:
            client.execute_command(self.publish, channel, message)
        except Exception:
            log.warning("table %s: could not publish a change notice", table_id, exc_info=True)

    def add_to_index(self, table_id: str, score: float) -> None:
        """Index a table made without ``created_at`` (tools, old data): the create step does it."""
        self.slots.note(table_id)
        self.redis.zadd(index_key(table_id), {table_id: score}, nx=True)

    # --- reading -----------------------------------------------------------
    def read(self, table_id: str, after: int = 0, until: int | None = None) -> list[Record]:
        """The records after version ``after`` up to ``until`` (inclusive), in order."""
        return [loads(raw, version=version) for version, raw in self.read_raw(table_id, after, until)]

    def read_raw(self, table_id: str, after: int = 0, until: int | None = None,
                 limit: int | None = None, *, acknowledged: bool = False) -> list[Entry]:
        """``[(version, record JSON), ...]`` after ``after`` up to ``until``, at most ``limit``:
        undecoded, for the fast decoder (events.decoding) and the compactor. ``acknowledged`` (a
        view's read) with replica acks: only up to the table's acknowledged mark (``acked_key``)."""
        if acknowledged and self.replica_acks:
            return self._read_acknowledged(table_id, after, until, limit)
        key = events_key(table_id)
        end = "+" if until is None else f"{until}-0"
        start = f"{after + 1}-0"
        if until is not None and until <= after:
            return []
        out: list[Entry] = []
        while True:
            count = READ_CHUNK if limit is None else min(READ_CHUNK, limit - len(out))
            if count <= 0:
                return out
            if self._direct is not None:  # every load reads its tail (a GET, a socket's first view): no redis-py work
                entries = self._direct.execute("XRANGE", key, start, end, "COUNT", count)
                out.extend(_stream_entries(entries, key, after if not out else out[-1][0]))
            else:
                entries = self.redis.xrange(key, min=start, max=end, count=count) or []
                for entry_id, fields in entries:  # (redis-py's reply: ids and fields, bytes or str)
                    if entry_id is None or not fields:
                        raise WrongReply("XRANGE", key, entries)
                    out.append((_entry_version(entry_id), fields.get(b"e") or fields["e"]))
            if len(entries) < count:
                return out
            start = f"{out[-1][0] + 1}-0"

    def _read_acknowledged(self, table_id: str, after: int, until: int | None,
                           limit: int | None) -> list[Entry]:
        if until is not None and until <= after:
            return []
        keys = [events_key(table_id), acked_key(table_id)]
        out: list[Entry] = []
        start = f"{after + 1}-0"
        while True:
            count = READ_CHUNK if limit is None else min(READ_CHUNK, limit - len(out))
            if count <= 0:
                return out
            entries = self._run(self._read_acked, keys, [start, "" if until is None else until, count])
            out.extend(_stream_entries(entries, keys[0], after if not out else out[-1][0]))
            if len(entries) < count:
                return out
            start = f"{out[-1][0] + 1}-0"

    def version(self, table_id: str) -> int:
        """The table's current version (0: no such table)."""
        last = self.redis.xrevrange(events_key(table_id), count=1)
        return _entry_version(last[0][0] or b"0-0") if last else 0

    def exists(self, table_id: str) -> bool:
        return bool(self.redis.exists(events_key(table_id)))

    def idempotent_version(self, table_id: str, actor: str, key: str) -> int | None:
        """The version a request with this idempotency key made, or None."""
        raw = self.redis.get(idempotency_key(table_id, actor, key))
        if raw is None:
            return None
        return int(json.loads(as_text(raw))["version"])

    def table_ids(self) -> list[str]:
        """Every table in the index, oldest first (every bucket read, pipelined per node)."""
        scored: list[tuple[float, str]] = []
        for pairs in read_buckets(self.redis, self.slots.buckets(TABLES),
                                  lambda pipe, key: pipe.zrange(key, 0, -1, withscores=True)):
            scored.extend((float(score), as_text(member)) for member, score in pairs)
        return [table_id for _, table_id in sorted(scored)]

    def status_counts(self) -> dict[str, int]:
        """Tables by status, summed over the buckets' counters (bounded: a call per bucket)."""
        totals: dict[str, int] = {}
        for counts in read_buckets(self.redis, self.slots.buckets(COUNTS), lambda pipe, key: pipe.hgetall(key)):
            for status, n in (counts or {}).items():
                status = as_text(status)
                totals[status] = totals.get(status, 0) + int(n)
        return {status: n for status, n in totals.items() if n}


def _quiet(work: Callable[[], None]) -> Callable[[], None]:
    """``work``, whatever it raises logged: it runs between a step's send and its reply, where an error must
    not pass for the step's."""

    def run() -> None:
        try:
            work()
        except Exception:
            log.exception("the work beside an append failed")

    return run
