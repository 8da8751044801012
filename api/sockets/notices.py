"""The subscription side of the fan-out (api/sockets/fanout.py): how this process hears change notices.

Either way this process subscribes to the channel of each table a local socket
watches, when the first socket starts watching it, and unsubscribes when the last
one leaves: a process hears only its own tables' notices, so adding API processes
adds no work to the others (a pattern subscription made every process read and
parse every table's every notice, a cost that grew with every process: docs/benchmarks.md).

- One Redis: SUBSCRIBE, on one connection read by one thread in a blocking read.
- A Redis Cluster: notices are published with SPUBLISH, which reaches only the shard
  that owns the table's slot. So this process SSUBSCRIBEs on that node; one listener
  thread per cluster node reads that node's subscriptions.

Either way a notice reaches the fan-out as ``on_notice(raw_json)``. Whenever a
subscription is confirmed (the first time, and again after a dropped connection is
re-established) the listener also hands the fan-out a *resync* notice,
``{"table_id": ..., "resync": true}``, for every table it covers: the fan-out then loads
the table and pushes its state, so a socket catches up from the log on whatever was
published while nobody listened (a reconnect, a shard failing over, or the moment
between a socket loading its table and the subscription taking effect). A node
whose connection cannot be re-established (a failed-over master) hands its channels
back: the cluster's topology is refreshed and they are subscribed on their new owner.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable
from types import MethodType

import orjson
import redis as redis_lib
from redis._parsers.hiredis import NOT_ENOUGH_DATA, _HiredisParser

from events import patches
from events.connection import Connection, is_cluster
from events.store import changes_channel

log = logging.getLogger("escoba.hub")

_MESSAGE = (b"message", "message")  # a published message's reply, undecoded or decoded
RETRY = 1.0  # seconds before a failed listener tries again
POLL = 1.0  # a sharded listener's read timeout: how soon it notices ``stop``


def resync_notice(table_id: str) -> bytes:
    return orjson.dumps({"table_id": table_id, "resync": True})


def table_of(channel) -> str:
    """``table:{ID}:changes`` -> ``ID``."""
    text = channel.decode() if isinstance(channel, bytes) else channel
    return text[text.index("{") + 1:text.rindex("}")]


def listener_for(redis, on_notice: Callable[[bytes], None]):
    """The listener for ``redis``'s topology (events/connection.py tells them apart)."""
    if is_cluster(redis):
        return ShardedListener(redis, on_notice)
    return ChannelListener(redis, on_notice)


class ChannelListener:
    """One Redis: SUBSCRIBE per watched table, one connection, one thread in a blocking read."""

    def __init__(self, redis, on_notice):
        self.redis = redis
        self.on_notice = on_notice
        # never published to: it keeps the connection subscribed while no table is watched (redis-py's
        # blocking read of an unsubscribed connection fails), and tells its confirmation apart
        self._anchor = f"escoba:hub:{uuid.uuid4().hex}"
        self._tables: set[str] = set()  # what this process wants to hear
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # the set, and every command sent on the connection
        self._pubsub = None
        self.subscriptions = 0  # confirmations seen (one per channel, again after a reconnect)

    def add(self, table_id: str) -> None:
        with self._lock:
            self._tables.add(table_id)
            if self._thread is None or not self._thread.is_alive():
                # it subscribes to every table in the set as it connects
                self._thread = threading.Thread(target=self._run, name="escoba-hub", daemon=True)
                self._thread.start()
            elif self._pubsub is not None:
                self._send(self._pubsub.subscribe, changes_channel(table_id))

    def remove(self, table_id: str) -> None:
        with self._lock:
            self._tables.discard(table_id)
            if self._pubsub is not None:
                self._send(self._pubsub.unsubscribe, changes_channel(table_id))

    def stop(self) -> None:
        self._stop.set()
        pubsub = self._pubsub
        connection = pubsub.connection if pubsub is not None else None
        if connection is not None:  # wakes the blocked read with an error, which then sees the stop
            _quietly(connection.disconnect)

    def _send(self, command, channel: str) -> None:
        try:
            command(channel)
        except Exception:  # the connection is failing: the listener's reconnect subscribes the set again
            log.warning("pub/sub command on %s failed; the reconnect will redo it", channel, exc_info=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            pubsub = None
            try:
                with self._lock:
                    pubsub = self._pubsub = self.redis.pubsub()
                    pubsub.subscribe(self._anchor, *(changes_channel(t) for t in self._tables))
                connection = pubsub.connection
                if _lean(connection):
                    self._read_notices(pubsub, connection)
                    continue
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=None)
                    if message:
                        self._handle(message)
            except Exception:  # Redis went away: wait, subscribe again, resync on confirmation
                if self._stop.is_set():
                    return
                log.exception("pub/sub listener failed; retrying")
                self._stop.wait(RETRY)
            finally:
                if pubsub is not None:
                    with self._lock:
                        if self._pubsub is pubsub:
                            self._pubsub = None
                    _quietly(pubsub.close)

    def _read_notices(self, pubsub, connection) -> None:
        """Notices straight from the socket into hiredis's reader, in a blocking read: redis-py's
        read_response around each (its timeout set and reset on every read, its push handlers) cost
        more than the notice's own dispatch. A subscription's confirmation and anything else not a
        message go through redis-py's handling; a closed or failed connection raises, as there."""
        parser = connection._parser
        reader, buffer, sock = parser._reader, parser._buffer, connection._sock
        # a blocking read: a read with a timeout first polls the socket, and under gevent that
        # poll cost more than the notice it waited for (docs/benchmarks.md)
        sock.settimeout(None)
        stop = self._stop
        while not stop.is_set():
            response = reader.gets()
            if response is NOT_ENOUGH_DATA:
                n = sock.recv_into(buffer)
                if not n:
                    raise redis_lib.ConnectionError("the pub/sub connection was closed")
                reader.feed(buffer, 0, n)
                continue
            # (hiredis gives a list, or its PushNotification, a list of its own)
            if isinstance(response, list) and len(response) == 3 and response[0] in _MESSAGE:
                self.on_notice(response[2])
                continue
            if isinstance(response, Exception):
                raise response
            message = pubsub.handle_message(response)
            if message:
                self._handle(message)

    def _handle(self, message: dict) -> None:
        kind = message.get("type")
        if kind == "message":
            self.on_notice(message["data"])
        elif kind == "subscribe":
            self.subscriptions += 1
            channel = message["channel"]
            channel = channel.decode() if isinstance(channel, bytes) else channel
            if channel != self._anchor and table_of(channel) in self._tables:
                self.on_notice(resync_notice(table_of(channel)))


class ShardedListener:
    """A Redis Cluster: SSUBSCRIBE per watched table, a listener thread per node."""

    def __init__(self, cluster, on_notice):
        self.cluster = cluster
        self.on_notice = on_notice
        self._lock = threading.RLock()
        self._tables: set[str] = set()  # what this process wants to hear
        self._nodes: dict[str, NodeListener] = {}  # node name -> its listener
        self._stopped = False

    def add(self, table_id: str) -> None:
        with self._lock:
            self._tables.add(table_id)
            self._subscribe(table_id)

    def remove(self, table_id: str) -> None:
        with self._lock:
            self._tables.discard(table_id)
            for node in self._nodes.values():
                if node.holds(table_id):
                    _quietly(node.unsubscribe, table_id)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            for node in self._nodes.values():
                node.stop()

    def node_names(self) -> list[str]:
        with self._lock:
            return sorted(self._nodes)

    def _subscribe(self, table_id: str) -> None:
        node = self.cluster.get_node_from_key(changes_channel(table_id))
        listener = self._nodes.get(node.name)
        if listener is None or not listener.alive:
            listener = NodeListener(self, node)
            self._nodes[node.name] = listener
        listener.subscribe(table_id)

    def rehome(self, listener: NodeListener, tables: list[str]) -> bool:
        """A node's connection is lost for good: find the slots' owners again and
        subscribe there (each confirmation resyncs its table). False: try again later."""
        with self._lock:
            if self._stopped:
                return True
            if self._nodes.get(listener.name) is listener:
                del self._nodes[listener.name]
            try:
                self.cluster.nodes_manager.initialize()
                for table_id in tables:
                    if table_id in self._tables:
                        self._subscribe(table_id)
            except Exception:
                log.exception("re-subscribing %d tables of node %s failed; retrying", len(tables), listener.name)
                return False
            return True


class NodeListener:
    """One cluster node's sharded subscriptions and the thread that reads them."""

    def __init__(self, parent: ShardedListener, node):
        self.parent = parent
        self.name = node.name
        redis = parent.cluster.get_redis_connection(node)
        self.pubsub = redis.pubsub()
        # a reconnect re-sends SSUBSCRIBE grouped by slot, as redis-py's cluster pub/sub does
        # (one SSUBSCRIBE over channels of several slots is refused with CROSSSLOT)
        from redis.cluster import ClusterPubSub

        self.pubsub._resubscribe_shard_channels = MethodType(ClusterPubSub._resubscribe_shard_channels,
                                                             self.pubsub)
        self._tables: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"escoba-hub-{self.name}", daemon=True)
        self._started = False
        self.subscriptions = 0

    @property
    def alive(self) -> bool:
        return not self._started or self._thread.is_alive()

    def holds(self, table_id: str) -> bool:
        return table_id in self._tables

    def subscribe(self, table_id: str) -> None:
        self.pubsub.ssubscribe(changes_channel(table_id))
        self._tables.add(table_id)
        if not self._started:
            self._started = True
            self._thread.start()

    def unsubscribe(self, table_id: str) -> None:
        self._tables.discard(table_id)
        self.pubsub.sunsubscribe(changes_channel(table_id))

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    message = self.pubsub.get_message(timeout=POLL)
                except Exception:  # redis-py's own reconnect failed: the node is gone (failover)
                    log.warning("sharded listener on %s lost its connection; re-subscribing elsewhere",
                                self.name, exc_info=True)
                    self._hand_back()
                    return
                if message:
                    self._handle(message)
        finally:
            _quietly(self.pubsub.close)

    def _hand_back(self) -> None:
        tables = sorted(self._tables)
        while not self._stop.is_set() and not self.parent.rehome(self, tables):
            self._stop.wait(RETRY)

    def _handle(self, message: dict) -> None:
        kind = message.get("type")
        if kind == "smessage":
            self.parent.on_notice(message["data"])
        elif kind == "ssubscribe":
            self.subscriptions += 1
            table_id = table_of(message["channel"])
            if table_id in self._tables:
                self.parent.on_notice(resync_notice(table_id))


def _lean(connection) -> bool:
    """Whether the listener may read ``connection``'s notices itself (``_read_notices``): one of ours
    (events/connection.py) parsed by hiredis, with no health checks (which redis-py's reads send)."""
    return (patches.PUBSUB_READS.on and isinstance(connection, Connection) and not connection.health_check_interval
            and isinstance(connection._parser, _HiredisParser) and connection._parser._reader is not None)


def _quietly(fn, *args) -> None:
    try:
        fn(*args)
    except Exception:  # cleanup of a connection that may be gone already
        log.debug("ignored during cleanup", exc_info=True)
