"""Every error leaves in the contract's shape: {"error": {"code", "message", "details"}}; what a
refusal is, its log line and metrics, whatever way the request came in: api/refusals.py. Here: Flask's
side of it (its error handlers, the request's size limits)."""

from __future__ import annotations

import io

from flask import current_app, g, jsonify, request
from marshmallow import ValidationError
from redis import exceptions as redis_errors
from werkzeug.exceptions import HTTPException, RequestEntityTooLarge, RequestHeaderFieldsTooLarge, RequestURITooLarge

from api.http.schemas import BODY_MAX
from api.refusals import (  # noqa: F401  (their names here too: api/http's modules import them from here)
    RETRY_AFTER,
    RateLimited,
    Refusal,
    rate_limited,
    refusal,
    refuse,
    store_unavailable,
    unavailable,
)
from api.server.observability import UNMATCHED_ROUTE
from engine import RuleError


class UpgradeRequired(HTTPException):
    """426: a plain request to the socket route (RFC 9110: the answer names the protocol to switch to)."""

    code = 426
    description = "This address takes WebSocket upgrades only."

    def get_headers(self, environ=None, scope=None):
        return [*super().get_headers(environ, scope), ("Upgrade", "websocket"), ("Connection", "Upgrade")]


# An address (path and query) and headers beyond these are refused with a JSON 414 and 431. The
# HTTP server's own limits are above them (gunicorn: 4094 bytes a request line, 8190 a header
# field): what is larger still gunicorn refuses itself, in the same shape (api/server/wire.py).
URL_MAX = 2048
HEADERS_MAX = 8192


def respond(refused: Refusal):
    """A Refusal as Flask's (response, status)."""
    response = jsonify(refused.body())
    for name, value in refused.headers:
        response.headers[name] = value
    return response, refused.status


def refused_response(exc: Exception):
    """Flask's answer to what a request raised (its error handlers): ``api.refusals.refuse``'s, the
    refusal counted and logged here with its own code (``observability.install``'s after-request hook
    counts every other answer)."""
    rule = request.url_rule
    refused = refuse(current_app.extensions["escoba"].metrics, current_app.logger, exc, g.get("log"),
                     request.method, request.path, g.get("started"),
                     rule.rule if rule is not None else UNMATCHED_ROUTE)
    g.counted = True
    return respond(refused)


def unavailable_response(state: str):
    return respond(unavailable(state))


def too_large(environ) -> HTTPException | None:
    """What to refuse a request whose address, headers or declared body are over our limits,
    measured on the WSGI environ as sent (werkzeug's request.headers rebuilds every name). A body is
    refused from its Content-Length, before a byte of it is read, on every route."""
    if len(environ.get("PATH_INFO", "")) + 1 + len(environ.get("QUERY_STRING", "")) > URL_MAX:
        return RequestURITooLarge()
    if _headers_size(environ) > HEADERS_MAX:
        return RequestHeaderFieldsTooLarge()
    length = environ.get("CONTENT_LENGTH", "")
    if length.isascii() and length.isdigit() and int(length) > BODY_MAX:
        return RequestEntityTooLarge()
    return None


def bound_chunked(environ) -> None:
    """A chunked body (no Content-Length) read here up to the limit, and handed on with its length;
    one longer is refused with 413 (and its connection closed unread: api/server/wire.py). werkzeug's own
    bound returned such a body cut at 16 KB, which then read as bad JSON."""
    if "chunked" not in environ.get("HTTP_TRANSFER_ENCODING", "").lower() or environ.get("CONTENT_LENGTH"):
        return
    data = environ["wsgi.input"].read(BODY_MAX + 1)
    if len(data) > BODY_MAX:
        raise RequestEntityTooLarge()
    environ["wsgi.input"] = io.BytesIO(data)
    environ["CONTENT_LENGTH"] = str(len(data))
    del environ["HTTP_TRANSFER_ENCODING"]


def _headers_size(environ) -> int:
    """The bytes of the request's header fields, ``Name: value\r\n`` each (HTTP_X_Y is X-Y)."""
    size = 0
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            size += len(key) - 1 + len(value)  # len(key) - 5 for the name, 4 for ": " and CRLF
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            size += len(key) + 4 + len(value)
    return size


def install(app) -> None:
    @app.before_request
    def _request_size():
        refused = too_large(request.environ)
        if refused is not None:
            raise refused
        bound_chunked(request.environ)

    @app.errorhandler(RuleError)
    @app.errorhandler(ValidationError)
    @app.errorhandler(RateLimited)
    @app.errorhandler(HTTPException)
    @app.errorhandler(redis_errors.RedisError)
    @app.errorhandler(Exception)
    def refused(e: Exception):
        return refused_response(e)
