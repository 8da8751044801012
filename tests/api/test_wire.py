"""api/wire.py: gunicorn's answers written in one piece, byte for byte what gunicorn writes."""

from __future__ import annotations

import pytest
from gunicorn.config import Config
from gunicorn.http import wsgi
from gunicorn.http.parser import RequestParser

from api import wire


class Sock:
    def __init__(self):
        self.writes: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))


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


def test_install_makes_gunicorn_build_these_responses(monkeypatch):
    monkeypatch.setattr(wsgi, "Response", wsgi.Response)  # put back after the test
    wire.install()
    req, cfg = request()
    response, _ = wsgi.create(req, Sock(), ("127.0.0.1", 5000), ("127.0.0.1", 8000), cfg)
    assert type(response) is wire.OneWriteResponse
