"""Moves over the socket (api/sockets/moves.py, docs/api.md v1.2): whole games with no HTTP move, one
idempotency key with POST, refusals that change nothing, one log line and metrics as a POST's.
Under ``escoba serve`` and through two processes: test_sockets_served.py, test_two_processes.py."""

from __future__ import annotations

import dataclasses
import json
import random
import threading
import time

import pytest
import websocket
from werkzeug.serving import make_server

from api.app import create_app
from api.http import limits
from api.sockets.moves import STRIKES_MAX
from events.service import TableService

from ..conftest import Client
from ..socket_player import SocketPlayer, play_over_sockets, random_move


def _serve(app):
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def live(app):
    server = _serve(app)
    yield f"127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture
def on_topology(backends, config):
    """An app on both Redis topologies, served: (its test client, its address)."""
    app = create_app(backends, config)
    server = _serve(app)
    yield Client(app.test_client()), f"127.0.0.1:{server.server_port}"
    server.shutdown()
    app.extensions["escoba"].fanout.stop()


def _seated(client, preset="del15", **extra):
    host = client.create(preset=preset, **extra)
    guest = client.sit(host["table_id"])
    return host["table_id"], {0: host["token"], 1: guest["token"]}


def _log(client, table_id) -> list[dict]:
    r = client.http.get(f"/admin/tables/{table_id}/log", headers=client.admin())
    assert r.status_code == 200
    return [json.loads(line) for line in r.get_data(as_text=True).splitlines() if line.strip()]


def _played(log) -> int:
    return sum(1 for e in log if e["type"] in ("CardPlayed", "FifteenTaken"))


def test_whole_games_over_sockets_alone(on_topology):
    client, base = on_topology
    for seed in range(2):
        table_id, tokens = _seated(client, settings={"target": 10})
        patches = seed == 1  # the second game's sockets take each change as a patch, as the page's do
        players = {seat: SocketPlayer(base, table_id, token, patches=patches) for seat, token in tokens.items()}
        spectator = SocketPlayer(base, table_id, patches=patches)
        try:
            started = players[0].ok({"type": "start"})
            final = play_over_sockets(players, random.Random(seed), started["version"])
            assert final["status"] == "finished" and final["winners"]
            assert spectator.wait_for_version(final["version"])["hand"] == []
            for socket, token in [*((players[s], tokens[s]) for s in tokens), (spectator, None)]:
                fetched = client.view(table_id, token)  # what the patches made is the view itself
                assert {c: socket.view["labels"].get(c) for c in fetched["labels"]} == fetched["labels"]
                assert {**socket.view, "labels": None} == {**fetched, "labels": None}
                assert (socket.patched > 50) == patches
        finally:
            for p in [*players.values(), spectator]:
                p.close()
        # the log runs on with no gap and folds to the state every socket was sent
        log = _log(client, table_id)
        assert [e["version"] for e in log] == list(range(1, final["version"] + 1))
        fresh = TableService(client.http.application.extensions["escoba"].redis, cache_size=0)
        assert fresh.load(table_id).version == final["version"] and fresh.load(table_id).status == "finished"


def _started(client, base):
    table_id, tokens = _seated(client)
    version = client.ok(table_id, tokens[0], type="start")["version"]
    players = {seat: SocketPlayer(base, table_id, token) for seat, token in tokens.items()}
    for p in players.values():
        p.wait_for_version(version)
    return table_id, tokens, players


def test_a_move_id_repeated_on_a_new_socket_is_answered_and_not_applied_again(client, live):
    table_id, tokens, players = _started(client, live)
    turn = players[0].view["turn"]
    move = random_move(players[turn].view, random.Random(1))
    first = players[turn].ok(move, "lost-ack-1")
    players[turn].close()  # the ack was lost with the socket: the client sends the move again
    again = SocketPlayer(live, table_id, tokens[turn])
    repeat = again.move(move, "lost-ack-1")
    assert repeat == {"type": "ack", "id": "lost-ack-1", "version": first["version"]}
    assert _played(_log(client, table_id)) == 1
    assert again.view["version"] == first["version"]  # nothing new to see
    # the same id with another move still answers the first one (the key names the request)
    assert again.move({"type": "resign"}, "lost-ack-1")["version"] == first["version"]
    assert client.view(table_id)["status"] == "playing"
    for p in (again, players[1 - turn]):
        p.close()


def test_a_key_used_by_post_answers_the_socket_and_the_other_way(client, live):
    table_id, tokens, players = _started(client, live)
    turn = players[0].view["turn"]
    move = random_move(players[turn].view, random.Random(2))
    posted = client.move(table_id, tokens[turn], headers={"Idempotency-Key": "k-1"}, **move)
    assert posted.status_code == 200
    assert players[turn].move(move, "k-1") == {"type": "ack", "id": "k-1", "version": posted.get_json()["version"]}
    turn = 1 - turn
    players[turn].wait_for_version(posted.get_json()["version"])
    move = random_move(players[turn].view, random.Random(3))
    ack = players[turn].ok(move, "k-2")
    retried = client.move(table_id, tokens[turn], headers={"Idempotency-Key": "k-2"}, **move)
    assert retried.status_code == 200 and retried.get_json()["version"] == ack["version"]
    assert _played(_log(client, table_id)) == 2
    # a key is the seat's own: the other seat's same key is another request
    other = client.move(table_id, tokens[1 - turn], headers={"Idempotency-Key": "k-2"}, type="exit")
    assert other.status_code == 200 and other.get_json()["version"] > ack["version"]
    for p in players.values():
        p.close()


def test_refused_frames_change_nothing_and_leave_the_socket_open(client, live):
    table_id, tokens, players = _started(client, live)
    turn = players[0].view["turn"]
    me, other = players[turn], players[1 - turn]
    version = me.view["version"]
    ws = me.ws
    for raw in ("{not json", "[1, 2]", '"move"', json.dumps({"type": "chat", "id": "c1", "text": "hola"}),
                json.dumps({"type": "move", "move": {"type": "resign"}}),  # no id
                json.dumps({"type": "move", "id": "x" * 101, "move": {"type": "resign"}})):
        ws.send(raw)
        message = me.next_of("error")
        assert message["type"] == "error" and message["error"]["code"] == "bad_request", message
        assert set(message["error"]) == {"code", "message", "details"}
    assert message["id"] is None
    refusals = {
        "bad-type": ({"type": "fly"}, {}, "bad_request"),
        "bad-card": ({"type": "play", "card": "11o", "capture": []}, {}, "bad_request"),
        "stale": ({"type": "resign"}, {"expected_version": version - 1}, "version_conflict"),
        "inner-version": ({"type": "resign", "expected_version": version}, {"expected_version": version},
                          "bad_request"),
        "not-yours": ({"type": "play", "card": other.view["hand"][0], "capture": []}, {}, None),
    }
    for move_id, (move, extra, code) in refusals.items():
        answer = me.move(move, move_id, **extra)
        assert answer["type"] == "error" and answer["id"] == move_id, answer
        if code:
            assert answer["error"]["code"] == code, answer
    assert other.move(random_move(me.view, random.Random(0)), "wrong-turn")["error"]["code"] == "not_your_turn"
    assert client.view(table_id)["version"] == version  # nothing was appended
    # the socket still moves, and the other hears it
    ack = me.ok(random_move(me.view, random.Random(4)))
    assert other.wait_for_version(ack["version"])["version"] == ack["version"]
    for p in players.values():
        p.close()


def test_frames_sent_while_a_move_is_answered_are_all_answered_in_order(client, live, monkeypatch):
    # the handler spends the wake its move's own notice makes while the move is answered
    # (api/sockets/route.py): frames that came in the meantime must still be answered, unasked
    from api import moves

    decide, answering = moves.decide_move, threading.Event()

    def slow_decide(*args, **kwargs):
        answering.set()
        time.sleep(0.3)  # the late frames arrive while this move is answered
        return decide(*args, **kwargs)

    monkeypatch.setattr(moves, "decide_move", slow_decide)
    table_id, tokens, players = _started(client, live)
    turn = players[0].view["turn"]
    me, other = players[turn], players[1 - turn]
    # refused moves append nothing, so no notice wakes the socket: only its own frames do
    ids = [other.send(random_move(me.view, random.Random(7)), "first")]
    assert answering.wait(5)
    ids += [other.send({"type": "fly"}, f"late{i}") for i in range(3)]
    answers = []
    while len(answers) < len(ids):
        message = other.read()
        if message["type"] in ("ack", "error"):
            answers.append(message)
    assert [a["id"] for a in answers] == ids
    assert [a["error"]["code"] for a in answers] == ["not_your_turn"] + ["bad_request"] * 3
    ack = me.ok(random_move(me.view, random.Random(8)))  # and moves go on
    assert other.wait_for_version(ack["version"])["version"] == ack["version"]
    for p in players.values():
        p.close()


def test_a_spectators_move_is_forbidden(client, live):
    table_id, tokens, players = _started(client, live)
    spectator = SocketPlayer(live, table_id)
    answer = spectator.move({"type": "resign"}, "s1")
    assert answer["type"] == "error" and answer["error"]["code"] == "forbidden", answer
    assert client.view(table_id)["status"] == "playing" and _played(_log(client, table_id)) == 0
    for p in [spectator, *players.values()]:
        p.close()


def test_a_socket_move_logs_and_counts_as_a_post_with_its_transport(client, live, caplog):
    table_id, tokens, players = _started(client, live)
    turn = players[0].view["turn"]
    with caplog.at_level("INFO", logger="escoba.api"):
        ack = players[turn].ok(random_move(players[turn].view, random.Random(5)), "logged")
        refused = players[turn].move({"type": "start"}, "refused")
    lines = [dict(r.fields) for r in caplog.records if r.name == "escoba.api" and r.fields.get("method") == "WS"]
    assert len(lines) == 2
    for line in lines:
        assert line.pop("latency_ms") >= 0
    assert lines[0]["version"] == ack["version"]
    assert lines[0] == {"table_id": table_id, "transport": "socket", "command": "play", "version": ack["version"],
                        "seat": turn, "repeated": False, "outcome": "ok", "method": "WS",
                        "path": f"/tables/{table_id}/ws", "status": 200}
    code = refused["error"]["code"]
    posted = client.move(table_id, tokens[turn], type="start")  # the same refusal, by POST
    assert posted.get_json()["error"] == refused["error"]
    assert lines[1]["outcome"] == code and lines[1]["status"] == posted.status_code
    metrics = client.http.get("/metrics").get_data(as_text=True)
    assert 'escoba_moves_total{command="play",outcome="ok",transport="socket"} 1.0' in metrics
    assert f'escoba_moves_total{{command="start",outcome="{code}",transport="socket"}} 1.0' in metrics
    assert 'escoba_command_seconds_count{command="play",transport="socket"} 1.0' in metrics
    for p in players.values():
        p.close()


def test_socket_moves_and_posts_share_one_rate_limit_and_a_flood_is_closed(fake_redis, config):
    app = create_app(fake_redis, dataclasses.replace(config, rate_limits="on"))
    server = _serve(app)
    base = f"127.0.0.1:{server.server_port}"
    client = Client(app.test_client())
    try:
        table_id, tokens = _seated(client)
        flooder = SocketPlayer(base, table_id, tokens[1])
        n = int(limits.MOVES.split()[0])
        for i in range(n // 2):  # half by POST, half over the socket: one count
            assert client.move(table_id, tokens[1], type="start").status_code == 403
            assert flooder.move({"type": "start"}, f"f{i}")["error"]["code"] == "host_only"
        limited = client.move(table_id, tokens[1], type="start")
        assert limited.status_code == 429
        for i in range(STRIKES_MAX - 1):
            assert flooder.move({"type": "start"}, f"g{i}")["error"]["code"] == "rate_limited"
        flooder.send({"type": "start"}, "last")
        assert flooder.next_of("error")["error"]["code"] == "rate_limited"
        flooder.ws.settimeout(5)
        opcode, data = flooder.ws.recv_data(control_frame=True)
        assert opcode == websocket.ABNF.OPCODE_CLOSE and int.from_bytes(data[:2], "big") == 1008
        assert client.view(table_id)["version"] == 2  # nothing was appended
        # the host's own count is untouched
        assert client.move(table_id, tokens[0], type="start").status_code == 200
    finally:
        server.shutdown()


def test_the_operators_moves_limit_counts_socket_moves_and_posts_alike(fake_redis, config):
    app = create_app(fake_redis, dataclasses.replace(config, rate_limits="on", moves_limit="4 per minute"))
    server = _serve(app)
    client = Client(app.test_client())
    try:
        table_id, tokens = _seated(client)
        player = SocketPlayer(f"127.0.0.1:{server.server_port}", table_id, tokens[1])
        for i in range(2):
            assert client.move(table_id, tokens[1], type="start").status_code == 403
            assert player.move({"type": "start"}, f"m{i}")["error"]["code"] == "host_only"
        assert player.move({"type": "start"}, "fifth")["error"]["code"] == "rate_limited"
        player.close()
    finally:
        server.shutdown()


FRAMES = [
    {"type": "move", "id": "a", "move": {"type": "resign"}},
    {"type": "move", "id": "a" * 100, "move": {}, "expected_version": 0},
    {"type": "move", "id": "a", "move": {}, "expected_version": 2**53 - 1},
    {"type": "move", "id": "a" * 101, "move": {}},
    {"type": "move", "id": "", "move": {}},
    {"type": "move", "id": 7, "move": {}},
    {"type": "move", "id": "a", "move": []},
    {"type": "move", "id": "a"},
    {"type": "move", "id": "a", "move": {}, "expected_version": -1},
    {"type": "move", "id": "a", "move": {}, "expected_version": 2**53},
    {"type": "move", "id": "a", "move": {}, "expected_version": True},
    {"type": "move", "id": "a", "move": {}, "expected_version": 1.0},
    {"type": "move", "id": "a", "move": {}, "expected_version": "1"},
    {"type": "move", "id": "a", "move": {}, "extra": 1},
    {"type": "moves", "id": "a", "move": {}},
    {"id": "a", "move": {}},
]


@pytest.mark.parametrize("frame", FRAMES)
def test_the_hand_check_of_a_frame_takes_what_the_schema_takes(frame):
    from marshmallow import ValidationError

    from api.http.schemas import socket_move
    from api.sockets.moves import _checked

    def outcome(check):
        try:
            return check(dict(frame))
        except ValidationError:
            return "refused"

    assert outcome(_checked) == outcome(socket_move.load)


def test_a_socket_move_builds_each_readers_view_once_and_needs_no_get(client, live, app):
    table_id, tokens, players = _started(client, live)
    frames = app.extensions["escoba"].frames
    turn = players[0].view["turn"]
    mover, other = players[turn], players[1 - turn]
    before = frames.built
    ack = mover.ok(random_move(mover.view, random.Random(6)))
    assert mover.next_of("table")["version"] == ack["version"]  # the mover's view, right after its ack
    assert other.wait_for_version(ack["version"])["version"] == ack["version"]
    assert frames.built - before == 2  # the mover's view and the other's, each built once
    for p in players.values():
        p.close()
