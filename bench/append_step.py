"""What the append's Lua step costs Redis, against the same writes sent as a plain MULTI/EXEC.

    python bench/append_step.py [--tables 100] [--moves 50] [--rounds 3]
    python bench/append_step.py --parts    # the step as the API sends it, then without each of its parts
    python bench/append_step.py --client   # the client's side of a move's append, Redis left out

On a durable ``redis-server`` of the bench's own for each run (AOF, ``appendfsync always``, as
production): ``--tables`` tables, each with the timers hash and listeners set a table in play has,
get ``--moves`` appends of one move's record each, round-robin over the tables, as the API sends
them: ``EventStore.append`` with the move's idempotency key, the timers' two hashes read back
and stamped, and this process as the table's only listener (so no notice is published). The
baseline sends the writes such a move makes (``XADD``, the key's ``SET``, the stamp's ``HSET``) and
the two reads back as one ``MULTI``/``EXEC``, which keeps none of the step's guarantees (no version
check, no repeat found): it is the floor of those commands without Lua. Runs alternate, ``--rounds``
of each; it prints Redis's user CPU per append (``INFO cpu``, to the microsecond) for each run and
the ratio of the means.

``--parts`` runs the step as a socket move sends it (the rate count and the players' row too), then with
each of its parts left out in turn (``PARTS``: the timers' read-back and stamp, the listeners' check, the
idempotency key, the rate count, the row's HSET), ``--rounds`` of each in turn, and prints what each
part costs Redis's user time an append: what a cut of that part could save at most (a part left out is a
guarantee lost).

``--client`` times what the API's process spends on a move's append without Redis (its reply canned):
the ``Append`` built with every part a socket move gives it (``api.moves.MoveStep``, the rate count),
its KEYS and ARGV made and checked (``EventStore._step_slots``), the reply read; in this process's CPU
time, the best of ``--rounds``.

Redis's system time is printed too, but it is mostly the AOF's ``fdatasync`` and swings with the
disk: the user time is what the step's calls change. What it leaves out: the API's side (its CPU is
bench/games.py's), several clients at once, a cluster, and the first move of a table (its stream
made).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import start_private_redis  # noqa: E402

TIMERS = {
    "rev": "2",
    "away": '{"id":"t_away_1796592574","due":1796592573.481,"func":"workers.jobs.away",'
            '"args":["t",1,4],"kwargs":{},"retry":null}',
    "expire": '{"id":"t_expire_1797024574","due":1797024573.477,"func":"workers.jobs.expire",'
              '"args":["t",1],"kwargs":{},"retry":null}',
}


def record(version: int) -> dict:
    return {"type": "CardPlayed", "v": 1, "version": version, "at": "2026-12-04T21:25:32.044Z",
            "actor": "player:p_3e5b37827f519b24",
            "data": {"seat": 0, "card": "9o", "captured": ["4e"], "escoba": False, "fifteen_left": False}}


def cpu(client) -> tuple[float, float]:
    """Redis's own (user, system) seconds, to the microsecond (/proc counts in ticks of 10 ms)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]), float(info["used_cpu_sys"])


# the step's parts --parts leaves out, one at a time
PARTS = ("read-back", "listeners", "idempotency", "count", "row")
# the players' row of a two-player table in play, as events/my_tables.py ``row_fields`` writes it in every
# append's step (since issue 55): one HSET of the table's row hash (``turn_since`` when a turn begins)
ROW = ('{"name":"Ana\'s table","preset":"selminha","status":"playing","version":%d,'
       '"updated_at":"2026-12-04T21:25:32.044Z","turn":1,"seats":[["Ana","p_3e5b37827f519b24",null,"human"],'
       '["Bea","p_0c1d2e3f4a5b6c7d",null,"human"]]}')
STEP = ("read-back", "listeners", "idempotency")  # the step against MULTI/EXEC (which counts nothing)


def step_append(t: str, v: int, parts: tuple[str, ...]):
    """The ``Append`` of table ``t``'s move after version ``v`` with these ``parts``."""
    from events.my_tables import row_key
    from events.store import Append, Idempotency, RateCount, idempotency_key, table_key

    return Append(
        t, v, [record(v + 1)],
        idempotency=Idempotency(idempotency_key(t, "player:p_x", f"m{v}"), f'{{"version": {v + 1}}}', 86400)
        if "idempotency" in parts else None,
        read_back=(table_key(t, "timers"), table_key(t, "notify")) if "read-back" in parts else (),
        stamp="read-back" in parts,
        quiet_for="me" if "listeners" in parts else None,
        count=RateCount(table_key(t, "limit:moves:x"), 100_000, 60) if "count" in parts else None,
        row=(row_key(t), {"row": ROW % (v + 1), "turn_since": "2026-12-04T21:25:32.044Z"}) if "row" in parts else None)


def run(way: str, tables: int, moves: int, parts: tuple[str, ...] = STEP) -> tuple[float, float]:
    """(user, system) microseconds of Redis CPU per append, on a fresh durable Redis: the step with these
    ``parts`` (``PARTS``), or (``way`` "multi") the same writes as MULTI/EXEC."""
    from redis import Redis

    from events.records import dumps
    from events.store import EventStore, idempotency_key, table_key

    server = start_private_redis()
    client = Redis(port=server.port)
    try:
        store = EventStore(client)
        ids = [f"bench{i:05d}" for i in range(tables)]
        for t in ids:
            client.hset(table_key(t, "timers"), mapping=TIMERS)
            client.sadd(table_key(t, "listeners"), "me")
        user0, system0 = cpu(client)
        for v in range(moves):
            for t in ids:
                if way == "step":
                    store.append(step_append(t, v, parts))
                else:
                    key = idempotency_key(t, "player:p_x", f"m{v}")
                    hashes = (table_key(t, "timers"), table_key(t, "notify"))
                    pipe = client.pipeline(transaction=True)
                    pipe.xadd(table_key(t, "events"), {"e": dumps(record(v + 1))}, id=f"{v + 1}-0")
                    pipe.set(key, f'{{"version": {v + 1}}}', ex=86400)
                    pipe.hset(hashes[0], "version", v + 1)
                    pipe.hgetall(hashes[0])
                    pipe.hgetall(hashes[1])
                    pipe.execute()
        user1, system1 = cpu(client)
        n = tables * moves
        return (user1 - user0) / n * 1e6, (system1 - system0) / n * 1e6
    finally:
        client.close()
        server.stop()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="The append's Lua step against a plain MULTI/EXEC")
    parser.add_argument("--tables", type=int, default=100)
    parser.add_argument("--moves", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", action="store_true",
                        help="the step with each of its parts left out in turn, against the whole step")
    parser.add_argument("--client", action="store_true", help="the client's side of a move's append alone")
    args = parser.parse_args(argv)
    if args.parts:
        return parts(args)
    if args.client:
        return client(args)
    users: dict[str, list[float]] = {"step": [], "multi": []}
    for _ in range(args.rounds):
        for way in ("step", "multi"):
            user, system = run(way, args.tables, args.moves)
            users[way].append(user)
            print(f"{way:5}: Redis user {user:5.1f} us, system {system:5.1f} us per append", flush=True)
    step, multi = statistics.mean(users["step"]), statistics.mean(users["multi"])
    # a short run can see no tick of Redis's CPU at all
    ratio = f"{step / multi:.2f}x" if multi > 0 else "(no baseline time measured)"
    print(f"the step's Redis user time per append: {step:.1f} us, {ratio} the same writes as "
          f"MULTI/EXEC ({multi:.1f} us)")
    return 0


def client(args, n: int = 30_000) -> int:
    """A move's append in this process, Redis's reply canned: ``n`` appends a round, the best round."""
    import time

    import fakeredis

    from api.http.limits import Count
    from api.moves import MoveStep
    from events.records import dumps
    from events.store import Append, EventStore, Idempotency, idempotency_key, table_key

    store = EventStore(fakeredis.FakeRedis())
    reply = [1, 1, 0, [b"version", b"1"], []]
    store._run = lambda script, keys, args: reply
    t = "bench00001"
    timers, notify = table_key(t, "timers"), table_key(t, "notify")
    records = [record(1)]
    encoded = [dumps(records[0])]

    def one() -> None:
        parts = MoveStep("me", Count(table_key(t, "limit:moves:x"), 100_000, 60))
        store.append(Append(t, 0, records, encoded,
                            Idempotency(idempotency_key(t, "player:p_x", "m1"), '{"version": 1}', 86400),
                            read_back=(timers, notify), stamp=True, quiet_for=parts.quiet_for, count=parts.count()))

    for _ in range(2000):
        one()
    best = float("inf")
    for _ in range(args.rounds):
        start = time.process_time()
        for _ in range(n):
            one()
        best = min(best, (time.process_time() - start) / n * 1e6)
    print(f"a move's append, the client's side: {best:.1f} us of CPU (best of {args.rounds} rounds of {n})")
    return 0


def parts(args) -> int:
    """The whole step, and the step without each part, ``--rounds`` of each in turn."""
    ways = {None: PARTS, **{p: tuple(x for x in PARTS if x != p) for p in PARTS}}  # None: the whole step
    users: dict[str | None, list[float]] = {left_out: [] for left_out in ways}
    for _ in range(args.rounds):
        for left_out, kept in ways.items():
            user, system = run("step", args.tables, args.moves, kept)
            users[left_out].append(user)
            name = "the whole step" if left_out is None else f"without {left_out}"
            print(f"{name:22}: Redis user {user:5.1f} us, system {system:5.1f} us per append", flush=True)
    whole = statistics.mean(users[None])
    print(f"the whole step: {whole:.1f} us of Redis's user time an append (mean of {args.rounds})")
    for part in PARTS:
        cost = whole - statistics.mean(users[part])
        print(f"  {part:12} {cost:5.1f} us an append ({cost / whole * 100 if whole else 0:.0f}%)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
