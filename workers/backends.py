"""The stores a worker talks to: the tables' store and the queue shards.

``tables`` holds every key of a table (its log, its timers hash) and the due
index; it may be a Redis Cluster. ``queues`` are RQ's plain Redises, one per
queue shard (``ESCOBA_QUEUE_URL``, comma-separated); ``queue`` is shard 0.
Nothing in workers/ assumes any two are the same server, and no command, script
or transaction touches two of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Stores:
    tables: object  # redis.Redis | redis.cluster.RedisCluster
    queue: object  # redis.Redis: shard 0
    queues: tuple = field(default=())  # every shard; empty when made: (queue,)

    def __post_init__(self):
        if not self.queues:
            object.__setattr__(self, "queues", (self.queue,))


def connect(config) -> Stores:
    """Connect to the stores as configured (``events.connection.connect``: it finds out
    whether ``REDIS_URL`` is a cluster, and refuses a cluster as a queue)."""
    from events.connection import connect as connect_backends

    found = connect_backends(config)
    return Stores(found.tables, found.queue, found.queues)


__all__ = ["Stores", "connect"]
