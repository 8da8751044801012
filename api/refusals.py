"""Every refusal, whatever carried the request (a POST through Flask or api/http/hot.py, a socket
frame through api/sockets/moves.py): the contract's error (docs/api.md: ``{"error": {"code",
"message", "details"}}``) and its status, and the request's log line and metrics. Transport-neutral:
no Flask and no socket here; each way in only writes the ``Refusal`` in its own frame (a response, a
socket's ``error`` frame).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from marshmallow import ValidationError
from redis import exceptions as redis_errors
from werkzeug.exceptions import HTTPException

from api.server.observability import UNMATCHED_ROUTE, Metrics, request_done
from engine import RuleError
from events.connection import DOWN_PREFIXES, store_away
from events.replication import NotAcknowledged

_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "bad_request", 414: "bad_request", 415: "bad_request",
               426: "upgrade_required", 429: "rate_limited", 431: "bad_request"}

_HTTP_MESSAGES = {
    404: "There is nothing at this address.",
    413: "The request body is larger than 16 KB.",
    414: "The request's address is too long.",
    426: "This address takes WebSocket upgrades only (Upgrade: websocket).",
    431: "The request's headers are too large.",
}


# Seconds a client should wait before trying again when the store cannot take a request.
RETRY_AFTER = 5

# the same refusals, when they come back as a script's error text, and one more for a client
# (NOREPLICAS: a master with min-replicas-to-write set and too few replicas, docs/operations.md)
_UNAVAILABLE_PREFIXES = (*DOWN_PREFIXES, "NOREPLICAS ")


def store_unavailable(exc: BaseException) -> str | None:
    """What is wrong with the store when ``exc`` says it cannot take requests now, else None."""
    if isinstance(exc, NotAcknowledged):  # a move its replicas did not hold in time
        return "unreplicated"
    if isinstance(exc, redis_errors.OutOfMemoryError):
        return "full"
    if isinstance(exc, redis_errors.ReadOnlyError):
        return "read-only"
    if isinstance(exc, redis_errors.BusyLoadingError):
        return "loading"
    if store_away(exc):  # down, starting, failing over, a cluster no node of which answers
        return "unreachable"
    if isinstance(exc, redis_errors.ResponseError):
        text = str(exc)
        for prefix in _UNAVAILABLE_PREFIXES:
            if text.startswith(prefix) or f"-{prefix}" in text or f": {prefix}" in text:
                return "full" if prefix == "OOM " else prefix.strip().lower()
    return None


@dataclass(frozen=True)
class Refusal:
    """An error answer in the contract's shape, before any framework makes it a response."""

    status: int
    code: str
    message: str
    details: dict = field(default_factory=dict)
    headers: tuple[tuple[str, str], ...] = ()

    def body(self) -> dict:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class RateLimited(Exception):
    """A limit counted by our own code (api/http/limits.py: PerToken, MoveLimit) was reached."""

    def __init__(self, limit: str, wait: int):
        super().__init__(limit)
        self.limit = limit
        self.wait = wait


def rate_limited(limit: str, wait: int) -> Refusal:
    return Refusal(429, "rate_limited", f"Too many requests: {limit}. Try again in {wait} s.",
                   {"limit": limit, "retry_after": wait}, (("Retry-After", str(wait)),))


def unavailable(state: str) -> Refusal:
    # never the store's address or its own words: they name hosts, ports and memory sizes
    return Refusal(503, "unavailable", f"The table store cannot take requests now ({state}); try again shortly.",
                   {"store": state}, (("Retry-After", str(RETRY_AFTER)),))


def refusal(exc: Exception, logger: logging.Logger) -> Refusal:
    """The contract's answer to what a request's handler raised, whatever serves it (Flask's error
    handlers below, api/http/hot.py); store failures and the unexpected are logged here."""
    if isinstance(exc, RuleError):
        return Refusal(exc.status, exc.code, exc.message, exc.details)
    if isinstance(exc, ValidationError):
        details = _json_keys(exc.messages if isinstance(exc.messages, dict) else {"body": exc.messages})
        return Refusal(400, "bad_request", f"Invalid request: check {', '.join(sorted(details))}.", details)
    if isinstance(exc, RateLimited):
        return rate_limited(exc.limit, exc.wait)
    if isinstance(exc, HTTPException):
        status = exc.code or 500
        # what werkzeug would have sent: Allow on a 405, Retry-After on a 429 or 503
        kept = tuple((name, value) for name, value in exc.get_headers() if name.lower() != "content-type")
        return Refusal(status, _HTTP_CODES.get(status, "error"), _HTTP_MESSAGES.get(status, exc.description or ""),
                       {}, kept)
    state = store_unavailable(exc)
    if state is not None:  # the store, or a store error wrapped by a library on the way up
        if isinstance(exc, (redis_errors.RedisError, redis_errors.RedisClusterException)):
            logger.warning("table store unavailable (%s): %s: %s", state, type(exc).__name__, exc)
        return unavailable(state)
    logger.exception("unhandled error", exc_info=exc)
    return Refusal(500, "internal", "Something went wrong on our side.")



def refuse(metrics: Metrics, logger: logging.Logger, exc: Exception, log: dict | None, method: str, path: str,
           started: float | None, route: str = UNMATCHED_ROUTE) -> Refusal:
    """What a request's handler raised, answered: its ``Refusal`` (``refusal``), and the request's log
    line and metrics (``request_done``: its ``log`` fields, the status, the error's code as the move's
    outcome). The one envelope of every refused request, whichever way it came in; the caller writes
    the ``Refusal`` in its own frame and hands ``log`` over."""
    refused = refusal(exc, logger)
    request_done(metrics, log, method, path, refused.status, refused.code, started, route)
    return refused


def _json_keys(messages):
    """marshmallow's messages with every key a string: a list's bad element is keyed by its index
    (an int), and the JSON encoder takes string keys only."""
    if isinstance(messages, dict):
        return {str(k): _json_keys(v) for k, v in messages.items()}
    if isinstance(messages, list):
        return [_json_keys(v) for v in messages]
    return messages
