"""docker-compose.cluster.yml cannot run here: it is checked against the code it deploys, and
its Redis command lines are run for real (the seven nodes' flags, the one-shot that joins them
as three masters with a replica each and a spare) on local ports, so a flag redis-server 7
refuses, or a create that leaves slots unassigned or a master without its replica, fails here;
and a master killed there has its replica promoted and, by replica migration, the spare as its
own replica."""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from events.config import Config
from events.connection import connect
from events.replication import replica_acks

from ..redis_servers import RedisClusterServers, RedisServer, free_port, redis_binary, redis_cli

ROOT = Path(__file__).resolve().parents[2]
NODES = tuple(f"redis-{i}" for i in range(1, 8))  # three masters, their replicas and a spare


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.cluster.yml").read_text())


def test_seven_nodes_a_create_one_shot_a_queue_two_apis_two_workers():
    services = compose()["services"]
    unprofiled = {name for name, service in services.items() if not service.get("profiles")}
    assert unprofiled == {*NODES, "cluster-create", "queue", "api-1", "api-2", "worker-1", "worker-2"}
    for name in NODES:
        command = " ".join(services[name]["command"])
        assert "--cluster-enabled yes" in command
        assert "--appendonly yes" in command and "--appendfsync always" in command
        assert "--maxmemory-policy noeviction" in command
        assert "--latency-monitor-threshold 50" in command  # RedisLatencySpikes
        assert f"--cluster-announce-hostname {name}" in command
        # the spare goes to a master a failover left without a replica (docs/operations.md)
        assert "--cluster-allow-replica-migration yes" in command
        assert "--cluster-migration-barrier" not in command  # Redis's default, 1: a master keeps one
        # 0 would let a replica that never synced be elected (docs/operations.md)
        factor = services[name]["command"].index("--cluster-replica-validity-factor")
        assert int(services[name]["command"][factor + 1]) > 0
        assert services[name]["healthcheck"]["test"][-1] == "ping"
        assert any(v.endswith(":/data") for v in services[name]["volumes"])
    queue = " ".join(services["queue"]["command"])
    assert "--cluster-enabled" not in queue and "--appendfsync always" in queue
    assert "--latency-monitor-threshold 50" in queue
    create = services["cluster-create"]
    assert create["restart"] == "no"
    assert all(create["depends_on"][m]["condition"] == "service_healthy" for m in NODES)
    script = create["command"][-1]
    assert "--cluster-replicas 1" in script and "--cluster-yes" in script
    assert all(f"{m}:6379" in script for m in NODES)
    assert {f"{m}-data" for m in NODES} | {"queue-data"} <= set(compose()["volumes"])


def test_apis_and_workers_point_at_a_node_and_the_queue_and_wait_for_the_create():
    services = compose()["services"]
    read = set(re.findall(r'env\.get\("([A-Z_]+)"', (ROOT / "events/config.py").read_text()))
    for name in ("api-1", "api-2", "worker-1", "worker-2"):
        service = services[name]
        env = service["environment"]
        assert set(env) == read, f"{name}: compose sets {set(env) ^ read} differently from events/config.py"
        # every node a seed: a process starts while any one is down
        assert {url.split("//")[-1].split(":")[0] for url in env["REDIS_URL"].split(",")} == set(NODES)
        assert env["ESCOBA_QUEUE_URL"].startswith("redis://queue:")
        assert env["ESCOBA_REPLICA_ACKS"] == "${ESCOBA_REPLICA_ACKS:-1}"  # a move waits for a replica
        assert env["ESCOBA_UNREPLICATED"] == "${ESCOBA_UNREPLICATED:-accept}"  # or its master's AOF, if alone
        assert service["depends_on"]["cluster-create"]["condition"] == "service_completed_successfully"
        assert service["depends_on"]["queue"]["condition"] == "service_healthy"
    assert services["api-1"]["command"][:2] == ["escoba", "serve"]
    assert {services["api-1"]["ports"][0], services["api-2"]["ports"][0]} == {"8000:8000", "8001:8000"}
    assert services["worker-1"]["command"] == services["worker-2"]["command"] == ["escoba", "worker",
                                                                                "--metrics-port", "9100"]


def test_the_single_redis_deployment_stays_as_it_was():
    single = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert {name for name, service in single.items() if not service.get("profiles")} == {"redis", "api", "worker"}
    assert "--cluster-enabled" not in " ".join(single["redis"]["command"])


def test_the_files_redis_commands_make_a_cluster_the_server_finds(tmp_path):
    if redis_binary() is None or redis_cli() is None:
        pytest.skip("redis-server and redis-cli are needed to run the compose file's commands")
    services = compose()["services"]
    nodes, ports = [], {}
    try:
        for name in NODES:
            args = list(services[name]["command"][1:])
            # the compose network's names become this machine's address; each node its own dir and port
            args[args.index("--cluster-announce-hostname") + 1] = "127.0.0.1"
            ports[name] = free_port()
            node = RedisServer(ports[name], tmp_path / name,
                               extra=(*args, "--cluster-port", str(free_port()),
                                      "--cluster-config-file", str(tmp_path / name / "nodes.conf")))
            node.durable = False
            nodes.append(node.start())
        script = services["cluster-create"]["command"][-1]
        for name, port in ports.items():
            script = script.replace(f"-h {name}", f"-h 127.0.0.1 -p {port}")
            script = script.replace(f"{name}:6379", f"127.0.0.1:{port}")
        script = script.replace("redis-cli", shlex.quote(redis_cli()))
        for _ in range(2):  # and again, as on a restart: the one-shot leaves a made cluster alone
            subprocess.run(["sh", "-c", script], check=True, capture_output=True, timeout=60)
        RedisClusterServers(nodes).wait_ok(replicas=1)
        replicas_of = {n.port: [r for r in nodes if _role(r)[0] == b"slave" and int(_role(r)[2]) == n.port]
                       for n in nodes if _role(n)[0] == b"master"}
        assert sorted(map(len, replicas_of.values())) == [1, 1, 2]  # three masters, one with the spare
        queue = RedisServer(free_port(), tmp_path / "queue").start()
        nodes.append(queue)
        # a seed down (a master with one replica): REDIS_URL's others find the cluster once its
        # replica took over, and the spare migrates to the promoted master
        victim = next(n for n in nodes if len(replicas_of.get(n.port, ())) == 1)
        replica = replicas_of[victim.port][0]
        victim.stop()
        _until(lambda: _role(replica)[0] == b"master" and _cluster_ok(replica), 40)
        _until(lambda: len(_role(replica)[2]) == 1, 40)  # ROLE lists the migrated spare, online
        env = services["api-1"]["environment"]
        redis_url = env["REDIS_URL"]
        for name, port in ports.items():
            redis_url = redis_url.replace(f"{name}:6379", f"127.0.0.1:{port}")
        acks = int(re.fullmatch(r"\$\{ESCOBA_REPLICA_ACKS:-(\d+)\}", env["ESCOBA_REPLICA_ACKS"]).group(1))
        config = Config.from_env({"REDIS_URL": redis_url, "ESCOBA_QUEUE_URL": queue.url,
                                  "ESCOBA_REPLICA_ACKS": str(acks)})
        backends = connect(config, wait=5)
        try:
            assert backends.cluster and len(backends.tables.get_primaries()) == 3
            backends.tables.set("table:{x}:probe", "1")
            assert backends.tables.get("table:{x}:probe") == b"1"
            assert replica_acks(None, backends.tables) == 1  # every master has a replica again
            assert replica_acks(config.replica_acks, backends.tables) == 1
        finally:
            backends.close()
    finally:
        for node in nodes:
            node.stop()


def _role(node) -> list:
    with node.client() as c:
        return c.execute_command("ROLE")


def _cluster_ok(node) -> bool:
    with node.client() as c:
        info = c.execute_command("CLUSTER", "INFO")
    return b"cluster_state:ok" in info


def _until(check, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the cluster did not fail over"
        time.sleep(0.2)
