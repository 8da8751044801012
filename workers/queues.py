"""RQ's queues: their names, and which queue shard a table's jobs go to.

Every queue a worker takes jobs from is named in ``QUEUE_NAMES`` (highest priority
first): a job kind that wants a queue of its own (so that long jobs never hold up bot
turns) adds its name there, and every worker of every shard serves it.

The queue shards are the plain Redises of ``ESCOBA_QUEUE_URL``
(``events.connection.Backends.queues``); a table's jobs always go to
``shard_of(table_id, n)``, so they stay in order on one queue.
"""

from __future__ import annotations

from collections.abc import Sequence

from rq import Queue

from events.connection import queue_shard

QUEUE_NAME = "escoba"  # the timers, bots and notices
ANALYSIS_QUEUE = "analysis"  # game analyses (workers/analysis.py): taken only when escoba's is empty
QUEUE_NAMES: tuple[str, ...] = (QUEUE_NAME, ANALYSIS_QUEUE)


def queue_for(queue_redis, name: str = QUEUE_NAME) -> Queue:
    """The queue ``name`` on one queue Redis (never the tables' store)."""
    return Queue(name, connection=queue_redis)


def worker_queues(queue_redis) -> list[Queue]:
    """The queues a worker of this queue Redis serves, in priority order."""
    return [queue_for(queue_redis, name) for name in QUEUE_NAMES]


def shards(queue) -> tuple:
    """The queue shards given either one client or a sequence of them (shard N = the N-th)."""
    return tuple(queue) if isinstance(queue, Sequence) else (queue,)


def shard_of(table_id: str, count: int) -> int:
    return queue_shard(table_id, count)


def table_queue(queues: Sequence, table_id: str):
    """The queue Redis of ``table_id``'s shard."""
    return queues[queue_shard(table_id, len(queues))]


__all__ = ["ANALYSIS_QUEUE", "QUEUE_NAME", "QUEUE_NAMES", "queue_for", "shard_of", "shards", "table_queue",
           "worker_queues"]
