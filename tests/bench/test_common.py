"""bench/_common.py: its process pool (results, errors, no worker left behind) and its interval over rounds."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench._common import pool_starmap


def _power(base: int, exponent: int) -> int:
    if base < 0:
        raise ValueError("negative")
    return base**exponent


def test_results_come_back_in_order_or_as_they_finish():
    jobs = [(n, 2) for n in range(20)]
    assert pool_starmap(_power, jobs, 2) == [n * n for n in range(20)]
    assert sorted(pool_starmap(_power, jobs, 2, unordered=True)) == [n * n for n in range(20)]
    assert multiprocessing.active_children() == []


def test_an_error_in_a_job_is_raised_and_the_workers_are_gone():
    with pytest.raises(ValueError, match="negative"):
        pool_starmap(_power, [(2, 2), (-1, 2)], 2)
    assert multiprocessing.active_children() == []


def test_an_error_ends_the_pool_when_the_parent_only_flags_sigterm():
    """A process whose SIGTERM handler only sets a flag (the job runner's) forks the pool: on an
    error every worker still goes (run apart, so its handler and a hang stay out of this process)."""
    script = textwrap.dedent("""
        import multiprocessing, signal, sys
        sys.path.insert(0, sys.argv[1])
        from bench._common import pool_starmap
        from tests.bench.test_common import _power
        signal.signal(signal.SIGTERM, lambda *_: None)
        for _ in range(20):
            try:
                pool_starmap(_power, [(-1, 2)] + [(2, 2)] * 8, 2)
            except ValueError:
                pass
            assert multiprocessing.active_children() == []
        print("ended")
    """)
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", script, str(root)], capture_output=True, text=True,
                          timeout=120, cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ended"


def test_the_rounds_mean_interval_is_students_t():
    from bench._common import mean_interval

    mean, low, high = mean_interval([1.0, 2.0, 3.0])  # sd 1, t(2) = 4.30
    assert mean == 2.0 and abs(high - 2.0 - 4.30 / 3 ** 0.5) < 1e-9 and abs((mean - low) - (high - mean)) < 1e-9
    assert mean_interval([1.2]) == (1.2, 1.2, 1.2)  # one round: no interval to give
    wide, narrow = mean_interval([0.9, 1.1]), mean_interval([0.9, 1.1] * 5)
    assert wide[2] - wide[1] > 5 * (narrow[2] - narrow[1])  # two rounds say little; ten say more


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="starts a redis-server")
def test_the_write_floor_is_measured_on_the_durable_redis_and_leaves_no_key():
    from redis import Redis

    from bench._common import start_private_redis

    server = start_private_redis()
    try:
        client = Redis(port=server.port)
        assert client.config_get("appendfsync") == {"appendfsync": "always"}
        floor = server.write_floor_ms(writes=200)
        assert 0 < floor < 50  # ms a write: each one a round trip and an fsync of the server's own
        assert client.info("commandstats")["cmdstat_set"]["calls"] == 200
        assert client.dbsize() == 0
        client.close()
    finally:
        server.stop()


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="starts a redis-server")
def test_the_games_watch_the_aofs_fdatasync_with_redis_latency_monitor():
    """bench/games.py says how often the disk stalled Redis's fsync in its window (the opponent's p99
    against an in-memory peer's is the disk's then): the monitor is on from ``watch_stalls``, what it
    saw before is dropped, and the seconds it notes are read back as milliseconds."""
    from redis import Redis

    from bench._common import start_private_redis
    from bench.games import _stalls_said

    from ..redis_servers import slow_command

    server = start_private_redis()
    try:
        client = Redis(port=server.port)
        client.config_set("latency-monitor-threshold", 1)
        slow_command(client, 10)  # a sample of another event, before the watch
        assert client.execute_command("LATENCY", "LATEST")
        server.watch_stalls(5)
        assert client.config_get("latency-monitor-threshold") == {"latency-monitor-threshold": "5"}
        assert client.execute_command("LATENCY", "LATEST") == [] and server.stalled_seconds() == []
        client.close()
    finally:
        server.stop()
    assert _stalls_said([], 30.0).startswith("no fdatasync of Redis's AOF took over 5 ms in the 30 s")
    said = _stalls_said([7, 31, 9], 30.0)
    assert "over 5 ms in 3 of the 30 seconds" in said and "median 9 ms, worst 31 ms" in said


def test_a_move_is_touched_by_a_stall_when_its_span_meets_the_stalls_second_or_its_length_before():
    """The games' p99 of the moves no disk stall touched: Redis notes a 50 ms stall at the second it
    ended (1000, on a clock 900 s ahead of perf_counter's), so it held Redis somewhere in 99.95..101."""
    from bench.games import _stall_spans, _touched

    spans = _stall_spans([(1000, 50)], 900.0)
    assert spans == [(pytest.approx(99.95), 101.0)]
    assert not _touched(99.0, 99.9, spans)  # heard before the stall could have begun
    assert _touched(99.9, 99.96, spans)  # waiting while it may have held Redis
    assert _touched(100.5, 100.6, spans) and _touched(99.0, 102.0, spans)
    assert not _touched(101.0, 101.2, spans)  # sent once that second was over
    assert not _touched(100.5, 100.6, [])


def test_the_benched_servers_run_on_the_allocator_production_s_image_preloads(monkeypatch):
    """The Dockerfile preloads jemalloc in the image that runs; the benches start their servers on
    the same library where the machine has one (and say which), or on malloc when asked."""
    from bench import _common

    run = (_common.ROOT / "Dockerfile").read_text().split("\nFROM ")[-1]
    assert "libjemalloc2" in run and f"ENV LD_PRELOAD=/usr/local/lib/{_common.JEMALLOC}\n" in run
    assert f"/usr/local/lib/{_common.JEMALLOC}" in run.split("ln -s", 1)[1].split("\n")[0]

    monkeypatch.setenv("BENCH_ALLOCATOR", "system")
    assert _common.allocator() is None and "LD_PRELOAD" not in _common.server_env()
    assert "malloc" in _common.interpreter()
    monkeypatch.delenv("BENCH_ALLOCATOR")
    preload = _common.allocator()
    if preload is None:
        pytest.skip("no libjemalloc.so.2 on this machine (Debian's redis-server brings it)")
    env = _common.server_env()
    assert env["LD_PRELOAD"].split()[-1] == preload and "jemalloc preloaded" in _common.interpreter()
    maps = subprocess.run([sys.executable, "-c", "print(open('/proc/self/maps').read())"], env=env,
                          capture_output=True, text=True, check=True).stdout
    assert _common.JEMALLOC in maps  # the server's process has it loaded


def test_the_benched_servers_keep_python_s_objects_in_jemalloc_on_huge_pages_as_the_image_does(monkeypatch):
    """The image sets PYTHONMALLOC and jemalloc's MALLOC_CONF beside the preload; the benches' servers
    get the same, and in such a process Python's small objects are jemalloc's (no pymalloc arenas)
    and lie on transparent huge pages where this kernel allows them."""
    from bench import _common

    run = (_common.ROOT / "Dockerfile").read_text().split("\nFROM ")[-1]
    assert "ENV " + " ".join(f"{k}={v}" for k, v in _common.HEAP.items()) + "\n" in run
    monkeypatch.setenv("BENCH_ALLOCATOR", "pymalloc")  # the old heap, for pairs: jemalloc without HEAP
    assert not _common.HEAP.keys() & _common.server_env().keys() - os.environ.keys()
    monkeypatch.delenv("BENCH_ALLOCATOR")
    if _common.allocator() is None:
        pytest.skip("no libjemalloc.so.2 on this machine (Debian's redis-server brings it)")
    env = _common.server_env()
    assert {k: env[k] for k in _common.HEAP} == _common.HEAP
    probe = ("import sys\nheld = [[i] for i in range(400_000)]\n"
             "print(open('/proc/self/smaps_rollup').read().split('AnonHugePages:')[1].split()[0])\n"
             "sys._debugmallocstats()")
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert "Small block threshold" not in done.stderr  # pymalloc's statistics: not in use
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.exists() and "[never]" not in thp.read_text():
        assert int(done.stdout) > 0  # kB of the heap on huge pages


def test_the_last_core_is_read_after_a_name_that_holds_spaces_and_parentheses():
    from bench._common import last_cpu

    fields = [str(n) for n in range(3, 53)]  # fields 3.. of proc(5)'s stat; 39 (processor) is fields[36]
    fields[36] = "7"
    assert last_cpu(b"1234 (redis-server 127.0.0.1:6379) (x) " + " ".join(fields).encode()) == 7
    with open("/proc/thread-self/stat", "rb") as me:
        assert last_cpu(me.read()) in os.sched_getaffinity(0)


def test_the_processor_is_named_as_cpuinfo_names_it():
    from bench._common import processor

    cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu\n"
    assert processor(cpuinfo) == "AMD EPYC 7B13"
    assert processor("processor\t: 0\nmodel name\t:\n") == "unknown"  # named nothing
    assert processor("") == "unknown"
    here = processor()
    assert here and "\n" not in here


@pytest.mark.skipif(shutil.which("redis-server") is None or len(os.sched_getaffinity(0)) < 2,
                    reason="starts a redis-server, pins it and this thread to two cores")
def test_the_placement_counts_each_durable_round_trip_and_which_core_redis_ran_on():
    """bench/latency.py's host line: pinned to this thread's core, Redis is on the sender's core after every
    reply; pinned to another, after none. Each round trip is one SET of the server's, and it leaves no key."""
    from redis import Redis

    from bench._common import start_private_redis

    mine = os.sched_getaffinity(0)
    one, other = sorted(mine)[:2]
    server = start_private_redis()
    try:
        client = Redis(port=server.port)
        os.sched_setaffinity(0, {one})
        trips = 0
        for redis_core, share in ((one, 1.0), (other, 0.0)):
            os.sched_setaffinity(server.proc.pid, {redis_core})
            seen = server.placement(400, 0.3)
            assert seen.same_core == share and seen.rate == 400
            assert 60 <= seen.trips <= 125 and 0 < seen.median < 0.1
            trips += seen.trips
        assert client.info("commandstats")["cmdstat_set"]["calls"] == trips
        assert client.dbsize() == 0
        client.close()
    finally:
        os.sched_setaffinity(0, mine)
        server.stop()


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="starts a redis-server")
def test_a_round_trip_without_the_fsync_still_writes_the_aof_and_leaves_it_fsyncing_always(monkeypatch):
    """The host line's round trip less the disk's flush: each SET is one command, written to the AOF (none
    waits for an fsync), and the server is durable again after it, as it is when the probe fails."""
    from redis import Redis

    from bench._common import start_private_redis

    server = start_private_redis()
    try:
        client = Redis(port=server.port)
        aof = client.info("persistence")["aof_current_size"]
        bare = server.without_fsync(400, 0.3)
        assert 60 <= bare.trips <= 125 and 0 < bare.median < 0.1
        assert client.info("commandstats")["cmdstat_set"]["calls"] == bare.trips
        assert client.info("persistence")["aof_current_size"] - aof >= 600 * bare.trips
        assert client.config_get("appendfsync") == {"appendfsync": "always"}

        def fails(rate, seconds=1.5):
            assert client.config_get("appendfsync") == {"appendfsync": "no"}
            raise RuntimeError("the probe failed")

        monkeypatch.setattr(server, "placement", fails)
        with pytest.raises(RuntimeError, match="the probe failed"):
            server.without_fsync(400, 0.3)
        assert client.config_get("appendfsync") == {"appendfsync": "always"}
        client.close()
    finally:
        server.stop()
