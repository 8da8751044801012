"""The append's EVALSHA on a connection of the store's own (events/direct.py), on the suite's real Redis:
the same replies and errors as redis-py's way, a script the server lost given again, a connection the
server closed replaced, a failed connection never reused."""

from __future__ import annotations

import os
import secrets
import time

import pytest
import redis as redis_lib

from events.connection import plain_client
from events.direct import Direct
from events.store import AlreadyApplied, Append, EventStore, Idempotency, VersionConflict

pytestmark = pytest.mark.integration


def rec(version: int) -> dict:
    return {"type": "BotRemoved", "v": 1, "version": version, "at": "2024-01-01T00:00:00.000Z",
            "actor": "seat:0", "data": {"seat": 1}}


@pytest.fixture
def client(redis_server):
    c = plain_client(redis_server.url)
    yield c
    c.close()


def tid() -> str:
    return "d" + secrets.token_urlsafe(8)


def test_only_a_plain_client_of_ours_goes_direct(client, redis_server, fake_redis):
    assert isinstance(EventStore(client)._direct, Direct)
    assert EventStore(redis_server.client())._direct is None  # redis-py's own connection class
    assert EventStore(fake_redis)._direct is None


def test_the_stores_of_one_client_share_its_connections(client):
    first, second = EventStore(client), EventStore(client)
    assert first._direct is second._direct is Direct.for_client(client)
    t = tid()
    first.append(Append(t, 0, [rec(1)]))
    assert [v for v, _ in second.read_raw(t)] == [1] and first._direct._open == 1


def test_appends_answer_as_redis_py_does(client):
    store, t = EventStore(client), tid()
    key = f"table:{{{t}}}:idem:a:k"
    assert store.append(Append(t, 0, [rec(1), rec(2)], idempotency=Idempotency(key, '{"version": 2}'))).version == 2
    with pytest.raises(VersionConflict) as conflict:
        store.append(Append(t, 0, [rec(1)]))
    assert conflict.value.current == 2
    with pytest.raises(AlreadyApplied) as repeat:
        store.append(Append(t, 2, [rec(3)], idempotency=Idempotency(f"table:{{{t}}}:idem:a:k", "{\"version\": 3}")))
    assert repeat.value.version == 2
    assert [r["version"] for r in store.read(t)] == [1, 2]
    # the same command the ordinary way gives the same reply
    keys = [f"table:{{{t}}}:events"]
    assert store._direct.execute("XLEN", *keys) == client.xlen(keys[0]) == 2


def test_a_script_the_server_lost_is_loaded_again(client):
    store, t = EventStore(client), tid()
    assert store.append(Append(t, 0, [rec(1)])).version == 1
    client.script_flush()
    assert store.append(Append(t, 1, [rec(2)])).version == 2


def test_a_reply_error_keeps_the_connection_and_is_raised(client):
    direct = Direct.for_client(client)
    client.set("direct:string", "x")
    with pytest.raises(redis_lib.ResponseError):
        direct.execute("XLEN", "direct:string")  # WRONGTYPE
    assert len(direct._idle) == 1 and direct.execute("GET", "direct:string") == b"x"
    assert direct._open == 1


def test_a_connection_the_server_closed_is_replaced(client):
    direct = Direct.for_client(client)
    assert direct.execute("PING") in (True, b"PONG")
    own = direct._idle[0]
    client.client_kill_filter(_id=direct.execute("CLIENT", "ID"))  # as a Redis restart does to every client
    assert direct.execute("SET", "direct:k", "v") in (True, b"OK")  # checked out, found closed, reconnected
    assert direct._idle == [own] and direct._open == 1


def test_a_failed_connection_is_dropped(client, monkeypatch):
    direct = Direct.for_client(client)
    direct.execute("PING")
    conn = direct._idle[0]

    def broken(*args, **kwargs):
        raise redis_lib.ConnectionError("the line went")

    monkeypatch.setattr(conn, "read_response", broken)
    with pytest.raises(redis_lib.ConnectionError):
        direct.execute("PING")
    assert direct._idle == [] and direct._open == 0
    assert direct.execute("GET", "direct:none") is None  # a new connection


def test_a_forked_process_never_uses_the_parents_connections(client):
    direct = Direct.for_client(client)
    direct.execute("PING")
    parents = list(direct._idle)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ok = direct.execute("PING") and not (set(map(id, direct._idle)) & set(map(id, parents)))
        os.write(write, b"1" if ok else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    assert direct._idle == parents and direct.execute("PING")


def test_past_the_kept_connections_the_clients_pool_serves(client, monkeypatch):
    direct = Direct.for_client(client)
    monkeypatch.setattr("events.direct.IDLE_MAX", 0)
    assert direct.execute("SET", "direct:p", "1") in (True, b"OK") and direct._open == 0


def test_reads_answer_as_redis_py_does(client, redis_server, monkeypatch):
    """read_raw's XRANGE on a direct connection: the same entries as redis-py's own, in chunks too."""
    direct, plain = EventStore(client), EventStore(redis_server.client())
    assert direct._direct is not None and plain._direct is None
    t = tid()
    direct.append(Append(t, 0, [rec(v) for v in range(1, 8)]))
    monkeypatch.setattr("events.store.READ_CHUNK", 3)
    for after, until, limit in [(0, None, None), (3, None, None), (0, 5, None), (2, 6, 3), (7, None, None)]:
        assert direct.read_raw(t, after, until, limit) == plain.read_raw(t, after, until, limit)
    assert [v for v, _ in direct.read_raw(t)] == list(range(1, 8))


@pytest.mark.parametrize("args", [
    ("EVALSHA", "0" * 40, 2, "table:{a}:events", "table:{a}:idem", 7, 1, "", "{\"k\":\"ü ñ\"}", b"\x00raw", 1.25),
    ("GET", "table:{a}:events"),
])
def test_the_commands_wire_bytes_are_redis_pys(client, args):
    from events.direct import _packed

    conn = client.connection_pool.make_connection()
    try:
        assert _packed(conn, args) == b"".join(conn.pack_command(*args))
    finally:
        conn.disconnect()


def test_a_command_is_one_send_and_under_gevent_its_reply_is_waited_for_on_the_sockets_watcher():
    from types import SimpleNamespace

    import gevent
    from gevent import socket as gsocket

    from events.direct import _send

    ours, server = gsocket.socketpair()
    try:
        ours.settimeout(0.05)
        conn = SimpleNamespace(_sock=ours)
        with pytest.raises(redis_lib.TimeoutError, match="reading"):  # sent, and no reply came
            _send(conn, b"*1\r\n$4\r\nPING\r\n")
        assert server.recv(100) == b"*1\r\n$4\r\nPING\r\n"
        server.sendall(b"+PONG\r\n")
        _send(conn, b"*1\r\n$4\r\nPING\r\n")  # a reply is waiting: back at once
        assert ours.recv(100) == b"+PONG\r\n" and server.recv(100) == b"*1\r\n$4\r\nPING\r\n"
        big = b"x" * (8 << 20)  # past the socket's buffer: the rest goes out as the server reads
        ours.settimeout(1.0)  # the whole send's pauses, not one reply: 0.05 s failed on a loaded machine
        reader = gevent.spawn(lambda: b"".join(iter(lambda: server.recv(1 << 20), b"")))
        with pytest.raises(redis_lib.TimeoutError):
            _send(conn, big)
        ours.close()
        assert reader.get(timeout=5) == big
    finally:
        ours.close()
        server.close()


def test_the_stage_timers_mark_the_steps_send_the_work_meanwhile_and_the_reply(monkeypatch):
    """bench/latency.py splits the append at these marks: on the wire, the caller's work done, the reply back."""
    from types import SimpleNamespace

    from gevent import socket as gsocket

    from events import stages
    from events.direct import _send

    monkeypatch.setattr(stages, "ON", True)
    ours, server = gsocket.socketpair()
    try:
        ours.settimeout(1.0)
        conn = SimpleNamespace(_sock=ours)
        stages.begin()
        seen = []

        def meanwhile():  # the command is on the wire by now: the server can read it
            seen.append([name for name, _ in stages._local.marks])
            assert server.recv(100) == b"*1\r\n$4\r\nPING\r\n"
            server.sendall(b"+PONG\r\n")

        _send(conn, b"*1\r\n$4\r\nPING\r\n", meanwhile)
        assert seen == [["wake", "sent"]]
        names = [name for name, _ in stages._local.marks]
        assert names == ["wake", "sent", "built ahead", "reply"]
        assert ours.recv(100) == b"+PONG\r\n"
        stages.begin()
        server.sendall(b"+PONG\r\n")
        _send(conn, b"*1\r\n$4\r\nPING\r\n")  # no work meanwhile: no mark for it
        assert [name for name, _ in stages._local.marks] == ["wake", "sent", "reply"]
    finally:
        stages._local.marks = None
        ours.close()
        server.close()


def test_the_reply_wait_keeps_one_timer_a_connection_that_never_fires_once_the_reply_came():
    from types import SimpleNamespace

    import gevent
    from gevent import socket as gsocket

    from events.direct import _send

    # the timeout is five times a reply's delay: a loop stalled that long by a loaded machine (CI's, at
    # 0.1 s against 0.03) would otherwise time a reply out before it was read
    timeout, delay = 0.5, 0.1
    pairs = [gsocket.socketpair() for _ in range(2)]
    try:
        conns = []
        for ours, _server in pairs:
            ours.settimeout(timeout)
            conns.append(SimpleNamespace(_sock=ours))
        (ours, server), conn = pairs[0], conns[0]
        for _ in range(6):  # answered each time, 0.6 s in all past a 0.5 s timeout: the same timer,
            # started afresh each time (a timer stopped by libev keeps only what was left of it)
            gevent.spawn_later(delay, server.sendall, b"+PONG\r\n")
            _send(conn, b"*1\r\n$4\r\nPING\r\n")
            assert ours.recv(100) == b"+PONG\r\n"
            timer = conn._reply_timer[2]
            assert not timer.active
        assert conn._reply_timer[2] is timer
        gevent.sleep(timeout + 0.15)  # past the timeout: a stopped timer throws into nobody
        started = time.monotonic()
        with pytest.raises(redis_lib.TimeoutError):  # and a reply that never comes waits the whole timeout
            _send(conn, b"*1\r\n$4\r\nPING\r\n")
        assert time.monotonic() - started >= timeout - 0.01
        assert server.recv(100) == b"*1\r\n$4\r\nPING\r\n" * 7
        # two connections waiting at once: each its own timer; the one answered is not thrown at
        waits = [gevent.spawn(_send, c, b"*1\r\n$4\r\nPING\r\n") for c in conns]
        gevent.sleep(0.02)
        pairs[1][1].sendall(b"+PONG\r\n")
        gevent.joinall(waits, timeout=timeout + 2)
        assert isinstance(waits[0].exception, redis_lib.TimeoutError)
        assert waits[1].successful()
        ours.settimeout(timeout + 0.1)  # a new timeout: a new timer
        server.sendall(b"+PONG\r\n")
        _send(conn, b"*1\r\n$4\r\nPING\r\n")
        assert conn._reply_timer[1] == timeout + 0.1 and conn._reply_timer[2] is not timer
    finally:
        for ours, server in pairs:
            ours.close()
            server.close()


def test_a_socket_that_fails_on_send_is_redis_pys_connection_error():
    import socket
    from types import SimpleNamespace

    from events.direct import _send

    ours, server = socket.socketpair()
    server.close()
    try:
        with pytest.raises(redis_lib.ConnectionError):
            _send(SimpleNamespace(_sock=ours), b"*1\r\n$4\r\nPING\r\n")
    finally:
        ours.close()


def test_the_kernels_timeout_is_a_dead_connection_and_the_sockets_own_a_slow_one():
    import errno

    from events.direct import _timeout

    dead = _timeout(TimeoutError(errno.ETIMEDOUT, "Connection timed out"), "reading from")
    slow = _timeout(TimeoutError("timed out"), "reading from")
    assert type(dead) is redis_lib.ConnectionError and str(errno.ETIMEDOUT) in str(dead)
    assert type(slow) is redis_lib.TimeoutError


def test_past_the_kept_connections_a_read_is_the_same_raw_reply(client, monkeypatch):
    """Issue 54: with every kept connection busy, the pool's way answered with redis-py's response
    callbacks applied (RESP3: ``[(id, {field: value})]``), and the log's reader failed on it."""
    store, t = EventStore(client), tid()
    store.append(Append(t, 0, [rec(1), rec(2)]))
    direct = store._direct
    raw = direct.execute("XRANGE", f"table:{{{t}}}:events", "-", "+")
    monkeypatch.setattr("events.direct.IDLE_MAX", 0)
    held = direct._take()  # the one kept connection, in use (as under load, all IDLE_MAX of them)
    assert held is not None and direct._take() is None
    assert direct.execute("XRANGE", f"table:{{{t}}}:events", "-", "+") == raw
    assert direct.execute("SET", "direct:p", "1") == b"OK"  # raw, as a kept connection reads it
    assert [v for v, _ in store.read_raw(t)] == [1, 2]
    direct._give(held)


def test_a_reply_of_another_shape_is_a_clear_error_never_a_log(client, monkeypatch):
    from events.direct import WrongReply

    store, t = EventStore(client), tid()
    store.append(Append(t, 0, [rec(1), rec(2)]))
    for wrong in ([(b"1-0", {b"e": b"{}"})], {b"e": b"x"}, [[b"1-0", [b"x", b"y"]]], [[b"2-0", [b"e", b"r"]],
                                                                                     [b"1-0", [b"e", b"r"]]], 7):
        monkeypatch.setattr(store._direct, "execute", lambda *args, wrong=wrong: wrong)
        with pytest.raises(WrongReply, match="XRANGE"):
            store.read_raw(t)


LOADERS = r"""
import json, random, sys
from gevent import monkey; monkey.patch_all()
import gevent
from events.connection import plain_client
from events.store import EventStore

url, tables = sys.argv[1], json.loads(sys.argv[2])
store = EventStore(plain_client(url))
random.seed(7)
wrong, right, failed = [], 0, []

def load(t):
    global right
    got = [raw.decode() for _, raw in store.read_raw(t)]
    if got != tables[t]:
        wrong.append(t)
    else:
        right += 1

def loader(t):
    try:
        load(t)
    except gevent.GreenletExit:
        raise
    except Exception as e:
        failed.append(repr(e))

names = list(tables)
for _ in range(6):
    batch = [gevent.spawn(loader, random.choice(names)) for _ in range(300)]
    gevent.sleep(0)
    for g in random.sample(batch, 60):  # sockets closed mid-load: their greenlets killed between send and read
        g.kill(block=False)
    gevent.sleep(0.001)
    for g in random.sample(batch, 30):
        g.kill(block=False)
    gevent.joinall(batch)
    for t in random.sample(names, 10):  # every kept connection still answers its own caller
        load(t)
print(json.dumps({"wrong": wrong, "right": right, "failed": failed[:5]}))
"""


def test_many_greenlets_loading_tables_each_read_their_own_log(client, redis_server):
    """Issue 54's reproduction: hundreds of greenlets loading tables over ``Direct`` (past its kept
    connections), a fifth killed mid-command as a closed socket's are: every finished read is its own
    table's log, whole, and none fails (it failed on the pool's way with ``unhashable type: 'slice'``)."""
    import json
    import subprocess
    import sys

    store = EventStore(client)
    tables = {}
    for n in range(40):
        t = tid()
        records = [dict(rec(v), data={"seat": 1, "table": t, "n": v}) for v in range(1, 2 + n % 7)]
        store.append(Append(t, 0, records))
        tables[t] = [raw.decode() for _, raw in store.read_raw(t)]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", LOADERS, redis_server.url, json.dumps(tables)], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["failed"] == [] and result["wrong"] == []
    assert result["right"] > 600
