"""JSON-lines logs and Prometheus metrics."""

from __future__ import annotations

import json
import logging
import re
import time
from pathlib import Path

from api.server.observability import BatchedLines, JsonFormatter, setup_logging, stop_logging

from ..conftest import two_player_table

ROOT = Path(__file__).resolve().parents[3]  # the repository's: subprocesses import the code from there


def test_a_move_is_logged_as_one_json_line_with_table_version_seat_command_outcome_latency(client, caplog):
    table_id, host, guest = two_player_table(client)
    with caplog.at_level(logging.INFO, logger="escoba.api"):
        client.ok(table_id, host, type="start")
        client.move(table_id, guest, type="start")
    lines = [json.loads(JsonFormatter().format(r)) for r in caplog.records if r.name == "escoba.api"]
    ok, refused = [line for line in lines if line.get("command") == "start"]
    assert ok["table_id"] == table_id and ok["seat"] == 0 and ok["outcome"] == "ok" and ok["version"] >= 3
    assert refused["outcome"] == "host_only" and refused["status"] == 403
    assert all(isinstance(line["latency_ms"], float) for line in (ok, refused))


def test_a_request_line_written_straight_to_the_writer_reads_as_one_through_logging(client, tmp_path, caplog):
    """With only the JSON-lines writer listening, the request line skips logging's record and
    handler chain; it must hold what the logging call would have written."""
    table_id, host, guest = two_player_table(client)
    with caplog.at_level(logging.INFO, logger="escoba.api"):  # another handler: through logging
        client.move(table_id, guest, type="start")
    (record,) = [r for r in caplog.records if r.name == "escoba.api"]
    through_logging = json.loads(JsonFormatter().format(record))
    out = (tmp_path / "log").open("w")
    setup_logging(stream=out)
    try:
        client.move(table_id, guest, type="start")
    finally:
        stop_logging()
        out.close()
    (straight,) = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}", straight["time"])
    assert straight["time"][:16] == through_logging["time"][:16] or straight["time"] > through_logging["time"]
    assert {k: v for k, v in straight.items() if k not in ("time", "latency_ms")} == {
        k: v for k, v in through_logging.items() if k not in ("time", "latency_ms")}
    assert straight["outcome"] == "host_only" and straight["status"] == 403


def test_log_lines_are_written_by_their_own_thread_as_json(tmp_path):
    out = (tmp_path / "log").open("w")
    setup_logging(stream=out)
    # a request thread only formats its line and leaves it for the writer
    assert [type(h) for h in logging.getLogger().handlers] == [BatchedLines]
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("escoba.api").exception("request", extra={"fields": {"table_id": "t1", "seat": 0}})
        logging.getLogger("escoba.api").info("request", extra={"fields": {"table_id": "t1", "status": 200}})
        logging.getLogger("escoba.api").debug("not at INFO")
    finally:
        stop_logging()  # writes out what has gathered
        out.close()
    assert logging.getLogger().handlers == []
    first, second = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    assert first["table_id"] == "t1" and first["level"] == "ERROR" and "ValueError: boom" in first["exc"]
    assert second == {**second, "table_id": "t1", "status": 200, "message": "request", "logger": "escoba.api"}


def test_the_writer_thread_writes_lines_without_waiting_for_the_stop(tmp_path):
    path = tmp_path / "log"
    handler = BatchedLines(path.open("w"), interval=0.02)
    handler.setFormatter(JsonFormatter())
    log = logging.getLogger("escoba.test.batched")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        for n in range(3):
            log.info("line", extra={"fields": {"n": n}})
        deadline = time.monotonic() + 5
        while path.read_text().count("\n") < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [json.loads(line)["n"] for line in path.read_text().splitlines()] == [0, 1, 2]
        assert handler.writing
    finally:
        log.removeHandler(handler)
        handler.close()
    assert not handler.writing


def test_metrics_count_moves_by_outcome_and_tables_by_status(client):
    table_id, host, guest = two_player_table(client)
    client.ok(table_id, host, type="start")
    client.move(table_id, guest, type="start")
    text = client.http.get("/metrics").get_data(as_text=True)
    assert 'escoba_moves_total{command="start",outcome="ok",transport="http"} 1.0' in text
    assert 'escoba_moves_total{command="start",outcome="host_only",transport="http"} 1.0' in text
    assert 'escoba_tables{status="playing"} 1.0' in text
    assert 'escoba_command_seconds_bucket{command="start",le="0.002",transport="http"}' in text
    assert "escoba_open_sockets" in text
    # no socket open: no change posted to one (tests/api/page/test_page_served.py counts them served)
    assert 'escoba_socket_posts_total{way="direct"} 0.0' in text
    assert 'escoba_socket_posts_total{way="mailbox"} 0.0' in text
    assert 'escoba_jobs{queue="escoba",shard="0",state="scheduled"}' in text
    assert 'escoba_jobs{queue="analysis",shard="0",state="queued"}' in text
    assert 'escoba_jobs_total{outcome="ok",shard="0"}' in text
    # by route: the hot path's and Flask's answers alike
    assert 'escoba_http_requests_total{method="POST",route="/tables/<table_id>/moves",status="200"} 1.0' in text
    assert 'escoba_http_requests_total{method="POST",route="/tables/<table_id>/moves",status="403"} 1.0' in text
    assert 'escoba_http_requests_total{method="POST",route="/tables/<table_id>/seats",status="201"} 1.0' in text
    assert 'escoba_http_request_seconds_count{method="POST",route="/tables"} 1.0' in text
    client.http.get("/no/such/thing")
    text = client.http.get("/metrics").get_data(as_text=True)
    assert 'escoba_http_requests_total{method="GET",route="unmatched",status="404"} 1.0' in text


def test_metrics_see_timers_due_and_late_and_the_oldest_queued_job(fake_redis):
    """The due index and RQ's queue, read from Redis: the same numbers in every process."""
    from rq import Queue

    from api.server.observability import _RedisCollector
    from events.connection import from_clients
    from workers import index

    now = [1_000_000.0]
    collector = _RedisCollector(from_clients(fake_redis), cache_for=0, now=lambda: now[0])
    index.mark_due(fake_redis, "t-due", now[0] - 1)
    index.mark_due(fake_redis, "t-late", now[0] - 60)
    index.mark_due(fake_redis, "t-later", now[0] + 60)
    assert collector.timer_counts() == (2, 1)
    Queue("escoba", connection=fake_redis).enqueue("workers.jobs.compact", "t", 1)
    now[0] = time.time() + 42
    samples = {(m.name, tuple(sorted(s.labels.items()))): s.value
               for m in collector.collect() for s in m.samples}
    assert samples[("escoba_jobs", (("queue", "escoba"), ("shard", "0"), ("state", "queued")))] == 1
    assert 41 < samples[("escoba_queue_oldest_job_seconds", (("queue", "escoba"), ("shard", "0")))] < 60
    assert samples[("escoba_queue_oldest_job_seconds", (("queue", "analysis"), ("shard", "0")))] == 0
    assert samples[("escoba_workers", (("shard", "0"),))] == 0


def test_gunicorn_socket_error_lines_are_written_as_json(tmp_path, capsys):
    """gunicorn's worker logs "Socket error processing request." with its own format (%(process)d);
    under our logging setup that line broke ("--- Logging error ---", TypeError: %d format)."""
    from gunicorn.config import Config as GunicornConfig
    from gunicorn.glogging import Logger

    gunicorn_log = Logger(GunicornConfig())  # as in the arbiter, before the worker sets ours up
    out = (tmp_path / "log").open("w")
    setup_logging(stream=out)
    try:
        try:
            raise OSError(5, "Input/output error")
        except OSError:
            gunicorn_log.exception("Socket error processing request.")
        # and a line whose arguments don't fit its format is still written, not dropped
        logging.getLogger("escoba.api").info("%d sockets", "many")
    finally:
        stop_logging()
        out.close()
    assert "Logging error" not in capsys.readouterr().err
    lines = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    socket_error = next(line for line in lines if line["logger"] == "gunicorn.error")
    assert socket_error["message"] == "Socket error processing request." and socket_error["level"] == "ERROR"
    assert "OSError" in socket_error["exc"]
    assert any(line["message"].startswith("%d sockets") for line in lines)


_STALLED_PIPE = r"""
from gevent import monkey
monkey.patch_all()
import logging, os, sys, time
import gevent
from api.server.observability import BatchedLines

read_end, write_end = os.pipe()  # nobody ever reads: the pipe fills after 64 KB
handler = BatchedLines(os.fdopen(write_end, "w"), interval=0.01)
line = logging.LogRecord("t", logging.INFO, "", 0, "x" * 1000, None, None)
for _ in range(500):  # 500 KB: far more than the pipe holds
    handler.emit(line)
time.sleep(0.3)  # the writer is now stuck in its write
ticks = []
def tick():
    for _ in range(20):
        ticks.append(time.monotonic())
        gevent.sleep(0.01)
started = time.monotonic()
gevent.spawn(tick).join(timeout=5)
print(len(ticks), round(time.monotonic() - started, 2), flush=True)
os._exit(0)  # logging's exit hook would flush into the full pipe and wait for ever
"""


def test_a_log_reader_that_stops_reading_does_not_stall_a_gevent_worker():
    """Under gevent a greenlet's write to a full pipe blocks the whole process; the writer is a
    real thread, so only it waits while the requests (greenlets) go on."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _STALLED_PIPE], capture_output=True, text=True, timeout=20,
                         cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    ticks, seconds = out.stdout.split()
    assert int(ticks) == 20 and float(seconds) < 5


def test_request_metrics_keep_a_bounded_set_of_labels(client):
    """Made-up methods and addresses fall into one label each: a client cannot grow the series."""
    for n in range(3):
        client.http.open(f"/no/such/{n}", method=f"BREW{n}")
    text = client.http.get("/metrics").get_data(as_text=True)
    assert 'escoba_http_requests_total{method="other",route="unmatched",status="404"} 3.0' in text
    assert "BREW" not in text and "/no/such" not in text


def test_with_the_writer_a_request_is_counted_by_the_next_scrape_and_its_line_keeps_its_place(client, tmp_path):
    """Under the JSON-lines writer a request's metrics and line are made in a batch (``settle``), not by
    its thread: /metrics settles first, so a scrape right after a move counts it; its line is written
    between the lines logged before and after it."""
    table_id, host, guest = two_player_table(client)
    out = (tmp_path / "log").open("w")
    setup_logging(stream=out)
    try:
        # (the writer runs every 0.1 s: a scrape within a few ms of the move sees it only if it settles)
        logging.getLogger("escoba.test").warning("before")
        client.move(table_id, guest, type="start")
        logging.getLogger("escoba.test").warning("after")
        text = client.http.get("/metrics").get_data(as_text=True)
        assert 'escoba_moves_total{command="start",outcome="host_only",transport="http"} 1.0' in text
        assert 'escoba_http_requests_total{method="POST",route="/tables/<table_id>/moves",status="403"} 1.0' in text
    finally:
        stop_logging()
        out.close()
    lines = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    said = [line["message"] if line["logger"] == "escoba.test" else line.get("command") for line in lines]
    assert said[:3] == ["before", "start", "after"]  # the /metrics request's own line follows
    assert lines[1]["outcome"] == "host_only" and lines[1]["status"] == 403 and lines[1]["table_id"] == table_id


def test_requests_are_counted_even_while_the_writer_is_stuck_on_its_stream(tmp_path):
    """A writer stuck in its write (a log reader that stopped reading) loses lines past MAX_PENDING, as
    ever, but no count: past SETTLE_AT waiting, the request's own thread settles them."""
    import threading

    from api.server.observability import Metrics

    release = threading.Event()

    class Stuck:
        def write(self, text):
            release.wait(10)

        def flush(self):
            pass

    metrics = Metrics()
    handler = BatchedLines(Stuck(), interval=0.01)
    handler.SETTLE_AT = 50
    try:
        handler.handle(logging.makeLogRecord({"msg": "first"}))
        time.sleep(0.2)  # the writer took "first" and is stuck writing it
        for _ in range(120):
            handler.add_request((metrics, {"command": "play", "transport": "socket"}, "WS", "/tables/t/ws",
                                 200, None, 0.001, "unmatched", time.time()))
        counted = metrics.registry.get_sample_value(
            "escoba_moves_total", {"command": "play", "outcome": "ok", "transport": "socket"})
        assert counted >= 100  # settled twice by the requests themselves; at most SETTLE_AT - 1 still wait
    finally:
        release.set()
        handler.close()
    assert metrics.registry.get_sample_value(
        "escoba_moves_total", {"command": "play", "outcome": "ok", "transport": "socket"}) == 120


_LOCKS_UNDER_GEVENT = r"""
from gevent import monkey
monkey.patch_all()
from api.server.observability import Metrics
from events.locks import short_lock

metrics = Metrics()
c_lock = type(short_lock())
print(" ".join(type(m._lock).__name__ if type(m._lock) is not c_lock else "C"
               for m in (metrics.moves, metrics.command_latency, metrics.requests, metrics.request_latency)))
"""


def test_under_gevent_the_labelled_metrics_take_the_c_lock_the_writer_thread_may_share():
    """``labels()`` runs in the log's writer thread (``settle``) and in a scrape: under gevent the
    metrics' own ``threading.Lock`` would be gevent's, which is not for two OS threads."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _LOCKS_UNDER_GEVENT], capture_output=True, text=True, timeout=60,
                         cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["C", "C", "C", "C"]
