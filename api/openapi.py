"""/openapi.json, generated from the same marshmallow schemas that check requests."""

from __future__ import annotations

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin

from . import schemas

_ERROR = {"description": "an error: {\"error\": {\"code\", \"message\", \"details\"}}"}


def build_spec() -> dict:
    spec = APISpec(title="Escoba table server", version="1.0.0", openapi_version="3.0.3",
                   plugins=[MarshmallowPlugin()])
    for name, schema in (("CreateTable", schemas.CreateTable), ("TakeSeat", schemas.TakeSeat),
                         ("Chat", schemas.Chat), ("Notify", schemas.Notify),
                         ("PushSubscription", schemas.PushSubscription), ("PushEndpoint", schemas.PushEndpoint)):
        spec.components.schema(name, schema=schema)
    move_refs = []
    for kind, schema in schemas.MOVES.items():
        name = "Move_" + kind
        spec.components.schema(name, schema=schema)
        move_refs.append({"$ref": f"#/components/schemas/{name}"})
    spec.components.security_scheme("seat", {"type": "http", "scheme": "bearer"})

    def body(ref):
        return {"required": True, "content": {"application/json": {"schema": ref}}}

    def ok(desc):
        return {"description": desc, "content": {"application/json": {"schema": {"type": "object"}}}}

    errors = {str(s): _ERROR for s in (400, 401, 403, 404, 409, 422)}
    tid = [{"name": "table_id", "in": "path", "required": True, "schema": {"type": "string"}}]
    spec.path("/tables", operations={"post": {"summary": "Open a table; the host holds seat 0",
                                              "requestBody": body("CreateTable"),
                                              "responses": {"201": ok("table_id, invite_url, seat, token, table"),
                                                            **errors}}})
    spec.path("/tables/{table_id}", parameters=tid, operations={
        "get": {"summary": "The table as the caller may see it", "responses": {"200": ok("view"), **errors}}})
    spec.path("/tables/{table_id}/seats", parameters=tid, operations={
        "post": {"summary": "Take a free seat", "requestBody": body("TakeSeat"),
                 "responses": {"201": ok("seat, token, table"), **errors}}})
    spec.path("/tables/{table_id}/moves", parameters=tid, operations={
        "post": {"summary": "Make a move", "security": [{"seat": []}],
                 "parameters": [{"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"}}],
                 "requestBody": {"required": True, "content": {"application/json": {"schema": {"oneOf": move_refs}}}},
                 "responses": {"200": ok("version, table"), **errors}}})
    spec.path("/tables/{table_id}/events", parameters=tid, operations={
        "get": {"summary": "Events after a version, redacted for the caller",
                "parameters": [{"name": "after", "in": "query", "schema": {"type": "integer"}}],
                "responses": {"200": ok("events"), **errors}}})
    spec.path("/tables/{table_id}/chat", parameters=tid, operations={
        "get": {"summary": "Chat lines", "responses": {"200": ok("lines"), **errors}},
        "post": {"summary": "Post a chat line (seated players)", "security": [{"seat": []}],
                 "requestBody": body("Chat"), "responses": {"201": ok("line"), **errors}}})
    spec.path("/tables/{table_id}/notify", parameters=tid, operations={
        "post": {"summary": "Register a URL for turn notices", "security": [{"seat": []}],
                 "requestBody": body("Notify"), "responses": {"201": ok("seat, url"), **errors}}})
    spec.path("/tables/{table_id}/push", parameters=tid, operations={
        "post": {"summary": "Keep a browser's Web Push subscription for turn notices (seated players)",
                 "security": [{"seat": []}], "requestBody": body("PushSubscription"),
                 "responses": {"201": ok("seat, endpoint"), **errors}},
        "delete": {"summary": "Forget a browser's Web Push subscription", "security": [{"seat": []}],
                   "requestBody": body("PushEndpoint"), "responses": {"200": ok("endpoint, removed"), **errors}}})
    spec.path("/push/key", operations={
        "get": {"summary": "The VAPID public key (applicationServerKey); 404 when push is off",
                "responses": {"200": ok("public_key"), "404": _ERROR}}})
    spec.path("/tables/{table_id}/review", parameters=tid, operations={
        "get": {"summary": "The steps of a game for its review: a seat token once the game is over, or the "
                           "admin token (Authorization header only)", "security": [{"seat": []}],
                "responses": {"200": ok("table_id, name, last, operator, steps"), **errors}}})
    spec.path("/tables/{table_id}/review/{version}", parameters=tid + [
        {"name": "version", "in": "path", "required": True, "schema": {"type": "integer"}}], operations={
        "get": {"summary": "The event at a version and the full view after it (every hand)",
                "security": [{"seat": []}],
                "responses": {"200": ok("table_id, version, last, operator, record, table"), **errors}}})
    spec.path("/tables/{table_id}/ws", parameters=tid, operations={
        "get": {"summary": "WebSocket: table, your_turn, chat and ping messages",
                "responses": {"101": {"description": "switching protocols"}}}})
    spec.path("/admin/tables/{table_id}/log", parameters=tid, operations={
        "get": {"summary": "The full event log as JSON lines (admin token)", "responses": {"200": ok("log")}}})
    spec.path("/healthz", operations={"get": {"summary": "Redis reachable", "responses": {"200": ok("ok")}}})
    return spec.to_dict()
