"""api/sockets/client_frames.py: the plain client frames read without wsproto give wsproto's events."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Request, TextMessage

from api.sockets.client_frames import QuickFrames

MASK = bytes.fromhex("a1b2c3d4")


def _server() -> WSConnection:
    """A server-side wsproto connection past its handshake, as simple-websocket holds it."""
    ws = WSConnection(ConnectionType.SERVER)
    ws.receive_data(b"GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                    b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    request = next(ws.events())
    assert isinstance(request, Request)
    ws.send(AcceptConnection())
    return ws


def frame(payload: bytes, opcode: int = 1, fin: bool = True, masked: bool = True, rsv: int = 0,
          long_form: bool = False, mask: bytes | None = None) -> bytes:
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | rsv << 4 | opcode])
    bit = 0x80 if masked else 0
    if n < 126 and not long_form:
        head += bytes([bit | n])
    elif n < 1 << 16:
        head += bytes([bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", n)
    if not masked:
        return head + payload
    mask = mask if mask is not None else MASK
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def _said(events) -> list:
    out = []
    for e in events:
        kind = type(e).__name__
        if isinstance(e, CloseConnection):
            out.append((kind, e.code, e.reason))
        elif hasattr(e, "data"):
            out.append((kind, e.data, e.frame_finished, e.message_finished))
        else:
            out.append((kind, getattr(e, "payload", None)))
    return out


def _fed(ws, chunks) -> list:
    """Every event ``ws`` gives for ``chunks``, read after each one as simple-websocket does; a protocol
    error ends the list with its name (wsproto answers it with a close)."""
    out = []
    for chunk in chunks:
        try:
            ws.receive_data(chunk)
            out += _said(ws.events())
        except Exception as exc:  # noqa: BLE001 - compared, not handled
            out.append(("raised", type(exc).__name__))
            break
    return out


def test_plain_frames_come_out_as_wsproto_makes_them_and_never_reach_it():
    plain = QuickFrames(_server())
    move = b'{"type":"move","id":"7.19","move":{"type":"play","card":"7o","capture":["8c"]}}'
    data = frame(move) + frame("año ☃".encode()) + frame(b"x" * 300)  # the 16-bit length form too
    plain.receive_data(data)
    got = _said(plain.events())
    assert got == _said(_fed_events(_server(), [data]))
    assert got[0] == ("TextMessage", move.decode(), True, True)
    assert not plain._slow and plain.events() == []


def _fed_events(ws, chunks):
    for chunk in chunks:
        ws.receive_data(chunk)
    return list(ws.events())


def test_pings_and_pongs_are_read_here_too():
    data = frame(b"", opcode=10) + frame(b'{"a":1}') + frame(b"are you there", opcode=9) + frame(b"p", opcode=10)
    quick = QuickFrames(_server())
    assert _fed(quick, [data]) == _fed(_server(), [data])
    assert [e[0] for e in _fed(QuickFrames(_server()), [data])] == ["Pong", "TextMessage", "Ping", "Pong"]
    assert not quick._slow


@pytest.mark.parametrize("odd", [
    frame(b"p" * 126, opcode=9),
    frame(b"\x03\xe8bye", opcode=8),
    frame(b"bytes", opcode=2),
    frame(b"half", fin=False) + frame(b" more", opcode=0),
    frame(b"not masked", masked=False),
    frame(b"extension bit", rsv=4),
    frame(b"\xff\xfe not utf-8"),
    frame(b"short in the long form", long_form=True),
], ids=["long ping", "close", "binary", "fragmented", "unmasked", "rsv", "bad utf-8", "long form"])
def test_anything_not_plain_goes_to_wsproto_from_there_on(odd):
    """Whatever wsproto does with a ping, a close, a fragment or a bad frame it still does, after the
    plain frames before it; and every frame after it is wsproto's too."""
    before, after = frame(b'{"a":1}'), frame(b'{"b":2}')
    quick = QuickFrames(_server())
    data = [before + odd, after]
    assert _fed(quick, data) == _fed(_server(), data)
    assert quick._slow


def test_a_frame_cut_across_reads_is_read_by_wsproto_whole():
    whole = frame(b'{"type":"move","id":"1"}')
    quick = QuickFrames(_server())
    got = _fed(quick, [whole[:5], whole[5:]])
    assert got == _fed(_server(), [whole[:5], whole[5:]])
    assert got[-1] == ("TextMessage", '{"type":"move","id":"1"}', True, True) and quick._slow


def test_the_end_of_the_stream_is_wsproto_s():
    quick = QuickFrames(_server())
    quick.receive_data(None)
    assert _said(quick.events()) == [("CloseConnection", 1006, None)]


def test_sending_is_wsproto_s():
    quick, plain = QuickFrames(_server()), _server()
    assert quick.send(TextMessage(data="hi")) == plain.send(TextMessage(data="hi"))
    assert quick.state == plain.state


_frames = st.one_of(
    st.builds(frame, st.text(max_size=200).map(str.encode)),  # plain: most of them
    st.builds(frame, st.text(max_size=200).map(str.encode), mask=st.binary(min_size=4, max_size=4)),
    st.builds(frame, st.binary(max_size=40), st.sampled_from([0, 1, 2, 8, 9, 10]), st.booleans(),
              st.booleans(), st.integers(0, 7)),
    st.binary(min_size=1, max_size=12),  # garbage
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_frames, min_size=1, max_size=6), st.data())
def test_any_bytes_cut_anywhere_give_the_events_wsproto_gives(frames, data):
    stream = b"".join(frames)
    cuts = sorted(data.draw(st.lists(st.integers(1, max(1, len(stream) - 1)), max_size=4, unique=True)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True) if stream[a:b]]
    assert _fed(QuickFrames(_server()), chunks) == _fed(_server(), chunks)
