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

A master with no replica online (``ROLE`` lists none: its replica died, or was promoted away
from it, or its link is cut) cannot acknowledge anything, and would refuse every move until a
replica is back. ``ESCOBA_UNREPLICATED`` decides, as Redis's own ``min-replicas-to-write``
does: ``accept`` (the default) acknowledges such a move on the master's AOF alone, as one Redis
does, counts it (``escoba_unreplicated_acks_total``, alerted on) and logs it; ``refuse``
answers it 503 as before. A replica that is online but late (``WAIT`` times out while ``ROLE``
lists it) is never taken for an absent one: that move is refused. Every replicated write sends
``ROLE`` between its command and its ``WAIT`` (one round trip still), so a master seen alone is
known at once: its next writes wait only ``ALONE_WAIT_MS`` (no 1 s timeout a move), and the
first write after a replica is online again waits for it, the stronger guarantee back by itself
(docs/operations.md, "When a master has no replica").
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Any, NamedTuple

import redis as redis_lib
from redis import exceptions as redis_errors
from redis.cluster import RedisCluster

from .connection import Client, PausingCluster

log = logging.getLogger("escoba.events")

# seconds an append waits for its replicas before the move is answered 503 (a replica
# answers a master's GETACK within a round trip; a cut link never answers)
ACK_TIMEOUT = 1.0
# MOVED replies followed on one append (a failover moved the table's slot) before giving up
REDIRECTS = 3
# ESCOBA_UNREPLICATED: a move on a master with no replica online is acknowledged on its AOF alone
# (counted and alerted on), or refused (503) until a replica is back
ACCEPT, REFUSE = "accept", "refuse"
POLICIES = (ACCEPT, REFUSE)
# the WAIT of a write to a master last seen with no replica online, in ms (WAIT 0 would block for
# ever): long enough for a replica that came back meanwhile to answer on a LAN, far from a second
ALONE_WAIT_MS = 5
# seconds between two warnings that moves are acknowledged on a master alone (each is counted)
ALONE_LOG_EVERY = 10.0
# seconds a master's replicas, as /healthz asks them (ROLE on every master), are taken as known
HEALTH_FOR = 2.0


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

    def __init__(self) -> None:
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
# writes acknowledged on a master with no replica online (ESCOBA_UNREPLICATED=accept)
UNREPLICATED = Count()
# reads that found a table's log gone ("vanished") or behind this process's copy ("behind")
LOST_LOGS = Count()


def replica_acks(setting: int | None, tables: Client) -> int:
    """How many replicas an append waits for: ``setting`` (ESCOBA_REPLICA_ACKS) when given, else
    the default above, from what the masters said the first time a client asked."""
    if setting is not None:
        if setting < 0:
            raise ValueError("ESCOBA_REPLICA_ACKS must be 0 or more")
        return setting
    if not isinstance(tables, RedisCluster):
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


_DEFAULTS: weakref.WeakKeyDictionary[RedisCluster, int] = weakref.WeakKeyDictionary()


def _every_master_has_a_replica(cluster: RedisCluster) -> bool:
    # each master's own count of its connected replicas (the cluster's gossip lags behind it)
    try:
        for node in cluster.get_primaries():
            client = node.redis_connection or cluster.get_redis_connection(node)
            if int(client.info("replication").get("connected_slaves", 0)) < 1:
                return False
        return True
    except redis_errors.RedisError:
        return False


def node_client(tables: Client, key: str) -> redis_lib.Redis:
    """The client whose connections reach the master of ``key``'s slot (one Redis: ``tables``)."""
    if not isinstance(tables, RedisCluster):
        return tables
    node = tables.get_node_from_key(key)
    return node.redis_connection or tables.get_redis_connection(node)


class Waited(NamedTuple):
    """What ``run_then_wait`` got: ``(reply, acknowledged replicas, the node's client, alone)``;
    ``alone``: the node listed fewer replicas online than asked for (none to wait for)."""

    reply: Any  # the command's, as redis-py's pipeline parsed it
    acked: int
    client: redis_lib.Redis
    alone: bool


# node (host:port) -> True while it was last seen with fewer replicas online than its writes ask
_ALONE: dict[str, bool] = {}


def _node_name(client: redis_lib.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"{kwargs.get('host')}:{kwargs.get('port')}"


def online_replicas(role: object) -> int:
    """How many replicas a master's ``ROLE`` reply lists (only those online: a replica still in
    its first sync is not listed); 0 for a replica's own ROLE."""
    if not isinstance(role, (list, tuple)) or not role or role[0] not in (b"master", "master"):
        return 0
    return len(role[2]) if len(role) > 2 and isinstance(role[2], (list, tuple)) else 0


def run_then_wait(tables: Client, key: str, command: tuple[str | bytes | int | float, ...], replicas: int,
                  timeout: float, *,
                  script: str | None = None, mark: str | None = None) -> Waited:
    """``command`` then ``ROLE`` and ``WAIT replicas timeout`` on one connection to the master of
    ``key``'s slot (one round trip): a ``Waited``.

    A master last seen alone (``_ALONE``) is asked with a ``WAIT`` of ``ALONE_WAIT_MS`` instead: no
    replica can answer it. When its ``ROLE`` then lists enough replicas again but the short wait did
    not see them acknowledge, ``mark`` (a key of the same slot) is written and waited for with the
    whole timeout on one connection: a replica that acknowledges that write holds ``command``'s.

    A command that did not run is sent again: after a MOVED reply (a failover or a reshard moved
    the slot) the cluster client's map is mended and the pair goes to the new master; after
    NOSCRIPT (an ``EVALSHA`` of ``script`` on a node that never loaded it) the script is loaded.
    Anything else the node answers with is raised as the store's error.
    """
    for _ in range(REDIRECTS):
        client = node_client(tables, key)
        name = _node_name(client)
        pausing = tables if isinstance(tables, PausingCluster) else None
        if pausing is not None and pausing.paused(name):  # failed a moment ago: fail at once, ask for the map
            pausing.ask_for_map(name)
            raise redis_errors.ConnectionError(f"{name} failed a moment ago")
        alone_before = _ALONE.get(name, False)
        wait_ms = ALONE_WAIT_MS if alone_before else max(1, int(timeout * 1000))
        pipe = client.pipeline(transaction=False)
        pipe.execute_command(*command)
        pipe.execute_command("ROLE")
        pipe.execute_command("WAIT", replicas, wait_ms)
        try:
            reply, role, acked = pipe.execute(raise_on_error=False)
        except (redis_errors.ConnectionError, redis_errors.TimeoutError):
            if pausing is not None:
                pausing.pause(name)
                pausing.ask_for_map(name)  # the node may be gone: the next command asks the cluster anew
            else:
                _remap(tables)
            raise
        if isinstance(reply, redis_errors.MovedError) and isinstance(tables, RedisCluster):
            tables.nodes_manager.move_slot(reply)
            continue
        if isinstance(reply, redis_errors.NoScriptError) and script is not None:
            client.script_load(script)
            continue
        if isinstance(reply, Exception):
            raise reply
        if isinstance(acked, Exception):
            raise acked
        acked = int(acked)
        online = online_replicas(role) if not isinstance(role, Exception) else replicas
        alone = online < replicas
        _ALONE[name] = alone
        if acked < replicas and not alone and alone_before and mark is not None:
            # replicas back since this node was last seen alone: wait for them, the whole timeout
            pipe = client.pipeline(transaction=False)
            pipe.execute_command("SET", mark, "1", "PX", 60_000)
            pipe.execute_command("WAIT", replicas, max(1, int(timeout * 1000)))
            _, acked = pipe.execute()
            acked = int(acked)
        return Waited(reply, acked, client, alone)
    raise redis_errors.TryAgainError(f"the command on {key} kept being redirected")


def settle(table_id: str, version: int, waited: Waited, wanted: int, policy: str) -> None:
    """Return when ``waited`` counts as acknowledged: ``wanted`` replicas hold the write, or the
    master has none online and ``policy`` is ACCEPT (counted and logged: held by its AOF alone);
    else raise ``NotAcknowledged`` (counted and logged)."""
    acked, alone = waited.acked, waited.alone
    if acked >= wanted:
        return
    if alone and policy == ACCEPT:
        unreplicated(table_id, version, acked, wanted)
        return
    raise unacknowledged(table_id, version, acked, wanted)


_last_alone_log = [0.0]


def unreplicated(table_id: str, version: int, acked: int, wanted: int) -> None:
    """Count a write acknowledged on its master alone; a warning at most every ``ALONE_LOG_EVERY`` s."""
    UNREPLICATED.add()
    moment = time.monotonic()
    if moment - _last_alone_log[0] >= ALONE_LOG_EVERY:
        _last_alone_log[0] = moment
        log.warning("table %s version %s: acknowledged on its master alone (%s of %s replicas online): "
                    "ESCOBA_UNREPLICATED=accept; a failover before a replica is back may lose it "
                    "(docs/operations.md)", table_id, version, acked, wanted,
                    extra={"fields": {"table_id": table_id, "version": version}})


_HEALTH: dict[int, tuple[float, int]] = {}


def unreplicated_masters(tables: Client, wanted: int) -> int:
    """How many masters list fewer than ``wanted`` replicas online (ROLE on each, asked at most every
    ``HEALTH_FOR`` s per client): /healthz's "degraded". 0 when nothing is waited for."""
    if wanted <= 0:
        return 0
    moment = time.monotonic()
    known = _HEALTH.get(id(tables))
    if known is not None and moment - known[0] < HEALTH_FOR:
        return known[1]
    clients = ([node.redis_connection or tables.get_redis_connection(node) for node in tables.get_primaries()]
               if isinstance(tables, RedisCluster) else [tables])
    alone = 0
    pausing = tables if isinstance(tables, PausingCluster) else None
    for client in clients:
        name = _node_name(client)
        if pausing is not None and pausing.paused(name):
            continue  # failed a moment ago: not waited for again (a /healthz within its own timeout)
        try:
            lonely = online_replicas(client.execute_command("ROLE")) < wanted
        except redis_errors.RedisError:
            if pausing is not None:
                pausing.pause(name)
            continue  # a master away is the cluster's to report (a failover): not counted here
        _ALONE[name] = lonely
        alone += lonely
    _HEALTH[id(tables)] = (moment, alone)
    return alone


_remapped: weakref.WeakKeyDictionary[RedisCluster, float] = weakref.WeakKeyDictionary()
REMAP_EVERY = 0.5  # s: a burst of failed writes to one dead node asks the cluster once, not each


def _remap(tables: Client) -> None:
    if not isinstance(tables, RedisCluster):
        return
    moment = time.monotonic()
    if moment - _remapped.get(tables, -1e9) < REMAP_EVERY:
        return
    _remapped[tables] = moment
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


__all__ = ["ACCEPT", "ACK_TIMEOUT", "LOST_LOGS", "POLICIES", "REFUSE", "UNACKNOWLEDGED", "UNREPLICATED",
           "NotAcknowledged", "Waited", "lost_log", "node_client", "online_replicas", "replica_acks",
           "run_then_wait", "settle", "unacknowledged", "unreplicated", "unreplicated_masters"]
