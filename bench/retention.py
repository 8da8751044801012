"""Redis bytes per finished game, before and after compaction, and per active table.

On a ``redis-server`` of the bench's own, ``--games`` two-player ``selminha``
games to 21 are played with random legal moves through ``TableService`` with
the production hook (``workers.scheduling.TimersHook``: timers hashes and RQ
jobs as the API makes them), two seat tokens each, an ``Idempotency-Key`` on
every player move (the worst case) and a few chat lines; then the guest
declines the rematch, so each table is closed for good and has its ``compact``
timer. ``--active`` more tables are left mid-game (about half a game).

``used_memory`` (INFO memory) is read before, after the games, and after the
compact jobs ran (RQ's own jobs, run in burst at the time they are due, the
real path: ``workers.jobs.compact``). The idempotency keys carry a 24 h TTL
that ends before the compact timer is due (``ESCOBA_COMPACT_AFTER``, 24 h); the
bench deletes them itself at that point, as their TTL would have.

Also prints the compression ratio of zstandard (the archive's) against zlib on
the same archived logs. Target: at most 10 KB per finished game after compaction.

    python bench/retention.py [--games 30] [--active 10]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import redis  # noqa: E402
import zstandard  # noqa: E402

from api.auth import _tokens_key, new_token  # noqa: E402
from bench._common import private_redis  # noqa: E402
from events import autoplay, compaction  # noqa: E402
from events.config import Config  # noqa: E402
from events.service import TableService  # noqa: E402
from workers import context, runner, scheduling  # noqa: E402

TARGET = 10 * 1024


def used(client, settle: float = 3.0) -> int:
    """``used_memory`` without the clients' buffers (connections, not tables), once it stops
    moving: Redis shrinks its key and expiry tables in its cron, a bit at a time."""
    last, deadline = -1, time.monotonic() + settle
    while True:
        info = client.info("memory")
        now = int(info["used_memory"]) - int(info.get("mem_clients_normal", 0))
        if now == last or time.monotonic() > deadline:
            return now
        last = now
        time.sleep(0.3)


def play_table(svc: TableService, client, rng: random.Random, *, finish: bool) -> str:
    tid = autoplay.new_table(svc, preset="selminha", settings={"target": 21})
    for player in ("p0", "p1"):  # a seat token each, as the API keeps them
        _token, (digest, who) = new_token(player)
        client.hset(_tokens_key(tid), digest, who)
    state = svc.load(tid)
    n = 0
    while True:
        if finish and state.status == "finished":
            break
        if not finish and state.version >= 200:
            break
        command, actor = autoplay.next_command(state, rng)
        n += 1
        key = f"move-{n}" if actor.startswith("seat:") else None
        state = svc.execute(tid, command, actor=actor, idempotency_key=key).state
        if n % 60 == 0:  # a few chat lines, as the API writes them
            client.xadd(f"table:{{{tid}}}:chat",
                        {"line": f'{{"seat":0,"name":"Ana","text":"line {n}","at":"2026-01-01T12:00:00Z",'
                                 f'"id":{n // 60}}}'}, id=f"{n // 60}-0")
            client.incr(f"table:{{{tid}}}:chatseq")
    if finish:
        svc.execute(tid, {"type": "rematch", "by": 1, "accept": False}, actor="seat:1")
    return tid


def _expire_idempotency(client, tables) -> None:
    """What the idempotency keys' 24 h TTL does before the compact timer is due."""
    for table_id in tables:
        for key in client.scan_iter(f"table:{{{table_id}}}:idem:*"):
            client.delete(key)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=30)
    p.add_argument("--active", type=int, default=10)
    args = p.parse_args(argv)
    config = Config()

    with private_redis(durable=False) as server:
        client = redis.Redis(port=server.port)
        svc = TableService(client, rng=random.Random(1), on_change=scheduling.TimersHook(client, config))
        # the jobs run in this process on the bench's own Redis (else they connect to REDIS_URL)
        context.configure(config, tables=client)
        # Warm-up: one game through the whole cycle first. Redis allocates a latency histogram
        # (~8 KB up to 30 KB) per command type the first time it runs one (latency-tracking, on
        # by default): a constant for the server, not a cost of any game.
        warm = play_table(svc, client, random.Random(99), finish=True)
        _expire_idempotency(client, [warm])
        runner.run_burst(client, now=time.time() + config.compact_after + 60)
        assert compaction.is_compacted(client, warm)
        base = used(client)
        t0 = time.perf_counter()
        rng = random.Random(7)
        finished = [play_table(svc, client, rng, finish=True) for _ in range(args.games)]
        after_games = used(client)
        events = sum(svc.version(t) for t in finished)
        bodies = [b"\n".join(raw for _, raw in svc.store.read_raw(t)) for t in finished]
        _expire_idempotency(client, finished)
        ran = runner.run_burst(client, now=time.time() + config.compact_after + 60)
        compacted = sum(compaction.is_compacted(client, t) for t in finished)
        after_compaction = used(client)
        left = sorted({k.decode().rsplit(":", 1)[1] for t in finished for k in client.keys(f"table:{{{t}}}:*")})
        kept = sum(client.memory_usage(k) or 0 for t in finished for k in client.keys(f"table:{{{t}}}:*"))
        for _ in range(args.active):  # then the active tables, measured on their own
            play_table(svc, client, rng, finish=False)
        after_active = used(client)
        print(f"played {args.games} finished games ({events} events, {events / args.games:.0f} a game) and "
              f"{args.active} active tables in {time.perf_counter() - t0:.1f}s on a redis-server of the "
              f"bench's own (used_memory less the clients' buffers)", flush=True)

        hot = (after_games - base) / args.games
        cold = (after_compaction - base) / args.games
        per_active = (after_active - after_compaction) / args.active
        print(f"finished game, before compaction: {hot:,.0f} B ({hot / events * args.games:.0f} B an event)")
        print(f"finished game, after compaction:  {cold:,.0f} B (target <= {TARGET:,}: "
              f"{'met' if cold <= TARGET else 'MISSED'}); {ran} jobs ran, {compacted}/{args.games} "
              f"compacted; keys left per table: {', '.join(left)} (+ its index and status entries), "
              f"MEMORY USAGE {kept / args.games:,.0f} B")
        print(f"active table (mid-game, ~200 events): {per_active:,.0f} B")
        raw = sum(len(b) for b in bodies)
        zstd = sum(len(zstandard.ZstdCompressor(level=compaction.LEVEL).compress(b)) for b in bodies)
        zl = sum(len(zlib.compress(b, 9)) for b in bodies)
        packed_z = [zstandard.ZstdCompressor(level=compaction.LEVEL).compress(b) for b in bodies]
        packed_l = [zlib.compress(b, 9) for b in bodies]
        t1 = time.process_time()
        for _ in range(20):
            for b in packed_z:
                zstandard.ZstdDecompressor().decompress(b)
        t2 = time.process_time()
        for _ in range(20):
            for b in packed_l:
                zlib.decompress(b)
        t3 = time.process_time()
        per = 1e6 / (20 * len(bodies))
        print(f"compression of the archived logs ({raw / args.games:,.0f} B of JSON a game): "
              f"zstandard level {compaction.LEVEL} {raw / zstd:.1f}x ({zstd / args.games:,.0f} B, "
              f"{(t2 - t1) * per:.0f} us to unpack), zlib level 9 {raw / zl:.1f}x "
              f"({zl / args.games:,.0f} B, {(t3 - t2) * per:.0f} us to unpack)")
        client.close()
    return 0 if cold <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
