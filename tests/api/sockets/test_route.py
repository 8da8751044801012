"""api/sockets/route.py ``_Direct``: a move made in this process sent to another socket by the mover's greenlet.

On a real simple-websocket connection over a gevent socket pair (tests/api/sockets/test_reader.py's), the
test plays the mover (``send``), the socket's handler (the lock, ``take_pending``) and the client.
"""

from __future__ import annotations

import itertools
import socket
import threading
from types import SimpleNamespace

import gevent
import pytest

from api.sockets import frames, route

from .test_reader import _Connection, _server_frames


def _state(version: int):
    return SimpleNamespace(version=version)


def _frame(state, size: int = 0) -> bytes:
    return frames.text_frame(b'{"type":"table","version":%d,"pad":"%s"}' % (state.version, b"x" * size))


@pytest.fixture
def direct():
    made = []

    def make(size: int = 0):
        c = _Connection()
        sent = route._Sent(True)
        sent.version = 1
        built = []

        def frames_for(state):
            built.append(state.version)
            return _frame(state, size)

        d = route._Direct(c.ws, c.reads.raw, sent, frames_for)
        made.append(c)
        return SimpleNamespace(c=c, d=d, sent=sent, built=built)

    yield make
    for c in made:
        c.close()


def _received(c, n: int, timeout: float = 5.0) -> bytes:
    out = b""
    with gevent.Timeout(timeout):
        while len(out) < n:
            out += c.client.recv(1 << 20)
    return out


def test_a_free_socket_is_sent_the_frames_at_once_and_its_version_moves(direct):
    t = direct()
    assert t.d.send(_state(2)) is True
    assert t.sent.version == 2 and not t.d.pending and not t.c.ws.event.is_set()  # its handler sleeps on
    assert _server_frames(_received(t.c, len(_frame(_state(2))))) == [(1, _frame(_state(2))[2:])]
    assert t.d.send(_state(2)) is True and t.d.send(_state(1)) is True  # it holds that one: nothing more
    assert t.built == [2]


def test_a_socket_its_handler_is_writing_to_is_left_to_the_mailbox(direct):
    t = direct()
    with t.d.lock:
        assert t.d.send(_state(2)) is False
    assert t.sent.version == 1 and t.built == []
    t.c.ws.connected = False
    assert t.d.send(_state(2)) is False and t.sent.version == 1


def test_a_full_socket_is_left_to_the_mailbox_and_nothing_is_written(direct):
    t = direct()
    raw = t.d._raw
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    filled = 0
    while True:  # the client reads nothing: the kernel's buffers fill
        try:
            filled += raw.send(b"\0" * 4096)
        except BlockingIOError:
            break
    assert t.d.send(_state(2)) is False
    assert t.sent.version == 1 and not t.d.pending  # its handler sends it, and waits for the socket itself
    assert _received(t.c, filled) == b"\0" * filled  # nothing of the frame went out


def test_what_the_kernel_does_not_take_is_written_first_by_the_handler(direct):
    t = direct(size=4 << 20)  # more than the socket's buffers take at once
    frame = _frame(_state(2), 4 << 20)
    assert t.d.send(_state(2)) is True
    assert t.sent.version == 2 and t.d.pending and t.c.ws.event.is_set()  # its handler is woken for the rest
    assert t.d.send(_state(3)) is False  # a socket behind is the mailbox's: frames never interleave
    got = []
    reader = gevent.spawn(lambda: got.append(_received(t.c, len(frame), timeout=20)))
    with t.d.lock:  # the handler's write: the rest first
        rest = t.d.take_pending()
        t.c.ws.sock.sendall(rest)
    reader.join(20)
    assert got == [frame] and not t.d.pending


def test_without_gevents_non_blocking_socket_every_post_goes_to_the_mailbox():
    sent = route._Sent(False)
    ws = SimpleNamespace(connected=True, event=threading.Event())
    d = route._Direct(ws, None, sent, lambda state: b"")
    assert d.send(_state(2)) is False  # the gthread worker: its handler writes everything, as before


def test_a_ping_due_goes_out_after_the_rest_of_a_frame_a_move_began(direct):
    t = direct(size=4 << 20)
    frame = _frame(_state(2), 4 << 20)
    assert t.d.send(_state(2)) is True and t.d.pending
    t.c.reads._ping_due = True  # the handler's next read sends a ping: never inside the frame
    got = []

    def drain():
        data = b""
        with gevent.Timeout(20):
            while len(data) < len(frame) + 2:
                data += t.c.client.recv(1 << 20)
        got.append(data)

    reader = gevent.spawn(drain)
    route._pump(t.c.ws, t.c.reads, t.d)
    reader.join(20)
    assert got and got[0][:len(frame)] == frame
    assert _server_frames(got[0][len(frame):]) == [(9, b"")]  # then the ping, whole
    assert not t.d.pending


def _interleaved() -> list[bytes]:
    """What a slow reader gets, as runs of one byte, while two threads write through ``route.connection`` under
    threads: one a few large frames, the other many small ones (simple-websocket's pings beside the handler's
    frames, ``escoba dev``)."""
    ours, theirs = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    ours.settimeout(10.0)  # as the handler sets it: a send then takes what the kernel has room for
    sock = route.connection(ours, handler_reads=False)
    big, small = [bytes([65 + i]) * 200_000 for i in range(3)], [b"p" * 6] * 300
    got = bytearray()

    def read():
        while chunk := theirs.recv(1024):
            got.extend(chunk)

    reader_thread = threading.Thread(target=read)
    reader_thread.start()
    writers = [threading.Thread(target=lambda: [sock.send(b) for b in big]),
               threading.Thread(target=lambda: [sock.send(p) for p in small])]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    ours.shutdown(socket.SHUT_WR)
    reader_thread.join()
    ours.close()
    theirs.close()
    return [bytes(run) for _, run in itertools.groupby(got)]


def test_under_threads_a_ping_never_lands_inside_a_frame():
    runs = _interleaved()
    frames_seen = [r for r in runs if r[:1] != b"p"]
    assert [len(r) for r in frames_seen] == [200_000] * 3, "a frame was split by another thread's write"
    assert sum(len(r) for r in runs if r[:1] == b"p") == 6 * 300


class _Chunked:
    """A socket that takes a frame in chunks (a full send buffer) and, after the first, waits a while for
    another thread's write (a ping): the moment a ping would land inside the frame, made to happen."""

    def __init__(self, wait: float):
        self.out, self.pinged, self.wait = [], threading.Event(), wait

    def sendall(self, data):
        if len(data) == 1:
            self.out.append(bytes(data))
            self.pinged.set()
            return
        for i in range(0, len(data), 1000):
            self.out.append(bytes(data[i:i + 1000]))
            if i == 0:
                self.pinged.wait(self.wait)


@pytest.mark.parametrize("shared", [True, False])
def test_a_ping_sent_while_a_frame_is_half_written_waits_for_the_rest(shared):
    sock = _Chunked(0.3 if shared else 10.0)  # shared, the ping waits for the lock: this wait times out
    conn = route.connection(sock, handler_reads=False) if shared else sock

    frame = threading.Thread(target=conn.sendall, args=(b"F" * 5000,))
    frame.start()
    while not sock.out:
        threading.Event().wait(0.001)
    other = threading.Thread(target=conn.sendall, args=(b"p",))
    other.start()
    frame.join()
    other.join()
    stream = b"".join(sock.out)
    # shared: the frame, then the ping; the bare socket (the control) lets the ping in after 1,000 bytes
    assert stream == (b"F" * 5000 + b"p" if shared else b"F" * 1000 + b"p" + b"F" * 4000)
