"""The boardgame.io peer of bench/games.py, run here: same machine, same run.

    npm ci --prefix bench/peer        # once: boardgame.io 0.50.2 into bench/peer/node_modules
    python bench/peer.py [--games 100] [--duration 30] [--think 0.5] [--warmup 5]

``run_peer()`` starts bench/peer/server.js (boardgame.io's ``Server``: the default
in-memory storage, the Lobby API and the socket.io transport on one port on
127.0.0.1) and then bench/peer/load.js in a Node process of its own, the closed-loop
client: ``games`` two-player matches (bench/peer/game.js: a round of Escoba, 40-card
deck shuffled with boardgame.io's seeded random, captures of 15, a deal of 3 each
when both hands are empty, a playerView that hides the opponent's hand and the deck),
two boardgame.io Clients per match, one WebSocket each. It returns load.js's JSON line
as a dict, or None (with the reason printed) when node or bench/peer/node_modules is
missing.

The same as games.py:
- the think time: when a player's socket shows it is its turn, uniform in 0.5..1.5 x
  ``think`` (0: none), then the move is sent; a game has one move in flight at a time;
- the latency: from just before the move is sent to the moment the OPPONENT's client
  holds the state the move made; ``p50_ms``/``p99_ms`` use bench/_common.py's
  percentile (nearest rank); the moves counted are those sent in the window, heard up
  to 1 s after it (``missing``: never heard);
- the CPU per move: utime + stime of the server's processes from /proc/PID/stat, read
  at the start and the end of the measured window, divided by the moves sent in it;
- the warm-up (uncounted), then the measured window; the client in a process of its
  own, on the same 2 cores as the server, under the same ``nice``.

Where the peer differs:
- the move travels over the player's socket (socket.io ``update``), not a separate
  HTTP POST; so there is no POST latency, and the send time is taken just before
  ``client.moves.play()`` emits it;
- "holds" is the opponent Client's ``subscribe`` callback, after socket.io has parsed
  the message and the client's redux store has taken it; games.py stamps the raw
  socket read before any parsing. ``socket_p50_ms``/``socket_p99_ms`` stamp the
  socket.io message as it arrives (an ``onAny`` listener, before the client's reducer)
  for the closer comparison, which games.py's target uses (``heard_ms`` and
  ``heard_socket_ms`` carry every move's, so that it pools the rounds);
- the server is one Node process (all its threads are in /proc/PID/stat), with its
  state in memory: no Redis, so nothing like games.py's separate redis-server CPU, and
  nothing durable;
- a match is one round (36 moves); when it ends load.js opens a new match in its
  place (Lobby API create + two joins, two new sockets and their sync), and that
  happens inside the measured window, so its server CPU is in ``cpu_ms_per_move``
  (``matches_started_in_window`` says how many). games.py's games (to 31 points,
  many rounds, ``next_round`` moves) are opened before the window and rarely end in it;
- NODE_ENV=production for server and client (boardgame.io then skips its per-move
  serialisability check and its INFO logging), and boardgame.io's other defaults:
  full-state ``update`` messages (no ``deltaState`` patches), undo history kept;
- the move is ``client: false`` (the clients have neither the deck nor the other
  hand, so they cannot run it): no optimistic update on the mover's client.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import free_port  # noqa: E402

PEER_DIR = Path(__file__).resolve().parent / "peer"


def _missing() -> str | None:
    """Why the peer cannot run here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (the peer is a Node program: install Node 18+ and npm)"
    if not (PEER_DIR / "node_modules" / "boardgame.io").is_dir():
        return "bench/peer/node_modules is not installed: run `npm ci --prefix bench/peer`"
    return None


def _wait_up(proc: subprocess.Popen, port: int, log_path: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the peer server exited ({proc.returncode}); see {log_path}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/games")  # the Lobby API: the game names
            ok = conn.getresponse().status == 200
            conn.close()
            if ok:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"the peer server on port {port} did not come up; see {log_path}")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_peer(games: int = 100, duration: float = 30.0, think: float = 0.5, warmup: float = 5.0,
             seed: str = "peer", storage: str = "memory") -> dict | None:
    """Run the boardgame.io peer (server.js + load.js) and return load.js's figures, or None.
    ``storage``: boardgame.io's in-memory store, or ``flatfile`` (its FlatFile, in a temporary directory)."""
    why = _missing()
    if why is not None:
        print(f"peer: not run: {why}", flush=True)
        return None
    if storage == "flatfile" and not (PEER_DIR / "node_modules" / "node-persist").is_dir():
        print("peer: flatfile not run: bench/peer/node_modules has no node-persist: run `npm ci --prefix bench/peer`")
        return None
    env = dict(os.environ)
    env.setdefault("NODE_ENV", "production")
    env["PEER_STORAGE"] = storage
    store_dir = tempfile.mkdtemp(prefix="bench-peer-flatfile-") if storage == "flatfile" else None
    if store_dir is not None:
        env["PEER_DIR"] = store_dir
    port = free_port()
    log_path = f"/tmp/bench-peer-{port}.log"
    with open(log_path, "wb") as log:
        server = subprocess.Popen(["node", "server.js", str(port)], cwd=PEER_DIR, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_up(server, port, log_path)
        argv = ["node", "load.js", "--port", str(port), "--server-pid", str(server.pid),
                "--games", str(games), "--duration", str(duration), "--think", str(think),
                "--warmup", str(warmup), "--seed", seed]
        load = subprocess.run(argv, cwd=PEER_DIR, env=env, capture_output=True, text=True,
                              timeout=warmup + duration + 120)
        lines = [line for line in load.stdout.splitlines() if line.startswith("{")]
        if load.returncode != 0 or not lines:
            print(f"peer: load.js failed ({load.returncode}): {(load.stderr or load.stdout)[-2000:]}", flush=True)
            return None
        result = json.loads(lines[-1])
        result["server_log"] = log_path
        if storage != "memory":
            result["peer"] = result["peer"].replace("in-memory store", f"{storage} store")
        return result
    finally:
        _stop(server)
        if store_dir is not None:
            shutil.rmtree(store_dir, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="The boardgame.io peer of bench/games.py, run here")
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--duration", type=float, default=30.0, help="seconds measured (after a warm-up)")
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--think", type=float, default=0.5, help="mean think time before each move, s (0: none)")
    parser.add_argument("--seed", default="peer")
    parser.add_argument("--storage", default="memory", choices=("memory", "flatfile"))
    args = parser.parse_args(argv)
    result = run_peer(args.games, args.duration, args.think, args.warmup, args.seed, args.storage)
    if result is None:
        return 1
    print(json.dumps({k: v for k, v in result.items() if not k.startswith("heard")}))  # less every latency
    print(f"peer: {result['peer']}: {result['games']} games, {result['moves']} moves in {result['seconds']} s; "
          f"opponent holds the state {result['p50_ms']} ms p50 / {result['p99_ms']} ms p99 after the send "
          f"(socket.io message: {result['socket_p50_ms']} / {result['socket_p99_ms']} ms); "
          f"server CPU {result['cpu_ms_per_move']} ms per move; missing {result['missing']}, "
          f"errors {result['errors']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
