"""The log's record format: one JSON object per event, validated per type.

A record (docs/design.md)::

    {"type": "CardPlayed", "v": 1, "version": 17, "at": "2024-05-01T12:00:00.000Z",
     "actor": "seat:1", "data": {...}}

``type`` names an engine event, ``v`` the version of that type's schema the
record was written with, ``version`` the table version this event made
(1-based), ``at`` when it was appended (ISO-8601, UTC), ``actor`` who caused
it (``seat:N``, ``system`` or ``operator``) and ``data`` the event's fields.

Every event type has its own marshmallow schema, built from the event
dataclass's fields, and a schema version (``SCHEMA_VERSIONS``). A record
written by an older schema is brought up to date by the upcasters registered
for ``(type, from_version)``, one step at a time, before it is validated, so
old logs keep replaying after an event type changes shape.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

import orjson
from marshmallow import Schema, ValidationError, fields, validate

from engine.cards import is_card
from engine.events import EVENT_TYPES, Event, event_data, event_from, event_type

ACTOR_SYSTEM = "system"
ACTOR_OPERATOR = "operator"
RECORD_KEYS = ("type", "v", "version", "at", "actor", "data")
# a record as JSON decodes it: its ``data`` holds any JSON value (validated per type by its schema)
Record: TypeAlias = dict[str, Any]
# a record's JSON as the log stores it (bytes; str from a client that decodes replies), by its version
Entry: TypeAlias = tuple[int, bytes | str]


class LogError(Exception):
    """A record (or a log) that cannot be replayed; ``version`` says where."""

    def __init__(self, version: object, message: str):
        super().__init__(f"log breaks at version {version}: {message}")
        self.version = version
        self.message = message


def seat_actor(seat: int) -> str:
    return f"seat:{seat}"


# --- fields ----------------------------------------------------------------

class StrictBool(fields.Boolean):
    """Only JSON true and false (marshmallow's Boolean would take "yes" and 1)."""

    def _deserialize(self, value: object, attr: str | None, data: Mapping[str, Any] | None,
                     **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise self.make_error("invalid", input=value)
        return value


def _int(**kw: Any) -> fields.Integer:
    return fields.Integer(strict=True, **kw)


def _card(**kw: Any) -> fields.String:
    return fields.String(validate=_is_card, **kw)


def _is_card(value: object) -> None:
    if not is_card(value):
        raise ValidationError(f"{value!r} is not a card.")


def _cards(**kw: Any) -> fields.List[str]:
    return fields.List(_card(), **kw)


def _seats(**kw: Any) -> fields.List[int]:
    return fields.List(_int(validate=validate.Range(0, 3)), **kw)


def _seat(**kw: Any) -> fields.Integer:
    return _int(validate=validate.Range(0, 3), **kw)


# The dataclass annotation of a field (a string: engine.events uses
# ``from __future__ import annotations``) -> a marshmallow field factory.
# A new annotation in engine/events.py fails loudly at import, here.
_FIELD_FOR: dict[str, Callable[..., fields.Field[Any]]] = {
    "str": lambda **kw: fields.String(**kw),
    "int": _int,
    "bool": lambda **kw: StrictBool(**kw),
    "dict": lambda **kw: fields.Dict(keys=fields.String(), **kw),
    "Cards": _cards,
    "Seats": _seats,
    "tuple[int, ...]": lambda **kw: fields.List(_int(), **kw),
    "tuple[dict, ...]": lambda **kw: fields.List(fields.Dict(keys=fields.String()), **kw),
    "tuple[Seats, ...]": lambda **kw: fields.List(_seats(), **kw),
    "tuple[Cards, ...]": lambda **kw: fields.List(_cards(validate=validate.Length(equal=40)), **kw),
    "tuple[tuple[int, Cards], ...]": lambda **kw: fields.List(
        fields.Tuple((_seat(), _cards())), **kw
    ),
}

# Fields that hold a seat number get the 0..3 range check.
_SEAT_FIELDS = {"seat", "dealer", "first_dealer", "to_seat", "away"}
# Fields that hold one card.
_CARD_FIELDS = {"card"}


def _field_for(f: dataclasses.Field[Any]) -> fields.Field[Any]:
    annotation = str(f.type).replace(" ", "").replace(",", ", ")
    optional = annotation.endswith("|None")
    base = annotation.removesuffix("|None")
    kw: dict[str, Any] = {}
    if f.default is not dataclasses.MISSING:
        kw["load_default"] = f.default
    else:
        kw["required"] = True
    if optional:
        kw["allow_none"] = True
    if base == "int" and f.name in _SEAT_FIELDS:
        return _seat(**kw)
    if base == "str" and f.name in _CARD_FIELDS:
        return _card(**kw)
    try:
        factory = _FIELD_FOR[base]
    except KeyError:
        raise TypeError(
            f"events.records: no schema field for annotation {f.type!r} ({f.name})"
        ) from None
    return factory(**kw)


def _schema_for(cls: type) -> type[Schema]:
    return Schema.from_dict(
        {f.name: _field_for(f) for f in dataclasses.fields(cls)},
        name=f"{cls.__name__}Schema",
    )


SCHEMAS: dict[str, Schema] = {name: _schema_for(cls)() for name, cls in EVENT_TYPES.items()}

# The current schema version of each event type. Bump one when its data
# changes shape, and register an upcaster from the old version.
SCHEMA_VERSIONS: dict[str, int] = {name: 1 for name in EVENT_TYPES}
# v2 (accounts, docs/api.md v1.3): whether the seated player is an account's player_id
SCHEMA_VERSIONS["TableOpened"] = 2
SCHEMA_VERSIONS["PlayerSeated"] = 2


# --- upcasting -------------------------------------------------------------

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def upcaster(type_name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register ``fn(data) -> data`` that lifts ``type_name`` data from ``from_version`` by one."""

    def register(fn: Upcaster) -> Upcaster:
        key = (type_name, from_version)
        if key in UPCASTERS:
            raise ValueError(f"an upcaster for {key} is already registered")
        UPCASTERS[key] = fn
        return fn

    return register


@upcaster("CardPlayed", 0)
def _card_played_v0(data: dict[str, Any]) -> dict[str, Any]:
    """v0 CardPlayed had no ``fifteen_left`` (before selminha's TAKE THE 15): it was never set."""
    return {**data, "fifteen_left": False}


@upcaster("TableOpened", 1)
def _table_opened_v1(data: dict[str, Any]) -> dict[str, Any]:
    """v1 TableOpened came before accounts: its host was a guest."""
    return {**data, "host_account": False}


@upcaster("PlayerSeated", 1)
def _player_seated_v1(data: dict[str, Any]) -> dict[str, Any]:
    """v1 PlayerSeated came before accounts: the player was a guest."""
    return {**data, "account": False}


def upcast(type_name: str, v: int, data: dict[str, Any], *, version: object = None) -> dict[str, Any]:
    """``data`` written at schema ``v`` of ``type_name``, lifted to the current schema."""
    current = SCHEMA_VERSIONS[type_name]
    if v > current:
        raise LogError(version, f"{type_name} v{v} is newer than this server knows (v{current})")
    while v < current:
        step = UPCASTERS.get((type_name, v))
        if step is None:
            raise LogError(version, f"no upcaster for {type_name} from v{v}")
        data = step(dict(data))
        v += 1
    return data


# --- records ---------------------------------------------------------------

def to_record(event: Event, *, version: int, at: str, actor: str) -> Record:
    """The log record of ``event``, which made table version ``version``.

    The schema is not checked here, on the hot path: the engine builds events as
    typed dataclasses from commands the API has validated, every read
    (``from_record``) checks the schema, and a test folds random games in every
    preset through ``check_record`` to keep the engine and the schemas in step.
    """
    name = event_type(event)
    if name not in SCHEMAS:
        raise LogError(version, f"unknown event type {name!r}")
    data = event_data(event)
    return {"type": name, "v": SCHEMA_VERSIONS[name], "version": version, "at": at, "actor": actor,
            "data": data}


def check_record(record: Record) -> None:
    """Raise LogError unless the record's data fits its type's schema."""
    errors = SCHEMAS[record["type"]].validate(record["data"])
    if errors:
        raise LogError(record["version"], f"{record['type']} does not fit its schema: {errors}")


def from_record(record: object) -> Event:
    """The engine event a record holds (upcast and validated); LogError if it cannot be."""
    if not isinstance(record, dict):
        raise LogError(None, "a record must be a JSON object")
    version = record.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise LogError(version, f"bad table version {version!r}")
    name = record.get("type")
    if name not in SCHEMAS:
        raise LogError(version, f"unknown event type {name!r}")
    v = record.get("v", 1)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise LogError(version, f"bad schema version {v!r}")
    data = record.get("data")
    if not isinstance(data, dict):
        raise LogError(version, f"{name}: data must be an object")
    data = upcast(name, v, data, version=version)
    try:
        loaded = SCHEMAS[name].load(data)
    except ValidationError as exc:
        raise LogError(version, f"bad {name} data: {exc.messages}") from None
    try:
        return event_from(name, loaded)
    except (TypeError, ValueError) as exc:
        raise LogError(version, f"bad {name} data: {exc}") from None


def dumps(record: Record) -> str:
    """A record as compact UTF-8 JSON, as the log stores it (orjson: it is on every move's path)."""
    return orjson.dumps(record, option=orjson.OPT_NON_STR_KEYS).decode()


def loads(text: bytes | str, *, version: object = None) -> Record:
    """A record from JSON text; LogError when it is not JSON (orjson: six times the stdlib's speed)."""
    try:
        record = orjson.loads(text)
    except (ValueError, TypeError) as exc:
        raise LogError(version, f"not JSON: {exc}") from None
    if not isinstance(record, dict):
        raise LogError(version, "a record must be a JSON object")
    return record


def summary(record: Record, limit: int = 90) -> str:
    """A one-line digest of a record's data (for ``escoba replay``)."""
    data = record.get("data") or {}
    parts = []
    for key, val in data.items():
        if key == "deck" and isinstance(val, list):
            text = f"deck[{len(val)}]"
        elif key == "decks" and isinstance(val, list):
            text = f"decks[{len(val)}]"
        else:
            text = f"{key}={json.dumps(val, separators=(',', ':'))}"
        parts.append(text)
    line = " ".join(parts)
    return line if len(line) <= limit else line[: limit - 1] + "…"


__all__ = [
    "ACTOR_OPERATOR", "ACTOR_SYSTEM", "Entry", "Event", "LogError", "Record", "SCHEMAS", "SCHEMA_VERSIONS", "UPCASTERS",
    "dumps", "from_record", "loads", "seat_actor", "summary", "to_record", "upcast",
    "upcaster",
]
