"""gunicorn's response with its head and body in one write, so a short answer is one packet.

gunicorn writes a response's status line and headers in one ``sendall`` and its
body in another: two system calls, two TCP segments and two wake-ups of the
reader for every API answer, which all fit in one. This response keeps the head
until the first body bytes (or the close, for an answer with no body) and sends
them together. Everything else is gunicorn's own code: the head is what its
``send_headers`` writes, captured rather than rebuilt.
"""

from __future__ import annotations

from gunicorn.http import wsgi


class _Captured:
    """Stands in for the socket while gunicorn writes the head."""

    def __init__(self):
        self.data = b""

    def sendall(self, data: bytes) -> None:
        self.data += data


class OneWriteResponse(wsgi.Response):
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
            self.sock.sendall(data)
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
            self.sock.sendall(head)


def install() -> None:
    """Make gunicorn's workers build their responses with OneWriteResponse (wsgi.create looks
    the class up in its module on every request)."""
    wsgi.Response = OneWriteResponse
