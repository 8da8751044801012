"""A player's games in one list (docs/api.md v1.3): ``GET /me/tables``, ``POST /tables/summaries`` (a
guest's, from the seat tokens its browser kept) and ``POST /me/claim``. The rows come from the
projection events/my_tables.py keeps as games change; nothing here scans the tables."""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from api import auth
from api.http import schemas
from api.http.players import _body, require_account
from engine import RuleError
from events import my_tables
from events.store import tokens_key

bp = Blueprint("my_tables", __name__)


def _ctx():
    return current_app.extensions["escoba"]


@bp.get("/me/tables")
def my_games():
    player = require_account()
    status = request.args.get("status", my_tables.ACTIVE)
    if status not in (my_tables.ACTIVE, my_tables.FINISHED):
        raise RuleError("bad_request", "status is active or finished.", {"status": ["active", "finished"]})
    raw_cursor = request.args.get("cursor")
    ctx = _ctx()
    away_after = ctx.config.away_after
    cursor = None
    if raw_cursor is not None:  # an empty one too: not one this list gave
        cursor = my_tables.parse_cursor(raw_cursor)
        if cursor is None:
            raise RuleError("bad_request", "That cursor is not one this list gave.", {"cursor": "invalid"})
    if status == my_tables.ACTIVE:  # one page: a cursor, valid for the route (docs/api.md), has nothing to page
        return jsonify({"tables": my_tables.active_rows(ctx.redis, player.player_id, away_after)})
    rows, next_cursor = my_tables.finished_rows(ctx.redis, player.player_id, away_after, cursor)
    return jsonify({"tables": rows, **({"cursor": next_cursor} if next_cursor else {})})


def _held(redis, tokens: list[str]) -> list[tuple[str, str, str, dict]]:
    """``[(token, table id, player, stored row)]`` for the seat tokens that hold a seat (in order, once
    each): one pipeline of each token's lookup and its table's row (a cluster's per node)."""
    wanted = []
    for token in dict.fromkeys(tokens):
        table_id = auth.table_of(token)
        if table_id is not None:
            wanted.append((token, table_id))
    if not wanted:
        return []
    with redis.pipeline(transaction=False) as pipe:
        for token, table_id in wanted:
            pipe.hget(tokens_key(table_id), auth.token_hash(token))
            pipe.hgetall(my_tables.row_key(table_id))
        replies = pipe.execute()
    out = []
    for i, (token, table_id) in enumerate(wanted):
        player, fields = replies[2 * i], replies[2 * i + 1]
        if player is None or not fields:
            continue
        stored = my_tables.parse_row(fields)
        out.append((token, table_id, player.decode() if isinstance(player, bytes) else player, stored))
    return out


@bp.post("/tables/summaries")
def summaries():
    body = schemas.seat_tokens.load(_body())
    ctx = _ctx()
    rows = []
    for _token, table_id, player, stored in _held(ctx.redis, body["tokens"]):
        seat = my_tables.seat_of_player(stored, player)
        if seat is not None:
            rows.append(my_tables.public_row(table_id, stored, seat, ctx.config.away_after))
    # as a player's list: your turn first, then by last change, newest first
    rows.sort(key=my_tables.order)
    return jsonify({"tables": rows})


@bp.post("/me/claim")
def claim():
    player = require_account()
    body = schemas.seat_tokens.load(_body())
    ctx = _ctx()
    claimed = 0
    for _token, table_id, guest, _stored in _held(ctx.redis, body["tokens"]):
        command = {"type": "claim", "player": guest, "account": player.player_id, "name": player.name}
        try:
            outcome = ctx.service.execute(table_id, command, actor=f"player:{guest}",
                                          grant=auth.account_grant(player.player_id, guest))
        except RuleError:  # held by another account, a second seat at one table, closed: not claimed
            continue
        if outcome.records:
            claimed += 1
            ctx.fanout.published(table_id, outcome.state)  # the table's sockets here see the new name
    return jsonify({"claimed": claimed})
