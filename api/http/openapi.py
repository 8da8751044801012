"""/openapi.json, generated from the same marshmallow schemas that check requests.

What marshmallow cannot say is added here, so that the document says what the server does:
each move's ``type`` is one value; the settings a table takes depend on its preset (one
variant of the create body per preset); ``after`` is bounded; every operation lists the
statuses it answers (400 bad input, 401/403 who, 404, 409/422 the rules, 413/414/431 sizes, 429
limits, 503 the store; 426 for a plain request to the socket route). tests/api/http/test_schemathesis.py
holds the server to it, in process and from outside.
"""

from __future__ import annotations

import copy

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from marshmallow import Schema

from api.http import feed, schemas
from api.http.tables import AFTER_MAX
from engine.cards import DECKS
from engine.results import MODES
from engine.rules import OFFERED, PRESETS

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "additionalProperties": False,
    "properties": {"error": {
        "type": "object",
        "required": ["code", "message", "details"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"},
                       "details": {"type": "object"}},
    }},
}

_MOVE_JUDGED = {"type": "object", "required": ["type"], "properties": {
    "type": {"type": "string", "enum": ["play", "take_fifteen"]}, "card": {"type": "string"},
    "capture": {"type": "array", "items": {"type": "string"}},
    "cards": {"type": "array", "items": {"type": "string"}}}}
ANALYSIS_SCHEMA = {
    "type": "object",
    "required": ["status"],
    "properties": {
        "status": {"type": "string", "enum": ["pending", "done"]},
        "version": {"type": "integer", "minimum": 0, "description": "the log version analysed"},
        "progress": {"type": "number", "minimum": 0, "maximum": 1},
        "seats": {"type": "array", "items": {
            "type": "object", "required": ["seat", "accuracy", "moves"],
            "properties": {
                "seat": {"type": "integer", "minimum": 0, "maximum": 3},
                "accuracy": {"type": "number", "minimum": 0, "maximum": 100},
                "moves": {"type": "array", "items": {
                    "type": "object", "required": ["version", "round", "played", "best", "loss", "label"],
                    "properties": {
                        "version": {"type": "integer"}, "round": {"type": "integer"},
                        "played": _MOVE_JUDGED, "best": _MOVE_JUDGED,
                        "loss": {"type": "number", "minimum": 0, "description": "round points"},
                        "label": {"type": "string", "nullable": True,
                                  "enum": ["inaccuracy", "mistake", "blunder", None]}}}}}}},
    },
}

RATING_SCHEMA = {
    "type": "object", "required": ["preset", "mode", "rating", "deviation", "games", "provisional"],
    "properties": {"preset": {"type": "string", "enum": list(PRESETS)}, "mode": {"type": "string", "enum": list(MODES)},
                   "rating": {"type": "integer"}, "deviation": {"type": "integer"},
                   "games": {"type": "integer", "minimum": 0}, "provisional": {"type": "boolean"}},
}
LEADERBOARD_SCHEMA = {
    "type": "object", "required": ["players"],
    "properties": {"preset": {"type": "string"}, "mode": {"type": "string"}, "players": {
        "type": "array", "maxItems": 100, "items": {
            "type": "object", "required": ["rank", "name", "rating", "games"],
            "properties": {"rank": {"type": "integer", "minimum": 1}, "name": {"type": "string"},
                           "rating": {"type": "integer"}, "games": {"type": "integer"}}}}},
}
PROFILE_SCHEMA = {
    "type": "object", "required": ["name", "joined", "ratings", "totals", "recent", "accuracy"],
    "properties": {
        "name": {"type": "string"}, "joined": {"type": "string"},
        "ratings": {"type": "array", "items": {"$ref": "#/components/schemas/Rating"}},
        "totals": {"type": "object", "required": ["games", "wins", "losses", "abandons", "escobas"],
                   "properties": {k: {"type": "integer", "minimum": 0}
                                  for k in ("games", "wins", "losses", "abandons", "escobas")}},
        "recent": {"type": "array", "items": {
            "type": "object", "required": ["table_id", "preset", "result", "rating_change"],
            "properties": {"table_id": {"type": "string"}, "game": {"type": "integer"},
                           "preset": {"type": "string"}, "mode": {"type": "string"},
                           "result": {"type": "string", "enum": ["win", "loss"]}, "place": {"type": "integer"},
                           "rating_change": {"type": "number", "nullable": True},
                           "review": {"type": "string", "description": "the game's review page"}}}},
        "accuracy": {"type": "number", "nullable": True, "description": "mean analysis accuracy, or null"},
    },
}

_STATUS_TEXT = {
    400: "bad input: malformed JSON, unknown or missing fields, wrong types (details name each field)",
    401: "a seat (or admin) token is needed, or the one given is not valid",
    403: "that role may not do this",
    404: "no such table (or the admin endpoints are off)",
    405: "method not allowed (the Allow header lists the methods)",
    409: "the table's state does not allow it now; stale expected_version",
    413: "the body is larger than 16 KB (refused from its Content-Length, unread; the connection closes)",
    414: "the address (path and query) is longer than 2 KB",
    415: "the body is not JSON",
    422: "the move breaks the rules",
    426: "a plain request to the socket route: it takes WebSocket upgrades only (Upgrade: websocket)",
    429: "rate limited: Retry-After says when to try again",
    431: "the headers are larger than 8 KB",
    503: "the store cannot take the request now (down, full, failing over): Retry-After",
}


def _errors(*statuses: int) -> dict:
    out = {}
    for status in statuses:
        response = {"description": _STATUS_TEXT[status],
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        headers = {}
        if status in (429, 503):
            headers["Retry-After"] = {"schema": {"type": "integer", "minimum": 1}, "description": "seconds"}
        if status == 405:
            headers["Allow"] = {"schema": {"type": "string"}}
        if status == 426:
            headers["Upgrade"] = {"schema": {"type": "string", "enum": ["websocket"]}}
        if headers:
            response["headers"] = headers
        out[str(status)] = response
    return out


def _setting_values(presets) -> dict:
    """The settings object of a create body (or a settings move) for tables of ``presets``."""
    keys: dict[str, list] = {}
    for preset in presets:
        for key, values in OFFERED[preset].items():
            for value in values:
                if not any(value == v and type(value) is type(v) for v in keys.setdefault(key, [])):
                    keys[key].append(value)
    properties = {}
    for key, found in keys.items():
        kind = {bool: "boolean", int: "integer", str: "string"}[type(found[0])]
        properties[key] = {"type": kind, "enum": found}
    return {"type": "object", "additionalProperties": False, "properties": properties}


def build_spec() -> dict:
    spec = APISpec(title="Escoba table server", version="1.3.0", openapi_version="3.0.3",
                   plugins=[MarshmallowPlugin()])
    schema: type[Schema]
    for name, schema in (("CreateTable", schemas.CreateTable), ("TakeSeat", schemas.TakeSeat),
                         ("Chat", schemas.Chat), ("Notify", schemas.Notify),
                         ("PushSubscription", schemas.PushSubscription), ("PushEndpoint", schemas.PushEndpoint),
                         ("CreateSeek", schemas.CreateSeek), ("AcceptSeek", schemas.AcceptSeek),
                         ("NewPlayer", schemas.NewPlayer), ("SignIn", schemas.SignIn),
                         ("SeatTokens", schemas.SeatTokens)):
        spec.components.schema(name, schema=schema)
    move_refs = []
    for kind, schema in schemas.MOVES.items():
        name = "Move_" + kind
        spec.components.schema(name, schema=schema)
        move_refs.append({"$ref": f"#/components/schemas/{name}"})
    spec.components.schema("Error", ERROR_SCHEMA)
    spec.components.security_scheme("seat", {"type": "http", "scheme": "bearer",
                                             "description": "a seat token (Authorization header only)"})
    spec.components.security_scheme("seek", {"type": "http", "scheme": "bearer",
                                             "description": "a seek's token (Authorization header only)"})
    spec.components.security_scheme("player", {"type": "http", "scheme": "bearer",
                                               "description": "a player token (POST /players, POST /sessions): "
                                                              "Authorization header only"})
    spec.components.security_scheme("admin", {"type": "http", "scheme": "bearer",
                                              "description": "ESCOBA_ADMIN_TOKEN (Authorization header only)"})

    def body(ref):
        return {"required": True, "content": {"application/json": {"schema": ref}}}

    def ok(desc, content="application/json"):
        return {"description": desc, "content": {content: {"schema": {"type": "object"} if "json" in content
                                                            else {"type": "string"}}}}

    # what any request may be answered, whatever its route: sizes over the limits (a GET with a body
    # over 16 KB too) and a store that cannot take it
    sizes = _errors(413, 414, 431)
    write = _errors(400, 404, 405, 413, 414, 415, 429, 431, 503)
    seat_write = {**write, **_errors(401, 403, 409, 422)}
    read = {**_errors(400, 404, 405, 503), **sizes}
    tid = [{"name": "table_id", "in": "path", "required": True, "schema": {"type": "string"}}]
    after = {"name": "after", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": AFTER_MAX},
             "description": "a version (events) or line number (chat); what comes after it"}
    deck = {"name": "deck", "in": "query", "schema": {"type": "string", "enum": list(DECKS)},
            "description": "the reader's deck design (labels only)"}
    token = {"name": "Authorization", "in": "header", "required": False,
             "schema": {"type": "string"},
             "description": "Bearer <seat token>: the view of that seat (optional; anything else reads as a "
                            "spectator, a token this table never issued is a 401)"}

    spec.path("/tables", operations={"post": {
        "summary": "Open a table; the host holds seat 0", "requestBody": body("CreateTable"),
        "responses": {"201": ok("table_id, invite_url, seat, token, table"), **write, **_errors(403)}}})
    etag = {"name": "If-None-Match", "in": "header", "required": False, "schema": {"type": "string"},
            "description": "the ETag of a view the caller holds: a 304 while it is still current"}
    spec.path("/tables/{table_id}", parameters=tid, operations={"get": {
        "summary": "The table as the caller may see it; an ETag per (table, version, reader, deck)",
        "parameters": [deck, token, etag],
        "responses": {"200": ok("view (ETag header)"),
                      "304": {"description": "the view of that ETag is still current (no body)"},
                      **read, **_errors(401)}}})
    spec.path("/tables/{table_id}/seats", parameters=tid, operations={"post": {
        "summary": "Take a free seat", "requestBody": body("TakeSeat"),
        "responses": {"201": ok("seat, token, table"), **write, **_errors(409)}}})
    spec.path("/tables/{table_id}/moves", parameters=tid, operations={"post": {
        "summary": "Make a move", "security": [{"seat": []}],
        "parameters": [{"name": "Idempotency-Key", "in": "header",
                        "schema": {"type": "string", "minLength": 1, "maxLength": 100}}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"oneOf": move_refs}}}},
        "responses": {"200": ok("version, table"), **seat_write}}})
    spec.path("/tables/{table_id}/events", parameters=tid, operations={"get": {
        "summary": "Events after a version, redacted for the caller, a page at a time",
        "parameters": [after, token, {
            "name": "limit", "in": "query", "description": "events in this page",
            "schema": {"type": "integer", "minimum": 1, "maximum": feed.MAX_LIMIT, "default": feed.DEFAULT_LIMIT}}],
        "responses": {"200": ok("table_id, events, next (the after of the next page), "
                                "more (events remain after next)"), **read, **_errors(401)}}})
    spec.path("/tables/{table_id}/chat", parameters=tid, operations={
        "get": {"summary": "Chat lines", "parameters": [after], "responses": {"200": ok("lines"), **read}},
        "post": {"summary": "Post a chat line (seated players)", "security": [{"seat": []}],
                 "requestBody": body("Chat"), "responses": {"201": ok("line"), **seat_write}}})
    spec.path("/tables/{table_id}/notify", parameters=tid, operations={"post": {
        "summary": "Register a URL for turn notices (refused, 400, when it reaches a non-public address)",
        "security": [{"seat": []}], "requestBody": body("Notify"),
        "responses": {"201": ok("seat, url"), **seat_write}}})
    spec.path("/tables/{table_id}/push", parameters=tid, operations={
        "post": {"summary": "Keep a browser's Web Push subscription for turn notices (seated players; refused, "
                            "400, when its endpoint reaches a non-public address)",
                 "security": [{"seat": []}], "requestBody": body("PushSubscription"),
                 "responses": {"201": ok("seat, endpoint"), **seat_write}},
        "delete": {"summary": "Forget a browser's Web Push subscription", "security": [{"seat": []}],
                   "requestBody": body("PushEndpoint"), "responses": {"200": ok("endpoint, removed"), **seat_write}}})
    spec.path("/push/key", operations={"get": {
        "summary": "The VAPID public key (applicationServerKey); 404 when push is off",
        "responses": {"200": ok("public_key"), **_errors(404, 405), **sizes}}})
    review_errors = {**read, **_errors(401, 403, 409)}
    spec.path("/tables/{table_id}/review", parameters=tid, operations={"get": {
        "summary": "The steps of a game for its review: a seat token once the game is over, or the admin token "
                   "(Authorization header only)", "security": [{"seat": []}],
        "responses": {"200": ok("table_id, name, last, operator, steps"), **review_errors}}})
    spec.path("/tables/{table_id}/review/{version}", parameters=tid + [
        {"name": "version", "in": "path", "required": True,
         "schema": {"type": "integer", "minimum": 0, "maximum": AFTER_MAX}}],
        operations={"get": {
            "summary": "The event at a version and the full view after it (every hand)", "security": [{"seat": []}],
            "parameters": [deck],
            "responses": {"200": ok("table_id, version, last, operator, record, table"), **review_errors}}})
    spec.components.schema("Analysis", ANALYSIS_SCHEMA)
    analysis = {"application/json": {"schema": {"$ref": "#/components/schemas/Analysis"}}}
    analysis_answers = {"200": {"description": "done: seats, each with its accuracy and every move judged",
                                "content": analysis},
                        "202": {"description": "pending: progress 0..1", "content": analysis}}
    spec.path("/tables/{table_id}/analysis", parameters=tid, operations={
        "post": {"summary": "Ask for the game's analysis (what each play cost, judged from what its player "
                            "could see): a seat token once the game is over, or the admin token; asking "
                            "again starts nothing", "security": [{"seat": []}, {"admin": []}],
                 "responses": {**analysis_answers, **write, **review_errors}},
        "get": {"summary": "The analysis: 404 before any was asked, 202 with its progress, 200 once done",
                "security": [{"seat": []}, {"admin": []}],
                "responses": {**analysis_answers, **review_errors}}})
    spec.path("/tables/{table_id}/ws", parameters=tid, operations={"get": {
        "summary": "WebSocket (upgrade only): table, patch, your_turn, chat, events, ack and error messages; "
                   "?token= (a seat token), ?after= (a version, 0 or more), ?deck=, ?frames=view|patch "
                   "(patch: each change after the first view as a patch of the view the socket was sent "
                   "last, {\"type\": \"patch\", \"version\", \"from\", \"set\", \"history_add\"?, "
                   "\"labels_add\"}: docs/api.md). Bad parameters "
                   "get a {\"type\": \"error\"} message, then the socket closes. A socket with a seat token "
                   "may send {\"type\": \"move\", \"id\", \"move\", \"expected_version\"?} (id: 1..100 "
                   "characters, the move's Idempotency-Key): answered {\"type\": \"ack\", \"id\", \"version\"} "
                   "or {\"type\": \"error\", \"id\", \"error\"}, as POST /tables/{id}/moves would. "
                   "A request that is no upgrade is answered 426.",
        "responses": {"101": {"description": "switching protocols"},
                      **_errors(400, 405, 426, 429, 503), **sizes}}})
    sid = [{"name": "seek_id", "in": "path", "required": True, "schema": {"type": "string"}}]
    spec.path("/seeks", operations={"post": {
        "summary": "Seek a game: wait in the pool of its preset, players, rated flag and settings to be paired "
                   "(a guest with a name; a rated seek needs a player token); a correspondence seek waits in "
                   "the lobby", "requestBody": body("CreateSeek"),
        "responses": {"201": ok("seek_id, token, status: waiting"), **write, **_errors(401)}}})
    seek_read = {**read, **_errors(401)}
    spec.path("/seeks/{seek_id}", parameters=sid, operations={
        "get": {"summary": "The seek (and its holder is still there): waiting, paired with table_id, seat and "
                           "the seat's token, cancelled or expired", "security": [{"seek": []}],
                "responses": {"200": ok("status, table_id?, seat?, token?"), **seek_read}},
        "delete": {"summary": "Cancel a seek (409 seek_paired once it is at a table)", "security": [{"seek": []}],
                   "responses": {"204": {"description": "cancelled"}, **seek_read, **write, **_errors(409)}}})
    spec.path("/seeks/{seek_id}/accept", parameters=sid, operations={"post": {
        "summary": "Accept a correspondence seek from the lobby: a seat at its table (the last one starts it)",
        "requestBody": body("AcceptSeek"),
        "responses": {"201": ok("status: paired, table_id, seat, token"), **write, **_errors(401, 403, 409)}}})
    spec.path("/seeks/{seek_id}/ws", parameters=sid, operations={"get": {
        "summary": "WebSocket (upgrade only) of a seek's holder, ?token= (the seek's): {\"type\": \"paired\", "
                   "\"table_id\", \"seat\", \"token\"} once its table is made, or {\"type\": \"seek\", "
                   "\"status\"} when it ends otherwise, then the socket closes; while open, its holder counts "
                   "as there. A bad token gets a {\"type\": \"error\"} message, then the socket closes. "
                   "A request that is no upgrade is answered 426.",
        "responses": {"101": {"description": "switching protocols"}, **_errors(400, 405, 426, 503), **sizes}}})
    spec.path("/lobby", operations={"get": {
        "summary": "The open correspondence seeks (seek_id, name, preset, players, rated, rating?) and tables "
                   "playing now that anyone may watch",
        "responses": {"200": ok("seeks, live"), **_errors(405, 503), **sizes}}})
    admin_errors = {**_errors(401, 404, 405, 503), **sizes}
    spec.path("/admin/tables/{table_id}/log", parameters=tid, operations={"get": {
        "summary": "The full event log as JSON lines (admin token)", "security": [{"admin": []}],
        "responses": {"200": ok("log", "application/x-ndjson"), **admin_errors}}})
    spec.path("/admin/tables/{table_id}", parameters=tid, operations={"get": {
        "summary": "The operator's full view, hidden cards included (admin token)", "security": [{"admin": []}],
        "responses": {"200": ok("view"), **admin_errors}}})
    _players(spec, body, ok, write, read, sizes)
    # ratings (docs/api.md v1.3, "Ratings"; api/http/ratings.py)
    spec.components.schema("Rating", RATING_SCHEMA)
    spec.path("/leaderboard", operations={"get": {
        "summary": "The top 100 non-provisional ratings of a preset and mode",
        "parameters": [{"name": "preset", "in": "query", "required": True,
                        "schema": {"type": "string", "enum": list(PRESETS)}},
                       {"name": "mode", "in": "query", "required": True,
                        "schema": {"type": "string", "enum": list(MODES)}}],
        "responses": {"200": {"description": "players: rank, name, rating, games", "content": {
            "application/json": {"schema": LEADERBOARD_SCHEMA}}}, **read}}})
    spec.path("/players/{name}", parameters=[{"name": "name", "in": "path", "required": True,
                                              "schema": {"type": "string"}}], operations={"get": {
        "summary": "A player's public profile: ratings, totals of rated games, recent games (never a card)",
        "responses": {"200": {"description": "name, joined, ratings, totals, recent, accuracy", "content": {
            "application/json": {"schema": PROFILE_SCHEMA}}}, **read}}})
    spec.path("/presets", operations={"get": {
        "summary": "Each preset's default settings and the choices a host has (the page's create form)",
        "responses": {"200": ok("presets"), **_errors(405), **sizes}}})
    spec.path("/openapi.json", operations={"get": {
        "summary": "This document", "responses": {"200": ok("OpenAPI 3.0"), **_errors(405), **sizes}}})
    spec.path("/metrics", operations={"get": {
        "summary": "Prometheus metrics of this process (docs/operations.md, Monitoring); keep it inside your network",
        "responses": {"200": ok("Prometheus text exposition format", "text/plain"), **_errors(405), **sizes}}})
    spec.path("/healthz", operations={"get": {
        "summary": "The store takes writes (a tiny expiring key is written); with replica acks, whether every "
                   "master has a replica online (\"replication\": \"ok\" or \"degraded\")",
        "responses": {"200": ok("ok"), **_errors(405, 503), **sizes}}})
    document = spec.to_dict()
    _refine(document["components"]["schemas"])
    return document


def _players(spec, body, ok, write, read, sizes) -> None:
    """Accounts and a player's games (docs/api.md v1.3; api/http/players.py, passkeys.py, my_tables.py)."""
    signed = {"201": ok("player_id, name, token (a player token)")}
    player: list[dict[str, list[str]]] = [{"player": []}]
    as_player = {**write, **_errors(401)}
    webauthn = {"type": "object", "description": "what the browser's credential.toJSON() gives (WebAuthn)"}
    spec.path("/players", operations={"post": {
        "summary": "Make an account: a name (unique whatever its case) and a password, or none when a passkey "
                   "follows", "requestBody": body("NewPlayer"),
        "responses": {**signed, **write, **_errors(409)}}})
    spec.path("/sessions", operations={
        "post": {"summary": "Sign in by name and password: the same 401 for an unknown name and a wrong password; "
                            "failed sign-ins are limited per name and per address (429)",
                 "requestBody": body("SignIn"), "responses": {**signed, **write, **_errors(401)}},
        "delete": {"summary": "Sign out: that player token no longer works (others of the account do)",
                   "security": player,
                   "responses": {"204": {"description": "signed out"}, **as_player}}})
    spec.path("/players/passkeys/options", operations={"post": {
        "summary": "WebAuthn registration options for navigator.credentials.create (a five-minute challenge)",
        "security": player, "responses": {"200": ok("PublicKeyCredentialCreationOptions (JSON)"), **as_player}}})
    spec.path("/players/passkeys", operations={"post": {
        "summary": "Register the browser's new credential (its attestation verified)", "security": player,
        "requestBody": {"required": True, "content": {"application/json": {"schema": webauthn}}},
        "responses": {"201": ok("credential_id"), **as_player}}})
    spec.path("/sessions/passkey/options", operations={"post": {
        "summary": "WebAuthn authentication options for navigator.credentials.get; a body {\"name\"} lists that "
                   "account's passkeys (optional)",
        "responses": {"200": ok("PublicKeyCredentialRequestOptions (JSON)"), **write}}})
    spec.path("/sessions/passkey", operations={"post": {
        "summary": "Sign in with a passkey's assertion (its signature verified)",
        "requestBody": {"required": True, "content": {"application/json": {"schema": webauthn}}},
        "responses": {**signed, **write, **_errors(401)}}})
    spec.path("/me", operations={"get": {
        "summary": "The signed-in account: player_id, name, joined, ratings", "security": player,
        "responses": {"200": ok("player_id, name, joined, ratings"), **read, **_errors(401)}}})
    status = {"name": "status", "in": "query", "schema": {"type": "string", "enum": ["active", "finished"],
                                                          "default": "active"}}
    cursor = {"name": "cursor", "in": "query", "schema": {"type": "string", "pattern": r"^[0-9]{1,16}:.{1,64}$"},
              "description": "finished only: the cursor the page before gave"}
    spec.path("/me/tables", operations={"get": {
        "summary": "The account's tables: active (its turn first, then by last change, newest first) or finished "
                   "(newest first, a page at a time: cursor)", "security": player, "parameters": [status, cursor],
        "responses": {"200": ok("tables (rows), cursor when more"), **read, **_errors(401)}}})
    spec.path("/tables/summaries", operations={"post": {
        "summary": "The rows of the seats these seat tokens hold (a guest's games); unknown tokens are left out",
        "requestBody": body("SeatTokens"), "responses": {"200": ok("tables (rows)"), **write}}})
    spec.path("/me/claim", operations={"post": {
        "summary": "Make the guest seats these seat tokens hold the account's", "security": player,
        "requestBody": body("SeatTokens"), "responses": {"200": ok("claimed"), **as_player}}})


def _refine(components: dict) -> None:
    """What the marshmallow schemas can't say."""
    for kind in schemas.MOVES:
        components["Move_" + kind]["properties"]["type"] = {"type": "string", "enum": [kind]}
    components["Move_settings"]["properties"]["settings"] = _setting_values(OFFERED)
    # one create body per preset: the settings a table takes are its preset's
    base = components.pop("CreateTable")
    variants = []
    for preset in OFFERED:
        variant = copy.deepcopy(base)
        variant["properties"]["preset"] = {"type": "string", "enum": [preset]}
        variant["properties"]["settings"] = _setting_values([preset])
        components[f"CreateTable_{preset}"] = variant
        variants.append({"$ref": f"#/components/schemas/CreateTable_{preset}"})
    components["CreateTable"] = {"oneOf": variants}
    # a seek's settings, as a table's: its preset's (one variant per preset)
    base = components.pop("CreateSeek")
    variants = []
    for preset in OFFERED:
        variant = copy.deepcopy(base)
        variant["properties"]["preset"] = {"type": "string", "enum": [preset]}
        variant["properties"]["settings"] = _setting_values([preset])
        components[f"CreateSeek_{preset}"] = variant
        variants.append({"$ref": f"#/components/schemas/CreateSeek_{preset}"})
    components["CreateSeek"] = {"oneOf": variants}
    # a guest names itself; a player token's seek takes the account's name, and until accounts come
    # (issue "Players who come back") every seek is a guest's: the name is required
    for name in [f"CreateSeek_{p}" for p in OFFERED] + ["AcceptSeek"]:
        components[name]["required"] = sorted({*components[name].get("required", []), "name"})
