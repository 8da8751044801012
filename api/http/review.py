"""Game review: every state of a table's log with every hand shown, once nothing is secret.

``GET /tables/{id}/review`` lists the steps (one per event) the caller may see;
``GET /tables/{id}/review/{version}`` is the event at that version and the full
view after it. A seat token (anyone who sat, or the host) may review every version
up to the end of the table's last finished game, and nothing while the first game is
still being played (``game_in_progress``). The admin token may review any table at
any version: the operators' dispute tool. Tokens travel in the Authorization header
only (a URL ends up in logs and histories).
"""

from __future__ import annotations

import hmac
from typing import cast

from flask import Blueprint, current_app, jsonify, request, send_from_directory

from api import auth
from api.http.tables import _bounded_int
from api.moves import checked_deck
from engine import RuleError
from events.review import Review

bp = Blueprint("review", __name__)


def _ctx():
    return current_app.extensions["escoba"]


def _header_token() -> str | None:
    header = request.headers.get("Authorization", "")
    return header[7:].strip() or None if header.startswith("Bearer ") else None


def _review(table_id: str) -> Review:
    ctx = _ctx()
    token = _header_token()
    if token is None:
        raise RuleError("unauthorized", "A review needs your seat token, or the admin token: "
                        "Authorization: Bearer <token>.")
    admin = ctx.config.admin_token
    operator = bool(admin) and hmac.compare_digest(token.encode(), admin.encode())
    if not operator:
        auth.player_for(ctx.redis, table_id, token)  # 401 for a token not of this table
    ctx.service.load(table_id)  # 404 for no such table
    review = Review(ctx.service.records(table_id), operator=operator)
    if review.last is None:
        raise RuleError("game_in_progress", "The game is still being played: its review opens when it ends.",
                        {"status": review.final.status})
    return review


@bp.get("/tables/<table_id>/review")
def steps(table_id: str):
    review = _review(table_id)
    return jsonify({"table_id": table_id, "name": review.final.name, "last": review.last,
                    "operator": review.operator, "steps": review.steps[: review.last]})


@bp.get("/tables/<table_id>/review/<version>")
def step(table_id: str, version: str):
    review = _review(table_id)
    deck = checked_deck(request.args.get("deck"))  # the reader's deck design, as GET /tables/{id} takes it
    try:
        # a whole number within what JSON carries exactly: 2^64 and more had answered 500 (its echo
        # in the 404's details could not be encoded)
        n = _bounded_int(version)
    except ValueError as e:
        raise RuleError("bad_request", "The version is a whole number.", {"version": str(e)}) from None
    last = cast(int, review.last)  # _review refused a table with none
    if review.operator and not 1 <= n <= last:
        raise RuleError("not_found", f"No version {n}: the log has 1 to {last}.", {"version": n, "last": last})
    if not 1 <= n <= last:
        if n > last and n <= review.final.version:
            raise RuleError("game_in_progress", f"Version {n} belongs to a game still being played; "
                            f"the review goes up to {last}.", {"version": n, "last": last})
        raise RuleError("not_found", f"No version {n}: the review has 1 to {last}.", {"version": n, "last": last})
    out = review.step(n, deck=deck)
    return jsonify({"table_id": table_id, "version": n, "last": last, "operator": review.operator,
                    "record": out["record"], "table": {"table_id": table_id, **out["table"]}})


@bp.get("/t/<table_id>/review")
def page(table_id: str):
    return send_from_directory(current_app.static_folder or "", "review.html")
