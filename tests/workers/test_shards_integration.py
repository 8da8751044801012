"""Two queue shards on real Redises, on both topologies, through the whole deployment: two
``escoba serve`` processes (every request to the other process than the last) and two workers,
``escoba worker --shard 0`` and ``--shard 1``. Bots-only games and games of a person against a
bot are played whole over HTTP; tables left on a person's turn open PLAYER AWAY and expire;
every closed table is compacted; on both shards. Every job a queue Redis received (its MONITOR)
belongs to a table of that shard, and each shard received every kind of timer.

The timers are made short through the operators' settings (``ESCOBA_AWAY_AFTER`` etc.), as the
suite does elsewhere; each wait is bounded."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
import redis

from events import compaction
from events.connection import queue_shard

from ..redis_servers import free_port, start_plain
from .chaos import ROOT, Worker, wait

pytestmark = pytest.mark.integration

SETTINGS = {"ESCOBA_BOT_DELAY": "0.05", "ESCOBA_AWAY_AFTER": "3", "ESCOBA_EXPIRE_AFTER": "5",
            "ESCOBA_REMATCH_WINDOW": "1", "ESCOBA_COMPACT_AFTER": "1", "ESCOBA_RATE_LIMITS": "off"}
KINDS = ("bot", "away", "expire", "rematch", "compact")  # the timers every shard must have run


class Received:
    """The job ids pushed onto a queue Redis's ``escoba`` queue, read from its MONITOR."""

    def __init__(self, port: int):
        self.ids: list[str] = []
        self._monitor = redis.Redis(port=port).monitor()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        with contextlib.suppress(Exception), self._monitor as m:
            for cmd in m.listen():
                parts = cmd["command"].split()
                if len(parts) >= 3 and parts[0] in ("RPUSH", "LPUSH") and parts[1] == "rq:queue:escoba":
                    job_id = parts[2]
                    if not job_id.startswith("escoba_reconcile_"):  # each shard's own, not a table's
                        self.ids.append(job_id)


class Api:
    """HTTP to several ``escoba serve`` processes, each request to the next one."""

    def __init__(self, ports: list[int]):
        self.ports, self.sent = ports, 0
        self._lock = threading.Lock()

    def call(self, method: str, path: str, body=None, token: str | None = None, key: str | None = None):
        with self._lock:
            port = self.ports[self.sent % len(self.ports)]
            self.sent += 1
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if key:
            headers["Idempotency-Key"] = key
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, headers=headers,
                                     data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def ok(self, method: str, path: str, body=None, token=None, key=None, want=(200, 201)):
        status, answer = self.call(method, path, body, token, key)
        assert status in want, (method, path, body, status, answer)
        return answer

    def open(self, *, watch: bool, bots: tuple) -> tuple[str, str]:
        made = self.ok("POST", "/tables", {"name": "Ana", "preset": "del15", "settings": {"target": 10},
                                           "watch": watch})
        tid, token = made["table_id"], made["token"]
        for bot in bots:
            self.ok("POST", f"/tables/{tid}/moves", {"type": "add_bot", "bot": bot}, token)
        self.ok("POST", f"/tables/{tid}/moves", {"type": "start"}, token)
        return tid, token

    def view(self, tid: str, token: str | None = None) -> dict:
        return self.ok("GET", f"/tables/{tid}", token=token)

    def types(self, tid: str) -> list[str]:
        return [e["type"] for e in self.ok("GET", f"/tables/{tid}/events?limit=1000")["events"]]


def _serve(port: int, env: dict, log) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "api.cli", "serve", "--port", str(port)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **env}, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def _healthy(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
        return r.status == 200


def _play_whole_game(api: Api, tid: str, token: str, rng: random.Random, errors: list, limit: float = 240) -> None:
    """The person at seat 0 plays random legal moves, each keyed, until the game is over."""
    try:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            view = api.view(tid, token)
            if view["status"] in ("finished", "expired"):
                return
            key = f"h{view['version']}"
            if view["status"] == "round_over":
                api.ok("POST", f"/tables/{tid}/moves", {"type": "next_round"}, token, key, want=(200, 409))
            elif view["status"] == "playing" and view["turn"] == 0 and view["options"]:
                option = rng.choice(view["options"])
                capture = rng.choice(option["captures"]) if option["captures"] else []
                api.ok("POST", f"/tables/{tid}/moves", {"type": "play", "card": option["card"], "capture": capture},
                       token, key, want=(200, 409))
            else:
                time.sleep(0.05)
        raise AssertionError(f"the game at {tid} did not end within {limit} s")
    except Exception as exc:  # reported by the test
        errors.append(exc)


def _on_each_shard(make, count: int = 2) -> list:
    """``make()`` (a table id first) until each of ``count`` shards has one; every one made."""
    made, shards = [], set()
    while shards != set(range(count)):
        assert len(made) < 40, "no table landed on every shard"
        made.append(make())
        shards.add(queue_shard(made[-1][0], count))
    return made


@pytest.fixture
def deployment(topology, tmp_path):
    """Two queue shards, two API processes and ``escoba worker --shard 0`` and ``--shard 1`` on
    ``topology``'s tables' store: (Api, the queue servers, the tables' client, logs)."""
    topology.flush()
    queues = [start_plain(tmp_path / f"q{i}") for i in range(2)]
    env = {**topology.env, "ESCOBA_QUEUE_URL": ",".join(q.url for q in queues), **SETTINGS}
    ports = [free_port(), free_port()]
    logs = [tmp_path / f"api{i}.log" for i in range(2)]
    apis = [_serve(p, env, log.open("w")) for p, log in zip(ports, logs, strict=True)]
    workers = [Worker(tmp_path / f"w{i}.log", env, ("--shard", str(i))) for i in range(2)]
    logs += [w.log for w in workers]
    b = topology.backends()
    try:
        from rq import Worker as RQWorker

        wait(lambda: all(_healthy(p) for p in ports), 60, "the API processes", logs)
        wait(lambda: all(RQWorker.all(connection=q.client()) for q in queues), 60, "the workers", logs)
        yield Api(ports), queues, b.tables, logs
    finally:
        for proc in apis:
            # SIGINT: gunicorn's quick shutdown (SIGTERM's graceful one outwaited the 15 s below)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGINT)
        for w in workers:
            w.stop()
        for proc in apis:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
        b.close()
        for q in queues:
            q.stop()
        topology.flush()


def test_two_api_processes_and_a_worker_per_shard_play_and_time_out_each_shards_tables_on_it(deployment):
    api, queue_servers, tables, logs = deployment
    received = [Received(q.port) for q in queue_servers]
    started = time.monotonic()
    bots = _on_each_shard(lambda: api.open(watch=True, bots=("carmen", "tito")))
    games = _on_each_shard(lambda: api.open(watch=False, bots=("tito",)))
    errors: list = []
    players = [threading.Thread(target=_play_whole_game, args=(api, tid, token, random.Random(i), errors), daemon=True)
               for i, (tid, token) in enumerate(games)]
    for p in players:
        p.start()
    # left on the person's turn: PLAYER AWAY opens, then the table expires
    left = _on_each_shard(lambda: api.open(watch=False, bots=("tito",)))
    wait(lambda: all(api.view(t)["status"] == "finished" for t, _ in bots), 240, "the bots' games", logs)
    for p in players:
        p.join(240)
    assert not errors, errors
    assert all(api.view(t)["status"] == "finished" for t, _ in games)
    wait(lambda: all(api.view(t)["status"] == "expired" for t, _ in left), 60, "the left tables to expire", logs)
    every = [t for t, _ in bots + games + left]
    wait(lambda: all(compaction.is_compacted(tables, t) for t in every), 60, "every closed table compacted", logs)
    elapsed = time.monotonic() - started

    for tid, _ in left:
        types = api.types(tid)
        assert types.count("AwayOpened") == 1 and types[-1] == "TableExpired", types
    for tid, _ in games:
        assert "RematchLapsed" in api.types(tid)
    time.sleep(0.5)  # the monitors' last lines
    for shard, got in enumerate(received):
        assert got.ids, f"shard {shard} received no job"
        assert {queue_shard(j[:8], 2) for j in got.ids} == {shard}, f"shard {shard} got another shard's job"
        kinds = {j[9:].split("_")[0] for j in got.ids}
        assert set(KINDS) <= kinds, (shard, kinds)
    seen = {j[:8] for got in received for j in got.ids}
    assert set(every) <= seen  # every table's jobs went somewhere: to its own shard
    print(f"\n{len(every)} tables on two shards, whole games and timers through two API processes: {elapsed:.1f} s")
