"""WebSocket /tables/{id}/ws: the current view on connect, then one message per change.

A reconnecting client passes ``after`` (its last version) and first gets the
events it missed, redacted for it, so it catches up with no gap. Protocol
pings (flask-sock's ping_interval) find sockets whose client is gone, and the
handler's thread is then freed. ``deck`` picks the reader's deck design.
"""

from __future__ import annotations

import json
import queue

from flask import current_app, request
from simple_websocket import ConnectionClosed

import engine

from . import auth
from .tables import redacted_events, version_arg

IDLE = 20.0  # seconds between our own {"type": "ping"} messages


def install(sock) -> None:
    @sock.route("/tables/<table_id>/ws")
    def table_socket(ws, table_id):
        ctx = current_app.extensions["escoba"]
        deck = request.args.get("deck")
        # watch before loading: a change landing in between is then queued, not lost
        watch = ctx.hub.watch(table_id)
        try:
            player = auth.player_for(ctx.redis, table_id, request.args.get("token"))
            state = ctx.service.load(table_id)
            if deck is not None and deck not in engine.cards.DECKS:
                raise engine.RuleError("bad_request", f"Unknown deck design {deck!r}.", {"deck": "unknown"})
            after = version_arg(request.args.get("after"))
        except engine.RuleError as e:
            ctx.hub.unwatch(table_id, watch)
            ws.send(json.dumps({"type": "error", **e.as_dict()}))
            ws.close()
            return
        ctx.metrics.open_sockets.inc()
        try:
            if after is not None and after < state.version:
                missed = redacted_events(ctx.service, table_id, player, after)
                ws.send(json.dumps({"type": "events", "events": missed}))
            last = _send_state(ws, table_id, state, player, deck)
            while ws.connected:
                try:
                    kind, item = watch.get(timeout=IDLE)
                except queue.Empty:
                    ws.send(json.dumps({"type": "ping"}))
                    continue
                if kind == "chat":
                    ws.send(json.dumps({"type": "chat", "line": item}))
                elif item.version > last:
                    last = _send_state(ws, table_id, item, player, deck)
        except ConnectionClosed:
            pass
        finally:
            ctx.hub.unwatch(table_id, watch)
            ctx.metrics.open_sockets.dec()


def _send_state(ws, table_id: str, state, player, deck) -> int:
    seat = state.seat_of(player) if player else None
    view = {"table_id": table_id, **engine.view(state, seat, deck=deck),
            "you_are_host": player is not None and player == state.host}
    ws.send(json.dumps({"type": "table", "version": state.version, "table": view}))
    if seat is not None and state.status == "playing" and state.turn == seat:
        ws.send(json.dumps({"type": "your_turn", "seat": seat, "version": state.version}))
    return state.version
