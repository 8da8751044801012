"""Quick pairing's costs, on redis-servers this bench starts (durable, as production's) and stops.

Prints:
  1. one wave of a pool holding N seekers (default 10,000), on one Redis and on a 3-master cluster
     (``--topologies``), with the clients ``escoba worker`` makes: its CPU in this process (ms; the
     reading, the choosing, the steps that take them, the handing of its tables to make jobs, shown
     apart; not the tables' making, which are jobs of their own), its wall time, Redis's CPU, and the
     Redis commands it cost; for an unrated, a rated (and a rated one whose accounts played others
     last and sometimes seek twice: the choice's harder case) and a four-player pool; the reference
     loop just before each, as the machine's load moves;
  2. seek to seated for two seekers in one pool, under load (``escoba serve`` and an ``escoba worker``
     on the same Redis; ``--pairs`` pairs of seekers at once, for ``--seconds``): p50 and p99;
  3. a lone seeker to its bot table: the seconds from its seek to its seat, against ``bot_after`` + 2 s.

    python bench/pairing.py [--seekers 10000] [--pairs 8] [--seconds 20] [--bot-after 3]
                            [--parts wave,seated,bot] [--topologies plain,cluster]

Not in the tests: figures for docs/benchmarks.md and docs/scale.md, from whatever the machine does.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import Http, escoba_server, free_port, private_redis, server_env, use_redis  # noqa: E402
from events import seeks as store  # noqa: E402
from workers import pairing  # noqa: E402


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def _redis_cpu(client) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _calls(client) -> dict[str, int]:
    return {k.removeprefix("cmdstat_"): v["calls"] for k, v in client.info("commandstats").items()}


def _fill(client, pool: store.Pool, n: int, now: float, rng: random.Random, *, history: bool = False) -> None:
    """``n`` live seeks in ``pool`` as POST /seeks writes them (the filling is not measured).
    ``history``: accounts of whom about a third played two others of
    the pool last and one in twenty seeks twice (the choice's harder case); else every seeker is
    someone else, and an unrated pool's are guests (its easiest)."""
    seeks = store.Seeks(client)
    people = [f"acct{i}" for i in range(n)]
    plans = []
    for i in range(n):
        account = pool.rated or history
        identity = (rng.choice(people[: n * 19 // 20]) if history else f"acct{i}") if account else None
        last = sorted(rng.sample(people, 2)) if history and rng.random() < 0.33 else None
        plans.append((identity, last, rng.gauss(1500, 300) if pool.rated else None, now - rng.uniform(0, 20)))

    def write(i: int, into) -> None:
        identity, last, rating, created = plans[i]
        seek_id = store.new_seek_id(pool.name)
        info = {"identity": identity or seek_id, "rating": rating, "created": created, "bot_after": 30,
                "player": f"p_{i}", "name": f"n{i}", "grant": "0" * 64, "account": identity is not None}
        if last:
            info["last"] = last
        fields = {"status": store.WAITING, "token": "0" * 64, "grant": "0" * 64, "player": f"p_{i}",
                  "name": f"n{i}", "identity": identity or seek_id, "rating": rating, "created": created,
                  "bot_after": 30, "correspondence": False, "players": pool.players, "account": identity is not None}
        if into is None:  # the first through the store's own step (the pool's meta)
            seeks.add(pool, seek_id, fields, created, live=True, info=info)
            seeks.heard(seek_id, now)
            return
        # the rest: what that step writes, pipelined (10,000 steps one by one take minutes here)
        into.hset(store.seek_key(pool.name, seek_id), mapping={k: store._arg(v) for k, v in fields.items()})
        into.expire(store.seek_key(pool.name, seek_id), store.LIVE_TTL)
        into.hset(store.key(pool.name, "info"), seek_id, store.info_record(seek_id, info))
        into.zadd(store.key(pool.name, "seen"), {seek_id: now})

    write(0, None)
    with client.pipeline(transaction=False) as pipe:
        for i in range(1, n):
            write(i, pipe)
            if i % 1000 == 0:
                pipe.execute()
        pipe.execute()


def reference_ms() -> float:
    """A fixed loop's CPU (``sum(range(10**6))``, about 10 ms on an idle core of this machine): the
    figures below scale with it on a loaded one."""
    best = float("inf")
    for _ in range(5):
        started = _cpu()
        sum(range(10**6))
        best = min(best, _cpu() - started)
    return best * 1000


class _Timed:
    """``workers.pairing._hand_makes`` timed (its CPU): how much of a wave handing its tables costs."""

    def __init__(self):
        self.cpu = 0.0
        self.real = pairing._hand_makes

    def __call__(self, *args):
        started = _cpu()
        try:
            return self.real(*args)
        finally:
            self.cpu += _cpu() - started


@contextlib.contextmanager
def _topology(name: str):
    """``Backends`` as ``escoba worker`` connects them (events.connection.connect), on servers of the
    bench's own, durable: one Redis (tables and queues), or a 3-master cluster with a plain Redis
    for the queues; and a client of each tables' node, for its counters."""
    from events.config import Config
    from events.connection import connect
    from tests.redis_servers import start_cluster, start_plain

    with tempfile.TemporaryDirectory(prefix="escoba-bench-pairing-") as workdir:
        started = []
        try:
            if name == "cluster":
                cluster = start_cluster(Path(workdir) / "cluster", 3, durable=True)
                started.append(cluster)
                queue = start_plain(Path(workdir) / "queue", durable=True)
                started.append(queue)
                config, nodes = Config(redis_url=cluster.url, queue_url=queue.url), [n.client() for n in cluster.nodes]
            else:
                server = start_plain(Path(workdir) / "plain", durable=True)
                started.append(server)
                config, nodes = Config(redis_url=server.url, queue_url=server.url), [server.client()]
            backends = connect(config, wait=10)
            try:
                yield backends, nodes
            finally:
                backends.close()
                for node in nodes:
                    node.close()
        finally:
            for server in reversed(started):
                server.stop()


def wave_part(seekers: int, topologies: list[str]) -> None:
    print(f"reference loop: {reference_ms():.1f} ms of CPU (about 10 on an idle core)")
    print("What a wave's CPU here holds: claiming the pool, reading it, choosing, the steps that take the "
          "seeks (250 tables a step), whom each account played last (in those steps), handing the tables "
          "to make_tables jobs (RQ, at most 64 jobs, shown apart), the next look. Left out: making the tables "
          "(the jobs: 3 to 5 appends a table, on any worker), the seeks' own writes (POST /seeks). Every "
          "seeker heard from (none to expire); 'history' is the harder case for the choice.")
    cases = (("unrated, 2 players", store.Pool("del15", 2, False, {}), False),
             ("rated, 2 players", store.Pool("del15", 2, True, {}), False),
             ("rated, 2 players, history", store.Pool("del15", 2, True, {"bench": "history"}), True),
             ("unrated, 4 players (teams)", store.Pool("selminha", 4, False, {}), False))
    for name in topologies:
        with _topology(name) as (backends, nodes):
            where = ("a 3-master cluster (the RedisCluster client), queues on a plain Redis" if name == "cluster"
                     else "one Redis, tables and queues")
            print(f"-- {name}: {where}, AOF always")
            rng = random.Random(7)
            for label, pool, history in cases:
                now = time.time()
                _fill(backends.tables, pool, seekers, now, rng, history=history)
                reference = reference_ms()  # the machine's pace just before (its load moves)
                timed = _Timed()
                pairing._hand_makes = timed
                try:
                    calls = [_calls(n) for n in nodes]
                    queue_calls = _calls(backends.queue)
                    rcpu = sum(_redis_cpu(n) for n in nodes)
                    cpu, wall = _cpu(), time.perf_counter()
                    summary = pairing.run_wave(backends.tables, backends.queues, pool.name, now)
                    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
                finally:
                    pairing._hand_makes = timed.real
                rcpu = sum(_redis_cpu(n) for n in nodes) - rcpu
                spent: dict[str, int] = {}
                for node, before in zip(nodes, calls, strict=True):
                    for k, v in _calls(node).items():
                        if k != "info" and v != before.get(k, 0):
                            spent[k] = spent.get(k, 0) + v - before.get(k, 0)
                queued = sum(v - queue_calls.get(k, 0) for k, v in _calls(backends.queue).items()
                             if k != "info" and v != queue_calls.get(k, 0))
                if name == "plain":
                    queued = 0  # counted above: the same server
                top = sorted(spent.items(), key=lambda kv: -kv[1])
                scripts = {k: v for k, v in spent.items() if k.startswith("eval")}
                print(f"wave of {seekers} seekers, {label}: {len(summary['tables'])} tables chosen, "
                      f"{summary['waiting']} left waiting")
                print(f"  CPU here {cpu * 1000:.0f} ms (target < 100 ms; reference loop just before {reference:.1f}"
                      " ms),"
                      f" of which handing the tables to jobs "
                      f"{timed.cpu * 1000:.0f} ms; wall {wall * 1000:.0f} ms; Redis CPU {rcpu * 1000:.0f} ms (tables' "
                      f"nodes)")
                executed = sum(v for k, v in spent.items() if k not in scripts)
                print(f"  Redis commands on the tables' nodes: {sum(scripts.values())} script calls, {executed} "
                      f"commands "
                      f"run ({', '.join(f'{k} {v}' for k, v in top[:8])}; a script's own commands counted)"
                      + (f"; on the queue Redis: {queued}" if queued else ""))
                backends.tables.delete(*(store.key(pool.name, k) for k in ("seen", "info", "making", "last")))


class Worker:
    def __init__(self, env: dict):
        self.log = open(f"/tmp/bench-pairing-worker-{os.getpid()}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen([sys.executable, "-m", "workers.cli", "worker"], cwd=ROOT, env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            self.proc.kill()
        self.log.close()


def _seated(http: Http, body: dict, poll: float = 0.1, until: float | None = None) -> float | None:
    """Seek, poll until paired; the seconds from the POST to the answer that said paired (None: the
    run ended first, and the seek was cancelled)."""
    started = time.perf_counter()
    until = time.monotonic() + 60 if until is None else until
    status, seek = http.call("POST", "/seeks", body)
    assert status == 201, seek
    while time.monotonic() < until:
        status, answer = http.call("GET", f"/seeks/{seek['seek_id']}", token=seek["token"])
        if answer.get("status") == "paired":
            return time.perf_counter() - started
        assert answer.get("status") == "waiting", answer
        time.sleep(poll)
    http.call("DELETE", f"/seeks/{seek['seek_id']}", token=seek["token"])
    return None


def seated_part(pairs: int, seconds: float, bot_after: float, parts: set[str]) -> None:
    with private_redis() as server:
        use_redis(server.url)
        env = server_env(ESCOBA_BOT_DELAY="1")
        port = free_port()
        api = escoba_server(port, threads=8, workers=1, env=env)
        worker = Worker(env)
        try:
            time.sleep(1.0)  # the worker's first reconcile pass
            if "seated" in parts:
                times: list[float] = []
                lock = threading.Lock()
                stop = time.monotonic() + seconds

                def seeker(i: int) -> None:
                    http = Http(port)
                    # each pair of threads shares a preset, so they meet; other pairs meet in theirs or each other's
                    body = {"name": f"s{i}", "preset": ("del15", "selminha", "cardgames")[i // 2 % 3], "players": 2,
                            "bot_after": None}
                    while time.monotonic() < stop:
                        took = _seated(http, body, until=stop + 5)
                        if took is not None:
                            with lock:
                                times.append(took)
                    http.close()

                threads = [threading.Thread(target=seeker, args=(i,)) for i in range(2 * pairs)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                times.sort()
                p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
                print(f"seek to seated, {2 * pairs} seekers seeking again and again for {seconds:.0f} s "
                      f"(polls every 0.1 s): {len(times)} seated, p50 {statistics.median(times):.2f} s, "
                      f"p99 {p99:.2f} s, worst {times[-1]:.2f} s (target p50 < 3 s)")
            if "bot" in parts:
                http = Http(port)
                took = _seated(http, {"name": "lone", "preset": "cardgames", "players": 3, "bot_after": int(bot_after)},
                               poll=0.2)
                http.close()
                print(f"a lone seeker to its bot table: {took:.2f} s with bot_after {bot_after:.0f} s "
                      f"(target < {bot_after + 2:.0f} s)")
        finally:
            worker.stop()
            api.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seekers", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--bot-after", type=float, default=3.0)
    parser.add_argument("--parts", default="wave,seated,bot")
    parser.add_argument("--topologies", default="plain,cluster", help="the wave's: plain (one Redis), cluster")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if "wave" in parts:
        wave_part(args.seekers, args.topologies.split(","))
    if parts & {"seated", "bot"}:
        seated_part(args.pairs, args.seconds, args.bot_after, parts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
