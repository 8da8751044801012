"""WebSocket /tables/{id}/ws: the current view on connect, then one message per change.

A reconnecting client passes ``after`` (its last version) and first gets the
events it missed, redacted for it, so it catches up with no gap. ``deck`` picks
the reader's deck design. ``frames=patch`` asks for each change as a ``patch`` of
the view this socket was sent last (api/sockets/frames.py), whole only on connect
and when this process no longer holds that view's version.

A socket opened with a seat token may send moves (docs/api.md v1.2): each is
decided by the same function as a POST's and answered on the socket
(api/sockets/moves.py); the mover's new view follows its ack in the same write.

A socket is public, so it is built to cost little and to be hard to abuse
(docs/api.md): a client's frames wait in a bounded inbox, a socket whose frames
keep being refused is closed (api/sockets/moves.py), and a client message over 4 KB
closes the socket with 1009 before more than one receive buffer of it is read; a peer that answers
no protocol ping is dropped at the next one (``ESCOBA_SOCKET_PING_INTERVAL``);
a client that reads nothing for ``SEND_TIMEOUT`` is dropped; one client address
and one table may hold only so many sockets (api/sockets/bounds.py). No
compression is negotiated: it would cost a deflate per socket per change, and
an inflated client frame could be far larger than what was sent.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time

from flask import current_app, request
from simple_websocket import ConnectionClosed

import engine
from api import auth
from api.http.tables import redacted_events, version_arg
from api.server import collector, wire
from api.sockets import frames, reader
from api.sockets.client_frames import QuickFrames
from api.sockets.fanout import Mailbox
from api.sockets.moves import POLICY_VIOLATION, Inbox, SocketMoves
from events import stages

MAX_CLIENT_MESSAGE = 4096  # bytes; docs/api.md: "a client frame over 4 KB closes the socket (status 1009)"
RECEIVE_BYTES = 4096  # what one read takes off a socket, so what an oversize frame can cost before it closes
SEND_TIMEOUT = 10.0  # seconds a send may wait for a client that does not read
LINGER = 1.0  # seconds a closing socket reads what the client was still sending, so the close frame arrives
LINGER_BYTES = 256 * 1024  # ... and at most this much of it
# ... or this much, for a socket closed because its client sends more than it reads (1008): the
# handler reads only between its answers (api/sockets/reader.py), so such a client's backlog waits
# in the kernel's buffers, not read ahead, and draining it lets the close frame reach the client
# instead of a reset. An oversize message's close (1009) keeps the smaller bound.
FLOOD_LINGER_BYTES = 1024 * 1024
_DRAIN = bytearray(RECEIVE_BYTES)

log = logging.getLogger("escoba.sockets")


def server_options(config) -> dict:
    """simple-websocket's options (flask-sock's SOCK_SERVER_OPTIONS)."""
    options = {"ping_interval": config.socket_ping_interval, "max_message_size": MAX_CLIENT_MESSAGE,
               "receive_bytes": RECEIVE_BYTES}
    reads = reader.thread_class()  # under gevent, the handler reads its own frames (api/sockets/reader.py)
    if reads is not None:
        options["thread_class"] = reads
    return options


class _LingeringSocket:
    """The connection's socket as simple-websocket holds it: closing it first stops our side, then reads
    and drops what the client is still sending (bounded in time and bytes). Closed at once with unread
    bytes, the kernel would answer with a reset, and the client would lose the close frame (1009)."""

    __slots__ = ("_sock", "linger_bytes")

    def __init__(self, sock):
        self._sock = sock
        self.linger_bytes = LINGER_BYTES

    def __getattr__(self, name):
        return getattr(self._sock, name)

    def close(self) -> None:
        sock = self._sock
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(LINGER)
            deadline, drained = time.monotonic() + LINGER, 0
            while drained < self.linger_bytes and time.monotonic() < deadline:
                n = sock.recv_into(_DRAIN)  # into one buffer for every socket: what is read is dropped
                if not n:
                    break
                drained += n
        except OSError:
            pass
        finally:
            sock.close()


class _SharedSocket(_LingeringSocket):
    """Under threads (``escoba dev``), two threads write one connection: the handler its frames, and
    simple-websocket's thread its pings, pongs and close. A socket with a timeout writes as much as the
    kernel takes in one ``send``, so one thread's ping could land inside the other's frame (Chromium:
    "Invalid frame header"). Here every ``send`` writes its data whole, under one lock. Under gevent
    the handler writes all of its socket's frames itself, under ``_Direct.lock``: not needed there."""

    __slots__ = ("_writing",)

    def __init__(self, sock):
        super().__init__(sock)
        self._writing = threading.Lock()

    def send(self, data) -> int:
        with self._writing:
            self._sock.sendall(data)
        return len(data)

    def sendall(self, data) -> None:
        self.send(data)


def connection(sock, handler_reads: bool) -> _LingeringSocket:
    """The socket simple-websocket is given to hold: its writes whole under threads, lingering on close."""
    return _LingeringSocket(sock) if handler_reads else _SharedSocket(sock)


def close_frame_last(ws) -> None:
    """Under werkzeug's threads (``escoba dev``), flask-sock has werkzeug write an HTTP answer on the
    connection once the handler returns: after our close frame a browser read it as a frame
    (Chromium: "Invalid frame header"). So the handler closes the WebSocket itself, waits for
    simple-websocket's thread to end (it reads the client's answer to the close), then stops our side
    writing, whatever ended that thread: werkzeug's write then finds the connection shut and drops it
    quietly. The thread's own close lingers (``_LingeringSocket``) only once the handler has wrapped the
    socket: a client that closed before that (a page left at once) had its connection closed bare,
    still open for writing under werkzeug's reference to it, and the HTTP answer followed the close
    frame. For every socket the server closes itself, table's and seek's (api/sockets/seeks.py)."""
    if ws.connected:
        with contextlib.suppress(ConnectionClosed, OSError):
            ws.close()
    ws.thread.join(LINGER + 1.0)
    with contextlib.suppress(OSError):
        ws.sock.shutdown(socket.SHUT_WR)


def install(sock, app) -> None:
    @app.before_request
    def _no_compression():
        # simple-websocket accepts permessage-deflate when offered: refuse it by not seeing the offer
        if request.environ.get("HTTP_UPGRADE", "").lower() == "websocket":
            request.environ.pop("HTTP_SEC_WEBSOCKET_EXTENSIONS", None)

    @sock.route("/tables/<table_id>/ws")
    def table_socket(ws, table_id):
        ws.input_buffer = Inbox()
        handler_reads = isinstance(ws.thread, reader.HandlerReads)
        if handler_reads:  # gevent: nothing is read until the handler reads
            ws.ws = QuickFrames(ws.ws)
        ws.sock = connection(ws.sock, handler_reads)
        try:
            try:
                ws.sock.settimeout(SEND_TIMEOUT)
            except OSError:
                return
            ctx = current_app.extensions["escoba"]
            address = request.remote_addr or "unknown"
            refusal = ctx.socket_limits.acquire(address, table_id)
            if refusal is not None:
                _refuse(ws, "too_many_sockets", refusal.message(), {"scope": refusal.scope, "limit": refusal.limit})
                return
            try:
                _serve(ws, ctx, table_id)
            finally:
                ctx.socket_limits.release(address, table_id)
        finally:
            if handler_reads:  # its watchers stop and its socket closes with the handler, whatever ended it
                ws.thread.join(LINGER + 1.0)
            elif ws.mode == "werkzeug":  # escoba dev: our close frame ends the wire
                close_frame_last(ws)  # (gunicorn writes nothing after the handler: left as it was)


FRAME_KINDS = ("view", "patch")  # ``frames=``: every change as the whole view (the default), or as a patch


def _serve(ws, ctx, table_id: str) -> None:
    deck = request.args.get("deck")
    kind = request.args.get("frames", "view")
    mailbox = Mailbox(ws.event)  # simple-websocket sets this event when the peer goes, too
    # watch before loading: a change landing in between is then in the mailbox, not lost
    ctx.fanout.subscribe(table_id, mailbox)
    try:
        try:
            token = request.args.get("token")
            player = auth.player_for(ctx.redis, table_id, token)
            state = ctx.service.load(table_id)
            if deck is not None and deck not in engine.cards.DECKS:
                raise engine.RuleError("bad_request", f"Unknown deck design {deck!r}.", {"deck": "unknown"})
            after = version_arg(request.args.get("after"))
            if kind not in FRAME_KINDS:
                raise engine.RuleError("bad_request", f"frames must be one of {', '.join(FRAME_KINDS)}.",
                                       {"frames": "unknown"})
        except engine.RuleError as e:
            _refuse(ws, None, None, None, error=e)
            return
        sent = _Sent(kind == "patch")
        mailbox.frames_for = lambda state, ahead=None: _frames(ctx, table_id, state, player, deck, sent.base(state),
                                                               ahead)
        reads = ws.thread if isinstance(ws.thread, reader.HandlerReads) else None  # gevent: this handler reads
        direct = _Direct(ws, reads.raw if reads is not None else None, sent, mailbox.frames_for)
        ctx.metrics.open_sockets.inc()
        try:
            if after is not None and after < state.version:
                _send(ws, frames.message({"type": "events",
                                        "events": redacted_events(ctx.service, table_id, player, after)}))
            _send(ws, _frames(ctx, table_id, state, player, deck))
            sent.version = state.version
            mailbox.send_now = direct.send
            collector.socket_ready()
            inbox: Inbox = ws.input_buffer
            moves = SocketMoves(ctx, table_id, token, request.remote_addr, deck, current_app.logger, mailbox)
            while True:
                ws.event.wait()  # a change, a client frame, the reader ending, or the fan-out's periodic check
                ws.event.clear()
                if stages.ON:
                    stages.begin()
                if reads is not None:
                    _pump(ws, reads, direct)  # what the client sent, into the inbox (and a ping when one is due)
                    if stages.ON:
                        stages.mark("read")
                out, moved = b"", None
                frames_in = inbox.take()
                for raw in frames_in:  # answered in order, before the mailbox is read
                    answer, made = moves.answer(raw)
                    out += answer
                    if made is not None and (moved is None or made.version > moved.version):
                        moved = made
                if frames_in:
                    # the answers waited on the store, and the move's own notice often came back in
                    # the meantime and woke this socket: what it posted is taken below, so the wake
                    # is spent here (a frame or the reader's end that came meanwhile wakes it again)
                    ws.event.clear()
                    if inbox.frames or not ws.connected or (reads is not None and reads.pending):
                        ws.event.set()
                if inbox.overflow or moves.struck_out:  # answered what it had sent, then closed
                    with direct.lock:  # the close frame too goes out after the rest of a frame (_Direct)
                        _send(ws, direct.take_pending() + out)
                        ws.sock.linger_bytes = FLOOD_LINGER_BYTES
                        ws.close(reason=POLICY_VIOLATION,
                                 message="too many frames waiting" if inbox.overflow else "too many frames refused")
                    ws.thread.join(LINGER + 1.0)
                    break
                state, chats = mailbox.take()
                if moved is not None and (state is None or moved.version > state.version):
                    state = moved  # the mover's view now, in the ack's write; the notice finds it sent
                out += b"".join(chats)
                with direct.lock:  # a move made here may send this socket its frames meanwhile (_Direct)
                    if state is not None and state.version > sent.version:
                        out += _frames(ctx, table_id, state, player, deck, sent.base(state))
                        sent.version = state.version
                        if stages.ON and direct.mailed_at:
                            direct.mailed_at = stages.mailed(direct.mailed_at)
                    out = direct.take_pending() + out
                    if out and ws.connected:
                        _send(ws, out)
                        if stages.ON:
                            stages.end()
                        continue
                # woken with nothing to send (or the socket closed): the reader may have closed it
                # (the peer left, an oversize frame, no pong); a wake with news skips this check
                if not ws.connected or not ws.thread.is_alive():
                    # let the reader finish closing before the server drops the connection under it
                    ws.thread.join(LINGER + 1.0)
                    break
        except (ConnectionClosed, OSError):
            pass
        except Exception:  # e.g. gevent refusing two greenlets waiting to write one socket: drop it
            log.exception("socket of table %s failed", table_id)
        finally:
            ctx.metrics.open_sockets.dec()
            collector.socket_closed()
    finally:
        ctx.fanout.unsubscribe(table_id, mailbox)


class _Direct:
    """A move this process made, sent to this socket by the mover's greenlet (``Fanout.published``), its
    handler left asleep: under gevent only, where the handler reads its own frames (``raw``: the
    connection's non-blocking socket), and only when the socket is free to write at once. The handler
    writes under ``lock`` too, so the socket's frames go out whole and in order, and ``sent`` (the version
    it was sent last, a patch's base) moves under it. A write the kernel takes only part of leaves the rest
    ``pending``, for the handler to write before anything else; one it takes none of, or a socket already
    behind, is left to the mailbox. The poster never waits for a socket. Everything the handler writes goes
    under the lock: its frames, the rest of a frame begun here, and its pings, pongs and close (``_pump``)."""

    __slots__ = ("lock", "pending", "mailed_at", "_ws", "_raw", "_sent", "_frames_for")

    def __init__(self, ws, raw, sent: _Sent, frames_for):
        self.lock = threading.Lock()  # gevent's under its worker: a handler waiting for it yields
        self.pending = b""
        self.mailed_at = 0.0  # bench/latency.py (events/stages.py): when a state was last left to the mailbox
        self._ws = ws
        self._raw = raw
        self._sent = sent
        self._frames_for = frames_for

    def send(self, state) -> bool:
        """Whether this socket holds ``state``'s frames now (sent here, or a newer version's before);
        False: post it to the mailbox."""
        sent = self._send(state)
        if not sent and stages.ON and not self.mailed_at:
            self.mailed_at = time.perf_counter()
        return sent

    def _send(self, state) -> bool:
        if self._raw is None or self.pending or not self._ws.connected:
            return False
        if not self.lock.acquire(blocking=False):  # its handler is writing
            return False
        try:
            if self.pending:
                return False
            if state.version <= self._sent.version:
                return True
            data = self._frames_for(state)
            try:
                written = self._raw.send(data)
            except OSError:  # the kernel took none of it (a full buffer) or the socket is gone: the handler's
                return False
            self._sent.version = state.version
            if written < len(data):
                self.pending = data[written:]
                self._ws.event.set()
            return True
        finally:
            self.lock.release()

    def take_pending(self) -> bytes:
        """The rest of a frame ``send`` began (under ``lock``), to be written first."""
        pending, self.pending = self.pending, b""
        return pending


def _pump(ws, reads, direct: _Direct) -> None:
    """The handler's read (``HandlerReads.pump``) under the socket's write lock: the pings, pongs and close
    frames it writes go out between whole frames, after the rest of one a move began (``_Direct``)."""
    with direct.lock:
        pending = direct.take_pending()
        if pending and ws.connected:
            wire.send_whole(ws.sock, pending)
        reads.pump()


class _Sent:
    """The version of the view a socket was sent last, and whether it takes changes as patches of it."""

    __slots__ = ("patches", "version")

    def __init__(self, patches: bool):
        self.patches = patches
        self.version = -1

    def base(self, state) -> int | None:
        """The version a patch to ``state`` starts from (None: send the whole view)."""
        return self.version if self.patches and 0 <= self.version < state.version else None


def _frames(ctx, table_id: str, state, player, deck, since: int | None = None, ahead=None) -> bytes:
    seat = state.seat_of(player) if player else None
    is_host = player is not None and player == state.host
    if since is not None:
        return ctx.frames.patch_frames(table_id, state, since, seat, is_host, deck, ahead)
    return ctx.frames.frames(table_id, state, seat, is_host, deck, ahead)


def _send(ws, data: bytes) -> None:
    """Frames already built (api/sockets/frames.py), written whole; a client that reads nothing times out."""
    if not ws.connected:
        raise ConnectionClosed(ws.close_reason, ws.close_message)
    wire.send_whole(ws.sock, data)


def _refuse(ws, code, message, details, *, error=None) -> None:
    """An error message in the contract's shape, then a close saying why."""
    body = error.as_dict() if error is not None else {"error": {"code": code, "message": message,
                                                                "details": details}}
    try:
        _send(ws, frames.message({"type": "error", **body}))
        ws.close(reason=POLICY_VIOLATION if error is None else None,
                 message=body["error"]["code"])
    except (ConnectionClosed, OSError):
        pass
