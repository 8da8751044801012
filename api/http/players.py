"""Accounts (docs/api.md v1.3, "Players"): sign up, sign in and out, who am I.

An account holds a name and, if it has one, a password's argon2id hash (api/passwords.py); no
e-mail, nothing else personal. Its keys are events/players.py's. A failed sign-in is counted per name
and per client address (api/http/limits.py ``SignInLimit``), and an unknown name and a wrong password
get the same 401 after the same work.
"""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Blueprint, current_app, jsonify, request

from api import auth, passwords
from api.http import limits, schemas
from engine import RuleError
from events.players import NameTaken, Player, PlayerStore, is_player_token

bp = Blueprint("players", __name__)

_WRONG = "That name and password do not match an account."


def _ctx():
    return current_app.extensions["escoba"]


def store() -> PlayerStore:
    return _ctx().players


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _body() -> dict:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise RuleError("bad_request", "The body must be a JSON object.", {"body": "not a JSON object"})
    return body


def signed_in(player: Player, token: str):
    return jsonify({"player_id": player.player_id, "name": player.name, "token": token}), 201


def current_account() -> Player | None:
    """The account of the request's player token; None without a player token; 401 for one whose
    session ended (or was never issued)."""
    token = auth.bearer()
    if not is_player_token(token):
        return None
    player_id = store().session(token)
    player = store().get(player_id) if player_id else None
    if player is None:
        raise RuleError("unauthorized", "That player token is not valid (signed out?): sign in again.")
    return player


def require_account() -> Player:
    player = current_account()
    if player is None:
        raise RuleError("unauthorized", "This needs a player token: Authorization: Bearer <token>.")
    return player


@bp.post("/players")
def create_player():
    body = schemas.new_player.load(_body())
    password = body.get("password")
    hashed = passwords.hash_password(password) if password is not None else ""
    try:
        player, token = store().create(body["name"], hashed, now())
    except NameTaken:
        raise RuleError("name_taken", "That name is taken (names are the same whatever their case).",
                        {"name": body["name"]}) from None
    return signed_in(player, token)


@bp.post("/sessions")
def sign_in():
    body = schemas.sign_in.load(_body())
    limit: limits.SignInLimit | None = _ctx().sign_in_limit
    address = limits.client_address()
    if limit is not None:
        limit.check(body["name"], address)
    player = store().by_name(body["name"])
    # an unknown name verifies against a decoy: the same work, the same answer, as a wrong password
    if not passwords.verify_password(player.password if player else None, body["password"]):
        if limit is not None:
            limit.failed(body["name"], address)
        raise RuleError("unauthorized", _WRONG)
    if passwords.needs_rehash(player.password):  # the hasher's parameters moved on since
        store().set_password(player.player_id, passwords.hash_password(body["password"]))
    return signed_in(player, store().issue(player.player_id, now()))


@bp.delete("/sessions")
def sign_out():
    require_account()
    store().end(auth.bearer())
    return "", 204


@bp.get("/me")
def me():
    player = require_account()
    return jsonify({"player_id": player.player_id, "name": player.name, "joined": player.joined,
                    "ratings": ratings_of(player.player_id)})


def ratings_of(player_id: str) -> list:
    """The account's ratings (docs/api.md v1.3 "Ratings"): kept by the ratings' projection, which
    registers ``ratings_of`` on the app (``app.extensions["escoba_ratings"]``); none until then."""
    read = current_app.extensions.get("escoba_ratings")
    return read(player_id) if read is not None else []
