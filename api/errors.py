"""Every error leaves in the contract's shape: {"error": {"code", "message", "details"}}."""

from __future__ import annotations

from flask import jsonify, request
from marshmallow import ValidationError
from redis import exceptions as redis_errors
from werkzeug.exceptions import HTTPException, RequestHeaderFieldsTooLarge, RequestURITooLarge

from engine import RuleError

_HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
               405: "method_not_allowed", 413: "bad_request", 414: "bad_request", 415: "bad_request",
               429: "rate_limited", 431: "bad_request"}

_HTTP_MESSAGES = {
    404: "There is nothing at this address.",
    413: "The request body is larger than 16 KB.",
    414: "The request's address is too long.",
    431: "The request's headers are too large.",
}

# An address (path and query) and headers beyond these are refused with a JSON 414 and 431. The
# HTTP server's own limits are above them (gunicorn: 4094 bytes a request line, 8190 a header
# field): what is larger still gunicorn refuses itself, in the same shape (api/wire.py).
URL_MAX = 2048
HEADERS_MAX = 8192

# Seconds a client should wait before trying again when the store cannot take a request.
RETRY_AFTER = 5

# The store is down, starting, failing over, read-only or full: the request may work later.
_UNAVAILABLE = (redis_errors.ConnectionError, redis_errors.TimeoutError, redis_errors.BusyLoadingError,
                redis_errors.ReadOnlyError, redis_errors.OutOfMemoryError, redis_errors.ClusterDownError,
                redis_errors.TryAgainError, redis_errors.MasterDownError)
# the same refusals, when they come back as a script's error text
_UNAVAILABLE_PREFIXES = ("OOM ", "READONLY ", "LOADING ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ")


def store_unavailable(exc: BaseException) -> str | None:
    """What is wrong with the store when ``exc`` says it cannot take requests now, else None."""
    if isinstance(exc, redis_errors.OutOfMemoryError):
        return "full"
    if isinstance(exc, redis_errors.ReadOnlyError):
        return "read-only"
    if isinstance(exc, redis_errors.BusyLoadingError):
        return "loading"
    if isinstance(exc, _UNAVAILABLE):
        return "unreachable"
    if isinstance(exc, redis_errors.ResponseError):
        text = str(exc)
        for prefix in _UNAVAILABLE_PREFIXES:
            if text.startswith(prefix) or f"-{prefix}" in text or f": {prefix}" in text:
                return "full" if prefix == "OOM " else prefix.strip().lower()
    return None


def error_response(code: str, message: str, status: int, details: dict | None = None):
    body = {"error": {"code": code, "message": message, "details": details or {}}}
    return jsonify(body), status


def unavailable_response(state: str):
    # never the store's address or its own words: they name hosts, ports and memory sizes
    response, status = error_response(
        "unavailable", f"The table store cannot take requests now ({state}); try again shortly.", 503,
        {"store": state})
    response.headers["Retry-After"] = str(RETRY_AFTER)
    return response, status


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
        # measured on the WSGI environ as sent (werkzeug's request.headers rebuilds every name)
        environ = request.environ
        if len(environ.get("PATH_INFO", "")) + 1 + len(environ.get("QUERY_STRING", "")) > URL_MAX:
            raise RequestURITooLarge()
        if _headers_size(environ) > HEADERS_MAX:
            raise RequestHeaderFieldsTooLarge()

    @app.errorhandler(RuleError)
    def rule_error(e: RuleError):
        return error_response(e.code, e.message, e.status, e.details)

    @app.errorhandler(ValidationError)
    def validation_error(e: ValidationError):
        details = _json_keys(e.messages if isinstance(e.messages, dict) else {"body": e.messages})
        fields_ = ", ".join(sorted(details))
        return error_response("bad_request", f"Invalid request: check {fields_}.", 400, details)

    @app.errorhandler(HTTPException)
    def http_error(e: HTTPException):
        status = e.code or 500
        message = _HTTP_MESSAGES.get(status, e.description)
        response, status = error_response(_HTTP_CODES.get(status, "error"), message, status)
        # what werkzeug would have sent: Allow on a 405, Retry-After on a 429 or 503
        for name, value in e.get_headers():
            if name.lower() != "content-type":
                response.headers[name] = value
        return response, status

    @app.errorhandler(redis_errors.RedisError)
    def redis_error(e: redis_errors.RedisError):
        state = store_unavailable(e)
        if state is None:
            return unexpected(e)
        app.logger.warning("table store unavailable (%s): %s: %s", state, type(e).__name__, e)
        return unavailable_response(state)

    @app.errorhandler(Exception)
    def unexpected(e: Exception):
        state = store_unavailable(e)
        if state is not None:  # a store error wrapped by a library on the way up
            return unavailable_response(state)
        app.logger.exception("unhandled error")
        return error_response("internal", "Something went wrong on our side.", 500)


def _json_keys(messages):
    """marshmallow's messages with every key a string: a list's bad element is keyed by its index
    (an int), and the JSON encoder takes string keys only."""
    if isinstance(messages, dict):
        return {str(k): _json_keys(v) for k, v in messages.items()}
    if isinstance(messages, list):
        return [_json_keys(v) for v in messages]
    return messages
