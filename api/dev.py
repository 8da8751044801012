"""``escoba dev``: the API, a worker and its scheduler, bots, the page, in one process.

The store is fakeredis inside the process, one server shared by every thread,
unless ``--redis URL`` names a real one. Nothing survives a restart.
"""

from __future__ import annotations

import dataclasses
import os

from werkzeug.serving import make_server

from events.config import Config
from events.connection import connect, from_clients

from .app import create_app
from .observability import setup_logging


def embedded_redis():
    import fakeredis

    return fakeredis.FakeRedis(server=fakeredis.FakeServer())


def run_dev(host: str, port: int, redis_url: str | None = None) -> int:
    setup_logging()
    config = Config.from_env()
    if "ESCOBA_BOT_DELAY" not in os.environ:
        config = dataclasses.replace(config, bot_delay=0.8)
    if redis_url:
        config = dataclasses.replace(config, redis_url=redis_url)
        backends = connect(config)
        store = f"{'Redis Cluster' if backends.cluster else 'Redis'} at {redis_url}"
    else:
        backends = from_clients(embedded_redis())
        store = "an embedded in-memory store: NOTHING SURVIVES A RESTART"
    app = create_app(backends, config)
    from workers.runner import start_background_worker

    stop_worker = start_background_worker(backends.tables, config)
    server = make_server(host, port, app, threaded=True)
    print(f"Escoba dev server on http://{host}:{server.server_port}/  (store: {store})", flush=True)
    print("Open the URL, open a table and ADD A BOT. Ctrl-C stops.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop_worker()
        server.server_close()
    return 0
