"""api/server/wire.py: gunicorn's answers written in one piece, byte for byte what gunicorn writes."""

from __future__ import annotations

import contextlib
import json
import socket

import pytest
from gunicorn.config import Config
from gunicorn.http import wsgi
from gunicorn.http.parser import RequestParser

from api.server import wire


class Sock:
    def __init__(self, window: int | None = None):
        self.writes: list[bytes] = []
        self.window = window  # what one send takes at most (None: all of it)

    def send(self, data) -> int:
        taken = bytes(data[: self.window] if self.window is not None else data)
        self.writes.append(taken)
        return len(taken)

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))


def test_a_write_is_one_send_and_only_a_full_window_sends_the_rest():
    whole = Sock()
    wire.send_whole(whole, b"x" * 10_000)
    assert whole.writes == [b"x" * 10_000]
    full = Sock(window=4096)
    data = bytes(range(256)) * 40
    wire.send_whole(full, data)
    assert len(full.writes) == 2 and b"".join(full.writes) == data


def test_a_client_that_has_gone_is_said_as_gunicorn_ignores_it_and_other_errors_as_they_came(caplog):
    """Issue 54: a socket closed on our side after its client left raised EBADF, which gunicorn logs at
    ERROR with a traceback; it is raised as ENOTCONN (gunicorn's debug line), noted at debug here."""
    import errno
    import logging
    import socket

    ours, theirs = socket.socketpair()
    ours.close()
    with caplog.at_level(logging.DEBUG, logger="api.server.wire"), pytest.raises(OSError) as gone:
        wire.send_whole(ours, b"x")
    assert gone.value.errno == errno.ENOTCONN and isinstance(gone.value.__cause__, OSError)
    assert gone.value.__cause__.errno == errno.EBADF
    assert [r.levelno for r in caplog.records] == [logging.DEBUG]
    theirs.close()

    class Failing(Sock):
        def send(self, data) -> int:
            raise OSError(errno.ENOSPC, "no room")

    with pytest.raises(OSError) as other:
        wire.send_whole(Failing(), b"x")
    assert other.value.errno == errno.ENOSPC


def request(method: str = "GET", version: str = "1.1"):
    cfg = Config()
    raw = f"{method} /tables/x HTTP/{version}\r\nHost: example\r\n\r\n".encode()
    return next(iter(RequestParser(cfg, [raw], ("127.0.0.1", 5000)))), cfg


def answer(cls, method="GET", headers=(("Content-Type", "text/plain"), ("Content-Length", "5")),
           body=(b"hello",), version="1.1"):
    req, cfg = request(method, version)
    sock = Sock()
    response = cls(req, sock, cfg)
    response.start_response("200 OK", list(headers))
    for chunk in body:
        response.write(chunk)
    response.close()
    return sock.writes


def strip_date(data: bytes) -> bytes:
    return b"\r\n".join(line for line in data.split(b"\r\n") if not line.startswith(b"Date: "))


def test_an_answer_with_a_length_is_one_write_of_what_gunicorn_writes_in_two():
    ours, theirs = answer(wire.OneWriteResponse), answer(wsgi.Response)
    assert len(theirs) == 2 and len(ours) == 1
    assert strip_date(ours[0]) == strip_date(b"".join(theirs))
    assert ours[0].startswith(b"HTTP/1.1 200 OK\r\n") and ours[0].endswith(b"\r\n\r\nhello")


@pytest.mark.parametrize("method", ["HEAD", "GET"])
def test_an_answer_without_body_bytes_still_sends_its_head(method):
    ours = answer(wire.OneWriteResponse, method=method, body=() if method == "GET" else (b"hello",))
    theirs = answer(wsgi.Response, method=method, body=() if method == "GET" else (b"hello",))
    assert len(ours) == 1 and strip_date(ours[0]) == strip_date(b"".join(theirs))
    assert ours[0].endswith(b"\r\n\r\n")


def test_a_chunked_answer_keeps_gunicorns_framing():
    headers = (("Content-Type", "text/plain"),)
    ours = answer(wire.OneWriteResponse, headers=headers, body=(b"hel", b"lo"))
    theirs = answer(wsgi.Response, headers=headers, body=(b"hel", b"lo"))
    assert strip_date(b"".join(ours)) == strip_date(b"".join(theirs))
    assert b"Transfer-Encoding: chunked" in ours[0] and b"".join(ours).endswith(b"0\r\n\r\n")


@pytest.mark.usefixtures("patched")
def test_install_makes_gunicorn_build_these_responses(monkeypatch):
    from gunicorn import util
    from gunicorn.http import message

    for module, name in ((wsgi, "Response"), (wsgi, "base_environ"), (wsgi, "os"), (util, "http_date"),
                         (util, "write_error"), (message.HeaderPolicy, "_peer_is_trusted_proxy")):
        monkeypatch.setattr(module, name, getattr(module, name))  # put back after the test
    wire.install()
    req, cfg = request()
    response, _ = wsgi.create(req, Sock(), ("127.0.0.1", 5000), ("127.0.0.1", 8000), cfg)
    assert type(response) is wire.OneWriteResponse
    assert message.HeaderPolicy._peer_is_trusted_proxy is wire.peer_is_trusted_proxy
    assert util.http_date is wire.http_date  # and their Date is the cached one
    [data] = answer(wire.OneWriteResponse)
    dates = [line for line in data.split(b"\r\n") if line.startswith(b"Date: ")]
    assert dates == [b"Date: " + wire.http_date().encode()]


@pytest.mark.usefixtures("stock")
def test_install_with_the_stock_libraries_keeps_only_the_contracts_refusals(monkeypatch):
    from gunicorn import util
    from gunicorn.http import message

    for module, name in ((wsgi, "Response"), (wsgi, "base_environ"), (wsgi, "os"), (util, "http_date"),
                         (util, "write_error"), (message.HeaderPolicy, "_peer_is_trusted_proxy")):
        monkeypatch.setattr(module, name, getattr(module, name))
    own = {name: getattr(module, name) for module, name in ((wsgi, "base_environ"), (wsgi, "os"),
                                                            (util, "http_date"))}
    trusted = message.HeaderPolicy._peer_is_trusted_proxy
    wire.install()
    req, cfg = request()
    response, _ = wsgi.create(req, Sock(), ("127.0.0.1", 5000), ("127.0.0.1", 8000), cfg)
    assert type(response) is wire.ClosingResponse  # closes after a 413, writes as gunicorn does
    assert util.write_error is wire.json_error  # every refusal in the contract's JSON
    assert message.HeaderPolicy._peer_is_trusted_proxy is trusted
    assert {"base_environ": wsgi.base_environ, "os": wsgi.os, "http_date": util.http_date} == own
    [head, body] = answer(wire.ClosingResponse)  # gunicorn's two writes
    assert head.endswith(b"\r\n\r\n") and body == b"hello"


@pytest.mark.parametrize("now", [0.0, 1.999999, 1_764_620_000.5, 1_764_620_001.0, 4_102_444_799.9])
def test_the_date_of_an_answer_is_gunicorns_own_though_formatted_once_a_second(monkeypatch, now):
    monkeypatch.setattr(wire.time, "time", lambda: now)
    assert wire.http_date() == wire._gunicorn_http_date(now)
    monkeypatch.setattr(wire.time, "time", lambda: now + 1)  # the next second is formatted anew
    assert wire.http_date() == wire._gunicorn_http_date(now + 1)
    assert wire.http_date(now) == wire._gunicorn_http_date(now)  # a given time: gunicorn's own


class Sock2(Sock):
    """What gunicorn's write_nonblock asks of a socket too."""

    def gettimeout(self):
        return None

    def setblocking(self, flag):
        pass


@pytest.mark.parametrize("status, reason", [(414, "URI Too Long"), (431, "Request Header Fields Too Large"),
                                            (400, "Bad Request"), (500, "Internal Server Error")])
def test_gunicorns_own_refusals_are_the_contracts_json(status, reason):
    sock = Sock2()
    wire.json_error(sock, status, reason, "Invalid Request Line '<b>x</b>'" if status == 400 else "")
    head, _, body = b"".join(sock.writes).partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} {reason}\r\n".encode())
    assert b"Content-Type: application/json" in head and b"X-Content-Type-Options: nosniff" in head
    assert f"Content-Length: {len(body)}".encode() in head
    error = json.loads(body)["error"]
    assert error["code"] == ("internal" if status == 500 else "bad_request") and error["message"]
    assert error["details"] == ({"reason": "Invalid Request Line '<b>x</b>'"} if status == 400 else {})


@pytest.mark.integration
def test_a_served_request_beyond_gunicorns_limits_gets_json(redis_server):
    from ..sockets.test_sockets_served import Served

    server = Served(redis_server.url)
    try:
        answers = {}
        for status, raw in ((414, b"GET /" + b"x" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n"),
                            (431, b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"y" * 9000 + b"\r\n\r\n"),
                            (400, b"NOT HTTP AT ALL\r\n\r\n")):
            with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                s.sendall(raw)
                data = b""
                while chunk := s.recv(65536):
                    data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            answers[status] = (int(head.split()[1]), json.loads(body)["error"]["code"])
        assert answers == {414: (414, "bad_request"), 431: (431, "bad_request"), 400: (400, "bad_request")}
    finally:
        server.stop()


def _answer_then_close(port: int, head: bytes, body_part: bytes) -> tuple[bytes, bool]:
    """Send a request's head and a part of its body, then read the answer until the server closes
    (True) or 10 s pass with the connection still open (False: it waits for the rest of the body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head)
        with contextlib.suppress(OSError):  # refused and closed already
            s.sendall(body_part)
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except TimeoutError:
            return data, False
        except ConnectionResetError:  # closed with our unread bytes in its buffer: the answer came first
            pass
        return data, True


@pytest.mark.integration
def test_a_body_over_the_limit_is_refused_from_its_length_and_never_read(redis_server):
    """A declared 100 MB body had been read to its end (4.7 s) before the 413; a chunked one is read
    only up to the limit. Either way the connection closes: nothing more of it is read."""
    from ..sockets.test_sockets_served import Served

    server = Served(redis_server.url)
    try:
        table_id = server.table()
        for path in ("/tables", f"/tables/{table_id}/moves", "/healthz"):
            method = "GET" if path == "/healthz" else "POST"
            head = (f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    f"Content-Length: 100000000\r\n\r\n").encode()
            data, closed = _answer_then_close(server.port, head, b"[" * 65536)
            assert data.startswith(b"HTTP/1.1 413 "), (path, data[:200])
            assert closed and b"Connection: close" in data, path
            assert json.loads(data.partition(b"\r\n\r\n")[2])["error"]["code"] == "bad_request"
        chunked_head = (b"POST /tables HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n")
        data, closed = _answer_then_close(server.port, chunked_head, (b"4000\r\n" + b" " * 0x4000 + b"\r\n") * 4)
        assert data.startswith(b"HTTP/1.1 413 ") and closed, data[:200]
        # a chunked body within the limit is taken as its length would be
        body = json.dumps({"name": "Ana", "preset": "selminha"}).encode()
        data, _ = _answer_then_close(server.port, chunked_head.replace(b"Host: x", b"Host: x\r\nConnection: close"),
                                     b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        assert data.startswith(b"HTTP/1.1 201 "), data[:300]
    finally:
        server.stop()


def _created(cfg, raw: bytes = b"GET /app/tables/x?deck=a HTTP/1.1\r\nHost: example\r\n\r\n"):
    req = next(iter(RequestParser(cfg, [raw], ("127.0.0.1", 5000))))
    return wsgi.create(req, Sock(), ("127.0.0.1", 5000), ("127.0.0.1", 8000), cfg)[1]


def _without_errors(environ: dict) -> dict:
    return {k: v for k, v in environ.items()
            if k not in ("wsgi.errors", "wsgi.input", "gunicorn.socket", "wsgi.early_hints")}


@pytest.mark.usefixtures("patched")
@pytest.mark.parametrize("script_name", [None, "/app"])
def test_installed_a_requests_environ_is_gunicorns_own_from_one_made_per_configuration(monkeypatch, script_name):
    for name in ("Response", "base_environ", "os"):
        monkeypatch.setattr(wsgi, name, getattr(wsgi, name))  # put back after the test
    if script_name is None:
        monkeypatch.delenv("SCRIPT_NAME", raising=False)
    else:
        monkeypatch.setenv("SCRIPT_NAME", script_name)
    cfg = Config()
    theirs = _created(cfg)
    wire.install()
    first, second = _created(cfg), _created(cfg)
    assert _without_errors(first) == _without_errors(theirs)  # SCRIPT_NAME and PATH_INFO included
    assert first["SCRIPT_NAME"] == (script_name or "")
    # one wsgi.errors for the worker, each request its own dict
    assert first["wsgi.errors"] is second["wsgi.errors"] and first is not second
    first["HTTP_X_MINE"] = "1"
    assert "HTTP_X_MINE" not in _created(cfg)
    other = Config()
    other.set("workers", 3)
    assert _created(other)["wsgi.multiprocess"] is True and first["wsgi.multiprocess"] is False


def test_the_shared_wsgi_errors_writes_to_the_error_logs_streams_of_the_moment():
    import io
    import logging

    cfg = Config()
    cfg.set("errorlog", "/dev/null")  # a file: gunicorn's first handler is not taken for stderr
    errors = wire.SharedErrors(cfg)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("gunicorn.error")
    logger.addHandler(handler)  # after the wrapper was made: a log reopened since
    try:
        errors.close()  # one request's close leaves it open for the next
        errors.write("went wrong\n")
        errors.flush()
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue() == "went wrong\n"
    assert stream not in errors.streams


@pytest.mark.parametrize("allow", [None, "*", "10.0.0.0/8,192.168.1.7", "::1", ""])
def test_whether_a_peer_may_forward_is_gunicorns_answer_kept_per_address(allow):
    gunicorns = wire._gunicorn_peer_is_trusted_proxy
    assert gunicorns is not wire.peer_is_trusted_proxy
    cfg = Config()
    if allow is not None:
        cfg.set("forwarded_allow_ips", allow)
    for peer in (("127.0.0.1", 5000), ("10.1.2.3", 1), ("192.168.1.7", 2), ("192.168.1.8", 3), ("::1", 4, 0, 0),
                 ("not an address", 5), "/run/escoba.sock"):
        for _ in range(2):  # the second answer comes from what was kept
            req = type("Req", (), {"cfg": cfg, "peer_addr": peer})()
            assert wire.peer_is_trusted_proxy(req) == gunicorns(req), (allow, peer)
    seen = {peer: wire.peer_is_trusted_proxy(type("Req", (), {"cfg": cfg, "peer_addr": (peer, 1)})())
            for peer in ("127.0.0.1", "10.1.2.3")}
    assert seen == {"127.0.0.1": allow in (None, "*"), "10.1.2.3": allow in ("*", "10.0.0.0/8,192.168.1.7")}


@pytest.mark.parametrize("stock", ["0", "1"])
def test_escoba_serve_says_at_start_which_patches_it_applied(redis_server, stock):
    """ESCOBA_STOCK reaches the served worker: CI's second run of these tests is a run of the stock libraries."""
    import time

    from events import patches

    from ..sockets.test_sockets_served import Served

    server = Served(redis_server.url, ESCOBA_STOCK=stock)
    try:
        deadline, said = time.monotonic() + 5, []
        while not said and time.monotonic() < deadline:
            time.sleep(0.1)
            server.log.seek(0)
            said = [json.loads(line) for line in server.log.read().splitlines()
                    if b'"escoba.patches"' in line]
    finally:
        server.stop()
    [line] = said
    fixes = {p.name for p in patches.PATCHES if p.kind == patches.FIX}
    if stock == "1":
        assert "stock" in line["message"] and set(line["applied"]) == fixes
    else:
        assert set(line["applied"]) == {p.name for p in patches.PATCHES} > fixes
