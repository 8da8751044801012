"""A small WebSocket client for the benchmarks: raw sockets, one selector thread, little CPU.

Each ``Socket`` does the RFC 6455 handshake itself, then a ``Reader`` thread
reads every socket through one selector, answers the server's pings, and
records when each ``{"type": "table", "version": N}`` message arrived (and
calls ``on_table`` if given). On a 2-core machine that shares its cores with the
server, this costs far less than a thread per socket or a general client.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import selectors
import socket
import struct
import threading
import time
from collections.abc import Callable

# the server writes compact JSON (orjson); older servers wrote ", " and ": "
HEAD = re.compile(rb'^\{"type": ?"(\w+)", ?"version": ?(\d+)')
# a socket move's answer (docs/api.md v1.2): {"type": "ack", "id", "version"}, or an error with its id
ANSWER = re.compile(rb'^\{"type":"(ack|error)","id":"([^"]*)"(?:,"version":(\d+))?')


class Socket:
    """One client WebSocket: the raw socket, a receive buffer, what it has heard."""

    def __init__(self, table: int, role: str):
        self.table = table
        self.role = role
        self.sock: socket.socket | None = None
        self.buf = bytearray()
        self.fragments = bytearray()
        self.heard: list[tuple[int, float]] = []  # (version of a "table" message, when)
        self.closed = False
        self.close_code: int | None = None
        self.on_table: Callable[[Socket, int, float], None] | None = None
        # a move's answer: (socket, its id, the version or None for an error, its text, when)
        self.on_answer: Callable[[Socket, str, int | None, bytes, float], None] | None = None

    def connect(self, port: int, path: str, timeout: float = 30) -> None:
        key = base64.b64encode(os.urandom(16)).decode()
        sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        sock.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                f"Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError(f"closed during the handshake of {path}")
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"handshake refused for {path}: {head[:200]!r}")
        sock.setblocking(False)
        self.sock = sock
        self.buf += rest

    def feed(self, now: float) -> None:
        """Take every complete frame out of the buffer."""
        buf = self.buf
        while len(buf) >= 2:
            opcode = buf[0] & 0x0F
            n = buf[1] & 0x7F
            at = 2
            if n == 126:
                if len(buf) < 4:
                    return
                n = struct.unpack_from("!H", buf, 2)[0]
                at = 4
            elif n == 127:
                if len(buf) < 10:
                    return
                n = struct.unpack_from("!Q", buf, 2)[0]
                at = 10
            if len(buf) < at + n:
                return
            payload = bytes(buf[at : at + n])
            fin = buf[0] & 0x80
            del buf[: at + n]
            if opcode == 0x9:  # ping: answer with a masked pong
                self.send_frame(0xA, payload)
            elif opcode == 0x8:
                self.closed = True
                if len(payload) >= 2:
                    self.close_code = struct.unpack_from("!H", payload)[0]
            elif opcode in (0x1, 0x2, 0x0):
                self.fragments += payload
                if fin:
                    self._message(bytes(self.fragments), now)
                    self.fragments.clear()

    def _message(self, text: bytes, now: float) -> None:
        m = HEAD.match(text)
        if m and m.group(1) in (b"table", b"patch"):
            version = int(m.group(2))
            self.heard.append((version, now))
            if self.on_table is not None:
                self.on_table(self, version, now)
            return
        if self.on_answer is not None:
            a = ANSWER.match(text)
            if a:
                version = int(a.group(3)) if a.group(1) == b"ack" and a.group(3) else None
                self.on_answer(self, a.group(2).decode(), version, text, now)

    def send_frame(self, opcode: int, payload: bytes) -> None:
        """A masked client frame (any length)."""
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = bytes([0x80 | opcode, 0x80 | n])
        elif n < 1 << 16:
            head = bytes([0x80 | opcode, 0x80 | 126]) + struct.pack("!H", n)
        else:
            head = bytes([0x80 | opcode, 0x80 | 127]) + struct.pack("!Q", n)
        key = (mask * (n // 4 + 1))[:n]
        masked = (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big") if n else b""
        try:
            self.sock.setblocking(True)
            self.sock.settimeout(5)
            self.sock.sendall(head + mask + masked)
        except OSError:
            self.closed = True
        finally:
            with contextlib.suppress(OSError):
                self.sock.setblocking(False)

    def first_at(self, version: int) -> float | None:
        for v, t in self.heard:
            if v >= version:
                return t
        return None


class Reader(threading.Thread):
    """One thread, one selector, every socket."""

    def __init__(self):
        super().__init__(name="ws-reader", daemon=True)
        self.selector = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def add(self, ws: Socket) -> None:
        with self.lock:
            self.selector.register(ws.sock, selectors.EVENT_READ, ws)
            if ws.buf:  # the first frame may have come with the handshake's answer
                ws.feed(time.perf_counter())

    def run(self) -> None:
        while not self.stop.is_set():
            if not self.selector.get_map():
                time.sleep(0.01)
                continue
            events = self.selector.select(0.1)  # epoll: registering meanwhile is safe
            now = time.perf_counter()
            with self.lock:
                for key, _ in events:
                    ws: Socket = key.data
                    try:
                        chunk = ws.sock.recv(1 << 16)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if not chunk:
                        ws.closed = True
                        self.selector.unregister(ws.sock)
                        continue
                    ws.buf += chunk
                    ws.feed(now)
