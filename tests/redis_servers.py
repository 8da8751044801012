"""Redis servers the suite starts for itself, on free ports, and stops when done.

The suite never connects to a Redis it did not start (it never touches
the default port or whatever else runs on the machine), so it may flush its own
servers freely and can run beside anything.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import redis as redis_lib

# the production settings that matter for behaviour (docker-compose.yml): AOF fsynced per write,
# no eviction; RDB off. Tests that want a throw-away server pass durable=False.
DURABLE = ("--appendonly", "yes", "--appendfsync", "always")
VOLATILE = ("--appendonly", "no")


def command_calls(client) -> dict[str, int]:
    """Calls so far by command name (``INFO commandstats``): what a step asked of the server."""
    return {name.removeprefix("cmdstat_"): each["calls"] for name, each in client.info("commandstats").items()}


def command_calls_since(client, before: dict[str, int]) -> dict[str, int]:
    """The calls made by command name since ``command_calls`` gave ``before`` (the INFO that reads
    them left out)."""
    made = {name: n - before.get(name, 0) for name, n in command_calls(client).items() if n != before.get(name, 0)}
    made.pop("info", None)
    return made


_BUSY = ("local t = redis.call('TIME') repeat local n = redis.call('TIME') "
         "until (n[1] - t[1]) * 1e6 + n[2] - t[2] > tonumber(ARGV[1]) * 1000")


def slow_command(client, ms: int) -> None:
    """One command that holds the server ``ms`` milliseconds (a script waiting on Redis's own clock):
    a ``command`` event for its latency monitor, whatever the disk does."""
    client.eval(_BUSY, 0, ms)


# the unit-tier test running now, if one is (set by tests/conftest.py): it may start no server
UNIT_TEST: str | None = None


def redis_binary() -> str | None:
    return shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class RedisServer:
    """One ``redis-server`` process of the suite's own."""

    port: int
    workdir: Path
    proc: subprocess.Popen | None = None
    durable: bool = False
    extra: tuple = ()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def url_db(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> RedisServer:
        if UNIT_TEST is not None:
            raise RuntimeError(f"{UNIT_TEST} starts a redis-server but is in the unit tier: mark it integration "
                               "(conftest.py says how tiers are given)")
        binary = redis_binary()
        if binary is None:
            raise RuntimeError("redis-server is not installed")
        self.workdir.mkdir(parents=True, exist_ok=True)
        args = [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
                "--save", "", "--daemonize", "no", "--protected-mode", "no",
                "--maxmemory-policy", "noeviction", "--logfile", str(self.workdir / "redis.log"),
                *(DURABLE if self.durable else VOLATILE), *self.extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 10.0) -> None:
        client = redis_lib.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.time() + timeout
        try:
            while time.time() < deadline:
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(f"redis-server on port {self.port} exited: see {self.workdir}/redis.log")
                try:
                    if client.ping():  # a restart answers LOADING until its AOF is read
                        return
                except (redis_lib.ConnectionError, redis_lib.BusyLoadingError):
                    time.sleep(0.05)
        finally:
            client.close()
        self.stop()
        raise RuntimeError(f"redis-server on port {self.port} did not start")

    def client(self, db: int = 0, **kwargs) -> redis_lib.Redis:
        return redis_lib.Redis(port=self.port, db=db, **kwargs)

    def kill(self) -> None:
        """``kill -9``: what a crash does."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_plain(workdir: Path, *, durable: bool = False, port: int | None = None) -> RedisServer:
    return RedisServer(port or free_port(), workdir, durable=durable).start()


def redis_cli() -> str | None:
    return shutil.which("redis-cli")


@dataclass
class RedisClusterServers:
    """A Redis Cluster of the suite's own: ``redis-server --cluster-enabled yes`` nodes on free
    ports (masters, and replicas if asked), every slot assigned by ``redis-cli --cluster create``."""

    nodes: list[RedisServer]

    @property
    def url(self) -> str:
        """Any node's URL names the cluster (REDIS_URL may name any node): the first one."""
        return self.nodes[0].url

    @property
    def seeds_url(self) -> str:
        """Every node, comma-separated (REDIS_URL's seed nodes): still names the cluster while any
        one node is down."""
        return ",".join(node.url for node in self.nodes)

    def client(self, **kwargs):
        from redis.cluster import RedisCluster

        return RedisCluster(host="127.0.0.1", port=self.nodes[0].port, **kwargs)

    def flush(self) -> None:
        for node in self.nodes:
            with node.client() as c:
                c.flushall()

    def wait_ok(self, timeout: float = 20.0, replicas: int = 0) -> None:
        """Until every node says ``cluster_state:ok`` and knows every other node, every replica's
        link to its master is up, and (``replicas``) every master has that many replicas."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            states = []
            for node in self.nodes:
                with node.client() as c:
                    info = c.execute_command("CLUSTER", "INFO")
                    info = info.decode() if isinstance(info, bytes) else info
                    fields = dict(line.split(":", 1) for line in info.split() if ":" in line)
                    replication = c.info("replication")
                    states.append(fields.get("cluster_state") == "ok"
                                  and int(fields.get("cluster_known_nodes", 0)) == len(self.nodes)
                                  # a replica counts once it holds its master's data
                                  and replication.get("master_link_status", "up") == "up"
                                  and (replication.get("role") != "master" or not replicas
                                       or int(replication.get("connected_slaves", 0)) >= replicas))
            if all(states):
                return
            time.sleep(0.1)
        raise RuntimeError("the test cluster did not reach cluster_state:ok")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def start_cluster(workdir: Path, masters: int = 3, *, durable: bool = False, replicas: int = 0,
                  spare: int = 0) -> RedisClusterServers:
    """Start ``masters`` cluster nodes and ``replicas`` replicas of each (client and bus ports both
    free, the bus given by ``cluster-port``), and ``spare`` more (``redis-cli`` makes each an extra
    replica of a master: replica migration, on as in docker-compose.cluster.yml, moves one to a
    master a failover left without a replica), join them with ``redis-cli --cluster create``, wait
    for ``ok``."""
    cli = redis_cli()
    if cli is None:
        raise RuntimeError("redis-cli is not installed")
    nodes: list[RedisServer] = []
    try:
        for i in range(masters * (1 + replicas) + spare):
            port, bus = free_port(), free_port()
            while bus == port:
                bus = free_port()
            node = RedisServer(port, workdir / f"node{i}", durable=durable,
                               extra=("--cluster-enabled", "yes", "--cluster-port", str(bus),
                                      "--cluster-config-file", str(workdir / f"node{i}" / "nodes.conf"),
                                      "--cluster-node-timeout", "3000",
                                      "--cluster-allow-replica-migration", "yes",
                                      # a replica's first sync starts at once, not after 5 s
                                      "--repl-diskless-sync-delay", "0"))
            nodes.append(node.start())
        subprocess.run([cli, "--cluster", "create", *(f"127.0.0.1:{n.port}" for n in nodes),
                        "--cluster-replicas", str(replicas), "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
        cluster = RedisClusterServers(nodes)
        cluster.wait_ok(replicas=replicas)
        return cluster
    except BaseException:
        for node in nodes:
            node.stop()
        raise
