"""WS /seeks/{id}/ws?token=: the seek's holder waits here, and hears its table once it is made.

While the socket is open its holder counts as there (the pool hears it, as from a poll, every
``HEARD_EVERY`` seconds); the socket looks at its seek every ``LOOK_EVERY`` seconds and, once
paired, sends ``{"type": "paired", "table_id", "seat", "token"}`` and closes. A seek that ends
otherwise (cancelled, expired) is sent ``{"type": "seek", "status"}`` before the close.

Kept simple: it polls its own seek (one read a look) rather than listening for a notice. The
handler only waits, on the connection's event with a timeout, so it is the same under gevent
(``escoba serve``: the handler reads its own frames, api/sockets/reader.py) and threads
(``escoba dev``): what a client sends is read and dropped.
"""

from __future__ import annotations

import logging
import time

import orjson
from flask import current_app, request
from simple_websocket import ConnectionClosed

import engine
from api.http import seeks as http
from api.sockets import reader
from api.sockets.route import LINGER, SEND_TIMEOUT, close_frame_last, connection

LOOK_EVERY = 0.5  # seconds between looks at the seek
HEARD_EVERY = 2.0  # seconds between "still here" to the pool (well inside its 10 s)

log = logging.getLogger("escoba.sockets")


def install(sock) -> None:
    @sock.route("/seeks/<seek_id>/ws")
    def seek_socket(ws, seek_id):
        reads = ws.thread if isinstance(ws.thread, reader.HandlerReads) else None
        ws.sock = connection(ws.sock, reads is not None)
        try:
            ws.sock.settimeout(SEND_TIMEOUT)
            _serve(ws, reads, seek_id, request.args.get("token"))
        except (ConnectionClosed, OSError):
            pass
        except Exception:
            log.exception("seek socket %s failed", seek_id)
        finally:
            if reads is not None:
                ws.thread.join(LINGER + 1.0)
            elif ws.mode == "werkzeug":
                close_frame_last(ws)


def _send(ws, message: dict) -> None:
    ws.send(orjson.dumps(message).decode())


def _serve(ws, reads, seek_id: str, token: str | None) -> None:
    ctx = current_app.extensions["escoba"]
    address = request.remote_addr or "unknown"
    refusal = ctx.socket_limits.acquire(address, "seek:" + seek_id)
    if refusal is not None:
        _send(ws, {"type": "error", "error": {"code": "too_many_sockets", "message": refusal.message(),
                                              "details": {"scope": refusal.scope, "limit": refusal.limit}}})
        ws.close(message="too_many_sockets")
        return
    try:
        try:
            seek = http.holder(seek_id, token)
        except engine.RuleError as e:
            _send(ws, {"type": "error", **e.as_dict()})
            ws.close(message=e.code)
            return
        last_heard = 0.0
        while ws.connected:
            now = time.time()
            if now - last_heard >= HEARD_EVERY:
                seek = http.heard(seek_id, seek, now)
                last_heard = now
            answer = http.answer(seek, token)
            if answer["status"] == "paired":
                _send(ws, {"type": "paired", "table_id": answer["table_id"], "seat": answer["seat"],
                           "token": answer["token"]})
                ws.close()
                return
            if answer["status"] != "waiting":
                _send(ws, {"type": "seek", "status": answer["status"]})
                ws.close()
                return
            ws.event.wait(LOOK_EVERY)
            ws.event.clear()
            if reads is not None:
                reads.pump()  # the client's frames (dropped), pongs, the close handshake, pings
            _drop_input(ws)
            seek = http.seek_now(seek_id) or seek
    finally:
        ctx.socket_limits.release(address, "seek:" + seek_id)


def _drop_input(ws) -> None:
    """Nothing a client sends here means anything: read and dropped, so it cannot pile up."""
    buffer = ws.input_buffer
    if isinstance(buffer, list):
        buffer.clear()
