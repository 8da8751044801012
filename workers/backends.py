"""The two stores a worker talks to: the tables' store and the queue Redis.

``tables`` holds every key of a table (its log, its timers hash) and the due
index; it may be a Redis Cluster. ``queue`` holds RQ's queues, jobs and
registries: always a plain Redis. Nothing in workers/ assumes they are the
same server, and no command, script or transaction touches both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Stores:
    tables: object  # redis.Redis | redis.cluster.RedisCluster
    queue: object  # redis.Redis


def queue_url(config) -> str:
    """``ESCOBA_QUEUE_URL`` (the config's ``queue_url`` once it has one), else ``REDIS_URL``."""
    return (getattr(config, "queue_url", None) or os.environ.get("ESCOBA_QUEUE_URL")
            or config.redis_url)


def connect(config) -> Stores:
    """Connect to both stores as configured (``events.connection.connect`` where it exists:
    it finds out whether ``REDIS_URL`` is a cluster)."""
    try:
        from events.connection import connect as connect_backends
    except ImportError:
        connect_backends = None
    if connect_backends is not None:
        found = connect_backends(config)
        return Stores(found.tables, found.queue)
    from redis import Redis

    return Stores(Redis.from_url(config.redis_url), Redis.from_url(queue_url(config)))


__all__ = ["Stores", "connect", "queue_url"]
