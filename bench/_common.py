"""Shared by the API benchmarks: servers, Redis, game scripts, tiny HTTP helpers.

A *game script* is a table's whole game worked out in advance with the engine
itself (the same pure ``decide``/``fold`` the server runs), from operator decks
and a seeded choice of legal moves. The server deals round r from ``decks[r-1]``
and seat 0 deals first, so the script and the server stay in step move for
move; the load generators then only POST pre-serialised bodies and spend no
CPU on the rules while they measure.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import multiprocessing
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # first: bench/api.py must not shadow the api package

import engine  # noqa: E402
from engine.cards import FULL_DECK  # noqa: E402
from engine.play import fifteen_sets, options  # noqa: E402

REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")
ADMIN_TOKEN = "bench-admin-token"
PRESET = "selminha"
SETTINGS = {"target": 31}  # the longer game: more moves per table before it ends
ROUNDS = 40  # operator decks per table (a game to 31 never needs that many)


# --- servers -------------------------------------------------------------------


def exit_on_sigterm() -> None:
    """A SIGTERM (timeout, CI) still runs the ``finally`` that stops the servers."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))


def pool_starmap(func, argsets, processes: int, *, unordered: bool = False) -> list:
    """``func(*args)`` for each of ``argsets`` in a pool of forked processes; the results.

    Done, the pool is closed and joined, not terminated (what ``with Pool()`` does on the way
    out): terminate() can kill an idle worker while it holds the task queue's lock. On an
    error it is terminated, and each worker takes SIGTERM's default action then, whatever
    handler the forking process had set: a worker forked from a process whose SIGTERM only
    asks it to stop (RQ's or the job runner's, left by an earlier test in the same process) lived on,
    waiting for that lock, and the join waited for it for ever (CI, 2026-12-03).
    ``unordered``: results in the order they finish.
    """
    with _plain_sigterm_while_forking():
        pool = multiprocessing.get_context("fork").Pool(processes, initializer=_plain_sigterm)
    try:
        if unordered:
            results = list(pool.imap_unordered(_star, [(func, a) for a in argsets], chunksize=1))
        else:
            results = pool.starmap(func, argsets)
        pool.close()
    except BaseException:
        pool.terminate()
        raise
    finally:
        pool.join()
    return results


def _plain_sigterm() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextlib.contextmanager
def _plain_sigterm_while_forking():
    """The workers are forked with SIGTERM's default action: set in the worker alone (the
    initializer, kept for a worker forked again later), a SIGTERM sent before it ran still found
    the parent's handler, and 3 of 4 loaded runs of the test hung."""
    try:
        previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except ValueError:  # not the main thread: signals are not ours to set here
        previous = None
    try:
        yield
    finally:
        if previous is not None:  # (None too for a handler set outside Python: it cannot be put back)
            signal.signal(signal.SIGTERM, previous)


def _star(job):
    func, args = job
    return func(*args)


def interpreter() -> str:
    """The Python the servers run on (they are started with this one): version, path and build.

    The CPU figures depend on the build as much as on the code: production's image
    (``python:3.11-slim``, Dockerfile) is built with ``--enable-optimizations --with-lto``
    (profile-guided); on this machine a pyenv build without them spent about a fifth more
    server CPU per move than Debian's python3.11 (bench/games.py --rounds 3: 4.23 against
    3.46 ms), the same code and the same load.
    """
    import sysconfig

    flags = sysconfig.get_config_var("CONFIG_ARGS") or ""
    if "--enable-optimizations" in flags:
        build = "built with --enable-optimizations (PGO)" + (" and LTO" if "--with-lto" in flags else "")
    elif sys.base_prefix.startswith("/usr"):
        build = "the distribution's build"
    else:
        build = "built WITHOUT --enable-optimizations: slower than production's image"
    return f"CPython {sys.version.split()[0]} ({sys.base_prefix}), {build}; servers' allocator: {allocator_said()}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The allocator production's image preloads under Python (Dockerfile): the servers benched here
# run on it too, escoba and the baseline alike, where this machine has it (Debian's redis-server
# brings libjemalloc2). ``BENCH_ALLOCATOR=system`` runs them on the C library's malloc instead, and
# ``BENCH_ALLOCATOR=pymalloc`` on jemalloc under Python's own small-object allocator (the image
# before 2026-12-05: the pairs that chose ``HEAP``).
JEMALLOC = "libjemalloc.so.2"
# With it, the image hands Python's own small objects to jemalloc too (PYTHONMALLOC=malloc: pymalloc
# maps its arenas itself, out of any allocator's reach) and lets jemalloc back the heap with
# transparent huge pages where the kernel allows them (THP "madvise" or "always"), in one arena:
# some 3% less API CPU a socket move, and an idle socket's memory the same (docs/benchmarks.md).
HEAP = {"PYTHONMALLOC": "malloc", "MALLOC_CONF": "thp:always,narenas:1"}


def _asked() -> str:
    return os.environ.get("BENCH_ALLOCATOR", "jemalloc")


def allocator() -> str | None:
    """The jemalloc to preload in the servers, as production's image does; None where this machine has
    none, or ``BENCH_ALLOCATOR=system`` asks for the C library's."""
    if _asked() == "system":
        return None
    for folder in ("/usr/local/lib", *sorted(Path("/usr/lib").glob("*-linux-gnu")), "/usr/lib"):
        path = Path(folder) / JEMALLOC
        if path.exists():
            return str(path)
    return None


def allocator_said() -> str:
    preload = allocator()
    if preload is None:
        return "the C library's malloc (production's image preloads jemalloc: CPU reads some 5% high)"
    if _asked() == "pymalloc":
        return f"jemalloc preloaded ({preload}) under Python's own pymalloc (not the image's heap: CPU reads high)"
    return (f"jemalloc preloaded ({preload}), Python's objects in it on huge pages ({HEAP['MALLOC_CONF']}), "
            "as production's image")


def heap_env() -> dict:
    """The variables that put a server on the image's heap (jemalloc preloaded, Python's objects in it
    on huge pages: ``HEAP``), as far as this machine and ``BENCH_ALLOCATOR`` allow; {} without jemalloc."""
    preload = allocator()
    if preload is None:
        return {}
    env = {"LD_PRELOAD": " ".join(filter(None, (os.environ.get("LD_PRELOAD"), preload)))}
    return env if _asked() == "pymalloc" else {**env, **HEAP}


def server_env(**extra) -> dict:
    env = {**os.environ, **heap_env()}
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "REDIS_URL": REDIS_URL,
            "ESCOBA_ADMIN_TOKEN": ADMIN_TOKEN,
            "ESCOBA_BOT_DELAY": "1",
            # a bench floods from one address and a few tokens on purpose
            "ESCOBA_RATE_LIMITS": "off",
            # the benches' Redis holds these cores, as deployed (start_private_redis): escoba serve keeps off them
            "ESCOBA_REDIS_CPUS": DEPLOYED_REDIS_CPUS,
        }
    )
    env.update(extra)
    return env


@dataclass
class Server:
    name: str
    port: int
    proc: subprocess.Popen
    log_path: str

    def pids(self) -> list[int]:
        """The gunicorn master and its workers."""
        return [self.proc.pid, *children(self.proc.pid)]

    def rss_kib(self) -> dict[int, int]:
        return {pid: rss_kib(pid) for pid in self.pids()}

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_server(name: str, argv: list[str], port: int, *, workers: int, env: dict | None = None) -> Server:
    log_path = f"/tmp/bench-{name}-{port}.log"
    log = open(log_path, "wb")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        [sys.executable, *argv],
        cwd=ROOT,
        env=env or server_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Server(name, port, proc, log_path)
    wait_healthy(server, workers)
    return server


def _serve_args(port: int, threads: int, workers: int) -> list[str]:
    """The same gunicorn settings for both servers."""
    return ["--host", "127.0.0.1", "--port", str(port), "--threads", str(threads), "--workers", str(workers)]


def escoba_server(port: int, threads: int, workers: int, *, env: dict | None = None,
                  extra: tuple[str, ...] = ()) -> Server:
    argv = ["-m", "api.cli", "serve", *_serve_args(port, threads, workers), *extra]
    return start_server("escoba", argv, port, workers=workers, env=env)


def baseline_server(port: int, threads: int, workers: int) -> Server:
    argv = [str(ROOT / "bench" / "baseline_app.py"), *_serve_args(port, threads, workers)]
    return start_server("baseline", argv, port, workers=workers)


def floor_server(port: int, threads: int, workers: int, *, env: dict | None = None) -> Server:
    """The stack's floor for socket moves (bench/socket_floor_app.py), under the same gunicorn settings."""
    argv = [str(ROOT / "bench" / "socket_floor_app.py"), *_serve_args(port, threads, workers)]
    return start_server("floor", argv, port, workers=workers, env=env)


def wait_healthy(server: Server, workers: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.proc.poll() is not None:
            raise RuntimeError(f"{server.name} exited; see {server.log_path}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=2)
            conn.request("GET", "/healthz")
            ok = conn.getresponse().status == 200
            conn.close()
            if ok and len(server.pids()) >= 1 + workers:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{server.name} on port {server.port} did not come up; see {server.log_path}")


def stat_fields(stat: bytes) -> list[bytes]:
    """A task's ``/proc/.../stat`` line from its field 3 on (proc(5)'s field n at index n - 3): split after the
    name's closing parenthesis, since a name may hold spaces and parentheses (``redis-server 127.0.0.1:6379``)."""
    return stat.rsplit(b")", 1)[1].split()


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (a gunicorn master's workers), from /proc."""
    try:
        return [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _ppid(int(entry)) == pid]
    except OSError:
        return []


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(stat_fields(f.read())[1])
    except (OSError, IndexError, ValueError):
        return None


def rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# --- Redis ------------------------------------------------------------------------


def last_cpu(stat: bytes) -> int:
    """The core a task last ran on, from its ``/proc/.../stat`` line (field 39, ``processor``)."""
    return int(stat_fields(stat)[36])


def processor(cpuinfo: str | None = None) -> str:
    """The processor's model as /proc/cpuinfo names it ("AMD EPYC", "Intel(R) Xeon(R) Processor"), or "unknown":
    the same code's ratios to the peer differ by host (docs/benchmarks.md), so every report says which it ran on."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return "unknown"
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "model name" and value.strip():
            return value.strip()
    return "unknown"


def vcpu_packing() -> str | None:
    """This kernel's ``sched_vcpu_pack`` (a setting of this workplace's VMs, not of a stock kernel), or None."""
    try:
        return Path("/proc/sys/kernel/sched_vcpu_pack").read_text().strip()
    except OSError:
        return None


@dataclass(frozen=True)
class Placement:
    """``PrivateRedis.placement``: at ``rate`` round trips a second, the share of ``trips`` whose reply came from
    a Redis that last ran on the sender's core, and the round trip's median in seconds."""

    rate: float
    trips: int
    same_core: float
    median: float


@dataclass
class PrivateRedis:
    """A ``redis-server`` of the benchmark's own on a free port, durable as in production
    (AOF, ``appendfsync always``), in a temporary directory; ``stop()`` ends it."""

    port: int
    workdir: str
    proc: subprocess.Popen

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _client(self):
        """A client of this server's, closed when its ``with`` ends."""
        from redis import Redis

        return Redis(port=self.port)

    def cpu_seconds(self) -> float:
        return cpu_seconds([self.proc.pid])

    def cpu_split(self) -> tuple[float, float]:
        """(user, system) CPU seconds of the redis-server so far: an AOF's write and fdatasync are system time."""
        return cpu_split([self.proc.pid])

    def commands(self) -> dict[str, int]:
        """Calls so far by command (INFO commandstats), to say what a move asks of Redis; under
        ``"usec:NAME"``, each command's own time in microseconds (no I/O, no fsync). A script's (the
        append's EVALSHA) holds the time of the commands it calls, which commandstats also counts
        under their own names, so no sum of them all is a time spent."""
        with self._client() as client:
            stats = client.info("commandstats")
        calls = {name.removeprefix("cmdstat_"): each["calls"] for name, each in stats.items()}
        calls.update({"usec:" + name.removeprefix("cmdstat_"): each["usec"] for name, each in stats.items()})
        return calls

    def watch_stalls(self, threshold_ms: int = 5) -> None:
        """From now on, Redis's latency monitor notes every second in which its AOF's fdatasync (the
        step a durable write waits for, ``appendfsync always``) took over ``threshold_ms``."""
        with self._client() as client:
            client.execute_command("LATENCY", "RESET")
            client.config_set("latency-monitor-threshold", threshold_ms)

    def stalled_seconds(self) -> list[tuple[int, int]]:
        """Since ``watch_stalls``: ``(unix second, worst ms)`` of each second in which an fdatasync over the
        threshold ended (``LATENCY HISTORY aof-fsync-always``; Redis keeps the last 160 such seconds)."""
        with self._client() as client:
            history = client.execute_command("LATENCY", "HISTORY", "aof-fsync-always")
        return [(int(second), int(ms)) for second, ms in history]

    def write_floor_ms(self, writes: int = 3000, size: int = 600) -> float:
        """The least Redis CPU a durable move can cost, in ms: ``writes`` plain ``SET``s of a move's
        size (its record, key and counters) sent one at a time, as a game's moves come, so each is
        a round trip and a write with its own fsync (``INFO cpu``: to the microsecond)."""
        with self._client() as client:
            before = client.info("cpu")
            for i in range(writes):
                client.set(f"bench:floor:{i % 100}", "x" * size)
            after = client.info("cpu")
            client.delete(*(f"bench:floor:{i}" for i in range(min(writes, 100))))
        spent = sum(float(after[k]) - float(before[k]) for k in ("used_cpu_user", "used_cpu_sys"))
        return spent * 1000 / writes

    def placement(self, rate: float, seconds: float = 1.5) -> Placement:
        """How this host runs a durable round trip at ``rate`` a second, as a move's append is one: a ``SET`` of
        a move's size sent on a socket of our own, its reply awaited, then a pause to the next (an open loop).
        After each reply, whether Redis's main thread last ran on the core the sender runs on now (from
        ``/proc``'s ``processor`` of each). A host that wakes a server on a free core puts it on the other core
        about as often as on this one; a scheduler that packs a woken task onto its waker's core (this workplace's
        VMs: ``kernel.sched_vcpu_pack``) near always here, so Redis's step and fsync wait behind whatever the
        sender does after its send (docs/benchmarks.md, issue 59)."""
        command = b"*3\r\n$3\r\nSET\r\n$17\r\nbench:placement:k\r\n$600\r\n" + b"x" * 600 + b"\r\n"
        same, trips = 0, []
        with socket.create_connection(("127.0.0.1", self.port)) as sock, \
                open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/stat", "rb", buffering=0) as server, \
                open("/proc/thread-self/stat", "rb", buffering=0) as me:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            start = time.perf_counter()
            due = start
            while due < start + seconds:
                sent = time.perf_counter()
                sock.sendall(command)
                if sock.recv(64) != b"+OK\r\n":
                    raise RuntimeError("the placement's SET was not answered +OK")
                trips.append(time.perf_counter() - sent)
                server.seek(0)
                me.seek(0)
                same += last_cpu(server.read()) == last_cpu(me.read())
                due += 1 / rate
                pause = due - time.perf_counter()
                if pause > 0:
                    time.sleep(pause)
        with self._client() as client:
            client.delete("bench:placement:k")
        return Placement(rate, len(trips), same / len(trips), statistics.median(trips))

    def without_fsync(self, rate: float, seconds: float = 1.5) -> Placement:
        """``placement`` with the AOF's fsync off for its span (``CONFIG SET appendfsync no``, set back after):
        the same round trip less the disk's flush, so a durable one's median less this one's is what the fsync
        alone costs a move here (a quarter load's served appends lost about as much to it: docs/benchmarks.md,
        "On an Intel Xeon VM")."""
        with self._client() as client:
            kept = client.config_get("appendfsync")["appendfsync"]
            client.config_set("appendfsync", "no")
            try:
                return self.placement(rate, seconds)
            finally:
                client.config_set("appendfsync", kept)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        import shutil

        shutil.rmtree(self.workdir, ignore_errors=True)


# docker-compose.yml's Redis keeps its threads on this core (``ESCOBA_REDIS_CPUS``' default there; Redis's own
# ``server_cpulist`` and ``bio_cpulist``, which it ignores on a host without that core): so does the benches'
# (tests/deploy/test_compose.py holds the two together; why: docs/operations.md, "Redis's core")
DEPLOYED_REDIS_CPUS = "1"


def start_private_redis(durable: bool = True, fsync: str = "always", realtime: int = 0,
                        cores: frozenset[int] | None = None) -> PrivateRedis:
    """``cores``: None, Redis's main and background threads on ``DEPLOYED_REDIS_CPUS`` (its ``server_cpulist`` and
    ``bio_cpulist``), as the deployment runs it; empty, where the kernel puts them; else every thread of it on
    these cores only, set after it starts (``--redis-cores``, a diagnostic). ``realtime``: its main thread at
    this SCHED_FIFO priority (a diagnostic: bench/latency.py ``--redis-realtime``; needs root or
    CAP_SYS_NICE); 0: as production runs it."""
    import shutil
    import tempfile

    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed: the benchmark starts a Redis of its own")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="bench-redis-")
    fsync = ["--appendonly", "yes", "--appendfsync", fsync] if durable else ["--appendonly", "no"]
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--dir", workdir, "--save", "",
         "--maxmemory-policy", "noeviction", "--maxclients", "20000", *fsync,
         *(["--server_cpulist", DEPLOYED_REDIS_CPUS, "--bio_cpulist", DEPLOYED_REDIS_CPUS] if cores is None else [])],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    from redis import Redis

    client = Redis(port=port, socket_connect_timeout=0.2)
    deadline = time.time() + 10
    try:
        while time.time() < deadline:
            try:
                if client.ping():
                    if realtime:  # the main thread only (its pid): it reads the commands and fsyncs the AOF
                        os.sched_setscheduler(proc.pid, os.SCHED_FIFO, os.sched_param(realtime))
                    if cores:  # its background threads too (bio: closing files, the AOF's fsync when everysec)
                        for task in os.listdir(f"/proc/{proc.pid}/task"):
                            os.sched_setaffinity(int(task), cores)
                    return PrivateRedis(port, workdir, proc)
            except Exception:
                time.sleep(0.05)
    finally:
        client.close()
    proc.kill()
    raise SystemExit("the benchmark's redis-server did not start")


@contextlib.contextmanager
def private_redis(durable: bool = True):
    """A ``redis-server`` of the bench's own on a free port (production settings when
    ``durable``: AOF with ``appendfsync always``), stopped afterwards; yields the server.
    The benches never touch a Redis they did not start."""
    from tests.redis_servers import start_plain

    with tempfile.TemporaryDirectory(prefix="escoba-bench-redis-") as workdir:
        server = start_plain(Path(workdir), durable=durable)
        try:
            yield server
        finally:
            server.stop()


def use_redis(url: str) -> None:
    """Point the helpers here (and the servers they start) at ``url``."""
    global REDIS_URL
    REDIS_URL = url


def flush_bench_db() -> None:
    """Empty the benchmark's own DB (never DB 0)."""
    from redis import Redis

    r = Redis.from_url(REDIS_URL)
    db = r.connection_pool.connection_kwargs.get("db", 0)
    if db == 0:
        raise SystemExit("refusing to flush Redis DB 0: point BENCH_REDIS_URL at a spare DB")
    r.flushdb()
    r.close()


# --- HTTP ---------------------------------------------------------------------------


class Http:
    """One persistent connection; JSON in and out."""

    def __init__(self, port: int, timeout: float = 30.0):
        self.port = port
        self.timeout = timeout
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        # the client address a trusted proxy would have appended (the server's ESCOBA_TRUSTED_PROXIES=1)
        self.forwarded_for: str | None = None

    def call(self, method: str, path: str, body=None, token: str | None = None) -> tuple[int, dict]:
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if self.forwarded_for:
            headers["X-Forwarded-For"] = self.forwarded_for
        data = json.dumps(body).encode() if body is not None else None
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                r = self.conn.getresponse()
                raw = r.read()
                return r.status, (json.loads(raw) if raw else {})
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.conn.close()


# --- game scripts ----------------------------------------------------------------------


@dataclass
class Script:
    """One table's game, worked out in advance: ``moves[i] = (seat, body, version after)``."""

    decks: list[list[str]]
    moves: list[tuple[int, dict, int]] = field(default_factory=list)
    start_version: int = 0


def game_script(seed, max_moves: int = 10_000) -> Script:
    rng = random.Random(f"escoba-bench:{seed}")
    decks = []
    for _ in range(ROUNDS):
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        decks.append(deck)
    s = started(decks)

    def apply(command):
        nonlocal s
        s = engine.fold(s, engine.decide(s, command))

    script = Script(decks, start_version=s.version)
    while s.status in ("playing", "round_over") and len(script.moves) < max_moves:
        if s.status == "round_over":
            seat, move = 0, {"type": "next_round"}
        else:
            seat = s.turn
            sets = fifteen_sets(s)
            if sets and rng.random() < 0.5:
                move = {"type": "take_fifteen", "cards": [s.fifteen[0], *rng.choice(sets)]}
            else:
                option = rng.choice(options(s, seat))
                take = option["captures"] and (not option["may_leave"] or rng.random() < 0.7)
                move = {
                    "type": "play",
                    "card": option["card"],
                    "capture": rng.choice(option["captures"]) if take else [],
                }
        apply({**move, "by": seat})
        script.moves.append((seat, move, s.version))
    return script


def started(decks: list[list[str]]) -> engine.State:
    """A scripted game's table, opened by Ana, Bea seated, started: where its moves begin."""
    s = engine.State()
    for command in (
        {"type": "open", "name": "bench", "preset": PRESET, "settings": SETTINGS, "player": "p0", "host_name": "Ana",
         "decks": decks, "first_dealer": 0},
        {"type": "sit", "player": "p1", "name": "Bea"},
        {"type": "start", "by": 0, "deck": decks[0], "pick": 0},
    ):
        s = engine.fold(s, engine.decide(s, command))
    return s


def seat_views(table_id: str, script: Script, after: int, patches: bool = False) -> dict[int, bytes]:
    """Each seat's view of the scripted game after its first ``after`` moves, as escoba encodes it for
    that seat's socket (api/sockets/frames.py): what a bench's stand-in server sends in its place. With
    ``patches``, each seat's ``patch`` message of that move instead (a socket's ``frames=patch``)."""
    from api.sockets.frames import ViewFrames

    s = before = started(script.decks)
    for seat, move, _version in script.moves[:after]:
        before, s = s, engine.fold(s, engine.decide(s, {**move, "by": seat}))
    views = ViewFrames()
    if not patches:
        return {seat: views.view_json(table_id, s, seat, seat == 0, None) for seat in (0, 1)}
    views.frames(table_id, before, None, False, None)  # the version before's shared part: the patch's base
    return {seat: first_payload(views.patch_frames(table_id, s, before.version, seat, seat == 0, None))
            for seat in (0, 1)}


def first_payload(frames: bytes) -> bytes:
    """The payload of the first of a run of unmasked server frames (RFC 6455 5.2)."""
    n, at = frames[1] & 0x7F, 2
    if n == 126:
        n, at = int.from_bytes(frames[2:4], "big"), 4
    elif n == 127:
        n, at = int.from_bytes(frames[2:10], "big"), 10
    return frames[at:at + n]


def open_table(http: Http, script: Script) -> tuple[str, dict[int, str]]:
    """Open the scripted table on the server, seat the guest, start; its id and seat tokens."""
    status, host = http.call(
        "POST",
        "/tables",
        {
            "name": "Ana",
            "preset": PRESET,
            "settings": SETTINGS,
            "decks": script.decks,
            "first_dealer": 0,
        },
        ADMIN_TOKEN,
    )
    assert status == 201, host
    table_id = host["table_id"]
    status, guest = http.call("POST", f"/tables/{table_id}/seats", {"name": "Bea"})
    assert status == 201 and guest["seat"] == 1, guest
    status, started = http.call("POST", f"/tables/{table_id}/moves", {"type": "start"}, host["token"])
    assert status == 200 and started["version"] == script.start_version, (
        started,
        script.start_version,
    )
    return table_id, {0: host["token"], 1: guest["token"]}


# Student's t at 95% (two-sided) for 1 to 9 degrees of freedom; 1.96 past them
_T95 = (12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26)


def mean_interval(values: list[float]) -> tuple[float, float, float]:
    """The mean of a few independent measurements (rounds) and its 95% interval, Student's t:
    whether a ratio is told apart from a target, or lies within the rounds' own swing."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, mean, mean
    t = _T95[len(values) - 2] if len(values) - 1 <= len(_T95) else 1.96
    half = t * statistics.stdev(values) / len(values) ** 0.5
    return mean, mean - half, mean + half


def cpu_split(pids: list[int]) -> tuple[float, float]:
    """(user, system) CPU time of these processes so far: Python's own work, and the kernel's
    (every socket send and receive, epoll, an AOF's fdatasync)."""
    user = system = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = stat_fields(f.read())
            user, system = user + int(fields[11]), system + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    tick = os.sysconf("SC_CLK_TCK")
    return user / tick, system / tick


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far."""
    return sum(cpu_split(pids))


def redis_cpu_seconds() -> float:
    from redis import Redis

    r = Redis.from_url(REDIS_URL)
    info = r.info("cpu")
    r.close()
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


def summary_ms(values: list[float]) -> str:
    if not values:
        return "n=0"
    return (
        f"n={len(values)} mean={statistics.fmean(values) * 1000:.2f} "
        f"p50={percentile(values, 50) * 1000:.2f} "
        f"p90={percentile(values, 90) * 1000:.2f} p99={percentile(values, 99) * 1000:.2f} "
        f"max={max(values) * 1000:.2f} ms"
    )
