"""Every change this server makes to a third-party library's internals, named, pinned and switchable.

A *patch* here is code of ours that replaces a library's attribute (of a module, a class or an
object it made) or goes around its public API into its private parts. Each is a ``Patch``: the
libraries and the versions it was written against (constraints.txt's), what it changes and why,
and where its code is. ``apply_all()``, called as a process starts (``escoba serve``, ``escoba
dev``, ``escoba worker``), first compares those versions with the installed ones and stops with
an error naming the package and both versions if one differs: an upgrade must not change a hot
path silently. It reads what the patch's code touches, and a moved pin says someone did.

Two kinds:

- ``SPEED``: the library's own way is correct, ours is cheaper (docs/benchmarks.md). With
  ``ESCOBA_STOCK=1`` none is applied and each patched path takes the library's public way; none of
  their versions is then checked, so a server whose upgrade broke one still starts, stock.
  ``python bench/games.py --patches both`` measures what they are worth.
- ``FIX``: without it the server would not keep docs/api.md's contract (gunicorn's own refusals
  are HTML) or would misbehave (a failover's resubscription refused). Applied either way, and
  always checked.

Where the patched code lives: in the layer that uses it (api/server/wire.py, api/sockets/,
events/direct.py, workers/jobloop.py...), each place asking its unit's ``on``. This module sits in
events/ because events/ is the lowest layer a patch is in (``REDIS_DIRECT``) and every layer that
patches may import it; it imports no module of ours but events/config.py (which reads the
environment) and events/locks.py, and a library only inside an ``apply``.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass, field

from .config import stock_libraries

SPEED = "speed"
FIX = "fix"


class PatchVersionError(RuntimeError):
    """An installed library is not the version a patch of it was written against."""

    def __init__(self, patch: Patch, package: str, pinned: str, installed: str | None):
        what = "not installed" if installed is None else f"{installed} is installed"
        advice = ("check the patch against the new version's code and move its pin in events/patches.py"
                  + (", or run the stock libraries with ESCOBA_STOCK=1" if patch.kind == SPEED else ""))
        super().__init__(f"{package}: {what}, but the patch {patch.name!r} ({patch.where}) was written "
                         f"against {package} {pinned}: {advice}")
        self.package, self.pinned, self.installed = package, pinned, installed


@dataclass(eq=False)
class Patch:
    name: str
    kind: str  # SPEED or FIX
    versions: dict[str, str]  # distribution name (as pip knows it) -> the version it was written against
    changes: str  # what it replaces or reaches into
    why: str
    where: str  # the module(s) holding its code
    install: Callable[[], None] | None = None  # done once by ``apply`` (else its code asks ``on``)
    applied: bool = field(default=False, init=False)

    @property
    def on(self) -> bool:
        """Whether this process takes the patched way (``ESCOBA_STOCK=1``: only a FIX does)."""
        return self.kind == FIX or not _stock[0]

    def check(self) -> None:
        """Raises ``PatchVersionError`` unless every library it patches is the pinned version."""
        for package, pinned in self.versions.items():
            try:
                installed: str | None = importlib.metadata.version(package)
            except importlib.metadata.PackageNotFoundError:
                installed = None
            if installed != pinned:
                raise PatchVersionError(self, package, pinned, installed)

    def apply(self) -> None:
        """Checked, then installed where it is installed once; a no-op when not ``on``."""
        if not self.on or self.applied:
            return
        self.check()
        if self.install is not None:
            self.install()
        self.applied = True


def _prometheus_value_locks() -> None:
    from prometheus_client import values

    from .locks import short_lock

    values.Lock = short_lock  # type: ignore[assignment,attr-defined]  # a factory of C locks where it has the class


GUNICORN_WIRE = Patch(
    "gunicorn-wire", SPEED, {"gunicorn": "27.0.1"},
    "wsgi.Response (OneWriteResponse: the head and body in one send), util.http_date (formatted once a "
    "second), wsgi.base_environ (copied from one made once), wsgi.os (SCRIPT_NAME read once), "
    "HeaderPolicy._peer_is_trusted_proxy (answered once per address)",
    "each showed in the worker's profile a request: two system calls and two TCP segments an answer, "
    "a date formatted, an environ and a wsgi.errors wrapper built, an address parsed",
    "api/server/wire.py (install)")
GUNICORN_REFUSALS = Patch(
    "gunicorn-refusals", FIX, {"gunicorn": "27.0.1"},
    "util.write_error (json_error), wsgi.Response (ClosingResponse: close, not drain, after a 413 or an "
    "unbounded body)",
    "docs/api.md: every error in the contract's JSON, 414 and 431 included (gunicorn's own are HTML); "
    "draining a huge refused body held a worker for seconds",
    "api/server/wire.py (install)")
WEBSOCKET_READS = Patch(
    "websocket-reads", SPEED, {"simple-websocket": "1.1.0", "wsproto": "1.3.2", "gevent": "26.9.0"},
    "simple-websocket's reader thread (thread_class HandlerReads: the handler reads, calling the "
    "connection's _handle_events, pong_received, receive_bytes) and wsproto's frame parser "
    "(ws.ws = QuickFrames, for plain masked text frames)",
    "under gevent a client frame cost two greenlet switches, a watcher and a Timeout a wait, and "
    "wsproto's generators more than the read itself",
    "api/sockets/reader.py, api/sockets/client_frames.py, api/sockets/route.py (server_options)")
WEBSOCKET_BOUNDS = Patch(
    "websocket-bounds", FIX, {"simple-websocket": "1.1.0"},
    "a table socket's ws.input_buffer (Inbox, bounded) and ws.sock (_LingeringSocket, on every socket)",
    "docs/api.md: a client's frames wait in a bounded inbox (a flood closes with 1008), and a close "
    "frame (1009) reaches the client instead of a reset",
    "api/sockets/route.py, api/sockets/seeks.py")
REDIS_CONNECTION = Patch(
    "redis-connection", SPEED, {"redis": "8.2.0", "hiredis": "3.5.0"},
    "redis.Connection.can_read (events.connection.Connection, every plain TCP client's connection "
    "class: the OS's poll where hiredis holds nothing), reading the parser's _reader",
    "the pool's check on every checkout was gevent's cooperative poll, a trip through its loop",
    "events/connection.py")
REDIS_DIRECT = Patch(
    "redis-direct", SPEED, {"redis": "8.2.0", "hiredis": "3.5.0", "gevent": "26.9.0"},
    "the append's EVALSHA and the log's XRANGE sent on connections of our own (the connection's _sock, "
    "hiredis's pack_command, gevent's socket _read_event and _wait)",
    "redis-py's per-command wrappers cost a move about as much as sending and reading it",
    "events/direct.py (Direct.for_client)")
PUBSUB_READS = Patch(
    "pubsub-reads", SPEED, {"redis": "8.2.0", "hiredis": "3.5.0"},
    "change notices read from the pub/sub connection's socket into its parser's hiredis reader "
    "(connection._parser._reader, ._buffer, connection._sock)",
    "redis-py's read_response around each notice cost more than its dispatch",
    "api/sockets/notices.py (ChannelListener._read_notices)")
REDIS_CLUSTER_PAUSE = Patch(
    "redis-cluster-pause", FIX, {"redis": "8.2.0"},
    "RedisCluster._execute_command (PausingCluster) and nodes_manager._request_refresh",
    "a dead master's every command waited out a timeout until the failover (docs/operations.md)",
    "events/connection.py (PausingCluster)")
REDIS_CLUSTER_RESUBSCRIBE = Patch(
    "redis-cluster-resubscribe", FIX, {"redis": "8.2.0"},
    "a node's PubSub._resubscribe_shard_channels, ClusterPubSub's bound to it",
    "a reconnect's one SSUBSCRIBE over channels of several slots is refused with CROSSSLOT",
    "api/sockets/notices.py (NodeListener)")
PROMETHEUS_LOCKS = Patch(
    "prometheus-locks", SPEED, {"prometheus-client": "0.26.0"},
    "prometheus_client.values.Lock (the C lock, events/locks.py short_lock)",
    "each value's += takes gevent's Python lock under the gevent worker, some 8 acquires a move",
    "events/patches.py (install)", install=_prometheus_value_locks)
PROMETHEUS_PARENT_LOCKS = Patch(
    "prometheus-parent-locks", FIX, {"prometheus-client": "0.26.0"},
    "the _lock of the API's labelled metrics (the C lock)",
    "labels() runs in the log writer's OS thread too (BatchedLines.settle), and gevent's lock is not "
    "for two OS threads",
    "api/server/observability.py (Metrics)")
RQ_LEAN = Patch(
    "rq-lean", SPEED, {"rq": "3.0.0"},
    "SimpleWorker's heartbeat, set_state, check_for_suspension and execute_job (the job's start and end "
    "written by us: Execution, started_job_registry, _finalize_failure, _finalize_success)",
    "RQ spent some 64 queue commands a job; a job with no result takes 7",
    "workers/jobloop.py (_Lean)")
RQ_SURVIVES = Patch(
    "rq-survives", FIX, {"rq": "3.0.0"},
    "Worker.subscribe (a 1 s listener wait), max_connection_wait_time, and the loop's steps wrapped to note "
    "the error it quit on",
    "RQ's loop quits for good when its Redis goes, and its listener's 60 s wait hung every teardown",
    "workers/jobloop.py (_Survives)")

PATCHES: tuple[Patch, ...] = (
    GUNICORN_WIRE, GUNICORN_REFUSALS, WEBSOCKET_READS, WEBSOCKET_BOUNDS, REDIS_CONNECTION, REDIS_DIRECT,
    PUBSUB_READS, REDIS_CLUSTER_PAUSE, REDIS_CLUSTER_RESUBSCRIBE, PROMETHEUS_LOCKS, PROMETHEUS_PARENT_LOCKS,
    RQ_LEAN, RQ_SURVIVES)

_stock = [stock_libraries()]  # ESCOBA_STOCK, as the process started (set_stock for a test or a bench)


def stock() -> bool:
    """Whether this process runs the stock libraries (``ESCOBA_STOCK=1``): no SPEED patch."""
    return _stock[0]


def set_stock(value: bool) -> None:
    """For a test or a bench that runs both ways in one process: what is decided from now on (a
    connection class, a socket's reader) follows it; what was installed once stays."""
    _stock[0] = value


def check_all() -> list[Patch]:
    """Every patch that is ``on``, checked against the installed versions (``PatchVersionError`` for
    the first that differs); returns them."""
    chosen = [p for p in PATCHES if p.on]
    for patch in chosen:
        patch.check()
    return chosen


def apply_all() -> list[Patch]:
    """At a process's start: ``check_all``, then each applied (nothing is applied when one differs).
    Returns those applied; the rest of each patch's code asks its ``on`` where it runs."""
    chosen = check_all()
    for patch in chosen:
        patch.apply()
    return chosen


__all__ = ["FIX", "PATCHES", "SPEED", "Patch", "PatchVersionError", "apply_all", "check_all", "set_stock", "stock"]
