"""The Flask application: wiring only. Rules live in engine/, the log in events/."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson
from flask import Flask, current_app, jsonify, request, send_from_directory
from flask.json.provider import DefaultJSONProvider
from flask_sock import Sock
from werkzeug.routing import WebsocketMismatch

from api.http import (
    admin,
    analysis,
    errors,
    headers,
    hot,
    limits,
    my_tables,
    passkeys,
    players,
    push,
    ratings,
    review,
    seeks,
    tables,
)
from api.http.chat import ChatStore
from api.http.openapi import build_spec
from api.http.schemas import BODY_MAX
from api.server import observability
from api.sockets import route as sockets
from api.sockets import seeks as seek_sockets
from api.sockets.bounds import SocketLimits
from api.sockets.fanout import Fanout
from api.sockets.frames import ViewFrames
from events.config import Config
from events.connection import Backends, connect, from_clients
from events.players import PlayerStore
from events.replication import replica_acks, unreplicated_masters
from events.service import TableService

STATIC = Path(__file__).parent / "static"
# the key /healthz writes (and lets expire) to learn that the store takes writes
HEALTH_KEY = "escoba:healthz"


class FastJSON(DefaultJSONProvider):
    """Answers encoded by orjson: a view is the bulk of every answer, and the stdlib
    encoder (with Flask's sorted keys) cost a sixth of a move. Clients read keys by name."""

    def dumps(self, obj, **kwargs) -> str:
        return orjson.dumps(obj).decode()

    def loads(self, s, **kwargs):
        return orjson.loads(s)

    def response(self, *args, **kwargs):
        obj = self._prepare_response_obj(args, kwargs)
        return self._app.response_class(orjson.dumps(obj), mimetype="application/json")


@dataclass
class Context:
    redis: object  # the tables' client (backends.tables): tokens, chat, notify URLs
    config: Config
    service: TableService
    chat: ChatStore
    fanout: Fanout  # how a change reaches every socket (api/sockets/fanout.py)
    metrics: observability.Metrics
    socket_limits: SocketLimits
    frames: ViewFrames  # the frames of each change for each reader, built once in this process
    backends: Backends | None = None
    move_limit: limits.MoveLimit | None = None  # None when the limits are off
    players: PlayerStore | None = None  # accounts (events/players.py), on the tables' Redis
    sign_in_limit: limits.SignInLimit | None = None  # failed sign-ins; None when the limits are off


def change_hook(backends: Backends, config: Config):
    """What follows every append, from any process: the workers' timers."""
    from workers.scheduling import TimersHook

    return TimersHook(backends.tables, config, len(backends.queues))


def _presets() -> dict:
    from engine.rules import OFFERED, PRESETS

    return {"presets": {name: {"defaults": PRESETS[name].as_dict(),
                               "offered": {k: list(v) for k, v in OFFERED[name].items()}}
                        for name in PRESETS}}


def create_app(redis=None, config: Config | None = None) -> Flask:
    """The app on ``redis``: Backends, or one client (a plain Redis or fakeredis holding
    both the tables and the queue); None: what the environment names (events/connection.py)."""
    config = config or Config.from_env()
    if redis is None:
        backends = connect(config)
    elif isinstance(redis, Backends):
        backends = redis
    else:
        backends = from_clients(redis)
    redis = backends.tables
    service = TableService(redis, on_change=change_hook(backends, config),
                           replica_acks=replica_acks(config.replica_acks, redis),
                           unreplicated=config.unreplicated)
    metrics = observability.Metrics()
    metrics.add_redis_collectors(backends)

    app = Flask(__name__, static_folder=str(STATIC), static_url_path="/static")
    app.config["MAX_CONTENT_LENGTH"] = BODY_MAX
    app.json = FastJSON(app)
    app.config["SOCK_SERVER_OPTIONS"] = sockets.server_options(config)
    socket_limits = SocketLimits(config.sockets_per_address, config.sockets_per_address_table,
                                 config.sockets_per_table)
    views = ViewFrames()
    fanout = Fanout(redis, service, notice_seconds=metrics.fanout, posts=metrics.socket_posts, frames=views)
    app.extensions["escoba"] = Context(redis, config, service, ChatStore(redis, service.archive),
                                       fanout, metrics, socket_limits, views, backends,
                                       players=PlayerStore(redis))

    errors.install(app)
    hot.install(app)  # first: the layers installed after (headers, proxy fix) wrap it too
    headers.install(app)
    observability.install(app, metrics)
    tables.install_converters(app)
    app.register_blueprint(tables.bp)
    app.register_blueprint(admin.bp)
    app.register_blueprint(push.bp)
    app.register_blueprint(review.bp)
    app.register_blueprint(analysis.bp)
    app.register_blueprint(seeks.bp)
    app.register_blueprint(players.bp)
    app.register_blueprint(passkeys.bp)
    app.register_blueprint(my_tables.bp)
    ratings.install(app)  # GET /leaderboard, GET /players/{name}, ratings in GET /me
    limiter = limits.install(app, redis, config)
    app.extensions["escoba"].move_limit = limits.moves(limiter, config.moves_limit)
    app.extensions["escoba"].sign_in_limit = limits.sign_ins(limiter)
    sock = Sock(app)
    sockets.install(sock, app)
    seek_sockets.install(sock)

    @app.before_request
    def _socket_route_upgrades_only():
        # werkzeug matched the socket route (a websocket rule) to a request that is no upgrade: its
        # WebsocketMismatch is a bare 400; the contract's answer is 426 naming the protocol
        if isinstance(request.routing_exception, WebsocketMismatch):
            raise errors.UpgradeRequired()

    spec = build_spec()

    @app.get("/openapi.json")
    def openapi():
        return jsonify(spec)

    @app.get("/healthz")
    def healthz():
        # a store that answers PING may still refuse every write (full under noeviction, a
        # replica, loading): write a tiny key that expires, as every move must
        ctx = current_app.extensions["escoba"]
        try:
            ctx.backends.tables.set(HEALTH_KEY, "1", ex=60)
            if ctx.backends.queue is not ctx.backends.tables:
                ctx.backends.queue.set(HEALTH_KEY, "1", ex=60)
        except Exception as e:
            state = errors.store_unavailable(e) or "failing"
            current_app.logger.warning("healthz: the store refuses writes: %s: %s", type(e).__name__, e)
            return errors.unavailable_response(state)
        body = {"ok": True, "redis": "ok"}
        acks = ctx.service.store.replica_acks
        if acks:  # serving, but a master with no replica online holds its moves alone (docs/api.md)
            alone = unreplicated_masters(ctx.backends.tables, acks)
            body["replication"] = "degraded" if alone else "ok"
            if alone:
                body["unreplicated_masters"] = alone
        return jsonify(body)

    @app.get("/")
    @app.get("/t/<table_id>")
    def page(table_id=None):
        return send_from_directory(STATIC, "index.html")

    @app.get("/favicon.ico")
    def favicon():
        # browsers ask for /favicon.ico whatever the page links; an SVG answers it
        return send_from_directory(STATIC, "favicon.svg", mimetype="image/svg+xml", max_age=86400)

    presets = _presets()

    @app.get("/presets")
    def get_presets():
        """Each preset's defaults and what a host may choose: the page's create form starts here."""
        return jsonify(presets)

    return app
