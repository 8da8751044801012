"""The table endpoints of docs/api.md: thin, they validate, ask the service, and answer.

No rule is decided here: a move becomes a command for the engine, and the
reply is the engine's view for whoever asked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from flask import Blueprint, current_app, g, jsonify, request
from marshmallow import ValidationError
from werkzeug.http import parse_etags
from werkzeug.routing import BaseConverter

import engine
from api import auth
from api.http import feed, limits, players, schemas
from api.moves import Ask, checked_deck, decide_move, json_object
from engine import RuleError
from workers import outbound
from workers.scheduling import notify_key

bp = Blueprint("tables", __name__)


class TableId(BaseConverter):
    """A table id in an address: any segment but the names of the routes beside ``/tables/{id}``
    (``/tables/summaries``), so an address is one route's and ``Allow`` lists that route's methods.
    A table id is 8 characters (events/service.py ``new_table_id``): it is never one of them."""

    regex = r"(?!summaries$)[^/]+"


class PlayerName(BaseConverter):
    """A player's name in an address: any segment but the words of the routes beside
    ``/players/{name}`` (events/players.py ``RESERVED_NAMES``, which no account may take)."""

    regex = r"(?!passkeys$)[^/]+"


def install_converters(app) -> None:
    """Before the blueprints: their rules are bound with it."""
    app.url_map.converters["table"] = TableId
    app.url_map.converters["player_name"] = PlayerName


def _ctx():
    return current_app.extensions["escoba"]


def _json_body() -> dict:
    return json_object(request.get_json(silent=True))


def _deck():
    return checked_deck(request.args.get("deck"))


def _view(table_id: str, state, reader, player=None) -> dict:
    host = player is not None and player == state.host
    return {"table_id": table_id, **engine.view(state, reader, deck=_deck()), "you_are_host": host}


def view_etag(table_id: str, state, seat, player, deck) -> str:
    """The ETag of a view: one per (table, version, reader, deck), and the engine's version
    (an upgrade may draw views differently)."""
    if seat is not None:
        reader = f"s{seat}"
    elif player is not None and player == state.host:
        reader = "host"
    else:
        reader = "public"
    return f'"{table_id}.{state.version}.{reader}.{deck or "-"}.{engine.ENGINE_VERSION}"'


def _invite_url(table_id: str) -> str:
    base = _ctx().config.public_url or request.host_url
    return f"{base.rstrip('/')}/t/{table_id}"


def _seating(table_id: str | None = None) -> tuple:
    """Who a create or a sit seats: ``(account, player, token, grant)``. With a player token, the
    account (docs/api.md v1.3): its player id, its own token back, and the tokens hash's entry that
    lets that token act for the seat (api/auth.py); else a guest with a new seat token (``token`` a
    dict that the grant fills in with the token, at a create, once the table's id is drawn)."""
    account = players.current_account()  # 401 for a player token whose session ended
    if account is not None:
        return account, account.player_id, auth.bearer(), auth.account_grant(account.player_id, account.player_id)
    player = auth.new_player_id()
    if table_id is not None:
        token, granted = auth.new_token(player, table_id)
        return None, player, token, granted
    made: dict = {}

    def grant(drawn: str) -> tuple[str, str]:
        made["token"], granted = auth.new_token(player, drawn)
        return granted

    return None, player, made, grant


def _named(raw, account) -> dict:
    """The body, with the account's name in it when it has none (the account's name is used anyway)."""
    body = json_object(raw)
    return {**body, "name": account.name} if account is not None and "name" not in body else body


@bp.post("/tables")
def create_table():
    ctx = _ctx()
    raw = _json_body()
    account, player, token, grant = _seating()
    body = schemas.create_table.load(_named(raw, account))
    operator_only = {"decks", "first_dealer"} & set(body)
    if operator_only and not auth.is_admin(ctx.config.admin_token):
        raise RuleError("forbidden", "Decks and the first dealer are for operators (admin token).",
                        {k: "operators only" for k in operator_only})
    host_name = account.name if account is not None else body["name"]
    command = {
        "type": "open",
        "name": body.get("table_name") or f"{host_name}'s table",
        "preset": body["preset"],
        # "rated" at the top level is settings.rated (docs/api.md v1.3, "Ratings")
        # (a settings.rated given too is the one checked and kept: never overwritten unchecked)
        "settings": {"rated": body["rated"], **body["settings"]} if "rated" in body else body["settings"],
        "player": player,
        "host_name": host_name,
        "decks": body.get("decks"),
        "first_dealer": body.get("first_dealer"),
        "host_seated": not body["watch"],
        "account": account is not None,
    }
    # the host's token is granted in the step that writes the first event: a table is never
    # made without it (nor the token without the table)
    table_id, outcome = ctx.service.create(engine.parse_command(command), actor=f"player:{player}", grant=grant)
    g.log = {"table_id": table_id, "command": "open", "version": outcome.version}
    seat = outcome.state.seat_of(player)
    return jsonify({
        "table_id": table_id,
        "invite_url": _invite_url(table_id),
        "seat": seat,
        "token": token["token"] if isinstance(token, dict) else token,
        "table": _view(table_id, outcome.state, seat, player),
    }), 201


@bp.post("/tables/<table_id>/seats")
def take_seat(table_id: str):
    ctx = _ctx()
    raw = _json_body()
    account, player, token, grant = _seating(table_id)
    body = schemas.take_seat.load(_named(raw, account))
    name = account.name if account is not None else body["name"]
    sit = engine.parse_command({"type": "sit", "player": player, "name": name, "account": account is not None})
    outcome = ctx.service.execute(table_id, sit, actor="guest", grant=grant)
    seat = outcome.state.seat_of(player)
    g.log = {"table_id": table_id, "command": "sit", "seat": seat, "version": outcome.version}
    return jsonify({"seat": seat, "token": token, "table": _view(table_id, outcome.state, seat, player)}), 201


@dataclass(frozen=True)
class Answer:
    body: bytes  # JSON
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()


def _ask(table_id: str, body=None) -> Ask:
    return Ask(table_id, auth.bearer(), limits.client_address(), request.args.get("deck"),
               request.headers.get("If-None-Match"), body, request.headers.get("Idempotency-Key"))


def _answered(answer: Answer):
    response = current_app.response_class(answer.body, status=answer.status, mimetype="application/json")
    for name, value in answer.headers:
        response.headers[name] = value
    return response


@bp.get("/tables/<table:table_id>")
def get_table(table_id: str):
    return _answered(view_answer(_ctx(), _ask(table_id), g.log))


@bp.post("/tables/<table_id>/moves")
def post_move(table_id: str):
    return _answered(move_answer(_ctx(), _ask(table_id, request.get_json(silent=True)), g.log))


def view_answer(ctx, ask: Ask, log: dict) -> Answer:
    """``GET /tables/{id}``: the reader's view, or 304 while the reader's copy is current."""
    state = ctx.service.load(ask.table_id)
    player = auth.player_for(ctx.redis, ask.table_id, ask.token)
    seat = state.seat_of(player) if player else None
    deck = checked_deck(ask.deck)
    etag = view_etag(ask.table_id, state, seat, player, deck)
    headers = (("ETag", etag), ("Cache-Control", "no-cache"))  # may keep it, must ask again (If-None-Match)
    # a client that has this version's view gets a 304, and the view is not built at all
    if ask.if_none_match and parse_etags(ask.if_none_match).contains_weak(etag.strip('"')):
        return Answer(b"", 304, headers)
    # the process's per-change view: the reader's sockets are sent the same bytes
    is_host = player is not None and player == state.host
    return Answer(ctx.frames.view_json(ask.table_id, state, seat, is_host, deck), 200, headers)


def move_answer(ctx, ask: Ask, log: dict) -> Answer:
    """``POST /tables/{id}/moves``: the move applied (or refused, changing nothing), and the mover's
    new view."""
    # the table's sockets here hear it once it is appended, before the change hook runs
    moved = decide_move(ctx, ask, log, lambda state: ctx.fanout.published(ask.table_id, state),
                        lambda state: ctx.fanout.ahead(ask.table_id, state))
    state = moved.outcome.state
    if not moved.outcome.repeated:  # a post the early one did not make (posting a version twice does nothing)
        ctx.fanout.published(ask.table_id, state)
    view = ctx.frames.view_json(ask.table_id, state, moved.seat, moved.player == state.host, moved.deck)
    return Answer(b'{"version":%d,"table":%s}' % (moved.outcome.version, view))


@bp.get("/tables/<table_id>/events")
def get_events(table_id: str):
    ctx = _ctx()
    after = _int_arg("after", 0)
    limit = _int_arg("limit", feed.DEFAULT_LIMIT)
    if not 1 <= limit <= feed.MAX_LIMIT:
        raise ValidationError({"limit": [f"must be 1 to {feed.MAX_LIMIT}"]})
    player = auth.player_for(ctx.redis, table_id, auth.bearer())
    return jsonify({"table_id": table_id, **feed.events_page(ctx.service, table_id, player, after, limit)})


def redacted_events(service, table_id: str, player: str | None, after: int) -> list[dict]:
    """Every event after ``after`` as its reader may see it (socket catch-up: api/http/feed.py)."""
    return feed.events_page(service, table_id, player, after, limit=None)["events"]


@bp.post("/tables/<table_id>/chat")
def post_chat(table_id: str):
    ctx = _ctx()
    player = auth.require_player(ctx.redis, table_id)
    body = schemas.chat.load(_json_body())
    state = ctx.service.load(table_id)
    seat = state.seat_of(player)
    if seat is None:
        raise RuleError("forbidden", "Only seated players can chat; spectators read.")
    line = ctx.chat.post(table_id, seat, state.seats[seat].name, body["text"], _now())
    return jsonify({"line": line}), 201


@bp.get("/tables/<table_id>/chat")
def get_chat(table_id: str):
    ctx = _ctx()
    ctx.service.load(table_id)  # 404 for a table that does not exist
    return jsonify({"lines": ctx.chat.read(table_id, after=_int_arg("after", 0))})


@bp.post("/tables/<table_id>/notify")
def set_notify(table_id: str):
    """Extension: a URL to POST a small notice to when it becomes this seat's turn."""
    ctx = _ctx()
    player = auth.require_player(ctx.redis, table_id)
    body = schemas.notify.load(_json_body())
    seat = ctx.service.load(table_id).seat_of(player)
    if seat is None:
        raise RuleError("forbidden", "Only seated players get turn notices.")
    if ctx.service.compacted(table_id):  # before resolving any URL: nothing will be notified
        raise RuleError("table_closed", "This table is closed for good: it is kept read-only.")
    try:  # resolves the host: nothing inside (loopback, private, metadata...) is ever called
        outbound.check_url(body["url"], allow_private=ctx.config.notify_allow_private)
    except outbound.RefusedURL as exc:
        raise ValidationError({"url": [f"refused: {exc}"]}) from None
    ctx.redis.hset(notify_key(table_id), str(seat), body["url"])
    return jsonify({"seat": seat, "url": body["url"]}), 201


# The largest ``after`` taken: a version or a chat line number can never be near it, and it fits
# the store's stream ids and a JSON number every client reads exactly (2**53 - 1).
AFTER_MAX = 2**53 - 1


def _int_arg(name: str, default: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    try:
        return _bounded_int(raw)
    except ValueError as e:
        raise ValidationError({name: [str(e)]}) from None


def _bounded_int(raw: str) -> int:
    # digits only: int() would also take " 7", "+7", "7_0" and a number of a thousand digits
    if raw.startswith("-") and raw[1:].isascii() and raw[1:].isdigit():
        raise ValueError("must be 0 or more")
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 16 or int(raw) > AFTER_MAX:
        raise ValueError(f"must be a whole number from 0 to {AFTER_MAX}")
    return int(raw)


def version_arg(raw: str | None, name: str = "after") -> int | None:
    """An ``after`` from a socket's address: None when absent, RuleError(bad_request) when bad."""
    if raw is None:
        return None
    try:
        return _bounded_int(raw)
    except ValueError as e:
        raise RuleError("bad_request", f"{name} {e}.", {name: [str(e)]}) from None


def _now() -> str:
    return datetime.now(UTC).isoformat()
