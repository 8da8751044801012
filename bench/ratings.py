"""Benchmark: the rating update of one game, and a rebuild of every rating from the logs.

Plays ``--games`` rated games with random legal moves between ``--players`` accounts (a seeded
``random.Random``: the same logs every run) through the TableService into a Redis of the bench's
own, rates each as the worker's job does (``events.ratings.rate_table``), then times:

- the rating math alone (engine/ratings.py): Glicko-2 two-player games, OpenSkill teams, a second;
- the live update of one game (the job: the table's log read, its result, each player's Lua step,
  the board): games a second and Redis commands a game;
- a rebuild (``escoba ratings rebuild``, events/ratings.py ``rebuild``): games a second on one core
  (this process's CPU time), split into what it reads from Redis (the index, each table's log: bytes
  and commands a game), the decoding and fold of the logs, the rating math and the write; and the
  projection to 1,000,000 rated games (target: under 10 minutes on one core).

Figures are printed, not asserted (docs/benchmarks.md). Run from the repository root:
``python bench/ratings.py [--games N] [--players N] [--durable]``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import private_redis  # noqa: E402
from engine import ratings as rmath  # noqa: E402
from events import compaction, ratings  # noqa: E402
from events.service import TableService  # noqa: E402
from tests.events.ratings_games import new_players, open_rated, play  # noqa: E402

TARGET_MINUTES = 10.0
PROJECTED = 1_000_000


def cpu() -> float:
    return time.process_time()


def commands(redis) -> int:
    return int(redis.info("stats")["total_commands_processed"])


def math_rate(seconds: float = 1.0) -> tuple[float, float]:
    two = [[rmath.Rating(1540.0, 120.0, 0.09, 9)], [rmath.Rating(1480.0, 200.0, 0.09, 4)]]
    teams = [[rmath.Rating(1500.0, 300.0), rmath.Rating(1600.0, 250.0)],
             [rmath.Rating(1450.0, 320.0), rmath.Rating(1550.0, 200.0)]]
    out = []
    for mode, before in (("two", two), ("teams", teams)):
        n, began = 0, cpu()
        while cpu() - began < seconds:
            for _ in range(200):
                rmath.rate(mode, before, [1, 2])
            n += 200
        out.append(n / (cpu() - began))
    return out[0], out[1]


def reference_ms() -> float:
    best = float("inf")
    for _ in range(5):
        began = cpu()
        sum(range(10**6))
        best = min(best, cpu() - began)
    return best * 1000


def redis_cpu(redis) -> float:
    info = redis.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def rebuild_phases(redis, svc, label: str) -> float:
    """A rebuild, phase by phase (what ``ratings.rebuild`` does), then whole; games a second of one core."""
    c0, k0 = cpu(), commands(redis)
    entries = ratings.ended_games(redis)
    index_cpu, index_cmds = cpu() - c0, commands(redis) - k0
    size = sum(len(raw) for tid in {t for _, t, _ in entries} for _, raw in svc.entries(tid))
    c0, k0, r0 = cpu(), commands(redis), redis_cpu(redis)
    ids = list(dict.fromkeys(t for _, t, _ in entries))
    results = {}
    for at in range(0, len(ids), ratings.READ_AHEAD):
        results.update(ratings.read_games(redis, svc, ids[at:at + ratings.READ_AHEAD]))
    read_cpu, read_cmds, read_redis = cpu() - c0, commands(redis) - k0, redis_cpu(redis) - r0
    c0 = cpu()
    rebuilt = ratings.Rebuilt()
    for ended, tid, game in entries:
        [(result, _)] = [r for r in results[tid] if r[0].game == game]
        ratings.replay_game(rebuilt, tid, result, ended)
    math_cpu = cpu() - c0
    c0, k0 = cpu(), commands(redis)
    ratings.write_rebuilt(redis, rebuilt)
    write_cpu, write_cmds = cpu() - c0, commands(redis) - k0
    n = len(entries)
    print(f"rebuild from {label}, a game: index {1e6 * index_cpu / n:.0f} us ({index_cmds} commands in all); "
          f"logs read and results {1e6 * read_cpu / n:.0f} us here + {1e6 * read_redis / n:.0f} us in Redis "
          f"({read_cmds / n:.1f} commands, pipelined {ratings.READ_AHEAD} tables at a time; "
          f"{size / n / 1024:.1f} KiB of records a game); rating math {1e6 * math_cpu / n:.0f} us; "
          f"write {1e6 * write_cpu / n:.0f} us ({write_cmds} commands for {len(rebuilt.players)} players)")
    c0, w0, r0 = cpu(), time.perf_counter(), redis_cpu(redis)
    done = ratings.rebuild(redis, svc)
    whole_cpu, whole_wall, whole_redis = cpu() - c0, time.perf_counter() - w0, redis_cpu(redis) - r0
    rate = done["games"] / (whole_cpu + whole_redis)
    print(f"  whole: {done['games']} games, {rate:,.0f} games/s of one core (here {1e6 * whole_cpu / n:.0f} us + "
          f"Redis {1e6 * whole_redis / n:.0f} us a game), {done['games'] / whole_wall:,.0f} games/s wall on this "
          f"loaded machine; Redis serves {size / max(read_redis, 1e-9) / 2**20:.0f} MiB/s of records")
    return rate


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200,
                        help="rated games to play and rate (default: %(default)s)")
    parser.add_argument("--players", type=int, default=60,
                        help="accounts they are played between (default: %(default)s)")
    parser.add_argument("--durable", action="store_true", help="the Redis with AOF fsynced on every write")
    args = parser.parse_args(argv)

    print(f"this machine now: load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; a reference loop "
          f"(sum of range(10**6)) took {reference_ms():.1f} ms of CPU (about 10 on an idle 2020s core): "
          f"the figures below scale with it")
    two, teams = math_rate()
    print(f"rating math alone: {two:,.0f} two-player games/s (Glicko-2), {teams:,.0f} team games/s (OpenSkill)")

    with private_redis(durable=args.durable) as server:
        redis = server.client()
        svc = TableService(redis, cache_size=0)
        rng = random.Random(7)
        pool = new_players(args.players)
        played = []
        began = time.perf_counter()
        for i in range(args.games):
            pair = rng.sample(pool, 2)
            tid = open_rated(svc, pair)
            state = play(svc, tid, seed=i)
            played.append((tid, state.game))
        print(f"played {args.games} rated games in {time.perf_counter() - began:.1f} s (setup, not measured)")

        # the live update: the job's work for each game, in the order they ended
        c0, w0, k0 = cpu(), time.perf_counter(), commands(redis)
        for tid, game in played:
            ratings.rate_table(redis, svc, tid, game)
        live_cpu, live_wall, live_cmds = cpu() - c0, time.perf_counter() - w0, commands(redis) - k0
        print(f"live update: {args.games / live_wall:,.0f} games/s wall, {args.games / live_cpu:,.0f} games/s "
              f"of this process's CPU; {live_cmds / args.games:.1f} Redis commands a game "
              f"(a player's Lua step each; the log read whole)")

        # a rebuild: what it reads, on the tables as they are (streams) and once compacted (archives)
        live = {p: redis.hgetall(ratings.player_key(p, "ratings")) for p in pool}
        rebuild_phases(redis, svc, "streams")
        for tid, _ in played:
            compaction.compact(redis, tid, svc.load(tid).version)
        svc = TableService(redis, cache_size=0)
        rate = rebuild_phases(redis, svc, "archives (compacted: most tables by the time of a rebuild)")
        assert {p: redis.hgetall(ratings.player_key(p, "ratings")) for p in pool} == live, "rebuild differs"
        minutes = PROJECTED / rate / 60
        print(f"projection: {PROJECTED:,} rated games in {minutes:.1f} min on one core (this process's CPU and "
              f"Redis's; target under {TARGET_MINUTES:.0f}: {'met' if minutes < TARGET_MINUTES else 'NOT met'})")
        redis.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
