"""Loading a table with 5,000 events against one with 50 (snapshots on).

How the tables are made: two humans open a ``del15`` table, sit, start, and
play random legal moves through ``TableService.execute`` (events.autoplay),
game after game (both accept each rematch, the system starts it), until the
log reaches 5,000 events; the small table stops at 50. Snapshots are written
every 50 events as in production.

Then a fresh ``TableService(cache_size=0)`` (no in-process cache: every load
reads the snapshot and the tail of the log after it) loads each table many
times, interleaved; the script prints the median time of each and their
ratio (target: at most 1.2). It uses the real Redis at REDIS_URL when one
answers (deleting its two tables afterwards), otherwise fakeredis[lua];
``--fake`` forces fakeredis.

    python bench/load.py [--fake] [--events 5000] [--small 50] [--loads 300]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from events import autoplay  # noqa: E402
from events.config import Config  # noqa: E402
from events.service import TableService  # noqa: E402
from events.snapshots import SNAPSHOT_EVERY  # noqa: E402
from events.store import index_key  # noqa: E402


def connect(force_fake: bool):
    if not force_fake:
        import redis

        url = Config.from_env().redis_url
        try:
            client = redis.Redis.from_url(url, socket_connect_timeout=1)
            client.ping()
            return client, f"real Redis at {url}"
        except Exception as exc:
            print(f"(no Redis at {url}: {exc}; using fakeredis)", file=sys.stderr)
    import fakeredis

    return fakeredis.FakeRedis(server=fakeredis.FakeServer()), "fakeredis[lua]"


def build(svc: TableService, events: int, seed: int) -> str:
    table_id = autoplay.new_table(svc, preset="del15")
    autoplay.play(svc, table_id, random.Random(seed), until_version=events, games=None)
    return table_id


def time_loads(svc: TableService, tables: dict[str, str], loads: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in tables}
    for tid in tables.values():  # warm up
        svc.load(tid)
    for _ in range(loads):
        for name, tid in tables.items():
            t0 = time.perf_counter()
            svc.load(tid)
            samples[name].append(time.perf_counter() - t0)
    return {name: statistics.median(xs) for name, xs in samples.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fake", action="store_true", help="use fakeredis even if a Redis answers")
    p.add_argument("--events", type=int, default=5000)
    p.add_argument("--small", type=int, default=50)
    p.add_argument("--loads", type=int, default=300)
    args = p.parse_args(argv)

    client, where = connect(args.fake)
    builder = TableService(client, rng=random.Random(1))
    t0 = time.perf_counter()
    big = build(builder, args.events, seed=1)
    small = build(builder, args.small, seed=2)
    built = time.perf_counter() - t0
    versions = {"big": builder.version(big), "small": builder.version(small)}
    print(f"store: {where}; built in {built:.1f}s: big table {versions['big']} events, "
          f"small table {versions['small']} events (snapshot every {SNAPSHOT_EVERY})")

    reader = TableService(client, cache_size=0)
    assert reader.load(big) == TableService(client, cache_size=0, snapshot_every=0).load(big)
    medians = time_loads(reader, {"big": big, "small": small}, args.loads)
    ratio = medians["big"] / medians["small"]
    for name in ("big", "small"):
        tail = versions[name] % SNAPSHOT_EVERY
        print(f"load {name:5} ({versions[name]:>5} events, tail {tail:>2} after the snapshot): "
              f"median {medians[name] * 1000:.3f} ms over {args.loads} loads")
    print(f"ratio big/small: {ratio:.2f} (target <= 1.2) {'OK' if ratio <= 1.2 else 'OVER'}")

    if where.startswith("real"):
        for tid in (big, small):
            client.delete(f"table:{{{tid}}}:events", f"table:{{{tid}}}:snapshot")
            client.zrem(index_key(tid), tid)
    return 0 if ratio <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
