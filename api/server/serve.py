"""``escoba serve``: the API under gunicorn's gevent worker, so a held socket costs a greenlet, not a thread.

Why gevent: every WebSocket lives as long as its reader keeps the page open, and
most of the time it waits. gunicorn's gthread worker gave each one a thread, so
64 silent upgrades were enough to take every thread of a worker and leave
``/healthz`` unanswered. Under gevent's worker (gunicorn + flask-sock +
simple-websocket, all documented to run monkey-patched) a socket is two
greenlets and a few KiB, one process holds 10,000 of them, and a request never
waits for a thread. The rest of the code is ordinary blocking code (redis-py,
threading, queue): the worker's ``monkey.patch_all()`` makes it cooperative, so
the fan-out's listener and the log writer become greenlets too (the writer's one
write a tenth of a second goes to stderr, which docker or a terminal drains).

Monkey-patching order: the gevent worker patches in its own ``init_process``,
after the fork and before it loads the app. Nothing that opens sockets or
creates locks is imported by the master before that: this module imports the
app only inside the worker's factory (``_escoba_app``).

``--worker-class gthread`` keeps the old threaded worker for comparisons (and
``--threads`` applies to it only).
"""

from __future__ import annotations

import gc
import logging
import os
import resource
import sys
import time

from gunicorn.app.base import BaseApplication

WORKER_CLASSES = ("gevent", "gthread")
# gevent: the most connections (sockets and HTTP) one worker accepts at once
DEFAULT_CONNECTIONS = 20_000
# new container objects (net of those freed) between two young collections, not CPython's 700. A young
# pass walks every container made since the last one that is still alive: the current state and views of
# every table that moved since, a few hundred objects a table, so its length grows with the tables in
# play (some 18,000 objects, 6 to 10 ms of CPU, with a hundred; docs/benchmarks.md "The opponent's
# latency"), not with the threshold, and every socket of the worker waits for it. Those states die by
# reference counting when their table moves on, and the move's path makes no garbage cycle (the passes
# under bench/latency.py found none), so a pass mostly finds nothing. At 700 the worker collected every
# forty moves (the passes and the caches they emptied cost a move more CPU), at 7,000 about once a second
# at five hundred moves a second, a pause in the way of one move in a hundred: the opponent's p99. At
# 100,000 a pause comes some fourteen times more rarely, as long, and the garbage cycles that do come (a
# refused move's traceback, a request's) wait that much longer: a few megabytes at most.
YOUNG_COLLECTION = 100_000


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
        from api.server import wire
        from events import patches

        patches.apply_all()  # in the worker, after gevent's patching: prometheus's locks are made here
        wire.install()
        return self.app_factory()


def _escoba_app():
    # imported here, in the worker, after gevent has patched the standard library
    from api.app import create_app
    from api.server.observability import setup_logging
    from events import stages

    setup_logging()
    _say_patches()
    app = create_app()
    # What is built by now (modules, schemas, routes) lives as long as the worker: keep it out
    # of the collector's full passes, which otherwise scan all of it again and hold every request
    # of the worker while they do (docs/benchmarks.md).
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION)  # the older generations' thresholds stay CPython's
    gc.callbacks.append(_log_slow_collections)
    stages.start()  # bench/latency.py's timers, when ESCOBA_STAGE_TIMES asks for them
    return app


def keep_off(cores: frozenset[int]) -> frozenset[int] | None:
    """This process, and every worker it forks after, off ``cores`` (the host's Redis's, ``ESCOBA_REDIS_CPUS``)
    while the host leaves it others. On a host whose kernel runs a woken task on its waker's core, Redis's reply
    pulled the worker onto Redis's own core, where the two queued for it while the other core idled: at a
    quarter load the opponent's p50 1.38, 1.24, 1.53 ms with the worker kept off against 1.99, 1.54, 1.80 ms
    without (docs/benchmarks.md, "The API off Redis's core"). The cores it runs on now, or None: nothing
    changed (none of ``cores`` is this process's, as on a host without them, or none would be left)."""
    allowed = os.sched_getaffinity(0)
    rest = allowed - cores
    if not allowed & cores or not rest:
        return None
    os.sched_setaffinity(0, rest)
    return frozenset(rest)


def _say_patches() -> None:
    from events import patches

    applied = [p.name for p in patches.PATCHES if p.applied]
    logging.getLogger("escoba.patches").info(
        "third-party libraries %s", "stock (ESCOBA_STOCK=1): no speed patch" if patches.stock() else "patched",
        extra={"fields": {"applied": applied}})


_gc_started: list[float] = []


def _log_slow_collections(phase: str, info: dict) -> None:
    """A collection holds every socket and request of the worker: say when one took long."""
    if phase == "start":
        _gc_started[:] = [time.perf_counter()]
    elif _gc_started:
        took = time.perf_counter() - _gc_started[0]
        if took > 0.05:
            logging.getLogger("escoba.gc").warning(
                "garbage collection held the worker", extra={"fields": {
                    "generation": info.get("generation"), "ms": round(took * 1000, 1),
                    "collected": info.get("collected")}})


def raise_fd_limit() -> int:
    """Lift this process's soft limit on open files to its hard limit: a socket is a file.

    Returns the soft limit now in force.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def _post_fork(server, worker):
    raise_fd_limit()


def gunicorn_options(host: str, port: int, threads: int, workers: int, *,
                     worker_class: str = "gevent", connections: int = DEFAULT_CONNECTIONS) -> dict:
    if worker_class not in WORKER_CLASSES:
        raise ValueError(f"worker_class must be one of {WORKER_CLASSES}")
    options = {
        "bind": f"{host}:{port}",
        "worker_class": worker_class,
        "workers": workers,
        # sockets never finish by themselves: don't wait long for them on shutdown
        "graceful_timeout": 3,
        "keepalive": 5,
        "accesslog": None,
        "post_fork": _post_fork,
    }
    if worker_class == "gevent":
        # the worker's greenlet pool: every open socket and HTTP connection holds one
        options["worker_connections"] = connections
        # a gevent worker that blocks its loop this long is stuck: let the master replace it
        options["timeout"] = 30
    else:
        options["threads"] = threads
        # a gthread worker stops accepting at worker_connections: leave room for HTTP beside the sockets
        options["worker_connections"] = threads + 256
        # sockets live long: the gthread worker must not kill a busy thread
        options["timeout"] = 120
    return options


def serve(host: str, port: int, threads: int = 64, workers: int = 1, *,
          worker_class: str = "gevent", connections: int = DEFAULT_CONNECTIONS) -> int:
    from events import patches
    from events.config import Config

    try:  # a bad setting stops the command here, said once, not in every worker that boots and dies
        config = Config.from_env()
    except ValueError as exc:
        raise SystemExit(f"escoba serve: {exc}") from None
    kept = keep_off(config.redis_cpus)  # before any worker forks: they inherit it
    if kept is not None:
        print(f"escoba serve: on cores {','.join(map(str, sorted(kept)))}, off Redis's "
              f"(ESCOBA_REDIS_CPUS={','.join(map(str, sorted(config.redis_cpus)))})", file=sys.stderr, flush=True)
    patches.check_all()  # before any worker forks: a library not the version its patch was written for stops here
    raise_fd_limit()
    Gunicorn(gunicorn_options(host, port, threads, workers, worker_class=worker_class,
                              connections=connections)).run()
    return 0
