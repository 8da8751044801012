"""One envelope for every refusal (api/refusals.py ``refuse``), whichever way a move came in: a POST
answered by api/http/hot.py, a POST answered by Flask's routes, a socket's move frame. Each gives
the same error (docs/api.md's shape), the same log line's fields and the same counts."""

from __future__ import annotations

import orjson
import pytest

from api.app import create_app
from api.http import hot
from api.server.observability import MOVE_ROUTE, SOCKET_ROUTE
from api.sockets.moves import SocketMoves

from .conftest import Client

WAYS = ("hot", "flask", "socket")
# (the move, whose token sends it): each is refused and changes nothing
CASES = {
    "rule": ({"type": "start"}, "guest"),  # host_only, a command in the line
    "turn": ("play", "waiting"),  # not_your_turn
    "schema": ({"type": "fly"}, "turn"),  # bad_request before any command is read
    "token": ({"type": "resign"}, "forged"),  # unauthorized
    "conflict": ({"type": "resign", "expected_version": 1}, "turn"),  # version_conflict
}
_COUNTED = ("escoba_moves_total", "escoba_http_requests_total")


@pytest.fixture
def apps(fake_redis, config, monkeypatch):
    """Two API processes on one store: one with the hot routes, one with Flask's routes alone."""
    with_hot = create_app(fake_redis, config)
    monkeypatch.setattr(hot, "install", lambda app: None)
    flask_only = create_app(fake_redis, config)
    yield {"hot": with_hot, "flask": flask_only, "socket": with_hot}
    for app in (with_hot, flask_only):
        app.extensions["escoba"].fanout.stop()


def _table(client: Client):
    host = client.create()
    tid = host["table_id"]
    guest = client.sit(tid)
    turn = client.ok(tid, host["token"], type="start")["table"]["turn"]
    tokens = {0: host["token"], 1: guest["token"]}
    view = client.view(tid, tokens[turn])
    option = view["options"][0]
    play = {"type": "play", "card": option["card"], "capture": option["captures"][0] if option["captures"] else []}
    return tid, {"guest": tokens[1], "turn": tokens[turn], "waiting": tokens[1 - turn], "forged": "not-a-token"}, play


def _counts(app) -> dict:
    counts = {}
    for family in app.extensions["escoba"].metrics.registry.collect():
        if family.name + "_total" in _COUNTED:
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    counts[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return counts


def _increments(before: dict, after: dict) -> dict:
    return {key: value - before.get(key, 0) for key, value in after.items() if value != before.get(key, 0)}


def _payload(frame: bytes) -> bytes:
    """A server's unmasked text frame's payload (api/sockets/frames.py ``text_frame``)."""
    n = frame[1] & 0x7F
    return frame[2:] if n < 126 else frame[4:] if n == 126 else frame[10:]


def _refused(app, way: str, tid: str, token: str, move: dict, caplog):
    """(the error, the answer's status, its log line's fields, the counts it added) of ``move``
    sent by ``way``."""
    before = _counts(app)
    caplog.clear()
    with caplog.at_level("INFO", logger="escoba.api"):
        if way == "socket":
            ctx = app.extensions["escoba"]
            moves = SocketMoves(ctx, tid, token, "127.0.0.1", None, app.logger)
            sent, state = moves.answer(orjson.dumps({"type": "move", "id": "m1", "move": move}))
            assert state is None
            frame = orjson.loads(_payload(sent))
            assert frame["type"] == "error" and frame["id"] == "m1", frame
            error, status = frame["error"], None
        else:
            answer = app.test_client().post(f"/tables/{tid}/moves", json=move,
                                            headers={"Authorization": f"Bearer {token}"})
            error, status = answer.get_json()["error"], answer.status_code
    [line] = [dict(r.fields) for r in caplog.records if r.name == "escoba.api"]
    assert line.pop("latency_ms") >= 0
    return error, status, line, _increments(before, _counts(app))


@pytest.mark.parametrize("way", WAYS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_refusal_is_one_envelope_whichever_way_it_came(apps, way, case, caplog):
    client = Client(apps["hot"].test_client())
    tid, tokens, play = _table(client)
    move, who = CASES[case]
    move = play if move == "play" else move
    version = client.view(tid)["version"]
    # the hot path's answer is the one every way must give
    error, status, line, counted = _refused(apps["hot"], "hot", tid, tokens[who], move, caplog)
    assert set(error) == {"code", "message", "details"} and status >= 400
    got_error, got_status, got_line, got_counted = _refused(apps[way], way, tid, tokens[who], move, caplog)
    assert got_error == error
    transport, method, route, path = (("socket", "WS", SOCKET_ROUTE, f"/tables/{tid}/ws") if way == "socket"
                                      else ("http", "POST", MOVE_ROUTE, f"/tables/{tid}/moves"))
    assert got_line == {**line, "transport": transport, "method": method, "path": path, "status": status}
    assert (got_line.get("outcome") == error["code"]) == ("command" in line) == (case in ("rule", "turn", "conflict"))
    requests = {("escoba_http_requests_total", (("method", method), ("route", route), ("status", str(status)))): 1.0}
    if "command" in line:
        moves = (("command", line["command"]), ("outcome", error["code"]), ("transport", transport))
        requests[("escoba_moves_total", moves)] = 1.0
    assert got_counted == requests
    assert client.view(tid)["version"] == version  # refused: nothing changed


def test_a_frame_that_is_no_move_is_logged_and_counted_as_a_body_that_is_not_json(apps, caplog):
    client = Client(apps["hot"].test_client())
    tid, tokens, _ = _table(client)
    app = apps["hot"]
    before = _counts(app)
    caplog.clear()
    with caplog.at_level("INFO", logger="escoba.api"):
        sent, _ = SocketMoves(app.extensions["escoba"], tid, tokens["turn"], None, None, app.logger).answer(b"{no")
    frame = orjson.loads(_payload(sent))
    assert frame == {"type": "error", "id": None, "error": {"code": "bad_request", "message": "The frame is not JSON.",
                                                            "details": {"frame": "not JSON"}}}
    [line] = [dict(r.fields) for r in caplog.records if r.name == "escoba.api"]
    assert line.pop("latency_ms") >= 0
    assert line == {"method": "WS", "path": f"/tables/{tid}/ws", "status": 400}
    key = ("escoba_http_requests_total", (("method", "WS"), ("route", SOCKET_ROUTE), ("status", "400")))
    assert _increments(before, _counts(app)) == {key: 1.0}
