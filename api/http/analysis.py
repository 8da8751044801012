"""Game analysis: ``POST /tables/{id}/analysis`` asks for it, ``GET`` reads its progress and result.

Who: a seat token of the table's players (or its host) once the game is over
(finished or expired: nothing in it is secret any more, as in the review); the
admin token at any time. Others: 401 without a token of this table, 403 with a
token of someone who neither sits there nor hosts it, 409 ``game_in_progress``
for a player while a game is being played. The work is the ``analysis`` job
(workers/analysis.py); the result is read from the table's own hash
(events/analysis.py).
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify

from api import auth
from engine import RuleError
from events import analysis as stored
from events.review import OVER
from workers import analysis as job
from workers.queues import table_queue

bp = Blueprint("analysis", __name__)


def _ctx():
    return current_app.extensions["escoba"]


def _allowed(table_id: str):
    """The table's state, once the caller is known to be allowed to ask for or read its analysis."""
    ctx = _ctx()
    token = auth.bearer()
    if token is None:
        raise RuleError("unauthorized", "An analysis needs your seat token, or the admin token: "
                        "Authorization: Bearer <token>.")
    operator = auth.is_admin(ctx.config.admin_token)
    player = None if operator else auth.player_for(ctx.redis, table_id, token)
    state = ctx.service.load(table_id)  # 404 for no such table
    if operator:
        return state
    if state.seat_of(player) is None and player != state.host:
        raise RuleError("forbidden", "Only the table's players and its host may see its analysis.")
    if state.status not in OVER:
        raise RuleError("game_in_progress", "The game is still being played: its analysis opens when it ends.",
                        {"status": state.status})
    return state


def _answer(found: stored.Stored):
    return jsonify(found.answer()), 200 if found.status == stored.DONE else 202


@bp.post("/tables/<table_id>/analysis")
def ask(table_id: str):
    state = _allowed(table_id)
    ctx = _ctx()
    found = job.request(ctx.redis, table_queue(ctx.backends.queues, table_id), table_id, state.version)
    return _answer(found)


@bp.get("/tables/<table_id>/analysis")
def read(table_id: str):
    _allowed(table_id)
    found = stored.load(_ctx().redis, table_id)
    if found is None:
        raise RuleError("not_found", "No analysis was asked for at this table: POST to ask for one.")
    return _answer(found)
