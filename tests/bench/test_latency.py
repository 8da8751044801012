"""bench/latency.py's escoba side, played by either client: the node client's clock is perf_counter's, and a
tiny run of each plays its games through with no error, its spans inside its window."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from bench import latency
from bench._common import game_script

needs_node = pytest.mark.skipif(shutil.which("node") is None or not (latency.PEER_DIR / "node_modules" / "ws").is_dir(),
                                reason="node and bench/peer/node_modules (npm ci --prefix bench/peer)")
needs_redis = pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server")


@needs_node
def test_nodes_hrtime_is_perf_counters_clock():
    """The node client's spans are compared with the stage timers' perf_counter: one CLOCK_MONOTONIC."""
    before = time.perf_counter()
    said = subprocess.run(["node", "-e", "console.log(Number(process.hrtime.bigint()) / 1e9)"], capture_output=True,
                          text=True, check=True).stdout
    after = time.perf_counter()
    assert before <= float(said) <= after


@needs_redis
@pytest.mark.parametrize("client", [pytest.param("node", marks=needs_node), "python"])
def test_a_short_run_plays_through_with_either_client(client):
    pairs = [[game_script(f"test-latency:{i}", 40)] for i in range(2)]
    run = latency.run_escoba(latency.ROOT, pairs, 0.02, 0.3, 1.0, "test", client=client)
    assert run["errors"] == 0, run["first_error"]
    assert run["moves"] > 10 and run["missing"] == 0 and len(run["lat"]) == run["moves"]
    # node counts a move when it sends it in the window; the Python client when its answer comes in the
    # window, so a move sent just before the window (a round trip before, far under a second) is counted
    began = run["t0"] - (1.0 if client == "python" else 0.0)
    assert all(began <= sent < heard < run["t1"] + 1.5 for sent, heard, *_ in run["spans"]), (
        run["t0"], run["t1"], [s for s in run["spans"] if not began <= s[0] < s[1] < run["t1"] + 1.5][:3])
    assert run["stages"]["move"], "the stage timers' moves fall in the client's window: one clock"
    # each span names its table and version, as the server's timers of that move do: the client's wait is
    # split move by move into before the handler's wake, the server's part and after the opponent's frame
    assert all(isinstance(span[2], str) and isinstance(span[3], int) for span in run["spans"])
    [line] = latency.outside_report([run])
    matched = int(line.split("(")[1].split(" of ")[0])
    assert matched >= run["moves"] // 2, line
    # one Redis, the direct way: each move's append is split at its own marks (events/direct.py)
    [parts] = [line for line in latency.stage_report([run]) if "the append's parts" in line]
    assert int(parts.split("(")[1].split(" moves")[0]) >= len(run["stages"]["move"]) // 2, parts


def test_the_appends_parts_are_the_marks_between_decided_and_appended():
    marks = [("wake", 0.0), ("checked", 1.0), ("decided", 2.0), ("sent", 2.5), ("built ahead", 3.5),
             ("reply", 6.0), ("appended", 6.25), ("fanout", 7.0), ("sent", 8.0), ("reply", 9.0), ("hooked", 9.5)]
    # the snapshot's step after the post (its own "sent" and "reply") is not the append's
    assert latency.append_parts(marks) == [0.5, 1.0, 2.5, 0.25]
    assert latency.append_parts([m for m in marks if m[0] != "built ahead"]) is None  # not sent the direct way
    assert latency.append_parts(marks[:2]) is None
    # ... and its time stays in the stage of the mark that ends it: the append's parts sum to the append's
    run = {"stages": {"move": [[marks]], "lag": [], "gc": [], "mailbox": []}, "spans": [(0.0, 10.0, "t", 3)],
           "fsync": [], "window": 1.0}
    report = latency.stage_report([run])
    [append] = [line for line in report if line.strip().startswith("append ")]
    assert "4250.00 /" in append, report  # "decided" to "appended" (the report in ms)
    [after] = [line for line in report if "after the opponent's frame" in line]
    assert "append" not in after.split(":")[1] and "snapshot+hook p50 2500.00" in after, after


@needs_redis
@needs_node
def test_a_pair_whose_game_ends_moves_on_to_its_next_table():
    # games cut at 12 moves: a pair plays through one in well under the window, as pairs did at 0.75 load
    pairs = [[game_script(f"test-latency:{i}:{j}", 12) for j in range(3)] for i in range(2)]
    run = latency.run_escoba(latency.ROOT, pairs, 0.01, 0.0, 1.5, "test", timers=False)
    assert run["errors"] == 0 and run["missing"] == 0, run["first_error"]
    heard_at = {span[2] for span in run["spans"]}  # the tables whose moves were heard in the window
    second = {table for tables in run["tables"] for table in tables[1:]}
    assert heard_at & second, "no pair moved on to a next table"
    assert run["finished"] >= 2 and run["moves"] > 12 * 2


@needs_redis
@needs_node
def test_table_affine_servers_each_serve_their_pairs():
    pairs = [[game_script(f"test-latency:{i}", 30)] for i in range(4)]
    run = latency.run_escoba(latency.ROOT, pairs, 0.02, 0.2, 1.0, "test", timers=False, servers=2)
    assert run["errors"] == 0 and run["missing"] == 0, run["first_error"]
    heard_at = {span[2] for span in run["spans"]}
    assert heard_at == {tables[0] for tables in run["tables"]}  # every pair played, on either server


@needs_redis
def test_the_host_line_says_where_redis_ran_and_the_round_trips_p50_at_each_rate():
    host = latency.host_probe("always")
    line = host.line()
    shares = line.split("sender's core in ")[1].split(" of the replies")[0].split(" / ")
    trips = line.split("round trip p50 ")[1].split(" ms")[0].split(" / ")
    assert len(shares) == len(trips) == len(latency.PLACEMENT_RATES), line
    assert all(0 <= int(share.rstrip("%")) <= 100 for share in shares) and all(0 < float(t) < 100 for t in trips)
    assert line.startswith("host: a SET of a move's size, appendfsync always, at 200 / 2000 a second")
    # the low rate once more without the fsync: what the disk's flush alone adds to a durable round trip
    assert host.bare is not None and host.bare.rate == latency.PLACEMENT_RATES[0] and host.bare.trips > 100
    assert host.fsync_adds == max(0.0, host.seen[0].median - host.bare.median)
    assert f"(at 200 without the fsync {latency.ms(host.bare.median)} ms: the fsync adds " in line


@needs_redis
def test_without_an_fsync_to_measure_the_host_line_says_nothing_of_it():
    host = latency.host_probe("everysec")
    assert host.bare is None and host.fsync_adds is None
    assert "without the fsync" not in host.line()


def test_escobas_line_says_what_share_of_the_p50s_allowance_the_fsync_alone_takes():
    side = {"rate": 700.0, "p50": 0.0015, "p99": 0.005, "p999": 0.01, "cpu_ms": 0.5, "redis_ms": 0.15,
            "step_us": 50.0, "missing": 0, "errors": 0}
    peer = {**side, "p50": 0.0010, "p99": 0.010, "redis_ms": 0.0}
    line = latency.side_line("escoba", side, peer, fsync_adds=0.0004)
    assert "p50 1.50 (met <= 1.5)" in line and "p99 0.50 (met <= 1.2)" in line
    assert line.endswith("; the fsync alone (host line) 80% of the p50's allowance (0.50 ms)")
    assert "allowance" not in latency.side_line("boardgame.io memory", peer, peer)
    assert "allowance" not in latency.side_line("escoba", side, None, fsync_adds=0.0004)


def test_redis_cores_are_read_as_taskset_lists_them_and_must_be_this_machines():
    import argparse

    mine = sorted(os.sched_getaffinity(0))
    assert latency.cores_arg(str(mine[0])) == {mine[0]}
    assert latency.cores_arg(",".join(map(str, mine))) == set(mine)
    if mine == list(range(mine[0], mine[-1] + 1)):
        assert latency.cores_arg(f"{mine[0]}-{mine[-1]}") == set(mine)
    for bad in ("x", "", "1-", "-1", f"{mine[-1] + 1}", f"{mine[0]},{mine[-1] + 64}"):
        with pytest.raises(argparse.ArgumentTypeError):
            latency.cores_arg(bad)
    assert latency.cores_arg("free") == frozenset()  # none: where the kernel puts them, not as deployed
    assert "as deployed" in latency.redis_cores_said(None)
    assert "where the kernel puts them (NOT production" in latency.redis_cores_said(frozenset())
    assert f"on cores {mine[0]} (NOT production" in latency.redis_cores_said(frozenset({mine[0]}))


def _redis_threads(pid: int) -> dict[str, set[int]]:
    """A redis-server's threads by name (the main one is ``redis-server``), each with the cores it may run on."""
    threads = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/comm") as comm:
            threads[comm.read().strip()] = os.sched_getaffinity(int(task))
    return threads


@needs_redis
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="pins a redis-server to one of two cores")
def test_the_bench_redis_threads_are_all_on_the_cores_asked():
    from bench._common import start_private_redis

    core = max(os.sched_getaffinity(0))
    redis = start_private_redis(cores=frozenset({core}))
    try:
        threads = _redis_threads(redis.proc.pid)
        assert len(threads) > 1  # the main thread and the background ones
        assert all(cores == {core} for cores in threads.values())
    finally:
        redis.stop()


@needs_redis
@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="the deployment's Redis core is core 1 of two")
def test_the_bench_redis_runs_on_the_deployments_core_unless_told_otherwise():
    """As docker-compose.yml runs it (server_cpulist and bio_cpulist: tests/deploy/test_compose.py): its main
    thread and its background ones on DEPLOYED_REDIS_CPUS; with no cores (``--redis-cores free``, the host
    line's probe), where the kernel puts them."""
    from bench._common import DEPLOYED_REDIS_CPUS, start_private_redis

    assert DEPLOYED_REDIS_CPUS == "1"
    for asked, cores in ((None, {1}), (frozenset(), os.sched_getaffinity(0))):
        redis = start_private_redis(cores=asked)
        try:
            threads = _redis_threads(redis.proc.pid)
            bio = [name for name in threads if name.startswith("bio_")]
            assert bio and threads["redis-server"] == cores and all(threads[name] == cores for name in bio)
        finally:
            redis.stop()


@needs_redis
@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="the deployment's Redis core is core 1 of two")
def test_escoba_serve_keeps_off_redis_core_as_deployed_or_runs_on_the_api_cores_asked():
    """As deployed (no ``--api-cores``), escoba serve's master and the worker it forks, each of their threads, keep
    off Redis's core 1 (``ESCOBA_REDIS_CPUS``, api/server/serve.py ``keep_off``); ``--api-cores 1`` puts them on
    core 1 only; ``--api-cores free`` where the kernel puts them."""
    from bench._common import server_env, start_private_redis

    mine = os.sched_getaffinity(0)
    redis = start_private_redis(durable=False)
    try:
        for asked, cores in ((None, mine - {1}), (frozenset({1}), {1}), (frozenset(), mine)):
            env = server_env(REDIS_URL=redis.url, ESCOBA_REDIS_CPUS=latency.kept_off(None, asked))
            server = latency.start_escoba(latency.ROOT, latency.free_port(), 2, env, 1, asked or frozenset())
            try:
                pids = server.pids()
                assert len(pids) == 2  # the master and its one worker
                tasks = [int(t) for pid in pids for t in os.listdir(f"/proc/{pid}/task")]
                assert all(os.sched_getaffinity(t) == cores for t in tasks), asked
            finally:
                server.stop()
    finally:
        redis.stop()


def test_escoba_serve_is_told_redis_cores_unless_the_api_cores_are_asked():
    assert latency.kept_off(None, None) == "1"  # as deployed
    assert latency.kept_off(frozenset({0}), None) == "0"  # Redis moved: the API keeps off where it went
    assert latency.kept_off(frozenset(), None) == ""  # Redis free: so is the API
    assert latency.kept_off(None, frozenset({0})) == latency.kept_off(None, frozenset()) == ""
    assert "as deployed" in latency.api_cores_said(None)
    assert "where the kernel puts it (NOT production" in latency.api_cores_said(frozenset())
    said = latency.api_cores_said(frozenset({0, 2}))
    assert said == "; escoba serve on cores 0,2 only (NOT production: a diagnostic)"
