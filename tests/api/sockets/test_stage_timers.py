"""bench/latency.py's stage timers (events/stages.py): off, nothing is kept; on, a socket move's marks
come in the order its path runs them, the opponent's frame written before the change hook."""

from __future__ import annotations

import threading
import time

import pytest
from werkzeug.serving import make_server

from events import stages

from ..conftest import Client
from ..socket_player import SocketPlayer


@pytest.fixture
def served(app):
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield Client(app.test_client()), f"127.0.0.1:{server.server_port}"
    server.shutdown()


def _a_socket_move(served) -> tuple[SocketPlayer, SocketPlayer]:
    client, base = served
    host = client.create(preset="del15")
    guest = client.sit(host["table_id"])
    players = [SocketPlayer(base, host["table_id"], host["token"]),
               SocketPlayer(base, host["table_id"], guest["token"])]
    started = players[0].ok({"type": "start"})
    assert players[1].wait_for_version(started["version"])["version"] == started["version"]
    return players[0], players[1]


def test_off_the_timers_keep_nothing(served, monkeypatch):
    monkeypatch.setattr(stages, "_out", type(stages._out)())
    assert not stages.ON  # no ESCOBA_STAGE_TIMES in the tests' environment
    for player in _a_socket_move(served):
        player.close()
    assert list(stages._out) == []


def test_on_a_socket_moves_marks_come_in_its_paths_order(served, monkeypatch):
    monkeypatch.setattr(stages, "ON", True)
    monkeypatch.setattr(stages, "_out", type(stages._out)())
    for player in _a_socket_move(served):
        player.close()
    # the move's row is kept once its last frame is written: the server's thread may still be on its way
    # there when the client has read the ack
    deadline = time.monotonic() + 5
    while not any(row[0] == "move" for row in stages._out) and time.monotonic() < deadline:
        time.sleep(0.01)
    moves = [row[1] for row in stages._out if row[0] == "move"]
    assert len(moves) == 1
    # the move's table and version, by which bench/latency.py finds its client's span
    [tags] = [row[2] for row in stages._out if row[0] == "move"]
    assert len(tags) == 1 and isinstance(tags[0][0], str) and tags[0][1] >= 2
    names = [name for name, _ in moves[0]]
    # the threaded server's reader thread reads the frames: no "read" mark (gevent's handler reads its own)
    assert names == ["wake", "checked", "decided", "appended", "fanout", "hooked", "written"]
    times = [t for _, t in moves[0]]
    assert times == sorted(times)
