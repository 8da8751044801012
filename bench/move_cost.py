"""What a socket move costs the API's own code, without the socket: the rest of bench/games.py's CPU
per move is the I/O around it.

    python bench/move_cost.py [--tables 20] [--moves 50] [--profile 25] [--redis durable|memory]

In one process, on a durable ``redis-server`` of the bench's own (AOF, ``appendfsync always``, as
production; ``--redis memory``: no AOF, to see what the fsync's wait costs the API), with
``ESCOBA_RATE_LIMITS=off`` as in every bench here: opens ``--tables`` two-player tables with
operator decks (bench/_common.game_script, the games bench/games.py plays) and plays ``--moves``
moves on each, every one as a socket move is decided and answered
(``api.sockets.moves.SocketMoves.answer``: the frame's parse, the limit and token checks, the rules,
the append's round trip to Redis, the timers hook, the log line and metrics) followed by both
readers' frames (``api.sockets.route._frames``: the mover's and the other's, the shared part
once; patches of the version each was sent last, as the page's sockets ask, or ``--frames view``).
It prints the process's CPU per move (``time.process_time``) and, with ``--profile N``, a cProfile
of N more moves a table (``--sort``: by cumulative time, or by each function's own).

Set it beside bench/games.py's server CPU per move (gunicorn's gevent worker, the same moves sent
over real sockets): what is not here is what the sockets' layers cost, the reading and writing of
frames, simple-websocket's reader greenlet per socket, gevent's loop and its wake-ups, the change
notice read back from Redis, and the kernel's loopback TCP for three sends and about five reads a
move (`strace -c`).
On 2026-12-03 this machine gave 530 to 551 us here (235 us with ``--redis memory``) against 0.88 to
0.97 ms there.

Why the fsync costs the API's CPU, not only its time: the append's answer waits for Redis's fsync
(about 3 ms here), so the process sleeps in every move, and a thread that sleeps pays for it when it
wakes (the scheduler's switch in system time, and its caches gone cold, in user time, for the rest of
the move). On this machine a single SET cost its client 25 us of CPU against an in-memory Redis and
111 to 122 us against a durable one (user 23 -> 59 us, system 1.6 -> 16.5 us: a voluntary context
switch every call). An in-memory server such as the peer never sleeps in the middle of a move.

What it leaves out: the client sockets, gevent (here locks are the standard library's), more than
one table's moves interleaved in flight, the first move of a table (its state loaded from Redis).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import ADMIN_TOKEN, PRESET, SETTINGS, game_script, start_private_redis  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="A socket move's cost in the API's own code, without the socket")
    parser.add_argument("--tables", type=int, default=20)
    parser.add_argument("--moves", type=int, default=50, help="moves timed on each table (after 10 warm-up)")
    parser.add_argument("--profile", type=int, default=0, help="then profile this many more moves a table")
    parser.add_argument("--redis", choices=("durable", "memory"), default="durable",
                        help="durable: AOF with appendfsync always, as production; memory: no AOF")
    parser.add_argument("--frames", choices=("patch", "view"), default="patch",
                        help="the readers' frames: patches of the version each was sent last, as the page's "
                             "sockets ask (frames=patch), or whole views")
    parser.add_argument("--sort", choices=("cumulative", "tottime"), default="cumulative",
                        help="the profile's order")
    args = parser.parse_args(argv)
    redis = start_private_redis(durable=args.redis == "durable")
    try:
        os.environ.update(REDIS_URL=redis.url, ESCOBA_RATE_LIMITS="off", ESCOBA_ADMIN_TOKEN=ADMIN_TOKEN)
        return _run(args)
    finally:
        redis.stop()


def _run(args) -> int:
    from api.app import create_app
    from api.sockets import route
    from api.sockets.moves import SocketMoves

    app = create_app()
    ctx = app.extensions["escoba"]
    client = app.test_client()
    warmup = 10
    needed = warmup + args.moves + args.profile
    tables = []
    for g in range(args.tables):
        script = game_script(f"g:{g}", needed)
        body = client.post("/tables", json={"name": "Ana", "preset": PRESET, "settings": SETTINGS,
                                            "decks": script.decks, "first_dealer": 0},
                           headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}).get_json()
        table_id, host = body["table_id"], body["token"]
        guest = client.post(f"/tables/{table_id}/seats", json={"name": "Bea"}).get_json()["token"]
        client.post(f"/tables/{table_id}/moves", json={"type": "start"}, headers={"Authorization": f"Bearer {host}"})
        state = ctx.service.load(table_id)
        tables.append((table_id, script, {seat: (token, state.seats[seat].player)
                                          for seat, token in ((0, host), (1, guest))}))
    sockets = {(table_id, seat): SocketMoves(ctx, table_id, token, "127.0.0.1", None, app.logger)
               for table_id, _script, seats in tables for seat, (token, _player) in seats.items()}
    sent = {key: None for key in sockets}  # the version each reader's socket was sent last (patches' base)

    def frames(table_id, state, seat, player):
        since = sent[(table_id, seat)] if args.frames == "patch" else None
        route._frames(ctx, table_id, state, player, None, since)
        sent[(table_id, seat)] = state.version

    def play(first: int, last: int) -> int:
        n = 0
        for k in range(first, last):
            for table_id, script, seats in tables:
                if k >= len(script.moves):
                    continue
                seat, move, version = script.moves[k]
                frame = json.dumps({"type": "move", "id": f"{table_id}.{k}", "move": move}).encode()
                answer, state = sockets[(table_id, seat)].answer(frame)
                if state is None or state.version != version:
                    raise SystemExit(f"table {table_id} move {k}: {answer[:200]!r}")
                frames(table_id, state, seat, seats[seat][1])
                frames(table_id, state, 1 - seat, seats[1 - seat][1])
                n += 1
        return n

    play(0, warmup)
    started = time.process_time()
    n = play(warmup, warmup + args.moves)
    cpu = time.process_time() - started
    print(f"{n} socket moves on {args.tables} tables, each decided, appended ({args.redis} Redis) and answered, with "
          f"both readers' frames ({'patches' if args.frames == 'patch' else 'whole views'}): "
          f"{cpu * 1e6 / max(1, n):.0f} us of CPU per move, no socket")
    if args.profile:
        import cProfile
        import pstats

        profile = cProfile.Profile()
        profile.enable()
        play(warmup + args.moves, needed)
        profile.disable()
        pstats.Stats(profile).sort_stats(args.sort).print_stats(30)
    ctx.fanout.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
