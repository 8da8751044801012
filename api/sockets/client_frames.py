"""A table socket's client frames read without wsproto's parser while they are the plain kind.

Nearly every frame a client sends is one small move: a final, masked text frame, whole in
one read. simple-websocket hands each read to wsproto, whose frame parser (generators,
a buffer, a message decoder, an incremental UTF-8 decoder) cost more than the socket's
own read (docs/benchmarks.md). ``QuickFrames`` stands in front of the socket's ``wsproto.WSConnection``:
while each read holds only whole, final, masked text frames with no extension bits
(RFC 6455 5.2) and valid UTF-8, or pings and pongs (a pong answers each of the server's
pings), it makes the very events wsproto would make, in the same order. The first read
that holds anything else (a close, a binary or fragmented message, a frame cut across
reads, a bad frame) goes to wsproto with the rest of the socket's life: wsproto decides
everything the protocol says about it, as before, and its buffer was empty until then. Sending always goes to wsproto.

tests/api/sockets/test_client_frames.py feeds the same bytes, cut anywhere, to both and
asks for the same events.
"""

from __future__ import annotations

from wsproto.events import Ping, Pong, TextMessage

_TEXT_FINAL = 0x81  # FIN, no RSV bits, opcode 1 (text)
_PING, _PONG = 0x89, 0x8A  # FIN, no RSV bits, opcode 9 or 10: a pong answers every ping the server sends
_MASKED = 0x80


class QuickFrames:
    __slots__ = ("_ws", "_ready", "_slow")

    def __init__(self, ws):
        self._ws = ws  # wsproto.WSConnection, its handshake done
        self._ready: list = []  # events read here, not yet taken
        self._slow = False  # wsproto reads everything from now on

    def __getattr__(self, name):
        return getattr(self._ws, name)

    def send(self, event) -> bytes:
        return self._ws.send(event)

    def receive_data(self, data) -> None:
        if not self._slow:
            if data:
                data = self._read(data)
                if not data:
                    return
            self._slow = True  # the end of the stream (None) and whatever is not plain, too
        self._ws.receive_data(data)

    def events(self):
        ready, self._ready = self._ready, []
        if not self._slow:
            return ready
        return _chain(ready, self._ws.events())

    def _read(self, data: bytes) -> bytes:
        """Takes the plain frames off the front of ``data``; what is left is not plain."""
        pos, end = 0, len(data)
        while pos < end:
            if end - pos < 6:
                break
            first, second = data[pos], data[pos + 1]
            if not second & _MASKED:
                break
            length, head = second & 0x7F, pos + 2
            if first != _TEXT_FINAL:
                if (first != _PONG and first != _PING) or length > 125:
                    break
                stop = head + 4 + length
                if stop > end:
                    break
                payload = _unmasked(data[head + 4:stop], data[head:head + 4])
                self._ready.append(Pong(payload=payload) if first == _PONG else Ping(payload=payload))
                pos = stop
                continue
            if length == 126:
                if end - pos < 8:
                    break
                length, head = int.from_bytes(data[head:head + 2], "big"), head + 2
                if length < 126:  # not the shortest form: wsproto refuses it
                    break
            elif length == 127:
                break
            start = head + 4
            stop = start + length
            if stop > end:
                break
            try:
                text = _unmasked(data[start:stop], data[head:start]).decode("utf-8")
            except UnicodeDecodeError:
                break
            self._ready.append(TextMessage(data=text, frame_finished=True, message_finished=True))
            pos = stop
        return data[pos:]


def _unmasked(payload: bytes, mask: bytes) -> bytes:
    n = len(payload)
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "little") ^ int.from_bytes(key, "little")).to_bytes(n, "little")


def _chain(first: list, rest):
    yield from first
    yield from rest


__all__ = ["QuickFrames"]
