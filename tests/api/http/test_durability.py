"""What the API answers when the store cannot vouch for a table: a move its replicas did not take
(ESCOBA_REPLICA_ACKS), and a table whose log went missing while this process had it cached.
Both topologies; neither the suite's plain Redis nor its cluster has replicas, so with acks on
and ESCOBA_UNREPLICATED=refuse no move is ever acknowledged there, and with accept (the default)
every move is acknowledged on its master alone, counted (tests/events/test_replication.py has a
cluster with replicas)."""

from __future__ import annotations

import dataclasses
import logging
import re
import time

import pytest

from api.app import create_app
from events import replication
from events.store import changes_channel, events_key, snapshot_key
from workers import index

from ..conftest import ADMIN, Client


@pytest.fixture
def two_apps(backends, config):
    """Two API processes on the topology: ``plain`` acknowledges at once, ``acks`` waits for a
    replica (none there) a fifth of a second, and refuses a move none holds."""
    plain = create_app(backends, config)
    acks = create_app(backends, dataclasses.replace(config, replica_acks=1, unreplicated="refuse"))
    acks.extensions["escoba"].service.store.ack_timeout = 0.2
    for app in (plain, acks):
        app.testing = True
    return plain, acks


def _metric(client: Client, name: str) -> float:
    text = client.http.get("/metrics").get_data(as_text=True)
    found = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def _subscribed(tables, table_id: str, cluster: bool):
    """A pub/sub connection on the node that owns the table, subscribed to its change notices."""
    pubsub = replication.node_client(tables, events_key(table_id)).pubsub(ignore_subscribe_messages=True)
    channel = changes_channel(table_id)
    pubsub.ssubscribe(channel) if cluster else pubsub.subscribe(channel)
    deadline = time.monotonic() + 5
    while pubsub.get_message(timeout=0.05) is None and not pubsub.subscribed and time.monotonic() < deadline:
        pass
    return pubsub


def _messages(pubsub, cluster: bool, wait: float = 0.5) -> list:
    out, deadline = [], time.monotonic() + wait
    while time.monotonic() < deadline:
        message = pubsub.get_sharded_message(timeout=0.05) if cluster else pubsub.get_message(timeout=0.05)
        if message is not None:
            out.append(message)
    return out


def test_a_move_no_replica_acknowledges_is_a_503_that_a_keyed_retry_confirms_and_nothing_follows_it(
        two_apps, backends, topology):
    plain, acks = (Client(app.test_client()) for app in two_apps)
    table = plain.create()
    tid, host = table["table_id"], table["token"]
    before = table["table"]["version"]
    late = _metric(acks, "escoba_unacknowledged_appends_total")
    pubsub = _subscribed(backends.tables, tid, topology.is_cluster)
    try:
        key = {"Idempotency-Key": "bot-1"}
        r = acks.move(tid, host, headers=key, type="add_bot", bot="tito")
        assert r.status_code == 503 and r.headers["Retry-After"]
        assert r.get_json()["error"]["code"] == "unavailable"
        assert r.get_json()["error"]["details"] == {"store": "unreplicated"}
        # the append is on the master (no replica took it), but nothing followed it: no notice, and
        # a reader that waits for replicas does not see it
        assert plain.view(tid)["version"] == before + 1
        assert acks.view(tid)["version"] == before
        assert _messages(pubsub, topology.is_cluster) == []
        # and its timers, which did not follow it either, are left to the reconciler's repair set
        repairs = backends.tables.smembers(index.repair_key(index.bucket_of(tid)))
        assert tid.encode() in repairs
        # a retry with the same key finds it and waits for the replicas again: still not held
        again = acks.move(tid, host, headers=key, type="add_bot", bot="tito")
        assert again.status_code == 503 and again.get_json()["error"]["code"] == "unavailable"
        assert plain.view(tid)["version"] == before + 1  # appended once
        assert _metric(acks, "escoba_unacknowledged_appends_total") == late + 2
        # without acks the same retry answers the first result, and a notice follows a new move
        first = plain.move(tid, host, headers=key, type="add_bot", bot="tito")
        assert first.status_code == 200 and first.get_json()["version"] == before + 1
        plain.ok(tid, host, type="add_bot", bot="carmen")
        notices = _messages(pubsub, topology.is_cluster, wait=2)
        assert any(b'"version":%d' % (before + 2) in m["data"] for m in notices)
    finally:
        pubsub.close()


@pytest.fixture
def app_on_topology(backends, config):
    app = create_app(backends, config)
    app.testing = True
    return app


def test_a_cached_table_whose_log_vanished_is_a_404_logged_and_counted(app_on_topology, backends, caplog):
    client = Client(app_on_topology.test_client())
    table = client.create()
    tid = table["table_id"]
    client.sit(tid)
    assert client.view(tid)["version"] == 2  # this process has version 2 cached
    vanished = _metric(client, 'escoba_lost_logs_total{kind="vanished"}')
    # what a failover to a replica that never synced does to the table's slot
    backends.tables.delete(events_key(tid), snapshot_key(tid))
    with caplog.at_level(logging.ERROR, logger="escoba.events"):
        r = client.http.get(f"/tables/{tid}")
    assert r.status_code == 404 and r.get_json()["error"]["code"] == "not_found"
    assert any(tid in rec.getMessage() and "gone" in rec.getMessage() for rec in caplog.records)
    assert _metric(client, 'escoba_lost_logs_total{kind="vanished"}') == vanished + 1
    log = client.http.get(f"/admin/tables/{tid}/log", headers=client.admin())
    assert log.status_code == 404 and log.get_json()["error"]["code"] == "not_found"


def test_a_cached_table_whose_log_went_back_is_served_as_the_store_has_it_logged_and_counted(
        app_on_topology, backends, caplog):
    client = Client(app_on_topology.test_client())
    table = client.create()
    tid, host = table["table_id"], table["token"]
    client.sit(tid)
    client.ok(tid, host, type="add_bot", bot="tito")
    assert client.view(tid)["version"] == 3
    behind = _metric(client, 'escoba_lost_logs_total{kind="behind"}')
    # a failover to a replica one move behind: the stream as it was at version 2
    kept = backends.tables.xrange(events_key(tid), max="2-0")
    backends.tables.delete(events_key(tid))
    for entry_id, fields in kept:
        backends.tables.xadd(events_key(tid), fields, id=entry_id)
    with caplog.at_level(logging.ERROR, logger="escoba.events"):
        assert client.view(tid)["version"] == 2
    assert any(tid in rec.getMessage() and "behind" in rec.getMessage() for rec in caplog.records)
    assert _metric(client, 'escoba_lost_logs_total{kind="behind"}') == behind + 1
    # and the table plays on from there: the next move is version 3 again
    assert client.ok(tid, host, type="add_bot", bot="carmen")["version"] == 3


def test_the_admin_log_of_a_table_with_no_events_is_a_404(client):
    r = client.http.get("/admin/tables/nosuchtb/log", headers={"Authorization": f"Bearer {ADMIN}"})
    assert r.status_code == 404 and r.get_json()["error"]["code"] == "not_found"


@pytest.mark.integration
def test_escoba_serve_starts_on_a_cluster_while_the_first_node_redis_url_names_is_down(redis_cluster, queue_server):
    from ...redis_servers import free_port
    from ..sockets.test_sockets_served import Served

    seeds = ",".join([f"redis://127.0.0.1:{free_port()}/0", *(f"127.0.0.1:{n.port}" for n in redis_cluster.nodes)])
    served = Served(seeds, ESCOBA_QUEUE_URL=queue_server.url, ESCOBA_RATE_LIMITS="off")
    try:
        assert served.get("/healthz")[0] == 200
        assert len(served.table()) == 8
    finally:
        served.stop()


def test_accepting_unreplicated_a_move_on_a_master_with_no_replica_is_acknowledged_counted_and_healthz_says_so(
        backends, config, topology):
    """ESCOBA_UNREPLICATED=accept (the default) with acks on a store with no replica: the move is
    answered 200 at once (no WAIT timeout a move once the master is known alone), shown, counted
    in escoba_unreplicated_acks_total, and /healthz answers 200 with "replication": "degraded"."""
    app = create_app(backends, dataclasses.replace(config, replica_acks=1))
    app.testing = True
    alone = Client(app.test_client())
    table = alone.create()
    tid, host = table["table_id"], table["token"]
    counted = _metric(alone, "escoba_unreplicated_acks_total")
    started = time.monotonic()
    for bot in ("tito", "carmen"):
        alone.ok(tid, host, type="add_bot", bot=bot)
    assert time.monotonic() - started < replication.ACK_TIMEOUT
    assert alone.view(tid)["version"] == table["table"]["version"] + 2
    assert _metric(alone, "escoba_unreplicated_acks_total") >= counted + 2
    health = alone.http.get("/healthz")
    assert health.status_code == 200
    assert health.get_json()["replication"] == "degraded"
    assert health.get_json()["unreplicated_masters"] == (3 if topology.is_cluster else 1)
