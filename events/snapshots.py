"""Snapshots: a table's folded state saved beside its log, a cache only.

``table:{ID}:snapshot`` holds ``{"engine": ENGINE_VERSION, "version": N,
"state": ...}``. Loading a table starts from the snapshot and folds the tail
of the log after it. A snapshot written by another engine version, or one
that cannot be read, is ignored (and rebuilt on the next load); deleting it
at any time is always safe.

The state's encoding keeps every Python shape so that the decoded state equals
the folded one exactly: lists are JSON arrays, and every JSON object is a tag:
``{"t": [...]}`` a tuple, ``{"m": [[k, v], ...]}`` a dict (keys of any type),
``{"dc": "Seat", "f": {...}}`` one of the engine's dataclasses.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import orjson

import engine
from engine.rules import Settings
from engine.state import Seat, State

from .connection import Client
from .store import EventStore, snapshot_key, table_key

SNAPSHOT_EVERY = 50
# Checkpoints for reading the past (the event feed and socket catch-up after version N):
# ``table:{ID}:checkpoints`` (hash: stretch -> snapshot) keeps the last KEEP_RECENT snapshots
# and, older than those, one every SPARSE_EVERY snapshots. Catching up after N then folds at
# most SNAPSHOT_EVERY events before N when N is recent, and at most SNAPSHOT_EVERY *
# SPARSE_EVERY when it is older (and then more than KEEP_RECENT * SNAPSHOT_EVERY events are
# new anyway): the cost follows what is new, not N's age. An active table of 500 events keeps
# 5 checkpoints of about 2.5 KB; compaction drops them all.
KEEP_RECENT = 4
SPARSE_EVERY = 8

_DATACLASSES = {"Seat": Seat, "Settings": Settings}
_STATE_FIELDS = tuple(f.name for f in dataclasses.fields(State))


class SnapshotError(ValueError):
    pass


_PLAIN = frozenset({type(None), bool, int, float, str})
_FIELDS = {name: tuple(f.name for f in dataclasses.fields(cls)) for name, cls in _DATACLASSES.items()}


def _enc(v: Any) -> Any:  # a state's value -> JSON data (Any: told apart by type() on the hot path)
    # the hot path of a snapshot: lists of card codes, so plain values are tested first
    kind = type(v)
    if kind in _PLAIN:
        return v
    if kind is list:
        return [x if type(x) in _PLAIN else _enc(x) for x in v]
    if kind is tuple:  # operator decks: a tuple of forty card codes a round
        return {"t": [x if type(x) in _PLAIN else _enc(x) for x in v]}
    if kind is dict:
        return {"m": [[_enc(k), _enc(x)] for k, x in v.items()]}
    name = kind.__name__
    if name in _DATACLASSES and kind is _DATACLASSES[name]:
        return {"dc": name, "f": {f: _enc(getattr(v, f)) for f in _FIELDS[name]}}
    raise SnapshotError(f"cannot encode {kind.__name__} in a snapshot")


def _dec(v: Any) -> Any:  # JSON data, as orjson gives it -> a state's value
    # every load of a table starts here: plain values (card codes, mostly) are tested first, by type
    kind = type(v)
    if kind in _PLAIN:
        return v
    if kind is list:
        return [x if type(x) in _PLAIN else _dec(x) for x in v]
    if kind is dict:
        if "t" in v and len(v) == 1:
            return tuple([x if type(x) in _PLAIN else _dec(x) for x in v["t"]])
        if "m" in v and len(v) == 1:
            return {_dec(k): _dec(x) for k, x in v["m"]}
        if "dc" in v and v["dc"] in _DATACLASSES:
            return _DATACLASSES[v["dc"]](**{k: _dec(x) for k, x in v["f"].items()})
    raise SnapshotError(f"unreadable value in a snapshot: {v!r:.80}")


def state_to_json(state: State) -> dict[str, Any]:
    """``state`` as JSON-ready data."""
    return {name: _enc(getattr(state, name)) for name in _STATE_FIELDS}


def state_from_json(data: dict[str, Any]) -> State:
    """A state from ``state_to_json``'s data; SnapshotError when it does not fit ``State``."""
    if not isinstance(data, dict) or set(data) != set(_STATE_FIELDS):
        raise SnapshotError("the snapshot's fields are not the state's")
    try:
        return State(**{name: _dec(data[name]) for name in _STATE_FIELDS})
    except (TypeError, ValueError, KeyError) as exc:
        raise SnapshotError(str(exc)) from None


def dumps_snapshot(state: State) -> bytes:
    # orjson: a snapshot holds a whole table (operator decks: 1,600 card codes), a C encoder
    # writes it in a tenth of the stdlib's time; it reads back with any JSON reader
    return orjson.dumps(
        {"engine": engine.ENGINE_VERSION, "version": state.version, "state": state_to_json(state)})


def loads_snapshot(raw: bytes | str | None) -> State | None:
    """The state a stored snapshot holds, or None when it is stale or unreadable."""
    if raw is None:
        return None
    try:
        data = orjson.loads(raw)
        if data.get("engine") != engine.ENGINE_VERSION:
            return None
        state = state_from_json(data["state"])
        if state.version != data["version"]:
            return None
        return state
    except (ValueError, TypeError, KeyError, AttributeError, SnapshotError):
        return None


def checkpoints_key(table_id: str) -> str:
    return table_key(table_id, "checkpoints")


def load_snapshot(redis: Client, table_id: str) -> State | None:
    return loads_snapshot(redis.get(snapshot_key(table_id)))


# A snapshot's writes in one step: the newest, the stretch's checkpoint when it has none, and the
# checkpoint that falls out of the recent ones
_SAVE = """
redis.call('SET', KEYS[1], ARGV[1])
if ARGV[2] ~= '' then redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[1]) end
if ARGV[3] ~= '' then redis.call('HDEL', KEYS[2], ARGV[3]) end
return 1
"""


def save_snapshot(store: EventStore, table_id: str, state: State, every: int = SNAPSHOT_EVERY) -> None:
    """The newest snapshot; also the checkpoint of the stretch of ``every`` versions it falls in,
    and the checkpoint that falls out of the recent ones goes unless it is a sparse one (one
    step of ``store``'s, an EventStore: on its direct connection where it has one, as the append;
    redis-py's pipeline was much of a save's CPU in the API: docs/benchmarks.md).

    A checkpoint is named by its stretch (``version // every * every``), not its version: a
    command that appends several events crosses a multiple of ``every`` without stopping on
    it, so versions would be unpredictable names (a read of the past then listed the hash to
    find one) and the recent ones would never be pruned. The first state saved in a stretch
    stays (HSETNX): it is the one that serves the most versions of it.
    """
    mark = state.version // every * every if every > 0 else state.version
    old = mark - KEEP_RECENT * every if every > 0 else 0
    store.run_script(_SAVE, [snapshot_key(table_id), checkpoints_key(table_id)],
                     [dumps_snapshot(state), str(mark) if mark > 0 else "",
                      str(old) if old > 0 and old % (every * SPARSE_EVERY) else ""])


def load_checkpoint(redis: Client, table_id: str, at_most: int, every: int = SNAPSHOT_EVERY) -> State | None:
    """The state of the newest checkpoint at or before version ``at_most``, or None.

    First the checkpoint of ``at_most``'s stretch (one round trip; its state may be a few
    versions past ``at_most`` when a command crossed the stretch's start, then the stretch
    before), else the nearest one kept (older stretches keep one in ``SPARSE_EVERY``; tables
    written before checkpoints were named by stretch)."""
    if at_most <= 0:
        return None
    key = checkpoints_key(table_id)
    if every > 0:
        mark = at_most // every * every
        for stretch in (mark, mark - every):
            if stretch <= 0:
                break
            state = loads_snapshot(redis.hget(key, str(stretch)))
            if state is not None and state.version <= at_most:
                return state
    kept = sorted((int(v) for v in redis.hkeys(key)), reverse=True)
    for v in kept:
        if v <= at_most:
            state = loads_snapshot(redis.hget(key, str(v)))
            if state is not None and state.version <= at_most:
                return state
    return None


def delete_snapshot(redis: Client, table_id: str) -> None:
    redis.delete(snapshot_key(table_id), checkpoints_key(table_id))


def due(before: int, after: int, every: int = SNAPSHOT_EVERY) -> bool:
    """Whether moving from version ``before`` to ``after`` crosses a snapshot point."""
    return every > 0 and after // every > before // every
