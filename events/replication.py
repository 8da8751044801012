"""Acknowledged means held by replicas: ``WAIT`` after an append, and noticing a log that went missing.

Redis replicates asynchronously: a master answers a write before any replica has it. A master
that dies (or is cut off from its replica) right after a move's append may be replaced by a
replica that never got the move; the move was acknowledged to its player and is gone. With
``ESCOBA_REPLICA_ACKS`` = N > 0 an append is sent with ``WAIT N timeout`` on the same
connection (a pipeline: one round trip to the node that owns the table's slot), and counts as
done only when N replicas hold it. Until then nothing follows it: no change notice (sockets),
no timers, no 200. When the replicas do not answer within the timeout the append stays on the
master but the caller gets ``NotAcknowledged`` (the API: 503 ``unavailable``); a retry with the
same idempotency key finds the append, waits for the replicas again (``confirm``), and answers
the first result only once they hold it.

``WAIT`` counts what the connection itself wrote, so it must run on the connection that ran the
append: on a Redis Cluster that is a connection to the master of the table's slot, not the
cluster client's routing (which sends a keyless ``WAIT`` elsewhere). Redis 7.2's ``WAITAOF``
would add "and fsynced by the replicas"; WAIT is what redis-server 7.0 has, and a replica of
this project runs with ``appendfsync always`` anyway (docs/operations.md).

The default of ``ESCOBA_REPLICA_ACKS``: 0 on one Redis (no replica to wait for); on a Redis
Cluster, 1 when every master had a replica connected when the process first asked, else 0. Production
sets it (docker-compose.cluster.yml: 1): a process that happens to start while a replica is
away should not quietly stop waiting.
"""

from __future__ import annotations

import logging
import threading
import weakref

from redis import exceptions as redis_errors

from .connection import is_cluster

log = logging.getLogger("escoba.events")

# seconds an append waits for its replicas before the move is answered 503 (a replica
# answers a master's GETACK within a round trip; a cut link never answers)
ACK_TIMEOUT = 1.0
# MOVED replies followed on one append (a failover moved the table's slot) before giving up
REDIRECTS = 3


class NotAcknowledged(redis_errors.ConnectionError):
    """The append is on the master, but fewer replicas than asked hold it within the timeout.

    A ConnectionError to everything that handles a store that is away: try again later (with
    the same idempotency key, which tells whether the append stands)."""

    def __init__(self, table_id: str, version: int, acked: int, wanted: int):
        super().__init__(f"table {table_id} version {version}: {acked} of {wanted} replicas acknowledged")
        self.table_id = table_id
        self.version = version
        self.acked = acked
        self.wanted = wanted


class Count:
    """A counter of this process's (``/metrics``)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.values: dict[str, int] = {}

    def add(self, label: str = "") -> None:
        with self._lock:
            self.values[label] = self.values.get(label, 0) + 1

    def total(self) -> int:
        with self._lock:
            return sum(self.values.values())


# appends the replicas did not acknowledge in time (answered 503)
UNACKNOWLEDGED = Count()
# reads that found a table's log gone ("vanished") or behind this process's copy ("behind")
LOST_LOGS = Count()


def replica_acks(setting: int | None, tables) -> int:
    """How many replicas an append waits for: ``setting`` (ESCOBA_REPLICA_ACKS) when given, else
    the default above, from what the masters said the first time a client asked."""
    if setting is not None:
        if setting < 0:
            raise ValueError("ESCOBA_REPLICA_ACKS must be 0 or more")
        return setting
    if not is_cluster(tables):
        return 0
    try:  # once per client (a worker builds a service per job)
        return _DEFAULTS[tables]
    except KeyError:
        pass
    found = _DEFAULTS[tables] = 1 if _every_master_has_a_replica(tables) else 0
    if not found:
        log.warning("ESCOBA_REPLICA_ACKS is unset and a master of the cluster has no replica: moves are "
                    "acknowledged before any replica holds them (docs/operations.md)")
    return found


_DEFAULTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _every_master_has_a_replica(cluster) -> bool:
    # each master's own count of its connected replicas (the cluster's gossip lags behind it)
    try:
        for node in cluster.get_primaries():
            client = node.redis_connection or cluster.get_redis_connection(node)
            if int(client.info("replication").get("connected_slaves", 0)) < 1:
                return False
        return True
    except redis_errors.RedisError:
        return False


def node_client(tables, key: str):
    """The client whose connections reach the master of ``key``'s slot (one Redis: ``tables``)."""
    if not is_cluster(tables):
        return tables
    node = tables.get_node_from_key(key)
    return node.redis_connection or tables.get_redis_connection(node)


def run_then_wait(tables, key: str, command: tuple, replicas: int, timeout: float, *,
                  script: str | None = None) -> tuple[object, int, object]:
    """``command`` then ``WAIT replicas timeout`` on one connection to the master of ``key``'s
    slot: ``(reply, acknowledged replicas, the node's client)``.

    A command that did not run is sent again: after a MOVED reply (a failover or a reshard moved
    the slot) the cluster client's map is mended and the pair goes to the new master; after
    NOSCRIPT (an ``EVALSHA`` of ``script`` on a node that never loaded it) the script is loaded.
    Anything else the node answers with is raised as the store's error.
    """
    for _ in range(REDIRECTS):
        client = node_client(tables, key)
        pipe = client.pipeline(transaction=False)
        pipe.execute_command(*command)
        pipe.execute_command("WAIT", replicas, max(1, int(timeout * 1000)))
        try:
            reply, acked = pipe.execute(raise_on_error=False)
        except (redis_errors.ConnectionError, redis_errors.TimeoutError):
            _remap(tables)  # the node may be gone: the next request asks the cluster anew
            raise
        if isinstance(reply, redis_errors.MovedError) and is_cluster(tables):
            tables.nodes_manager.move_slot(reply)
            continue
        if isinstance(reply, redis_errors.NoScriptError) and script is not None:
            client.script_load(script)
            continue
        if isinstance(reply, Exception):
            raise reply
        if isinstance(acked, Exception):
            raise acked
        return reply, int(acked), client
    raise redis_errors.TryAgainError(f"the command on {key} kept being redirected")


def _remap(tables) -> None:
    if is_cluster(tables):
        try:
            tables.nodes_manager.initialize()
        except Exception:  # every seed unreachable: the next command tries again
            log.warning("could not refresh the cluster's slot map")


def unacknowledged(table_id: str, version: int, acked: int, wanted: int) -> NotAcknowledged:
    """Log and count an append the replicas did not acknowledge in time; the error to raise."""
    UNACKNOWLEDGED.add()
    log.warning("table %s version %s: %s of %s replicas acknowledged within the timeout; answered "
                "as unavailable (a retry with the same key tells whether it stands)", table_id, version,
                acked, wanted, extra={"fields": {"table_id": table_id, "version": version}})
    return NotAcknowledged(table_id, version, acked, wanted)


def lost_log(table_id: str, kind: str, cached: int, stored: int) -> None:
    """Log and count a read that found the store without the log this process had read before."""
    LOST_LOGS.add(kind)
    log.error("table %s: the store's log is %s (this process had read it up to version %s, the store "
              "has %s): check the Redis settings that keep data (docs/operations.md)", table_id,
              "gone" if kind == "vanished" else "behind", cached, stored,
              extra={"fields": {"table_id": table_id, "version": cached}})


__all__ = ["ACK_TIMEOUT", "LOST_LOGS", "UNACKNOWLEDGED", "NotAcknowledged", "lost_log", "node_client",
           "replica_acks", "run_then_wait", "unacknowledged"]
