"""The opponent's latency at three offered loads, escoba against boardgame.io, side by side in one run.

    npm ci --prefix bench/peer     # once: boardgame.io 0.50.2, node-persist (its FlatFile) and ws into bench/peer
    python bench/latency.py --quick                  # about 2 minutes: 3 s a side and load, one round
    python bench/latency.py                          # about 10 minutes: 20 s a side and load, two rounds
    python bench/latency.py --also /tmp/old          # and another checkout's escoba beside it (git worktree):
                                                     # a third more time (on a machine at load 14 to 29, the
                                                     # quick run with --also took 9 minutes)

What it runs, each on its own and in turn (ABBA: the order turns each round, so a drift of the
machine's speed over minutes favours no side):
- escoba: ``escoba serve --workers 1`` (gunicorn's gevent worker, the image's heap where this machine has
  jemalloc) over its own redis-server with AOF ``appendfsync always``, rate limits on, as production,
  but the moves' per-token limit raised far above the bench's pace (``ESCOBA_MOVES_LIMIT``, ``MOVES_LIMIT``
  here: each player moves 5 to 8 times a second at 0.5 and 0.75 load, where production's 120 a minute
  refused some 200 moves a run and stopped those games, so fewer moves were offered than the load
  said; the count is still made in each move's append step, so its cost is measured); moves sent over
  the players' sockets, changes sent as patches (the page's way);
- ``--also DIR``: the same, run from another checkout (e.g. ``git worktree add /tmp/old 807e37c``; one
  older than ``ESCOBA_MOVES_LIMIT`` keeps 120 moves a minute a token, and refuses some of the bench's);
- boardgame.io 0.50.2, in memory (the target's peer) and with its FlatFile storage (node-persist, a
  file per match rewritten each move, not fsynced) (bench/peer.py, bench/peer/server.js).

The load: ``--tables`` two-player tables (100) at a time, a socket per player; a pair whose game ends moves
on to its next table (two new sockets), as load.js opens a new match (a game to 31 is 350 to 600 moves,
which a pair played through inside a 0.75 load's window, and then offered nothing: escoba made 1,795
moves a second there against the peer's 2,382); escoba's next tables are opened before the run, the
peer's next matches in the window. When a player's socket shows its
turn, it waits a think time (uniform in 0.5..1.5 x ``think``) and sends its move: an open loop at the
scale of a move's latency (the think time is 25 to 200 times it), the same for every side. First a
short phase measures the peer's saturation (boardgame.io in memory, no think time: its moves a
second; ``--saturation N`` takes it as given); each load is then a share of it (``--loads``, 0.25,
0.5 and 0.75), and ``think = tables / (share x saturation)``.

The client: each side is played by a Node program with one event loop, so that both sides' latency
carries the same kind of client's overhead: the peer's by bench/peer/load.js (socket.io), escoba's by
bench/peer/escoba-load.js (``--client node``, the default: raw WebSockets through the ``ws`` package).
This script opens escoba's tables and works out their games as before, then hands the node client a
plan (the port, each table's id, seat tokens and moves); node plays the same open loop as load.js and
gives its window's moves, latencies and spans in CLOCK_MONOTONIC seconds (``perf_counter``'s clock, so
the spans line up with the stage timers), saying when its window starts and ends so that Redis is
sampled over the same window. ``--client python`` plays escoba's side with bench/games.py's client
(8 sender threads and bench/_ws.py's reader thread, under the GIL), as every run before 2026-12-06
did: its own overhead was in escoba's latency (0.4 to 0.9 ms of the p50 at 0.25 and 0.5 load against
escoba's own timers, and at 0.75 load its CPU crowded the 2 cores), not in the peer's.

What it prints, a load at a time, a line a side: the moves a second it made, the opponent's latency
(from just before the move's send to the opponent's socket holding the new version: the raw read of
the frame here, the socket.io message as it arrives for the peer, as bench/games.py compares them)
p50 / p99 / p99.9 pooled over the rounds, the server's CPU a move (escoba: the API's, and Redis's
beside it), and the ratios to boardgame.io in memory with the target (p99 <= 1.2x, p50 <= 1.5x); escoba's
line also says what share of the p50's allowance (half the peer's p50: what the target leaves a durable
server over an in-memory one) the fsync alone takes on this host (the host line's lone round trip at 200 a
second with the fsync less the same without it, ``PrivateRedis.without_fsync``).
Then, from escoba's own timers (``ESCOBA_STAGE_TIMES``, events/stages.py; production does not set it, so
by default the measured rounds run without them and one more run a load, apart, has them: ``--timers``):
each stage's share of the
time from the mover's handler waking to the opponent's frame written (frame read, decision, append,
fan-out incl. the opponent's frame build and write; then the snapshot when due and the timers hook, the
log line and the mover's own frames, after it), p50 / p99 and what the slowest 1% are made of; the append's
parts (on one Redis, the direct way: to the step's send, the frames built meanwhile, the send to the reply, the
reply read; events/direct.py's marks); the event loop's lag; the
collector's passes; the changes left to a busy socket's mailbox and how long they waited; Redis's AOF
fsync stalls; and how many of the slowest 1% of moves overlapped a collection, a loop stall or an
fsync stall. The machine's load average is printed before and after every run: on a shared machine
the milliseconds move with it; the ratios, side by side, less.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402
    DEPLOYED_REDIS_CPUS,
    Http,
    Placement,
    Server,
    cpu_split,
    exit_on_sigterm,
    free_port,
    game_script,
    interpreter,
    open_table,
    percentile,
    pool_starmap,
    processor,
    server_env,
    start_private_redis,
    vcpu_packing,
    wait_healthy,
)
from bench._ws import Reader  # noqa: E402
from bench.games import Game, Loop, seat_sockets  # noqa: E402
from bench.peer import PEER_DIR, run_peer  # noqa: E402
from events.config import core_list  # noqa: E402

STALL_MS = 5  # an AOF fdatasync over this is a stall (Redis's latency monitor)
LOOP_STALL_MS = 2.0  # the event loop woke this much late or more: something held it
# the stages of a socket move in escoba's worker, by the mark that ends each (events/stages.py), grouped
STAGES = {
    "read": "frame read",
    "checked": "decision", "decided": "decision",
    "appended": "append",
    "fanout": "fan-out",
    "hooked": "snapshot+hook",
    "logged": "log+metrics",
}
GROUPS = ("frame read", "decision", "append", "snapshot+hook", "log+metrics", "fan-out")
# the append's own marks (events/direct.py: one Redis, the direct way), between "decided" and "appended": each
# part's name, and the mark that ends it
APPEND_PARTS = (("to the step's send", "sent"), ("the frames built meanwhile", "built ahead"),
                ("the send to the reply (Redis's step and fsync, and the worker's way back)", "reply"),
                ("the reply read", "appended"))
OWN_WRITE = "written"  # the mover's ack and view, after the opponent's
# the moves' per-token limit the bench's server runs with (ESCOBA_MOVES_LIMIT): the limits stay on, so each
# move's count is still in its append's step and measured, but far above the bench's pace (each player
# moves up to 5 to 8 times a second at 0.5 and 0.75 load, over the default 120 a minute: refused games stop)
MOVES_LIMIT = "100000 per minute"
MIN_GAME = 300  # moves: the fewest a scripted game to 31 is planned to hold (they ran 348 to 590 in a sample of 8)


def loadavg() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f}"


def redis_cores_said(cores: frozenset[int] | None) -> str:
    if cores is None:
        return f", its threads on core {DEPLOYED_REDIS_CPUS} as deployed (ESCOBA_REDIS_CPUS)"
    if not cores:
        return ", its threads where the kernel puts them (NOT production: a diagnostic)"
    return f", its threads on cores {','.join(map(str, sorted(cores)))} (NOT production: a diagnostic)"


def kept_off(redis_cores: frozenset[int] | None, api_cores: frozenset[int] | None) -> str:
    """escoba serve's ``ESCOBA_REDIS_CPUS``: the cores it keeps off, Redis's, as deployed; none when ``--api-cores``
    places it (or frees it) instead."""
    if api_cores is not None:
        return ""
    return DEPLOYED_REDIS_CPUS if redis_cores is None else ",".join(map(str, sorted(redis_cores)))


def api_cores_said(cores: frozenset[int] | None) -> str:
    if cores is None:
        return "; escoba serve off Redis's cores as deployed (ESCOBA_REDIS_CPUS)"
    if not cores:
        return "; escoba serve where the kernel puts it (NOT production: a diagnostic)"
    return f"; escoba serve on cores {','.join(map(str, sorted(cores)))} only (NOT production: a diagnostic)"


PLACEMENT_RATES = (200, 2000)  # the host line's round trips a second: under and over a quarter load's appends (500-900)


def cores_arg(text: str) -> frozenset[int]:
    """``--redis-cores``: cores as taskset lists them (``1``, ``0,2``, ``2-3``), each one this process may use;
    ``free`` (the empty set): none, every Redis thread where the kernel puts it."""
    if text == "free":
        return frozenset()
    try:
        cores = core_list(text, "the list")  # read as escoba serve reads ESCOBA_REDIS_CPUS
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of cores: {text!r}") from exc
    if not cores or not cores <= os.sched_getaffinity(0):
        raise argparse.ArgumentTypeError(f"cores {text!r}: this machine's are {sorted(os.sched_getaffinity(0))}")
    return cores


@dataclass(frozen=True)
class Host:
    """What the host line says (``host_probe``): where this host runs a Redis woken by its sender, and a durable
    round trip's p50, at a low and a high rate; at the low one, the same without the fsync (``bare``: only when
    the AOF's fsync is on), so each load's verdict can say how much of the p50's allowance the disk's flush
    alone takes here (``fsync_adds``)."""

    fsync: str
    seen: tuple[Placement, ...]
    bare: Placement | None
    packing: str | None

    @property
    def fsync_adds(self) -> float | None:
        """Seconds the fsync adds to a lone round trip at the low rate (None: no fsync to measure)."""
        return None if self.bare is None else max(0.0, self.seen[0].median - self.bare.median)

    def line(self) -> str:
        seen = self.seen
        return ("host: a SET of a move's size, appendfsync " + self.fsync + ", at "
                + " / ".join(f"{p.rate:g}" for p in seen) + " a second: Redis last ran on its sender's core in "
                + " / ".join(f"{p.same_core:.0%}" for p in seen) + " of the replies, round trip p50 "
                + " / ".join(ms(p.median) for p in seen) + " ms"
                + (f" (at {self.bare.rate:g} without the fsync {ms(self.bare.median)} ms: the fsync adds "
                   f"{ms(self.fsync_adds or 0.0)})" if self.bare is not None else "")
                + (f"; kernel.sched_vcpu_pack {self.packing}" if self.packing is not None else ""))


def host_probe(fsync: str) -> Host:
    """The host line's probe (``PrivateRedis.placement``, ``without_fsync``): what decides the append's part of
    the p50 at a quarter load (docs/benchmarks.md)."""
    redis = start_private_redis(fsync=fsync, cores=frozenset())  # where the host puts a Redis its sender woke
    try:
        seen = tuple(redis.placement(rate) for rate in PLACEMENT_RATES)
        bare = redis.without_fsync(PLACEMENT_RATES[0]) if fsync == "always" else None
    finally:
        redis.stop()
    return Host(fsync, seen, bare, vcpu_packing())


def ms(x: float) -> str:
    return f"{x * 1000:.2f}" if x == x else "-"


TIMERS_SAID = {"apart": "off in the measured rounds, as production runs (one run apart a load with them, for the "
                        "stages' report)", "on": "on in every round (their CPU in escoba's)", "off": "off"}

# --- escoba ----------------------------------------------------------------------------------


def start_escoba(root: Path, port: int, tables: int, env: dict, workers: int = 1,
                 cores: frozenset[int] = frozenset()) -> Server:
    """``escoba serve --workers N`` from ``root`` (this checkout or another), as bench/_common.py starts it;
    ``cores``: every process and thread of it on these only (``taskset``, inherited by the workers it forks)."""
    log_path = f"/tmp/bench-latency-escoba-{port}.log"
    pinned = ["taskset", "-c", ",".join(map(str, sorted(cores)))] if cores else []
    argv = [*pinned, sys.executable, "-m", "api.cli", "serve", "--host", "127.0.0.1", "--port", str(port),
            "--threads", str(4 * tables + 64), "--workers", str(workers), "--worker-class", "gevent"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, cwd=root, env={**env, "PYTHONPATH": str(root)}, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    server = Server("escoba", port, proc, log_path)
    wait_healthy(server, workers)
    return server


def run_escoba(root: Path, pairs: list[list], think: float, warmup: float, duration: float, seed: str,
               fsync: str = "always", timers: bool = True, client: str = "node", realtime: int = 0,
               workers: int = 1, servers: int = 1, redis_cores: frozenset[int] | None = None,
               api_cores: frozenset[int] | None = None) -> dict:
    """One measured run: a fresh durable Redis and server, the tables opened anew, the loop, the window.
    ``servers`` above 1: that many ``escoba serve`` processes over the one Redis, each pair's tables and
    sockets on one of them (pair i on server i mod n), as a proxy routing each table to one process would."""
    redis = start_private_redis(durable=True, fsync=fsync, realtime=realtime, cores=redis_cores)
    stage_dir = tempfile.mkdtemp(prefix="bench-latency-stages-")
    env = server_env(REDIS_URL=redis.url, ESCOBA_RATE_LIMITS="on", ESCOBA_TRUSTED_PROXIES="1",
                     ESCOBA_MOVES_LIMIT=MOVES_LIMIT,
                     ESCOBA_REDIS_CPUS=kept_off(redis_cores, api_cores),
                     **({"ESCOBA_STAGE_TIMES": f"{stage_dir}/stages"} if timers else {}))
    started: list[Server] = []
    try:
        for _ in range(servers):
            started.append(start_escoba(root, free_port(), len(pairs), env, workers, api_cores or frozenset()))
        https = [Http(server.port) for server in started]
        games = []  # a pair's tables, one after another
        for i, scripts in enumerate(pairs):
            http = https[i % servers]
            http.forwarded_for = f"10.0.{i // 250}.{i % 250 + 1}"  # each pair's own client address
            games.append([Game(i, *open_table(http, s), s) for s in scripts])
        for http in https:
            http.close()
        window = RedisWindow(redis)
        if client == "node":
            got = node_window(started, games, think, warmup, duration, seed, window)
        else:
            got = python_window(started[0], games, think, warmup, duration, seed, window)
        n = got["moves"]
        fsync = [(second - m / 1000 - window.wall, second + 1 - window.wall, m) for second, m in window.stalled]
        return {**got, "cpu_ms": got["api_cpu"] * 1000 / max(1, n), "redis_ms": window.cpu * 1000 / max(1, n),
                "client_ms": got["client_cpu"] * 1000 / max(1, n),
                "step_us": (window.calls.get("usec:evalsha", 0) - window.calls0.get("usec:evalsha", 0)) / max(1, n),
                "stages": read_stages(stage_dir, got["t0"], got["t1"]), "fsync": fsync,
                "tables": [[g.table_id for g in tables] for tables in games]}
    finally:
        for server in started:
            server.stop()
        redis.stop()
        shutil.rmtree(stage_dir, ignore_errors=True)


class RedisWindow:
    """Redis's CPU, commands and AOF fsync stalls over the measured window, sampled at its two ends."""

    def __init__(self, redis):
        self.redis = redis

    def start(self) -> None:
        self.cpu0, self.calls0 = self.redis.cpu_split(), self.redis.commands()
        self.redis.watch_stalls(STALL_MS)
        self.wall = time.time() - time.perf_counter()  # Redis notes its stalls by the clock's second

    def end(self) -> None:
        self.cpu = sum(b - a for a, b in zip(self.cpu0, self.redis.cpu_split(), strict=True))
        self.stalled = self.redis.stalled_seconds()
        self.calls = self.redis.commands()


def node_window(servers: list[Server], games: list[list[Game]], think: float, warmup: float, duration: float, seed: str,
                window: RedisWindow) -> dict:
    """The games played by bench/peer/escoba-load.js (Node, one event loop, as the peer's load.js): it is
    handed the plan (the port, each table's id, seat tokens and moves), says when its window starts and
    ends (Redis is sampled then), and gives its moves, latencies and spans in perf_counter's clock."""
    if shutil.which("node") is None or not (PEER_DIR / "node_modules" / "ws").is_dir():
        raise SystemExit("--client node needs node and bench/peer/node_modules (npm ci --prefix bench/peer); "
                         "or give --client python")
    server = servers[0]
    plan = {"port": server.port, "server_pids": [pid for s in servers for pid in s.pids()], "think": think,
            "warmup": warmup, "duration": duration, "seed": seed, "frames": "patch",
            "pairs": [{"port": servers[i % len(servers)].port,
                       "tables": [{"id": g.table_id, "tokens": [g.tokens[0], g.tokens[1]],
                                   "start_version": g.start_version, "moves": [list(m) for m in g.moves]}
                                  for g in tables]} for i, tables in enumerate(games)]}
    with tempfile.NamedTemporaryFile("w", prefix="bench-latency-plan-", suffix=".json", delete=False) as f:
        json.dump(plan, f)
    log_path = f"/tmp/bench-latency-node-{server.port}.log"
    got = None
    with open(log_path, "w") as log:
        proc = subprocess.Popen(["node", "escoba-load.js", f.name], cwd=PEER_DIR, stdout=subprocess.PIPE,
                                stderr=log, text=True, env={**os.environ, "NODE_ENV": "production"})
    # a client that hangs is ended: 200 sockets opened one at a time take seconds, never a minute
    watchdog = threading.Timer(warmup + duration + 120, proc.kill)
    watchdog.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            said = json.loads(line)
            if said.get("window") == "start":
                window.start()
                late = time.perf_counter() - said["t"]
                if not 0 <= late < 1.0:  # one clock (CLOCK_MONOTONIC) for node's spans and the stage timers
                    print(f"    (node's clock is {late:.3f} s from perf_counter's: the spans and the stage timers "
                          f"do not line up)", flush=True)
            elif said.get("window") == "end":
                window.end()
            else:
                got = said
        proc.wait(10)
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.unlink(f.name)
    if got is None or proc.returncode != 0:
        with open(log_path) as log:
            raise SystemExit(f"bench/peer/escoba-load.js failed ({proc.returncode}): {log.read()[-2000:]}")
    return {"moves": got["moves"], "window": got["t1"] - got["t0"], "t0": got["t0"], "t1": got["t1"],
            "lat": [s[1] - s[0] for s in got["spans"]], "spans": [tuple(s) for s in got["spans"]],
            "missing": got["missing"], "errors": got["errors"], "first_error": got["first_error"],
            "api_cpu": got["server_cpu_s"], "client_cpu": got["client_cpu_s"], "finished": got["finished"],
            "out_of_tables": got["out_of_tables"]}


def python_window(server, pairs: list[list[Game]], think: float, warmup: float, duration: float, seed: str,
                  window: RedisWindow) -> dict:
    """The games played by bench/games.py's client (8 sender threads, bench/_ws.py's reader thread): the
    figures before 2026-12-06, with its own overhead in escoba's latency. Each pair plays its first table
    only (this client does not move on: at 0.75 load its games end inside the window)."""
    games = [tables[0] for tables in pairs]
    reader = Reader()
    loop = Loop(server.port, games, think, 8, seed, "socket")
    try:
        seat_sockets(server.port, games, loop, reader, "patch")
        time.sleep(warmup)
        api0, client0 = cpu_split(server.pids()), os.times()
        window.start()
        loop.measuring = True
        t0 = time.perf_counter()
        time.sleep(duration)
        loop.measuring = False
        t1 = time.perf_counter()
        api = sum(b - a for a, b in zip(api0, cpu_split(server.pids()), strict=True))
        client1 = os.times()
        window.end()
        loop.stop.set()
        time.sleep(1.0)  # the last sockets hear; the timers' files are written every half second
    finally:
        loop.stop.set()
        reader.stop.set()
    lat, spans, missing = [], [], 0
    for gi, k, sent, _answered in list(loop.sent):
        game = games[gi]
        seat, _move, version = game.moves[k]
        heard = game.sockets[1 - seat].first_at(version)
        if heard is None:
            missing += 1
        else:
            lat.append(heard - sent)
            spans.append((sent, heard, game.table_id, version))
    finished = sum(1 for g in games if g.k >= len(g.moves))  # each pair's one table: finished is out of tables
    return {"moves": len(loop.sent), "window": t1 - t0, "t0": t0, "t1": t1, "lat": lat, "spans": spans,
            "missing": missing, "errors": len(loop.errors), "first_error": loop.errors[0] if loop.errors else None,
            "api_cpu": api, "client_cpu": (client1.user + client1.system) - (client0.user + client0.system),
            "finished": finished, "out_of_tables": finished}


def read_stages(stage_dir: str, t0: float, t1: float) -> dict:
    """The worker's timers (events/stages.py) inside the window [t0, t1]; empty for a server without them."""
    out: dict = {"move": [], "lag": [], "gc": [], "mailbox": []}
    for path in glob.glob(f"{stage_dir}/stages.*"):
        with open(path) as f:
            for line in f:
                for row in json.loads(line):
                    kind = row[0]
                    at = row[1][0][1] if kind == "move" else row[1]
                    if t0 <= at <= t1:
                        out.setdefault(kind, []).append(row[1:])
    return out


# --- the peer --------------------------------------------------------------------------------


def run_boardgame(storage: str, tables: int, think: float, warmup: float, duration: float) -> dict | None:
    got = run_peer(games=tables, duration=duration, think=think, warmup=warmup, storage=storage)
    if got is None:
        return None
    heard = got.get("heard_socket_ms") or got["heard_ms"]  # the socket.io message as it arrives
    return {"moves": got["moves"], "window": got["seconds"], "lat": [x / 1000 for x in heard],
            "missing": got["missing"], "errors": got["errors"], "first_error": got.get("first_error"),
            "cpu_ms": got["cpu_ms_per_move"], "redis_ms": 0.0, "step_us": 0.0, "stages": None}


# --- the report ------------------------------------------------------------------------------


def pooled(runs: list[dict]) -> dict:
    lat = [x for r in runs for x in r["lat"]]
    moves = sum(r["moves"] for r in runs)
    return {
        "moves": moves, "rate": moves / max(1e-9, sum(r["window"] for r in runs)), "lat": lat,
        "p50": percentile(lat, 50), "p99": percentile(lat, 99), "p999": percentile(lat, 99.9),
        "cpu_ms": sum(r["cpu_ms"] * r["moves"] for r in runs) / max(1, moves),
        "redis_ms": sum(r["redis_ms"] * r["moves"] for r in runs) / max(1, moves),
        "step_us": sum(r["step_us"] * r["moves"] for r in runs) / max(1, moves),
        "missing": sum(r["missing"] for r in runs), "errors": sum(r["errors"] for r in runs),
    }


def side_line(name: str, p: dict, peer: dict | None, fsync_adds: float | None = None) -> str:
    """A side's result at a load and, beside the peer's, its ratios to the targets. ``fsync_adds`` (the host
    line's, escoba's sides only): what the fsync alone adds to a lone round trip, as a share of the p50's
    allowance, the half of the peer's p50 the target leaves a durable server over an in-memory one."""
    cpu = f"CPU {p['cpu_ms']:.3f} ms a move" + (
        f" + Redis {p['redis_ms']:.3f} (its append step {p['step_us']:.0f} us)" if p["redis_ms"] else "")
    line = (f"  {name:<34} {p['rate']:7.0f} moves/s  opponent p50 {ms(p['p50']):>7} / p99 {ms(p['p99']):>7} / "
            f"p99.9 {ms(p['p999']):>7} ms  {cpu}")
    if peer is not None and p is not peer:
        r50, r99 = p["p50"] / peer["p50"], p["p99"] / peer["p99"]
        line += (f"  | x peer: p50 {r50:.2f} ({'met' if r50 <= 1.5 else 'MISSED'} <= 1.5), "
                 f"p99 {r99:.2f} ({'met' if r99 <= 1.2 else 'MISSED'} <= 1.2), CPU {p['cpu_ms'] / peer['cpu_ms']:.2f}")
        if fsync_adds is not None:
            line += (f"; the fsync alone (host line) {fsync_adds / (0.5 * peer['p50']):.0%} of the p50's allowance "
                     f"({ms(0.5 * peer['p50'])} ms)")
    if p["missing"] or p["errors"]:
        line += f"  [never heard {p['missing']}, errors {p['errors']}]"
    return line


def outside_report(runs: list[dict]) -> list[str]:
    """The client's wait outside the server's timers, move by move: from its send to the handler's wake (the
    kernel's hop, and the wait for the worker when it is busy with another move) and from the opponent's frame
    written to its arrival (the kernel's hop and the client's loop). A move's timers carry its table and
    version (events/stages.py ``tag``), as its client's span does; a wake that answered two moves at once is
    left out."""
    timed = {}
    for r in runs:
        for row in r["stages"]["move"]:
            tags = row[1] if len(row) > 1 else []
            at = dict(row[0])
            if len(tags) == 1 and "fanout" in at:
                timed[tuple(tags[0])] = at
    before, server, after = [], [], []
    for r in runs:
        for span in r["spans"]:
            at = timed.get(tuple(span[2:4])) if len(span) >= 4 else None
            if at is not None:
                before.append(at["wake"] - span[0])
                server.append(at["fanout"] - at["wake"])
                after.append(span[1] - at["fanout"])
    spans = sum(len(r["spans"]) for r in runs)
    if not before:
        return [f"    the client's wait outside the timers: no move matched (of {spans})"]
    total = sum(before) + sum(server) + sum(after) or 1e-9

    def part(values):
        return f"{ms(percentile(values, 50))} / {ms(percentile(values, 99))} ms ({sum(values) / total * 100:.0f}%)"

    return [f"    the client's wait, move by move ({len(before)} of {spans} moves matched by table and version; p50 / "
            f"p99, share of the mean): its send -> the handler's wake {part(before)}; the server's part "
            f"{part(server)}; the opponent's frame written -> heard {part(after)}"]


_PART_MARKS = {mark for _label, mark in APPEND_PARTS} - {"appended"}


def append_parts(marks: list) -> list[float] | None:
    """The move's append split at its own marks (APPEND_PARTS), in seconds; None where it has not each of
    them once between "decided" and "appended" (a cluster's append, a step not sent the direct way)."""
    names = [name for name, _t in marks]
    if "decided" not in names:
        return None
    start = names.index("decided")
    at = {}
    for name, t in marks[start + 1:]:
        if name in at:
            return None
        at[name] = t
        if name == "appended":
            break
    if any(mark not in at for _label, mark in APPEND_PARTS):
        return None
    return [end - begin for begin, end in pairwise([marks[start][1], *(at[mark] for _label, mark in APPEND_PARTS)])]


def stage_report(runs: list[dict]) -> list[str]:
    """Escoba's own timers, pooled over the rounds: where its part of the opponent's wait goes."""
    moves = [row[0] for r in runs for row in r["stages"]["move"]]
    if not moves:
        return ["    (no stage timers: --timers off, or a server without events/stages.py)"]
    rows = []
    for marks in moves:
        at = dict(marks)
        if "fanout" not in at:
            continue
        # each mark ends a stage; the stages before the opponent's frame is written are its wait, the
        # rest (the hook, the log line, the mover's own frames, in whatever order the code runs them) not
        row = dict.fromkeys(GROUPS, 0.0)
        after = dict.fromkeys(GROUPS, 0.0)
        last = at["wake"]
        for name, t in marks[1:]:
            if name in _PART_MARKS:  # inside a step (the append's, or the snapshot's): its stage's time
                continue
            group = STAGES.get(name)
            if group is not None:
                (row if t <= at["fanout"] else after)[group] += t - last
            last = t
        row["parts"] = append_parts(marks)
        row["server"] = at["fanout"] - at["wake"]
        row["after"] = after
        row[OWN_WRITE] = at.get(OWN_WRITE, at["fanout"]) - max(t for name, t in marks if name != OWN_WRITE)
        rows.append(row)
    total = sum(r["server"] for r in rows) or 1e-9
    tail = sorted(rows, key=lambda r: r["server"])[-max(1, len(rows) // 100):]
    tail_total = sum(r["server"] for r in tail) or 1e-9
    out = [f"    escoba's worker, {len(rows)} socket moves: wake -> the opponent's frame written "
           f"p50 {ms(percentile([r['server'] for r in rows], 50))} / p99 "
           f"{ms(percentile([r['server'] for r in rows], 99))} ms; by stage (share of the mean | p50 / p99 ms | "
           f"share in the slowest 1%):"]
    for name in GROUPS:
        values = [r[name] for r in rows]
        if any(values):
            out.append(f"      {name:<12} {sum(values) / total * 100:5.1f}% | {ms(percentile(values, 50)):>6} / "
                       f"{ms(percentile(values, 99)):>6} | {sum(r[name] for r in tail) / tail_total * 100:5.1f}%")
    parted = [r["parts"] for r in rows if r["parts"]]
    if parted:
        out.append(f"      the append's parts ({len(parted)} moves, p50 / p99 ms): " + "; ".join(
            f"{label} {ms(percentile([p[i] for p in parted], 50))} / {ms(percentile([p[i] for p in parted], 99))}"
            for i, (label, _mark) in enumerate(APPEND_PARTS)))
    later = [f"{name} p50 {ms(percentile([r['after'][name] for r in rows], 50))} / p99 "
             f"{ms(percentile([r['after'][name] for r in rows], 99))}"
             for name in GROUPS if any(r["after"][name] for r in rows)]
    own = [r[OWN_WRITE] for r in rows]
    out.append("      after the opponent's frame, not in its wait: " + ", ".join(later)
               + f", the log line, the mover's ack and view written p50 {ms(percentile(own, 50))} / p99 "
               f"{ms(percentile(own, 99))} ms")
    out.extend(outside_report(runs))
    lag = [x for r in runs for (_at, x) in r["stages"]["lag"]]
    if lag:
        out.append(f"    event loop lag ({len(lag)} wakes of a 5 ms sleep): p50 {ms(percentile(lag, 50))}"
                   f" / p99 {ms(percentile(lag, 99))} / max {ms(max(lag))} ms; "
                   f"{sum(1 for x in lag if x * 1000 >= LOOP_STALL_MS)} over {LOOP_STALL_MS:g} ms")
    passes = [row for r in runs for row in r["stages"]["gc"]]
    window = sum(r["window"] for r in runs)
    if passes:
        by_gen: dict = {}
        for _at, took, gen, _collected, cpu in passes:
            by_gen.setdefault(gen, []).append((took, cpu))
        out.append("    garbage collection: " + "; ".join(
            f"gen {g}: {len(v) / window:.1f}/s, p50 {ms(percentile([t for t, _ in v], 50))} / max "
            f"{ms(max(t for t, _ in v))} ms (CPU p50 {ms(percentile([c for _, c in v], 50))})"
            for g, v in sorted(by_gen.items())) + f"; {sum(p[1] for p in passes) / window * 100:.2f}% of the time")
    else:
        out.append("    garbage collection: no pass in the window")
    mailed = [took for r in runs for (_at, took) in r["stages"]["mailbox"]]
    share = len(mailed) / max(1, len(rows)) * 100
    waited = (f", waited p50 {ms(percentile(mailed, 50))} / p99 {ms(percentile(mailed, 99))} / max "
              f"{ms(max(mailed))} ms for their handler") if mailed else ""
    out.append(f"    changes left to a busy socket's mailbox: {len(mailed)} ({share:.2f}% of the moves){waited}")
    # which of the slowest 1% of the client's moves overlapped what
    spans = sorted((h - s, s, h) for r in runs for s, h, *_ in r["spans"])
    slow = spans[-max(1, len(spans) // 100):]
    gcs = [(p[0] - p[1], p[0]) for r in runs for p in r["stages"]["gc"]]
    stalls = [(at - x - 0.005, at) for r in runs for at, x in r["stages"]["lag"] if x * 1000 >= LOOP_STALL_MS]
    fsyncs = [(a, b) for r in runs for a, b, _m in r["fsync"]]

    def hit(spans_of, s, h):
        return any(a < h and s < b for a, b in spans_of)

    out.append(f"    the slowest 1% of moves ({len(slow)}, from {ms(slow[0][0])} ms): during a collection "
               f"{sum(hit(gcs, s, h) for _, s, h in slow)}, a loop stall >= {LOOP_STALL_MS:g} ms "
               f"{sum(hit(stalls, s, h) for _, s, h in slow)}, a second with an AOF fsync over {STALL_MS} ms "
               f"{sum(hit(fsyncs, s, h) for _, s, h in slow)}; fsync stalls in the window: {len(fsyncs)}"
               + (f" (worst {max(m for r in runs for _a, _b, m in r['fsync'])} ms)" if fsyncs else ""))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="The opponent's latency at three loads, escoba and boardgame.io")
    parser.add_argument("--quick", action="store_true", help="3 s a side and load, 1 s warm-up, one round")
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--loads", default="0.25,0.5,0.75", help="shares of the peer's saturation")
    parser.add_argument("--saturation", type=float, default=None,
                        help="the peer's moves a second with no think time, if known (else measured first)")
    parser.add_argument("--duration", type=float, default=None, help="seconds measured a side and load (20)")
    parser.add_argument("--warmup", type=float, default=None, help="seconds before each window (4)")
    parser.add_argument("--rounds", type=int, default=None, help="every side at every load, this many times (2)")
    parser.add_argument("--peers", default="memory,flatfile", help="boardgame.io's storages to run")
    parser.add_argument("--also", action="append", default=[], metavar="DIR",
                        help="another checkout whose escoba runs beside this one (repeatable)")
    parser.add_argument("--no-escoba", action="store_true", help="only --also's and the peers")
    parser.add_argument("--seed", default="latency")
    parser.add_argument("--timers", default="apart", choices=("apart", "on", "off"),
                        help="escoba's stage timers (ESCOBA_STAGE_TIMES, which production does not set: a greenlet "
                             "waking 200 times a second, a write every half second, their CPU in escoba's): apart "
                             "(the default), the measured rounds without them, as production runs, and one more "
                             "run a load with them for the stages' report, not in the result; on, every round "
                             "with them (the figures before 2026-12-06 16:00); off, no report")
    parser.add_argument("--client", default="node", choices=("node", "python"),
                        help="what plays escoba's side: node (bench/peer/escoba-load.js, the same kind of client "
                             "as the peer's load.js), or python (bench/games.py's Loop: the figures before "
                             "2026-12-06, its own overhead in escoba's latency)")
    parser.add_argument("--fsync", default="always", choices=("always", "everysec"),
                        help="escoba's Redis AOF: always, as production (the result); everysec is a diagnostic only "
                             "(the disk's share of the tail on a machine whose disk stalls), never the result")
    parser.add_argument("--redis-realtime", type=int, default=0, metavar="PRIORITY",
                        help="escoba's Redis's main thread at this SCHED_FIFO priority (1-99; needs root): a "
                             "diagnostic of how long its wakes (the reply's, the fsync's) wait for a core, never "
                             "the result (default 0: as production runs it)")
    parser.add_argument("--redis-cores", type=cores_arg, default=None, metavar="LIST",
                        help="escoba's Redis's threads on these cores only (e.g. 0, or 2-3), or free: where the "
                             "kernel puts them (a host that runs a woken Redis on its sender's core, the host "
                             "line, then packs it with the worker), the other processes left where the kernel puts "
                             "them: a diagnostic, never the result (default: as deployed, Redis's threads on core "
                             f"{DEPLOYED_REDIS_CPUS}, docker-compose.yml's ESCOBA_REDIS_CPUS)")
    parser.add_argument("--api-cores", type=cores_arg, default=None, metavar="LIST",
                        help="escoba serve's processes and threads on these cores only (e.g. 0), or free: where "
                             "the kernel puts them (a host that runs a woken task on its waker's core, the host "
                             "line, then runs the worker on Redis's core after Redis's reply): a diagnostic, never "
                             "the result (default: as deployed, escoba serve keeps off Redis's cores itself, "
                             "docker-compose.yml's ESCOBA_REDIS_CPUS)")
    parser.add_argument("--workers", type=int, default=1,
                        help="escoba serve's gevent workers (default 1, the issue's setup beside one node "
                             "process; more: tables' two players may land on different workers, and their moves "
                             "reach each other through Redis's pub/sub; the stage timers then need --timers off)")
    parser.add_argument("--servers", type=int, default=1,
                        help="escoba serve processes over the one Redis, each pair's tables on one of them, as a "
                             "proxy routing each table to one process would (a diagnostic of table-affine "
                             "processes; default 1, the issue's setup; needs --timers off and the node client)")
    args = parser.parse_args(argv)
    if (args.workers > 1 or args.servers > 1) and args.timers != "off":
        parser.error("--workers or --servers above 1 needs --timers off (the stage timers write one file a server)")
    if args.servers > 1 and args.client != "node":
        parser.error("--servers above 1 needs the node client")
    duration = args.duration or (3.0 if args.quick else 20.0)
    warmup = args.warmup or (1.5 if args.quick else 4.0)
    rounds = args.rounds or (1 if args.quick else 2)
    loads = [float(x) for x in args.loads.split(",")]
    peers = [p for p in args.peers.split(",") if p]
    exit_on_sigterm()
    sides: list[tuple[str, object]] = [] if args.no_escoba else [("escoba", ROOT)]
    for other in args.also:
        rev = subprocess.run(["git", "-C", other, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True).stdout.strip() or other
        dirty = subprocess.run(["git", "-C", other, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        sides.append((f"escoba @{rev}" + (f"+ ({Path(other).name})" if dirty else ""), Path(other).resolve()))
    sides += [(f"boardgame.io {p}", p) for p in peers]
    print(f"latency: {args.tables} two-player tables, a socket a player, think x0.5..1.5; {warmup:g} s warm-up, "
          f"{duration:g} s measured a side and load, {rounds} round(s); "
          + (f"{args.servers} table-affine processes of " if args.servers > 1 else "")
          + f"escoba serve --workers {args.workers} (gevent) over "
          f"redis-server appendfsync {args.fsync}{'' if args.fsync == 'always' else ' (NOT production: a diagnostic)'}"
          + (f", its main thread SCHED_FIFO {args.redis_realtime} (NOT production: a diagnostic)"
             if args.redis_realtime else "")
          + redis_cores_said(args.redis_cores) + api_cores_said(args.api_cores)
          + f", rate limits on (moves {MOVES_LIMIT} a token, far above the bench's pace), "
          f"stage timers {TIMERS_SAID[args.timers]}; "
          f"escoba's side measured by the {args.client} client"
          f"{' (bench/peer/escoba-load.js)' if args.client == 'node' else ' (bench/games.py Loop)'}; "
          f"{os.cpu_count()} cores ({processor()}), {loadavg()}", flush=True)
    print(f"interpreter: {interpreter()}", flush=True)
    host = host_probe(args.fsync)
    print(host.line(), flush=True)

    saturation = args.saturation
    if saturation is None and "memory" in peers:
        sat = run_boardgame("memory", args.tables, 0.0, min(warmup, 2.0), min(duration, 5.0))
        if sat is None:
            print("the peer did not run: give --saturation")
            return 1
        saturation = sat["moves"] / sat["window"]
        print(f"boardgame.io in memory, no think time: {saturation:.0f} moves/s (its saturation; opponent p50 "
              f"{ms(percentile(sat['lat'], 50))} ms, CPU {sat['cpu_ms']:.3f} ms a move; {loadavg()})", flush=True)
    if saturation is None:
        parser.error("--saturation is needed without the in-memory peer")

    # the moves a pair makes at a load, with room (a pair's pace varies with its think times), and the games
    # that hold them: a pair moves on to its next table when a game ends (a game to 31 is 350 to 600 moves)
    def need(share: float) -> int:
        return int((warmup + duration + 2) * share * saturation / args.tables * 1.6) + 20

    per_pair = -(-need(max(loads)) // MIN_GAME) + 1
    scripts = pool_starmap(game_script, [(f"{args.seed}:{i}:{j}",) for i in range(args.tables)
                                         for j in range(per_pair)], 2)
    every = [scripts[i * per_pair:(i + 1) * per_pair] for i in range(args.tables)]

    def pairs_for(share: float) -> list[list]:  # each pair's first games that hold the moves it needs at the load
        chosen, needed = [], need(share)
        for games in every:
            k, held = 0, 0
            while held < needed and k < len(games):
                held += len(games[k].moves)
                k += 1
            chosen.append(games[:k])
        return chosen
    results: dict = {}
    for li, share in enumerate(loads):
        think = args.tables / (share * saturation)
        pairs = pairs_for(share)
        print(f"\nload {share:g} x saturation = {share * saturation:.0f} moves/s offered (think {think * 1000:.0f} ms "
              f"mean)", flush=True)
        for k in range(rounds):
            order = sides if (k + li) % 2 == 0 else sides[::-1]
            for name, what in order:
                before = loadavg()
                if isinstance(what, Path):
                    run = run_escoba(what, pairs, think, warmup, duration, f"{args.seed}:{k}", args.fsync,
                                     args.timers == "on", args.client, args.redis_realtime, args.workers,
                                     args.servers, args.redis_cores, args.api_cores)
                else:
                    run = run_boardgame(what, args.tables, think, warmup, duration)
                if run is None:
                    continue
                results.setdefault((share, name), []).append(run)
                p = pooled([run])
                print(f"    round {k + 1} {name}: {p['moves']} moves, p50 {ms(p['p50'])} / p99 {ms(p['p99'])} ms, "
                      f"CPU {p['cpu_ms']:.3f} ms"
                      + (f" (its client's {run['client_ms']:.3f})" if "client_ms" in run else "")
                      + f", errors {run['errors']}, never heard {run['missing']}"
                      + (f", {run['out_of_tables']} pairs out of tables" if run.get("out_of_tables") else "")
                      + f" ({before} -> {loadavg()})"
                      + (f", first error {run['first_error']}" if run.get("first_error") else ""), flush=True)
        peer_runs = results.get((share, "boardgame.io memory"))
        peer = pooled(peer_runs) if peer_runs else None
        for name, what in sides:
            runs = results.get((share, name))
            if runs:
                print(side_line(name, pooled(runs), peer, host.fsync_adds if isinstance(what, Path) else None))
        for name, what in sides:
            if isinstance(what, Path) and results.get((share, name)):
                staged = results[(share, name)]
                if args.timers == "apart":  # one more run, with the timers: their report, not the result
                    run = run_escoba(what, pairs, think, warmup, duration, f"{args.seed}:timers", args.fsync,
                                     True, args.client, args.redis_realtime, args.workers,
                                     args.servers, args.redis_cores, args.api_cores)
                    p = pooled([run])
                    staged = [run]
                    print(f"  {name} with its stage timers on, a run apart (not in the result): p50 {ms(p['p50'])} "
                          f"/ p99 {ms(p['p99'])} ms, CPU {p['cpu_ms']:.3f} ms a move", flush=True)
                print(f"  {name}'s own timers:")
                print("\n".join(stage_report(staged)), flush=True)

    print(f"\nsummary ({loadavg()}): the opponent's p50 and p99 against boardgame.io in memory's (targets <= 1.5x, "
          f"<= 1.2x), CPU a move against the peer's")
    for share in loads:
        peer_runs = results.get((share, "boardgame.io memory"))
        peer = pooled(peer_runs) if peer_runs else None
        cells = []
        for name, _what in sides:
            runs = results.get((share, name))
            if runs and peer is None:  # no peer run: the milliseconds
                p = pooled(runs)
                cells.append(f"{name} p50 {ms(p['p50'])} ms p99 {ms(p['p99'])} ms CPU {p['cpu_ms']:.3f} ms")
            elif runs and not name.endswith("memory"):
                p = pooled(runs)
                cells.append(f"{name} p50 {p['p50'] / peer['p50']:.2f}x p99 {p['p99'] / peer['p99']:.2f}x "
                             f"CPU {p['cpu_ms'] / peer['cpu_ms']:.2f}x")
        print(f"  {share:g}: " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
