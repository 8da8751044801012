"""What goes on the wire from gunicorn: answers in one write, and its own refusals as JSON.

**One write.** gunicorn writes a response's status line and headers in one
``sendall`` and its body in another: two system calls, two TCP segments and two wake-ups of the
reader for every API answer, which all fit in one. This response keeps the head
until the first body bytes (or the close, for an answer with no body) and sends
them together. Everything else is gunicorn's own code: the head is what its
``send_headers`` writes, captured rather than rebuilt.

**Its refusals.** A request gunicorn cannot parse or will not take (a request line
over 4094 bytes, a header field over 8190, a malformed line) never reaches the app,
and gunicorn answers it with an HTML page of its own. ``json_error`` answers it in
the contract's shape instead (docs/api.md: every error, 414 and 431 included),
with gunicorn's status and the security headers every answer carries.
"""

from __future__ import annotations

import email.utils
import errno
import functools
import logging
import os
import time
import types

import orjson
from gunicorn import util
from gunicorn.http import message, wsgi
from gunicorn.http.body import ChunkedReader, LengthReader

from api.http.headers import HEADERS
from api.http.schemas import BODY_MAX
from events import patches
from events.seconds import PerSecond

# gunicorn's statuses for what it refuses, as the contract's codes and words
_REFUSALS = {
    400: ("bad_request", "The request is not valid HTTP."),
    403: ("forbidden", "The request is forbidden."),
    414: ("bad_request", "The request's address is too long."),
    417: ("bad_request", "The request's Expect header cannot be met."),
    431: ("bad_request", "The request's headers are too large."),
    500: ("internal", "Something went wrong on our side."),
    501: ("bad_request", "The request's transfer coding is not supported."),
}
# a write's failures that say the client is gone: a closed connection, or a socket we closed after it left
CLIENT_GONE = frozenset((errno.EBADF, errno.EPIPE, errno.ECONNRESET, errno.ENOTCONN))
log = logging.getLogger(__name__)
DETAIL_MAX = 200  # characters of gunicorn's own reason kept (it may quote what the client sent)


class _Captured:
    """Stands in for the socket while gunicorn writes the head."""

    def __init__(self):
        self.data = b""

    def sendall(self, data: bytes) -> None:
        self.data += data


def send_whole(sock, data) -> None:
    """``data`` written whole: one ``send`` takes it unless the peer's window is full (then
    ``sendall`` the rest). gevent's ``sendall`` first asks the kernel for the socket's buffer size,
    a ``getsockopt`` system call on every write (docs/benchmarks.md).

    A client that has gone is raised as ``ENOTCONN``, which gunicorn notes at debug level: a socket
    already closed on our side after its client left (``EBADF``) is that too, not a server's error
    to log with a traceback (issue 54)."""
    try:
        sent = sock.send(data)
        if sent < len(data):
            sock.sendall(memoryview(data)[sent:])
    except OSError as e:
        if e.errno not in CLIENT_GONE:
            raise
        log.debug("the client has gone before its answer was written (%s)", e)
        raise OSError(errno.ENOTCONN, "the client has gone") from e


class ClosingResponse(wsgi.Response):
    """gunicorn's response, closing its connection after a 413 or a body it would have to drain."""

    def start_response(self, status, headers, exc_info=None):
        write = super().start_response(status, headers, exc_info)
        if self.status_code == 413 or _unbounded_rest(self.req):
            # gunicorn reads what is left of a body to reach the next request on the connection:
            # a huge one held the worker for seconds after its 413. Closing instead reads nothing more
            self.force_close()
        return write


class OneWriteResponse(ClosingResponse):
    head = b""

    def send_headers(self):
        if self.headers_sent:
            return
        sock, self.sock = self.sock, _Captured()
        try:
            super().send_headers()
        finally:
            self.head, self.sock = self.sock.data, sock

    def _emit_body(self, data):
        if self.head and not self.chunked:
            data, self.head = self.head + data, b""
            send_whole(self.sock, data)
            return
        self._flush_head()
        super()._emit_body(data)

    def sendfile(self, respiter):
        # gunicorn's sendfile writes to the socket itself once it has sent the head
        self.send_headers()
        self._flush_head()
        return super().sendfile(respiter)

    def close(self):
        self.send_headers()
        self._flush_head()
        super().close()

    def _flush_head(self):
        if self.head:
            head, self.head = self.head, b""
            send_whole(self.sock, head)


def _unbounded_rest(req) -> bool:
    """Whether what is left unread of ``req``'s body may be more than a body we take: a declared
    length over the limit, or a chunked body (its length is known only at its end)."""
    reader = getattr(getattr(req, "body", None), "reader", None)
    if isinstance(reader, ChunkedReader):
        return True
    return isinstance(reader, LengthReader) and reader.length > BODY_MAX


_gunicorn_http_date = util.http_date
_gmt_second = PerSecond(lambda whole: email.utils.formatdate(whole, localtime=False, usegmt=True))


def http_date(timestamp=None) -> str:
    """gunicorn's ``util.http_date``, the current second formatted once a second: every answer
    carries a Date, and ``email.utils.formatdate`` each time showed in the worker's profile
    (docs/benchmarks.md)."""
    if timestamp is not None:
        return _gunicorn_http_date(timestamp)
    return _gmt_second(int(time.time()))


class SharedErrors(wsgi.WSGIErrorsWrapper):
    """gunicorn's ``wsgi.errors``, one for the worker: the streams are looked up when written to
    (as gunicorn's own wrapper does when it is made, once a request), so a reopened log is followed."""

    def __init__(self, cfg):  # pylint: disable=super-init-not-called (as gunicorn's own)
        self.cfg = cfg

    @property
    def streams(self) -> list:
        return wsgi.WSGIErrorsWrapper(self.cfg).streams

    def close(self) -> None:
        """Kept open: it is every request's (an app closing its ``wsgi.errors`` closes it for itself only)."""


_gunicorn_base_environ = wsgi.base_environ
_base_environ: list = [None, None]  # the configuration (a worker has one) and its environ


def base_environ(cfg) -> dict:
    """gunicorn's ``wsgi.base_environ``: a fresh dict each request, copied from one made once per
    configuration (gunicorn built it anew, with a ``wsgi.errors`` wrapper that looked up the error
    log's handlers on every request: docs/benchmarks.md)."""
    kept_cfg, environ = _base_environ
    if kept_cfg is not cfg:
        environ = _gunicorn_base_environ(cfg)
        environ["wsgi.errors"] = SharedErrors(cfg)
        _base_environ[:] = cfg, environ
    return environ.copy()


def _os_with_script_name():
    """The ``os`` gunicorn's wsgi module sees: the real one, but for ``environ``, which it reads only
    for ``SCRIPT_NAME`` once a request (``os.environ.get`` encodes and decodes each time:
    docs/benchmarks.md). The process's SCRIPT_NAME is taken as the worker starts, when gunicorn reads its settings."""
    shim = types.ModuleType("os")
    shim.__dict__.update(os.__dict__)
    shim.environ = {"SCRIPT_NAME": os.environ["SCRIPT_NAME"]} if "SCRIPT_NAME" in os.environ else {}
    return shim


_gunicorn_peer_is_trusted_proxy = message.HeaderPolicy._peer_is_trusted_proxy


@functools.lru_cache(maxsize=4096)
def _trusted_proxy(cfg, ip: str) -> bool:
    return message._ip_in_allow_list(ip, cfg.forwarded_allow_ips, cfg.forwarded_allow_networks())


def peer_is_trusted_proxy(self) -> bool:
    """gunicorn's ``HeaderPolicy._peer_is_trusted_proxy``, its answer kept per (configuration, peer
    address): gunicorn parsed the address and walked ``forwarded_allow_ips`` on every request
    (docs/benchmarks.md). The same answer for the same inputs."""
    peer = self.peer_addr
    return not isinstance(peer, tuple) or _trusted_proxy(self.cfg, peer[0])


def json_error(sock, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn's ``util.write_error``, answering in the contract's JSON."""
    code, message = _REFUSALS.get(status_int, ("bad_request" if status_int < 500 else "internal", reason))
    details = {"reason": mesg[:DETAIL_MAX]} if mesg and status_int < 500 else {}
    body = orjson.dumps({"error": {"code": code, "message": message, "details": details}})
    head = "".join(f"{name}: {value}\r\n" for name, value in HEADERS.items())
    util.write_nonblock(sock, (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
                               f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                               f"{head}\r\n").encode("latin-1") + body)


def install() -> None:
    """gunicorn's workers made to write their refusals with json_error (the worker calls
    ``util.write_error`` through the module) and to close after a 413 (``ClosingResponse``: wsgi.create
    looks the class up in its module on every request): events/patches.py's ``GUNICORN_REFUSALS``.
    Unless the libraries run stock, ``GUNICORN_WIRE`` too: answers in one write (OneWriteResponse),
    dated by http_date (``Response.default_headers`` calls ``util.http_date`` through the module), their
    environ started from base_environ, ``wsgi.create`` reading SCRIPT_NAME from a copy of the process's
    taken once, and whether a peer may set forwarding headers asked once per address."""
    patches.GUNICORN_REFUSALS.apply()
    util.write_error = json_error
    if not patches.GUNICORN_WIRE.on:
        wsgi.Response = ClosingResponse
        return
    patches.GUNICORN_WIRE.apply()
    wsgi.Response = OneWriteResponse
    message.HeaderPolicy._peer_is_trusted_proxy = peer_is_trusted_proxy
    wsgi.base_environ = base_environ
    wsgi.os = _os_with_script_name()
    util.http_date = http_date
