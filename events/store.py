"""The event store: one Redis stream per table, appended to by one Lua step.

Keys (all hash-tagged by the table id, so a table lives in one cluster slot):

- ``table:{ID}:events``   the log: a stream, entry id ``<version>-0``, field ``e`` = record JSON
- ``table:{ID}:idem:<actor>:<key>``  ``{"version": N}`` of a request already applied
- ``table:{ID}:changes``  the pub/sub channel of change notices
- ``escoba:tables``       sorted set of table ids (score: creation time)

``append`` is a single Lua script: it checks the table's current version
against the expected one, refuses a request whose idempotency key is already
used, XADDs every record, sets the idempotency key and publishes the change
notice, all in one step. Either the whole batch is in the log or none of it.
The same code runs on real Redis and on fakeredis[lua].
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import orjson

from .records import dumps, loads

TABLE_INDEX = "escoba:tables"
IDEMPOTENCY_TTL = 24 * 3600
READ_CHUNK = 1000


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


def idempotency_key(table_id: str, actor: str, key: str) -> str:
    return table_key(table_id, f"idem:{actor}:{key}")


class VersionConflict(Exception):
    """The table's version is not the one the append expected."""

    def __init__(self, current: int):
        super().__init__(f"the table is at version {current}")
        self.current = current


class AlreadyApplied(Exception):
    """The idempotency key was used already: the request was applied at ``version``."""

    def __init__(self, version: int):
        super().__init__(f"already applied at version {version}")
        self.version = version


# KEYS[1] the stream; KEYS[2] the idempotency key if ARGV[8] is '1'; then the hashes to read back
# ARGV[1] expected version, ARGV[2] number of records, ARGV[3] channel ('' = no notice),
# ARGV[4] notice message, ARGV[5] idempotency value, ARGV[6] its ttl (seconds),
# ARGV[7] '1' = stamp the new version in the first hash to read back, ARGV[8] see KEYS[2],
# ARGV[9..] records
# Returns {1, new_version, old_stamp, hash, ...} | {0, current_version} (conflict)
#       | {2, applied_version} (repeat)
_APPEND = """
local expected = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local idem = ARGV[8] == '1'
local first = idem and 3 or 2
if idem then
  local seen = redis.call('GET', KEYS[2])
  if seen then
    local v = string.match(seen, '"version"%s*:%s*(%d+)')
    return {2, tonumber(v or -1)}
  end
end
local current = 0
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last > 0 then
  current = tonumber(string.match(last[1][1], '^(%d+)-'))
end
if current ~= expected then
  return {0, current}
end
for i = 1, n do
  redis.call('XADD', KEYS[1], tostring(expected + i) .. '-0', 'e', ARGV[8 + i])
end
if idem then
  redis.call('SET', KEYS[2], ARGV[5], 'EX', tonumber(ARGV[6]))
end
if ARGV[3] ~= '' then
  redis.call('PUBLISH', ARGV[3], ARGV[4])
end
local out = {1, expected + n, 0}
if ARGV[7] == '1' then
  out[3] = tonumber(redis.call('HGET', KEYS[first], 'version') or '0')
  if expected + n > out[3] then redis.call('HSET', KEYS[first], 'version', expected + n) end
end
for i = first, #KEYS do
  out[#out + 1] = redis.call('HGETALL', KEYS[i])
end
return out
"""


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def flat_hash(flat) -> dict[str, str]:
    """A flat HGETALL reply from Lua as a dict of strings."""
    return {_text(flat[i]): _text(flat[i + 1]) for i in range(0, len(flat), 2)}


def _entry_version(entry_id) -> int:
    return int(_text(entry_id).split("-", 1)[0])


@dataclass(frozen=True)
class Appended:
    """What one append did: the new version, and the side hashes it read back in its step."""

    version: int
    stamped_over: int = 0  # the stamp hash's ``version`` before this append
    hashes: tuple = ()  # one dict per key of ``read_back``, as it was after the append


class EventStore:
    """A table's log in Redis (``redis`` may decode responses or not)."""

    def __init__(self, redis):
        self.redis = redis
        self._append = redis.register_script(_APPEND)

    # --- writing -----------------------------------------------------------
    def append(self, table_id: str, expected_version: int, records: list[dict], *,
               idempotency: tuple | None = None, notice: bool = True) -> int:
        """Append ``records`` after ``expected_version``; the new version.

        ``idempotency`` is ``(key, value, ttl)`` or ``(key, value)``: the key is
        set in the same step. Raises VersionConflict when the table is at
        another version (nothing appended), AlreadyApplied when the key exists.
        """
        return self.append_reading(table_id, expected_version, records, idempotency=idempotency,
                                   notice=notice).version

    def append_reading(self, table_id: str, expected_version: int, records: list[dict], *,
                       idempotency: tuple | None = None, notice: bool = True,
                       read_back: tuple[str, ...] = (), stamp: bool = False) -> Appended:
        """``append``, also reading back hashes of the same table in the same step.

        ``read_back``: keys of the table's own (``table_key``), so a hook that follows
        every append (the workers' timers) needs no round trip of its own. With
        ``stamp`` the first of them gets field ``version`` = the new version first
        (never lowered): a later writer of that hash can tell it is out of date.
        """
        if not records:
            raise ValueError("append needs at least one record")
        for i, record in enumerate(records):
            if record.get("version") != expected_version + i + 1:
                raise ValueError(
                    f"record {i} carries version {record.get('version')}, "
                    f"expected {expected_version + i + 1}"
                )
        if stamp and not read_back:
            raise ValueError("stamp needs a hash to stamp (read_back[0])")
        prefix = table_key(table_id, "")
        if any(not key.startswith(prefix) for key in read_back):
            raise ValueError("read_back takes only the table's own keys (one cluster slot)")
        new_version = expected_version + len(records)
        keys = [events_key(table_id)]
        idem_value, ttl = "", 0
        if idempotency is not None:
            idem_key, idem_value, *rest = idempotency
            keys.append(idem_key)
            ttl = int(rest[0]) if rest else IDEMPOTENCY_TTL
            if not isinstance(idem_value, str):
                idem_value = json.dumps(idem_value, separators=(",", ":"))
        channel = changes_channel(table_id) if notice else ""
        message = orjson.dumps({"table_id": table_id, "version": new_version}).decode() if notice else ""
        args = [expected_version, len(records), channel, message, idem_value, ttl,
                "1" if stamp else "0", "1" if idempotency is not None else "0"]
        args.extend(dumps(r) for r in records)
        reply = self._append(keys=[*keys, *read_back], args=args)
        status, version = int(reply[0]), int(reply[1])
        if status == 0:
            raise VersionConflict(version)
        if status == 2:
            raise AlreadyApplied(version)
        return Appended(version, int(reply[2]), tuple(flat_hash(flat) for flat in reply[3:]))

    def add_to_index(self, table_id: str, score: float) -> None:
        self.redis.zadd(TABLE_INDEX, {table_id: score}, nx=True)

    # --- reading -----------------------------------------------------------
    def read(self, table_id: str, after: int = 0, until: int | None = None) -> list[dict]:
        """The records after version ``after`` up to ``until`` (inclusive), in order."""
        return [loads(raw, version=version) for version, raw in self.read_raw(table_id, after, until)]

    def read_raw(self, table_id: str, after: int = 0, until: int | None = None,
                 limit: int | None = None) -> list[tuple[int, bytes]]:
        """``[(version, record JSON), ...]`` after ``after`` up to ``until``, at most ``limit``:
        undecoded, for the fast decoder (events.decoding) and the compactor."""
        key = events_key(table_id)
        end = "+" if until is None else f"{until}-0"
        start = f"{after + 1}-0"
        if until is not None and until <= after:
            return []
        out: list[tuple[int, bytes]] = []
        while True:
            count = READ_CHUNK if limit is None else min(READ_CHUNK, limit - len(out))
            if count <= 0:
                return out
            entries = self.redis.xrange(key, min=start, max=end, count=count)
            for entry_id, fields in entries:
                out.append((_entry_version(entry_id), fields.get(b"e", fields.get("e"))))
            if len(entries) < count:
                return out
            start = f"{out[-1][0] + 1}-0"

    def version(self, table_id: str) -> int:
        """The table's current version (0: no such table)."""
        last = self.redis.xrevrange(events_key(table_id), count=1)
        return _entry_version(last[0][0]) if last else 0

    def exists(self, table_id: str) -> bool:
        return bool(self.redis.exists(events_key(table_id)))

    def idempotent_version(self, table_id: str, actor: str, key: str) -> int | None:
        """The version a request with this idempotency key made, or None."""
        raw = self.redis.get(idempotency_key(table_id, actor, key))
        if raw is None:
            return None
        return int(json.loads(_text(raw))["version"])

    def table_ids(self) -> list[str]:
        """Every table in the index, oldest first."""
        return [_text(x) for x in self.redis.zrange(TABLE_INDEX, 0, -1)]
