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

import orjson

import engine
from engine.rules import Settings
from engine.state import Seat, State

from .store import snapshot_key

SNAPSHOT_EVERY = 50

_DATACLASSES = {"Seat": Seat, "Settings": Settings}
_STATE_FIELDS = tuple(f.name for f in dataclasses.fields(State))


class SnapshotError(ValueError):
    pass


_PLAIN = frozenset({type(None), bool, int, float, str})
_FIELDS = {name: tuple(f.name for f in dataclasses.fields(cls)) for name, cls in _DATACLASSES.items()}


def _enc(v):
    # the hot path of a snapshot: lists of card codes, so plain values are tested first
    kind = type(v)
    if kind in _PLAIN:
        return v
    if kind is list:
        return [x if type(x) in _PLAIN else _enc(x) for x in v]
    if kind is tuple:
        return {"t": [_enc(x) for x in v]}
    if kind is dict:
        return {"m": [[_enc(k), _enc(x)] for k, x in v.items()]}
    name = kind.__name__
    if name in _DATACLASSES and kind is _DATACLASSES[name]:
        return {"dc": name, "f": {f: _enc(getattr(v, f)) for f in _FIELDS[name]}}
    raise SnapshotError(f"cannot encode {kind.__name__} in a snapshot")


def _dec(v):
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if isinstance(v, list):
        return [_dec(x) for x in v]
    if isinstance(v, dict):
        if "t" in v and len(v) == 1:
            return tuple(_dec(x) for x in v["t"])
        if "m" in v and len(v) == 1:
            return {_dec(k): _dec(x) for k, x in v["m"]}
        if "dc" in v and v["dc"] in _DATACLASSES:
            return _DATACLASSES[v["dc"]](**{k: _dec(x) for k, x in v["f"].items()})
    raise SnapshotError(f"unreadable value in a snapshot: {v!r:.80}")


def state_to_json(state: State) -> dict:
    """``state`` as JSON-ready data."""
    return {name: _enc(getattr(state, name)) for name in _STATE_FIELDS}


def state_from_json(data: dict) -> State:
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


def loads_snapshot(raw) -> State | None:
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


def load_snapshot(redis, table_id: str) -> State | None:
    return loads_snapshot(redis.get(snapshot_key(table_id)))


def save_snapshot(redis, table_id: str, state: State) -> None:
    redis.set(snapshot_key(table_id), dumps_snapshot(state))


def delete_snapshot(redis, table_id: str) -> None:
    redis.delete(snapshot_key(table_id))


def due(before: int, after: int, every: int = SNAPSHOT_EVERY) -> bool:
    """Whether moving from version ``before`` to ``after`` crosses a snapshot point."""
    return every > 0 and after // every > before // every
