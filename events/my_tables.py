"""A player's list of tables (docs/api.md v1.3 ``GET /me/tables``, ``POST /tables/summaries``): a
projection of the tables' logs, kept as games change, never a scan of the tables.

Two parts, each in its owner's slot:

- ``table:{ID}:row``, a hash of the table's own, written in the append's own Lua step (no round trip:
  ``TableService`` asks its change hook for ``row``, workers/scheduling.py ``TimersHook``): ``row``, the
  JSON of what a list shows of the table (name, preset, status, version, when it last changed, whose
  turn, each seat's name, and, kept server-side only, each seat's player id and account), and
  ``turn_since``, when the turn that is waiting began (written only when the turn changes).
- ``player:{P}:active`` and ``player:{P}:finished``, sorted sets of the account's tables (the player's
  slot), changed only by the few events that change them (an account seated or a seat claimed, a game
  finished, expired or rematched), after the append (``after_change``, from the same hook). The score
  is the time (ms) of the event that put the table there: a finished game's is when it ended.

A list reads the player's set (one command), then every row it names with one pipeline (redis-py
sends a cluster's per node; each command names one key). A row never holds a card: it is built from
the table's seats and status, never from a hand or a pile (tests hold it to that).

Both parts are rebuilt from the logs by ``rebuild_player`` and ``row_fields`` (the same functions the
hook uses), and give the same sets and rows (tests/events/test_my_tables.py).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import orjson

from engine.state import State

from .connection import Client
from .players import player_key
from .records import Event, Record
from .store import table_key
from .text import as_text

if TYPE_CHECKING:
    from .service import TableService

# a table's row as stored (``{"row": {...}, "turn_since": ...}``, parse_row) or as the contract shows it
Row: TypeAlias = dict[str, Any]

log = logging.getLogger("escoba.my_tables")

ACTIVE, FINISHED = "active", "finished"
ACTIVE_STATUSES = frozenset({"waiting", "playing", "round_over"})
ACTIVE_MAX = 200  # the active tables a list shows (a player's open games; more is no longer a list)
PAGE = 20  # finished games a page


def row_key(table_id: str) -> str:
    return table_key(table_id, "row")


def set_key(player_id: str, which: str) -> str:
    return player_key(player_id, which)


# --- writing: the row, in the append's step ------------------------------------------------------

def row_fields(table_id: str, before: State, after: State, records: list[Record]) -> tuple[str, dict[str, str]]:
    """``(key, fields)`` of the table's row after an append (``TableService._apply`` writes them in
    the append's step): the row, and ``turn_since`` when this append began a turn."""
    at = records[-1]["at"]
    row = {
        "name": after.name, "preset": after.preset, "status": after.status, "version": after.version,
        "updated_at": at, "turn": after.turn,
        "seats": [None if s is None else [s.name, s.player, s.account, s.kind] for s in after.seats],
    }
    fields = {"row": orjson.dumps(row).decode()}
    if before.version == 0 or after.turn_seq != before.turn_seq:
        fields["turn_since"] = at
    return row_key(table_id), fields


# --- writing: the players' sets, after the append ---------------------------------------------------

def _ms(at: str) -> int:
    return int(datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp() * 1000)


def entries(state: State, records: list[Record]) -> list[tuple[str, str, int]]:
    """``[(account, ACTIVE | FINISHED, score)]``, in order, for the records of one append (``state``:
    the table after them). Only these events change a player's sets."""
    out: list[tuple[str, str, int]] = []
    accounts = [s.account for s in state.seats if s is not None and s.account]
    for record in records:
        kind, data, at = record["type"], record["data"], record["at"]
        if kind == "TableOpened" and data.get("host_account") and data.get("host_seated", True):
            out.append((data["host"], ACTIVE, _ms(at)))
        elif kind == "PlayerSeated" and data.get("account"):
            out.append((data["player"], ACTIVE, _ms(at)))
        elif kind == "SeatClaimed":
            out.append((data["account"], ACTIVE if state.status in ACTIVE_STATUSES else FINISHED, _ms(at)))
        elif kind == "GameStarted" and data["game"] > 1:  # a rematch: the table is played again
            out.extend((a, ACTIVE, _ms(at)) for a in accounts)
        elif kind in ("GameFinished", "TableExpired"):
            out.extend((a, FINISHED, _ms(at)) for a in accounts)
    return out


def apply_entries(redis: Client, changes: list[tuple[str, str, int, str]]) -> None:
    """Each ``(account, ACTIVE | FINISHED, score, table id)`` into the one set it belongs to now (one
    pipeline; each command names one key)."""
    if not changes:
        return
    with redis.pipeline(transaction=False) as pipe:
        for account, which, score, table_id in changes:
            other = FINISHED if which == ACTIVE else ACTIVE
            pipe.zadd(set_key(account, which), {table_id: score})
            pipe.zrem(set_key(account, other), table_id)
        pipe.execute()


def after_change(redis: Client, table_id: str, state: State, records: list[Record]) -> None:
    """The players' sets after an append (the change hook). A failure is logged, never the move's:
    ``rebuild_player`` repairs a set from the logs."""
    try:
        changes = entries(state, records)
        if changes:
            apply_entries(redis, [(a, w, s, table_id) for a, w, s in changes])
    except Exception:
        log.warning("could not update the players' lists of table %s", table_id, exc_info=True)


# --- reading -------------------------------------------------------------------------------------

def read_rows(redis: Client, table_ids: list[str]) -> dict[str, Row]:
    """Each table's row (``{"row": dict, "turn_since": str}``), read with one pipeline; a table
    without one is left out."""
    if not table_ids:
        return {}
    with redis.pipeline(transaction=False) as pipe:
        for table_id in table_ids:
            pipe.hgetall(row_key(table_id))
        replies = pipe.execute()
    return {table_id: parse_row(fields) for table_id, fields in zip(table_ids, replies, strict=True) if fields}


def parse_row(fields: Mapping[bytes | str, bytes | str]) -> Row:
    """A row hash as read (``HGETALL``) as ``{"row": dict, "turn_since": str | None}``."""
    f = {as_text(k): as_text(v) for k, v in fields.items()}
    return {"row": orjson.loads(f["row"]), "turn_since": f.get("turn_since")}


def order(row: Row) -> tuple[bool, int, str]:
    """A list's order: your turn first, then by last change, newest first."""
    return (not row["your_turn"], -_ms(row["updated_at"]), row["table_id"])


def public_row(table_id: str, stored: Row, seat: int, away_after: float) -> Row:
    """The contract's row (docs/api.md v1.3) of ``seat`` at the table: names, never a player id, a
    hand or a card."""
    row = stored["row"]
    seats = row["seats"]
    out = {
        "table_id": table_id, "name": row["name"], "preset": row["preset"], "status": row["status"],
        "seat": seat, "your_turn": row["status"] == "playing" and row["turn"] == seat,
        "players": [s[0] for s in seats if s is not None], "version": row["version"],
        "updated_at": row["updated_at"],
    }
    turn = row["turn"]
    if row["status"] == "playing" and turn is not None and seats[turn] is not None and seats[turn][3] == "human" \
            and stored.get("turn_since"):
        since = datetime.fromisoformat(stored["turn_since"].replace("Z", "+00:00"))
        out["away_claimable_at"] = _iso(since + timedelta(seconds=away_after))
    return out


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def seat_of_account(stored: Row, account: str) -> int | None:
    for i, s in enumerate(stored["row"]["seats"]):
        if s is not None and s[2] == account:
            return i
    return None


def seat_of_player(stored: Row, player: str) -> int | None:
    for i, s in enumerate(stored["row"]["seats"]):
        if s is not None and s[1] == player:
            return i
    return None


def active_rows(redis: Client, player_id: str, away_after: float) -> list[Row]:
    """The account's active tables: its turn first, then by last change, newest first."""
    table_ids = [as_text(t) for t in cast("list[bytes | str]",  # (redis-py types it with WITHSCORES' shapes too)
                                          redis.zrevrange(set_key(player_id, ACTIVE), 0, ACTIVE_MAX - 1))]
    rows: list[Row] = []
    for table_id, stored in read_rows(redis, table_ids).items():
        seat = seat_of_account(stored, player_id)
        if seat is not None and stored["row"]["status"] in ACTIVE_STATUSES:
            rows.append(public_row(table_id, stored, seat, away_after))
    rows.sort(key=order)
    return rows


def finished_rows(redis: Client, player_id: str, away_after: float, cursor: tuple[int, str] | None,
                  page: int | None = None) -> tuple[list[Row], str | None]:
    """A page of the account's finished tables, newest first, and the cursor of the next page (None:
    the last). The cursor is ``<score>:<table id>`` of the last row given: a game that ends meanwhile
    goes before it, and no row is given twice."""
    key = set_key(player_id, FINISHED)
    page = PAGE if page is None else page
    if cursor is None:
        found = _scored(redis.zrevrangebyscore(key, "+inf", "-inf", start=0, num=page + 1, withscores=True))
    else:
        score, after = cursor
        # the rows at the cursor's score come back too; those up to the cursor's table are dropped
        found = _scored(redis.zrevrangebyscore(key, score, "-inf", start=0,
                                               num=page + 1 + _ties(redis, key, score), withscores=True))
        found = [(t, s) for t, s in found if s < score or t < after]
    more = len(found) > page
    found = found[:page]
    stored = read_rows(redis, [t for t, _ in found])
    rows: list[Row] = []
    for table_id, _score in found:
        if table_id in stored:
            seat = seat_of_account(stored[table_id], player_id)
            if seat is not None:
                rows.append(public_row(table_id, stored[table_id], seat, away_after))
    next_cursor = f"{found[-1][1]}:{found[-1][0]}" if more and found else None
    return rows, next_cursor


def _scored(reply: object) -> list[tuple[str, int]]:
    """A ``WITHSCORES`` reply of table ids as ``[(table id, score)]`` (redis-py types it loosely)."""
    return [(as_text(t), int(s)) for t, s in cast("list[tuple[bytes | str, float]]", reply)]


def _ties(redis: Client, key: str, score: int) -> int:
    return int(redis.zcount(key, score, score))


# the document's pattern for it (api/http/openapi.py), as a JSON Schema validator reads it: a search,
# where "$" also matches before a last line break (one the table id then does not hold)
_CURSOR = re.compile(r"^([0-9]{1,16}):(.{1,64})$")


def parse_cursor(raw: str) -> tuple[int, str] | None:
    found = _CURSOR.search(raw)
    return None if found is None else (int(found.group(1)), found.group(2))


# --- rebuilding from the logs -----------------------------------------------------------------------

def rebuild_player(service: TableService, player_id: str,
                   table_ids: Iterable[str] | None = None) -> dict[str, dict[str, int]]:
    """A player's sets made again from the tables' logs (``table_ids``: those to read; default every
    table, which only an operator's repair does), written over the old ones; what was written."""
    import engine

    from .records import loads

    sets: dict[str, dict[str, int]] = {ACTIVE: {}, FINISHED: {}}
    for table_id in (service.table_ids() if table_ids is None else table_ids):
        entries_ = service.entries(table_id)
        records = [loads(raw, version=v) for v, raw in entries_]
        state = engine.replay([_event(r) for r in records])
        if state.seat_of_account(player_id) is None:
            continue
        last = None
        for account, which, score in _walk(records):
            if account == player_id:
                last = (which, score)
        if last is not None:
            sets[last[0]][table_id] = last[1]
    redis = service.redis
    with redis.pipeline(transaction=False) as pipe:
        for which, members in sets.items():
            pipe.delete(set_key(player_id, which))
            if members:
                pipe.zadd(set_key(player_id, which), members)
        pipe.execute()
    return sets


def _event(record: Record) -> Event:
    from .records import from_record

    return from_record(record)


def _walk(records: list[Record]) -> Iterator[tuple[str, str, int]]:
    """``entries`` record by record, each with the table as it was after it (as the hook saw it)."""
    import engine

    state = State()
    for record in records:
        state = engine.fold(state, [_event(record)])
        yield from entries(state, [record])


def rebuild_row(service: TableService, table_id: str) -> tuple[str, dict[str, str | None]]:
    """The table's row made again from its log (the same fields the append's step wrote)."""
    import engine

    from .records import loads

    records = [loads(raw, version=v) for v, raw in service.entries(table_id)]
    state, turn_since = State(), None
    for record in records:
        before = state
        state = engine.fold(state, [_event(record)])
        _key, fields = row_fields(table_id, before, state, [record])
        turn_since = fields.get("turn_since", turn_since)
    key, last = row_fields(table_id, State(), state, records[-1:])
    return key, {**last, "turn_since": turn_since}


__all__ = ["ACTIVE", "FINISHED", "active_rows", "after_change", "entries", "finished_rows", "public_row",
           "read_rows", "rebuild_player", "rebuild_row", "row_fields", "row_key"]
