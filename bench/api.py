"""Moves per second and their latency: escoba's POST /moves against a bare Flask + XADD baseline.

    python bench/api.py [--tables 100] [--workers 2] [--threads 16] [--clients 16] [--duration 10] [--rounds 3]

Both servers run under the same gunicorn settings (``api.serve.gunicorn_options``:
gthread, the same workers and threads) on the same real Redis, in a DB of their
own (BENCH_REDIS_URL, default redis://127.0.0.1:6379/9), flushed before and after.

The escoba tables are opened with operator decks, so every game is worked out
in advance with the engine (bench/_common.py ``game_script``); each is warmed to
mid-game, then a separate load process with a pool of threads (each owning a
disjoint set of tables, each with one persistent http.client connection) POSTs
the next legal move of its tables with the right seat's token, for a fixed
time. The baseline gets the very same requests (paths, tokens, bodies).
Measured runs alternate: baseline, escoba, baseline, escoba, ...; each round
(a baseline run and an escoba run) has its own 100 mid-game tables, so a run
never finds its tables played out.

Prints the raw numbers of each run, then escoba / baseline for throughput
(target >= 0.5) and p99 latency (target <= 2). No bots, no RQ worker: the
timers the API schedules on every move (workers/scheduling.py) are part of the
cost and stay in.
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    REDIS_URL,
    Http,
    baseline_server,
    cpu_seconds,
    escoba_server,
    exit_on_sigterm,
    flush_bench_db,
    free_port,
    game_script,
    open_table,
    percentile,
    pool_starmap,
    redis_cpu_seconds,
    summary_ms,
)

# --- the load process ------------------------------------------------------------


def run_load(
    port: int,
    jobs: list,
    offsets: list[int],
    clients: int,
    duration: float,
    warmup: float,
    check: bool,
) -> dict:
    """POST each table's next move in a closed loop from ``clients`` threads for ``duration`` s.

    ``jobs[i] = (path, [(headers, body, version), ...])``; table i starts at ``offsets[i]``.
    The first ``warmup`` seconds are not counted. Returns counts, latencies, new offsets.
    """
    offsets = list(offsets)
    latencies: list[list[float]] = [[] for _ in range(clients)]
    counts = [0] * clients
    errors: list[str] = []
    barrier = threading.Barrier(clients + 1)
    times = {}

    def worker(k: int) -> None:
        mine = list(range(k, len(jobs), clients))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        lat = latencies[k]
        barrier.wait()
        start, end = times["start"], times["end"]
        while mine:
            for i in list(mine):
                path, moves = jobs[i]
                if offsets[i] >= len(moves):
                    mine.remove(i)
                    continue
                headers, body, version = moves[offsets[i]]
                t0 = time.perf_counter()
                if t0 >= end:
                    conn.close()
                    return
                try:
                    conn.request("POST", path, body=body, headers=headers)
                    r = conn.getresponse()
                    raw = r.read()
                except (http.client.HTTPException, OSError) as e:
                    errors.append(f"{path}: {type(e).__name__}: {e}")
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    continue
                t1 = time.perf_counter()
                offsets[i] += 1
                if r.status != 200 or (check and not _at_version(raw, version)):
                    errors.append(f"{path}: {r.status} {raw[:300]!r} (expected version {version})")
                    mine.remove(i)  # out of step: leave this table alone
                    continue
                if t0 >= start:
                    lat.append(t1 - t0)
                    counts[k] += 1
        conn.close()

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(clients)]
    for t in threads:
        t.start()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    now = time.perf_counter()
    times["start"] = now + warmup
    times["end"] = now + warmup + duration
    barrier.wait()
    for t in threads:
        t.join()
    finished = time.perf_counter()
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    elapsed = min(finished, times["end"]) - times["start"]
    return {
        "count": sum(counts),
        "elapsed": elapsed,
        "latencies": [x for lat in latencies for x in lat],
        "errors": errors,
        "offsets": offsets,
        "client_cpu": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
        "exhausted": finished < times["end"] - 0.5,
    }


def _at_version(raw: bytes, version: int) -> bool:
    """Whether an answer says ``version``: its first key (orjson keeps the handler's order), and
    parsing the whole view only when that does not match. The load client shares the cores with
    the servers, and parsing every 3 KB view cost it a third more CPU per move than the baseline's."""
    if raw.startswith(b'{"version":%d,' % version):
        return True
    try:
        return json.loads(raw)["version"] == version
    except (ValueError, KeyError, TypeError):
        return False


# --- main ----------------------------------------------------------------------------


def prepare(args) -> list:
    """Every round gets tables of its own: ``rounds * tables`` game scripts."""
    n = args.warm + args.moves
    return pool_starmap(game_script, [(f"api:{i}", n) for i in range(args.tables * args.rounds)], 2)


def describe(name: str, result: dict, server_cpu: float, redis_cpu: float) -> str:
    lat = result["latencies"]
    rate = result["count"] / result["elapsed"] if result["elapsed"] > 0 else 0.0
    per = 1000 / max(result["count"], 1)
    return (
        f"  {name:9s} {rate:8.1f} moves/s  latency {summary_ms(lat)}\n"
        f"  {'':9s} cpu per move: server {server_cpu * per:.3f} ms, "
        f"redis {redis_cpu * per:.3f} ms, "
        f"load client {result['client_cpu'] * per:.3f} ms; errors {len(result['errors'])}"
        + (" (ran out of scripted moves)" if result["exhausted"] else "")
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="escoba POST /moves vs a bare Flask + XADD baseline")
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers, both servers")
    parser.add_argument("--threads", type=int, default=16, help="gthread threads per worker, both servers")
    parser.add_argument("--clients", type=int, default=16, help="load threads (persistent connections)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=1.0, help="uncounted seconds at the start of each run")
    # the machine's speed drifts by a fifth over minutes: three alternating pairs pool it out
    parser.add_argument("--rounds", type=int, default=3, help="baseline+escoba pairs, alternating")
    parser.add_argument("--warm", type=int, default=8, help="moves per table before measuring (mid-game)")
    # a selminha game to 31 lasts 390 to 600 moves: enough that no run (each round has its own
    # tables) runs out of scripted moves at up to 3,400 moves/s
    parser.add_argument("--moves", type=int, default=380, help="scripted moves per table for the runs")
    args = parser.parse_args(argv)
    exit_on_sigterm()

    print(
        f"escoba vs baseline: {args.tables} tables, gunicorn gthread workers={args.workers} "
        f"threads={args.threads}, {args.clients} client threads "
        f"(one process, persistent connections), {args.rounds} x {args.duration:g}s per server "
        f"(+{args.warmup:g}s warm-up), redis {REDIS_URL}",
        flush=True,
    )
    flush_bench_db()
    t = time.perf_counter()
    scripts = prepare(args)
    print(
        f"scripted {sum(len(s.moves) for s in scripts)} moves in {time.perf_counter() - t:.1f}s",
        flush=True,
    )

    escoba = baseline = None
    try:
        escoba = escoba_server(free_port(), args.threads, args.workers)
        baseline = baseline_server(free_port(), args.threads, args.workers)

        http = Http(escoba.port)
        tables = [open_table(http, s) for s in scripts]
        jobs = []
        for (table_id, tokens), script in zip(tables, scripts, strict=True):
            for seat, move, version in script.moves[: args.warm]:
                status, answer = http.call("POST", f"/tables/{table_id}/moves", move, tokens[seat])
                assert status == 200 and answer["version"] == version, (status, answer, version)
            moves = [
                (
                    {"Content-Type": "application/json", "Authorization": f"Bearer {tokens[seat]}"},
                    json.dumps(move).encode(),
                    version,
                )
                for seat, move, version in script.moves[args.warm :]
            ]
            jobs.append((f"/tables/{table_id}/moves", moves))
        http.close()
        print(f"opened {len(tables)} tables ({args.tables} per round) and played {args.warm} moves at each",
              flush=True)

        results = {"baseline": [], "escoba": []}
        for r in range(args.rounds):
            # this round's own mid-game tables, so no run finds its tables played out
            round_jobs = jobs[r * args.tables : (r + 1) * args.tables]
            for name, server in (("baseline", baseline), ("escoba", escoba)):
                cpu0, rcpu0 = cpu_seconds(server.pids()), redis_cpu_seconds()
                load = (server.port, round_jobs, [0] * len(round_jobs), args.clients, args.duration,
                        args.warmup, name == "escoba")
                [result] = pool_starmap(run_load, [load], 1)
                server_cpu = cpu_seconds(server.pids()) - cpu0
                redis_cpu = redis_cpu_seconds() - rcpu0
                results[name].append(result)
                print(describe(name, result, server_cpu, redis_cpu), flush=True)
                for e in result["errors"][:5]:
                    print(f"    error: {e}")
    finally:
        for server in (escoba, baseline):
            if server is not None:
                server.stop()
        flush_bench_db()

    def pooled(name):
        rs = results[name]
        count = sum(r["count"] for r in rs)
        elapsed = sum(r["elapsed"] for r in rs)
        lat = [x for r in rs for x in r["latencies"]]
        return count / elapsed, lat

    b_rate, b_lat = pooled("baseline")
    e_rate, e_lat = pooled("escoba")
    b99, e99 = percentile(b_lat, 99), percentile(e_lat, 99)
    for name, rate, lat, p99 in (("baseline", b_rate, b_lat, b99), ("escoba", e_rate, e_lat, e99)):
        p50 = percentile(lat, 50)
        print(f"{name + ':':9s} {rate:.1f} moves/s, p50 {p50 * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms")
    t_ratio, p_ratio = e_rate / b_rate, e99 / b99
    t_ok = "met" if t_ratio >= 0.5 else "MISSED"
    p_ok = "met" if p_ratio <= 2 else "MISSED"
    print(f"throughput ratio escoba/baseline = {t_ratio:.2f} (target >= 0.5: {t_ok})")
    print(f"p99 latency ratio escoba/baseline = {p_ratio:.2f} (target <= 2: {p_ok})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
