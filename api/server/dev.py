"""``escoba dev``: the API, a worker and its scheduler, bots, the page, in one process.

The store is fakeredis inside the process, one server shared by every thread,
unless ``--redis-url URL`` names a real one. Nothing survives a restart.

Web Push needs a VAPID key pair: unless ``ESCOBA_VAPID_PRIVATE_KEY`` is set, the
first run makes one and keeps it in the user's data directory (``--vapid-key-file``),
so that browsers subscribed on one run are still reached on the next.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from events.config import Config

# The app, the store's clients and werkzeug are imported in run_dev, not here: ``escoba serve``'s
# parser reads default_vapid_file from this module, and its master process must import nothing
# that opens sockets or makes locks before gevent patches the standard library in the workers.


def embedded_redis():
    import fakeredis

    return fakeredis.FakeRedis(server=fakeredis.FakeServer())


def default_vapid_file() -> Path:
    """``$XDG_DATA_HOME/escoba/vapid-private-key`` (``~/.local/share/...`` by default)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "escoba" / "vapid-private-key"


def vapid_key(path: Path | str | None = None) -> tuple[str, Path, bool]:
    """The private key kept at ``path`` (made and written there, owner-only, when missing):
    ``(key, path, made)``. A file that holds no valid key is an error, never overwritten."""
    from workers.push import generate_private_key, public_key

    path = Path(path) if path else default_vapid_file()
    if path.exists():
        key = path.read_text().strip()
        try:
            public_key(key)
        except ValueError as exc:
            raise SystemExit(f"escoba dev: {path} holds no VAPID private key ({exc}); "
                             "move it away or pass --vapid-key-file") from None
        return key, path, False
    key = generate_private_key()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(key + "\n")
    return key, path, True


def request_handler():
    """werkzeug's request handler, saying in one ``Connection`` header that it closes the connection.

    werkzeug's development server closes every connection after its answer and says so with a
    ``Connection: close`` of its own, after the app's headers. An answer that carries a ``Connection``
    header already (the socket route's 426 names ``upgrade``, as RFC 9110 asks) went out with two, and a
    client reading the first kept the connection: its next request was swallowed by the server's drain
    of the closing connection, and never answered (issue 54). One header, ``upgrade, close``, is both."""
    from werkzeug.serving import WSGIRequestHandler

    class OneConnectionHeader(WSGIRequestHandler):
        def send_response(self, code, message=None):
            self._connection_said = False
            super().send_response(code, message)

        def send_header(self, keyword, value):
            if keyword.lower() == "connection":
                if getattr(self, "_connection_said", False):
                    return
                self._connection_said = True
                if "close" not in value.lower():
                    value = f"{value}, close"
            super().send_header(keyword, value)

    return OneConnectionHeader


def run_dev(host: str, port: int, redis_url: str | None = None, *,
            vapid_key_file: str | None = None) -> int:
    from werkzeug.serving import make_server

    from api.app import create_app
    from api.server.observability import setup_logging
    from events import patches
    from events.connection import connect, from_clients

    patches.apply_all()
    setup_logging()
    config = Config.from_env()
    if "ESCOBA_BOT_DELAY" not in os.environ:
        config = dataclasses.replace(config, bot_delay=0.8)
    if config.vapid_private_key:
        push = "Web Push key from ESCOBA_VAPID_PRIVATE_KEY"
    else:
        key, path, made = vapid_key(vapid_key_file)
        config = dataclasses.replace(config, vapid_private_key=key)
        push = f"Web Push key {'made and kept in' if made else 'from'} {path}"
    if redis_url:
        config = dataclasses.replace(config, redis_url=redis_url)
        backends = connect(config)
        store = f"{'Redis Cluster' if backends.cluster else 'Redis'} at {redis_url}"
    else:
        backends = from_clients(embedded_redis())
        store = "an embedded in-memory store: NOTHING SURVIVES A RESTART"
    app = create_app(backends, config)
    from workers.runner import start_background_worker

    stop_worker = start_background_worker(backends.tables, config, queue=backends.queues)
    server = make_server(host, port, app, threaded=True, request_handler=request_handler())
    print(f"Escoba dev server on http://{host}:{server.server_port}/  (store: {store})", flush=True)
    print(f"Turn notices: {push}", flush=True)
    print("Open the URL, open a table and ADD A BOT. Ctrl-C stops.", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop_worker()
        server.server_close()
    return 0
