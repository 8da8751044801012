"""``GET /me/tables`` for a player with 500 tables, 50 of them active: its latency and what it asks of Redis.

    python bench/my_tables.py [--tables 500] [--active 50] [--calls 1000]

On a Redis of the bench's own (started here, on a free port; AOF off: setting the tables up is not
what is measured). One account hosts every table, a guest sits in each and the game starts; all but
``--active`` of them end by a resignation. Then ``GET /me/tables`` (active, and the first page of
finished) is asked ``--calls`` times through the app in this process (Flask's test client: the
server's own path, no HTTP sockets), and the script prints each list's time per call (mean, p50,
p90, p99) and the Redis commands per call by name (``INFO commandstats``): the list is read from the
player's sorted set and the tables' rows (events/my_tables.py), never from a scan of the tables.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import private_redis, summary_ms  # noqa: E402
from tests.redis_servers import command_calls, command_calls_since  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=500)
    parser.add_argument("--active", type=int, default=50)
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()

    from redis import Redis

    from api.app import create_app
    from events.config import Config

    with private_redis(durable=False) as server:
        redis = Redis.from_url(server.url)
        app = create_app(redis, dataclasses.replace(Config(), bot_delay=0.0, rate_limits="off"))
        http = app.test_client()
        made = http.post("/players", json={"name": "bench_player", "password": "bench password"}).get_json()
        auth = {"Authorization": f"Bearer {made['token']}"}
        started = time.perf_counter()
        for i in range(args.tables):
            table = http.post("/tables", json={"preset": "del15"}, headers=auth).get_json()
            table_id = table["table_id"]
            http.post(f"/tables/{table_id}/seats", json={"name": "Guest"})
            http.post(f"/tables/{table_id}/moves", json={"type": "start"}, headers=auth)
            if i >= args.active:
                http.post(f"/tables/{table_id}/moves", json={"type": "resign"}, headers=auth)
        print(f"set up {args.tables} tables ({args.active} active) in {time.perf_counter() - started:.1f} s")

        for status in ("active", "finished"):
            url = f"/me/tables?status={status}"
            first = http.get(url, headers=auth).get_json()
            times = []
            before = command_calls(redis)
            for _ in range(args.calls):
                t0 = time.perf_counter()
                r = http.get(url, headers=auth)
                times.append(time.perf_counter() - t0)
                assert r.status_code == 200
            calls = command_calls_since(redis, before)
            per_call = {name: round(n / args.calls, 2) for name, n in sorted(calls.items())}
            print(f"GET {url}: {len(first['tables'])} rows; {summary_ms(times)}")
            print(f"  Redis commands per call: {per_call} (total {sum(calls.values()) / args.calls:.2f})")
        redis.close()


if __name__ == "__main__":
    main()
