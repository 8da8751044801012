"""Players' ratings, totals and recent games: a projection of the finished rated tables' logs.

Keys, each player's hash-tagged by player id (one cluster slot a player; docs/ratings.md):

- ``player:{P}:ratings``  hash: ``<preset>:<mode>`` -> the rating (JSON: rating, deviation,
                          volatility, games); ``name`` -> the name the player last played under
- ``player:{P}:games``    hash: ``<table_id>:<game>`` -> the game as it counted for this player
                          (JSON: table_id, game, preset, mode, result, place, abandoned, escobas,
                          seat, version, ended, before, after, rating_change): both the player's
                          recent games and the mark that makes a second update of the game a no-op
- ``player:{P}:order``    sorted set: ``<table_id>:<game>`` by the player's own count of games;
                          the oldest beyond ``KEEP`` are dropped with their ``games`` entry
- ``player:{P}:totals``   hash: games, wins, losses, abandons, escobas (rated games), ``seq``
- ``ratings:board:{<preset>:<mode>}``  sorted set, player id -> rating, non-provisional only
                          (one key a board: the leaderboard, docs/scale.md)
- ``escoba:rated:{T}``    sorted set in the table's bucket (events/buckets.py, the table's slot):
                          ``<table_id>:<game>`` -> when the game ended. What a rebuild reads.

Every write is one Lua step on one player's slot. A game's update (``apply_game``) computes every
player's rating from their ratings before that game: a player already updated by an earlier try
gives the ``before`` stored with the game; the others their current rating, and the step applies
only while that is still what is stored (else it reads and computes again). So a retried, doubled
or resumed job changes nothing that is done, and finishes what is not.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import orjson
from redis.exceptions import NoScriptError

from engine import EVENT_TYPES
from engine import ratings as math_
from engine.events import Event, RoundScored
from engine.results import MODES, NOT_READ, GameResult, Placing
from engine.rules import PRESETS

from .buckets import SlotDirectory, bucket_key, read_buckets
from .connection import Client
from .records import Entry, Record
from .store import table_key
from .text import as_text

if TYPE_CHECKING:
    from .service import TableService

log = logging.getLogger("escoba.ratings")

KEEP = 100  # games kept per player: the recent list, the accuracy's games, the marks that make a retry a no-op
RECENT = 20  # games a profile shows
ACCURACY_GAMES = 100  # the player's latest games whose analysis makes their mean accuracy
BOARD_SIZE = 100
APPLY_ATTEMPTS = 20
RATED_INDEX = "rated"


def player_key(player_id: str, name: str) -> str:
    return f"player:{{{player_id}}}:{name}"


def board_key(preset: str, mode: str) -> str:
    return f"ratings:board:{{{preset}:{mode}}}"


def rated_index_key(table_id: str) -> str:
    return bucket_key(RATED_INDEX, table_id)


def game_member(table_id: str, game: int) -> str:
    return f"{table_id}:{game}"


def dumps(value: object) -> str:
    # orjson writes a float as the shortest text that reads back to the same float: the stored
    # numbers are exactly the computed ones, so a rebuild compares equal byte for byte
    return orjson.dumps(value).decode()


# KEYS: ratings, games, order, totals. ARGV: 1 field (<preset>:<mode>), 2 member (<table>:<game>),
# 3 the rating the update was computed from ("" none), 4 the rating after, 5 the game's record,
# 6 win, 7 loss, 8 abandon, 9 escobas (increments), 10 KEEP, 11 the player's name.
# Returns {1, after} applied; {0, current} this game was applied already; {-1, current} the rating
# moved since it was read (compute again).
_APPLY_LUA = """
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  return {0, redis.call('HGET', KEYS[1], ARGV[1]) or ''}
end
local current = redis.call('HGET', KEYS[1], ARGV[1]) or ''
if current ~= ARGV[3] then return {-1, current} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4], 'name', ARGV[11])
local seq = redis.call('HINCRBY', KEYS[4], 'seq', 1)
redis.call('HINCRBY', KEYS[4], 'games', 1)
redis.call('HINCRBY', KEYS[4], 'wins', ARGV[6])
redis.call('HINCRBY', KEYS[4], 'losses', ARGV[7])
redis.call('HINCRBY', KEYS[4], 'abandons', ARGV[8])
redis.call('HINCRBY', KEYS[4], 'escobas', ARGV[9])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[5])
redis.call('ZADD', KEYS[3], seq, ARGV[2])
local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[10])
if over > 0 then
  local old = redis.call('ZRANGE', KEYS[3], 0, over - 1)
  redis.call('ZREMRANGEBYRANK', KEYS[3], 0, over - 1)
  redis.call('HDEL', KEYS[2], unpack(old))
end
return {1, ARGV[4]}
"""
_APPLY_SHA = hashlib.sha1(_APPLY_LUA.encode()).hexdigest()

# KEYS: ratings, games, order, totals (replaced whole). ARGV: 1 number of rating fields, then field,
# value pairs; then the number of games, then member, seq, record triples; then totals field, value.
_REPLACE_LUA = """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
local i = 2
local n = tonumber(ARGV[1])
for _ = 1, n do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]); i = i + 2 end
n = tonumber(ARGV[i]); i = i + 1
for _ = 1, n do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 2])
  redis.call('ZADD', KEYS[3], ARGV[i + 1], ARGV[i])
  i = i + 3
end
while i < #ARGV do redis.call('HSET', KEYS[4], ARGV[i], ARGV[i + 1]); i = i + 2 end
return 1
"""
_REPLACE_SHA = hashlib.sha1(_REPLACE_LUA.encode()).hexdigest()


def _script(redis: Client, lua: str, sha: str, keys: list[str], args: list[str | int | float]) -> Any:
    try:
        return redis.evalsha(sha, len(keys), *keys, *args)
    except NoScriptError:
        return redis.eval(lua, len(keys), *keys, *args)


def _account(placing: Placing) -> str:
    """The account at a seat of a rated game (``ratable``: every seat holds one)."""
    if placing.player is None:
        raise ValueError(f"seat {placing.seat} of a rated game holds no account")
    return placing.player


def _keys(player_id: str) -> list[str]:
    return [player_key(player_id, k) for k in ("ratings", "games", "order", "totals")]


# --- one game's update (the worker's job) -------------------------------------------------------

def game_record(table_id: str, result: GameResult, placing: Placing, ended: float, before: math_.Rating | None,
                after: math_.Rating | None) -> dict[str, Any]:
    """What a player's ``games`` entry holds of a game (never a card)."""
    return {
        "table_id": table_id, "game": result.game, "preset": result.preset, "mode": result.mode,
        "result": placing.result, "place": placing.place, "abandoned": placing.abandoned,
        "escobas": placing.escobas, "seat": placing.seat, "version": result.version, "ended": ended,
        "before": before.as_dict() if before is not None else None,
        "after": after.as_dict() if after is not None else None,
        "rating_change": (after.rating - before.rating) if before is not None and after is not None else None,
    }


def compute(result: GameResult, befores: dict[str, math_.Rating]) -> dict[str, math_.Rating]:
    """Every account's rating after ``result``, from ``befores`` (player id -> rating before)."""
    sides: dict[int, list[Placing]] = {}
    for p in result.placings:
        sides.setdefault(p.side, []).append(p)
    order = sorted(sides)
    before = [[befores[_account(p)] for p in sides[s]] for s in order]
    ranks = [sides[s][0].place for s in order]
    after = math_.rate(result.mode, before, ranks)
    return {_account(p): r for s, rs in zip(order, after, strict=True) for p, r in zip(sides[s], rs, strict=True)}


def ratable(result: GameResult) -> bool:
    """A rated game whose every seat is an account (the start refused anything else)."""
    return result.rated and all(p.player for p in result.placings)


def note_ended(redis: Client, table_id: str, result: GameResult, ended: float) -> None:
    """The game in the rebuild's index (the table's bucket, the table's slot); kept as first written."""
    redis.zadd(rated_index_key(table_id), {game_member(table_id, result.game): ended}, nx=True)


def apply_game(redis: Client, table_id: str, result: GameResult, ended: float) -> dict[str, str]:
    """Update the ratings of ``result``'s players once; per player ``applied`` or ``already``."""
    if not ratable(result):
        return {}
    note_ended(redis, table_id, result, ended)
    member = game_member(table_id, result.game)
    field_ = f"{result.preset}:{result.mode}"
    players = [_account(p) for p in result.placings]
    outcome: dict[str, str] = {}
    for _ in range(APPLY_ATTEMPTS):
        with redis.pipeline(transaction=False) as pipe:
            for pid in players:
                pipe.hget(player_key(pid, "ratings"), field_)
                pipe.hget(player_key(pid, "games"), member)
            got = pipe.execute()
        current = {pid: as_text(got[2 * i]) if got[2 * i] is not None else "" for i, pid in enumerate(players)}
        done = {pid: orjson.loads(got[2 * i + 1]) for i, pid in enumerate(players) if got[2 * i + 1] is not None}
        befores: dict[str, math_.Rating] = {}
        for pid in players:
            if pid in done:
                befores[pid] = math_.Rating.from_dict(done[pid]["before"])
            elif current[pid]:
                befores[pid] = math_.Rating.from_dict(orjson.loads(current[pid]))
            else:
                befores[pid] = math_.start(result.mode)
        afters = compute(result, befores)
        moved = False
        for placing in result.placings:
            pid = _account(placing)
            if pid in done:
                outcome[pid] = "already"
                continue
            record = game_record(table_id, result, placing, ended, befores[pid], afters[pid])
            args: list[str | int | float] = [field_, member, current[pid], dumps(afters[pid].as_dict()), dumps(record),
                    int(placing.result == "win"), int(placing.result != "win"), int(placing.abandoned),
                    placing.escobas, KEEP, placing.name]
            status, _ = _script(redis, _APPLY_LUA, _APPLY_SHA, _keys(pid), args)
            status = int(status)
            if status == -1:
                moved = True
                break
            outcome[pid] = "applied" if status == 1 else "already"
        if not moved:
            break
    else:
        raise RuntimeError(f"table {table_id} game {result.game}: ratings kept moving under {APPLY_ATTEMPTS} tries")
    place_on_boards(redis, result.preset, result.mode, players)
    return outcome


def place_on_boards(redis: Client, preset: str, mode: str, players: list[str]) -> None:
    """Each player's entry on the board as their stored rating says (on it only when not provisional).
    Read from the store after the update, so a retry after a crash here puts it right."""
    field_ = f"{preset}:{mode}"
    with redis.pipeline(transaction=False) as pipe:
        for pid in players:
            pipe.hget(player_key(pid, "ratings"), field_)
        stored = pipe.execute()
    with redis.pipeline(transaction=False) as pipe:
        for pid, raw in zip(players, stored, strict=True):
            if raw is None:
                continue
            rating = math_.Rating.from_dict(orjson.loads(raw))
            if math_.provisional(mode, rating):
                pipe.zrem(board_key(preset, mode), pid)
            else:
                pipe.zadd(board_key(preset, mode), {pid: rating.rating})
        pipe.execute()


def table_games(svc: TableService, table_id: str) -> list[tuple[GameResult, float]]:
    """The table's finished games with when each ended (its ``GameFinished``'s time), from its log
    (stream or archive)."""
    return games_of_entries(svc.entries(table_id))


# What starts the records a result reads, in a log's records joined by newlines (compact JSON has no
# raw newline): every type but NOT_READ's and the plays; and, in a play, that it made an escoba (a
# name's quotes are escaped in JSON, so no string holds this text).
_WANTED = re.compile(rb'\n\{"type":"(?:' + b"|".join(
    name.encode() for name in EVENT_TYPES if name not in NOT_READ and name not in ("CardPlayed", "FifteenTaken")
) + rb')"')
_ESCOBA = b'"escoba":true'
_START = b'{"type":"'


def games_of_entries(entries: Iterable[Entry]) -> list[tuple[GameResult, float]]:
    """``games_of`` a log's stored entries ``[(version, record JSON)]``. Only what a result reads is
    decoded (engine/results.py ``NOT_READ``; a play only when it made an escoba): a rebuild reads
    every rated table's log, and the deals and plays are most of a log's bytes. The records are
    found by one regular expression over the log when every record has the form the store writes
    (compact JSON beginning with its type, events/records.py ``to_record``); else one by one."""

    return games_of_raws([raw.encode() if isinstance(raw, str) else raw for _, raw in entries])


def games_of_raws(raws: list[bytes]) -> list[tuple[GameResult, float]]:
    """``games_of_entries`` of a whole log's records, in order (the log read whole: versions 1..n)."""
    return games_of_log(b"\n".join(raws))


def games_of_log(joined: bytes) -> list[tuple[GameResult, float]]:
    """``games_of_entries`` of a whole log's records joined by newlines (compact JSON holds none)."""
    from engine.results import finished_games_at

    times: dict[int, float] = {}
    if not joined:
        return []
    if joined.startswith(_START) and joined.count(b"\n" + _START) == joined.count(b"\n"):
        pairs = [_event(orjson.loads(line), times) for line in _wanted_lines(b"\n" + joined)]
    else:
        pairs = []
        for raw in joined.split(b"\n"):
            record = orjson.loads(raw)
            kind, data = record["type"], record["data"]
            if kind in NOT_READ or (kind in _PLAY_NAMES and not data.get("escoba", data.get("escobas"))):
                continue
            pairs.append(_event(record, times))
    return [(result, times[result.version]) for result in finished_games_at(pairs)]


_PLAY_NAMES = frozenset(("CardPlayed", "FifteenTaken", "OpeningTableTaken"))


def _wanted_lines(log: bytes) -> list[bytes]:
    """The lines of ``log`` (starting with a newline) a result reads, in order: found by the regular
    expression's and bytes' own search, so the records left out cost nothing in Python."""
    starts = {m.start() + 1 for m in _WANTED.finditer(log)}
    find = log.find
    at = find(_ESCOBA)
    while at >= 0:
        starts.add(log.rfind(b"\n", 0, at) + 1)
        at = find(_ESCOBA, at + 1)
    out = []
    for start in sorted(starts):
        end = find(b"\n", start)
        out.append(log[start:] if end < 0 else log[start:end])
    return out


def _event(record: Record, times: dict[int, float]) -> tuple[int, Event]:
    from engine import event_from

    from .records import SCHEMA_VERSIONS, upcast

    kind, data, version = record["type"], record["data"], record["version"]
    if record["v"] != SCHEMA_VERSIONS[kind]:
        data = upcast(kind, record["v"], data, version=version)
    if kind == "GameFinished":
        times[version] = _epoch(record["at"])
    elif kind == "RoundScored":  # a result reads its totals only: the breakdown (most of it) is left
        return version, RoundScored(data["round"], (), tuple(data["scores"]))
    return version, event_from(kind, data)


def _epoch(text: str) -> float:
    """A record's ISO-8601 UTC time as epoch seconds."""
    moment = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def done_key(table_id: str) -> str:
    """The table's last game whose ratings are all applied (the table's slot): a job run again
    (the reconciler re-arms a finished job) stops at one read."""
    return table_key(table_id, "rated")


def rate_table(redis: Client, svc: TableService, table_id: str, game: int) -> dict[str, Any]:
    """Apply every rated game of the table up to ``game`` not applied yet (the worker's job); a game
    an earlier job missed (a rematch begun before it ran) is applied here too, in order."""
    done = redis.get(done_key(table_id))
    if done is not None and int(done) >= game:
        return {"games": 0, "already": True}
    applied = 0
    for result, ended in table_games(svc, table_id):
        if result.game > game or not ratable(result):
            continue
        apply_game(redis, table_id, result, ended)
        applied += 1
    redis.set(done_key(table_id), game)
    return {"games": applied, "already": False}


# --- reading: /me, a profile, the leaderboard ---------------------------------------------------

def ratings_of(redis: Client, player_id: str) -> list[dict[str, Any]]:
    """The contract's ``ratings``: [{preset, mode, rating, deviation, games, provisional}]."""
    stored = {as_text(k): as_text(v) for k, v in redis.hgetall(player_key(player_id, "ratings")).items()}
    return _ratings_list(stored)


def _ratings_list(stored: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key, raw in stored.items():
        if ":" not in key:
            continue  # ``name``
        preset, mode = key.split(":", 1)
        r = math_.Rating.from_dict(orjson.loads(raw))
        out.append({"preset": preset, "mode": mode, "rating": round(r.rating), "deviation": round(r.deviation),
                    "games": r.games, "provisional": math_.provisional(mode, r)})
    out.sort(key=lambda x: (x["preset"], MODES.index(x["mode"]) if x["mode"] in MODES else 9))
    return out


def profile(redis: Client, player_id: str) -> dict[str, Any]:
    """``ratings``, ``totals``, ``recent`` and ``accuracy`` of a player (the profile's own fields
    ``name`` and ``joined`` come from the account). Nothing in it is a card."""
    with redis.pipeline(transaction=False) as pipe:
        pipe.hgetall(player_key(player_id, "ratings"))
        pipe.hgetall(player_key(player_id, "totals"))
        pipe.zrevrange(player_key(player_id, "order"), 0, ACCURACY_GAMES - 1)
        stored, totals, members = pipe.execute()
    members = [as_text(m) for m in members]
    records = []
    if members:
        records = [orjson.loads(r) for r in redis.hmget(player_key(player_id, "games"), members) if r is not None]
    totals = {as_text(k): int(v) for k, v in totals.items()}
    recent = [{"table_id": r["table_id"], "game": r["game"], "preset": r["preset"], "mode": r["mode"],
               "result": r["result"], "place": r["place"],
               "rating_change": None if r["rating_change"] is None else round(r["rating_change"], 1),
               "review": f"/t/{r['table_id']}/review"} for r in records[:RECENT]]
    return {
        "ratings": _ratings_list({as_text(k): as_text(v) for k, v in stored.items()}),
        "totals": {k: totals.get(k, 0) for k in ("games", "wins", "losses", "abandons", "escobas")},
        "recent": recent,
        "accuracy": mean_accuracy(redis, records),
    }


def mean_accuracy(redis: Client, records: list[dict[str, Any]]) -> float | None:
    """The mean accuracy of the player's seat over their games whose analysis is done and is of
    that game (a table's analysis judges its last game: its moves come before that game's end)."""
    from .analysis import DONE, load

    found: list[float] = []
    by_table: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_table.setdefault(r["table_id"], []).append(r)
    for table_id, games in by_table.items():
        stored = load(redis, table_id)
        if stored is None or stored.status != DONE or not stored.result:
            continue
        for r in games:
            # the analysis is of this game when its plays come after the table's game before it
            # ended and before this one did
            before = max((g["version"] for g in games if g["version"] < r["version"]), default=0)
            for seat in stored.result:
                versions = [m["version"] for m in seat.get("moves") or []]
                if seat.get("seat") == r["seat"] and versions and seat.get("accuracy") is not None \
                        and before < min(versions) and max(versions) < r["version"]:
                    found.append(float(seat["accuracy"]))
    return round(sum(found) / len(found), 1) if found else None


def leaderboard(redis: Client, preset: str, mode: str, limit: int = BOARD_SIZE) -> list[dict[str, Any]]:
    """The contract's ``players``: [{rank, name, rating, games}], best first."""
    top = cast("list[tuple[bytes | str, float]]",  # (redis-py types it with other shapes too)
               redis.zrevrange(board_key(preset, mode), 0, limit - 1, withscores=True))
    if not top:
        return []
    field_ = f"{preset}:{mode}"
    with redis.pipeline(transaction=False) as pipe:
        for pid, _ in top:
            pipe.hmget(player_key(as_text(pid), "ratings"), "name", field_)
        found = pipe.execute()
    out: list[dict[str, Any]] = []
    for (pid, score), (name, raw) in zip(top, found, strict=True):
        games = math_.Rating.from_dict(orjson.loads(raw)).games if raw is not None else 0
        out.append({"rank": len(out) + 1, "name": as_text(name) if name is not None else as_text(pid),
                    "rating": round(score), "games": games})
    return out


# --- rebuild: every player's numbers again from the logs -------------------------------------

@dataclass
class _Player:
    name: str = ""
    ratings: dict[str, math_.Rating] = field(default_factory=dict)  # field -> Rating
    games: deque[tuple[str, int, str]] = field(default_factory=lambda: deque(maxlen=KEEP))  # (member, seq, record JSON)
    totals: dict[str, int] = field(default_factory=lambda: {"seq": 0, "games": 0, "wins": 0, "losses": 0,
                                                  "abandons": 0, "escobas": 0})


@dataclass
class Rebuilt:
    players: dict[str, _Player] = field(default_factory=dict)  # player id -> _Player
    # (preset, mode) -> {player id: rating}
    boards: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    games: int = 0


def ended_games(redis: Client) -> list[tuple[float, str, int]]:
    """Every game in the rebuild's index, ``(ended, table_id, game)``, in the order they ended."""
    keys = SlotDirectory(redis).buckets(RATED_INDEX)
    replies = read_buckets(redis, keys, lambda pipe, key: pipe.zrange(key, 0, -1, withscores=True))
    out: list[tuple[float, str, int]] = []
    for reply in replies:
        for member, score in reply:
            table_id, game = as_text(member).rsplit(":", 1)
            out.append((float(score), table_id, int(game)))
    out.sort()
    return out


def replay_game(rebuilt: Rebuilt, table_id: str, result: GameResult, ended: float) -> None:
    """One game's update in memory, as ``apply_game`` makes it in the store."""
    if not ratable(result):
        return
    field_ = f"{result.preset}:{result.mode}"
    befores: dict[str, math_.Rating] = {}
    for p in result.placings:
        player = rebuilt.players.setdefault(_account(p), _Player())
        befores[_account(p)] = player.ratings.get(field_) or math_.start(result.mode)
    afters = compute(result, befores)
    member = game_member(table_id, result.game)
    for p in result.placings:
        pid = _account(p)
        player = rebuilt.players[pid]
        record = game_record(table_id, result, p, ended, befores[pid], afters[pid])
        player.ratings[field_] = afters[pid]
        player.name = p.name
        t = player.totals
        t["seq"] += 1
        t["games"] += 1
        t["wins"] += p.result == "win"
        t["losses"] += p.result != "win"
        t["abandons"] += int(p.abandoned)
        t["escobas"] += p.escobas
        player.games.append((member, t["seq"], dumps(record)))
        board = rebuilt.boards.setdefault((result.preset, result.mode), {})
        if math_.provisional(result.mode, afters[pid]):
            board.pop(pid, None)
        else:
            board[pid] = afters[pid].rating
    rebuilt.games += 1


def rebuild(redis: Client, svc: TableService, *, write: bool = True, into: Client | None = None) -> dict[str, int]:
    """``escoba ratings rebuild``: every player's ratings, totals and games again from the finished
    rated tables' logs, in the order the games ended; then written over what is stored (``into``:
    written to that store instead, e.g. a fresh one to compare)."""
    rebuilt = Rebuilt()
    entries = ended_games(redis)
    left: dict[str, int] = {}
    for _, table_id, _ in entries:
        left[table_id] = left.get(table_id, 0) + 1
    cache: dict[str, dict[int, tuple[GameResult, float]]] = {}
    for i, (ended, table_id, game) in enumerate(entries):
        if table_id not in cache:  # a table's log is read once, kept until its last game is done
            ahead = list(dict.fromkeys(t for _, t, _ in entries[i:i + READ_AHEAD] if t not in cache))
            for tid, games in read_games(redis, svc, ahead).items():
                cache[tid] = {r.game: (r, at) for r, at in games}
        found = cache[table_id].get(game)
        left[table_id] -= 1
        if not left[table_id]:
            cache.pop(table_id)
        if found is None:
            log.warning("rebuild: table %s has no finished game %s", table_id, game)
            continue
        replay_game(rebuilt, table_id, found[0], ended)
    if write:
        write_rebuilt(redis if into is None else into, rebuilt)
    return {"games": rebuilt.games, "players": len(rebuilt.players), "tables": len(left)}


READ_AHEAD = 256  # games whose tables' logs a rebuild reads in one pipeline


def read_games(redis: Client, svc: TableService, table_ids: list[str]) -> dict[str, list[tuple[GameResult, float]]]:
    """The finished games of each table, their logs read in two pipelines: the archives (most tables
    by a rebuild's time: a finished table is compacted a day after), then the streams of the rest."""
    from .compaction import FORMAT, archive_key
    from .store import events_key

    out: dict[str, list[tuple[GameResult, float]]] = {}
    with redis.pipeline(transaction=False) as pipe:
        for tid in table_ids:
            pipe.get(archive_key(tid))
        blobs = pipe.execute()
    streams = []
    for tid, blob in zip(table_ids, blobs, strict=True):
        if blob is None:
            streams.append(tid)
            continue
        parts = _unzstd(blob).split(b"\n")
        head = parts[0].split(b" ")
        if head[0] != FORMAT:
            raise ValueError(f"table {tid}: not an archive this server reads")
        out[tid] = games_of_raws(parts[1:1 + int(head[1])])
    if streams:
        with redis.pipeline(transaction=False) as pipe:
            for tid in streams:
                pipe.execute_command("EVAL", _JOINED_LUA, 1, events_key(tid))
            replies = pipe.execute()
        for tid, joined in zip(streams, replies, strict=True):
            if not joined:  # compacted meanwhile, or gone: the service's own way
                out[tid] = table_games(svc, tid)
                continue
            out[tid] = games_of_log(joined if type(joined) is bytes else joined.encode())
    return out


# KEYS[1] a table's log: its records joined by newlines, one string (a client's parse of a stream
# reply, entry by entry, cost more than everything else a rebuild does with a log)
_JOINED_LUA = """
local out = {}
for i, entry in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do out[i] = entry[2][2] end
return table.concat(out, '\\n')
"""


def _unzstd(blob: bytes) -> bytes:
    import zstandard

    data: bytes = zstandard.ZstdDecompressor().decompress(blob)
    return data


def write_rebuilt(redis: Client, rebuilt: Rebuilt, chunk: int = 500) -> None:
    """Replace every rebuilt player's keys (one Lua step each) and every board."""
    items = list(rebuilt.players.items())
    for start in range(0, len(items), chunk):
        with redis.pipeline(transaction=False) as pipe:
            for pid, player in items[start:start + chunk]:
                args: list[str | int | float] = [len(player.ratings) + 1]
                for key, rating in player.ratings.items():
                    args += [key, dumps(rating.as_dict())]
                args += ["name", player.name, len(player.games)]
                for member, seq, record in player.games:
                    args += [member, seq, record]
                for key, value in player.totals.items():
                    args += [key, value]
                keys = _keys(pid)
                pipe.execute_command("EVAL", _REPLACE_LUA, len(keys), *keys, *args)
            pipe.execute()
    for preset in PRESETS:
        for mode in MODES:
            redis.delete(board_key(preset, mode))
    for (preset, mode), board in rebuilt.boards.items():
        entries = list(board.items())
        for start in range(0, len(entries), 10_000):
            redis.zadd(board_key(preset, mode), dict(entries[start:start + 10_000]))


__all__ = ["KEEP", "Rebuilt", "apply_game", "board_key", "compute", "done_key", "ended_games", "game_record",
           "leaderboard", "note_ended", "place_on_boards", "player_key", "profile", "ratable", "rate_table",
           "rated_index_key", "ratings_of", "rebuild", "replay_game", "table_games", "write_rebuilt"]
