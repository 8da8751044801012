"""api/http/hot.py answers the view and the move exactly as Flask's routes do, and leaves the unusual to Flask."""

from __future__ import annotations

import dataclasses

import pytest

from api.app import create_app
from api.http import hot, limits

from ..conftest import Client


@pytest.fixture
def both(fake_redis, config, monkeypatch):
    """Two API processes on one store: one with the hot routes, one with Flask's routes alone."""
    with_hot = create_app(fake_redis, config)
    monkeypatch.setattr(hot, "install", lambda app: None)
    flask_only = create_app(fake_redis, config)
    return Client(with_hot.test_client()), Client(flask_only.test_client())


def _same(a, b):
    assert a.status_code == b.status_code, (a.status_code, b.status_code, a.data, b.data)
    assert sorted(a.headers.items()) == sorted(b.headers.items())
    assert a.data == b.data
    return a


def _started(client):
    host = client.create()
    tid = host["table_id"]
    guest = client.sit(tid)
    answer = client.ok(tid, host["token"], type="start")
    tokens = {0: host["token"], 1: guest["token"]}
    return tid, tokens, answer["table"]["turn"]


def _play(view) -> dict:
    option = view["options"][0]
    return {"type": "play", "card": option["card"], "capture": option["captures"][0] if option["captures"] else []}


def test_views_and_refusals_are_the_same_bytes(both):
    hot_client, flask_client = both
    tid, tokens, turn = _started(hot_client)
    auth = {"Authorization": f"Bearer {tokens[turn]}"}
    view = hot_client.http.get(f"/tables/{tid}", headers=auth)
    requests = [
        ("GET", f"/tables/{tid}", {}, None),
        ("GET", f"/tables/{tid}", auth, None),
        ("GET", f"/tables/{tid}?deck=spanish", auth, None),
        ("GET", f"/tables/{tid}?deck=spanish&deck=french", auth, None),
        ("GET", f"/tables/{tid}?deck=nope", auth, None),
        ("GET", f"/tables/{tid}", {**auth, "If-None-Match": view.headers["ETag"]}, None),
        ("GET", f"/tables/{tid}", {**auth, "If-None-Match": 'W/"stale", ' + view.headers["ETag"]}, None),
        ("GET", f"/tables/{tid}", {**auth, "If-None-Match": '"stale"'}, None),
        ("GET", f"/tables/{tid}", {"Authorization": "Bearer not-a-token"}, None),
        ("GET", "/tables/no-such-table", auth, None),
        ("POST", f"/tables/{tid}/moves", {}, {"type": "resign"}),
        ("POST", f"/tables/{tid}/moves", {"Authorization": "Bearer not-a-token"}, {"type": "resign"}),
        ("POST", f"/tables/{tid}/moves", auth, [1, 2]),
        ("POST", f"/tables/{tid}/moves", auth, {"type": "fly"}),
        ("POST", f"/tables/{tid}/moves", auth, {"type": "play", "card": "7x", "capture": ["7x", 1]}),
        ("POST", f"/tables/{tid}/moves", auth, {"type": "play", "card": "7o", "expected_version": "0"}),
        ("POST", f"/tables/{tid}/moves", auth, {"type": "start"}),
        ("POST", f"/tables/{tid}/moves", auth, {"type": "resign", "expected_version": 1}),
        ("POST", f"/tables/{tid}/moves", {**auth, "Idempotency-Key": "x" * 101}, {"type": "resign"}),
        ("POST", f"/tables/{tid}/moves?deck=nope", auth, {"type": "resign"}),
        ("POST", "/tables/no-such-table/moves", auth, {"type": "resign"}),
    ]
    for method, path, headers, body in requests:
        a = hot_client.http.open(path, method=method, headers=headers, json=body)
        b = flask_client.http.open(path, method=method, headers=headers, json=body)
        _same(a, b)
    # a body that is not JSON, and a request that is not valid JSON at all
    for data in (b"{not json", b""):
        _same(*(c.http.post(f"/tables/{tid}/moves", data=data, headers=auth, content_type="application/json")
                for c in both))
    # nothing above changed the table
    assert hot_client.view(tid, tokens[turn])["version"] == view.get_json()["version"]


def test_a_move_answers_as_its_retry_through_flask(both):
    """The same move with one Idempotency-Key, through each: the retry answers the first one's bytes."""
    hot_client, flask_client = both
    tid, tokens, turn = _started(hot_client)
    for first, retry in ((hot_client, flask_client), (flask_client, hot_client)):
        auth = {"Authorization": f"Bearer {tokens[turn]}"}
        move = _play(first.view(tid, tokens[turn]))
        key = {"Idempotency-Key": f"move-{turn}-{move['card']}"}
        a = first.http.post(f"/tables/{tid}/moves", json=move, headers={**auth, **key})
        assert a.status_code == 200, a.get_json()
        _same(a, retry.http.post(f"/tables/{tid}/moves", json=move, headers={**auth, **key}))
        turn = a.get_json()["table"]["turn"]


def test_the_unusual_goes_to_flask_and_is_answered_as_before(both):
    hot_client, _ = both
    tid, tokens, turn = _started(hot_client)
    auth = {"Authorization": f"Bearer {tokens[turn]}"}
    # a body not declared JSON: refused in the contract's shape
    r = hot_client.http.post(f"/tables/{tid}/moves", data='{"type": "resign"}', headers=auth,
                             content_type="text/plain")
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "bad_request"
    # over 16 KB: 413
    r = hot_client.http.post(f"/tables/{tid}/moves", json={"type": "resign", "pad": "x" * 17_000}, headers=auth)
    assert r.status_code == 413 and r.get_json()["error"]["code"] == "bad_request"
    # an address over 2 KB: 414; HEAD of a view: Flask's own
    assert hot_client.http.get(f"/tables/{tid}?x={'y' * 2100}", headers=auth).status_code == 414
    head = hot_client.http.head(f"/tables/{tid}", headers=auth)
    assert head.status_code == 200 and head.data == b"" and head.headers["ETag"]
    # another method: 405 with Allow
    r = hot_client.http.put(f"/tables/{tid}/moves", json={"type": "resign"}, headers=auth)
    assert r.status_code == 405 and "POST" in r.headers["Allow"]
    assert hot_client.view(tid, tokens[turn])["status"] == "playing"


def test_the_hot_routes_log_and_count_like_flask(both, caplog):
    hot_client, flask_client = both
    tid, tokens, turn = _started(hot_client)
    auth = {"Authorization": f"Bearer {tokens[turn]}"}
    lines, counts = [], []
    for client in both:
        caplog.clear()
        with caplog.at_level("INFO", logger="escoba.api"):
            refused = client.http.post(f"/tables/{tid}/moves", json={"type": "start"}, headers=auth)
        [record] = [r for r in caplog.records if r.name == "escoba.api"]
        fields = dict(record.fields)
        assert fields.pop("latency_ms") >= 0
        lines.append(fields)
        metrics = client.http.get("/metrics").get_data(as_text=True)
        code = refused.get_json()["error"]["code"]
        counts.append([line for line in metrics.splitlines()
                       if line.startswith(f'escoba_moves_total{{command="start",outcome="{code}",transport="http"}}')])
    assert lines[0] == lines[1] == {"table_id": tid, "command": "start", "outcome": code, "transport": "http",
                                    "method": "POST", "path": f"/tables/{tid}/moves", "status": refused.status_code}
    assert refused.status_code >= 400
    # each process counted its own refusal
    assert counts[0] == counts[1] == [f'escoba_moves_total{{command="start",outcome="{code}",transport="http"}} 1.0']


def test_the_moves_limit_counts_both_routes_as_one(fake_redis, config, monkeypatch):
    limited = dataclasses.replace(config, rate_limits="on")
    with_hot = Client(create_app(fake_redis, limited).test_client())
    monkeypatch.setattr(hot, "install", lambda app: None)
    flask_only = Client(create_app(fake_redis, limited).test_client())
    host = with_hot.create()
    guest = with_hot.sit(host["table_id"])
    n = int(limits.MOVES.split()[0])
    statuses = [(with_hot if i % 2 else flask_only).move(host["table_id"], guest["token"], type="start").status_code
                for i in range(n + 1)]
    assert 429 not in statuses[:n] and statuses[n] == 429  # one count, whichever route answers
