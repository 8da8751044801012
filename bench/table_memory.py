"""Memory per table in the tables' store, at the stages a table lives through.

    python bench/table_memory.py [--tables 300] [--cluster]

Starts its own Redis (or, with ``--cluster``, a 3-master cluster) on a free port,
opens ``--tables`` two-player tables through TableService (no timer hook: the
workers' keys are counted apart), and prints, after each stage, Redis's
``used_memory`` growth per table and ``MEMORY USAGE`` of each of a table's keys
(median over the tables): seated (version 2), mid-game (version 100), one game
finished (a del15 game to 15), and the index buckets' share.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from events import autoplay  # noqa: E402
from events.buckets import bucket_key  # noqa: E402
from events.service import TableService  # noqa: E402
from events.store import COUNTS, STATUS, index_key, table_key  # noqa: E402
from tests.redis_servers import start_cluster, start_plain  # noqa: E402


def used(nodes) -> int:
    total = 0
    for node in nodes:
        with node.client() as c:
            total += int(c.info("memory")["used_memory"])
    return total


def key_sizes(client, table_ids) -> dict[str, float]:
    sizes = defaultdict(list)
    for tid in table_ids:
        for name in ("events", "snapshot", "tokens"):
            n = client.memory_usage(table_key(tid, name))
            if n:
                sizes[name].append(n)
    return {name: statistics.median(v) for name, v in sizes.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--cluster", action="store_true")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    if args.cluster:
        servers = start_cluster(workdir, 3)
        nodes, client = servers.nodes, servers.client()
    else:
        servers = start_plain(workdir)
        nodes, client = [servers], servers.client()
    try:
        svc = TableService(client, rng=random.Random(1))
        base = used(nodes)
        tables = []
        for _ in range(args.tables):
            tid = autoplay.new_table(svc, preset="del15", settings={"target": 15})
            client.hset(table_key(tid, "tokens"), mapping={"a" * 64: "p_0000000000000000", "b" * 64: "p_1"})
            tables.append(tid)
        stages = [("seated, v2", None)]
        out = []

        def report(stage):
            grown = (used(nodes) - base) / len(tables)
            versions = [svc.version(t) for t in tables]
            sizes = key_sizes(client, tables)
            index = statistics.median(client.memory_usage(index_key(t)) or 0 for t in tables[:50])
            out.append(f"{stage:22s} median version {statistics.median(versions):>5.0f}: "
                       f"{grown / 1024:6.2f} KiB per table (used_memory growth); MEMORY USAGE median: "
                       + ", ".join(f"{k} {v / 1024:.2f} KiB" for k, v in sorted(sizes.items()))
                       + f"; an index bucket (one slot's tables) {index} B")
            print(out[-1], flush=True)

        report(stages[0][0])
        rng = random.Random(2)
        for tid in tables:
            svc.execute(tid, {"type": "start", "player": "p0"}, actor="seat:0")
            autoplay.play(svc, tid, rng, until_version=100)
        report("mid-game, v100")
        for tid in tables:
            autoplay.play(svc, tid, rng, games=1)
        report("one game finished")
        status = statistics.median(client.memory_usage(bucket_key(STATUS, t)) or 0 for t in tables[:50])
        counts = statistics.median(client.memory_usage(bucket_key(COUNTS, t)) or 0 for t in tables[:50])
        print(f"status bucket {status} B, counts bucket {counts} B (one slot's; 16384 slots in all)")
    finally:
        client.close()
        servers.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
