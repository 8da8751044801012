"""Quick pairing's costs, on a private redis-server this bench starts (durable, as production's) and stops.

Prints:
  1. one wave of a pool holding N seekers (default 10,000): its CPU in this process (ms; the reading,
     the choosing and the one step that takes them, not the tables' making, which are jobs of their
     own), its wall time, Redis's CPU, and the Redis commands it cost; for an unrated and a rated pool;
  2. seek to seated for two seekers in one pool, under load (``escoba serve`` and an ``escoba worker``
     on the same Redis; ``--pairs`` pairs of seekers at once, for ``--seconds``): p50 and p99;
  3. a lone seeker to its bot table: the seconds from its seek to its seat, against ``bot_after`` + 2 s.

    python bench/pairing.py [--seekers 10000] [--pairs 8] [--seconds 20] [--bot-after 3]
                            [--parts wave,seated,bot]

Not in the tests: figures for docs/benchmarks.md and docs/scale.md, from whatever the machine does.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
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


def _fill(client, pool: store.Pool, n: int, now: float, rng: random.Random) -> None:
    """``n`` live seeks in ``pool``, as POST /seeks writes them (pipelined: the filling is not measured)."""
    seeks = store.Seeks(client)
    with client.pipeline(transaction=False) as pipe:
        for i in range(n):
            seek_id = store.new_seek_id(pool.name)
            rating = rng.gauss(1500, 300) if pool.rated else None
            identity = f"acct{i}" if pool.rated else seek_id
            created = now - rng.uniform(0, 20)
            info = {"identity": identity, "rating": rating, "created": created, "bot_after": 30,
                    "player": f"p_{i}", "name": f"n{i}", "grant": "0" * 64, "account": pool.rated}
            fields = {"status": store.WAITING, "token": "0" * 64, "grant": "0" * 64, "player": f"p_{i}",
                      "name": f"n{i}", "identity": identity, "rating": rating, "created": created, "bot_after": 30,
                      "correspondence": False, "players": pool.players, "account": pool.rated}
            seeks.add_into(pipe, pool, seek_id, fields, created, live=True, info=info)
            pipe.zadd(store.key(pool.name, "seen"), {seek_id: now}, xx=True, gt=True)  # Seeks.heard's
            if i % 500 == 499:
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


def wave_part(seekers: int) -> None:
    rng = random.Random(7)
    print(f"reference loop: {reference_ms():.1f} ms of CPU (about 10 on an idle core)")
    with private_redis() as server:
        client = server.client()
        for label, pool in (("unrated, 2 players", store.Pool("del15", 2, False, {})),
                            ("rated, 2 players", store.Pool("del15", 2, True, {})),
                            ("unrated, 4 players", store.Pool("selminha", 4, False, {}))):
            now = time.time()
            _fill(client, pool, seekers, now, rng)
            made: list[str] = []
            calls, rcpu, cpu, wall = _calls(client), _redis_cpu(client), _cpu(), time.perf_counter()
            summary = pairing.run_wave(client, (client,), pool.name, now, make=lambda p, t, made=made: made.append(t))
            wall, cpu = time.perf_counter() - wall, _cpu() - cpu
            rcpu = _redis_cpu(client) - rcpu
            after = _calls(client)
            spent = {k: n - calls.get(k, 0) for k, n in after.items() if n != calls.get(k, 0) and k != "info"}
            top = sorted(spent.items(), key=lambda kv: -kv[1])
            print(f"wave of {seekers} seekers, {label}: {len(summary['tables'])} tables chosen, "
                  f"{summary['waiting']} left waiting")
            print(f"  CPU here {cpu * 1000:.0f} ms (target < 100 ms), wall {wall * 1000:.0f} ms, "
                  f"Redis CPU {rcpu * 1000:.0f} ms")
            print(f"  Redis commands: {sum(v for k, v in spent.items() if k not in ('evalsha', 'eval'))} "
                  f"({', '.join(f'{k} {v}' for k, v in top[:8])}); scripts count the commands they call")
        client.close()


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
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    if "wave" in parts:
        wave_part(args.seekers)
    if parts & {"seated", "bot"}:
        seated_part(args.pairs, args.seconds, args.bot_after, parts)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
