"""Two ``escoba serve`` processes on one deployment, on one Redis and on a Redis Cluster
(REDIS_URL names one node; RQ on its own Redis): whole games over HTTP through both,
fan-out across them, idempotent retries across them, ``escoba replay`` from the store."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import websocket

from ...conftest import TOPOLOGIES, make_topology
from ...redis_servers import free_port
from ..conftest import Client, play_out, recv
from ..socket_player import SocketPlayer, play_over_sockets, random_move

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.integration


class Answer:
    """What the Flask test client's responses offer: ``status_code`` and ``get_json()``."""

    def __init__(self, status: int, body: bytes, headers):
        self.status_code = status
        self.body = body
        self.headers = headers

    def get_json(self):
        return json.loads(self.body)


class Http:
    """``post``/``get`` like Flask's test client, over real HTTP, to one of several processes
    in turn (each request goes to the next one)."""

    def __init__(self, ports: list[int]):
        self.ports = ports
        self.sent = 0

    def _port(self) -> int:
        port = self.ports[self.sent % len(self.ports)]
        self.sent += 1
        return port

    def request(self, method: str, path: str, json_body=None, headers=None, port=None) -> Answer:
        data = None if json_body is None else json.dumps(json_body).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port or self._port()}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                return Answer(r.status, r.read(), r.headers)
        except urllib.error.HTTPError as e:
            return Answer(e.code, e.read(), e.headers)

    def post(self, path, json=None, headers=None, port=None):
        return self.request("POST", path, json, headers, port)

    def get(self, path, headers=None, port=None):
        return self.request("GET", path, None, headers, port)


class Pair:
    def __init__(self, topology, ports, procs):
        self.topology = topology
        self.ports = ports
        self.procs = procs


def _wait_healthy(port: int, proc: subprocess.Popen, log) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            raise AssertionError(f"escoba serve on {port} exited: {log.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"API on port {port} did not come up")


@pytest.fixture(scope="module", params=TOPOLOGIES)
def pair(request, tmp_path_factory):
    """Two API processes on the topology, for the module."""
    topology = make_topology(request, request.param)
    env = {**os.environ, **topology.env, "PYTHONPATH": str(ROOT), "ESCOBA_RATE_LIMITS": "off",
           "ESCOBA_BOT_DELAY": "0"}
    ports = [free_port(), free_port()]
    # the production default: gunicorn's gevent worker (api/server/serve.py)
    serve = ["serve"]
    # each process's log to a file: a pipe nobody reads fills (64 KB of log lines, a request a line) and the
    # server then blocks on its next line, in a move or at shutdown (a 30 s teardown on the cluster: 15 s a
    # process before it was killed)
    logs = [tmp_path_factory.mktemp("serve").joinpath("log").open("w+b") for _ in ports]
    procs = [subprocess.Popen([sys.executable, "-m", "api.cli", *serve, "--port", str(p)],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
             for p, log in zip(ports, logs, strict=True)]
    try:
        for port, proc, log in zip(ports, procs, logs, strict=True):
            _wait_healthy(port, proc, log)
        yield Pair(topology, ports, procs)
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for log in logs:
            log.close()


def test_whole_games_through_both_processes(pair):
    client = Client(Http(pair.ports))  # every request goes to the other process than the last
    tables = []
    for seed in range(2):
        host = client.create(preset="del15", settings={"target": 10})
        guest = client.sit(host["table_id"])
        client.ok(host["table_id"], host["token"], type="start")
        final = play_out(client, host["table_id"], {0: host["token"], 1: guest["token"]}, random.Random(seed))
        assert final["status"] == "finished" and final["winners"]
        tables.append((host["table_id"], final["version"]))
    feed = client.http.get(f"/tables/{tables[0][0]}/events?limit=1000").get_json()  # a whole game: one page
    assert not feed["more"]
    events = feed["events"]
    assert [e["version"] for e in events] == list(range(1, tables[0][1] + 1))


def test_a_socket_on_one_process_hears_moves_made_through_the_other(pair):
    a, b = pair.ports
    client = Client(Http([b]))
    for _ in range(3):  # tables in several slots (on a cluster: likely several shards)
        host = client.create(preset="del15")
        tid = host["table_id"]
        ws = websocket.create_connection(f"ws://127.0.0.1:{a}/tables/{tid}/ws?token={host['token']}", timeout=10)
        try:
            assert recv(ws, "table")["version"] == 1
            guest = client.sit(tid, port=b)
            seen = recv(ws, "table")
            while seen["version"] < 2:
                seen = recv(ws, "table")
            assert seen["table"]["seats"][guest["seat"]]["name"] == "Bea"
            client.ok(tid, host["token"], type="start")
            started = recv(ws, "table")
            while started["table"]["status"] != "playing":
                started = recv(ws, "table")
            assert started["version"] >= 3
        finally:
            ws.close()


def test_an_idempotent_retry_through_the_other_process_is_applied_once(pair):
    a, b = pair.ports
    http = Http([a])
    client = Client(http)
    host = client.create(preset="del15")
    tid = host["table_id"]
    guest = client.sit(tid)
    client.ok(tid, host["token"], type="start")
    state = client.view(tid, host["token"])
    turn_token = host["token"] if state["turn"] == 0 else guest["token"]
    mine = client.view(tid, turn_token)
    option = mine["options"][0]
    move = {"type": "play", "card": option["card"], "capture": option["captures"][0] if option["captures"] else []}
    headers = {"Authorization": f"Bearer {turn_token}", "Idempotency-Key": "retry-1"}
    first = http.post(f"/tables/{tid}/moves", json=move, headers=headers, port=a)
    again = http.post(f"/tables/{tid}/moves", json=move, headers=headers, port=b)
    assert first.status_code == again.status_code == 200
    assert first.get_json()["version"] == again.get_json()["version"]
    played = [e for e in http.get(f"/tables/{tid}/events", port=b).get_json()["events"]
              if e["type"] in ("CardPlayed", "FifteenTaken")]
    assert len(played) == 1


def test_escoba_replay_reads_a_table_from_the_store(pair):
    client = Client(Http(pair.ports))
    host = client.create(preset="del15")
    client.sit(host["table_id"])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "REDIS_URL": pair.topology.tables_url}
    # (``--``: a table id may begin with "-")
    out = subprocess.run([sys.executable, "-m", "api.cli", "replay", "--", host["table_id"]], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "TableOpened" in out.stdout and "PlayerSeated" in out.stdout
    assert out.stdout.strip().splitlines()[-1].startswith("version 2:")


def test_chat_posted_through_one_process_reaches_a_socket_on_the_other(pair):
    a, b = pair.ports
    http = Http([b])
    host = Client(http).create(preset="del15")
    tid = host["table_id"]
    ws = websocket.create_connection(f"ws://127.0.0.1:{a}/tables/{tid}/ws?token={host['token']}", timeout=10)
    try:
        recv(ws, "table")
        auth = {"Authorization": f"Bearer {host['token']}"}
        r = http.post(f"/tables/{tid}/chat", json={"text": "hola"}, headers=auth)
        assert r.status_code == 201, r.get_json()
        line = recv(ws, "chat")["line"]
        assert line["text"] == "hola" and line["seat"] == 0
    finally:
        ws.close()


def test_whole_games_over_sockets_through_both_processes(pair):
    """Every move over a socket: the host's socket on one process, the guest's on the other."""
    a, b = pair.ports
    client = Client(Http([a, b]))
    host = client.create(preset="del15", settings={"target": 10})
    tid = host["table_id"]
    guest = client.sit(tid)
    # the guest's socket takes patches: its process builds them from the changes the other one's moves
    # notify (a version it missed, its whole view)
    players = {0: SocketPlayer(f"127.0.0.1:{a}", tid, host["token"]),
               1: SocketPlayer(f"127.0.0.1:{b}", tid, guest["token"], patches=True)}
    try:
        started = players[0].ok({"type": "start"})
        final = play_over_sockets(players, random.Random(11), started["version"])
        assert final["status"] == "finished" and final["winners"]
        fetched = client.view(tid, guest["token"])
        assert {**players[1].view, "labels": None} == {**fetched, "labels": None} and players[1].patched > 20
        assert {c: players[1].view["labels"].get(c) for c in fetched["labels"]} == fetched["labels"]
    finally:
        for p in players.values():
            p.close()
    events = client.http.get(f"/tables/{tid}/events?limit=1000").get_json()["events"]
    assert [e["version"] for e in events] == list(range(1, final["version"] + 1))


def test_mixed_post_and_socket_moves_never_fork_the_log(pair):
    """Each move by POST (to either process) or over a socket, and now and then the same move both
    ways at once under two keys: one of the two is applied, the other refused, and the log runs on
    with no gap to the state every socket was sent."""
    a, b = pair.ports
    http = Http([a, b])
    client = Client(http)
    host = client.create(preset="del15", settings={"target": 10})
    tid = host["table_id"]
    guest = client.sit(tid)
    tokens = {0: host["token"], 1: guest["token"]}
    players = {0: SocketPlayer(f"127.0.0.1:{a}", tid, tokens[0]), 1: SocketPlayer(f"127.0.0.1:{b}", tid, tokens[1])}
    rng = random.Random(5)
    version = client.ok(tid, tokens[0], type="start")["version"]
    applied = raced = 0
    try:
        for n in range(400):
            view = players[0].wait_for_version(version)
            players[1].wait_for_version(version)
            if view["status"] == "finished":
                break
            seat = view["turn"] if view["status"] == "playing" else rng.choice([0, 1])
            move = random_move(players[seat].view, rng) if view["status"] == "playing" else {"type": "next_round"}
            way = rng.choice(["post", "socket", "both"])
            results = {}

            def by_post(seat=seat, move=move, n=n, results=results):
                r = http.post(f"/tables/{tid}/moves", json=move, port=rng.choice([a, b]),
                              headers={"Authorization": f"Bearer {tokens[seat]}", "Idempotency-Key": f"p{n}"})
                results["post"] = r.get_json()["version"] if r.status_code == 200 else r.get_json()["error"]["code"]

            if way in ("post", "both"):
                poster = threading.Thread(target=by_post)
                poster.start()
            if way in ("socket", "both"):
                answer = players[seat].move(move, f"s{n}")
                results["socket"] = answer["version"] if answer["type"] == "ack" else answer["error"]["code"]
            if way in ("post", "both"):
                poster.join(20)
            won = [v for v in results.values() if isinstance(v, int)]
            assert len(won) == 1, results  # never both, never neither
            raced += way == "both"
            applied += move["type"] != "next_round"
            version = won[0]
        assert view["status"] == "finished" and raced > 5
    finally:
        for p in players.values():
            p.close()
    events = http.get(f"/tables/{tid}/events?limit=1000").get_json()["events"]
    assert [e["version"] for e in events] == list(range(1, version + 1))
    assert sum(e["type"] in ("CardPlayed", "FifteenTaken") for e in events) == applied  # each move once
    for port in (a, b):  # both processes read the same table from the log
        assert Client(Http([port])).view(tid)["version"] == version
