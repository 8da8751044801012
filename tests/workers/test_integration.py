"""A real ``python -m workers.cli worker`` on the real Redis, with timers of a second or two.

Runs in database 13 of the suite's own Redis (``redis_server``), emptied before and
after, since the RQ queue and the table index are per database.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis as redis_lib

from events.config import Config
from events.service import TableService
from workers import scheduling

from .conftest import start_bots_only
from .receiver import Receiver

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
FAST = {"ESCOBA_BOT_DELAY": "0.05", "ESCOBA_AWAY_AFTER": "1", "ESCOBA_EXPIRE_AFTER": "2"}


@pytest.fixture
def url(redis_server):
    return redis_server.url_db(13)


@pytest.fixture
def rdb(url):
    client = redis_lib.Redis.from_url(url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


class WorkerProcess:
    """``python -m workers.cli worker`` in its own session, so its scheduler child goes too."""

    def __init__(self, tmp_path: Path, url: str, settings: dict, name: str = "worker"):
        env = {**os.environ, "REDIS_URL": url, "PYTHONPATH": str(ROOT), **settings}
        self.log = tmp_path / f"{name}.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "workers.cli", "worker"], cwd=ROOT, env=env,
            stdout=self.log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self, sig=signal.SIGTERM) -> None:
        with contextlib.suppress(ProcessLookupError):  # the group: the worker and its children
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


@pytest.fixture
def start_worker(tmp_path, url):
    started = []

    def start(settings=FAST, name="worker"):
        w = WorkerProcess(tmp_path, url, settings, f"{name}{len(started)}")
        started.append(w)
        return w

    yield start
    for w in started:
        w.stop()


def _url_of(rdb) -> str:
    kw = rdb.connection_pool.connection_kwargs
    return f"redis://{kw['host']}:{kw['port']}/{kw['db']}"


def _service(rdb, settings=FAST) -> tuple[TableService, Config]:
    config = Config.from_env({"REDIS_URL": _url_of(rdb), **settings})
    return TableService(rdb, on_change=scheduling.on_change_hook(rdb, config)), config


def _open(svc, bots=("tito",)) -> str:
    tid, _ = svc.create({"type": "open", "name": "it", "preset": "del15",
                         "settings": {"target": 10}, "player": "p0", "host_name": "Ana"})
    for bot in bots:
        svc.execute(tid, {"type": "add_bot", "by": 0, "bot": bot}, actor="seat:0")
    return tid


def _bots_only(svc) -> str:
    return start_bots_only(svc, bots=("carmen", "tito"))


def _wait(predicate, timeout: float, what: str, worker=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    log = worker.log.read_text()[-3000:] if worker is not None else ""
    raise AssertionError(f"timed out waiting for {what}\n{log}")


def _types(svc, tid):
    return [r["type"] for r in svc.records(tid)]


def _at(svc, tid, kind):
    return [scheduling.parse_at(r["at"]) for r in svc.records(tid) if r["type"] == kind]


def test_worker_drives_bots_opens_away_and_expires(rdb, start_worker):
    svc, _ = _service(rdb)
    worker = start_worker()
    bots = _bots_only(svc)
    human = _open(svc)
    svc.execute(human, {"type": "start", "by": 0}, actor="seat:0")

    _wait(lambda: svc.load(bots).status == "finished", 120, "the bots-only game", worker)
    assert svc.load(bots).ended_by == "target"

    _wait(lambda: "TableExpired" in _types(svc, human), 30, "the human table to expire", worker)
    records = svc.records(human)
    types = [r["type"] for r in records]
    assert types.count("AwayOpened") == 1 and types.count("TableExpired") == 1
    assert types.index("AwayOpened") < types.index("TableExpired")
    moves = [r for r in records if r["type"] not in scheduling.NOT_MOVES]
    turn_start = [r for r in records if r["type"] in scheduling.TURN_STARTS][-1]
    away_at, expired_at = _at(svc, human, "AwayOpened")[0], _at(svc, human, "TableExpired")[0]
    assert away_at - scheduling.parse_at(turn_start["at"]) >= 1.0  # never early
    assert expired_at - scheduling.parse_at(moves[-1]["at"]) >= 2.0
    assert scheduling.pending_jobs(rdb, human) == []


def test_reconciler_recovers_every_timer_after_the_worker_is_killed(rdb, start_worker):
    svc, config = _service(rdb)
    worker = start_worker()
    bots = _bots_only(svc)
    _wait(lambda: svc.load(bots).version >= 25, 60, "the bots to get going", worker)
    worker.kill()  # SIGKILL, mid-game, maybe mid-job
    mid = svc.load(bots)
    assert mid.status != "finished"
    human = _open(svc)
    svc.execute(human, {"type": "start", "by": 0}, actor="seat:0")
    time.sleep(0.3)
    # and Redis loses every RQ key: scheduled jobs, the queue, job hashes, the scheduler lock
    for key in rdb.scan_iter("rq:*"):
        rdb.delete(key)
    assert scheduling.pending_jobs(rdb, bots) == [] and scheduling.pending_jobs(rdb, human) == []

    env = {**os.environ, "REDIS_URL": _url_of(rdb), "PYTHONPATH": str(ROOT), **FAST}
    out = subprocess.run([sys.executable, "-m", "workers.cli", "reconcile"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    state = svc.load(human)
    mid = svc.load(bots)
    # rebuilt from the log: lazy timers (away, expire) named by their due second, bots by version
    wanted_human = {t.job_id for t in scheduling.timers_from_log(rdb, human, state, config).values()}
    assert any("_expire_" in j for j in wanted_human)
    assert f"{human}_bot_{state.version}" in wanted_human or state.turn == 0
    wanted_bots = {t.job_id for t in scheduling.timers_from_log(rdb, bots, mid, config).values()}
    assert f"{bots}_bot_{mid.version}" in wanted_bots
    assert wanted_human | wanted_bots <= set(summary["scheduled"])
    assert set(scheduling.pending_jobs(rdb, human)) == wanted_human
    assert set(scheduling.pending_jobs(rdb, bots)) == wanted_bots

    worker2 = start_worker(name="after")
    _wait(lambda: svc.load(bots).status == "finished", 120, "the bots game to finish", worker2)
    _wait(lambda: "TableExpired" in _types(svc, human), 30, "the human table to expire", worker2)
    assert _types(svc, human).count("AwayOpened") == 1
    assert _types(svc, bots).count("TableExpired") == 0


def test_turn_notice_reaches_a_receiver_after_two_failures(rdb, start_worker):
    slow = {"ESCOBA_BOT_DELAY": "0.05", "ESCOBA_AWAY_AFTER": "60", "ESCOBA_EXPIRE_AFTER": "120",
            "ESCOBA_NOTIFY_ALLOW_PRIVATE": "1"}  # the receiver listens on 127.0.0.1
    svc, _ = _service(rdb, slow)
    with Receiver(statuses=[500, 500]) as rx:
        worker = start_worker(slow)
        tid = _open(svc)
        rdb.hset(scheduling.notify_key(tid), "0", rx.url)
        svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0")
        _wait(lambda: rx.delivered, 30, "the turn notice", worker)
        assert len(rx.attempts) == 3
        notice = rx.delivered[0]
        state = svc.load(tid)
        assert notice == {"table_id": tid, "seat": 0, "version": notice["version"], "turn": 0}
        assert notice["version"] <= state.version and state.turn == 0
