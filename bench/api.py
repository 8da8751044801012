"""A real client's mix against escoba and a bare Flask baseline: moves per second, CPU per move.

    python bench/api.py [--tables 120] [--workers 2] [--threads 64] [--clients 16] [--duration 10] [--rounds 3]

Redis runs as production does: a ``redis-server`` of the bench's own with
``appendonly yes`` and ``appendfsync always`` (every write fsynced before the
reply). Both servers run under the same gunicorn settings as production
(``api.server.serve``: the gevent worker, the same number of workers), with
``ESCOBA_RATE_LIMITS=off``.

The client does what a real one does, per move: GET its own view (the seat
whose turn it is, with its token), choose a legal move from the view's
``options`` (the first option, its first capture; NEXT ROUND between rounds),
POST it, and read the answer (the mover's new view says whose turn is next).
Every table also has a socket held open by the guest's seat, which gets every
change (escoba pushes a view and ``your_turn``; the baseline forwards the
notice). The load is one process with ``--clients`` threads, each with one
persistent HTTP connection and its own tables; one more thread reads every
socket, without websocket-client's pure-Python UTF-8 check of each text frame
(a browser checks natively): with it, reading escoba's 3 KB views cost the load
client 0.3 ms a move, on the same two cores as the servers. The baseline gets
the same requests: its GET answers a stored copy of a real escoba view, its
POST stores the body (XADD), publishes the notice and answers that view, in
one round trip.

Measured runs alternate, baseline then escoba, ``--rounds`` times; each round
has tables of its own (two-player ``selminha`` games to 31, played 8 moves in
before). A run's window closes when the first of its games ends: from then on
fewer tables would be played at once, and the run would measure a client
waiting rather than a server working (the baseline's games never end, its moves
change nothing). With the old default of 30 tables escoba's games ended within
a run and the clients then idled: 0.70 to 0.72 of the baseline became 0.76 to
0.78 with the window closed at the first end (same code, same machine). 120
tables keep a window whole on this machine; a run that is cut says by how much.
Prints each run,
then the pooled moves/s and their ratio (target >= 0.85, issue 26), p99 of a move
(GET + POST) and CPU per move of each server (its gunicorn processes), of
Redis and of the load client.

What it leaves out: bots and the RQ worker (the timers the API schedules on
every move are in, the jobs that would fire are not run), chat and the event
feed, If-None-Match (each GET follows a change, so a 304 would never apply),
TLS and a proxy in front, more than one Redis or a network between them, and the
rate limits (off on both servers, the baseline having none: in production the moves'
per-token window is counted inside the move's append step, about 1% more Redis a move,
bench/games.py --limits on|off).
"""

from __future__ import annotations

import argparse
import http.client
import resource
import selectors
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson  # noqa: E402
import redis  # noqa: E402
import websocket  # noqa: E402

import bench._common as common  # noqa: E402
from bench._common import (  # noqa: E402
    Http,
    cpu_seconds,
    exit_on_sigterm,
    free_port,
    percentile,
    pool_starmap,
    private_redis,
    summary_ms,
)

PRESET = "selminha"
SETTINGS = {"target": 31}


def choose(view: dict) -> dict | None:
    """A legal move from the view, as a simple client picks one; None when the game is over."""
    status = view.get("status")
    if status == "round_over":
        return {"type": "next_round"}
    if status != "playing" or not view.get("options"):
        return None
    option = view["options"][0]
    return {"type": "play", "card": option["card"],
            "capture": option["captures"][0] if option["captures"] else []}


# --- the load process ------------------------------------------------------------------


def run_load(port: int, tables: list, clients: int, duration: float, warmup: float, baseline: bool) -> dict:
    """``tables[i] = (table_id, {seat: token}, turn)``. Runs the mix for ``duration`` seconds."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    counts = [0] * clients
    errors: list[str] = []
    barrier = threading.Barrier(clients + 2)
    times: dict = {}
    stop = threading.Event()
    lock = threading.Lock()
    received = [0]

    sockets = []
    for table_id, tokens, _ in tables:
        query = "" if baseline else f"?token={tokens[1]}"
        # websocket-client checks a text frame's UTF-8 in pure Python (about 0.1 ms per KB),
        # which a browser does natively: left on, the load client spent more CPU on escoba's
        # 3 KB views than the server it measures, on the same two cores
        sockets.append(websocket.create_connection(f"ws://127.0.0.1:{port}/tables/{table_id}/ws{query}",
                                                   timeout=30, skip_utf8_validation=True))

    def reader() -> None:
        sel = selectors.DefaultSelector()
        for ws in sockets:
            sel.register(ws.sock, selectors.EVENT_READ, ws)
        barrier.wait()
        while not stop.is_set():
            for key, _ in sel.select(timeout=0.2):
                try:
                    # control frames too: a ping alone must not leave it waiting for data after the run
                    opcode, _ = key.data.recv_data_frame(True)
                    if opcode in (websocket.ABNF.OPCODE_TEXT, websocket.ABNF.OPCODE_BINARY):
                        received[0] += 1
                except Exception:  # closed
                    sel.unregister(key.fileobj)

    def over(at: float) -> None:
        """A table's game has ended: the window closes here, so every measured move had all the
        tables in play (the baseline's never end: its moves change nothing)."""
        at = max(at, times["start"])  # a game that ends in the warm-up leaves an empty window
        with lock:
            times["over"] = min(times.get("over", at), at)

    def worker(k: int) -> None:
        mine = [list(t) for t in tables[k::clients]]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        lat = latencies[k]
        barrier.wait()
        start, end = times["start"], times["end"]
        while mine:
            for entry in mine:
                table_id, tokens, turn = entry
                t0 = time.perf_counter()
                if t0 >= min(end, times.get("over", end)):
                    conn.close()
                    return
                auth = {"Authorization": f"Bearer {tokens[turn]}"}
                try:
                    conn.request("GET", f"/tables/{table_id}", headers=auth)
                    r = conn.getresponse()
                    view = orjson.loads(r.read())
                    move = choose(view)
                    if move is None or r.status != 200:
                        if r.status != 200:
                            errors.append(f"GET {table_id}: {r.status}")
                        over(t0)
                        continue
                    conn.request("POST", f"/tables/{table_id}/moves", body=orjson.dumps(move),
                                 headers={**auth, "Content-Type": "application/json"})
                    r = conn.getresponse()
                    answer = orjson.loads(r.read())
                except (http.client.HTTPException, OSError, ValueError) as e:
                    errors.append(f"{table_id}: {type(e).__name__}: {e}")
                    conn.close()
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                    continue
                t1 = time.perf_counter()
                if r.status != 200:
                    errors.append(f"POST {table_id}: {r.status} {str(answer)[:200]}")
                    over(t0)
                    continue
                if not baseline:
                    nxt = answer["table"].get("turn")
                    entry[2] = nxt if nxt in tokens else 0
                if start <= t0 and t1 <= times.get("over", end):
                    lat.append(t1 - t0)
                    counts[k] += 1

    threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(clients)]
    threads.append(threading.Thread(target=reader, daemon=True))
    for t in threads:
        t.start()
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    now = time.perf_counter()
    times["start"] = now + warmup
    times["end"] = now + warmup + duration
    barrier.wait()
    for t in threads[:-1]:
        t.join()
    finished = time.perf_counter()
    stop.set()
    threads[-1].join()
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    for ws in sockets:
        ws.close()
    return {
        "count": sum(counts),
        "elapsed": min(finished, times["end"], times.get("over", times["end"])) - times["start"],
        "latencies": [x for lat in latencies for x in lat],
        "errors": errors,
        "received": received[0],
        "client_cpu": (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime),
        "cut": times["end"] - times["over"] if times.get("over", times["end"]) < times["end"] else 0.0,
    }


# --- main ----------------------------------------------------------------------------------


def open_tables(port: int, n: int, warm: int) -> list:
    """``n`` two-player tables on escoba, started and played ``warm`` moves in."""
    http = Http(port)
    out = []
    for _ in range(n):
        status, host = http.call("POST", "/tables", {"name": "Ana", "preset": PRESET, "settings": SETTINGS})
        assert status == 201, host
        tid = host["table_id"]
        status, guest = http.call("POST", f"/tables/{tid}/seats", {"name": "Bea"})
        assert status == 201, guest
        tokens = {0: host["token"], 1: guest["token"]}
        status, answer = http.call("POST", f"/tables/{tid}/moves", {"type": "start"}, tokens[0])
        assert status == 200, answer
        turn = answer["table"]["turn"]
        for _ in range(warm):
            _, view = http.call("GET", f"/tables/{tid}", None, tokens[turn])
            status, answer = http.call("POST", f"/tables/{tid}/moves", choose(view), tokens[turn])
            assert status == 200, answer
            turn = answer["table"]["turn"] if answer["table"]["turn"] in tokens else 0
        out.append((tid, tokens, turn))
    http.close()
    return out


def describe(name: str, result: dict, server_cpu: float, redis_cpu: float) -> str:
    rate = result["count"] / result["elapsed"] if result["elapsed"] > 0 else 0.0
    per = 1000 / max(result["count"], 1)
    return (
        f"  {name:9s} {rate:8.1f} moves/s (GET view + POST move)  latency {summary_ms(result['latencies'])}\n"
        f"  {'':9s} cpu per move: server {server_cpu * per:.3f} ms, redis {redis_cpu * per:.3f} ms, "
        f"load client {result['client_cpu'] * per:.3f} ms; socket messages {result['received']}; "
        f"errors {len(result['errors'])}"
        + (f" (a game ended: window cut {result['cut']:.1f} s short)" if result["cut"] else "")
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, default=120, help="tables per round (one socket each)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers, both servers")
    parser.add_argument("--threads", type=int, default=64,
                        help="threads per worker under --worker-class gthread only (unused by gevent)")
    parser.add_argument("--clients", type=int, default=16, help="load threads (persistent connections)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=1.0, help="uncounted seconds at the start of each run")
    # the machine's speed drifts by a fifth over minutes: alternating pairs pool it out
    parser.add_argument("--rounds", type=int, default=3, help="baseline+escoba pairs, alternating")
    parser.add_argument("--warm", type=int, default=8, help="moves per table before measuring (mid-game)")
    args = parser.parse_args(argv)
    exit_on_sigterm()

    results = {"baseline": [], "escoba": []}
    with private_redis(durable=True) as server:
        common.use_redis(server.url_db(9))
        print(
            f"escoba vs baseline: {args.tables} tables a round, gunicorn gevent workers={args.workers}, "
            f"{args.clients} client threads + a socket per table, "
            f"{args.rounds} x {args.duration:g}s per server (+{args.warmup:g}s warm-up), "
            f"redis-server of its own with appendfsync always (the machine may be shared)",
            flush=True,
        )
        print(f"interpreter (both servers and the load client): {common.interpreter()}", flush=True)
        client = redis.Redis.from_url(common.REDIS_URL)
        env = common.server_env(ESCOBA_RATE_LIMITS="off")
        escoba = baseline = None
        try:
            port = free_port()
            escoba = common.start_server("escoba", ["-m", "api.cli", "serve", *common._serve_args(
                port, args.threads, args.workers)], port, workers=args.workers, env=env)
            port = free_port()
            baseline = common.start_server("baseline", [str(common.ROOT / "bench" / "baseline_app.py"),
                                                        *common._serve_args(port, args.threads, args.workers)],
                                           port, workers=args.workers, env=env)
            t = time.perf_counter()
            tables = open_tables(escoba.port, args.tables * args.rounds, args.warm)
            http = Http(escoba.port)
            for tid, tokens, turn in tables:  # the baseline's stored view: a real one of the same table
                _, view = http.call("GET", f"/tables/{tid}", None, tokens[turn])
                client.set(f"baseline:{{{tid}}}:view", orjson.dumps(view))
            http.close()
            print(f"opened {len(tables)} tables and played {args.warm} moves at each in "
                  f"{time.perf_counter() - t:.1f}s", flush=True)
            for r in range(args.rounds):
                mine = tables[r * args.tables:(r + 1) * args.tables]
                for name, srv in (("baseline", baseline), ("escoba", escoba)):
                    cpu0, rcpu0 = cpu_seconds(srv.pids()), common.redis_cpu_seconds()
                    load = (srv.port, mine, args.clients, args.duration, args.warmup, name == "baseline")
                    [result] = pool_starmap(run_load, [load], 1)
                    server_cpu = cpu_seconds(srv.pids()) - cpu0
                    redis_cpu = common.redis_cpu_seconds() - rcpu0
                    result["server_cpu"], result["redis_cpu"] = server_cpu, redis_cpu
                    results[name].append(result)
                    print(describe(name, result, server_cpu, redis_cpu), flush=True)
                    for e in result["errors"][:5]:
                        print(f"    error: {e}")
        finally:
            for srv in (escoba, baseline):
                if srv is not None:
                    srv.stop()
            client.close()

    def pooled(name):
        rs = results[name]
        count = sum(r["count"] for r in rs)
        return (count / sum(r["elapsed"] for r in rs), [x for r in rs for x in r["latencies"]],
                sum(r["server_cpu"] for r in rs) / max(count, 1) * 1e3,
                sum(r["redis_cpu"] for r in rs) / max(count, 1) * 1e3)

    b_rate, b_lat, b_cpu, b_rcpu = pooled("baseline")
    e_rate, e_lat, e_cpu, e_rcpu = pooled("escoba")
    for name, rate, lat, cpu, rcpu in (("baseline", b_rate, b_lat, b_cpu, b_rcpu),
                                       ("escoba", e_rate, e_lat, e_cpu, e_rcpu)):
        print(f"{name + ':':9s} {rate:.1f} moves/s, p50 {percentile(lat, 50) * 1e3:.2f} ms, "
              f"p99 {percentile(lat, 99) * 1e3:.2f} ms, server CPU per move {cpu:.3f} ms, redis {rcpu:.3f} ms")
    t_ratio, p_ratio = e_rate / b_rate, percentile(e_lat, 99) / percentile(b_lat, 99)
    print(f"throughput ratio escoba/baseline = {t_ratio:.2f} (target >= 0.85: "
          f"{'met' if t_ratio >= 0.85 else 'MISSED'})")
    print(f"p99 latency ratio escoba/baseline = {p_ratio:.2f}; server CPU per move escoba/baseline = "
          f"{e_cpu / b_cpu:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
