"""Quick pairing and the lobby (docs/api.md, "Quick pairing"): thin, as every endpoint.

A seek is written to its pool (events/seeks.py); the workers pair it (workers/pairing.py), and
its holder learns its seat here or on ``WS /seeks/{id}/ws`` (api/sockets/seeks.py). Each poll
(and the socket, while open) tells the pool its holder is still there. A correspondence seek
opens its table at once, with its holder as the host, and waits in the lobby: each accept takes
a seat there, the last one starts the game.
"""

from __future__ import annotations

import hmac
import threading
import time

from flask import Blueprint, current_app, jsonify, request
from marshmallow import ValidationError

import engine
from api import auth
from api.http import players, schemas
from api.moves import json_object
from engine.rules import PRESETS, settings_for
from events import seeks as store
from events.store import tokens_key
from workers import pairing

bp = Blueprint("seeks", __name__)

LOBBY_SEEKS = 100  # open correspondence seeks listed
LOBBY_LIVE = 20  # tables playing listed
LIVE_KEPT = 2.0  # seconds a process keeps the lobby's live tables before reading them again
SLOTS_KEPT = 60.0  # ... and the list of slots that hold tables (read again at once when it grows: _live_rows)


def _ctx():
    return current_app.extensions["escoba"]


def _seeks() -> store.Seeks:
    ctx = _ctx()
    found = getattr(ctx, "seeks", None)
    if found is None:
        found = ctx.seeks = store.Seeks(ctx.redis)
    return found


def _now() -> float:
    return time.time()


def account() -> tuple[str, str] | None:
    """The account a request speaks for (a player token): (player id, name). None: a guest (401 for a
    player token whose session ended). The one place quick pairing asks."""
    player = players.current_account()
    return None if player is None else (player.player_id, player.name)


def _chosen(preset: str, settings: dict) -> dict:
    """The settings that differ from the preset's (checked as a table's are: a 400 naming the key),
    so two seeks asking the same table by different words meet in one pool."""
    chosen = settings_for(preset, settings)
    defaults = PRESETS[preset]
    return {k: getattr(chosen, k) for k in sorted(settings) if getattr(chosen, k) != getattr(defaults, k)}


@bp.post("/seeks")
def create_seek():
    ctx = _ctx()
    body = schemas.create_seek.load(json_object(request.get_json(silent=True)))
    who = account()
    if who is None and not body.get("name"):
        raise ValidationError({"name": ["a guest's seek needs a name (or send a player token)"]})
    settings_for(body["preset"], body["settings"])  # every key checked as a table's (a 400 naming it)
    asked = dict(body["settings"])
    rated = body["rated"] or asked.pop("rated", False) is True  # settings.rated is the same (docs/api.md)
    if rated and who is None:
        raise engine.RuleError("unauthorized", "A rated seek needs a player token (an account).",
                               {"rated": "needs a player token"})
    settings = _chosen(body["preset"], asked)
    correspondence = body["correspondence"]
    pool = store.Pool(body["preset"], body["players"], rated, settings, correspondence)
    player, name = who if who is not None else (auth.new_player_id(), body["name"])
    rating = store.player_rating(ctx.redis, who[0] if who else None, pool.preset, pool.players)
    seek_id = store.new_seek_id(pool.name)
    token = store.new_seek_token()
    grant = store.token_digest(store.seat_token(token))
    now = _now()
    identity = player if who is not None else seek_id
    bot_after = None if correspondence else body["bot_after"]
    fields = {"status": store.WAITING, "token": store.token_digest(token), "grant": grant, "player": player,
              "name": name, "identity": identity, "rating": rating, "created": now, "bot_after": bot_after,
              "correspondence": correspondence, "players": pool.players, "account": who is not None}
    if correspondence:
        _open_for_lobby(ctx, pool, seek_id, fields, who is not None, now)
    else:
        info = {"identity": identity, "rating": rating, "created": now, "bot_after": bot_after,
                "player": player, "name": name, "grant": grant, "account": who is not None}
        _wait_in_pool(ctx, pool, seek_id, fields, info, now)
    return jsonify({"seek_id": seek_id, "token": token, "status": store.WAITING}), 201


def _wait_in_pool(ctx, pool: store.Pool, seek_id: str, fields: dict, info: dict, now: float) -> None:
    """A live seek: in its pool, the pool due a look, and a wave at once when enough wait."""
    seeks = _seeks()
    if info["account"]:  # whom it played last in this pool: the wave reads it here, not one by one
        last = seeks.last_opponents(pool.name, [info["player"]]).get(info["player"])
        if last:
            info["last"] = sorted(last)
    _, at_once = seeks.add(pool, seek_id, fields, now, live=True, info=info)
    shards = ctx.backends.queues
    seeks.mark_due(pool.name, now + _first_look(info["bot_after"]), len(shards))
    if at_once:
        pairing.hand_wave(shards, pool.name, now)


def _open_for_lobby(ctx, pool: store.Pool, seek_id: str, fields: dict, is_account: bool, now: float) -> None:
    """A correspondence seek: its table opened now (its holder the host, seated with the seat token it
    derives), the seek written, its row in the lobby."""
    player, name = fields["player"], fields["name"]
    settings = {**pool.settings, "rated": True} if pool.rated else pool.settings
    command = {"type": "open", "name": f"{name}'s table", "preset": pool.preset, "settings": settings,
               "player": player, "host_name": name, "account": is_account}
    table_id, _ = ctx.service.create(command, actor=f"player:{player}", grant=(fields["grant"], player))
    if is_account:  # the account's player tokens act for its seat too (api/auth.py)
        grant_account(ctx.redis, table_id, player)
    seeks = _seeks()
    seeks.add(pool, seek_id, {**fields, "table_id": table_id, "seat": 0}, now, live=False)
    row = {"seek_id": seek_id, "name": name, "preset": pool.preset, "players": pool.players,
           "rated": pool.rated, "settings": pool.settings, "created": now}
    if fields["rating"] is not None:
        row["rating"] = fields["rating"]
    seeks.list_in_lobby(seek_id, row, now)


def _first_look(bot_after: int | None) -> float:
    """When a new seek's pool should be looked at first (if no wave comes sooner)."""
    return min(pairing.WAVE_EVERY, float(bot_after)) if bot_after is not None else pairing.WAVE_EVERY


def holder(seek_id: str, token: str | None) -> dict:
    """The seek ``token`` holds; RuleError not_found / unauthorized."""
    seek = _seeks().read(seek_id)
    if seek is None:
        raise engine.RuleError("not_found", "No such seek.")
    if token is None:
        raise engine.RuleError("unauthorized", "This needs the seek's token: Authorization: Bearer <token>.")
    if not hmac.compare_digest(store.token_digest(token), seek.get("token", "")):
        raise engine.RuleError("unauthorized", "That token is not this seek's.")
    return seek


def seek_now(seek_id: str) -> dict | None:
    """The seek as stored now (a socket's look)."""
    return _seeks().read(seek_id)


def heard(seek_id: str, seek: dict, now: float) -> dict:
    """The holder polled (or its socket is open): the pool hears it, and a seek whose holder was
    silent too long is answered expired (and ended so)."""
    if seek["status"] != store.WAITING or seek.get("correspondence") == "1":
        return seek
    seeks = _seeks()
    pool_name = store.pool_of(seek_id)
    seen = seeks.redis.zscore(store.key(pool_name, "seen"), seek_id)
    if seen is not None and now - float(seen) > store.GONE_AFTER:
        seeks.end(seek_id, store.EXPIRED)
        return {**seek, "status": store.EXPIRED}
    seeks.heard(seek_id, now)
    # a safety net: a pool whose due entry was lost (a crash after the seek was written) is looked at
    seeks.mark_due(pool_name, now + store.GONE_AFTER, len(_ctx().backends.queues))
    return seek


def answer(seek: dict, token: str) -> dict:
    """``GET /seeks/{id}``'s answer: matched is still waiting to its holder until its table is made.
    Paired, the seat's token: ``<table id>.<secret>`` as every seat token (api/auth.py), its secret
    derived from the seek's token (events/seeks.py ``seat_token``); the worker granted the secret
    alone at the table (it never knows the table id and the secret together), and the first answer
    that names the table grants the whole token too (``HSETNX``: once)."""
    status = seek["status"]
    if status == store.MATCHED:
        status = store.WAITING
    out = {"status": status}
    if status == store.PAIRED:
        table_id = seek["table_id"]
        seat_token = f"{table_id}.{store.seat_token(token)}"
        if seek.get("named") != "1":
            _ctx().redis.hsetnx(tokens_key(table_id), auth.token_hash(seat_token), seek["player"])
            _seeks().set_fields(seek["seek_id"], {"named": "1"})
        out.update(table_id=table_id, seat=int(seek["seat"]), token=seat_token)
    return out


def grant_account(redis, table_id: str, player: str) -> None:
    """The tokens hash's entry that lets an account's player tokens act for its seat (api/auth.py
    ``account_grant``), beside the seat token's granted in the seat's own step."""
    field, value = auth.account_grant(player, player)
    redis.hset(tokens_key(table_id), field, value)


@bp.get("/seeks/<seek_id>")
def get_seek(seek_id: str):
    token = auth.bearer()
    seek = heard(seek_id, holder(seek_id, token), _now())
    return jsonify(answer(seek, token))


@bp.delete("/seeks/<seek_id>")
def cancel_seek(seek_id: str):
    seek = holder(seek_id, auth.bearer())
    if seek.get("correspondence") == "1" and int(seek.get("accepted") or 0) > 0:
        # others sit at its table already, waiting for the last seat: it stays open for them
        raise engine.RuleError("seek_paired", "Others have accepted this seek: its table waits for them.",
                               {"table_id": seek.get("table_id")})
    old = _seeks().end(seek_id, store.CANCELLED)
    if old in (store.MATCHED, store.PAIRED):
        raise engine.RuleError("seek_paired", "This seek is at a table already.",
                               {"table_id": seek.get("table_id")})
    if seek.get("correspondence") == "1":
        _seeks().unlist(seek_id)
    return "", 204


@bp.post("/seeks/<seek_id>/accept")
def accept_seek(seek_id: str):
    ctx = _ctx()
    body = schemas.accept_seek.load(json_object(request.get_json(silent=True) or {}))
    seeks = _seeks()
    seek = seeks.read(seek_id)
    if seek is None:
        raise engine.RuleError("not_found", "No such seek.")
    if seek.get("correspondence") != "1":
        raise engine.RuleError("not_correspondence", "Live seeks are paired by the server; seek one yourself.")
    who = account()
    if who is None and not body.get("name"):
        raise ValidationError({"name": ["a guest needs a name (or send a player token)"]})
    if who is not None and who[0] == seek["player"]:
        raise engine.RuleError("forbidden", "That is your own seek.")
    if seek["status"] != store.WAITING:
        raise engine.RuleError("seek_closed", "This seek no longer waits.", {"status": seek["status"]})
    if who is None and store.pool_of(seek_id).split(":")[2] == "1":
        raise engine.RuleError("unauthorized", "A rated seek is accepted with a player token (an account).")
    wanted = int(seek["players"]) - 1
    taken = seeks.take_seat(seek_id, wanted)
    if not taken:
        raise engine.RuleError("seek_closed", "This seek no longer waits.")
    table_id = seek["table_id"]
    if who is not None:  # the account's own token acts for its seat (api/auth.py)
        player, name = who
        token, grant = auth.bearer(), auth.account_grant(player, player)
    else:
        player, name = auth.new_player_id(), body["name"]
        token, grant = auth.new_token(player, table_id)
    try:
        outcome = ctx.service.execute(table_id, {"type": "sit", "player": player, "name": name,
                                                 "account": who is not None},
                                      actor=f"player:{player}", grant=grant)
    except Exception:
        seeks.give_back_seat(seek_id)
        raise
    seat = outcome.state.seat_of(player)
    if taken == wanted:  # the last seat: the game starts, the seek is done
        ctx.service.execute(table_id, {"type": "start", "player": seek["player"]}, actor="system",
                            idempotency_key="lobby-start")
        seeks.set_fields(seek_id, {"status": store.PAIRED})
        seeks.unlist(seek_id)
    return jsonify({"status": store.PAIRED, "table_id": table_id, "seat": seat, "token": token}), 201


class _Kept:
    """A value read again only after ``ttl`` seconds (the lobby's live tables, the slots listed)."""

    def __init__(self, ttl: float):
        self.ttl = ttl
        self.value = None
        self.at = -1e18
        self.lock = threading.Lock()

    def get(self, read, *, again: bool = False):
        """The value kept, or ``read()``'s when it is older than ``ttl`` (or ``again``)."""
        now = time.monotonic()
        with self.lock:
            if now - self.at < self.ttl and not again:
                return self.value
        value = read()
        with self.lock:
            self.value, self.at = value, now
        return value


def _kept(name: str, ttl: float) -> _Kept:
    """This app's kept value ``name`` (each app its own: tests run several in one process)."""
    ctx = _ctx()
    kept = getattr(ctx, "kept", None)
    if kept is None:
        kept = ctx.kept = {}
    if name not in kept:
        kept[name] = _Kept(ttl)
    return kept[name]


def _live_rows() -> list[dict]:
    ctx = _ctx()
    from events.buckets import SLOTS_KEY, SlotDirectory

    kept = _kept("slots", SLOTS_KEPT)
    slots = kept.get(lambda: SlotDirectory(ctx.redis).slots())
    # slots are only ever added: one more listed (a table in a slot that held none) is read at once,
    # so a new table is in the lobby within LIVE_KEPT, not SLOTS_KEPT (one SCARD a LIVE_KEPT)
    if ctx.redis.scard(SLOTS_KEY) != len(slots):
        slots = kept.get(lambda: SlotDirectory(ctx.redis).slots(), again=True)
    start = int(time.time() // LIVE_KEPT) % max(1, len(slots))  # a different part of the index each time
    rows = []
    for table_id in store.live_tables(ctx.redis, slots, LOBBY_LIVE, start):
        try:
            state = ctx.service.load(table_id)
        except engine.RuleError:
            continue
        if state.status not in ("playing", "round_over"):
            continue
        rows.append({"table_id": table_id, "preset": state.preset, "status": state.status,
                     "players": [state.seats[s].name for s in state.players],
                     "bots": sum(1 for s in state.players if state.seats[s].kind == "bot"),
                     "version": state.version})
    return rows


@bp.get("/lobby")
def lobby():
    seeks = _seeks().lobby(_now(), LOBBY_SEEKS)
    return jsonify({"seeks": seeks, "live": _kept("live", LIVE_KEPT).get(_live_rows)})
