"""Game analysis over HTTP: asked once, computed by the ``analysis`` job, read by the table's seats
(once the game is over) and the admin only."""

from __future__ import annotations

import io
import json
import random

import pytest

from api.cli import analyze
from events import analysis as stored
from events.store import tokens_key
from workers import analysis as job
from workers import context, runner

from ..conftest import ADMIN, play_out, two_player_table


def _call(client, method, tid, token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return getattr(client.http, method)(f"/tables/{tid}/analysis", headers=headers)


@pytest.fixture
def worker(fake_redis, config, monkeypatch):
    monkeypatch.setattr(job, "BUDGET", 1500)  # fewer deals a play: the same code, quicker
    context.configure(config, tables=fake_redis)
    yield lambda: runner.run_burst(fake_redis)
    context.configure(None, None)


def _finished(client, moves: int = 8):
    tid, host, guest = two_player_table(client, preset="cardgames")
    client.ok(tid, host, type="start")
    tokens = {0: host, 1: guest}
    for _ in range(moves):  # a few plays, then the host resigns: a short game to judge
        view = client.view(tid, tokens[client.view(tid)["turn"]])
        option = view["options"][0]
        capture = option["captures"][0] if option["captures"] else []
        client.ok(tid, tokens[view["you"]], type="play", card=option["card"], capture=capture)
    client.ok(tid, host, type="resign")
    return tid, host, guest


def test_asked_once_then_read_by_its_seats_and_the_admin(client, fake_redis, worker):
    tid, host, guest = _finished(client)
    r = _call(client, "get", tid, host)
    assert r.status_code == 404 and r.get_json()["error"]["code"] == "not_found"
    r = _call(client, "post", tid, host)
    assert r.status_code == 202 and r.get_json()["status"] == "pending" and r.get_json()["progress"] == 0
    queued = job.queue_for(fake_redis).job_ids
    assert queued == [job.job_id(tid, client.view(tid)["version"])]
    # a second POST (either seat, or the admin) starts nothing
    for token in (guest, ADMIN, host):
        assert _call(client, "post", tid, token).status_code == 202
    assert job.queue_for(fake_redis).job_ids == queued
    assert _call(client, "get", tid, guest).get_json() == {
        "status": "pending", "version": client.view(tid)["version"], "progress": 0}

    assert worker() >= 1
    done = _call(client, "get", tid, guest)
    assert done.status_code == 200
    body = done.get_json()
    assert body["status"] == "done" and [s["seat"] for s in body["seats"]] == [0, 1]
    assert sum(len(s["moves"]) for s in body["seats"]) == 8
    for seat in body["seats"]:
        assert 0 <= seat["accuracy"] <= 100
        for m in seat["moves"]:
            assert set(m) == {"version", "round", "played", "best", "loss", "label"}
            assert m["played"]["type"] == "play" and m["loss"] >= 0
    assert _call(client, "get", tid, host).get_json() == body
    assert _call(client, "get", tid, ADMIN).get_json() == body
    # asked again once done: the result, nothing started
    again = _call(client, "post", tid, host)
    assert again.status_code == 200 and again.get_json() == body
    assert job.queue_for(fake_redis).count == 0
    # escoba analyze prints the same
    out = io.StringIO()
    assert analyze(tid, as_json=True, redis=fake_redis, out=out) == 0
    assert json.loads(out.getvalue()) == body
    out = io.StringIO()
    assert analyze(tid, redis=fake_redis, out=out) == 0
    assert "seat 0: accuracy" in out.getvalue() and "seat 1: accuracy" in out.getvalue()


def test_only_its_seats_and_the_admin_may_ask_or_read(client, fake_redis, worker):
    tid, host, guest = two_player_table(client, preset="cardgames")
    client.ok(tid, host, type="start")
    # while the game is being played: the players' analysis waits for its end (hidden hands)
    for method in ("post", "get"):
        r = _call(client, method, tid, guest)
        assert r.status_code == 409 and r.get_json()["error"]["code"] == "game_in_progress"
    # the admin may ask at any time
    assert _call(client, "post", tid, ADMIN).status_code == 202
    assert _call(client, "get", tid, ADMIN).status_code == 202
    client.ok(tid, host, type="resign")
    other = client.create()
    import hashlib

    stranger = "stranger-token"
    fake_redis.hset(tokens_key(tid), hashlib.sha256(stranger.encode()).hexdigest(), "p_stranger")
    for method in ("post", "get"):
        assert _call(client, method, tid).status_code == 401  # no token: a spectator
        r = _call(client, method, tid, other["token"])  # another table's seat
        assert r.status_code == 401 and r.get_json()["error"]["code"] == "unauthorized"
        r = _call(client, method, tid, stranger)
        assert r.status_code == 403 and r.get_json()["error"]["code"] == "forbidden"
        assert _call(client, method, "nosuch00", ADMIN).status_code == 404
    assert _call(client, "get", tid, guest).status_code == 202
    # the header only: a token in the address is not read
    assert client.http.get(f"/tables/{tid}/analysis?token={host}").status_code == 401


def test_a_later_version_is_a_new_analysis_and_the_old_job_writes_nothing_into_it(client, fake_redis, worker):
    tid, host, guest = two_player_table(client, preset="cardgames")
    client.ok(tid, host, type="start")
    assert _call(client, "post", tid, ADMIN).status_code == 202
    first = stored.load(fake_redis, tid).version
    view = client.view(tid, host if client.view(tid)["turn"] == 0 else guest)
    option = view["options"][0]
    client.ok(tid, host if view["you"] == 0 else guest, type="play", card=option["card"],
              capture=option["captures"][0] if option["captures"] else [])
    play_out(client, tid, {0: host, 1: guest}, random.Random(3), until="round_over")
    client.ok(tid, host, type="resign")
    assert _call(client, "post", tid, guest).status_code == 202
    now = stored.load(fake_redis, tid)
    assert now.version > first and now.status == stored.PENDING
    assert not stored.save(fake_redis, tid, first, rows=[{"version": 99, "seat": 0}])
    worker()
    body = _call(client, "get", tid, host).get_json()
    assert body["status"] == "done" and body["version"] == now.version
    assert sum(len(s["moves"]) for s in body["seats"]) >= 36


def test_openapi_lists_the_analysis(client):
    spec = client.http.get("/openapi.json").get_json()
    ops = spec["paths"]["/tables/{table_id}/analysis"]
    assert set(ops) >= {"get", "post"}
    assert {"200", "202", "401", "403", "404", "409"} <= set(ops["get"]["responses"])
    assert "Analysis" in spec["components"]["schemas"]


def test_escoba_analyze_parses_its_flags_and_says_when_there_is_no_table(monkeypatch, fake_redis, capsys):
    assert analyze("nosuch00", redis=fake_redis) == 1
    assert "No such table" in capsys.readouterr().err

    from api import cli

    called = []
    monkeypatch.setattr(cli, "analyze", lambda table_id, **kw: called.append((table_id, kw)) or 0)
    assert cli.main(["analyze", "abcd1234", "--json", "--redis-url", "redis://h:1/0"]) == 0
    assert called == [("abcd1234", {"as_json": True, "redis_url": "redis://h:1/0"})]
