"""Operators' endpoints, on only when ESCOBA_ADMIN_TOKEN is set."""

from __future__ import annotations

from flask import Blueprint, Response, current_app, jsonify

import engine
from api import auth
from engine import RuleError
from events.export import export_text

bp = Blueprint("admin", __name__)


def _require_admin():
    ctx = current_app.extensions["escoba"]
    if not ctx.config.admin_token:
        raise RuleError("not_found", "Admin endpoints are off (ESCOBA_ADMIN_TOKEN is not set).")
    if not auth.is_admin(ctx.config.admin_token):
        raise RuleError("unauthorized", "This needs the admin token.")
    return ctx


@bp.get("/admin/tables/<table_id>/log")
def table_log(table_id: str):
    ctx = _require_admin()
    ctx.service.load(table_id)  # 404 for no such table (and a log lost since this process read it)
    records = ctx.service.records(table_id)
    if not records:  # gone between the two reads: a log of nothing is no table, never a 200
        raise RuleError("not_found", "No such table.")
    # the same JSON-lines format `escoba replay --file` reads
    return Response(export_text(records), mimetype="application/x-ndjson")


@bp.get("/admin/tables/<table_id>")
def full_view(table_id: str):
    ctx = _require_admin()
    return jsonify({"table_id": table_id, **engine.view(ctx.service.load(table_id), None, full=True)})
