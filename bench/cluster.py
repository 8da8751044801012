"""Moves per second and p99 latency: escoba on one Redis against escoba on a 3-master Redis Cluster.

    python bench/cluster.py [--tables 50] [--workers 2] [--clients 16]
                            [--duration 10] [--rounds 2] [--no-timers]

Starts its own Redis servers on free ports (never a Redis it did not start): one plain
Redis, and a 3-master cluster (``redis-cli --cluster create``, no replicas) beside a
plain queue Redis, all with the production settings (AOF, appendfsync always,
noeviction). Two ``escoba serve`` processes run under the same gunicorn settings, one
with REDIS_URL = the plain Redis, one with REDIS_URL = a cluster node and
ESCOBA_QUEUE_URL = the queue Redis. The same load (bench/api.py's real client: GET
the view, POST a legal move from its options, a socket per table; from a separate
process, each round with its own mid-game tables on each server) alternates between
them: plain, cluster, plain, cluster, ...

Prints each run, the pooled moves/s and p50/p99, CPU per move of the API and of the
Redis servers (the cluster's: its three masters' sum), and the ratios cluster/plain.
On one machine the cluster cannot be faster (its three masters share the same cores
as everything else): the ratio is the price of the cluster's client and routing per
move, the cost of growing, not the gain. ``--no-timers`` leaves the workers' timer hook
out of both servers.
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


def memory_used(servers) -> int:
    used = 0
    for server in servers:
        with server.client() as c:
            used += int(c.info("memory")["used_memory"])
    return used


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
    parser.add_argument("--no-timers", action="store_true", help="both servers without the timer hook")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
        raise SystemExit("bench/cluster.py needs redis-server and redis-cli")

    workdir = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    plain = queue = cluster = None
    servers = {}
    try:
        plain = start_plain(workdir / "plain", durable=True)
        queue = start_plain(workdir / "queue", durable=True)
        cluster = start_cluster(workdir / "cluster", 3, durable=True)
        print(f"one Redis on :{plain.port}; cluster on :{', :'.join(str(n.port) for n in cluster.nodes)} "
              f"with its queue Redis on :{queue.port} (all AOF appendfsync always); gunicorn gevent "
              f"workers={args.workers}; {args.clients} client threads; "
              f"{args.rounds} x {args.duration:g}s per topology; timers {'off' if args.no_timers else 'on'}",
              flush=True)
        envs = {"plain": server_env(REDIS_URL=plain.url, ESCOBA_QUEUE_URL="", ESCOBA_RATE_LIMITS="off"),
                "cluster": server_env(REDIS_URL=cluster.url, ESCOBA_QUEUE_URL=queue.url, ESCOBA_RATE_LIMITS="off")}
        stores = {"plain": [plain], "cluster": [*cluster.nodes, queue]}
        for name in ("plain", "cluster"):
            port = free_port()
            argv_ = [str(Path(__file__).resolve()), "--serve", *(["--no-timers"] if args.no_timers else []),
                     "--host", "127.0.0.1", "--port", str(port), "--workers", str(args.workers)]
            servers[name] = start_server(f"cluster-bench-{name}", argv_, port, workers=args.workers, env=envs[name])

        # bench/api.py's real client on both: mid-game tables, GET the view, POST a move from its
        # options, a socket per table
        count = args.tables * args.rounds
        t = time.perf_counter()
        tables = {}
        for name in ("plain", "cluster"):
            before = memory_used(cluster.nodes if name == "cluster" else [plain])
            tables[name] = open_tables(servers[name].port, count, args.warm)
            grown = memory_used(cluster.nodes if name == "cluster" else [plain]) - before
            print(f"{name}: opened {count} tables and played {args.warm} moves at each; the tables' store grew "
                  f"by {grown / count / 1024:.1f} KiB per table", flush=True)
        print(f"in {time.perf_counter() - t:.1f}s", flush=True)

        results = {"plain": [], "cluster": []}
        cpu = {"plain": [0.0, 0.0], "cluster": [0.0, 0.0]}
        for r in range(args.rounds):
            for name in ("plain", "cluster"):
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
    (pr, _, p99p, _), (cr, _, p99c, _) = pooled["plain"], pooled["cluster"]
    print(f"throughput ratio cluster/plain = {cr / pr:.2f}; p99 ratio cluster/plain = {p99c / p99p:.2f} "
          "(one machine, shared cores: the cluster's cost per move, not its gain)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
