"""The floor for bench/games.py's socket moves: this stack moving a move's bytes, and nothing else.

What any server on escoba's stack pays for a socket move before its own work: the same
gunicorn gevent worker, Flask, flask-sock and simple-websocket with escoba's socket
settings and its I/O pieces (the handler reading its own frames, api/sockets/reader.py
and client_frames.py; a frame written in one send, api/server/wire.py; the append's
command sent straight on a connection, events/direct.py), the same durable Redis, and
frames of the size escoba sends (a view, or a patch of one: bench/games.py's ``--frames``).
Per move, what escoba does less everything that is its own:

- the client's frame read off the socket and parsed (JSON);
- one round trip to Redis: a script that counts the table's version and appends the move
  to the table's stream (two writes, one fsync under ``appendfsync always``);
- the mover's ``ack`` and a ``table`` frame in one write; the opponent's socket woken
  (a greenlet of its own, as in escoba) and sent its ``table`` frame.

Not done: rules, a view built (each seat's frame is a stored escoba view, or patch, of the same
game, sent with the new version), a token's check per move, the rate limit, the idempotency key,
a log line, metrics, timers, snapshots. So escoba's CPU per move less this floor's is what
escoba's own work costs, and this floor against the peer's is what the stack leaves the
app of a ratio target (docs/benchmarks.md).

Redis holds, per table, put there by the bench: ``floor:{id}:version`` (the version before
the first move), ``floor:{id}:tokens`` (token -> seat) and ``floor:{id}:view:{seat}`` (a view or a patch: its bytes).

    python bench/socket_floor_app.py --host 127.0.0.1 --port 8002 --workers 1
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from api.server.serve import YOUNG_COLLECTION  # noqa: E402
from events.config import Config  # noqa: E402

# KEYS: [1] the table's stream, [2] its version. ARGV: [1] the move. The new version.
STEP = """
local version = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], version .. '-0', 'e', ARGV[1])
return version
"""


def key(table_id: str, name: str) -> str:
    return f"floor:{{{table_id}}}:{name}"


def create_app(redis=None):
    # imported in the worker, after gevent has patched the standard library
    import orjson
    from flask import Flask, jsonify, request
    from flask_sock import Sock

    from api.server import wire
    from api.sockets import frames, reader, route
    from api.sockets.client_frames import QuickFrames
    from api.sockets.moves import Inbox
    from events.connection import plain_client
    from events.direct import Direct

    if redis is None:
        redis = plain_client(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/9"))
    direct = Direct.for_client(redis)  # a plain TCP Redis, as the bench's: else the client's own way
    execute = direct.execute if direct is not None else redis.execute_command
    step = redis.script_load(STEP)
    tables: dict[str, dict[int, SimpleNamespace]] = {}  # this process's sockets, by table and seat

    app = Flask(__name__)
    app.config["SOCK_SERVER_OPTIONS"] = route.server_options(SimpleNamespace(
        socket_ping_interval=Config.socket_ping_interval))
    sock = Sock(app)

    def table_frame(version: int, view: bytes) -> bytes:
        return frames.text_frame(b'{"type":"table","version":%d,"table":%s}' % (version, view))

    @sock.route("/tables/<table_id>/ws")
    def table_socket(ws, table_id):
        ws.input_buffer = Inbox()
        ws.sock.settimeout(route.SEND_TIMEOUT)
        reads = ws.thread if isinstance(ws.thread, reader.HandlerReads) else None
        if reads is not None:
            ws.ws = QuickFrames(ws.ws)
        seat = int(redis.hget(key(table_id, "tokens"), request.args["token"]))
        views = {s: redis.get(key(table_id, f"view:{s}")) for s in (0, 1)}
        me = SimpleNamespace(event=ws.event, out=[])
        tables.setdefault(table_id, {})[seat] = me
        try:
            wire.send_whole(ws.sock, table_frame(int(redis.get(key(table_id, "version"))), views[seat]))
            while ws.connected:
                ws.event.wait()
                ws.event.clear()
                if reads is not None:
                    reads.pump()
                out = b""
                for raw in ws.input_buffer.take():
                    frame = orjson.loads(raw)
                    if frame.get("type") != "move" or type(frame.get("id")) is not str:
                        continue
                    version = execute("EVALSHA", step, 2, key(table_id, "log"), key(table_id, "version"),
                                             orjson.dumps(frame["move"]))
                    out += frames.text_frame(b'{"type":"ack","id":%s,"version":%d}' % (orjson.dumps(frame["id"]),
                                                                                       version))
                    out += table_frame(version, views[seat])
                    other = tables[table_id].get(1 - seat)
                    if other is not None:
                        other.out.append(table_frame(version, views[1 - seat]))
                        other.event.set()
                while me.out:
                    out += me.out.pop(0)
                if out:
                    wire.send_whole(ws.sock, out)
        except OSError:  # ConnectionError's family too
            pass
        finally:
            tables[table_id].pop(seat, None)
            if reads is not None:
                reads.join(route.LINGER + 1.0)

    @app.get("/healthz")
    def healthz():
        return jsonify({"ok": True})

    gc.freeze()  # the collector as escoba's worker sets it (api/server/serve.py)
    gc.set_threshold(YOUNG_COLLECTION)
    return app


def main(argv=None) -> int:
    from bench import baseline_app

    return baseline_app.main(argv, create_app, 8002, __doc__.splitlines()[0])


if __name__ == "__main__":
    raise SystemExit(main())
