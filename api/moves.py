"""How a move is decided, whatever carried it: a POST (Flask's route or api/http/hot.py) or a socket
frame (api/sockets/moves.py). One path, transport-neutral: an ``Ask`` in, a ``Moved`` out, a refusal
raised (RuleError, ValidationError, RateLimited) for the caller to answer in its own envelope.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import engine
from api import auth
from api.http import limits
from api.http.schemas import MOVES, load_move
from api.server import observability
from engine import RuleError
from events.service import Outcome
from events.store import CountOver, RateCount


def json_object(body: object) -> dict:
    if not isinstance(body, dict):
        raise RuleError("bad_request", "The body must be a JSON object.", {"body": "not a JSON object"})
    return body


def checked_deck(deck: str | None) -> str | None:
    if deck is not None and deck not in engine.cards.DECKS:
        raise RuleError("bad_request", f"Unknown deck design {deck!r}.", {"deck": list(engine.cards.DECKS)})
    return deck


# what carried a move (its log line's ``transport``, the metrics' label)
HTTP, SOCKET = "http", "socket"


@dataclass(frozen=True)
class Ask:
    """What a view or a move asks: taken from Flask's request below, straight from the WSGI environ
    (api/http/hot.py), or from a socket's move frame (api/sockets/moves.py), and answered by the same
    functions."""

    table_id: str
    token: str | None = None
    address: str | None = None  # the client's, for a limit counted without a token
    deck: str | None = None
    if_none_match: str | None = None
    body: object = None  # the parsed JSON body; None when it is not JSON
    idempotency_key: str | None = None  # a POST's Idempotency-Key, a socket move's id
    transport: str = HTTP


class MoveStep:
    """The API's own parts of a move's append step (events/hooks.py ``StepParts``, handed to
    ``TableService.execute``): this process's hub id, as every way in posts the move to this
    process's sockets itself (``Hub.post_local``), so the step publishes no notice when no other
    process listens; and the request's rate count (api/http/limits.py ``Count``), counted in the
    first step only."""

    __slots__ = ("_count", "quiet_for")

    def __init__(self, listener: str | None, count: limits.Count | None = None):
        self.quiet_for = listener
        self._count = count

    def count(self) -> RateCount | None:
        return self._count.step() if self._count is not None else None


@dataclass(frozen=True)
class Moved:
    """A move decided (applied, or answered from its first time) by ``decide_move``."""

    outcome: Outcome
    player: str
    seat: int | None
    deck: str | None


def decide_move(ctx, ask: Ask, log: dict, posted=None, ahead=None) -> Moved:
    """Every move, whatever carried it (a POST through Flask or api/http/hot.py, a socket frame through
    api/sockets/moves.py): the limit, the token, the schema, the idempotency key, the rules and the
    append, the log fields and the metrics. RuleError (or ValidationError, RateLimited) when it is
    refused.

    A repeat of a key this seat used already (an ``Idempotency-Key`` or a socket move's ``id``: one
    key) is answered as the first time, over the rate limit too: a client retrying an answer it lost
    gets that answer, never a 429. (It is counted like any request: knowing it is a repeat before
    counting would cost every move a round trip to the store.)

    The per-token limit is counted in the append's own step (api/http/limits.py ``MoveLimit``): a
    move that reaches no append is counted after it, by itself, and its refusal becomes a 429 when
    that count is over the limit, as it would have been had it been counted first.

    ``posted(state)``: the caller's post of an appended move to its process's sockets
    (``Fanout.published``), made before the change hook runs (``TableService.execute``); ``ahead(state)``:
    the caller's work on it while its append is in flight (``Fanout.ahead``)."""
    started = time.perf_counter()
    log.update(table_id=ask.table_id, transport=ask.transport)
    limit = ctx.move_limit
    count = limit.counter(ask.table_id, ask.token) if limit is not None else None
    if limit is not None and count is None:  # no token: per address, before anything else is read
        limit.per_address.hit(limits.token_key(ask.token, ask.address))
    try:
        outcome, player, deck = _decided(ctx, ask, log, count, posted, ahead)
    except CountOver as exc:  # the append's step counted it over the limit, and it is no repeat
        raise limit.refused(exc.retry_after) from None
    except Exception:  # refused before an append: it counts too (nothing more if the step counted it)
        over = count.alone(ctx.service.store) if count is not None else 0
        if over:
            raise limit.refused(over) from None
        raise
    # answered without an append (a repeat, a no-op): counted here; after an append, nothing more
    over = count.alone(ctx.service.store) if count is not None else 0
    if over and not outcome.repeated:
        raise limit.refused(over)
    return _moved(ctx, ask, log, outcome, player, deck, started)


def _decided(ctx, ask: Ask, log: dict, count, posted=None, ahead=None) -> tuple[Outcome, str, str | None]:
    """The move decided and appended (counted on ``count`` in the append's step): its outcome,
    the mover and the reader's deck."""
    table_id = ask.table_id
    key = ask.idempotency_key
    if ask.token is None and ask.transport == SOCKET:  # docs/api.md v1.2: "answers forbidden"
        raise RuleError("forbidden", "This socket has no seat token: open it with ?token= to move.")
    player = auth.require(ctx.redis, table_id, ask.token)
    move = load_move(json_object(ask.body))
    expected = move.pop("expected_version", None)
    if key is not None and not (0 < len(key) <= 100):
        name = "id" if ask.transport == SOCKET else "Idempotency-Key"
        raise RuleError("bad_request", f"{name} must be 1 to 100 characters.", {name: "length"})
    deck = checked_deck(ask.deck)  # before the move: a refused request changes nothing
    log.update(command=move["type"])
    outcome = ctx.service.execute(
        table_id, engine.parse_command({**move, "player": player}), actor=f"player:{player}",
        expected_version=expected, idempotency_key=key, parts=MoveStep(ctx.fanout.listener_id, count),
        posted=posted, ahead=ahead,
    )
    return outcome, player, deck


def _moved(ctx, ask: Ask, log: dict, outcome: Outcome, player: str, deck, started: float) -> Moved:
    if outcome.repeated and "command" not in log:  # answered before its body was read
        deck = checked_deck(ask.deck)
        body = ask.body if isinstance(ask.body, dict) else {}
        log.update(command=body.get("type") if body.get("type") in MOVES else "repeat")
    seat = outcome.state.seat_of(player)
    log.update(version=outcome.version, seat=seat, repeated=outcome.repeated)
    # counted with the request (observability.request_done), in a batch, under a key no line carries
    log[observability.DECIDED] = (ask.transport, time.perf_counter() - started)
    return Moved(outcome, player, seat, deck)


__all__ = ["HTTP", "SOCKET", "Ask", "MoveStep", "Moved", "checked_deck", "decide_move", "json_object"]
