"""Shared fixtures: an in-memory Redis (fakeredis with Lua) and a real Redis of the suite's own.

``redis_server`` is a ``redis-server`` this suite starts on a free port for the
whole session (``tests/redis_servers.py``) and stops at the end; the suite never
connects to a Redis it did not start, so it may flush its own databases. Tests
that need it are skipped, saying why, only when the ``redis-server`` binary is
missing.

``topology`` runs a test on both deployments (parametrized, not copied): ``plain``
(one Redis holds the tables and RQ's queue: ``redis_server``) and ``cluster`` (a
3-master Redis Cluster of the suite's own for the tables, ``redis_cluster``, and a
plain ``queue_server`` for RQ). ``backends`` gives a test its ``Backends`` on it.
"""

from __future__ import annotations

import os
import signal

import fakeredis
import pytest

from . import redis_servers
from .redis_servers import RedisClusterServers, RedisServer, redis_binary, redis_cli, start_cluster, start_plain

# Nothing listens on port 1. A test that builds an app or a worker from the environment without naming
# one of the suite's servers is refused here on every machine, not only on one without a Redis on 6379.
NOWHERE = "redis://127.0.0.1:1/0"


def pytest_configure(config):
    os.environ["REDIS_URL"] = NOWHERE
    os.environ.pop("ESCOBA_QUEUE_URL", None)


@pytest.fixture
def fake_redis():
    """A fresh, isolated fakeredis (Lua scripts supported through lupa)."""
    server = fakeredis.FakeServer()
    client = fakeredis.FakeRedis(server=server)
    yield client
    client.close()


@pytest.fixture
def redis_server_binary():
    """Path of the ``redis-server`` binary, or skip when it is not installed."""
    path = redis_binary()
    if path is None:
        pytest.skip("redis-server binary not installed (needed to start a private Redis)")
    return path


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory) -> RedisServer:
    """The suite's own plain Redis, one for the session (AOF with appendfsync always, as in production)."""
    if redis_binary() is None:
        pytest.skip("redis-server binary not installed (needed to start a private Redis)")
    server = start_plain(tmp_path_factory.mktemp("redis"), durable=True)
    yield server
    server.stop()


@pytest.fixture
def real_redis(redis_server):
    """A client of the suite's own Redis (db 0); tests use fresh random table ids."""
    client = redis_server.client()
    yield client
    client.close()


def _need_binaries(cluster: bool = False) -> None:
    if redis_binary() is None:
        pytest.skip("redis-server binary not installed (needed to start a private Redis)")
    if cluster and redis_cli() is None:
        pytest.skip("redis-cli not installed (needed to create the private Redis Cluster)")


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory) -> RedisClusterServers:
    """The suite's own 3-master Redis Cluster (no replicas, volatile), one for the session."""
    _need_binaries(cluster=True)
    cluster = start_cluster(tmp_path_factory.mktemp("cluster"), 3)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def queue_server(tmp_path_factory) -> RedisServer:
    """The plain Redis beside the cluster for RQ's queues (ESCOBA_QUEUE_URL)."""
    _need_binaries()
    server = start_plain(tmp_path_factory.mktemp("queue"))
    yield server
    server.stop()


@pytest.fixture
def replicated(tmp_path) -> RedisClusterServers:
    """3 masters with a replica each, AOF fsynced per write: one per test (a test breaks it)."""
    _need_binaries(cluster=True)
    cluster = start_cluster(tmp_path, 3, durable=True, replicas=1)
    yield cluster
    cluster.stop()


class Topology:
    """One deployment the suite started: its settings, and clients on it."""

    def __init__(self, name: str, tables_url: str, queue_url: str, cluster: RedisClusterServers | None,
                 servers: list[RedisServer]):
        self.name = name
        self.tables_url = tables_url
        self.queue_url = queue_url
        self.cluster = cluster
        self.servers = servers  # every server of this topology (all started by the suite)

    @property
    def is_cluster(self) -> bool:
        return self.cluster is not None

    @property
    def env(self) -> dict[str, str]:
        """The settings a subprocess (``escoba serve``, a worker) gets on this topology."""
        return {"REDIS_URL": self.tables_url, "ESCOBA_QUEUE_URL": self.queue_url}

    def config(self, **changes):
        import dataclasses

        from events.config import Config

        return dataclasses.replace(Config(redis_url=self.tables_url, queue_url=self.queue_url), **changes)

    def backends(self):
        from events.connection import connect

        return connect(self.config(), wait=5)

    def flush(self) -> None:
        """FLUSHALL on this topology's servers: all of them the suite's own."""
        if self.cluster is not None:
            self.cluster.flush()
        for server in self.servers:
            with server.client() as c:
                c.flushall()

    def __repr__(self) -> str:
        return f"Topology({self.name})"


TOPOLOGIES = ["plain", "cluster"]


def make_topology(request, name: str) -> Topology:
    """``name``'s Topology on the session's servers (any fixture scope may call it)."""
    if name == "plain":
        server = request.getfixturevalue("redis_server")
        return Topology("plain", server.url, server.url, None, [server])
    cluster = request.getfixturevalue("redis_cluster")
    queue = request.getfixturevalue("queue_server")
    return Topology("cluster", cluster.url, queue.url, cluster, [queue])


@pytest.fixture(params=TOPOLOGIES)
def topology(request) -> Topology:
    """The same test on one Redis and on a 3-master cluster beside a queue Redis."""
    return make_topology(request, request.param)


@pytest.fixture
def backends(topology):
    """``Backends`` on ``topology`` (found by ``events.connection.connect``, as the server does)."""
    b = topology.backends()
    assert b.cluster == topology.is_cluster
    yield b
    b.close()


@pytest.fixture
def stores(topology):
    """``Backends`` on ``topology``, emptied before and after the test (tests that share one server's
    keyspace: workers, pairing)."""
    topology.flush()
    b = topology.backends()
    yield b
    b.close()
    topology.flush()


@pytest.fixture
def tables(backends):
    """The tables' client on ``topology``: a plain Redis, or a RedisCluster."""
    return backends.tables


@pytest.fixture(autouse=True)
def _signals_as_they_were():
    """A test that runs an RQ worker or the job runner in this process leaves their SIGTERM and
    SIGINT handlers (they only ask a loop to stop): put the process's own back after each test,
    so a process forked by a later test still dies of a SIGTERM."""
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in kept.items():
        if signal.getsignal(sig) is not handler and handler is not None:
            signal.signal(sig, handler)


def _libraries(stock: bool):
    from events import patches

    was = patches.stock()
    patches.set_stock(stock)
    try:
        yield
    finally:
        patches.set_stock(was)


@pytest.fixture
def patched():
    """The speed patches on (events/patches.py) whatever ``ESCOBA_STOCK`` says: a test of a patch's own code."""
    yield from _libraries(False)


@pytest.fixture
def stock():
    """The libraries as they ship (``ESCOBA_STOCK=1``) for this test, whatever the run says."""
    yield from _libraries(True)


@pytest.fixture(autouse=True)
def _unit_tests_start_no_server(request):
    """A test of the unit tier (conftest.py) that starts a redis-server fails, saying so: it belongs
    in the integration tier, which CI runs after the fast one."""
    if request.node.get_closest_marker("unit") is not None:
        redis_servers.UNIT_TEST = request.node.nodeid
    yield
    redis_servers.UNIT_TEST = None
