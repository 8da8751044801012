"""What a socket is sent on a change: built once per process per reader, framed once, sent as bytes.

A change reaches every socket of its table. Most of them read the same view
(the spectators all alike; each player, however many tabs they keep open), so
the view for one (table, version, seat, host, deck) is built, encoded and put
in a WebSocket frame once in this process, and every socket of that reader is
sent the same bytes. The key holds the seat: a view is only ever sent to the
reader it was built for, so hidden cards stay hidden. What all readers of a
version share (engine.table_view: no hand in it) is built once for all of them.

Server frames are never masked, and the sockets negotiate no compression
(api/sockets/route.py), so a frame's bytes are the same for every connection.
"""

from __future__ import annotations

import struct
from collections import OrderedDict
from collections.abc import Mapping
from typing import cast

import orjson

import engine
from engine.view import READER_FIELDS, changed, reader_changes, reader_part
from events.locks import short_lock


def text_frame(payload: bytes) -> bytes:
    """One unmasked, final WebSocket text frame (RFC 6455 5.2) holding ``payload``."""
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x81, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", 0x81, 126, n)
    else:
        head = struct.pack("!BBQ", 0x81, 127, n)
    return head + payload


def message(obj) -> bytes:
    """``obj`` as JSON in one text frame."""
    return text_frame(orjson.dumps(obj))


# Tables whose shared part of a view (engine.TableView) is kept: each table's latest version only, so
# a table's readers of one version (the mover's answer, the sockets' frames, the next mover's GET a
# little later) share one build, and an older version is never kept beside a newer one. Each kept
# part is some sixty dicts and lists the garbage collector walks again on every pass, so they are
# few: one per table recently changed. (Keyed by version, 128 parts thrashed as soon as a process had
# some 64 tables in play: a GET then always missed the part its table's last move had built.)
SHARED_PARTS = 512


class ViewFrames:
    """The encoded view and the frames of one change for one reader, for the last ``size``
    (table, version, reader)s. The move's own answer (POST /moves) takes its view from here too,
    so the mover's sockets are sent the view that answer already built.

    Each method takes ``ahead`` (an ``Ahead`` of this ``ViewFrames``, from ``ahead()``): frames of a
    state whose append is still in flight, built apart from the caches and kept in them only once that
    very state is appended (``Ahead.keep``). A state whose append is refused, another process having
    appended that version first, leaves nothing here: the caches are keyed by version, and a frame of
    a state that never was must never answer for the one that was."""

    def __init__(self, size: int = 4096, shared_parts: int = SHARED_PARTS):
        self.size = size
        self.shared_parts = shared_parts
        self._built: OrderedDict[tuple, tuple[bytes, bytes]] = OrderedDict()
        self._bases: OrderedDict[tuple, _Shared] = OrderedDict()  # (table, deck) -> its latest version's
        self._lock = short_lock()  # dict operations only: never held across a wait
        self.built = 0  # views built (the rest were sent from here)
        self.patched = 0  # patches built

    def ahead(self, table_id: str, state) -> Ahead:
        """A place for ``state``'s frames while its append is in flight (see the class)."""
        return Ahead(self, table_id, state)

    def frames(self, table_id: str, state, seat: int | None, is_host: bool, deck: str | None,
               ahead: Ahead | None = None) -> bytes:
        """The ``table`` message of ``state`` for this reader and, on its turn, ``your_turn``."""
        return self._get(table_id, state, seat, is_host, deck, ahead)[1]

    def view_json(self, table_id: str, state, seat: int | None, is_host: bool, deck: str | None) -> bytes:
        """The reader's view of ``state`` as JSON."""
        return self._get(table_id, state, seat, is_host, deck)[0]

    def patch_frames(self, table_id: str, state, since: int, seat: int | None, is_host: bool,
                     deck: str | None, ahead: Ahead | None = None) -> bytes:
        """The ``patch`` message taking this reader's view of version ``since`` to ``state``'s (and, on
        its turn, ``your_turn``), for a socket that asked for patches; the ``table`` message when this
        process no longer holds ``since``'s shared part (it keeps a table's latest two)."""
        key = (table_id, state.version, seat, is_host, deck, since)

        def build():
            shared = self._shared(table_id, state, deck, ahead)
            if shared.previous is None or shared.previous.fields["version"] != since:
                return None, self._get(table_id, state, seat, is_host, deck, ahead)[1]
            with self._lock:
                self.patched += 1
            return None, _patch(state, seat, is_host, shared)

        return self._remembered(key, build, ahead)[1]

    def _get(self, table_id, state, seat, is_host, deck, ahead: Ahead | None = None) -> tuple[bytes, bytes]:
        def build():
            with self._lock:  # called outside it
                self.built += 1
            shared = self._shared(table_id, state, deck, ahead)
            return _build(table_id, state, seat, is_host, shared.base, shared.encoded(table_id))

        return self._remembered((table_id, state.version, seat, is_host, deck), build, ahead)

    def _shared(self, table_id, state, deck, ahead: Ahead | None = None) -> _Shared:
        """The part of a version's view every reader shares (engine.view.table_view), built once
        for the mover's answer and the other readers' views alike; only each table's latest is kept,
        with the one before it (a patch's base)."""
        key = (table_id, deck)
        if ahead is not None and key in ahead.bases:
            return ahead.bases[key]
        with self._lock:
            kept = self._bases.get(key)
            if kept is not None and kept.version == state.version and ahead is None:
                self._bases.move_to_end(key)
                return kept
        # the table's last part: its history's entries are taken again (engine.view.table_view)
        before = kept.base if kept is not None else None
        shared = _Shared(engine.table_view(state, deck=deck, previous=before), before)
        if ahead is not None:
            ahead.bases[key] = shared
        else:
            self._keep_shared(key, shared)
        return shared

    def _keep_shared(self, key: tuple, shared: _Shared) -> None:
        with self._lock:
            kept = self._bases.get(key)
            if kept is None or kept.version < shared.version:  # a late reader of an older version keeps nothing
                self._bases[key] = shared
                self._bases.move_to_end(key)
                while len(self._bases) > self.shared_parts:
                    self._bases.popitem(last=False)

    def _remembered(self, key: tuple, build, ahead: Ahead | None = None):
        """``self._built[key]``, built (outside the lock) when missing; the least recent go past ``size``.
        With ``ahead``, looked up and kept there only."""
        if ahead is not None:
            out = ahead.built.get(key)
            if out is None:
                out = ahead.built[key] = build()
            return out
        with self._lock:
            out = self._built.get(key)
            if out is not None:
                self._built.move_to_end(key)
                return out
        out = build()
        self._keep_built(key, out)
        return out

    def _keep_built(self, key: tuple, out: tuple[bytes, bytes]) -> None:
        with self._lock:
            self._built[key] = out
            self._built.move_to_end(key)
            while len(self._built) > self.size:
                self._built.popitem(last=False)


class Ahead:
    """Frames of one state built while its append is in flight (``ViewFrames.ahead``; api/sockets/fanout.py
    ``Fanout.ahead`` builds them between the step's send and its reply), kept apart from the caches until
    ``keep``, which the fan-out calls only with the state appended."""

    __slots__ = ("owner", "table_id", "state", "built", "bases")

    def __init__(self, owner: ViewFrames, table_id: str, state):
        self.owner = owner
        self.table_id = table_id
        self.state = state
        self.built: dict[tuple, tuple[bytes, bytes]] = {}
        self.bases: dict[tuple, _Shared] = {}

    def keep(self) -> None:
        """``state`` is appended: what was built for it joins the caches, as if built there."""
        for key, shared in list(self.bases.items()):  # (copies: a lock's wait may let another build add one)
            self.owner._keep_shared(key, shared)
        for key, out in list(self.built.items()):
            self.owner._keep_built(key, out)


class _Shared:
    """One version's shared part of every reader's view, the one before it (when this process built
    that one: a patch's base) and, each made when first asked for, its encoding (``_encoded``) and the
    shared part of a patch from that previous version (``changed``)."""

    __slots__ = ("base", "previous", "version", "_encoded", "_changed")

    def __init__(self, base: engine.TableView, previous: engine.TableView | None):
        self.base = base
        self.previous = previous
        self.version = base.fields["version"]
        self._encoded: tuple | None = None
        self._changed: tuple[bytes, bytes | None] | None = None

    def encoded(self, table_id: str) -> tuple:
        if self._encoded is None:  # two readers at once may both encode it: the same bytes
            self._encoded = _encoded(table_id, self.base)
        return self._encoded

    def changed(self) -> tuple[bytes, bytes | None]:
        """What changed since ``previous`` (engine.view.changed), encoded: the fields' JSON members, and the
        history's new entries as a JSON list (None: the history is among the fields, whole)."""
        if self._changed is None:  # as encoded: the same bytes either way
            fields, added = changed(cast(engine.TableView, self.previous), self.base)  # a patch's: never None
            self._changed = (orjson.dumps(fields)[1:-1], None if added is None else orjson.dumps(added))
        return self._changed


def _encoded(table_id: str, base) -> tuple:
    """The view's JSON, ``{"table_id", **engine.for_reader(base, ...), "you_are_host"}``, as its shared
    runs of fields encoded once (bytes) and the names of the reader's own fields between them
    (READER_FIELDS, filled per reader by ``_build``): every reader of a version shares
    one encoding of what they all see."""
    runs, run = [], {"table_id": table_id}
    for name, value in base.fields.items():
        if name in READER_FIELDS:
            if run:
                runs.append(orjson.dumps(run)[1:-1])
                run = {}
            runs.append(name)
        else:
            run[name] = value
    if run:
        runs.append(orjson.dumps(run)[1:-1])
    return tuple(runs)


_FIELD_HEADS = {name: b'"%s":' % name.encode() for name in READER_FIELDS}


def _build(table_id: str, state, seat, is_host, base, encoded) -> tuple[bytes, bytes]:
    """The reader's view (the bytes orjson gives for ``{"table_id": table_id, **engine.for_reader(base,
    state, seat), "you_are_host": is_host}``: tests/api/sockets/test_frames.py) and its frames."""
    part: Mapping[str, object] = reader_part(base, state, seat)
    pieces = []
    for run in encoded:
        if type(run) is str:
            pieces.append(_FIELD_HEADS[run] + orjson.dumps(part[run]))
        else:
            pieces.append(run)
    pieces.append(_FIELD_HEADS["labels"] + orjson.dumps(part["labels"]))
    pieces.append(b'"you_are_host":true' if is_host else b'"you_are_host":false')
    view = b"{" + b",".join(pieces) + b"}"
    frames = text_frame(b'{"type":"table","version":%d,"table":%s}' % (state.version, view))
    return view, frames + _your_turn(state, seat)


def _your_turn(state, seat) -> bytes:
    """``your_turn`` for the reader whose turn it is (sent with its view or patch, in the same write)."""
    if seat is not None and state.status == "playing" and state.turn == seat:
        return message({"type": "your_turn", "seat": seat, "version": state.version})
    return b""


def _patch(state, seat, is_host: bool, shared: _Shared) -> bytes:
    """The reader's ``patch`` message (docs/api.md): ``{"type": "patch", "version", "from", "set":
    {the fields that changed, and the reader's own: you, hand, options, you_are_host}, "history_add": [entries],
    "labels_add": {card: label}}`` and, on its turn, ``your_turn``. What every reader shares is
    encoded once a version."""
    fields, added = shared.changed()
    previous = cast(engine.TableView, shared.previous)  # a patch's base: never None
    own = cast(dict[str, object], reader_changes(previous, shared.base, state, seat))
    labels = own.pop("labels")
    own["you_are_host"] = is_host
    body = b'{"type":"patch","version":%d,"from":%d,"set":{%s%s%s}' % (
        state.version, previous.fields["version"], fields, b"," if fields else b"",
        orjson.dumps(own)[1:-1])
    if added is not None:
        body += b',"history_add":' + added
    body += b',"labels_add":' + orjson.dumps(labels) + b"}"
    return text_frame(body) + _your_turn(state, seat)
