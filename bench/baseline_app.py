"""The bare baseline for bench/api.py: Flask under the same gunicorn settings as ``escoba serve``.

``POST /tables/<id>/moves`` parses the JSON body, does one XADD to a stream and
answers JSON; that is all. ``GET /healthz`` answers ``{"ok": true}``.

    python bench/baseline_app.py --host 127.0.0.1 --port 8001 --threads 16 --workers 2

Redis comes from REDIS_URL (the benchmark passes its own DB number).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flask import Flask, jsonify, request  # noqa: E402

from api.serve import Gunicorn, gunicorn_options  # noqa: E402


def create_app(redis=None) -> Flask:
    if redis is None:
        from redis import Redis

        redis = Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/9"))
    app = Flask(__name__)

    @app.post("/tables/<table_id>/moves")
    def move(table_id: str):
        body = request.get_data()
        request.get_json()  # parse it, as any real handler would
        entry = redis.xadd(f"baseline:{{{table_id}}}:moves", {"e": body})
        return jsonify({"table_id": table_id, "id": entry.decode()})

    @app.get("/healthz")
    def healthz():
        return jsonify({"ok": True})

    return app


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args(argv)
    Gunicorn(gunicorn_options(args.host, args.port, args.threads, args.workers), create_app).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
