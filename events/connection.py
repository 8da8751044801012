"""The one place that knows the topology: one Redis, or a Redis Cluster beside a queue Redis.

Everything else asks ``connect(config)`` for ``Backends`` and uses:

- ``tables``: every key that belongs to a table (its log, snapshot, tokens, chat, notify
  URLs, timer bookkeeping, idempotency keys, rate-limit counters) and the sharded
  index buckets. A plain ``Redis`` or a ``redis.cluster.RedisCluster``; every key of one
  table carries the ``{table_id}`` hash tag and no command, script or transaction
  touches two slots, so the same code runs on both.
- ``queue``: RQ's queues, jobs, scheduled registry and worker registry. Always a plain
  ``Redis``: RQ's keys and transactions span many slots, so RQ cannot run on a cluster.

Whether ``REDIS_URL`` names a cluster node is found out at start (``INFO cluster``:
``cluster_enabled:1``), not configured: an operator points the same setting at a
cluster when one Redis is outgrown. ``ESCOBA_QUEUE_URL`` defaults to ``REDIS_URL``
when that is one Redis; on a cluster it must be set, and a cluster there is refused.

``REDIS_URL`` may list several nodes of a cluster, comma-separated (``redis://a:6379,b:6379``:
an item without a scheme takes the first's scheme, credentials and options): seed nodes, so a
process starts while any one of them is down. The first that answers is asked.

``ESCOBA_QUEUE_URL`` may list several plain Redises, comma-separated: the queue shards
(``Backends.queues``). A table's jobs always go to the same shard, ``queue_shard``: its
cluster slot (CRC16 of the table id, the hash tag of all its keys) modulo the number of
shards, so they stay in order on one queue. One URL is one shard, as before.
"""

from __future__ import annotations

import contextlib
import select
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias, cast
from urllib.parse import urlsplit, urlunsplit

import redis as redis_lib
from redis.backoff import ExponentialWithJitterBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot
from redis.retry import Retry

from . import patches
from .config import Config
from .locks import unpatched

# how long ``connect`` waits for a Redis that is starting (compose brings them up together)
CONNECT_WAIT = 30.0
# a pub/sub connection is idle for long stretches: a periodic PING finds a peer that is gone
HEALTH_CHECK_INTERVAL = 30
# a cluster command's tries and the pause before each: enough to follow a failover's new
# topology, and a master that is away fails the command in well under a second. redis-py 8's
# default (ten tries, backoff to 1 s) spent 3.5 s on each command for a dead master, and a worker
# whose job was for its table served no other table meanwhile; our jobs retry with their own
# backoff (workers.jobloop) and a move gets a 503 with Retry-After.
CLUSTER_TRIES = 3
CLUSTER_PAUSE = {"base": 0.01, "cap": 0.1}  # the jittered exponential pause before a try, s
# A cluster node that died is often not refused but silent (a container's address gone: no RST),
# and the OS waits minutes for a connect, a read forever: each request for its slots would wait
# that long, and a worker's job line behind it. A connect takes a LAN round trip; a reply at most
# a move's step plus its WAIT (replication.ACK_TIMEOUT). After a failure the client asks the
# cluster for its map again (redis-py: at most once a second), so the promoted replica is found
# within about a second of its promotion without waiting out a timeout per request. Pub/sub reads
# are polls (api/sockets/notices.py), and a health check runs on idle ones.
CLUSTER_CONNECT_TIMEOUT = 0.5
CLUSTER_SOCKET_TIMEOUT = 3.0
# seconds a node that failed a command (refused, silent, timed out) is not asked again: a command
# routed to it fails at once (a ConnectionError, as the first did), so a worker whose jobs are for
# its tables puts each back on its retry backoff in microseconds instead of waiting out a connect
# or read timeout apiece, and serves the other masters' tables meanwhile. The first command after
# the pause asks it again (and, failing, has the client ask the cluster for its map again: the
# promoted replica takes its slots)
NODE_PAUSE = 1.0


# A client of the tables' store: one Redis, or a Redis Cluster (``is_cluster`` tells them apart)
Client: TypeAlias = "redis_lib.Redis | RedisCluster"

_POLL = unpatched("select", "poll")  # the operating system's, even in a process gevent has patched


class Connection(redis_lib.Connection):
    """redis-py's connection, with the pool's check on every checkout made cheap under gevent.

    Each time a pool hands out a connection it asks ``can_read()`` whether stray data or a
    closed socket is waiting. Under gevent's worker that is gevent's cooperative poll
    (watchers, and a trip through its loop), a visible share of the API's CPU a move
    (docs/benchmarks.md). A poll with a zero timeout never blocks, so the operating
    system's own poll answers it as well, for the price of one system call. Whatever it sees
    (data, a hang-up, an error) goes on to redis-py's own check, which tells them apart.
    """

    def can_read(self, timeout: float = 0) -> bool:
        sock = self._sock
        reader = getattr(self._parser, "_reader", None)  # hiredis's reader, which may hold parsed replies
        if timeout == 0 and sock is not None and reader is not None and not reader.has_data():
            poller = _POLL()
            poller.register(sock.fileno(), select.POLLIN)
            if not poller.poll(0):
                return False
        return super().can_read(timeout)


def _connection_class(url: str) -> dict[str, type[Connection]]:
    """``connection_class`` for a plain TCP URL (TLS and unix sockets keep redis-py's own, as do the
    stock libraries: events/patches.py ``REDIS_CONNECTION``; Direct and the lean pub/sub reads need it)."""
    return {"connection_class": Connection} if url.startswith("redis://") and patches.REDIS_CONNECTION.on else {}


class PausingCluster(RedisCluster):
    """redis-py's cluster client, pausing a node that failed (``NODE_PAUSE``) instead of paying its
    timeout on every command routed to it until the failover (see ``NODE_PAUSE``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._paused: dict[str, float] = {}  # node name -> time.monotonic() until which it is not asked
        super().__init__(*args, **kwargs)  # (which sends commands already)

    def paused(self, name: str) -> bool:
        """Whether node ``name`` (host:port) failed less than ``NODE_PAUSE`` s ago."""
        until = self._paused.get(name)
        if until is None:
            return False
        if time.monotonic() < until:
            return True
        self._paused.pop(name, None)
        return False

    def pause(self, name: str) -> None:
        """Node ``name`` failed a command: not asked for ``NODE_PAUSE`` s."""
        self._paused[name] = time.monotonic() + NODE_PAUSE

    def ask_for_map(self, failed: str | None = None) -> None:
        """Have the client read the cluster's slot map again, at its next command once due (redis-py
        runs such refreshes at most once a second, asking the node that ``failed`` last)."""
        request = getattr(self.nodes_manager, "_request_refresh", None)  # redis-py 8's
        if request is not None:
            request(last_failed_node_name=failed)

    def _execute_command(self, target_node: ClusterNode, *args: Any, **kwargs: Any) -> Any:
        if self.paused(target_node.name):
            self.ask_for_map(target_node.name)  # the map may have moved its slots meanwhile (a failover)
            raise redis_lib.ConnectionError(f"{target_node.name} failed less than {NODE_PAUSE:g} s ago")
        try:
            return super()._execute_command(target_node, *args, **kwargs)  # type: ignore[no-untyped-call]  # redis-py's is untyped
        except (redis_lib.ConnectionError, redis_lib.TimeoutError):
            self.pause(target_node.name)
            raise


class TopologyError(RuntimeError):
    """The settings name a topology the server cannot run on (said in words an operator acts on)."""


# A cluster that cannot be reached, as redis-py's cluster client says it: outside RedisError's
# connection family. redis-py 8 raises RedisClusterUnreachableError once no node answers (a
# command's ConnectionError becomes one), SlotNotCoveredError while its map of the slots has a
# gap, and ClusterError "TTL exhausted" when redirected too often while slots move; redis-py 5 a
# bare RedisClusterException whose text begins with CLUSTER_UNREACHABLE_TEXT.
CLUSTER_AWAY = tuple(getattr(redis_lib.exceptions, name)
                     for name in ("RedisClusterUnreachableError", "SlotNotCoveredError", "ClusterError")
                     if hasattr(redis_lib.exceptions, name))
CLUSTER_UNREACHABLE_TEXT = "Redis Cluster cannot be connected"
# The store cannot take requests now (down, starting, failing over, read-only, full): worth
# trying again later, unlike a bug. (api/http/errors.py answers 503 for the same family.)
STORE_DOWN = (redis_lib.ConnectionError, redis_lib.TimeoutError, redis_lib.BusyLoadingError,
              redis_lib.ReadOnlyError, redis_lib.exceptions.OutOfMemoryError,
              redis_lib.exceptions.ClusterDownError, redis_lib.exceptions.TryAgainError,
              redis_lib.exceptions.MasterDownError, *CLUSTER_AWAY)
# the same refusals when they come back as a script's error text
DOWN_PREFIXES = ("OOM ", "READONLY ", "LOADING ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ")


def store_away(exc: BaseException) -> bool:
    """Whether ``exc`` is one of ``STORE_DOWN`` (a class of them, or redis-py 5's words for a
    cluster no node of which answers)."""
    return isinstance(exc, STORE_DOWN) or (isinstance(exc, redis_lib.exceptions.RedisClusterException)
                                           and str(exc).startswith(CLUSTER_UNREACHABLE_TEXT))


def store_down(exc: BaseException) -> bool:
    """Whether ``exc`` says a Redis cannot take requests now (so a retry later may work)."""
    if store_away(exc):
        return True
    if isinstance(exc, redis_lib.ResponseError):
        text = str(exc)
        return any(text.startswith(p) or f": {p}" in text for p in DOWN_PREFIXES)
    return False


def queue_shard(table_id: str, shards: int) -> int:
    """The queue shard of ``table_id``'s jobs: its cluster slot modulo ``shards``."""
    if shards <= 1:
        return 0
    return key_slot(table_id.encode()) % shards


@dataclass(frozen=True)
class Backends:
    tables: Client  # every key of a table, and the index buckets
    queue: redis_lib.Redis  # RQ (always a plain Redis); with several shards, shard 0
    cluster: bool
    # every queue shard in ESCOBA_QUEUE_URL's order (empty when made: ``(queue,)``)
    queues: tuple[redis_lib.Redis, ...] = ()

    def __post_init__(self) -> None:
        if not self.queues:
            object.__setattr__(self, "queues", (self.queue,))

    def queue_of(self, table_id: str) -> redis_lib.Redis:
        """The queue Redis of ``table_id``'s shard."""
        return self.queues[queue_shard(table_id, len(self.queues))]

    def close(self) -> None:
        clients = {id(c): c for c in (self.tables, self.queue, *self.queues)}
        for client in clients.values():
            with contextlib.suppress(Exception):  # best effort (a client that never connected)
                client.close()


def is_cluster(client: object) -> bool:
    """Whether ``client`` is a cluster client (sharded pub/sub, per-node listeners)."""
    return isinstance(client, RedisCluster)


def from_clients(tables: Client, queue: redis_lib.Redis | Sequence[redis_lib.Redis] | None = None) -> Backends:
    """Backends around clients made elsewhere (tests: fakeredis; ``escoba dev``'s embedded store).

    ``queue`` defaults to ``tables``, which must then be a plain Redis; a list or tuple of
    clients is the queue shards.
    """
    cluster = is_cluster(tables)
    if queue is None:
        if isinstance(tables, RedisCluster):
            raise TopologyError("a cluster's tables need a plain Redis for the queue")
        queue = tables
    queues = tuple(queue) if isinstance(queue, (list, tuple)) else (queue,)
    if any(is_cluster(q) for q in queues):
        raise TopologyError("RQ's queue cannot live on a Redis Cluster: give it a plain Redis")
    return Backends(tables=tables, queue=queues[0], cluster=cluster, queues=queues)


def seeds(url: str) -> list[str]:
    """The node URLs ``url`` lists (one, or several comma-separated); an item without a scheme
    takes the first's scheme, credentials and path (``redis://u:p@a:1/0,b:2`` -> ``redis://u:p@b:2/0``)."""
    items = [item.strip() for item in url.split(",") if item.strip()]
    if not items:
        raise TopologyError("REDIS_URL names no Redis")
    first = urlsplit(items[0])
    if len(items) > 1 and not first.netloc:
        raise TopologyError("a REDIS_URL that lists several nodes starts with a whole URL (redis://host:port)")
    credentials = first.netloc.rpartition("@")[0]
    out = [items[0]]
    for item in items[1:]:
        if "://" not in item:
            item = urlunsplit((first.scheme, f"{credentials}@{item}" if credentials else item, first.path,
                               first.query, ""))
        out.append(item)
    return out


def probe_cluster(url: str, wait: float = CONNECT_WAIT) -> bool:
    """Whether the Redis at ``url`` (the first of its seeds that answers) is a cluster node; waits
    up to ``wait`` s for one to answer."""
    return _probe(url, wait)[0]


def _probe(url: str, wait: float) -> tuple[bool, str]:
    """``(is a cluster node, the seed that answered)``."""
    clients = [(seed, redis_lib.Redis.from_url(seed, socket_connect_timeout=2, socket_timeout=5))
               for seed in seeds(url)]
    deadline = time.monotonic() + wait
    try:
        while True:
            failures = []
            for seed, client in clients:
                try:
                    info = client.info("cluster")
                    return int(info.get("cluster_enabled", 0)) == 1, seed
                except redis_lib.ResponseError:  # no INFO (an embedded fake, a proxy): not a cluster node
                    return False, seed
                except (redis_lib.ConnectionError, redis_lib.TimeoutError, redis_lib.BusyLoadingError) as exc:
                    failures.append(f"{_where(seed)}: {exc}")
            if time.monotonic() >= deadline:
                raise redis_lib.ConnectionError(f"Redis at {_where(url)} is not reachable: {'; '.join(failures)}")
            time.sleep(0.5)
    finally:
        for _, client in clients:
            client.close()


def connect(config: Config, *, wait: float = CONNECT_WAIT) -> Backends:
    """The clients ``config`` names, after finding out whether ``REDIS_URL`` is a cluster.

    Raises TopologyError for a cluster at ``ESCOBA_QUEUE_URL`` or a cluster with no queue
    URL, ConnectionError when a Redis does not answer within ``wait`` seconds.
    """
    cluster, seed = _probe(config.redis_url, wait)
    queue_urls = config.queue_urls
    if cluster and not queue_urls:
        raise TopologyError(
            f"REDIS_URL ({_where(config.redis_url)}) is a Redis Cluster node: set ESCOBA_QUEUE_URL "
            "to a plain Redis for RQ's queues (RQ cannot run on a cluster)")
    if len(set(queue_urls)) != len(queue_urls):
        raise TopologyError("ESCOBA_QUEUE_URL names the same Redis twice: each queue shard is a Redis of its own")
    for url in queue_urls:
        same = url == config.redis_url
        if (cluster and same) or (not same and probe_cluster(url, wait)):
            raise TopologyError(
                f"ESCOBA_QUEUE_URL ({_where(url)}) is a Redis Cluster node: RQ's queues, jobs and "
                "scheduled registry need a plain Redis (its transactions span many slots)")
    tables: Client
    if cluster:  # (every queue URL is another Redis: checked above)
        tables = cluster_client(config.redis_url, wait)
        queues = tuple(plain_client(url) for url in queue_urls)
    else:
        plain = tables = plain_client(seed)  # one Redis: the seed that answered
        queues = tuple(plain if url == config.redis_url else plain_client(url) for url in queue_urls) or (plain,)
    return Backends(tables=tables, queue=queues[0], cluster=cluster, queues=queues)


# per process and Redis: under gevent, thousands of greenlets (a socket's each) may want Redis at
# once; past this many they wait their turn instead of opening a connection each
PLAIN_CONNECTIONS = 64


def plain_client(url: str) -> redis_lib.Redis:
    """A plain Redis client whose pool is bounded (and blocks, up to 10 s, when all are in use)."""
    pool = redis_lib.BlockingConnectionPool.from_url(url, max_connections=PLAIN_CONNECTIONS, timeout=10,
                                                     **_connection_class(url))
    return redis_lib.Redis(connection_pool=pool)


def tables_client(url: str, wait: float = CONNECT_WAIT) -> Client:
    """Only the tables' client for ``url`` (tools that read logs and need no queue: ``escoba replay``)."""
    cluster, seed = _probe(url, wait)
    return cluster_client(url, wait) if cluster else redis_lib.Redis.from_url(seed)


def cluster_client(url: str, wait: float = CONNECT_WAIT) -> PausingCluster:
    """A RedisCluster from any node's URL, or several (seed nodes: any one that answers will do),
    waiting for the cluster to cover every slot (a cluster being created answers ``CLUSTER
    SLOTS`` with gaps for a moment)."""
    first, *others = seeds(url)
    deadline = time.monotonic() + wait
    while True:
        try:
            more = [ClusterNode(parsed.hostname, parsed.port or 6379)
                    for parsed in map(urlsplit, others)]
            # a cluster has only db 0: the URL's db, if any, is dropped
            retry = Retry(ExponentialWithJitterBackoff(**CLUSTER_PAUSE), CLUSTER_TRIES)
            client = PausingCluster.from_url(_without_db(first), startup_nodes=more, retry=retry,
                                         health_check_interval=HEALTH_CHECK_INTERVAL,
                                         socket_connect_timeout=CLUSTER_CONNECT_TIMEOUT,
                                         socket_timeout=CLUSTER_SOCKET_TIMEOUT, **_connection_class(first))
            return cast(PausingCluster, client)  # from_url makes a ``cls``; redis-py types it RedisCluster
        except Exception as exc:  # RedisClusterException: slots not covered yet; ConnectionError
            if time.monotonic() >= deadline:
                raise redis_lib.ConnectionError(f"the Redis Cluster at {_where(url)} is not ready: {exc}") from exc
            time.sleep(0.5)


def _without_db(url: str) -> str:
    """``url`` without a trailing ``/<db>`` (``redis://h:1/0`` -> ``redis://h:1``; ``h:1/0`` -> ``h:1``)."""
    head, sep, tail = url.rpartition("/")
    if sep and tail.isdigit() and not head.endswith("/") and head:
        return head
    return url


def _where(url: str) -> str:
    """host:port of ``url`` (of each node it lists) without credentials (messages and logs never
    carry a password)."""
    if "," in url:
        return ",".join(_where(item) for item in url.split(",") if item.strip())
    rest = url.strip().split("://", 1)[-1]
    rest = rest.rsplit("@", 1)[-1]
    return rest.split("/", 1)[0]


__all__ = ["CLUSTER_AWAY", "DOWN_PREFIXES", "STORE_DOWN", "Backends", "Connection", "PausingCluster", "TopologyError",
           "cluster_client", "connect", "from_clients", "is_cluster", "plain_client", "probe_cluster",
           "queue_shard", "seeds", "store_away", "store_down", "tables_client"]
