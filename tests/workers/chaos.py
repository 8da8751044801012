"""Faults on the suite's own servers while bots play and timers run, and how long until every
table moves again. Shared by tests/workers/test_survival.py and bench/chaos.py.

A ``Scene`` is a deployment the caller started (its servers, ``escoba worker`` processes
started here with ``python -m workers.cli worker``): bots-only games, a table where a human
(this module, through TableService, retrying a move with its idempotency key while the store
is away, as a client does) plays a bot, and a table whose PLAYER AWAY timer falls due while
a store is down. ``resume`` measures, from a moment (a store back, a worker killed), how long
until every bot table has moved again and the away timer has fired.
"""

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
from dataclasses import dataclass, field
from pathlib import Path

import engine
from events.config import Config
from events.connection import store_down
from events.service import TableService
from workers import scheduling

from .conftest import start_bots_only

ROOT = Path(__file__).resolve().parents[2]
# bots move every 0.05 s; PLAYER AWAY opens 3 s into a human's turn (falls due inside the outage)
FAST = {"ESCOBA_BOT_DELAY": "0.05", "ESCOBA_AWAY_AFTER": "3", "ESCOBA_EXPIRE_AFTER": "3600"}
RESUME_LIMIT = 10.0  # seconds: the goal, from the store being back


class Worker:
    """``python -m workers.cli worker [args]`` in its own session (its job processes go with it)."""

    def __init__(self, log: Path, env: dict, args: tuple = ()):
        self.log = log
        self.proc = subprocess.Popen([sys.executable, "-m", "workers.cli", "worker", *args], cwd=ROOT,
                                     env={**os.environ, "PYTHONPATH": str(ROOT), **env},
                                     stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def kill(self) -> None:
        self.stop(signal.SIGKILL)


def wait(predicate, timeout: float, what: str, logs=()) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):  # a store still coming back
            if predicate():
                return
        time.sleep(0.05)
    tail = "\n".join(p.read_text()[-3000:] for p in logs if p.exists())
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def _retrying(call, limit: float = 60.0):
    """``call()`` again while the store is away (a client's retry), at most ``limit`` s."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return call()
        except Exception as exc:
            if not store_down(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@dataclass
class Human:
    """Plays seat 0 of a table against a bot in a thread, each move keyed by its turn and retried
    with the same key while the store is away; ``acknowledged``: the moves the store answered."""

    svc: TableService
    table_id: str
    acknowledged: list = field(default_factory=list)  # (round, card)
    errors: list = field(default_factory=list)
    answered: list = field(default_factory=list)  # time.monotonic() of each acknowledged move

    def __post_init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Human:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    state = self.svc.load(self.table_id)
                except Exception as exc:
                    if not store_down(exc):
                        raise
                    time.sleep(0.1)
                    continue
                if state.status == "finished":
                    return
                if state.status == "round_over":  # no bot deals the next round at a human's table
                    _retrying(lambda r=state.round: self.svc.execute(
                        self.table_id, {"type": "next_round", "by": 0}, actor="seat:0", idempotency_key=f"next:{r}"))
                    continue
                if state.status != "playing" or state.turn != 0:
                    time.sleep(0.03)
                    continue
                option = engine.view(state, 0)["options"][0]
                command = {"type": "play", "by": 0, "card": option["card"],
                           "capture": list(option["captures"][0]) if option.get("captures") else []}
                key = f"human:{state.turn_seq}"
                _retrying(lambda c=command, k=key: self.svc.execute(self.table_id, c, actor="seat:0",
                                                                    idempotency_key=k))
                self.acknowledged.append((state.round, command["card"]))
                self.answered.append(time.monotonic())
                time.sleep(0.05)
        except Exception as exc:  # reported by the test, never swallowed
            self.errors.append(exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    def check(self) -> None:
        """Every acknowledged move is in the log exactly once (and no other move of seat 0)."""
        assert not self.errors, self.errors
        rounds = _rounds(self.svc, self.table_id)
        plays = [(rounds[r["version"]], r["data"]["card"]) for r in self.svc.records(self.table_id)
                 if r["type"] == "CardPlayed" and r["data"]["seat"] == 0]
        assert sorted(plays) == sorted(self.acknowledged), (plays, self.acknowledged)


def _rounds(svc, table_id) -> dict[int, int]:
    """version -> the round in play then, from the RoundDealt records."""
    out, current = {}, 0
    for r in svc.records(table_id):
        if r["type"] == "RoundDealt":
            current = r["data"]["round"]
        out[r["version"]] = current
    return out


@dataclass
class Scene:
    """Tables in play on a deployment: ``svc`` on its tables' store."""

    svc: TableService
    config: Config
    bots: list = field(default_factory=list)
    away: list = field(default_factory=list)
    humans: list = field(default_factory=list)

    @classmethod
    def on(cls, tables, settings: dict = FAST, replica_acks: int = 0) -> Scene:
        config = Config.from_env(settings)
        return cls(TableService(tables, on_change=scheduling.on_change_hook(tables, config), cache_size=0,
                                replica_acks=replica_acks), config)

    def open_bots(self, n: int) -> None:
        # Luna thinks some 100 ms a move: a worker killed while bots play is caught mid-job
        self.bots += [start_bots_only(self.svc, ("luna", "tito"), target=21) for _ in range(n)]

    def open_human(self, where=None) -> Human:
        """A person playing a bot; ``where(table_id)`` true: a table it accepts (tries new ones)."""
        tid = self._human_vs_bot()
        for _ in range(60):
            if where is None or where(tid):
                break
            tid = self._human_vs_bot()
        human = Human(self.svc, tid).start()
        self.humans.append(human)
        return human

    def open_away(self) -> str:
        """A human's turn opens now: PLAYER AWAY falls due ``ESCOBA_AWAY_AFTER`` s on."""
        tid = self._human_vs_bot()
        wait(lambda: self.svc.load(tid).turn == 0, 30, "the human's turn")
        self.away.append(tid)
        return tid

    def _human_vs_bot(self) -> str:
        tid, _ = self.svc.create({"type": "open", "name": "chaos", "preset": "del15", "settings": {"target": 21},
                                  "player": f"p{random.randrange(10**9)}", "host_name": "Ana"})
        self.svc.execute(tid, {"type": "add_bot", "by": 0, "bot": "tito"}, actor="seat:0")
        self.svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0")
        return tid

    def versions(self) -> dict[str, int]:
        return {tid: _retrying(lambda t=tid: self.svc.load(t).version) for tid in self.bots}

    def resume(self, since: float, before: dict[str, int], limit: float = 60.0, logs=(),
               queue=None) -> dict[str, float]:
        """Seconds from ``since`` (time.monotonic) until each bot table moved past ``before`` (or
        finished) and each away table's PLAYER AWAY opened; raises after ``limit`` s."""
        moved: dict[str, float] = {}
        deadline = since + limit
        while time.monotonic() < deadline:
            for tid in self.bots:
                if tid not in moved:
                    with contextlib.suppress(Exception):
                        state = self.svc.load(tid)
                        if state.version > before.get(tid, 0) or state.status == "finished":
                            moved[tid] = time.monotonic() - since
            for tid in self.away:
                if tid not in moved:
                    with contextlib.suppress(Exception):
                        if self.svc.load(tid).away_open is not None:
                            moved[tid] = time.monotonic() - since
            if len(moved) == len(self.bots) + len(self.away):
                return moved
            time.sleep(0.05)
        tail = "\n".join(p.read_text()[-4000:] for p in logs if p.exists())
        stuck = sorted(set(self.bots + self.away) - set(moved))
        found = "\n".join(self.where_timers_are(tid, queue) for tid in stuck)
        raise AssertionError(f"tables {stuck} did not move within {limit} s\n{found}\n{tail}")

    def where_timers_are(self, table_id: str, queue=None) -> str:
        """What a stuck table's timers look like in both stores: its version and status, its timers
        hash, its due-index entry and claim, and each timer's RQ job (status, and whether it waits in
        a queue). A failure says where the hand-off stopped."""
        from rq.job import Job

        from workers import index

        lines = [f"table {table_id}:"]
        with contextlib.suppress(Exception):
            state = self.svc.load(table_id)
            lines.append(f"  version {state.version}, status {state.status}, turn {state.turn}")
        try:
            stored = scheduling.read_timers(self.svc.store.redis, table_id)
            lines.append(f"  timers {stored}")
            lines.append(f"  due {index.due_at(self.svc.store.redis, table_id)}, "
                         f"claimed until {index.claimed_until(self.svc.store.redis, table_id)}, now {time.time():.1f}")
        except Exception as exc:
            lines.append(f"  timers unreadable: {exc!r}")
            stored = {}
        if queue is not None:
            waiting = {v.decode() for v in queue.lrange("rq:queue:escoba", 0, -1)}
            for kind, raw in stored.items():
                entry = None
                with contextlib.suppress(ValueError):
                    entry = json.loads(raw)
                if isinstance(entry, dict) and "id" in entry:
                    with contextlib.suppress(Exception):
                        status = queue.hget(Job.key_for(entry["id"]), "status")
                        lines.append(f"  {kind}: job {entry['id']} status {status}, "
                                     f"{'in' if entry['id'] in waiting else 'not in'} the queue")
        return "\n".join(lines)

    def stop(self) -> None:
        for human in self.humans:
            human.stop()


def running_worker(queue, workers: list[Worker]) -> tuple[Worker, str] | None:
    """The worker process whose job loop is running a job now, and that job's id."""
    from rq import Worker as RQWorker
    from rq.job import Job

    members = queue.zrange("rq:wip:escoba", 0, -1)
    for member in members:
        job_id = (member.decode() if isinstance(member, bytes) else member).split(":", 1)[0]
        with contextlib.suppress(Exception):
            name = Job.fetch(job_id, connection=queue).worker_name
            found = RQWorker.find_by_key(RQWorker.redis_worker_namespace_prefix + name, connection=queue)
            if found is None:
                continue
            for w in workers:
                if found.pid == w.proc.pid:
                    return w, job_id
    return None


def _role(node) -> str:
    with node.client(socket_timeout=2) as c:
        role = c.execute_command("ROLE")
    return role[0].decode() if isinstance(role[0], bytes) else role[0]


def _replica_of(cluster, master_port: int):
    for node in cluster.nodes:
        with node.client(socket_timeout=2) as c:
            role = c.execute_command("ROLE")
        if role[0] in (b"slave", "slave") and int(role[2]) == master_port:
            return node
    raise AssertionError(f"no replica of :{master_port}")


def _has_replica(node) -> bool:
    with node.client(socket_timeout=2) as c:
        info = c.info("replication")
    return info.get("role") == "master" and int(info.get("connected_slaves", 0)) >= 1 and all(
        v.get("state") == "online" for k, v in info.items() if k.startswith("slave") and isinstance(v, dict))


def _replicas(node) -> int:
    with node.client(socket_timeout=2) as c:
        role = c.execute_command("ROLE")
    return len(role[2]) if role[0] in (b"master", "master") else 0


def unreplicated_acks(metric_ports=()) -> int:
    """``escoba_unreplicated_acks_total`` of this process (its TableService) and of each worker
    whose metrics are on one of ``metric_ports``."""
    import re
    import urllib.request

    from events.replication import UNREPLICATED

    total = UNREPLICATED.total()
    for port in metric_ports:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            found = re.search(r"^escoba_unreplicated_acks_total ([0-9.e+]+)$", r.read().decode(), re.M)
        total += int(float(found.group(1))) if found else 0
    return total


def master_failover(workdir: Path, *, acks: int = 0, workers: int = 1, bots: int = 6, spare: int = 0,
                    quiet: float = 3.0) -> dict:
    """kill -9 a master of a 3-master cluster with a replica each, the master of a bot table's slot,
    while bots play, a person plays a bot (keyed retries) and ``escoba worker`` runs; its replica
    is promoted by the cluster itself (``cluster-node-timeout`` 3 s).

    ``acks`` = ``ESCOBA_REPLICA_ACKS`` (ESCOBA_UNREPLICATED is its default, accept). With 0 the
    promoted master's tables play on at once. With ``spare`` (the compose file's spare replica, a
    second replica of another master) the killed node is left down: the promoted master has no
    replica, so with acks its moves are acknowledged on its AOF alone (counted) until replica
    migration moves the spare to it, after which nothing more is counted for ``quiet`` s of play.
    Without a spare and with acks, the killed node is restarted as soon as the promotion is seen
    (the runbook: docs/operations.md) and rejoins as its replica.

    A second person plays a table of the killed master's slots (``spare``: keyed movers on both).
    Returns ``promoted`` (s from the kill to the promotion), ``back`` (s from the kill to the
    moment moves are measured from: the promotion, or without a spare and with acks the new replica
    in sync), ``moved`` (table -> s from ``back`` until it moved again: each bot table, each person's
    table, and PLAYER AWAY of a table whose timer fell due meanwhile), ``on_master`` (the bot tables
    whose slots the killed master held), ``others`` (the rest whose due-index bucket is on another
    master too) and ``went_on`` (those of them that moved between the kill and the promotion),
    ``alive`` (every worker still running); with ``spare``: ``migrated`` (s from the promotion until
    the spare is the promoted master's replica, online), ``unreplicated`` (the counter's rise from the
    kill to then: this process's and the workers') and ``after`` (its rise over ``quiet`` s once the
    spare is in sync). Checks as it ends that every bot table's log runs 1..n with no gap or repeat
    and every move each person was answered is in its log exactly once.
    """
    from events.connection import cluster_client
    from events.store import events_key

    from ..redis_servers import free_port, start_cluster, start_plain

    cluster = start_cluster(workdir / "cluster", 3, durable=True, replicas=1, spare=spare)
    queue = start_plain(workdir / "queue", durable=True)
    procs: list[Worker] = []
    scene = tables = None
    try:
        env = {"REDIS_URL": cluster.seeds_url, "ESCOBA_QUEUE_URL": queue.url, "ESCOBA_REPLICA_ACKS": str(acks),
               **FAST}
        tables = cluster_client(cluster.seeds_url, 10)
        scene = Scene.on(tables, replica_acks=acks)
        metric_ports = [free_port() for _ in range(workers)]
        procs = [Worker(workdir / f"worker{i}.log", env, ("--metrics-port", str(metric_ports[i])))
                 for i in range(workers)]
        logs = [w.log for w in procs]
        from rq import Worker as RQWorker

        wait(lambda: len(RQWorker.all(connection=queue.client())) >= workers, 60, "the workers", logs)
        scene.open_bots(bots)
        human = scene.open_human()
        wait(lambda: min(scene.versions().values()) >= 12, 60, "the bots to get going", logs)

        def master_port(tid: str) -> int:
            return tables.nodes_manager.get_node_from_slot(tables.keyslot(events_key(tid))).port

        from workers import index

        def bucket_port(tid: str) -> int:
            return tables.nodes_manager.get_node_from_slot(tables.keyslot(index.due_key(index.bucket_of(tid)))).port

        def split(port: int) -> tuple[list, list]:
            """(the bot tables on ``port``, the others whose due-index bucket is not on it either)"""
            return ([t for t in scene.bots if master_port(t) == port],
                    [t for t in scene.bots if master_port(t) != port and bucket_port(t) != port])

        # the master of a bot table (one with a single replica: the spare is another's second), preferring
        # one that leaves another table fully elsewhere
        ports = [p for p in dict.fromkeys(map(master_port, scene.bots))
                 if _replicas(next(n for n in cluster.nodes if n.port == p)) == 1]
        port = max(ports, key=lambda p: bool(split(p)[1]))
        on_master, others = split(port)
        victim = next(n for n in cluster.nodes if n.port == port)
        replica = _replica_of(cluster, port)
        people = [human]
        if spare:
            people.append(scene.open_human(where=lambda tid: master_port(tid) == port))
            wait(lambda: all(len(p.acknowledged) >= 2 for p in people), 60, "the people to get going", logs)
        scene.open_away()  # on whichever master: its PLAYER AWAY falls due after the failover
        before = scene.versions()
        counted = unreplicated_acks(metric_ports)
        victim.kill()
        killed = time.monotonic()
        went_on: set = set()  # the other masters' tables that moved while this one was away

        def promoted_yet() -> bool:
            for tid in others:
                if tid not in went_on:
                    with contextlib.suppress(Exception):
                        if scene.svc.load(tid).version > before[tid]:
                            went_on.add(tid)
            return _role(replica) == "master"

        wait(promoted_yet, 30, "the replica's promotion", logs)
        promoted = time.monotonic()
        if acks and not spare:
            victim.start()  # the same port and nodes.conf: it rejoins as the new master's replica
            wait(lambda: _has_replica(replica), 60, "the restarted node to be the new master's replica", logs)
        back = time.monotonic()
        # the tables of the other masters may have moved meanwhile: from here they must move again
        for tid in scene.bots:
            if tid not in on_master:
                with contextlib.suppress(Exception):
                    before[tid] = scene.svc.load(tid).version
        moved = scene.resume(back, before, logs=logs, queue=queue.client())
        found: dict = {}
        if spare:
            wait(lambda: _replicas(replica) >= 1, 30, "the spare to migrate to the promoted master", logs)
            found["migrated"] = time.monotonic() - promoted
            found["unreplicated"] = unreplicated_acks(metric_ports) - counted
            time.sleep(0.5)  # a write sent before the spare was online may still be counted
            settled = unreplicated_acks(metric_ports)
            time.sleep(quiet)  # play on with a replica: nothing more is acknowledged alone
            found["after"] = unreplicated_acks(metric_ports) - settled
        alive = all(w.alive() for w in procs)
        for person in people:
            count = len(person.acknowledged)
            wait(lambda p=person, c=count: len(p.acknowledged) > c or scene.svc.load(p.table_id).status == "finished",
                 60, "the person's next move", logs)
            later = [t - back for t in person.answered if t > back]
            if later:
                moved[f"person:{person.table_id}"] = later[0]
        scene.stop()
        for person in people:
            person.check()
        for tid in scene.bots:
            versions = [r["version"] for r in scene.svc.records(tid)]
            assert versions == list(range(1, len(versions) + 1)), (tid, versions)
        return {"promoted": promoted - killed, "back": back - killed, "moved": moved, "on_master": on_master,
                "alive": alive, "others": others, "went_on": sorted(went_on), **found}
    finally:
        if scene is not None:
            scene.stop()
        for w in procs:
            w.stop()
        if tables is not None:
            with contextlib.suppress(Exception):
                tables.close()
        queue.stop()
        cluster.stop()


__all__ = ["FAST", "RESUME_LIMIT", "Human", "Scene", "Worker", "master_failover", "running_worker",
           "unreplicated_acks", "wait"]
