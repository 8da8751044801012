"""The two requests of every move, answered straight from the WSGI environ.

A client's move is two requests: ``GET /tables/{id}`` (its view) and ``POST
/tables/{id}/moves``. Flask's request cycle around each (a request context, a URL
adapter, the hooks, a Response object and its header list) cost more CPU than the
engine's whole decision. Here the two are matched by a regular expression and
answered by the same functions Flask's routes call (``api.http.tables.view_answer`` and
``move_answer``): the same limits, checks, errors, log line and metrics; the
security headers and the trusted-proxy address are added by the WSGI layers around
this one, as for every answer.

Anything else, or anything unusual about these two, goes on to Flask untouched,
which answers it as it always has: another method (HEAD, OPTIONS), an address or
headers over the limits (414, 431), a body that is not declared JSON, has no
length or is over 16 KB (413), or a chunked one. The body is read only once the
request is taken here.
"""

from __future__ import annotations

import re
import time

import orjson
from werkzeug.http import HTTP_STATUS_CODES
from werkzeug.wrappers import Request

from api import auth
from api.http import errors, tables
from api.http.schemas import BODY_MAX
from api.moves import Ask
from api.refusals import refuse
from api.server.observability import MOVE_ROUTE, VIEW_ROUTE, request_done

_VIEW = re.compile(r"/tables/([^/]+)\Z")
_MOVE = re.compile(r"/tables/([^/]+)/moves\Z")
_JSON = (("Content-Type", "application/json"),)


def install(app) -> None:
    """Puts the hot routes in front of ``app``'s Flask cycle (innermost: the security headers and
    the proxy fix, installed after, wrap both)."""
    flask_app = app.wsgi_app
    ctx = app.extensions["escoba"]
    logger = app.logger

    def wsgi_app(environ, start_response):
        method = environ.get("REQUEST_METHOD")
        if method == "GET":
            match, answer, route = _VIEW.match(environ.get("PATH_INFO", "")), tables.view_answer, VIEW_ROUTE
        elif method == "POST":
            match, answer, route = _MOVE.match(environ.get("PATH_INFO", "")), tables.move_answer, MOVE_ROUTE
        else:
            match = None
        if match is None or errors.too_large(environ) is not None:
            return flask_app(environ, start_response)
        body = None
        if method == "POST":
            length = _json_length(environ)
            if length is None:
                return flask_app(environ, start_response)
            body = _parsed(environ["wsgi.input"].read(length))
        started = time.perf_counter()
        log: dict = {}
        query = environ.get("QUERY_STRING")
        ask = Ask(
            match[1], auth.bearer_of(environ.get("HTTP_AUTHORIZATION", "")), environ.get("REMOTE_ADDR"),
            Request(environ).args.get("deck") if query else None,  # werkzeug's own parsing, when there is one
            environ.get("HTTP_IF_NONE_MATCH"), body, environ.get("HTTP_IDEMPOTENCY_KEY"),
        )
        path = environ.get("PATH_INFO", "")
        try:
            done = answer(ctx, ask, log)
        except Exception as exc:
            refused = refuse(ctx.metrics, logger, exc, log, method, path, started, route)
            payload = orjson.dumps(refused.body())
            start_response(f"{refused.status} {HTTP_STATUS_CODES[refused.status]}",
                           [*_head(refused.status, payload), *refused.headers])
            return [payload]
        status, payload = done.status, done.body
        start_response(f"{status} {HTTP_STATUS_CODES[status]}", [*_head(status, payload), *done.headers])
        request_done(ctx.metrics, log, method, path, status, None, started, route)
        return [payload]

    app.wsgi_app = wsgi_app


def _head(status: int, payload: bytes) -> tuple[tuple[str, str], ...]:
    if status == 304:  # what werkzeug sends for a 304: no entity headers
        return ()
    return (*_JSON, ("Content-Length", str(len(payload))))


def _json_length(environ) -> int | None:
    """The body's length when it is one this module takes: declared JSON, of a known length within
    the limit, not chunked; None leaves the request to Flask."""
    content_type = environ.get("CONTENT_TYPE", "")
    if content_type.partition(";")[0].strip().lower() != "application/json":
        return None
    if environ.get("HTTP_TRANSFER_ENCODING"):
        return None
    raw = environ.get("CONTENT_LENGTH", "")
    if not (raw.isascii() and raw.isdigit()) or int(raw) > BODY_MAX:
        return None
    return int(raw)


def _parsed(data: bytes):
    """The JSON body, or None when it is not JSON (as Flask's ``get_json(silent=True)``)."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
