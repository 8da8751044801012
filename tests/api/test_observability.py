"""JSON-lines logs and Prometheus metrics."""

from __future__ import annotations

import json
import logging
from logging.handlers import QueueHandler

from api.observability import JsonFormatter, setup_logging, stop_logging

from .conftest import two_player_table


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


def test_log_lines_are_written_by_their_own_thread_as_json(tmp_path):
    out = (tmp_path / "log").open("w")
    setup_logging(stream=out)
    # a request thread only queues its line
    assert [type(h) for h in logging.getLogger().handlers] == [QueueHandler]
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("escoba.api").exception("request", extra={"fields": {"table_id": "t1", "seat": 0}})
        logging.getLogger("escoba.api").info("request", extra={"fields": {"table_id": "t1", "status": 200}})
        logging.getLogger("escoba.api").debug("not at INFO")
    finally:
        stop_logging()  # writes out what is queued
        logging.getLogger().handlers.clear()
        out.close()
    first, second = [json.loads(line) for line in (tmp_path / "log").read_text().splitlines()]
    assert first["table_id"] == "t1" and first["level"] == "ERROR" and "ValueError: boom" in first["exc"]
    assert second == {**second, "table_id": "t1", "status": 200, "message": "request", "logger": "escoba.api"}


def test_metrics_count_moves_by_outcome_and_tables_by_status(client):
    table_id, host, guest = two_player_table(client)
    client.ok(table_id, host, type="start")
    client.move(table_id, guest, type="start")
    text = client.http.get("/metrics").get_data(as_text=True)
    assert 'escoba_moves_total{command="start",outcome="ok"} 1.0' in text
    assert 'escoba_moves_total{command="start",outcome="host_only"} 1.0' in text
    assert 'escoba_tables{status="playing"} 1.0' in text
    assert "escoba_command_seconds_bucket" in text and "escoba_open_sockets" in text
    assert 'escoba_jobs{state="scheduled"}' in text and "escoba_jobs_total" in text
