"""events/connection.py: the topology is found at start, and refused when RQ would land on a cluster."""

from __future__ import annotations

import dataclasses
import time

import pytest
import redis
from redis.cluster import RedisCluster

from events.config import Config
from events.connection import (
    Connection,
    TopologyError,
    _without_db,
    connect,
    from_clients,
    is_cluster,
    seeds,
)


def test_queue_url_is_read_and_defaults_to_empty():
    assert Config.from_env({}).queue_url == ""
    assert Config.from_env({"ESCOBA_QUEUE_URL": "redis://q:6379/0"}).queue_url == "redis://q:6379/0"


def test_from_clients_on_one_store_shares_it(fake_redis):
    b = from_clients(fake_redis)
    assert b.tables is fake_redis and b.queue is fake_redis and not b.cluster


def test_connect_finds_a_topology(topology):
    b = topology.backends()
    try:
        assert b.cluster is topology.is_cluster
        assert isinstance(b.tables, RedisCluster) is topology.is_cluster
        assert is_cluster(b.tables) is topology.is_cluster
        assert not is_cluster(b.queue)
        if topology.is_cluster:
            assert b.queue is not b.tables
            assert int(b.queue.info("cluster")["cluster_enabled"]) == 0
        else:
            assert b.queue is b.tables  # one Redis: one client, one pool
        assert b.tables.ping() and b.queue.ping()
    finally:
        b.close()


@pytest.mark.integration
def test_a_cluster_without_a_queue_url_is_refused_saying_what_to_set(redis_cluster):
    with pytest.raises(TopologyError, match="set ESCOBA_QUEUE_URL"):
        connect(Config(redis_url=redis_cluster.url), wait=2)


@pytest.mark.integration
def test_a_cluster_at_the_queue_url_is_refused(redis_cluster, redis_server):
    with pytest.raises(TopologyError, match="ESCOBA_QUEUE_URL .* is a Redis Cluster node"):
        connect(Config(redis_url=redis_server.url, queue_url=redis_cluster.nodes[1].url), wait=2)
    with pytest.raises(TopologyError, match="ESCOBA_QUEUE_URL"):
        connect(Config(redis_url=redis_cluster.url, queue_url=redis_cluster.url), wait=2)


@pytest.mark.integration
def test_any_node_names_the_cluster(redis_cluster, queue_server):
    for node in redis_cluster.nodes:
        b = connect(Config(redis_url=node.url, queue_url=queue_server.url), wait=2)
        try:
            assert b.cluster and len(b.tables.get_primaries()) == 3
        finally:
            b.close()


@pytest.mark.integration
def test_an_unreachable_redis_is_a_clear_connection_error(redis_server):
    import redis

    from ..redis_servers import free_port

    config = dataclasses.replace(Config(), redis_url=f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(redis.ConnectionError, match="not reachable"):
        connect(config, wait=0.5)


def test_urls_lose_only_a_trailing_db():
    assert _without_db("redis://h:6379/0") == "redis://h:6379"
    assert _without_db("redis://h:6379") == "redis://h:6379"
    assert _without_db("h:6379/3") == "h:6379"
    assert _without_db("redis://u:p@h:6379/12") == "redis://u:p@h:6379"



def test_every_client_the_seam_builds_checks_its_connections_with_the_os_poll(topology):
    """Both topologies' pools hand out ``events.connection.Connection`` (the cheap checkout check)."""
    b = topology.backends()
    try:
        b.tables.set("{conn}:probe", "1")
        if topology.is_cluster:
            pools = [n.redis_connection.connection_pool for n in b.tables.get_nodes() if n.redis_connection]
        else:
            pools = [b.tables.connection_pool]
        assert pools and all(p.connection_class is Connection for p in pools)
    finally:
        b.close()


def _answer(conn):
    try:
        return conn.can_read()
    except redis.ConnectionError:
        return "closed"


@pytest.mark.integration
def test_the_cheap_check_answers_as_redis_pys_own_idle_pending_and_closed(redis_server):
    """The OS poll says 'nothing waiting' only when redis-py's own check would: a reply nobody
    read and a connection the server closed are still seen."""
    killer = redis.Redis.from_url(redis_server.url_db(5))
    try:
        for cls in (Connection, redis.Connection):
            conn = cls(host="127.0.0.1", port=redis_server.port, db=5)
            conn.connect()
            assert _answer(conn) is False, cls  # idle
            conn.send_command("CLIENT", "ID")
            client_id = conn.read_response()
            conn.send_command("PING")  # a reply nobody read
            deadline = time.monotonic() + 5
            while _answer(conn) is False and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _answer(conn) is True, cls
            assert conn.read_response() in (b"PONG", "PONG")
            killer.execute_command("CLIENT", "KILL", "ID", client_id)
            deadline = time.monotonic() + 5
            while _answer(conn) is False and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _answer(conn) in (True, "closed"), cls  # a closed peer reads as ready, or is named
            conn.disconnect()
    finally:
        killer.close()


def test_redis_url_may_list_seed_nodes_taking_the_first_ones_scheme_and_credentials():
    assert seeds("redis://a:1/0") == ["redis://a:1/0"]
    assert seeds("redis://u:p@a:1/0, b:2 ,redis://c:3") == ["redis://u:p@a:1/0", "redis://u:p@b:2/0", "redis://c:3"]
    assert seeds("rediss://a:1,b:2") == ["rediss://a:1", "rediss://b:2"]
    with pytest.raises(TopologyError):
        seeds("a:1,b:2")  # the first must be a whole URL: the others take its scheme
    assert Config.from_env({}).replica_acks is None
    assert Config.from_env({"ESCOBA_REPLICA_ACKS": "2"}).replica_acks == 2
    assert Config.from_env({"ESCOBA_REPLICA_ACKS": ""}).replica_acks is None


def test_a_cluster_is_found_and_used_while_the_first_seed_node_is_down(redis_cluster, queue_server):
    from ..redis_servers import free_port

    down = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    others = ",".join(f"127.0.0.1:{node.port}" for node in redis_cluster.nodes[1:])
    b = connect(Config(redis_url=f"{down},{others}", queue_url=queue_server.url), wait=5)
    try:
        assert b.cluster and len(b.tables.get_primaries()) == 3
        b.tables.set("table:{seed}:probe", "1")
        assert b.tables.get("table:{seed}:probe") == b"1"
    finally:
        b.close()


def test_one_redis_among_seeds_is_the_first_that_answers(redis_server):
    from ..redis_servers import free_port

    b = connect(Config(redis_url=f"redis://127.0.0.1:{free_port()}/0,{redis_server.url}"), wait=5)
    try:
        assert not b.cluster and b.tables is b.queue
        assert b.tables.connection_pool.connection_kwargs["port"] == redis_server.port
        assert b.tables.ping()
    finally:
        b.close()


# --- queue shards ------------------------------------------------------------------------

def test_queue_urls_are_the_comma_separated_shards():
    assert Config().queue_urls == ()
    assert Config(queue_url="redis://q:6379/0").queue_urls == ("redis://q:6379/0",)
    assert Config(queue_url=" redis://a:1/0, redis://b:2/0 ,").queue_urls == ("redis://a:1/0", "redis://b:2/0")


def test_a_table_keeps_its_shard_and_one_shard_is_shard_zero():
    from redis.crc import key_slot

    from events.connection import queue_shard

    for tid in ("abcdEFGH", "_-x0y1z2", "AAAAAAAA"):
        assert queue_shard(tid, 1) == 0
        assert queue_shard(tid, 4) == key_slot(f"table:{{{tid}}}:timers".encode()) % 4 == queue_shard(tid, 4)


def test_from_clients_takes_the_shards(fake_redis):
    import fakeredis

    shards = [fakeredis.FakeRedis(server=fakeredis.FakeServer()) for _ in range(2)]
    b = from_clients(fake_redis, shards)
    assert b.queues == tuple(shards) and b.queue is shards[0]
    from events.connection import queue_shard

    assert b.queue_of("abcdEFGH") is shards[queue_shard("abcdEFGH", 2)]
    assert from_clients(fake_redis).queues == (fake_redis,)


def test_store_down_tells_a_store_away_from_a_bug():
    from events.connection import store_down

    assert store_down(redis.ConnectionError("refused")) and store_down(redis.TimeoutError())
    assert store_down(redis.BusyLoadingError("loading")) and store_down(redis.ReadOnlyError("READONLY"))
    assert store_down(redis.ResponseError("Error running script: CLUSTERDOWN The cluster is down"))
    assert not store_down(redis.ResponseError("WRONGTYPE")) and not store_down(ValueError("a bug"))


def test_store_down_knows_a_cluster_that_cannot_be_reached_as_the_cluster_client_says_it():
    """redis-py's cluster client says so outside RedisError's connection family (the API answered
    500 for a cluster with every node stopped, and a worker took it for a bug)."""
    from redis import exceptions as errors

    from events.connection import store_down

    assert store_down(errors.RedisClusterUnreachableError("Redis Cluster cannot be connected. Please provide..."))
    assert store_down(errors.SlotNotCoveredError('Slot "12" is not covered by the cluster.'))
    assert store_down(errors.ClusterError("TTL exhausted."))
    # redis-py 5's words for the same, on the base class
    assert store_down(errors.RedisClusterException("Redis Cluster cannot be connected. Please provide at least"))
    # the same base class for a bug of ours is not a store away
    assert not store_down(errors.RedisClusterException("ASK/MOVED in a transaction: keys in more than one slot"))


@pytest.mark.integration
def test_connect_gives_every_queue_shard(topology, tmp_path):
    from ..redis_servers import start_plain

    extra = start_plain(tmp_path / "shard1")
    try:
        first = topology.queue_url
        b = connect(topology.config(queue_url=f"{first},{extra.url}"), wait=5)
        try:
            assert len(b.queues) == 2 and b.queue is b.queues[0]
            assert b.queues[1].connection_pool.connection_kwargs["port"] == extra.port
            if not topology.is_cluster:
                assert b.queues[0] is b.tables  # REDIS_URL as a shard: the same client
            assert all(q.ping() for q in b.queues)
        finally:
            b.close()
        with pytest.raises(TopologyError, match="twice"):
            connect(topology.config(queue_url=f"{extra.url},{extra.url}"), wait=5)
    finally:
        extra.stop()
