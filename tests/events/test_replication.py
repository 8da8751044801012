"""ESCOBA_REPLICA_ACKS on a Redis Cluster with a replica per master: the link between a table's
master and its replica is cut, then the master dies and the replica takes over.

With acks on and ESCOBA_UNREPLICATED=refuse, a move made while the link is cut is answered as
unavailable (NotAcknowledged, the API's 503), so the failover loses nothing that was acknowledged;
with acks off the same moves are acknowledged and the failover loses them: the reason for the
setting. With ESCOBA_UNREPLICATED=accept (the default) a master with no replica online
acknowledges on its own AOF, counted; a replica online but late is still waited for (503).

The cut: the master refuses the replication handshake (``ACL SETUSER default -psync -sync
-replconf``, the replica's own commands only) and drops its replica's connection (``CLIENT KILL
TYPE replica``); the replica keeps trying, the cluster bus still runs, so the replica is still
fit to be elected. (A kill -9 alone does not show it: the kernel still delivers what the
master wrote to its replica's socket. No iptables here, and ACLs need no root.)
"""

from __future__ import annotations

import os
import random
import signal
import time

import pytest

from events import autoplay, replication
from events.config import Config
from events.connection import cluster_client, connect, store_down
from events.replication import NotAcknowledged, replica_acks
from events.service import TableService
from events.store import events_key

pytestmark = pytest.mark.integration

ACK_TIMEOUT = 0.3


def _role(node) -> list:
    with node.client() as c:
        return c.execute_command("ROLE")


def _until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s: {what() if callable(what) else what}")


def _master_and_replica(cluster, client, table_id: str):
    port = client.get_node_from_key(events_key(table_id)).port
    master = next(n for n in cluster.nodes if n.port == port)
    replica = next(n for n in cluster.nodes
                   if _role(n)[0] == b"slave" and int(_role(n)[2]) == port)
    return master, replica


def _caught_up(master, replica) -> None:
    """Until the replica holds every write the master has (with no acks asked, a loaded machine's
    replica may still be behind the setup's moves when the link is cut: a CI run lost them all)."""
    with master.client() as m, replica.client() as r:
        wanted = m.info("replication")["master_repl_offset"]
        _until(lambda: r.info("replication").get("slave_repl_offset", -1) >= wanted, 10, "the replica caught up")


def _cut(master, replica) -> None:
    with master.client() as c:
        c.execute_command("ACL", "SETUSER", "default", "-psync", "-sync", "-replconf")
        c.execute_command("CLIENT", "KILL", "TYPE", "replica")
    with replica.client() as c:
        _until(lambda: c.info("replication")["master_link_status"] == "down", 5, "the replica's link down")


def _heal(master, replica) -> None:
    """The cut undone. A handshake the replica began while REPLCONF was refused and finished with
    its PSYNC after the ACL was restored leaves a link whose acknowledgements the master never
    counts (INFO shows the replica at port 0, its offset stuck): such a link is dropped and made
    again. (An artefact of cutting with ACLs; a network that heals redoes the handshake whole.)"""
    with master.client() as c:
        c.execute_command("ACL", "SETUSER", "default", "+psync", "+sync", "+replconf")

        def whole() -> bool:
            replicas = [v for k, v in c.info("replication").items() if k.startswith("slave")
                        and isinstance(v, dict)]
            if replicas and replicas[0]["port"] == 0:
                c.execute_command("CLIENT", "KILL", "TYPE", "replica")
                return False
            with replica.client() as r:
                return bool(replicas) and r.info("replication")["master_link_status"] == "up"

        _until(whole, 20, "the replica's link up again, whole")


def _fail_over(master, replica) -> None:
    """kill -9 of the master; the cluster elects its replica (cluster-node-timeout 3 s)."""
    master.kill()
    _until(lambda: _role(replica)[0] == b"master", 30, "the replica promoted")


def _play_one(service, table_id, rng, key):
    state = service.load(table_id)
    command, actor = autoplay.next_command(state, rng)
    return service.execute(table_id, command, actor=actor, idempotency_key=key)


def _setup(cluster, acks: int, unreplicated: str = "refuse"):
    client = cluster_client(cluster.seeds_url, wait=10)
    # the setup's moves wait as long as a loaded machine's replica may take (a busy CI machine
    # took longer than ACK_TIMEOUT on one of them); the test's own moves use ACK_TIMEOUT
    patient = TableService(client, rng=random.Random(5), replica_acks=acks, ack_timeout=10.0,
                           unreplicated=unreplicated)
    tid = autoplay.new_table(patient)
    acknowledged: dict[int, dict] = {}

    def note(outcome):
        acknowledged.update((r["version"], r) for r in outcome.records)

    autoplay.play(patient, tid, random.Random(5), until_version=30, on_outcome=note)
    service = TableService(client, rng=random.Random(5), replica_acks=acks, ack_timeout=ACK_TIMEOUT,
                           unreplicated=unreplicated)
    return client, service, tid, acknowledged


def _records_after_failover(cluster, table_id, within: float = 20.0) -> dict[int, dict]:
    """The table's log as a new reader finds it once the cluster agrees on the promoted replica.

    Just after the promotion, the node a new client maps its slots from may not have heard of it
    yet and still names the killed master: the client fails fast there (events.connection's few
    tries, a CI run's ConnectionError) and a reader asks again, as the API's callers and workers
    do. REDIS_URL lists every node: the first, maybe the dead master, is skipped."""
    deadline = time.monotonic() + within
    while True:
        fresh = TableService(cluster_client(cluster.seeds_url, wait=10), cache_size=0, snapshot_every=0)
        try:
            return {r["version"]: r for r in fresh.records(table_id)}
        except Exception as exc:
            if not store_down(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)
        finally:
            fresh.redis.close()


def test_refusing_unreplicated_a_cut_replica_link_answers_unavailable_and_a_failover_loses_no_acknowledged_move(
        replicated):
    client, service, tid, acknowledged = _setup(replicated, acks=1)
    try:
        assert max(acknowledged) >= 30
        master, replica = _master_and_replica(replicated, client, tid)
        _cut(master, replica)

        command, actor = autoplay.next_command(service.load(tid), random.Random(7))
        for _ in range(2):  # a move, and its retry with the same key: appended once, never acknowledged
            started = time.monotonic()
            with pytest.raises(NotAcknowledged):
                service.execute(tid, command, actor=actor, idempotency_key="a")
            assert time.monotonic() - started < ACK_TIMEOUT + 2  # bounded: the timeout, not forever
        started = time.monotonic()
        with pytest.raises(NotAcknowledged):  # and the next move, at once: the master is known alone
            _play_one(service, tid, random.Random(8), "b")
        assert time.monotonic() - started < ACK_TIMEOUT
        # a view shows none of them: a reader of this store sees only acknowledged versions
        viewer = TableService(client, cache_size=0, snapshot_every=0, replica_acks=1)
        assert viewer.load(tid).version == max(acknowledged)
        assert service.load(tid).version == max(acknowledged)  # this process's own cache too
        with master.client() as c:  # the moves stand on the master, which alone holds them
            standing = int(c.xrevrange(events_key(tid), count=1)[0][0].split(b"-")[0])
        assert standing > max(acknowledged)

        _fail_over(master, replica)
        after = _records_after_failover(replicated, tid)
        # every acknowledged move is there, as acknowledged; the two unacknowledged ones are not
        assert all(after.get(v) == record for v, record in acknowledged.items())
        assert max(after) == max(acknowledged)

        # the old master comes back as the new master's replica: moves are acknowledged again. The
        # lost move's key, asked again, makes it anew (or, when the old master's own copy came
        # back in a restart race, finds it: the retry says whether the move stands), answered
        # only once a replica holds it, and every acknowledged move is still there
        master.start()
        _until(lambda: _role(master)[0] == b"slave" and _role(master)[3] == b"connected", 30,
               "the old master back as a replica")
        outcome = _until(lambda: _retry(service, tid, command, actor, "a"), 20,
                         lambda: f"a move acknowledged after the failover ({getattr(_retry, 'last', None)!r})")
        assert outcome.version > max(acknowledged)
        now = _records_after_failover(replicated, tid)
        assert outcome.version in now and all(now.get(v) == record for v, record in acknowledged.items())
        if not outcome.repeated:
            assert now[outcome.version] == outcome.records[-1]
    finally:
        client.close()


def _retry(service, tid, command, actor, key):
    try:
        return service.execute(tid, command, actor=actor, idempotency_key=key)
    except Exception as exc:  # the cluster settling (MOVED, connection refused): again
        _retry.last = exc  # said if it never settles
        return None


def test_a_keyed_retry_once_the_link_is_back_answers_the_first_result_and_sends_the_notice_then(replicated):
    client, service, tid, acknowledged = _setup(replicated, acks=1)
    hooked = []
    service.on_change = lambda table_id, state, records: hooked.append((state.version, len(records)))
    try:
        master, replica = _master_and_replica(replicated, client, tid)
        pubsub = replication_pubsub(client, tid)
        _cut(master, replica)
        command, actor = autoplay.next_command(service.load(tid), random.Random(7))
        with pytest.raises(NotAcknowledged):
            service.execute(tid, command, actor=actor, idempotency_key="a")
        assert _notices(pubsub) == [] and hooked == []  # nothing followed the unacknowledged append

        _heal(master, replica)  # the link back: the replica resyncs and holds the move
        # (the replica's first acknowledgement after the resync may take longer than ACK_TIMEOUT)
        outcome = _until(lambda: _retry(service, tid, command, actor, "a"), 10,
                         lambda: f"the retry acknowledged ({getattr(_retry, 'last', None)!r})")
        assert outcome.repeated and outcome.version > max(acknowledged)
        # now acknowledged: the notice and the timers hook it had not had follow it
        assert [n["version"] for n in _notices(pubsub, wait=3)] == [outcome.version]
        assert hooked == [(outcome.version, 1)]
        pubsub.close()
    finally:
        client.close()


def replication_pubsub(client, table_id):
    from events.replication import node_client
    from events.store import changes_channel

    pubsub = node_client(client, events_key(table_id)).pubsub(ignore_subscribe_messages=True)
    pubsub.ssubscribe(changes_channel(table_id))
    _until(lambda: pubsub.get_sharded_message(timeout=0.05) is None and pubsub.subscribed, 5, "subscribed")
    return pubsub


def _notices(pubsub, wait: float = 0.5) -> list[dict]:
    import json

    out, deadline = [], time.monotonic() + wait
    while time.monotonic() < deadline:
        message = pubsub.get_sharded_message(timeout=0.05)
        if message is not None:
            out.append(json.loads(message["data"]))
    return out


def test_without_acks_the_moves_acknowledged_over_a_cut_link_are_lost_in_a_failover(replicated):
    client, service, tid, acknowledged = _setup(replicated, acks=0)
    try:
        master, replica = _master_and_replica(replicated, client, tid)
        _caught_up(master, replica)  # what the setup acknowledged is on both: only the cut's moves may go
        _cut(master, replica)
        before = max(acknowledged)
        rng = random.Random(7)
        for key in ("a", "b"):
            outcome = _play_one(service, tid, rng, key)  # acknowledged: the master alone has it
            acknowledged.update((r["version"], r) for r in outcome.records)
        assert max(acknowledged) > before

        _fail_over(master, replica)
        after = _records_after_failover(replicated, tid)
        lost = sorted(v for v in acknowledged if after.get(v) != acknowledged[v])
        assert lost == list(range(before + 1, max(acknowledged) + 1))
        assert max(after) == before
    finally:
        client.close()


def test_after_a_manual_failover_an_acknowledged_append_follows_moved_to_the_new_master(replicated):
    client, service, tid, acknowledged = _setup(replicated, acks=1)
    try:
        master, replica = _master_and_replica(replicated, client, tid)
        command, actor = autoplay.next_command(service.load(tid), random.Random(9))
        for _ in range(4):  # coordinated: the replica catches up first (asked just after the cluster
            with replica.client() as c:  # formed, the first may time out, and is asked again)
                c.execute_command("CLUSTER", "FAILOVER")
            try:
                _until(lambda: _role(replica)[0] == b"master", 7, "the replica promoted")
                break
            except AssertionError:
                continue
        _until(lambda: _role(master)[0] == b"slave" and _role(master)[3] == b"connected", 10,
               "the old master the new one's replica")
        # the client's map still names the old master: the append (decided on the cached state, no
        # read first) is answered MOVED there, and the pair goes to the new master, whose replica
        # (the old master) acknowledges it
        assert client.get_node_from_key(events_key(tid)).port == master.port
        outcome = service.execute(tid, command, actor=actor)
        assert outcome.version > max(acknowledged) and not outcome.repeated
        assert client.get_node_from_key(events_key(tid)).port == replica.port
        assert _records_after_failover(replicated, tid)[outcome.version] == outcome.records[-1]
    finally:
        client.close()


def test_the_default_waits_for_one_replica_where_every_master_has_one(replicated, redis_cluster, queue_server):
    with_replicas = connect(Config(redis_url=replicated.url, queue_url=queue_server.url), wait=10)
    without = connect(Config(redis_url=redis_cluster.url, queue_url=queue_server.url), wait=10)
    try:
        assert replica_acks(None, with_replicas.tables) == 1
        assert replica_acks(None, without.tables) == 0  # the suite's cluster: no replica to wait for
        assert replica_acks(2, without.tables) == 2  # the setting wins
        assert replica_acks(None, queue_server.client()) == 0  # one Redis
        with pytest.raises(ValueError):
            replica_acks(-1, with_replicas.tables)
    finally:
        with_replicas.close()
        without.close()


def test_acknowledged_moves_on_a_healthy_replicated_cluster_are_on_the_replica_when_answered(replicated):
    client, service, tid, acknowledged = _setup(replicated, acks=1)
    try:
        _, replica = _master_and_replica(replicated, client, tid)
        with replica.client() as c:
            c.execute_command("READONLY")
            last = c.xrevrange(events_key(tid), count=1)[0][0]
        assert int(last.split(b"-")[0]) == max(acknowledged)
    finally:
        client.close()


def test_accepting_unreplicated_a_master_with_no_replica_online_acknowledges_alone_counted_until_one_is_back(
        replicated):
    """ESCOBA_UNREPLICATED=accept (the default): over a cut link the master has no replica online,
    so a move is acknowledged on its AOF alone and counted; only the first waits the timeout (the
    master is then known alone), views show the moves, /healthz's count says one master is alone;
    once the replica is back the next move waits for it again and nothing more is counted."""
    client, service, tid, acknowledged = _setup(replicated, acks=1, unreplicated="accept")
    try:
        master, replica = _master_and_replica(replicated, client, tid)
        assert replication.unreplicated_masters(client, 1) == 0
        _cut(master, replica)
        before = replication.UNREPLICATED.total()
        rng, took = random.Random(7), []
        for key in ("a", "b", "c"):
            started = time.monotonic()
            outcome = _play_one(service, tid, rng, key)
            took.append(time.monotonic() - started)
            acknowledged.update((r["version"], r) for r in outcome.records)
        assert replication.UNREPLICATED.total() - before == 3
        assert max(took[1:]) < ACK_TIMEOUT, took  # no WAIT timeout a move on a master known alone
        viewer = TableService(client, cache_size=0, snapshot_every=0, replica_acks=1)
        assert viewer.load(tid).version == max(acknowledged)
        time.sleep(replication.HEALTH_FOR)
        assert replication.unreplicated_masters(client, 1) == 1

        _heal(master, replica)
        counted = replication.UNREPLICATED.total()
        outcome = _until(lambda: _retry(service, tid, *autoplay.next_command(service.load(tid), rng), "d"), 10,
                         lambda: f"a move after the heal ({getattr(_retry, 'last', None)!r})")
        assert replication.UNREPLICATED.total() == counted  # acknowledged by the replica, not alone
        with replica.client() as c:
            c.execute_command("READONLY")
            last = c.xrevrange(events_key(tid), count=1)[0][0]
        assert int(last.split(b"-")[0]) == outcome.version
        # /healthz's count comes back to 0 by itself (read at most every HEALTH_FOR s; on a loaded CI a
        # master's ROLE may list its replica a moment after the replica first acknowledged)
        _until(lambda: replication.unreplicated_masters(client, 1) == 0, 10 + replication.HEALTH_FOR,
               lambda: f"{replication.unreplicated_masters(client, 1)} masters still alone after the heal")
    finally:
        client.close()


def test_a_replica_online_but_late_is_waited_for_even_when_accepting_unreplicated(replicated):
    """Only a master with no replica online acknowledges alone: a replica its master still lists
    (stopped here with SIGSTOP: it answers nothing, its link stays up) is waited for, and the move
    is answered unavailable, uncounted."""
    client, service, tid, _ = _setup(replicated, acks=1, unreplicated="accept")
    try:
        _, replica = _master_and_replica(replicated, client, tid)
        before = replication.UNREPLICATED.total()
        os.kill(replica.proc.pid, signal.SIGSTOP)
        try:
            for key in ("a", "b"):
                with pytest.raises(NotAcknowledged):
                    _play_one(service, tid, random.Random(7), key)
        finally:
            os.kill(replica.proc.pid, signal.SIGCONT)
        assert replication.UNREPLICATED.total() == before
    finally:
        client.close()
