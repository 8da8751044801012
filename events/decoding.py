"""The read path's record decoder: stored JSON straight to engine events, with msgspec.

``records.from_record`` (marshmallow) stays the strict reference: ``escoba replay``
and the tests check every record against its versioned schema with it. It costs about
20 µs a record, 35 times the fold, so loading a table (``TableService.load``, the event
feed, socket catch-up) decodes here instead: one msgspec decoder for the record's
envelope, one per event type that builds the engine's frozen dataclass directly (types
checked by msgspec: an ``int`` field refuses ``true``, a tuple of cards refuses a
number), then the checks marshmallow adds beyond types, by hand: seat numbers in
0..3, card codes from the deck, 40 cards in an operator deck; and the data must be
byte for byte the event's own compact encoding (what the store writes), which also
refuses a key the event does not have (msgspec would skip it, marshmallow refuses it). Anything this path does
not take as it is (an older schema version that needs upcasting, a type error, a
check that fails) goes to ``from_record``, which upcasts it or raises the LogError
that names the version and the reason, so both paths accept and refuse the same
records (``tests/events/test_decoding.py`` holds them to that).
"""

from __future__ import annotations

import dataclasses

import msgspec

from engine.cards import FULL_DECK
from engine.events import EVENT_TYPES

from .records import SCHEMA_VERSIONS, LogError, from_record, loads

_CARDS = frozenset(FULL_DECK)
_SEAT_FIELDS = {"seat", "dealer", "first_dealer", "to_seat", "away"}  # as records._SEAT_FIELDS


class Envelope(msgspec.Struct, kw_only=True):
    """A record without its data, which stays raw JSON until its type is known."""

    type: str
    v: int = 1
    version: int
    at: str
    actor: str
    data: msgspec.Raw


_ENVELOPE = msgspec.json.Decoder(Envelope)
_ENCODE = msgspec.json.Encoder().encode
_DATA = {name: msgspec.json.Decoder(cls) for name, cls in EVENT_TYPES.items()}


def _checks_for(cls: type) -> tuple:
    """Which fields need which check, from the dataclass's annotations (as records does)."""
    seat, card, cards, seats, decks, hands = [], [], [], [], [], []
    for f in dataclasses.fields(cls):
        base = str(f.type).replace(" ", "").removesuffix("|None")
        if base == "int" and f.name in _SEAT_FIELDS:
            seat.append(f.name)
        elif base == "str" and f.name == "card":
            card.append(f.name)
        elif base == "Cards":
            cards.append(f.name)
        elif base == "Seats":
            seats.append(f.name)
        elif base == "tuple[Seats,...]":
            seats.append((f.name, "nested"))
        elif base == "tuple[Cards,...]":
            decks.append(f.name)
        elif base == "tuple[tuple[int,Cards],...]":
            hands.append(f.name)
    return tuple(seat), tuple(card), tuple(cards), tuple(seats), tuple(decks), tuple(hands)


_CHECKS = {name: _checks_for(cls) for name, cls in EVENT_TYPES.items()}
_SEAT_RANGE = frozenset(range(4))


def _fits(name: str, event) -> bool:
    """The value checks marshmallow's schema makes beyond types (events.records)."""
    seat, card, cards, seats, decks, hands = _CHECKS[name]
    for f in seat:
        value = getattr(event, f)
        if value is not None and value not in _SEAT_RANGE:
            return False
    for f in card:
        if getattr(event, f) not in _CARDS:
            return False
    for f in cards:
        if not _CARDS.issuperset(getattr(event, f)):
            return False
    for f in seats:
        if isinstance(f, tuple):
            if not all(_SEAT_RANGE.issuperset(group) for group in getattr(event, f[0])):
                return False
        elif not _SEAT_RANGE.issuperset(getattr(event, f)):
            return False
    for f in decks:
        value = getattr(event, f)
        if value is not None and not all(len(d) == 40 and _CARDS.issuperset(d) for d in value):
            return False
    return all(s in _SEAT_RANGE and _CARDS.issuperset(c) for f in hands for s, c in getattr(event, f))


def decode(raw, version: int | None = None) -> tuple[Envelope | dict, object]:
    """A stored record (JSON text) as ``(envelope, engine event)``; LogError if it cannot be.

    The envelope has ``type, v, version, at, actor`` (an ``Envelope``, or the record's dict
    when it took the strict path). ``version``: the stream entry's, for the error message.
    """
    try:
        env = _ENVELOPE.decode(raw)
        decoder = _DATA.get(env.type)
        if decoder is not None and env.v == SCHEMA_VERSIONS[env.type] and env.version >= 1:
            event = decoder.decode(env.data)
            # msgspec ignores keys a dataclass lacks (marshmallow refuses them): the data must be
            # exactly the event's own compact encoding, as the store wrote it (orjson, field order)
            if _ENCODE(event) == bytes(env.data) and _fits(env.type, event):
                return env, event
    except (msgspec.DecodeError, msgspec.ValidationError, TypeError, ValueError):
        pass
    record = loads(raw, version=version)  # the strict path names what is wrong
    return record, from_record(record)


def decode_many(entries) -> list[tuple[int, object]]:
    """``[(stream version, raw record), ...]`` as ``[(record version, event), ...]``."""
    out = []
    for version, raw in entries:
        env, event = decode(raw, version)
        out.append((env.version if type(env) is Envelope else env["version"], event))
    return out


def meta(env) -> tuple[int, str, str, str]:
    """``(version, type, at, actor)`` of what ``decode`` returned, whichever path it took."""
    if type(env) is Envelope:
        return env.version, env.type, env.at, env.actor
    return env["version"], env["type"], env["at"], env["actor"]


__all__ = ["Envelope", "LogError", "decode", "decode_many", "meta"]
