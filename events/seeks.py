"""Seeks and pools: every key of quick pairing, and the one-slot Lua steps that change them.

A **pool** holds the seeks that may sit at one table together: the same preset, player count,
rated flag and settings (docs/api.md, "Quick pairing"). Its name is
``<preset>:<players>:<rated 0|1>:<settings hash>`` (``:c`` after it for correspondence seeks,
which wait in the lobby, never in a wave), and all its keys share the hash tag
``{pool:<name>}``: one cluster slot, so a wave reads, chooses and moves its seeks in one slot.

- ``seeks:{pool:N}:meta``     hash: preset, players, rated, settings (JSON): what its tables are.
- ``seeks:{pool:N}:info``     hash: seek id -> a JSON array ``[created, bot_after, rating, identity,
  last]`` (``info_record``): the live seeks waiting, and all a wave reads to choose them, in one read
  for the whole pool (identity null for a guest: its seek id; last: whom the account played last,
  null for none).
  Seeks written before 2026-12-06 hold a JSON object here, with these names and more
  (player, name, grant): ``Seeks.live`` reads both (workers are upgraded before the API: an old
  worker cannot read the new form; docs/operations.md). A seat's player, name and grant are read
  from the seek's own hash when its table is made (``Seeks.spec``), not by the wave.
- ``seeks:{pool:N}:seen``     sorted set: seek id -> when its holder was last heard (a poll, a socket).
- ``seeks:{pool:N}:s:<id>``   hash: the seek itself (status, the hash of its token, the hash of the
  seat token it will be given, name, player, identity, rating, table_id, seat).
- ``seeks:{pool:N}:making``   hash: table id -> ``<seek id>,... <spec JSON>``: the seeks in seat
  order and what the wave said of the table (when, whether bots fill it), from the step that chose
  its seeks until the table is made and started (a crashed maker's is found and made again).
  ``Seeks.spec`` makes the whole spec of it; one written before 2026-12-06 is the whole spec as JSON.
- ``seeks:{pool:N}:last``     hash: identity -> JSON list of whom it last played (accounts only; written by
  the wave's step for the tables it takes).
- ``seeks:{pool:N}:wave``     the claim of the wave in progress (``SET NX PX``): one at a time.
- ``seeks:{pool:N}:trigger``  a short marker: a wave was asked for at once (enough wait).

The pools with seeks waiting are found by the workers' ticker in a due index like the timers'
(``workers/index.py``): ``seeks:{pb<n>}:due[:<queue shard>]`` and ``:claims``, 16 buckets by the
pool name's crc32, each its own slot.

The lobby (correspondence seeks): ``lobby:{lb<n>}:open`` (sorted set seek id -> created) and
``lobby:{lb<n>}:rows`` (seek id -> the row it shows), 16 buckets by the seek id's crc32.

Tokens are kept only as hashes. A seek's seat token is derived from the seek's own token
(``seat_token``): the store keeps the SHA-256 of both, the seeker's poll derives the seat token
again, and so nobody who reads the store can take the seat.

Statuses: ``waiting`` (contract), ``matched`` (chosen by a wave, its table being made: shown as
``waiting``), ``paired``, ``cancelled``, ``expired`` (its holder gone, or its 7 days over).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import zlib
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from .connection import Client
from .text import as_text

WAITING, MATCHED, PAIRED, CANCELLED, EXPIRED = "waiting", "matched", "paired", "cancelled", "expired"
GONE_AFTER = 10.0  # seconds without a poll or a socket: the holder is gone (docs/api.md)
BOT_AFTER = 30  # default seconds before a lone live seek gets bots
CORRESPONDENCE_DAYS = 7
CORRESPONDENCE_TTL = CORRESPONDENCE_DAYS * 86400
LIVE_TTL = 86400  # a live seek's hash is kept a day after it was made or paired (its seeker reads it)
POOL_BUCKETS = 16
LOBBY_BUCKETS = 16
TRIGGER_MS = 250  # at most one "at once" wave asked for per pool in this long
COMMIT_GROUPS = 250  # tables a wave takes in one Lua step (a few ms of Redis each)


# --- names -------------------------------------------------------------------------

def settings_hash(settings: dict[str, Any]) -> str:
    """Eight hex digits naming a pool's settings (the chosen overrides, canonical JSON)."""
    canonical = json.dumps(settings or {}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(canonical.encode()).hexdigest()[:8]


@dataclass(frozen=True)
class Pool:
    preset: str
    players: int
    rated: bool
    settings: dict[str, Any]
    correspondence: bool = False

    @property
    def name(self) -> str:
        base = f"{self.preset}:{self.players}:{int(self.rated)}:{settings_hash(self.settings)}"
        return base + (":c" if self.correspondence else "")

    def meta(self) -> dict[str, str]:
        return {"preset": self.preset, "players": str(self.players), "rated": str(int(self.rated)),
                "settings": json.dumps(self.settings, sort_keys=True),
                "correspondence": str(int(self.correspondence))}


def pool_from_meta(meta: dict[bytes | str, bytes | str]) -> Pool:
    m = {as_text(k): as_text(v) for k, v in meta.items()}
    return Pool(m["preset"], int(m["players"]), m["rated"] == "1", json.loads(m["settings"]),
                m.get("correspondence") == "1")


def tag(pool_name: str) -> str:
    return "{pool:" + pool_name + "}"


def key(pool_name: str, name: str) -> str:
    return f"seeks:{tag(pool_name)}:{name}"


def seek_key(pool_name: str, seek_id: str) -> str:
    return key(pool_name, f"s:{seek_id}")


def new_seek_id(pool_name: str) -> str:
    """``<pool name with . for :>.<random>``: the id says where its keys are (no directory to read)."""
    rand = secrets.token_urlsafe(9).replace("-", "x").replace("_", "y")  # no "." and nothing a flag reads
    return pool_name.replace(":", ".") + "." + rand


def pool_of(seek_id: str) -> str | None:
    """The pool name a seek id names, or None when it names none (an id we never made)."""
    parts = seek_id.split(".")
    if len(parts) not in (5, 6) or not all(parts) or len(seek_id) > 80:
        return None
    if len(parts) == 6 and parts[4] != "c":
        return None
    if not parts[1].isdigit() or parts[2] not in ("0", "1") or len(parts[3]) != 8:
        return None
    return ":".join(parts[:-1])


def _pool_named(seek_id: str) -> str:
    """The pool of a seek id read before (a step on a seek the caller found): ValueError if it names none."""
    name = pool_of(seek_id)
    if name is None:
        raise ValueError(f"{seek_id!r} names no pool")
    return name


def pool_bucket(pool_name: str) -> int:
    return zlib.crc32(pool_name.encode()) % POOL_BUCKETS


def due_key(bucket: int, shard: int = 0) -> str:
    return f"seeks:{{pb{bucket}}}:due" + (f":{shard}" if shard else "")


def claims_key(bucket: int, shard: int = 0) -> str:
    return f"seeks:{{pb{bucket}}}:claims" + (f":{shard}" if shard else "")


def lobby_bucket(seek_id: str) -> int:
    return zlib.crc32(seek_id.encode()) % LOBBY_BUCKETS


def lobby_open_key(bucket: int) -> str:
    return f"lobby:{{lb{bucket}}}:open"


def lobby_rows_key(bucket: int) -> str:
    return f"lobby:{{lb{bucket}}}:rows"


# --- tokens ------------------------------------------------------------------------

def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def seat_token(seek_token: str) -> str:
    """The seat token a seek's holder is given at its table: derived from the seek's token (which
    the store never holds), so only the holder can work it out."""
    mac = hmac.new(seek_token.encode(), b"escoba seek seat", hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac[:24]).decode()


def new_seek_token() -> str:
    return secrets.token_urlsafe(24)


# --- the steps (each one slot) -------------------------------------------------------

# KEYS: seek hash, seen, info, meta, trigger. ARGV: now, ttl, players, live ('1'/'0'),
# m (meta pairs), seek id, info JSON, trigger ms, m meta pairs, then the seek's field pairs.
# The seek is written; a live one waits in the pool (its entry in ``info`` is its place there).
# Returns {live seeks waiting, 1 when a wave should run at once (enough wait, and none was asked
# for in the last trigger ms)}.
_ADD = """
local m = tonumber(ARGV[5])
local meta = {}
for i = 1, 2 * m do meta[i] = ARGV[8 + i] end
redis.call('HSET', KEYS[4], unpack(meta))
local fields = {}
for i = 9 + 2 * m, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
redis.call('EXPIRE', KEYS[1], ARGV[2])
if ARGV[4] ~= '1' then return {0, 0} end
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[6])
redis.call('HSET', KEYS[3], ARGV[6], ARGV[7])
local n = redis.call('HLEN', KEYS[3])
local now = 0
if n >= tonumber(ARGV[3]) and redis.call('SET', KEYS[5], '1', 'NX', 'PX', ARGV[8]) then now = 1 end
return {n, now}
"""

# KEYS: seek hash, seen, info. ARGV: seek id, the status to set (cancelled or expired).
# Only a waiting seek changes: a matched one is at a table already. Returns the status it had.
_END = """
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'waiting' then
  redis.call('HSET', KEYS[1], 'status', ARGV[2])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('HDEL', KEYS[3], ARGV[1])
end
return status
"""

# The wave's step. KEYS: seen, info, making, last (the seeks' own hashes, in the same slot, are named
# from ARGV[1], their common prefix). ARGV: prefix, stale before (heard earlier: the holder is gone),
# the seeks to expire if still waiting and still unheard ("id,id,..."), the ttl of ``last``, then
# the groups, a line each: "<table id> <seek id>,... <identity>,... <spec JSON>" (the seeks in seat
# order; the identities, accounts only, may be empty; JSON has no raw newline).
# A group is taken only if every one of its seeks is still waiting and heard from: then they move
# to matched (with the table and seat) and leave the pool, the seats and spec are kept in ``making``,
# and each identity is noted as having played the others last. A seek taken by one group is no
# longer waiting, so no second group (of this wave, or of a worker racing it) can take it.
# Returns {expired, a "1" or "0" a group: taken or not}.
_COMMIT = """
local prefix, stale = ARGV[1], tonumber(ARGV[2])
local function drop(id)
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
end
local function heard(id)
  local seen = redis.call('ZSCORE', KEYS[1], id)
  return seen and tonumber(seen) >= stale
end
local expired = 0
for id in string.gmatch(ARGV[3], '[^,]+') do
  if redis.call('HGET', prefix .. id, 'status') == 'waiting' and not heard(id) then
    redis.call('HSET', prefix .. id, 'status', 'expired')
    drop(id)
    expired = expired + 1
  end
end
local taken, noted = {}, false
for line in string.gmatch(ARGV[5], '[^\\n]+') do
  local tid, list, who, spec = string.match(line, '^(%S+) (%S+) (%S*) (.*)$')
  local members, ok = {}, true
  for id in string.gmatch(list, '[^,]+') do
    members[#members + 1] = id
    if ok and not (redis.call('HGET', prefix .. id, 'status') == 'waiting' and heard(id)) then ok = false end
  end
  if ok then
    for seat, id in ipairs(members) do
      redis.call('HSET', prefix .. id, 'status', 'matched', 'table_id', tid, 'seat', seat - 1)
      drop(id)
    end
    redis.call('HSET', KEYS[3], tid, list .. ' ' .. spec)
    local ids = {}
    for id in string.gmatch(who, '[^,]+') do ids[#ids + 1] = id end
    for i, id in ipairs(ids) do
      local others = {}
      for j, other in ipairs(ids) do
        if j ~= i then others[#others + 1] = other end
      end
      redis.call('HSET', KEYS[4], id, '["' .. table.concat(others, '","') .. '"]')
      noted = true
    end
    taken[#taken + 1] = '1'
  else
    taken[#taken + 1] = '0'
  end
end
if noted then redis.call('EXPIRE', KEYS[4], ARGV[4]) end
return {expired, table.concat(taken)}
"""

# KEYS: making, then the table's seek hashes. ARGV: table id, ttl. The table is made and started:
# its seeks are paired, its spec done.
_DONE = """
for i = 2, #KEYS do
  if redis.call('HGET', KEYS[i], 'status') == 'matched' and redis.call('HGET', KEYS[i], 'table_id') == ARGV[1] then
    redis.call('HSET', KEYS[i], 'status', 'paired')
    redis.call('EXPIRE', KEYS[i], ARGV[2])
  end
end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1
"""

# KEYS: the wave's claim. ARGV: its holder. Released only by its holder.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS: seek hash, lobby open, lobby rows (another slot: run apart). Correspondence accept:
# ARGV: seek id, seats wanted. One more seat taken while the seek waits; returns the number of
# the seat taken (1..), or 0 when it is full or no longer waiting.
_TAKE_SEAT = """
if redis.call('HGET', KEYS[1], 'status') ~= 'waiting' then return 0 end
local n = redis.call('HINCRBY', KEYS[1], 'accepted', 1)
if n > tonumber(ARGV[1]) then
  redis.call('HINCRBY', KEYS[1], 'accepted', -1)
  return 0
end
return n
"""


class Waiting(NamedTuple):
    """A live seek as a wave reads it (a tuple: a wave reads thousands)."""

    seek_id: str
    identity: str
    rating: float | None
    created: float
    bot_after: float | None
    info: dict[str, Any]  # what POST /seeks wrote for the wave (player, name, the seat token's hash)


class Pooled(NamedTuple):
    """What a wave reads of its pool: the live seeks heard from, oldest first; those whose holder
    was not heard since ``stale_before``; when the earliest of the others was heard."""

    heard: list[Waiting]
    gone: list[str]
    earliest_seen: float | None


class Live(NamedTuple):
    """What a wave reads of its pool, as it comes: the seeks' ids and their ``info`` rows
    (``INFO_FIELDS``, in the pool's hash order), those whose holder was not heard since
    ``stale_before`` (among them), when the earliest of the others was heard."""

    ids: list[str]
    rows: list[list[Any]]
    gone: set[str]
    earliest_seen: float | None


INFO_FIELDS = ("created", "bot_after", "rating", "identity", "last")


def info_record(seek_id: str, info: dict[str, Any]) -> bytes:
    """A live seek's entry in its pool's ``info`` hash: the JSON array of ``INFO_FIELDS`` (an array
    parses in half an object's time, and a wave reads thousands); a guest's identity (its own seek
    id) is left null."""
    identity = info.get("identity")
    return orjson.dumps([info["created"], info.get("bot_after"), info.get("rating"),
                         None if identity == seek_id else identity, list(info.get("last") or ()) or None])


def info_rows(info: dict[Any, Any]) -> tuple[list[str], list[list[Any]]]:
    """The ids and rows (``INFO_FIELDS``) of an ``info`` hash as HGETALL gives it: every value parsed
    in one call (a JSON array of them all). A value written before 2026-12-06 is a JSON object
    (these names and more): its row is made of it, so a pool holding both reads whole."""
    if not info:
        return [], []
    values = info.values()
    first = next(iter(values))
    text: bytes | str
    if isinstance(first, bytes):
        ids = b"\n".join(info).decode().split("\n")  # one decode (no seek id holds a newline)
        raw = b"[" + b",".join(values) + b"]"
        text, old = raw, b"{" in raw
    else:
        ids = list(info)
        joined = "[" + ",".join(values) + "]"
        text, old = joined, "{" in joined
    rows = orjson.loads(text)
    for i, row in enumerate(rows if old else ()):  # only old entries hold a "{" (ids never do)
        if type(row) is dict:  # noqa: E721 (the old form: an object)
            rows[i] = [row["created"], row.get("bot_after"), row.get("rating"), row.get("identity"),
                       list(row.get("last") or ()) or None]
    return ids, rows


def _making_spec(raw: str) -> tuple[list[str] | None, dict[str, Any]]:
    """A ``making`` entry: (its seeks in seat order, the spec the wave gave); (None, the whole spec)
    for one written before 2026-12-06."""
    if raw.startswith("{"):
        return None, orjson.loads(raw)
    members, spec = raw.split(" ", 1)
    return members.split(","), orjson.loads(spec)


class Seeks:
    """The steps, on the tables' store (a Redis or a cluster: every step is one pool's slot)."""

    def __init__(self, redis: Client):
        self.redis = redis
        self._add = redis.register_script(_ADD)
        self._end = redis.register_script(_END)
        self._commit = redis.register_script(_COMMIT)
        self._done = redis.register_script(_DONE)
        self._release = redis.register_script(_RELEASE)
        self._take_seat = redis.register_script(_TAKE_SEAT)
        self._mark = redis.register_script(_MARK)

    # --- a seek ---------------------------------------------------------------------
    def add(self, pool: Pool, seek_id: str, fields: dict[str, object], now: float, *, live: bool,
            info: dict[str, Any] | None = None) -> tuple[int, bool]:
        """Write a seek (and, live, put it in its pool); (live seeks waiting, a wave wanted at once)."""
        name = pool.name
        ttl = CORRESPONDENCE_TTL + 86400 if pool.correspondence else LIVE_TTL
        meta = [x for pair in pool.meta().items() for x in pair]
        flat = [x for pair in fields.items() for x in (pair[0], _arg(pair[1]))]
        n, at_once = self._add(
            keys=[seek_key(name, seek_id), key(name, "seen"), key(name, "info"), key(name, "meta"),
                  key(name, "trigger")],
            args=[repr(now), ttl, pool.players, "1" if live else "0", len(meta) // 2, seek_id,
                  info_record(seek_id, info or {"created": now}), TRIGGER_MS, *meta, *flat])
        return int(n), bool(int(at_once))

    def read(self, seek_id: str) -> dict[str, str] | None:
        """The seek's hash (text), or None."""
        name = pool_of(seek_id)
        if name is None:
            return None
        raw = self.redis.hgetall(seek_key(name, seek_id))
        return {"seek_id": seek_id, **{as_text(k): as_text(v) for k, v in raw.items()}} if raw else None

    def heard(self, seek_id: str, now: float) -> None:
        """Its holder is there (a poll, a socket): heard at ``now`` (only while it waits in its pool)."""
        name = _pool_named(seek_id)
        self.redis.zadd(key(name, "seen"), {seek_id: now}, xx=True, gt=True)

    def end(self, seek_id: str, status: str = CANCELLED) -> str | None:
        """Cancel (or expire) a waiting seek; the status it had (None: no such seek)."""
        name = _pool_named(seek_id)
        old = self._end(keys=[seek_key(name, seek_id), key(name, "seen"), key(name, "info")],
                        args=[seek_id, status])
        return None if old is None else as_text(old)

    def set_fields(self, seek_id: str, fields: dict[str, object]) -> None:
        name = _pool_named(seek_id)
        self.redis.hset(seek_key(name, seek_id), mapping={k: _arg(v) for k, v in fields.items()})

    # --- a pool's due entry (the workers' ticker reads it) -------------------------------
    def mark_due(self, pool_name: str, due: float, shards: int = 1) -> None:
        """The pool has seeks a wave should look at by ``due`` (lowers its entry, never raises it)."""
        from events.connection import queue_shard

        b = pool_bucket(pool_name)
        self._mark(keys=[due_key(b, queue_shard(tag(pool_name), shards))], args=[pool_name, repr(float(due))])

    # --- a wave ----------------------------------------------------------------------
    def claim_wave(self, pool_name: str, holder: str, ms: int) -> bool:
        return bool(self.redis.set(key(pool_name, "wave"), holder, nx=True, px=ms))

    def release_wave(self, pool_name: str, holder: str) -> None:
        self._release(keys=[key(pool_name, "wave")], args=[holder])

    def pool(self, pool_name: str) -> Pool | None:
        meta = self.redis.hgetall(key(pool_name, "meta"))
        return pool_from_meta(meta) if meta else None

    def live(self, pool_name: str, stale_before: float) -> Live:
        """The pool's live seeks as a wave reads them (``Live``): three reads, whatever their number."""
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(key(pool_name, "info"))
            pipe.zrangebyscore(key(pool_name, "seen"), "-inf", f"({stale_before!r}")
            pipe.zrangebyscore(key(pool_name, "seen"), stale_before, "+inf", start=0, num=1, withscores=True)
            info, stale, earliest = pipe.execute()
        ids, rows = info_rows(info)
        return Live(ids, rows, {as_text(m) for m in stale}, float(earliest[0][1]) if earliest else None)

    def waiting(self, pool_name: str, stale_before: float) -> Pooled:
        """The pool's live seeks (``Pooled``), oldest first, one ``Waiting`` each."""
        live = self.live(pool_name, stale_before)
        heard = [Waiting(seek_id, row[3] or seek_id, row[2], row[0], row[1],
                         dict(zip(INFO_FIELDS, row, strict=True)))
                 for seek_id, row in zip(live.ids, live.rows, strict=True) if seek_id not in live.gone]
        heard.sort(key=lambda w: w.created)
        return Pooled(heard, sorted(live.gone), live.earliest_seen)

    def commit(self, pool_name: str, now: float, expire: list[str], groups: list[Any]) -> tuple[int, list[str]]:
        """The wave's one step: expire ``expire`` (if still unheard), take each group ``(table id, spec,
        [seek ids in seat order], [identities])`` whose seeks all still wait (the identities, optional: the
        accounts at the table, each then noted as having played the others last). (expired, the table
        ids taken). ``spec`` is what ``making`` keeps beside the seats (JSON). Many groups go in
        several steps of ``COMMIT_GROUPS`` (each atomic), so Redis is never held long; each step is
        one argument of text, a line a group (redis-py's encoding of an argument a seek cost a wave of
        10,000 a fifth of its CPU)."""
        keys = [key(pool_name, "seen"), key(pool_name, "info"), key(pool_name, "making"), key(pool_name, "last")]
        prefix = seek_key(pool_name, "")
        stale = repr(now - GONE_AFTER)
        expired, made = 0, []
        encoded: dict[int, str] = {}  # a wave gives a handful of spec objects to thousands of groups
        dumps = orjson.dumps
        for start in range(0, max(1, len(groups)), COMMIT_GROUPS):
            chunk = groups[start:start + COMMIT_GROUPS]
            if not chunk and not (start == 0 and expire):
                break
            lines = []
            for group in chunk:
                table_id, spec, members = group[0], group[1], group[2]
                text = encoded.get(id(spec))
                if text is None:
                    text = encoded[id(spec)] = dumps(spec).decode()
                accounts = ",".join(group[3]) if len(group) > 3 and group[3] else ""
                lines.append(f"{table_id} {','.join(members)} {accounts} {text}")
            n, flags = self._commit(keys=keys, args=[prefix, stale, ",".join(expire) if start == 0 else "",
                                                     LIVE_TTL, "\n".join(lines)])
            expired += int(n)
            flags = as_text(flags)
            made += [group[0] for group, flag in zip(chunk, flags, strict=True) if flag == "1"]
        return expired, made

    def making(self, pool_name: str) -> dict[str, dict[str, Any]]:
        """The tables chosen and not yet made: table id -> the spec the wave gave (``at``: when)."""
        found = self.redis.hgetall(key(pool_name, "making"))
        return {as_text(k): _making_spec(as_text(v))[1] for k, v in found.items()}

    def spec(self, pool_name: str, table_id: str) -> dict[str, Any] | None:
        """The whole spec of a table chosen and not yet made (``workers.pairing.open_table`` makes it):
        its preset and settings, rated or not, and its seats in order, each a seek's (its player,
        name, the hash of its seat token, account or not: read from the seek's hash) or a bot's."""
        raw = self.redis.hget(key(pool_name, "making"), table_id)
        if raw is None:
            return None
        members, spec = _making_spec(as_text(raw))
        if members is None:
            return spec  # written whole, before 2026-12-06
        fields = ("player", "name", "grant", "account")
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hgetall(key(pool_name, "meta"))
            for seek_id in members:
                pipe.hmget(seek_key(pool_name, seek_id), fields)
            meta, *found = pipe.execute()
        pool = pool_from_meta(meta)
        seats: list[dict[str, Any]] = []
        for seek_id, values in zip(members, found, strict=True):
            player, name, grant, account = (as_text(v) for v in values)
            seats.append({"seek": seek_id, "player": player, "name": name, "grant": grant,
                          "account": account == "1"})
        bot = spec.get("bot")
        while bot and len(seats) < pool.players:
            seats.append({"bot": bot})
        settings = dict(pool.settings)
        rated = pool.rated and not bot
        if rated:
            settings["rated"] = True  # the ratings' setting (docs/api.md v1.3, "Ratings")
        return {**spec, "table_id": table_id, "preset": pool.preset, "settings": settings, "rated": rated,
                "seats": seats}

    def done(self, pool_name: str, table_id: str, seek_ids: list[str]) -> None:
        self._done(keys=[key(pool_name, "making"), *(seek_key(pool_name, s) for s in seek_ids)],
                   args=[table_id, LIVE_TTL])

    def last_opponents(self, pool_name: str, identities: list[str]) -> dict[str, frozenset[str]]:
        if not identities:
            return {}
        raw = self.redis.hmget(key(pool_name, "last"), identities)
        return {i: frozenset(orjson.loads(r)) for i, r in zip(identities, raw, strict=True) if r}

    # --- correspondence ------------------------------------------------------------------
    def take_seat(self, seek_id: str, seats: int) -> int:
        name = _pool_named(seek_id)
        return int(self._take_seat(keys=[seek_key(name, seek_id)], args=[seats]))

    def give_back_seat(self, seek_id: str) -> None:
        self.redis.hincrby(seek_key(_pool_named(seek_id), seek_id), "accepted", -1)

    def list_in_lobby(self, seek_id: str, row: dict[str, Any], created: float) -> None:
        b = lobby_bucket(seek_id)
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.zadd(lobby_open_key(b), {seek_id: created})
            pipe.hset(lobby_rows_key(b), seek_id, json.dumps(row, separators=(",", ":")))
            pipe.execute()

    def unlist(self, seek_id: str) -> None:
        b = lobby_bucket(seek_id)
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.zrem(lobby_open_key(b), seek_id)
            pipe.hdel(lobby_rows_key(b), seek_id)
            pipe.execute()

    def lobby(self, now: float, limit: int = 100) -> list[dict[str, Any]]:
        """The open correspondence seeks, newest first: the newest ``limit`` of each bucket (two
        reads a bucket, pipelined), those older than 7 days dropped on the way."""
        oldest = now - CORRESPONDENCE_TTL
        with self.redis.pipeline(transaction=False) as pipe:
            for b in range(LOBBY_BUCKETS):
                pipe.zremrangebyscore(lobby_open_key(b), "-inf", f"({oldest!r}")
                pipe.zrevrange(lobby_open_key(b), 0, limit - 1, withscores=True)
            replies = pipe.execute()
        found = []
        for b in range(LOBBY_BUCKETS):
            for member, score in replies[2 * b + 1]:
                found.append((float(score), b, as_text(member)))
        found.sort(reverse=True)
        found = found[:limit]
        rows: list[dict[str, Any]] = []
        by_bucket: dict[int, list[str]] = {}
        for _, b, seek_id in found:
            by_bucket.setdefault(b, []).append(seek_id)
        with self.redis.pipeline(transaction=False) as pipe:
            order = list(by_bucket.items())
            for b, members in order:
                pipe.hmget(lobby_rows_key(b), members)
            replies = pipe.execute()
        got = {}
        for (_, members), values in zip(order, replies, strict=True):
            for seek_id, value in zip(members, values, strict=True):
                if value is not None:
                    got[seek_id] = json.loads(value)
        for _, _, seek_id in found:
            if seek_id in got:
                rows.append(got[seek_id])
        return rows


# KEYS: a pool bucket's due set. ARGV: pool, due: its entry lowered, never raised.
_MARK = """
redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
return 1
"""


def _arg(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    return str(value)


__all__ = [
    "BOT_AFTER", "CANCELLED", "CORRESPONDENCE_TTL", "EXPIRED", "GONE_AFTER", "INFO_FIELDS", "Live", "MATCHED",
    "PAIRED", "Pool", "Seeks", "WAITING", "Waiting", "claims_key", "due_key", "info_record", "info_rows", "key",
    "lobby_bucket", "new_seek_id", "new_seek_token", "pool_bucket", "pool_of", "seat_token", "seek_key",
    "settings_hash", "tag", "token_digest",
]


def live_tables(redis: Client, slots: list[int], limit: int, start: int = 0, buckets_max: int = 64) -> list[str]:
    """Up to ``limit`` tables playing now (or between rounds), for the lobby: read from the tables'
    status buckets (events/buckets.py), one page of each bucket from the ``start``-th listed slot on,
    at most ``buckets_max`` buckets: bounded, whatever the number of tables."""
    from events.buckets import slot_bucket
    from events.store import STATUS

    if not slots:
        return []
    order = [slots[(start + i) % len(slots)] for i in range(min(len(slots), buckets_max))]
    found: list[str] = []
    for first in range(0, len(order), 16):
        with redis.pipeline(transaction=False) as pipe:
            for slot in order[first:first + 16]:
                pipe.hscan(slot_bucket(STATUS, slot), 0, count=200)
            pages = pipe.execute()
        for _, page in pages:
            for table_id, status in page.items():
                if as_text(status) in ("playing", "round_over"):
                    found.append(as_text(table_id))
                    if len(found) >= limit:
                        return found
    return found


def player_rating(redis: Client, player_id: str | None, preset: str, players: int) -> float | None:
    """A player's rating for a pool (its preset, and the mode its player count makes): the one place
    quick pairing reads it, from the ratings' projection (events/ratings.py). None for a guest and
    for an account not yet rated there (a wave counts it as 1500: workers/matching.py)."""
    if player_id is None:
        return None
    from engine.results import mode_of
    from engine.rules import PRESETS
    from events.ratings import ratings_of

    mode = mode_of(players, 2 if players == 4 and PRESETS[preset].teams else players)
    for row in ratings_of(redis, player_id):
        if row["preset"] == preset and row["mode"] == mode:
            return float(row["rating"])
    return None
