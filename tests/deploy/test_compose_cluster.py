"""docker-compose.cluster.yml cannot run here: it is checked against the code it deploys, and
its Redis command lines are run for real (the three masters' flags, the one-shot that joins
them) on local ports, so a flag redis-server 7 refuses, or a create that leaves slots
unassigned, fails here."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from events.config import Config
from events.connection import connect

from ..redis_servers import RedisClusterServers, RedisServer, free_port, redis_binary, redis_cli

ROOT = Path(__file__).resolve().parents[2]
MASTERS = ("redis-1", "redis-2", "redis-3")


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.cluster.yml").read_text())


def test_three_masters_a_create_one_shot_a_queue_two_apis_two_workers():
    services = compose()["services"]
    unprofiled = {name for name, service in services.items() if not service.get("profiles")}
    assert unprofiled == {*MASTERS, "cluster-create", "queue", "api-1", "api-2", "worker-1", "worker-2"}
    for name in MASTERS:
        command = " ".join(services[name]["command"])
        assert "--cluster-enabled yes" in command
        assert "--appendonly yes" in command and "--appendfsync always" in command
        assert "--maxmemory-policy noeviction" in command
        assert f"--cluster-announce-hostname {name}" in command
        assert services[name]["healthcheck"]["test"][-1] == "ping"
        assert any(v.endswith(":/data") for v in services[name]["volumes"])
    queue = " ".join(services["queue"]["command"])
    assert "--cluster-enabled" not in queue and "--appendfsync always" in queue
    create = services["cluster-create"]
    assert create["restart"] == "no"
    assert all(create["depends_on"][m]["condition"] == "service_healthy" for m in MASTERS)
    script = create["command"][-1]
    assert "--cluster-replicas 0" in script and "--cluster-yes" in script
    assert all(f"{m}:6379" in script for m in MASTERS)
    assert {f"{m}-data" for m in MASTERS} | {"queue-data"} <= set(compose()["volumes"])


def test_apis_and_workers_point_at_a_node_and_the_queue_and_wait_for_the_create():
    services = compose()["services"]
    read = set(re.findall(r'env\.get\("([A-Z_]+)"', (ROOT / "events/config.py").read_text()))
    for name in ("api-1", "api-2", "worker-1", "worker-2"):
        service = services[name]
        env = service["environment"]
        assert set(env) == read, f"{name}: compose sets {set(env) ^ read} differently from events/config.py"
        assert env["REDIS_URL"].split("//")[1].split(":")[0] in MASTERS
        assert env["ESCOBA_QUEUE_URL"].startswith("redis://queue:")
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


@pytest.mark.integration
def test_the_files_redis_commands_make_a_cluster_the_server_finds(tmp_path):
    if redis_binary() is None or redis_cli() is None:
        pytest.skip("redis-server and redis-cli are needed to run the compose file's commands")
    services = compose()["services"]
    nodes, ports = [], {}
    try:
        for name in MASTERS:
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
        RedisClusterServers(nodes).wait_ok()
        queue = RedisServer(free_port(), tmp_path / "queue").start()
        nodes.append(queue)
        backends = connect(Config(redis_url=f"redis://127.0.0.1:{ports['redis-2']}/0", queue_url=queue.url), wait=5)
        try:
            assert backends.cluster and len(backends.tables.get_primaries()) == 3
            backends.tables.set("table:{x}:probe", "1")
            assert backends.tables.get("table:{x}:probe") == b"1"
        finally:
            backends.close()
    finally:
        for node in nodes:
            node.stop()
