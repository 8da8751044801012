"""Sockets at scale: 10,000 idle sockets in one process, /healthz beside them, live tables at 100 moves/s.

    python bench/sockets.py [--idle 10000] [--tables 50] [--rate 100] [--moves 2000]
                            [--silent 300] [--flood 100] [--workers 1]

Starts a durable redis-server of its own (AOF, appendfsync always, as in
production) and ``escoba serve`` (gunicorn's gevent worker) on it, with the
socket bounds raised (every client here is 127.0.0.1). Then, in order:

1. ``--idle`` sockets over ``--idle / 4`` waiting tables (the host and three
   spectators each), each read by one selector thread that answers pings.
   Memory per socket: the server's summed VmRSS with them open (and each
   with its first view) minus before, / sockets.
2. ``GET /healthz`` on fresh connections while they are held, then again with
   ``--silent`` more upgrades whose client never reads and answers no ping.
3. ``--tables`` live tables (games scripted in advance with the engine,
   bench/_common.py) with four sockets each (both players and two spectators),
   and a stream of moves on random live tables at ``--rate`` per second: for
   each move, the time from its POST being sent to the moment the last of its
   table's four sockets holds a ``table`` message of that version (target
   p99 < 100 ms), and the server's CPU per move (/proc of master and workers).
4. ``--flood`` sockets that each send one 64 KB frame: each must be closed with
   1009, and the worker's memory must not grow.

The client is one thread with a selector over raw sockets (bench/_ws.py); the
moves go out at their due times from a few sender threads, each with one persistent
connection (a table's moves in order, one at a time).
"""

from __future__ import annotations

import argparse
import http.client
import random
import resource
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    Http,
    cpu_seconds,
    escoba_server,
    exit_on_sigterm,
    free_port,
    game_script,
    open_table,
    percentile,
    pool_starmap,
    server_env,
    start_private_redis,
    summary_ms,
)
from bench._ws import Reader, Socket  # noqa: E402

UNBOUNDED = "1000000"  # the bench is one client address: lift the per-address bounds


def raise_fd_limit(need: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        soft = min(hard, max(need, soft))
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return soft


def fds(pid: int) -> int:
    import os

    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def healthz_times(port: int, n: int) -> tuple[list[float], int]:
    """``n`` GET /healthz, each on a fresh connection: their times, and how many failed."""
    times, failed = [], 0
    for _ in range(n):
        t = time.perf_counter()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/healthz")
            ok = conn.getresponse().status == 200
            conn.close()
        except OSError:
            ok = False
        if ok:
            times.append(time.perf_counter() - t)
        else:
            failed += 1
    return times, failed


def connect_all(port: int, jobs: list[tuple[Socket, str]], reader: Reader | None, threads: int = 8) -> int:
    """Handshake every socket (a few threads), hand each to the reader; how many failed."""

    def one(job):
        ws, path = job
        try:
            ws.connect(port, path)
        except OSError:
            return 1
        if reader is not None:
            reader.add(ws)
        return 0

    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(one, jobs))


def wait_first_views(sockets: list[Socket], timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        waiting = sum(1 for ws in sockets if not ws.heard)
        if not waiting:
            return 0
        time.sleep(0.2)
    return sum(1 for ws in sockets if not ws.heard)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Sockets at scale: idle sockets, /healthz, fan-out, floods")
    parser.add_argument("--idle", type=int, default=10_000, help="idle sockets (4 per waiting table)")
    parser.add_argument("--tables", type=int, default=50, help="live tables, 4 sockets each")
    parser.add_argument("--moves", type=int, default=2000, help="moves in the stream")
    parser.add_argument("--rate", type=float, default=100.0, help="moves per second")
    parser.add_argument("--silent", type=int, default=300, help="upgrades whose client never reads")
    parser.add_argument("--flood", type=int, default=100, help="sockets that each send one 64 KB frame")
    parser.add_argument("--workers", type=int, default=1, help="gunicorn gevent workers")
    parser.add_argument("--senders", type=int, default=8, help="client threads that POST the moves")
    parser.add_argument("--worker-class", default="gevent", choices=("gevent", "gthread"),
                        help="gthread: the old threaded worker, for comparison (a thread per socket)")
    parser.add_argument("--seed", default="sockets")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    limit = raise_fd_limit(args.idle + args.silent + args.flood + args.tables * 4 + 512)
    print(
        f"sockets: {args.idle} idle sockets, {args.tables} live tables x 4 sockets, {args.moves} moves at "
        f"{args.rate:g}/s, {args.silent} silent upgrades, {args.flood} 64 KB floods; escoba serve: gunicorn "
        f"gevent workers={args.workers}; client fd limit {limit}; a private durable redis-server",
        flush=True,
    )
    per_table = max(8, 3 * args.moves // max(1, args.tables) + 8)
    scripts = pool_starmap(game_script, [(f"ws:{i}", per_table) for i in range(args.tables)], 2)

    redis = start_private_redis(durable=True)
    server = None
    sockets: list[Socket] = []
    silent: list[Socket] = []
    reader = Reader()
    try:
        env = server_env(REDIS_URL=redis.url, ESCOBA_SOCKETS_PER_ADDRESS=UNBOUNDED,
                         ESCOBA_SOCKETS_PER_ADDRESS_TABLE=UNBOUNDED, ESCOBA_SOCKETS_PER_TABLE=UNBOUNDED)
        threads = args.idle + args.silent + args.flood + 4 * args.tables + 64
        server = escoba_server(free_port(), threads, args.workers, env=env,
                               extra=("--worker-class", args.worker_class))
        http = Http(server.port)
        workers = [pid for pid in server.pids() if pid != server.proc.pid]

        # 1. idle sockets
        idle_tables = []
        for _ in range(max(1, args.idle // 4)):
            status, host = http.call("POST", "/tables", {"name": "Ana", "preset": "selminha"})
            assert status == 201, host
            idle_tables.append((host["table_id"], host["token"]))
        time.sleep(1.0)
        before = sum(server.rss_kib().values())
        reader.start()
        jobs = []
        for i, (table_id, token) in enumerate(idle_tables):
            for role in ("host", "s1", "s2", "s3"):
                if len(jobs) >= args.idle:
                    break
                ws = Socket(-1 - i, role)
                jobs.append((ws, f"/tables/{table_id}/ws" + (f"?token={token}" if role == "host" else "")))
                sockets.append(ws)
        t0 = time.perf_counter()
        failed = connect_all(server.port, jobs, reader)
        waiting = wait_first_views(sockets, 120)
        connected = time.perf_counter() - t0
        time.sleep(2.0)
        after = sum(server.rss_kib().values())
        per_socket = (after - before) / max(1, len(sockets))
        print(f"idle: {len(sockets) - failed} sockets connected in {connected:.1f}s ({failed} failed, "
              f"{waiting} without a first view); worker fds {[fds(p) for p in workers]}")
        print(f"  memory: VmRSS {before / 1024:.1f} MiB before, {after / 1024:.1f} MiB after -> "
              f"{per_socket:.1f} KiB per socket")

        # 2. /healthz beside them, then with silent upgrades too
        times, bad = healthz_times(server.port, 200)
        print(f"  GET /healthz with {len(sockets)} idle sockets held: {summary_ms(times)}; failed {bad}")
        silent = [Socket(-1, "silent") for _ in range(args.silent)]
        table_id = idle_tables[0][0]
        failed = connect_all(server.port, [(ws, f"/tables/{table_id}/ws") for ws in silent], None)
        times, bad = healthz_times(server.port, 200)
        print(f"  GET /healthz with {args.silent - failed} silent upgrades more (never read): "
              f"{summary_ms(times)}; failed {bad}")

        # 3. live tables at a steady rate
        tables = [open_table(http, s) for s in scripts]
        live: list[list[Socket]] = []
        jobs = []
        for i, (table_id, tokens) in enumerate(tables):
            group = []
            for role, token in (("p0", tokens[0]), ("p1", tokens[1]), ("s1", None), ("s2", None)):
                ws = Socket(i, role)
                jobs.append((ws, f"/tables/{table_id}/ws" + (f"?token={token}" if token else "")))
                group.append(ws)
            live.append(group)
        connect_all(server.port, jobs, reader)
        wait_first_views([ws for g in live for ws in g], 30)
        offsets = [0] * len(tables)
        busy: set[int] = set()  # tables with a move in flight: a table's moves go in order
        rng = random.Random(args.seed)
        sent: list[tuple[int, int, float, float]] = []  # (table, version, sent, answered)
        http_lat: list[float] = []
        local = threading.local()
        lock = threading.Lock()

        def post(i: int, seat: int, move: dict, version: int) -> None:
            conn = getattr(local, "http", None)
            if conn is None:
                conn = local.http = Http(server.port)
            t = time.perf_counter()
            status, answer = conn.call("POST", f"/tables/{tables[i][0]}/moves", move, tables[i][1][seat])
            answered = time.perf_counter()
            assert status == 200 and answer["version"] == version, (status, answer, version)
            with lock:
                http_lat.append(answered - t)
                sent.append((i, version, t, answered))
                busy.discard(i)

        cpu0 = cpu_seconds(server.pids())
        redis0 = redis.cpu_seconds()
        start = time.perf_counter()
        skipped = 0
        with ThreadPoolExecutor(args.senders) as senders:
            for k in range(args.moves):
                pause = start + k / args.rate - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
                with lock:
                    free = [i for i in range(len(tables)) if offsets[i] < len(scripts[i].moves) and i not in busy]
                    if not free:
                        skipped += 1
                        continue
                    i = rng.choice(free)
                    busy.add(i)
                seat, move, version = scripts[i].moves[offsets[i]]
                offsets[i] += 1
                senders.submit(post, i, seat, move, version)
        stream = time.perf_counter() - start
        time.sleep(2.0)
        server_cpu = cpu_seconds(server.pids()) - cpu0
        redis_cpu = redis.cpu_seconds() - redis0
        from_sent, missing = [], 0
        for i, version, posted, _answered in sent:
            got = [ws.first_at(version) for ws in live[i]]
            if any(t is None for t in got):
                missing += 1
                continue
            from_sent.append(max(got) - posted)
        print(f"live: {len(sent)} moves in {stream:.1f}s ({len(sent) / stream:.0f}/s) on {len(tables)} tables, "
              f"beside {len(sockets)} idle and {len(silent)} silent sockets; {skipped} ticks found every table busy")
        print(f"  POST /moves latency: {summary_ms(http_lat)}")
        print(f"  POST sent -> all 4 sockets of its table hold the version: {summary_ms(from_sent)}")
        print(f"  server CPU {server_cpu * 1000 / max(1, len(sent)):.2f} ms per move "
              f"({server_cpu / stream * 100:.0f}% of a core); redis {redis_cpu * 1000 / max(1, len(sent)):.2f} ms")
        p99 = percentile(from_sent, 99)
        print(f"  fan-out p99 {p99 * 1000:.1f} ms (target < 100 ms: "
              f"{'met' if p99 < 0.1 and not missing else 'MISSED'}); moves some socket never heard: {missing}")

        # 4. a flood of 64 KB frames
        flooders = [Socket(-1, "flood") for _ in range(args.flood)]
        table_id = idle_tables[-1][0]
        connect_all(server.port, [(ws, f"/tables/{table_id}/ws") for ws in flooders], reader)
        wait_first_views(flooders, 30)
        time.sleep(1.0)
        rss0 = {pid: kib for pid, kib in server.rss_kib().items() if pid in workers}  # with them connected
        big = b"x" * 65536
        for ws in flooders:
            ws.send_frame(0x1, big)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not all(ws.closed for ws in flooders):
            time.sleep(0.1)
        time.sleep(1.0)
        rss1 = {pid: kib for pid, kib in server.rss_kib().items() if pid in workers}
        codes = {}
        for ws in flooders:
            codes[ws.close_code] = codes.get(ws.close_code, 0) + 1
        print(f"flood: {args.flood} sockets sent one 64 KB frame each: close codes {codes}; worker VmRSS "
              f"{sum(rss0.values()) / 1024:.1f} -> {sum(rss1.values()) / 1024:.1f} MiB")
        alive = sum(1 for ws in sockets if not ws.closed)
        print(f"summary: {alive} idle sockets still open in {args.workers} process(es); memory "
              f"{per_socket:.1f} KiB per socket; fan-out p99 {p99 * 1000:.1f} ms at {len(sent) / stream:.0f} moves/s")
        http.close()
    finally:
        reader.stop.set()
        for ws in sockets + silent:
            if ws.sock is not None:
                ws.sock.close()
        if server is not None:
            server.stop()
        redis.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
