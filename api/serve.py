"""``escoba serve``: the API under gunicorn, threaded so sockets don't starve HTTP."""

from __future__ import annotations

import gc

from gunicorn.app.base import BaseApplication

from .app import create_app
from .observability import setup_logging


class Gunicorn(BaseApplication):
    """gunicorn run from code, on an app factory (the benchmark's baseline uses it too)."""

    def __init__(self, options: dict, app_factory=None):
        self.options = options
        self.app_factory = app_factory or _escoba_app
        super().__init__()

    def load_config(self):
        for key, value in self.options.items():
            self.cfg.set(key, value)

    def load(self):
        return self.app_factory()


def _escoba_app():
    setup_logging()
    app = create_app()
    # What is built by now (modules, schemas, routes) lives as long as the worker: keep it out
    # of the collector's full passes. Under load those scanned some 60,000 objects and held
    # every request of the worker for 30 to 60 ms, a few times a minute; frozen, 3 to 9 ms.
    gc.freeze()
    return app


def gunicorn_options(host: str, port: int, threads: int, workers: int) -> dict:
    return {
        "bind": f"{host}:{port}",
        "worker_class": "gthread",
        "workers": workers,
        "threads": threads,
        # a gthread worker stops accepting at worker_connections: leave room for HTTP beside the sockets
        "worker_connections": threads + 256,
        # sockets live long: the gthread worker must not kill a busy thread
        "timeout": 120,
        "keepalive": 5,
        # sockets never finish by themselves: don't wait long for them on shutdown
        "graceful_timeout": 3,
        "accesslog": None,
    }


def serve(host: str, port: int, threads: int = 64, workers: int = 1) -> int:
    Gunicorn(gunicorn_options(host, port, threads, workers)).run()
    return 0
