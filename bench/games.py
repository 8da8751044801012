"""Closed-loop two-player games, a socket per player, timed from the send: what a player waits for.

    python bench/games.py [--transport socket|post] [--games 100] [--duration 30] [--think 0.5] [--workers 1]
                          [--rounds 4] [--fsync always|everysec] [--floor] [--patches on|stock|both]

Starts a durable redis-server of its own (AOF, appendfsync always, as in production;
``--fsync everysec`` is a diagnostic only: the same run without each write's fdatasync,
to see how much of the opponent's p99 is the disk's) and ``escoba serve`` (gunicorn's
gevent worker). Opens ``--games`` tables whose games are worked out in advance with
the engine (operator decks, bench/_common.py) and connects one socket per player, with that player's token.
Then each game plays itself in a closed loop: when the socket of the player who
moves next holds the version before its move, that player waits a think time
(uniform in 0.5..1.5 x ``--think``; 0 for none) and sends the move: over its own
socket (``--transport socket``, the default: ``{"type": "move", "id", "move"}``,
answered by an ``ack``; docs/api.md v1.2) or as ``POST /tables/{id}/moves``
(``--transport post``). No GET either way: the views come on the sockets. For every
move: the time from its send to the moment the OPPONENT's socket holds a ``table``
message of the move's version, and the server's CPU per move (user + system of
gunicorn's master and workers from /proc, over the measured window), alone and with
the redis-server's. The summary gives three ratios against the peer measured in the
same run: the API's CPU per move (target with socket moves <= 1.0x; with POST <= 1.5x),
API + Redis (<= 1.2x), and the opponent's p99 (<= 1.0x).

What it leaves out: the client's own CPU (it shares the 2 cores); TLS and any proxy;
more than one API process or a Redis Cluster (bench/cluster.py): with one process a table's
moves publish no change notice (the mover's process is the table's only listener), where two
players of a table on two processes make every move publish one and the other process read it; bots and the workers'
jobs (the timers a move schedules are written, but no worker runs them); a real
network's latency (everything is on 127.0.0.1); the page's work in a browser; replica
acknowledgements (one Redis, no replica: bench/cluster.py measures ``ESCOBA_REPLICA_ACKS``).

Each run also says how often the disk stalled Redis's AOF fsync over 5 ms in its window (Redis's own
latency monitor, ``LATENCY HISTORY aof-fsync-always``): under ``appendfsync always`` Redis fsyncs in its
main thread, so every move that comes during a stall waits for it, where the in-memory peer never waits;
on a virtual disk that stalls (docs/benchmarks.md, 2026-12-05) the opponent's p99 is those stalls, and
``--fsync everysec`` shows the same run without them. In the same run, it also gives the opponent's p99
over the moves no stall touched (sent and heard outside every second in which one ended, and the stall's
length before it): a diagnostic that tells the disk's tail from the server's, never the result.

After each run it measures Redis's floor for a move on the same durable Redis: a plain ``SET`` of
a move's size, one at a time (each its own round trip and fsync, as the moves of a hundred games at
this pace come), and says what API + Redis would be were the append's step that cheap, and how
far the API's CPU must fall for 1.2x with the step as it is. The floor is measured once the games
have stopped, on a quiet machine, where the moves' Redis CPU is measured under their load (the
API and this client on the same 2 cores): the same commands cost Redis some 3x more then (the
step's in-command time, 26 us alone, is 80 to 95 us in the games), so the floor reads low and
what it says the step costs above it reads high.

With ``--floor`` (socket moves), each round also plays the same games, with the same client, on the
stack's floor (bench/socket_floor_app.py): the same gunicorn gevent worker, Flask, flask-sock and
escoba's socket I/O, a durable Redis of its own, and each seat sent a stored escoba view (or patch:
below) of its game with every version, but no rules, no view built, no checks, log line, metrics or timers. It
says what the stack alone costs a move against the peer, so what a ratio target leaves escoba's own
work, and what that work costs (escoba less the floor). The floor's views are one size (the game
after 18 moves: mid-round), where escoba's grow over a round; its step writes two keys where
escoba's writes five to seven and reads four (docs/benchmarks.md).

Escoba's sockets ask for each change as a patch of the view they were sent last (``--frames patch``,
the default, as the page asks since 2026-12-05's fifth session: docs/api.md); ``--frames view`` has them
sent the whole view with every version, as every run before that did. The floor's frames follow: with
patches each seat is sent, with every version, its stored patch of the game's 18th move (as a ``table``
message of that size; 0.6 to 1.1 KB where a view is 1.7 to 4 KB), else its stored view.

The rate limits are on, as in production (``--limits on``, the default): every move is counted on
its token's window (api/http/limits.py, in the append's own step). The tables are opened as if from
one client address each, behind a trusted proxy (``ESCOBA_TRUSTED_PROXIES=1``, ``X-Forwarded-For``),
so that opening 100 tables from one machine stays under the per-address limits. ``--limits off``
measures without them, as the benches here did before 2026-12-04.

``--patches both`` runs escoba twice a round, with its third-party speed patches and with the stock
libraries (``ESCOBA_STOCK=1``, events/patches.py), in turn, and says what the patches save a move:
what their upkeep (a check and a new pin at each upgrade of the library) buys. ``--patches stock``
measures the stock libraries alone.

The peer: boardgame.io (Node, in-memory store), the same closed loop of two-player
games with a socket per player, run here in the same run, in turn with escoba (bench/peer.py;
install it once with ``npm ci --prefix bench/peer``; where it differs from this
measurement is said there: its moves travel over the socket, and its matches are one
round, re-opened inside the window). The ratio is against the peer measured in this
run. The opponent's p99 is compared at the same moment on both sides: this client stamps the raw
read of the frame that holds the version, the peer's its socket.io message as it arrives (its
client holding the state, after boardgame.io's reducer, comes later and is said beside it); both
are pooled over every round's moves; without node or bench/peer/node_modules (or with ``--peer off``) it falls back
to the figures measured outside this repository (0.63 ms of server CPU per move,
the opponent holding the state 25 ms p50 / 50 ms p99 after the send), and says so.

The client: one selector thread reads every socket (bench/_ws.py); a few sender
threads send the moves when due (POSTs over one persistent HTTP connection each).
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    Http,
    Script,
    cpu_split,
    escoba_server,
    exit_on_sigterm,
    floor_server,
    free_port,
    game_script,
    interpreter,
    mean_interval,
    open_table,
    percentile,
    pool_starmap,
    seat_views,
    server_env,
    start_private_redis,
    summary_ms,
)
from bench._ws import Reader, Socket  # noqa: E402
from bench.socket_floor_app import key as floor_key  # noqa: E402

FLOOR_VIEW_AFTER = 18  # the floor sends each seat its view (or patch) of this move: mid-round, a middling size
STALL_MS = 5  # an fdatasync of the AOF counted as a stall (Redis's latency monitor)
PEER = {"name": "boardgame.io (Node, in-memory store)", "cpu_ms": 0.63, "p50_ms": 25.0, "p99_ms": 50.0}


class Game:
    def __init__(self, index: int, table_id: str, tokens: dict[int, str], script):
        self.index = index
        self.table_id = table_id
        self.tokens = tokens
        self.moves = script.moves
        self.start_version = script.start_version
        self.k = 0  # the next move
        self.pending = False  # the next move is scheduled or in flight
        self.sockets: dict[int, Socket] = {}
        self.lock = threading.Lock()
        self.sent_at = 0.0  # when its move in flight over a socket was sent

    def before(self, k: int) -> int:
        return self.start_version if k == 0 else self.moves[k - 1][2]


class Loop:
    """The closed loop: moves become due when their player's socket is up to date."""

    def __init__(self, port: int, games: list[Game], think: float, senders: int, seed: str,
                 transport: str = "socket"):
        self.port = port
        self.transport = transport
        self.games = games
        self.think = think
        self.rng = random.Random(seed)
        self.heap: list[tuple[float, int, int]] = []  # (due, game, move index)
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.measuring = False
        self.sent: list[tuple[int, int, float, float]] = []  # (game, move index, sent, answered)
        self.errors: list[str] = []
        self.threads = [threading.Thread(target=self._send_loop, daemon=True) for _ in range(senders)]

    def start(self) -> None:
        for t in self.threads:
            t.start()
        for game in self.games:
            with game.lock:
                self._maybe_schedule(game, time.perf_counter())

    def on_table(self, ws: Socket, version: int, now: float) -> None:
        game = self.games[ws.table]
        with game.lock:
            self._maybe_schedule(game, now)

    def _maybe_schedule(self, game: Game, now: float) -> None:
        """Under the game's lock: schedule the next move if its player's socket is up to date."""
        if game.pending or game.k >= len(game.moves) or self.stop.is_set():
            return
        seat = game.moves[game.k][0]
        if game.sockets[seat].first_at(game.before(game.k)) is None:
            return
        game.pending = True
        pause = self.think * self.rng.uniform(0.5, 1.5) if self.think else 0.0
        with self.cond:
            heapq.heappush(self.heap, (now + pause, game.index, game.k))
            self.cond.notify()

    def _send_loop(self) -> None:
        http = Http(self.port)
        try:
            while not self.stop.is_set():
                with self.cond:
                    while not self.heap and not self.stop.is_set():
                        self.cond.wait(0.1)
                    if self.stop.is_set():
                        return
                    due, gi, k = self.heap[0]
                    wait = due - time.perf_counter()
                    if wait > 0:
                        self.cond.wait(min(wait, 0.05))
                        continue
                    heapq.heappop(self.heap)
                game = self.games[gi]
                seat, move, version = game.moves[k]
                if self.transport == "socket":  # answered on the socket: on_answer
                    frame = json.dumps({"type": "move", "id": f"{gi}.{k}", "move": move}).encode()
                    with game.lock:
                        game.sent_at = time.perf_counter()
                    game.sockets[seat].send_frame(0x1, frame)
                    continue
                t = time.perf_counter()
                status, answer = http.call("POST", f"/tables/{game.table_id}/moves", move, game.tokens[seat])
                answered = time.perf_counter()
                if status != 200 or answer.get("version") != version:
                    self.errors.append(f"game {gi} move {k}: {status} {str(answer)[:200]}")
                    continue  # this game stops here
                self._done(game, k, t, answered)
        finally:
            http.close()

    def on_answer(self, ws, move_id: str, version: int | None, text: bytes, now: float) -> None:
        """A socket move's ack (or error), heard by the reader thread."""
        gi, _, k = move_id.partition(".")
        game = self.games[int(gi)]
        k = int(k)
        if version is None or version != game.moves[k][2]:
            self.errors.append(f"game {gi} move {k}: {text[:200]!r}")
            return  # this game stops here
        self._done(game, k, game.sent_at, now)

    def _done(self, game: Game, k: int, sent: float, answered: float) -> None:
        if self.measuring:
            self.sent.append((game.index, k, sent, answered))
        with game.lock:
            game.k = k + 1
            game.pending = False
            self._maybe_schedule(game, time.perf_counter())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Closed-loop games, a socket per player, timed from the send")
    parser.add_argument("--transport", default="socket", choices=("socket", "post"),
                        help="how each player sends its moves: over its socket, or POST /tables/{id}/moves")
    parser.add_argument("--frames", default="patch", choices=("patch", "view"),
                        help="what escoba's sockets are sent on a change: a patch of the view sent last, as the "
                             "page asks (frames=patch), or the whole view")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds measured (after a warm-up)")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--think", type=float, default=0.5, help="mean think time before each move, s (0: none)")
    parser.add_argument("--workers", type=int, default=1, help="gunicorn gevent workers")
    parser.add_argument("--worker-class", default="gevent", choices=("gevent", "gthread"),
                        help="gthread: the old threaded worker, for comparison")
    parser.add_argument("--senders", type=int, default=8, help="client threads that POST the moves")
    parser.add_argument("--seed", default="games")
    parser.add_argument("--peer", default="auto", choices=("auto", "off"),
                        help="auto: run the boardgame.io peer beside escoba (bench/peer.py) when installed")
    parser.add_argument("--fsync", default="always", choices=("always", "everysec"),
                        help="the Redis AOF's appendfsync: always, as production runs it; everysec is a "
                             "diagnostic (what the fsync's tail adds to the opponent's p99), never a result")
    parser.add_argument("--limits", default="on", choices=("on", "off"),
                        help="the rate limits: on, as production runs them (the moves' per-token count); off: none")
    parser.add_argument("--floor", action="store_true",
                        help="socket moves: also run, each round, the stack's floor (bench/socket_floor_app.py: the "
                             "same games' bytes moved by the same stack, no rules, views, logs or metrics)")
    parser.add_argument("--patches", default="on", choices=("on", "stock", "both"),
                        help="escoba with its third-party speed patches (events/patches.py), with the stock "
                             "libraries (ESCOBA_STOCK=1), or both in each round, in turn: what the patches are worth")
    parser.add_argument("--rounds", type=int, default=1,
                        help="escoba and the peer, this many times, in turn first (escoba first in odd rounds, "
                             "the peer in even ones); the ratio pools every round's CPU and moves")
    args = parser.parse_args(argv)
    if args.floor and args.transport != "socket":
        parser.error("--floor measures socket moves: use it with --transport socket")
    exit_on_sigterm()
    moves_needed = int((args.duration + args.warmup) * 4 / max(args.think, 0.05)) + 20
    print(
        f"games: {args.games} closed-loop two-player games, a socket per player; think {args.think:g} s "
        f"(x0.5..1.5); escoba serve: gunicorn {args.worker_class} workers={args.workers}; a private durable "
        f"redis-server (appendfsync {args.fsync}{'' if args.fsync == 'always' else ': NOT production'}); "
        f"{args.warmup:g} s warm-up, {args.duration:g} s measured; "
        f"{args.rounds} round(s); moves sent by {'socket' if args.transport == 'socket' else 'POST'}; "
        f"changes sent as {'patches' if args.frames == 'patch' else 'whole views'}; "
        f"rate limits {args.limits}{'' if args.limits == 'on' else ': NOT production'}",
        flush=True,
    )
    print(f"interpreter: {interpreter()}", flush=True)
    scripts = pool_starmap(game_script, [(f"g:{i}", min(moves_needed, 10_000)) for i in range(args.games)], 2)
    patches = args.frames == "patch"  # the floor's frames are the size of what escoba's sockets are sent
    views = [seat_views(f"floor{i}", s, FLOOR_VIEW_AFTER, patches) for i, s in enumerate(scripts)] if args.floor else []
    runs, peers, floors, stock_runs = [], [], [], []
    for k in range(args.rounds):
        # ABBA: the machine's speed drifts over minutes (here every side ran faster round after
        # round), so whichever side always ran second would always gain; alternating cancels a drift
        # (the floor, when run, goes between them)
        if k % 2 == 0:
            _run_escoba(args, scripts, k, runs, stock_runs)
            if args.floor:
                floors.append(run_floor(args, scripts, views))
            peers.append(_peer(args))
        else:
            peers.append(_peer(args))
            if args.floor:
                floors.append(run_floor(args, scripts, views))
            _run_escoba(args, scripts, k, runs, stock_runs)
    moves = sum(r["moves"] for r in runs)
    cpu_ms = sum(r["cpu_ms"] * r["moves"] for r in runs) / max(1, moves)
    with_redis = sum((r["cpu_ms"] + r["redis_ms"]) * r["moves"] for r in runs) / max(1, moves)
    to_opponent = [t for r in runs for t in r["to_opponent"]]
    missing = sum(r["missing"] for r in runs)
    p50, p99 = percentile(to_opponent, 50) * 1000, percentile(to_opponent, 99) * 1000
    peer = _pooled(peers)
    if args.rounds > 1:
        ratios = ", ".join(f"{r['cpu_ms'] / q['cpu_ms']:.2f}" for r, q in zip(runs, peers, strict=True))
        ours = ", ".join(f"{r['cpu_ms']:.2f}" for r in runs)
        theirs = ", ".join(f"{q['cpu_ms']:.3f}" for q in peers)
        print(f"rounds: CPU ratio per round {ratios} (escoba {ours} ms; peer {theirs} ms)")
        for name, ratio in (("API", lambda r, q: r["cpu_ms"] / q["cpu_ms"]),
                            ("API + Redis", lambda r, q: (r["cpu_ms"] + r["redis_ms"]) / q["cpu_ms"])):
            mean, low, high = mean_interval([ratio(r, q) for r, q in zip(runs, peers, strict=True)])
            print(f"rounds: {name} CPU ratio, the rounds' mean {mean:.2f}x [{low:.2f}..{high:.2f}] (95%, "
                  f"Student's t over {len(runs)} rounds: a target inside the interval is not told apart)")
    cpu_target = 1.0 if args.transport == "socket" else 1.5  # issue 26; its other two are socket moves'
    p99_said = _target(args.transport, p99 <= peer["p99_ms"] and not missing, 1.0)
    cpu_said = f"target <= {cpu_target:g}x: {'met' if cpu_ms <= cpu_target * peer['cpu_ms'] else 'MISSED'}"
    both_said = _target(args.transport, with_redis <= 1.2 * peer["cpu_ms"], 1.2)
    print(f"summary ({args.transport} moves): opponent p50 {p50:.1f} ms, p99 {p99:.1f} ms = "
          f"{p99 / peer['p99_ms']:.2f}x the peer's p99 {peer['p99_ms']:.1f}{_which_p99(peer, p99)} {p99_said}; "
          f"API CPU {cpu_ms:.2f} ms per move = {cpu_ms / peer['cpu_ms']:.2f}x the peer's {peer['cpu_ms']:.3f} "
          f"({peer['source']}; {cpu_said}); API + Redis {with_redis:.2f} ms = {with_redis / peer['cpu_ms']:.2f}x "
          f"{both_said}")
    stalls, window = [s for r in runs for s in r["stalls"]], sum(r["window"] for r in runs)
    print(f"  the disk, over the rounds: {_stalls_said(stalls, window)}")
    untouched = [t for r in runs for t in r["untouched"]]
    if stalls and untouched:
        calm = percentile(untouched, 99) * 1000
        print(f"  the opponent's p99 over the moves no disk stall touched ({len(untouched)} of {len(to_opponent)}): "
              f"{calm:.1f} ms = {calm / peer['p99_ms']:.2f}x the peer's (a diagnostic, never the result: it leaves "
              f"out every second in which an fsync took over {STALL_MS} ms, where the peer's p99 is over all of its "
              f"seconds; fsyncs under {STALL_MS} ms stay in)")
    if floors:
        print(_floor_said(runs, floors, peers, views, args.frames))
    if stock_runs:
        print(_patches_said(runs, stock_runs))
    floor = sum(r["floor_ms"] * r["moves"] for r in runs) / max(1, moves)
    print(f"  with Redis at its floor (a move's size written and fsynced alone, as this load's moves come: "
          f"{floor:.3f} ms) API + Redis would be {(cpu_ms + floor) / peer['cpu_ms']:.2f}x; for 1.2x the API's CPU "
          f"may be at most {1.2 - floor / peer['cpu_ms']:.2f}x the peer's then, "
          f"{1.2 - (with_redis - cpu_ms) / peer['cpu_ms']:.2f}x with the append's step as it is")
    return 0


def _run_escoba(args, scripts, k: int, runs: list, stock_runs: list) -> None:
    """Escoba's run(s) of round ``k``: patched (into ``runs``), stock, or both, in turn (ABBA, as the sides)."""
    if args.patches != "both":
        runs.append(run_escoba(args, scripts, stock=args.patches == "stock"))
        return
    for stock in ((False, True) if k % 2 == 0 else (True, False)):
        (stock_runs if stock else runs).append(run_escoba(args, scripts, stock=stock))


def _patches_said(runs: list[dict], stock_runs: list[dict]) -> str:
    """What the speed patches are worth: escoba patched against escoba stock, pooled over the rounds."""

    def pooled(side: list[dict], figure) -> float:
        return sum(figure(r) * r["moves"] for r in side) / max(1, sum(r["moves"] for r in side))

    ours, stock = pooled(runs, lambda r: r["cpu_ms"]), pooled(stock_runs, lambda r: r["cpu_ms"])
    both, stock_both = (pooled(side, lambda r: r["cpu_ms"] + r["redis_ms"]) for side in (runs, stock_runs))
    p99 = percentile([t for r in runs for t in r["to_opponent"]], 99) * 1000
    stock_p99 = percentile([t for r in stock_runs for t in r["to_opponent"]], 99) * 1000
    per_round = ", ".join(f"{s['cpu_ms'] / r['cpu_ms']:.2f}" for r, s in zip(runs, stock_runs, strict=True))
    return (f"patches (events/patches.py): API CPU a move patched {ours:.3f} ms, stock (ESCOBA_STOCK=1) "
            f"{stock:.3f} ms = {stock / ours:.2f}x (per round {per_round}): the speed patches save "
            f"{stock - ours:.3f} ms a move ({(stock - ours) / stock * 100:.0f}% of the stock CPU); API + Redis "
            f"{both:.3f} vs {stock_both:.3f} ms; the opponent's p99 {p99:.1f} vs {stock_p99:.1f} ms")


def run_escoba(args, scripts, stock: bool = False) -> dict:
    """One measured run of escoba: its own Redis and server, the tables opened anew; ``stock``: the
    third-party libraries as they ship (ESCOBA_STOCK=1, events/patches.py)."""

    def start(redis):
        limits = {"ESCOBA_RATE_LIMITS": "on", "ESCOBA_TRUSTED_PROXIES": "1"} if args.limits == "on" else {}
        limits["ESCOBA_STOCK"] = "1" if stock else "0"
        server = escoba_server(free_port(), 4 * args.games + 64, args.workers,
                               env=server_env(REDIS_URL=redis.url, **limits),
                               extra=("--worker-class", args.worker_class))
        http = Http(server.port)
        games = []
        for i, s in enumerate(scripts):
            http.forwarded_for = f"10.0.{i // 250}.{i % 250 + 1}"  # a client address of the table's own
            games.append(Game(i, *open_table(http, s), s))
        http.close()
        return server, games

    return _measured(args, start, "escoba stock" if stock else "escoba")


def run_floor(args, scripts, views) -> dict:
    """One measured run of the stack's floor (bench/socket_floor_app.py): the same games' moves, sockets
    and client, each seat sent a stored view, or patch, of its game (``views``) with every version."""

    def start(redis):
        server = floor_server(free_port(), 4 * args.games + 64, args.workers, env=server_env(REDIS_URL=redis.url))
        games = []
        with redis._client() as client:
            for i, s in enumerate(scripts):
                table_id, tokens = f"floor{i}", {0: f"floor{i}-0", 1: f"floor{i}-1"}
                client.set(floor_key(table_id, "version"), s.start_version)
                client.hset(floor_key(table_id, "tokens"), mapping={t: seat for seat, t in tokens.items()})
                for seat in (0, 1):
                    client.set(floor_key(table_id, f"view:{seat}"), views[i][seat])
                games.append(Game(i, table_id, tokens, one_version_a_move(s)))
        return server, games

    return _measured(args, start, "floor")


def one_version_a_move(script: Script) -> Script:
    """The script with each move one version after the last (the floor's step counts one a move, where
    escoba's deal after a round's last card makes two)."""
    moves = [(seat, move, script.start_version + k + 1) for k, (seat, move, _after) in enumerate(script.moves)]
    return Script(script.decks, moves, script.start_version)


def _measured(args, start, name: str) -> dict:
    """Starts a durable Redis and a server with its games (``start(redis)`` -> (server, games)), plays them,
    and prints and returns what the window measured."""
    redis = start_private_redis(durable=True, fsync=args.fsync)
    server = None
    reader = Reader()
    loop = None
    try:
        server, games = start(redis)
        loop = Loop(server.port, games, args.think, args.senders, args.seed, args.transport)
        seat_sockets(server.port, games, loop, reader, args.frames)
        time.sleep(args.warmup)
        api0, redis0, calls0, client0 = cpu_split(server.pids()), redis.cpu_split(), redis.commands(), _own_cpu()
        redis.watch_stalls(STALL_MS)
        wall = time.time() - time.perf_counter()  # Redis notes its stalls by the clock's second
        loop.measuring = True
        t0 = time.perf_counter()
        time.sleep(args.duration)
        loop.measuring = False
        window = time.perf_counter() - t0
        api_user, api_system = (b - a for a, b in zip(api0, cpu_split(server.pids()), strict=True))
        user, system = (b - a for a, b in zip(redis0, redis.cpu_split(), strict=True))
        calls = redis.commands()
        stalled = redis.stalled_seconds()
        stalls = [ms for _second, ms in stalled]
        client_cpu = _own_cpu() - client0
        server_cpu, redis_cpu = api_user + api_system, user + system
        loop.stop.set()
        time.sleep(1.0)  # let the last sockets hear
        floor_ms = redis.write_floor_ms()

        to_opponent, untouched, http_lat, missing = [], [], [], 0
        spans = _stall_spans(stalled, wall)
        for gi, k, sent, answered in list(loop.sent):
            game = games[gi]
            seat, _move, version = game.moves[k]
            heard = game.sockets[1 - seat].first_at(version)
            http_lat.append(answered - sent)
            if heard is None:
                missing += 1
            else:
                to_opponent.append(heard - sent)
                if not _touched(sent, heard, spans):
                    untouched.append(heard - sent)
        n = len(loop.sent)
        cpu_ms = server_cpu * 1000 / max(1, n)
        said = "" if name == "escoba" else f"{name} "
        print(f"{said}measured: {n} moves in {window:.1f}s ({n / window:.0f} moves/s); errors {len(loop.errors)}"
              + (f" (first: {loop.errors[0]})" if loop.errors else ""))
        sent_by = "socket move" if args.transport == "socket" else "POST /moves"
        print(f"  {sent_by} answered (ack or 200) after: {summary_ms(http_lat)}")
        print(f"  {sent_by} sent -> the opponent's socket holds the version: {summary_ms(to_opponent)}")
        print(f"  never heard by the opponent: {missing}")
        print(f"  the disk: {_stalls_said(stalls, window)}", flush=True)
        if stalls and untouched:
            print(f"  the moves no disk stall touched ({len(untouched)} of {len(to_opponent)}: sent and heard outside "
                  f"the seconds above): the opponent's p99 {percentile(untouched, 99) * 1000:.2f} ms", flush=True)
        print(f"  server CPU (gunicorn master + workers): {cpu_ms:.2f} ms per move "
              f"({server_cpu / window * 100:.0f}% of a core); redis-server {redis_cpu * 1000 / max(1, n):.2f} ms",
              flush=True)
        print(f"  server CPU per move: user {api_user * 1000 / max(1, n):.3f} ms (Python), system "
              f"{api_system * 1000 / max(1, n):.3f} ms (the kernel: socket sends and receives, epoll); "
              f"this client's own CPU {client_cpu * 1000 / max(1, n):.3f} ms (on the same 2 cores)", flush=True)
        per_move = {name: (count - calls0.get(name, 0)) / max(1, n) for name, count in calls.items()}
        usec = {name.removeprefix("usec:"): per_move.pop(name) for name in list(per_move) if name.startswith("usec:")}
        script = usec.pop("evalsha", 0.0)
        print(f"  redis-server per move: user {user * 1000 / max(1, n):.3f} ms, system {system * 1000 / max(1, n):.3f} "
              f"ms (the AOF's write and fdatasync are system time); the append's EVALSHA {script / 1000:.3f} ms "
              f"(the commands it calls included, counted again here:) other commands {sum(usec.values()) / 1000:.3f} "
              f"ms (" + ", ".join(f"{name} {each:.1f} us" for name, each in sorted(usec.items(), key=lambda kv: -kv[1])
                                  if each >= 0.5) + ")", flush=True)
        print("  redis commands per move: " + ", ".join(
            f"{name} {each:.2f}" for name, each in sorted(per_move.items(), key=lambda kv: -kv[1]) if each >= 0.01))
        print(f"  redis-server's floor for a durable move: {floor_ms:.3f} ms (one SET of a move's size a round "
              f"trip, with its fsync, on this Redis after the games, the machine quiet: under the games' load "
              f"a write costs more, so the floor is low); the moves cost "
              f"{redis_cpu * 1000 / max(1, n) - floor_ms:.3f} ms more", flush=True)
        return {"moves": n, "cpu_ms": cpu_ms, "redis_ms": redis_cpu * 1000 / max(1, n), "to_opponent": to_opponent,
                "untouched": untouched, "missing": missing, "floor_ms": floor_ms, "stalls": stalls, "window": window}
    finally:
        stop_run(loop, reader, server, redis)


def stop_run(loop: Loop | None, reader: Reader, server, redis) -> None:
    """A run's parts stopped, the client's first: whichever of them started."""
    if loop is not None:
        loop.stop.set()
    reader.stop.set()
    if server is not None:
        server.stop()
    redis.stop()


def seat_sockets(port: int, games: list[Game], loop: Loop, reader: Reader, frames: str) -> None:
    """Both players' sockets of every game, heard by ``reader``, answered by ``loop``, which starts."""
    reader.start()
    for game in games:
        for seat in (0, 1):
            ws = Socket(game.index, seat)
            ws.on_table = loop.on_table
            ws.on_answer = loop.on_answer
            ws.connect(port, f"/tables/{game.table_id}/ws?token={game.tokens[seat]}&frames={frames}")
            game.sockets[seat] = ws
    for game in games:
        for ws in game.sockets.values():
            reader.add(ws)
    loop.start()


def _floor_said(runs: list[dict], floors: list[dict], peers: list[dict], views: list[dict], kind: str) -> str:
    """The stack's floor against the peer and against escoba, per round and pooled: how much of a ratio
    target the stack itself takes, and what escoba's own work adds to it."""

    def pooled(side: list[dict], figure) -> float:
        return sum(figure(r) * r["moves"] for r in side) / max(1, sum(r["moves"] for r in side))

    pooled_peer = _pooled(peers)
    peer, peer_p99 = pooled_peer["cpu_ms"], pooled_peer["p99_ms"]
    p99 = percentile([t for f in floors for t in f["to_opponent"]], 99) * 1000
    api, api_redis = pooled(floors, lambda r: r["cpu_ms"]), pooled(floors, lambda r: r["cpu_ms"] + r["redis_ms"])
    own = pooled(runs, lambda r: r["cpu_ms"]) - api
    own_redis = pooled(runs, lambda r: r["cpu_ms"] + r["redis_ms"]) - api_redis
    per_round = ", ".join(f"{f['cpu_ms'] / q['cpu_ms']:.2f}" for f, q in zip(floors, peers, strict=True))
    sizes = [len(v) for each in views for v in each.values()]
    return (f"  the stack's floor (bench/socket_floor_app.py: the same games, client and Redis, frames of a stored "
            f"{kind} of {min(sizes)} to {max(sizes)} bytes): API CPU {api:.2f} ms a move = {api / peer:.2f}x "
            f"the peer's "
            f"(rounds {per_round}), API + Redis {api_redis / peer:.2f}x, opponent p99 {p99:.1f} ms = "
            f"{p99 / peer_p99:.2f}x the peer's. Escoba's own work above it (rules, views, checks, log line, metrics, "
            f"timers; in Redis its step's): API {own:.2f} ms a move = {own / peer:.2f}x the peer's, API + Redis "
            f"{own_redis:.2f} ms = {own_redis / peer:.2f}x. What the stack leaves escoba's own work: "
            f"{1.0 - api / peer:.2f}x for API <= 1.0x, {1.2 - api_redis / peer:.2f}x for API + Redis <= 1.2x")


def _stalls_said(stalls: list[int], window: float) -> str:
    """What Redis's latency monitor saw of the AOF's fdatasync in the measured window: a move that
    comes while one stalls waits for it (Redis fsyncs in its main thread), and the peer, in memory,
    never does; so the opponent's p99 against the peer's is the disk's as much as the server's."""
    if not stalls:
        return f"no fdatasync of Redis's AOF took over {STALL_MS} ms in the {window:.0f} s measured"
    return (f"Redis's AOF fdatasync took over {STALL_MS} ms in {len(stalls)} of the {window:.0f} seconds measured "
            f"(the worst of each: median {statistics.median(stalls):g} ms, worst {max(stalls)} ms; LATENCY "
            f"HISTORY aof-fsync-always): every move that came meanwhile waited for it "
            f"(--fsync everysec runs without those waits)")


def _target(transport: str, met: bool, ratio: float) -> str:
    """Issue 26's verdict on a ratio whose target is set for socket moves only."""
    if transport != "socket":
        return f"(no target with {transport} moves: <= {ratio:g}x is for socket moves)"
    return f"(target <= {ratio:g}x: {'met' if met else 'MISSED'})"


def _which_p99(peer: dict, p99: float) -> str:
    """Which of the peer's moments its p99 is: its socket.io message, the later one said beside it."""
    if peer.get("p99_state_ms") in (None, peer["p99_ms"]):
        return ""
    return (f" at its socket.io message (at its client holding the state, after boardgame.io's reducer: "
            f"{peer['p99_state_ms']:.1f} ms, {p99 / peer['p99_state_ms']:.2f}x)")


def _stall_spans(stalled: list[tuple[int, int]], wall: float) -> list[tuple[float, float]]:
    """The times (``perf_counter``'s, ``wall`` = the clock less it) a stall may have held Redis: Redis notes a
    stall at the second its fdatasync ended, so from its length before that second to the second's end."""
    return [(second - ms / 1000 - wall, second + 1 - wall) for second, ms in stalled]


def _touched(sent: float, heard: float, spans: list[tuple[float, float]]) -> bool:
    """Whether a move sent at ``sent`` and heard at ``heard`` overlapped one of ``spans``."""
    return any(start < heard and sent < end for start, end in spans)


def _own_cpu() -> float:
    """This client's CPU so far (every thread): it runs on the same cores as the server it measures."""
    t = os.times()
    return t.user + t.system


def _pooled(peers: list[dict]) -> dict:
    """Every round's peer figures as one, as escoba's are: CPU summed over moves, the p99s over every
    round's moves (the rounds' p99s averaged where a round has no latencies; the quoted figure as it is)."""
    if any(q["source"] == "quoted" for q in peers):
        return peers[0]
    moves = sum(q["moves"] for q in peers)
    pooled = {"cpu_ms": sum(q["cpu_ms"] * q["moves"] for q in peers) / max(1, moves), "source": "measured in this run"}
    for figure, samples in (("p99_ms", "heard_ms"), ("p99_state_ms", "heard_state_ms")):
        if all(q.get(samples) for q in peers):
            pooled[figure] = percentile([t for q in peers for t in q[samples]], 99)
        else:
            pooled[figure] = sum(q[figure] for q in peers) / len(peers)
    return pooled


def _peer(args) -> dict:
    """The peer's figures: measured now, on this machine, or else the ones quoted from outside."""
    measured = None
    if args.peer == "auto":
        from bench.peer import run_peer

        measured = run_peer(games=args.games, duration=args.duration, think=args.think, warmup=args.warmup)
    if measured is None:
        print(f"peer (quoted, not run here): {PEER['name']}: {PEER['cpu_ms']} ms CPU per move, "
              f"opponent {PEER['p50_ms']:g} ms p50 / {PEER['p99_ms']:g} ms p99")
        return {**PEER, "source": "quoted"}
    print(f"peer (run here, in the same run): {PEER['name']}: {measured['moves']} moves in "
          f"{measured['seconds']:.1f}s, {measured['cpu_ms_per_move']:.3f} ms CPU per move, opponent "
          f"{measured['p50_ms']:.1f} ms p50 / {measured['p99_ms']:.1f} ms p99 (its socket.io message: "
          f"{measured.get('socket_p50_ms', '?')} / {measured.get('socket_p99_ms', '?')} ms); "
          f"{measured.get('matches_started_in_window', '?')} matches opened in the window; CPU per move: user "
          f"{measured.get('cpu_user_ms_per_move', '?')} ms, system {measured.get('cpu_system_ms_per_move', '?')} ms; "
          f"its client's own CPU {measured.get('client_cpu_ms_per_move', '?')} ms")
    # the target's p99 is the opponent's socket.io message as it arrives, the closer match for this
    # client's stamp (the raw read of the frame, before parsing); the client holding the state, after
    # boardgame.io's reducer, is later, and is said beside it
    socket_p99 = measured.get("socket_p99_ms")
    return {"cpu_ms": measured["cpu_ms_per_move"], "moves": measured["moves"], "source": "measured in this run",
            "p99_ms": measured["p99_ms"] if socket_p99 is None else socket_p99, "p99_state_ms": measured["p99_ms"],
            "heard_ms": measured.get("heard_socket_ms") if socket_p99 is not None else measured.get("heard_ms"),
            "heard_state_ms": measured.get("heard_ms")}


if __name__ == "__main__":
    raise SystemExit(main())
