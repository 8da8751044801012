"""A table socket's client frames: moves (docs/api.md v1.2, "Moves over the socket").

A socket opened with a seat token sends ``{"type": "move", "id", "move", "expected_version"?}``.
Each move goes through ``api.moves.decide_move``, the one path of every move (a POST's too):
the per-token rate limit, the token, the schema, the idempotency key (the ``id``, one key with a
POST's ``Idempotency-Key`` by the same seat), the rules, the append, the log line and the metrics
(``transport="socket"``). The answer goes back on that socket: ``{"type": "ack", "id", "version"}``
or ``{"type": "error", "id", "error": {...}}``; the mover's new view follows in the same write (the
socket handler sends it, api/sockets/route.py), and every other socket of the table hears the change
through the fan-out (api/sockets/fanout.py), as for a POST.

What is not a move changes nothing: a frame that is not JSON, of another type or malformed is
answered ``bad_request`` (with its ``id`` when it has a readable one); a socket without a seat token
is answered ``forbidden``. Every refusal is a POST's (api/refusals.py ``refuse``): the same error,
and a log line and metrics of its own (method ``WS``, the socket's route).

A socket whose frames keep being refused as malformed or over the rate
limit (``STRIKES_MAX``), or which sends faster than its frames are answered (``INBOX_MAX`` waiting),
is closed with 1008. Frames over 4 KB never get here: simple-websocket closes the socket (1009).
"""

from __future__ import annotations

import time
from collections import deque

import orjson
from marshmallow import ValidationError

from api import moves
from api.http import schemas
from api.refusals import refuse
from api.server.observability import SOCKET_ROUTE, request_done
from api.sockets import frames
from engine import RuleError
from events import stages

INBOX_MAX = 32  # client frames waiting to be answered; a client that waits for its acks has one
STRIKES_MAX = 10  # malformed or rate-limited frames a socket may send before it is closed
POLICY_VIOLATION = 1008


class Inbox:
    """simple-websocket's input buffer for a table socket (its reader appends each client message
    and sets the socket's event): the frames the handler has yet to answer, bounded."""

    __slots__ = ("frames", "overflow")

    def __init__(self):
        self.frames: deque = deque()
        self.overflow = False

    def append(self, frame) -> None:
        if len(self.frames) >= INBOX_MAX:
            self.overflow = True  # the handler closes the socket; nothing more is kept
        else:
            self.frames.append(frame)

    def take(self) -> list:
        out = []
        while self.frames:
            out.append(self.frames.popleft())
        return out


class SocketMoves:
    """One socket's moves: who sends them (its token and address, its view's deck), and how many of
    its frames were refused as malformed or over the limit."""

    __slots__ = ("ctx", "table_id", "token", "address", "deck", "logger", "path", "strikes", "mailbox")

    def __init__(self, ctx, table_id: str, token: str | None, address: str | None, deck: str | None, logger,
                 mailbox=None):
        self.ctx = ctx
        self.table_id = table_id
        self.token = token
        self.address = address
        self.deck = deck
        self.logger = logger
        self.path = f"/tables/{table_id}/ws"
        self.strikes = 0
        self.mailbox = mailbox  # this socket's (api/sockets/fanout.py): it sends its own move with the ack

    @property
    def struck_out(self) -> bool:
        return self.strikes >= STRIKES_MAX

    def answer(self, raw):
        """(the answer frame, the state the move made or None). A refusal raises nothing."""
        started = time.perf_counter()
        log: dict = {}
        move_id, deciding = None, False
        try:
            try:
                frame = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise RuleError("bad_request", "The frame is not JSON.", {"frame": "not JSON"}) from None
            move_id = frame.get("id") if isinstance(frame, dict) else None
            move_id = move_id if isinstance(move_id, str) and 0 < len(move_id) <= 100 else None
            ask = _ask(self, _checked(frame))
            deciding = True
            if stages.ON:
                stages.mark("checked")
            moved = moves.decide_move(self.ctx, ask, log, self._post, self._ahead)
        except Exception as exc:
            # the envelope of every refusal (a POST's too): the error, its log line and metrics
            refused = refuse(self.ctx.metrics, self.logger, exc, log, "WS", self.path, started, SOCKET_ROUTE)
            if refused.code == "rate_limited" or not deciding:  # over the limit, or malformed
                self.strikes += 1
            return frames.message({"type": "error", "id": move_id, **refused.body()}), None
        request_done(self.ctx.metrics, log, "WS", self.path, 200, None, started, SOCKET_ROUTE)
        self.strikes = 0
        version = moved.outcome.version
        state = None if moved.outcome.repeated else moved.outcome.state
        if state is not None:  # posted before the change hook (_post); a post it did not make, now
            self.ctx.fanout.published(self.table_id, state, skip=self.mailbox)
        ack = b'{"type":"ack","id":%s,"version":%d}' % (orjson.dumps(ask.idempotency_key), version)
        return frames.text_frame(ack), state

    def _ahead(self, state) -> None:
        """The table's other sockets' frames of the move, built while its append is in flight."""
        self.ctx.fanout.ahead(self.table_id, state, skip=self.mailbox)

    def _post(self, state) -> None:
        """The move, appended, to the table's other sockets here, before the change hook runs: they
        hear it now, not from its notice, nor after the hook's writes."""
        self.ctx.fanout.published(self.table_id, state, skip=self.mailbox)
        if stages.ON:
            stages.mark("fanout")


def _ask(moves_of: SocketMoves, frame: dict) -> moves.Ask:
    """A move frame (``_checked``) as the ``Ask`` a POST of it would make, its ``id`` the key."""
    body = frame["move"]
    if "expected_version" in frame:
        if "expected_version" in body:
            raise RuleError("bad_request", "expected_version goes beside the move, not in it.",
                            {"move": {"expected_version": ["beside the move"]}})
        body = {**body, "expected_version": frame["expected_version"]}
    return moves.Ask(moves_of.table_id, moves_of.token, moves_of.address, moves_of.deck, None, body, frame["id"],
                     moves.SOCKET)


_FRAME_KEYS = frozenset(("type", "id", "move", "expected_version"))
_VERSION_MAX = 2**53 - 1


def _checked(frame) -> dict:
    """The frame, when it is a move frame as schemas.SocketMove says; checked here by hand first (the
    schema cost more than the move's own), and by the schema, which names what is wrong, otherwise."""
    if not isinstance(frame, dict):
        raise ValidationError({"frame": ["must be a JSON object"]})
    move_id, version = frame.get("id"), frame.get("expected_version", 0)
    if (frame.get("type") == "move" and frame.keys() <= _FRAME_KEYS and type(move_id) is str
            and 0 < len(move_id) <= 100 and type(frame.get("move")) is dict
            and type(version) is int and 0 <= version <= _VERSION_MAX):
        return frame
    return schemas.socket_move.load(frame)


__all__ = ["INBOX_MAX", "STRIKES_MAX", "Inbox", "SocketMoves"]
