"""A job that finds its table moved on follows the log only once the replicas hold it (issue 28:
"timers follow only acknowledged appends").

The case: a bot's append goes unacknowledged (its replica away), the job is retried, and finds the
table moved on, by that very append. Refreshing the table's timers from it would have the next bot
turn played on a move a failover can take back, and the next, and so on while the replica is away.
With replica acks on, the job first waits for the replicas to hold the log (events/store.py
``confirm_log``) and, when they do not, is retried later like a job whose store is away.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from events import autoplay
from events.config import Config
from events.replication import NotAcknowledged
from events.store import confirmed_key
from workers import context, jobs, scheduling

from ..events.test_replication import _cut, _heal, _master_and_replica, _setup, _until

pytestmark = pytest.mark.integration


def test_a_job_finding_its_table_moved_on_by_an_unacknowledged_append_waits_for_the_replicas(replicated):
    client, service, tid, _ = _setup(replicated, acks=1)
    # refuse: a master with no replica online (the cut link) acknowledges nothing
    context.configure(dataclasses.replace(Config(), replica_acks=1, unreplicated="refuse"), tables=client, queues=())
    try:
        master, replica = _master_and_replica(replicated, client, tid)
        before = service.load(tid).version
        _cut(master, replica)
        command, actor = autoplay.next_command(service.load(tid), random.Random(7))
        with pytest.raises(NotAcknowledged):  # the append stands on the master, unacknowledged
            service.execute(tid, command, actor=actor, idempotency_key="k")
        moved = service.load(tid, acknowledged=False).version
        assert moved > before and service.load(tid).version == before  # shown to none
        timers_before = scheduling.read_timers(client, tid)

        # the job of version `before`, retried: the table moved on, by a move nobody was answered
        with pytest.raises(RedisConnectionError):
            jobs.bot_turn(tid, before)
        assert scheduling.read_timers(client, tid) == timers_before  # nothing followed it

        _heal(master, replica)
        # once the replicas hold the log, the same job follows it (the timers the move calls for)
        answer = _until(lambda: _quietly(jobs.bot_turn, tid, before), 15, "the job's retry confirmed")
        assert answer == "stale"
        assert client.get(confirmed_key(tid)) in (str(moved), str(moved).encode())
    finally:
        context.configure(None, None)
        client.close()


def _quietly(job, *args):
    try:
        return job(*args)
    except RedisConnectionError:  # the link's first acknowledgements after a resync may be late
        return None
