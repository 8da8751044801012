"""Ratings and profiles (docs/api.md v1.3, "Players" and "Ratings"): ``GET /leaderboard`` and
``GET /players/{name}``; ``ratings`` in ``GET /me`` (api/http/players.py asks ``ratings_of``, which
``install`` registers). Everything here is read from events/ratings.py's projection; nothing in a
profile or a board is a card.
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request, send_from_directory

from engine import RuleError
from engine.results import MODES
from engine.rules import PRESETS
from events import ratings

bp = Blueprint("ratings", __name__)


def _ctx():
    return current_app.extensions["escoba"]


def _choice(name: str, allowed) -> str:
    value = request.args.get(name)
    if value is None or value not in allowed:
        raise RuleError("bad_request", f"{name} is one of: {', '.join(allowed)}.",
                        {name: "missing" if value is None else "not one of " + ", ".join(allowed)})
    return value


@bp.get("/leaderboard")
def leaderboard():
    # other query parameters are ignored, as everywhere (api/http/feed.py); bodies are strict
    preset, mode = _choice("preset", list(PRESETS)), _choice("mode", list(MODES))
    return jsonify({"preset": preset, "mode": mode,
                    "players": ratings.leaderboard(_ctx().redis, preset, mode)})


@bp.get("/players/<player_name:name>")
def profile(name: str):
    player = _ctx().players.by_name(name) if len(name) <= 200 else None
    if player is None:
        raise RuleError("not_found", "No player has that name.", {"name": "unknown"})
    return jsonify({"name": player.name, "joined": player.joined, **ratings.profile(_ctx().redis, player.player_id)})


@bp.get("/p/<name>")
def page(name: str):
    """The profile page (api/static/profile.js reads ``GET /players/{name}``)."""
    return send_from_directory(current_app.static_folder or "", "profile.html")


def install(app) -> None:
    """The blueprint, and ``ratings_of`` for ``GET /me``."""
    app.register_blueprint(bp)
    redis = app.extensions["escoba"].redis
    app.extensions["escoba_ratings"] = lambda player_id: ratings.ratings_of(redis, player_id)
