"""The bare baseline for bench/api.py: Flask under the same gunicorn settings as ``escoba serve``.

The same client mix as escoba gets, done as barely as a real app could:

- ``GET /tables/<id>``: one Redis GET of a stored view (a real escoba view of the
  same size, put there by the bench), answered as it is;
- ``POST /tables/<id>/moves``: parses the JSON body, then one round trip (a
  pipeline): XADD the body to a stream, PUBLISH a change notice, GET the view;
  answers ``{"id", "table"}``;
- ``WS /tables/<id>/ws``: held open; one listener thread per process (Redis
  pub/sub, like escoba's hub) forwards each change notice of the table to it.

``GET /healthz`` answers ``{"ok": true}``.

    python bench/baseline_app.py --host 127.0.0.1 --port 8001 --threads 16 --workers 2

Redis comes from REDIS_URL (the benchmark passes its own server).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import queue
import sys
import threading
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flask import Flask, Response, jsonify, request  # noqa: E402
from flask_sock import Sock  # noqa: E402

from api.server.serve import Gunicorn, gunicorn_options  # noqa: E402


def view_key(table_id: str) -> str:
    return f"baseline:{{{table_id}}}:view"


class Fanout:
    """One pub/sub listener per process, forwarding notices to the sockets of each table."""

    def __init__(self, redis):
        self.redis = redis
        self.lock = threading.Lock()
        self.watchers: dict[str, set] = defaultdict(set)
        self.thread = None

    def watch(self, table_id: str) -> queue.Queue:
        q: queue.Queue = queue.Queue(maxsize=256)
        with self.lock:
            self.watchers[table_id].add(q)
            if self.thread is None:
                self.thread = threading.Thread(target=self.listen, daemon=True)
                self.thread.start()
        return q

    def unwatch(self, table_id: str, q) -> None:
        with self.lock:
            self.watchers[table_id].discard(q)

    def listen(self) -> None:
        pubsub = self.redis.pubsub(ignore_subscribe_messages=True)
        pubsub.psubscribe("baseline:*:changes")
        for message in pubsub.listen():
            if message.get("type") != "pmessage":
                continue
            table_id = message["channel"].decode().split("{", 1)[1].split("}", 1)[0]
            with self.lock:
                targets = list(self.watchers.get(table_id, ()))
            for q in targets:
                with contextlib.suppress(queue.Full):
                    q.put_nowait(message["data"])


def create_app(redis=None) -> Flask:
    if redis is None:
        from redis import Redis

        redis = Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/9"))
    app = Flask(__name__)
    fanout = Fanout(redis)

    @app.get("/tables/<table_id>")
    def view(table_id: str):
        return Response(redis.get(view_key(table_id)) or b"{}", mimetype="application/json")

    @app.post("/tables/<table_id>/moves")
    def move(table_id: str):
        body = request.get_data()
        request.get_json()  # parse it, as any real handler would
        with redis.pipeline(transaction=False) as pipe:
            pipe.xadd(f"baseline:{{{table_id}}}:moves", {"e": body})
            pipe.publish(f"baseline:{{{table_id}}}:changes", body)
            pipe.get(view_key(table_id))
            entry, _, table = pipe.execute()
        return Response(b'{"id":"%s","table":%s}' % (entry, table or b"{}"), mimetype="application/json")

    sock = Sock(app)

    @sock.route("/tables/<table_id>/ws")
    def socket(ws, table_id):
        q = fanout.watch(table_id)
        try:
            ws.send('{"type":"hello"}')
            while ws.connected:
                try:
                    data = q.get(timeout=20)
                except queue.Empty:
                    ws.send('{"type":"ping"}')
                    continue
                ws.send(data.decode())
        except Exception:  # the client went away
            pass
        finally:
            fanout.unwatch(table_id, q)

    @app.get("/healthz")
    def healthz():
        return jsonify({"ok": True})

    return app


def main(argv=None, app_factory=create_app, port: int = 8001, description: str = __doc__.splitlines()[0]) -> int:
    """Serves ``app_factory``'s app under the gunicorn settings the benches give every server (the
    socket floor, bench/socket_floor_app.py, too); ``--threads`` counts for the gthread worker only."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=port)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    Gunicorn(gunicorn_options(args.host, args.port, args.threads, args.workers), app_factory).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
