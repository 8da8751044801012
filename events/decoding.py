"""The read path's record decoder: stored JSON straight to engine events, with msgspec.

``records.from_record`` (marshmallow) stays the strict reference: ``escoba replay``
and the tests check every record against its versioned schema with it. It costs many
times the fold a record (docs/benchmarks.md), so loading a table (``TableService.load``, the event
feed, socket catch-up) decodes here instead: one msgspec decoder for the whole
record, tagged by its type, that builds the engine's frozen dataclass directly (types
checked by msgspec: an ``int`` field refuses ``true``, a tuple of cards refuses a
number), then the checks marshmallow adds beyond types, by hand: seat numbers in
0..3, card codes from the deck, 40 cards in an operator deck; and the record must be
byte for byte its own compact encoding (what the store writes), which also
refuses a key the event does not have (msgspec would skip it, marshmallow refuses
it). Anything this path does not take as it is (an older schema version that needs upcasting, a type error, a
check that fails) goes to ``from_record``, which upcasts it or raises the LogError
that names the version and the reason, so both paths accept and refuse the same
records (``tests/events/test_decoding.py`` holds them to that).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from engine.cards import FULL_DECK
from engine.events import EVENT_TYPES, Event

from .records import SCHEMA_VERSIONS, Entry, LogError, Record, from_record, loads

_CARDS = frozenset(FULL_DECK)
_SEAT_FIELDS = {"seat", "dealer", "first_dealer", "to_seat", "away"}  # as records._SEAT_FIELDS


class Envelope(msgspec.Struct, kw_only=True):
    """The fields every record has beside its data (``type`` is each record struct's tag)."""

    v: int = 1
    version: int
    at: str
    actor: str


# One record struct per event type, tagged by ``type`` (the first key, as the store writes it):
# one msgspec call decodes the whole record, its data straight into the engine's dataclass.
_RECORDS = {name: msgspec.defstruct(f"{name}Record", [("data", cls)], bases=(Envelope,), tag_field="type",
                                    tag=name, kw_only=True)
            for name, cls in EVENT_TYPES.items()}
_NAME = {struct: name for name, struct in _RECORDS.items()}
_RECORD = msgspec.json.Decoder(typing.Union[tuple(_RECORDS.values())])  # noqa: UP007 - a runtime tuple
_ENCODE = msgspec.json.Encoder().encode


def _check_for(cls: type) -> Callable[[Any], bool]:
    """``check(event) -> bool``: the value checks marshmallow's schema makes beyond types, for
    this event type's fields (found from the annotations as events.records finds them), as one
    expression compiled once: the read path runs it on every record."""
    parts = []
    for f in dataclasses.fields(cls):
        base = str(f.type).replace(" ", "")
        optional = base.endswith("|None")
        base = base.removesuffix("|None")
        e = f"e.{f.name}"
        if base == "int" and f.name in _SEAT_FIELDS:
            test = f"{e} in R"
        elif base == "str" and f.name == "card":
            test = f"{e} in C"
        elif base == "Cards":
            test = f"C.issuperset({e})"
        elif base == "Seats":
            test = f"R.issuperset({e})"
        elif base == "tuple[Seats,...]":
            test = f"all(R.issuperset(g) for g in {e})"
        elif base == "tuple[Cards,...]":
            test = f"all(len(d) == 40 and C.issuperset(d) for d in {e})"
        elif base == "tuple[tuple[int,Cards],...]":
            test = f"all(s in R and C.issuperset(c) for s, c in {e})"
        else:
            continue
        parts.append(f"({e} is None or {test})" if optional else test)
    source = "lambda e: " + (" and ".join(parts) if parts else "True")
    check: Callable[[Any], bool] = eval(source, {"R": _SEAT_RANGE, "C": _CARDS, "all": all, "len": len})  # noqa: S307
    return check


_SEAT_RANGE = frozenset(range(4))
_CHECKS = {name: _check_for(cls) for name, cls in EVENT_TYPES.items()}


def decode(raw: bytes | str, version: int | None = None) -> tuple[Envelope | Record, Event]:
    """A stored record (JSON text) as ``(envelope, engine event)``; LogError if it cannot be.

    The envelope gives ``meta`` (an ``Envelope``, or the record's dict when it took the strict
    path). ``version``: the stream entry's, for the error message.
    """
    [(env, event)] = _decode_all([(version, raw)], keep=True)
    return env, event


def decode_many(entries: Iterable[Entry]) -> list[tuple[int, Event]]:
    """``[(stream version, raw record), ...]`` as ``[(record version, event), ...]``."""
    return _decode_all(entries, keep=False)


def _decode_all(entries: Iterable[tuple[int | None, bytes | str]], keep: bool) -> list[tuple[Any, Event]]:
    # the loop that is most of the cost of loading a table: names bound locally. Each item: the
    # record's envelope (``keep``) or its version, and its event
    out: list[tuple[Any, Event]] = []
    append = out.append
    record_of, encode, checks, names, current = _RECORD.decode, _ENCODE, _CHECKS, _NAME, SCHEMA_VERSIONS
    for version, raw in entries:
        try:
            rec = record_of(raw)
            name = names[type(rec)]
            # msgspec skips keys a struct lacks (marshmallow refuses them in data): the record must
            # be exactly its own compact encoding, as the store writes it (orjson, in field order)
            if rec.v == current[name] and rec.version >= 1 and \
                    encode(rec) == (raw.encode() if type(raw) is str else raw) and checks[name](rec.data):
                append((rec if keep else rec.version, rec.data))
                continue
        except (msgspec.DecodeError, msgspec.ValidationError, TypeError, ValueError):
            pass
        record = loads(raw, version=version)  # the strict path upcasts, or names what is wrong
        event = from_record(record)
        append((record if keep else record["version"], event))
    return out


def meta(env: Envelope | Record) -> tuple[int, str, str, str]:
    """``(version, type, at, actor)`` of what ``decode`` returned, whichever path it took."""
    if isinstance(env, dict):
        return env["version"], env["type"], env["at"], env["actor"]
    return env.version, _NAME[type(env)], env.at, env.actor


__all__ = ["Envelope", "LogError", "decode", "decode_many", "meta"]
