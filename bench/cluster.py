"""Moves per second and p99 latency: escoba on one Redis against escoba on a 3-master Redis Cluster
with a replica per master, without and with replica acknowledgements (ESCOBA_REPLICA_ACKS=1).

    python bench/cluster.py [--tables 50] [--workers 2] [--clients 16]
                            [--duration 10] [--rounds 2] [--no-timers] [--no-acks]

Starts its own Redis servers on free ports (never a Redis it did not start): one plain
Redis, and a 3-master cluster with a replica each (``redis-cli --cluster create
--cluster-replicas 1``, the shape docker-compose.cluster.yml runs) beside a plain queue
Redis, all with the production settings (AOF, appendfsync always, noeviction). Three
``escoba serve`` processes run under the same gunicorn settings: ``plain`` (REDIS_URL = the
plain Redis), ``cluster`` (REDIS_URL = the cluster's nodes, ESCOBA_QUEUE_URL = the queue
Redis, ESCOBA_REPLICA_ACKS=0: a move is answered once its master has it) and ``acks`` (the
same cluster, ESCOBA_REPLICA_ACKS=1: a move is answered once a replica holds it too, WAIT
on the append's connection). The same load (bench/api.py's real client: GET the view, POST
a legal move from its options, a socket per table; from a separate process, each round
with its own mid-game tables on each server) alternates between them.

Prints each run, the pooled moves/s and p50/p99, CPU per move of the API and of the
Redis servers (the cluster's: every node's sum, replicas included), the ratios
cluster/plain and the acks' cost per move (acks against cluster: latency added at p50 and
p99, throughput ratio, Redis CPU). On one machine the cluster cannot be faster (its nodes
share the same cores as everything else): the ratio is the price of the cluster's client
and routing per move, the cost of growing, not the gain. Left out: network latency between
hosts, which WAIT pays once more per move (a round trip master -> replica -> master); here
it is loopback. ``--no-timers`` leaves the workers' timer hook out of every server;
``--no-acks`` runs only plain and cluster.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402
    cpu_seconds,
    exit_on_sigterm,
    free_port,
    percentile,
    pool_starmap,
    server_env,
    start_server,
)
from bench.api import describe, open_tables, run_load  # noqa: E402
from tests.redis_servers import start_cluster, start_plain  # noqa: E402


def serve_main(argv: list[str]) -> int:
    """``bench/cluster.py --serve [--no-timers] ARGS...``: ``escoba serve`` (optionally without the hook)."""
    if argv and argv[0] == "--no-timers":
        import api.app

        api.app.change_hook = lambda backends, config: None
        argv = argv[1:]
    from api.cli import main

    return main(["serve", *argv])


def redis_cpu(servers) -> float:
    total = 0.0
    for server in servers:
        with server.client() as c:
            info = c.info("cpu")
        total += float(info["used_cpu_user"]) + float(info["used_cpu_sys"])
    return total


def _role(node) -> bytes:
    with node.client() as c:
        return c.execute_command("ROLE")[0]


def memory_used(servers) -> int:
    used = 0
    for server in servers:
        with server.client() as c:
            used += int(c.info("memory")["used_memory"])
    return used


def append_cost(cluster, moves: int, blocks: int = 10) -> dict[int, list[float]]:
    """Seconds per move (``TableService.execute``: load from the cache, decide, append), one at a
    time from this process on the replicated cluster, with ESCOBA_REPLICA_ACKS 0 and 1 in
    alternating blocks: the latency WAIT adds to a move, without the HTTP server's noise."""
    import random

    from events import autoplay
    from events.connection import cluster_client
    from events.service import TableService

    client = cluster_client(cluster.seeds_url)
    took: dict[int, list[float]] = {0: [], 1: []}
    try:
        services = {acks: TableService(client, rng=random.Random(acks), replica_acks=acks) for acks in took}
        rng = random.Random(1)
        for block in range(blocks * 2):
            acks = block % 2
            service = services[acks]
            table_id, state = None, None
            for _ in range(moves // blocks):
                if state is None or autoplay.next_command(state, rng) is None:
                    table_id = autoplay.new_table(service)
                    state = service.load(table_id)
                command, actor = autoplay.next_command(state, rng)
                t = time.perf_counter()
                state = service.execute(table_id, command, actor=actor).state
                took[acks].append(time.perf_counter() - t)
    finally:
        client.close()
    return took


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--serve":
        return serve_main(sys.argv[2:])
    parser = argparse.ArgumentParser(description="escoba on one Redis vs on a 3-master Redis Cluster")
    parser.add_argument("--tables", type=int, default=50, help="tables per round per server")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers, both servers")
    parser.add_argument("--clients", type=int, default=16, help="load threads (persistent connections)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2, help="plain+cluster pairs, alternating")
    parser.add_argument("--warm", type=int, default=8, help="moves per table before measuring")
    parser.add_argument("--no-timers", action="store_true", help="every server without the timer hook")
    parser.add_argument("--no-acks", action="store_true", help="no server with ESCOBA_REPLICA_ACKS=1")
    parser.add_argument("--serial-moves", type=int, default=2000,
                        help="moves one at a time, half with acks, for the acks' latency per move")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        raise SystemExit("bench/cluster.py needs redis-server and redis-cli")

    workdir = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    plain = queue = cluster = None
    servers = {}
    serial: dict[int, list[float]] = {}
    try:
        plain = start_plain(workdir / "plain", durable=True)
        queue = start_plain(workdir / "queue", durable=True)
        cluster = start_cluster(workdir / "cluster", 3, durable=True, replicas=1)
        print(f"one Redis on :{plain.port}; cluster (3 masters, a replica each) on "
              f":{', :'.join(str(n.port) for n in cluster.nodes)} "
              f"with its queue Redis on :{queue.port} (all AOF appendfsync always); gunicorn gevent "
              f"workers={args.workers}; {args.clients} client threads; "
              f"{args.rounds} x {args.duration:g}s per server; timers {'off' if args.no_timers else 'on'}",
              flush=True)
        on_cluster = {"REDIS_URL": cluster.seeds_url, "ESCOBA_QUEUE_URL": queue.url, "ESCOBA_RATE_LIMITS": "off"}
        envs = {"plain": server_env(REDIS_URL=plain.url, ESCOBA_QUEUE_URL="", ESCOBA_RATE_LIMITS="off",
                                    ESCOBA_REPLICA_ACKS="0"),
                "cluster": server_env(**on_cluster, ESCOBA_REPLICA_ACKS="0")}
        if not args.no_acks:
            envs["acks"] = server_env(**on_cluster, ESCOBA_REPLICA_ACKS="1")
        names = tuple(envs)
        masters = [n for n in cluster.nodes if _role(n) == b"master"]  # memory: the data once, not its copies
        stores = {"plain": [plain], "cluster": [*cluster.nodes, queue], "acks": [*cluster.nodes, queue]}
        for name in names:
            port = free_port()
            argv_ = [str(Path(__file__).resolve()), "--serve", *(["--no-timers"] if args.no_timers else []),
                     "--host", "127.0.0.1", "--port", str(port), "--workers", str(args.workers)]
            servers[name] = start_server(f"cluster-bench-{name}", argv_, port, workers=args.workers, env=envs[name])

        # bench/api.py's real client on both: mid-game tables, GET the view, POST a move from its
        # options, a socket per table
        count = args.tables * args.rounds
        t = time.perf_counter()
        tables = {}
        for name in names:
            before = memory_used(masters if name != "plain" else [plain])
            tables[name] = open_tables(servers[name].port, count, args.warm)
            grown = memory_used(masters if name != "plain" else [plain]) - before
            print(f"{name}: opened {count} tables and played {args.warm} moves at each; the tables' store grew "
                  f"by {grown / count / 1024:.1f} KiB per table", flush=True)
        print(f"in {time.perf_counter() - t:.1f}s", flush=True)

        results = {name: [] for name in names}
        cpu = {name: [0.0, 0.0] for name in names}
        for r in range(args.rounds):
            for name in names:
                mine = tables[name][r * args.tables:(r + 1) * args.tables]
                server = servers[name]
                c0, r0 = cpu_seconds(server.pids()), redis_cpu(stores[name])
                load = (server.port, mine, args.clients, args.duration, args.warmup, False)
                [result] = pool_starmap(run_load, [load], 1)
                server_cpu, store_cpu = cpu_seconds(server.pids()) - c0, redis_cpu(stores[name]) - r0
                cpu[name][0] += server_cpu
                cpu[name][1] += store_cpu
                results[name].append(result)
                print(describe(name, result, server_cpu, store_cpu), flush=True)
                for e in result["errors"][:5]:
                    print(f"    error: {e}")
        if not args.no_acks:
            for server in servers.values():  # the servers stop first: the cores are the appends'
                server.stop()
            servers = {}
            serial = append_cost(cluster, args.serial_moves)
    finally:
        for server in servers.values():
            server.stop()
        for s in (plain, queue, cluster):
            if s is not None:
                s.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    pooled = {}
    for name, rs in results.items():
        moves = sum(r["count"] for r in rs)
        elapsed = sum(r["elapsed"] for r in rs)
        lat = [x for r in rs for x in r["latencies"]]
        pooled[name] = (moves / elapsed, percentile(lat, 50), percentile(lat, 99), moves)
        rate, p50, p99, _ = pooled[name]
        per = 1000 / max(moves, 1)
        print(f"{name + ':':9s} {rate:.1f} moves/s, p50 {p50 * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms; "
              f"cpu per move: API {cpu[name][0] * per:.3f} ms, Redis {cpu[name][1] * per:.3f} ms")
    (pr, _, p99p, _), (cr, p50c, p99c, cm) = pooled["plain"], pooled["cluster"]
    print(f"throughput ratio cluster/plain = {cr / pr:.2f}; p99 ratio cluster/plain = {p99c / p99p:.2f} "
          "(one machine, shared cores: the cluster's cost per move, not its gain)")
    if "acks" in pooled:
        ar, p50a, p99a, am = pooled["acks"]
        redis_ms = (cpu["acks"][1] / max(am, 1) - cpu["cluster"][1] / max(cm, 1)) * 1000
        print(f"the acks' cost per move (ESCOBA_REPLICA_ACKS=1 against 0, same cluster): p50 "
              f"{(p50a - p50c) * 1e3:+.2f} ms, p99 {(p99a - p99c) * 1e3:+.2f} ms; throughput ratio acks/cluster = "
              f"{ar / cr:.2f}; Redis CPU {redis_ms:+.3f} ms per move (loopback: no network round trip to a replica)")
        p = {acks: (percentile(xs, 50) * 1e3, percentile(xs, 99) * 1e3) for acks, xs in serial.items()}
        print(f"one move at a time ({len(serial[0])} each, alternating blocks, this process on the cluster): "
              f"acks 0 p50 {p[0][0]:.3f} ms p99 {p[0][1]:.3f} ms; acks 1 p50 {p[1][0]:.3f} ms p99 {p[1][1]:.3f} ms; "
              f"WAIT adds {p[1][0] - p[0][0]:+.3f} ms at p50 ({p[1][0] / p[0][0]:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
