"""Web Push: the server's public key for the page, and the seats' subscriptions.

The page (``static/push.js``) asks for ``GET /push/key``, subscribes the browser
with its push service, and hands the subscription to ``POST /tables/{id}/push``.
The worker then tells the player when it is their turn (``workers/push.py``).
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request, send_from_directory

from api import auth
from api.http import schemas
from engine import RuleError
from workers import push
from workers.outbound import RefusedURL

bp = Blueprint("push", __name__)


def _ctx():
    return current_app.extensions["escoba"]


def _public_key() -> str:
    config = _ctx().config
    if not config.vapid_private_key:
        raise RuleError("not_found", "Web Push is off on this server (ESCOBA_VAPID_PRIVATE_KEY is not set).")
    try:
        return push.public_key(config.vapid_private_key)
    except ValueError as exc:
        raise RuleError("not_found", f"Web Push is off: ESCOBA_VAPID_PRIVATE_KEY is not a key ({exc}).") from None


@bp.get("/push/key")
def key():
    """The VAPID public key, the page's ``applicationServerKey``."""
    return jsonify({"public_key": _public_key()})


@bp.get("/sw.js")
def service_worker():
    """The service worker, served from the root so that its scope covers every table page."""
    response = send_from_directory(current_app.static_folder, "sw.js", mimetype="text/javascript")
    response.headers["Cache-Control"] = "no-cache"  # a new version reaches browsers at once
    return response


def _seated_player(table_id: str) -> tuple[str, int]:
    ctx = _ctx()
    player = auth.require_player(ctx.redis, table_id)
    seat = ctx.service.load(table_id).seat_of(player)
    if seat is None:
        raise RuleError("forbidden", "Only seated players get turn notices.")
    return player, seat


def _body() -> dict:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise RuleError("bad_request", "The body must be a JSON object.", {"body": "not a JSON object"})
    return body


@bp.post("/tables/<table_id>/push")
def subscribe(table_id: str):
    """Keep a browser's push subscription for the caller's seat."""
    ctx = _ctx()
    player, seat = _seated_player(table_id)  # who asks comes first: a 401 says more than push being off
    _public_key()  # nothing to subscribe to while push is off
    body = schemas.push_subscription.load(_body())
    try:
        push.check_endpoint(body["endpoint"], ctx.config)
    except RefusedURL as exc:
        raise RuleError("bad_request", f"That push endpoint is refused: {exc}.",
                        {"endpoint": str(exc)}) from None
    try:
        push.check_keys(body["keys"]["p256dh"], body["keys"]["auth"])
    except ValueError as exc:
        raise RuleError("bad_request", f"The subscription's keys are not valid: {exc}.",
                        {"keys": str(exc)}) from None
    if ctx.service.compacted(table_id):  # no more turns: nothing to notify, no hot key again
        raise RuleError("table_closed", "This table is closed for good: it is kept read-only.")
    push.subscribe(ctx.redis, table_id, player, body)
    return jsonify({"seat": seat, "endpoint": body["endpoint"]}), 201


@bp.delete("/tables/<table_id>/push")
def unsubscribe(table_id: str):
    """Forget a browser's subscription (the page turned notices off)."""
    ctx = _ctx()
    player = auth.require_player(ctx.redis, table_id)
    ctx.service.load(table_id)  # 404 for no such table
    body = schemas.push_endpoint.load(_body())
    known = push.unsubscribe(ctx.redis, table_id, player, body["endpoint"])
    return jsonify({"endpoint": body["endpoint"], "removed": known})
