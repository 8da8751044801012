"""The hub's subscriptions on both topologies: notices arrive, a dropped listener
resubscribes and its sockets catch up from the log, a lost node's tables move on."""

from __future__ import annotations

import random
import threading
import time

import orjson
import pytest
import redis as redis_lib

from api.moves import MoveStep
from api.sockets.fanout import Fanout
from api.sockets.notices import NodeListener, ShardedListener
from events import autoplay
from events.service import TableService
from events.store import changes_channel

pytestmark = pytest.mark.integration


def next_state(q, at_least: int, timeout: float = 10.0):
    """The first state posted to mailbox ``q`` at version >= ``at_least`` (resyncs may post older ones)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        q.wake.wait(max(0.01, deadline - time.monotonic()))
        q.wake.clear()
        state, _chats = q.take()
        if state is not None and state.version >= at_least:
            return state
    raise AssertionError(f"no state at version >= {at_least} within {timeout}s")


def sit(svc: TableService, tid: str, i: int) -> int:
    return svc.execute(tid, {"type": "sit", "player": f"x{i}", "name": f"X{i}"}, actor="guest").version


@pytest.fixture
def hub_and_writer(backends):
    reader = TableService(backends.tables, cache_size=0)
    hub = Fanout(backends.tables, reader)
    writer = TableService(backends.tables, rng=random.Random(5))  # "another process"
    yield hub, writer
    hub.stop()


def test_a_watcher_hears_a_change_made_elsewhere(hub_and_writer, topology):
    hub, writer = hub_and_writer
    tid = autoplay.new_table(writer, players=1)
    q = hub.subscribe(tid)
    next_state(q, 1)  # the subscription's confirmation resyncs the table once
    assert next_state(q, sit(writer, tid, 1)).seats[1].player == "x1"
    hub.unsubscribe(tid, q)


def test_a_process_hears_only_the_tables_its_sockets_watch(hub_and_writer, topology):
    """Notices of other tables never reach this process's listener, nor a table's once its last
    socket has gone: another API process adds no work here."""
    hub, writer = hub_and_writer
    heard = []
    deliver = hub.listener.on_notice
    hub.listener.on_notice = lambda raw: heard.append(orjson.loads(raw)["table_id"]) or deliver(raw)
    mine, other = autoplay.new_table(writer, players=1), autoplay.new_table(writer, players=1)
    q = hub.subscribe(mine)
    next_state(q, 1)
    sit(writer, other, 1)
    last = sit(writer, mine, 1)
    next_state(q, last)
    assert mine in heard and other not in heard  # only ``mine`` is watched here
    hub.unsubscribe(mine, q)
    watcher = hub.subscribe(other)  # a later subscription: once it is confirmed, nothing of ``mine`` is sent here
    next_state(watcher, 1)
    since = len(heard)
    sit(writer, mine, 2)
    done = sit(writer, other, 2)
    next_state(watcher, done)
    assert heard[since:] == [other]  # the move at ``mine`` went unheard
    hub.unsubscribe(other, watcher)


def _kill_pubsub_clients(topology) -> int:
    killed = 0
    servers = topology.cluster.nodes if topology.is_cluster else topology.servers
    for server in servers:
        with server.client() as c:
            killed += c.client_kill_filter(_type="pubsub")
    return killed


def test_a_process_at_the_version_before_a_change_folds_the_notice_in_without_reading_the_log(
        backends, topology):
    """The notice carries its batch's records: a process whose copy is at the batch's start
    posts the new state without a read, the same state a load from the log gives."""
    reader = TableService(backends.tables)  # caches, like the API's service
    hub = Fanout(backends.tables, reader)
    writer = TableService(backends.tables, rng=random.Random(5))  # "another process"
    try:
        tid = autoplay.new_table(writer, players=1)
        q = hub.subscribe(tid)
        next_state(q, 1)
        before = reader.load(tid).version  # this process's copy, up to date
        reads = []
        real = reader.store.read_raw
        reader.store.read_raw = lambda *a, **k: reads.append(a) or real(*a, **k)
        after = sit(writer, tid, 1)
        heard = next_state(q, after)
        assert heard.version == after > before and reads == []
        fresh = TableService(backends.tables, cache_size=0).load(tid)
        assert heard == fresh
        # a copy that is not at the batch's start reads the log instead
        reader._cache.clear()
        later = writer.execute(tid, {"type": "start", "by": 0}, actor="seat:0").version
        assert next_state(q, later) == TableService(backends.tables, cache_size=0).load(tid)
        assert reads  # the load read the log
        hub.unsubscribe(tid, q)
    finally:
        hub.stop()


def test_a_dropped_listener_resubscribes_and_the_socket_catches_up(hub_and_writer, topology):
    hub, writer = hub_and_writer
    tid = autoplay.new_table(writer, players=1)
    q = hub.subscribe(tid)
    next_state(q, 1)
    assert _kill_pubsub_clients(topology) >= 1
    during = sit(writer, tid, 1)  # published while the listener may be reconnecting
    assert next_state(q, during).version == during  # caught up: from the notice or the resync
    after = sit(writer, tid, 2)
    assert next_state(q, after).version == after  # and it hears the next change live
    hub.unsubscribe(tid, q)


def test_stop_ends_a_listener_waiting_in_its_read(hub_and_writer, topology, caplog):
    """The one-Redis listener blocks in its read (no poll per notice): stop must still end it
    at once, with no notice to wake it, and log no failure."""
    hub, writer = hub_and_writer
    tid = autoplay.new_table(writer, players=1)
    q = hub.subscribe(tid)
    next_state(q, 1)
    threads = ([hub.listener._thread] if not topology.is_cluster
               else [n._thread for n in hub.listener._nodes.values()])
    assert all(t is not None and t.is_alive() for t in threads)
    started = time.monotonic()
    hub.stop()
    for t in threads:
        t.join(timeout=5)
    assert not any(t.is_alive() for t in threads)
    assert time.monotonic() - started < 3
    assert not [r for r in caplog.records if "listener failed" in r.getMessage()]


@pytest.fixture
def cluster_backends(redis_cluster, queue_server):
    from events.config import Config
    from events.connection import connect

    b = connect(Config(redis_url=redis_cluster.url, queue_url=queue_server.url), wait=5)
    yield b
    b.close()


def test_sharded_subscriptions_follow_the_first_and_last_socket(cluster_backends):
    backends = cluster_backends
    svc = TableService(backends.tables)
    hub = Fanout(backends.tables, svc)
    try:
        assert isinstance(hub.listener, ShardedListener)
        tid = autoplay.new_table(svc, players=1)
        node = backends.tables.get_node_from_key(changes_channel(tid))
        direct = backends.tables.get_redis_connection(node)

        def subscribers() -> int:
            reply = direct.execute_command("PUBSUB", "SHARDNUMSUB", changes_channel(tid))
            return int(reply[1])

        a, b = hub.subscribe(tid), hub.subscribe(tid)
        wait_for(lambda: subscribers() == 1)
        hub.unsubscribe(tid, a)
        time.sleep(0.2)
        assert subscribers() == 1  # one socket still watches
        hub.unsubscribe(tid, b)
        wait_for(lambda: subscribers() == 0)
    finally:
        hub.stop()


def test_a_node_whose_connection_is_lost_for_good_hands_its_tables_to_the_new_owner(
        cluster_backends, monkeypatch):
    hub = Fanout(cluster_backends.tables, TableService(cluster_backends.tables, cache_size=0))
    writer = TableService(cluster_backends.tables)
    request_stop = hub.stop
    tid = autoplay.new_table(writer, players=1)
    q = hub.subscribe(tid)
    next_state(q, 1)
    listener: ShardedListener = hub.listener
    (old,) = [n for n in listener._nodes.values() if n.holds(tid)]

    def gone(*args, **kwargs):  # what a failed-over master looks like once redis-py's retries give up
        raise redis_lib.ConnectionError("Connection refused")

    monkeypatch.setattr(old.pubsub, "get_message", gone)
    wait_for(lambda: any(n is not old and n.holds(tid) for n in listener._nodes.values()))
    (new,) = [n for n in listener._nodes.values() if n.holds(tid)]
    assert isinstance(new, NodeListener) and new is not old
    after = sit(writer, tid, 1)
    assert next_state(q, after).version == after
    hub.unsubscribe(tid, q)
    request_stop()


def test_every_resubscription_resyncs_the_watched_tables_from_the_log(fake_redis):
    """A change published while nobody listened (notice lost) reaches the socket once the
    listener's subscription is confirmed again."""
    svc = TableService(fake_redis, cache_size=0)
    hub = Fanout(fake_redis, svc)
    try:
        tid = autoplay.new_table(svc, players=1)
        q = hub.subscribe(tid)
        next_state(q, 1)
        deliver, hub.listener.on_notice = hub.listener.on_notice, lambda raw: None  # a listener gone deaf
        unheard = svc.execute(tid, {"type": "sit", "player": "x", "name": "X"}, actor="guest").version
        with pytest.raises(AssertionError):
            next_state(q, unheard, timeout=0.5)
        hub.listener.on_notice = deliver
        hub.listener._handle({"type": "subscribe", "channel": changes_channel(tid).encode(), "data": 1})
        assert next_state(q, unheard, timeout=1).version == unheard
        hub.unsubscribe(tid, q)
    finally:
        hub.stop()


def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_a_master_that_goes_down_and_comes_back_is_listened_to_again(tmp_path):
    """A real outage of one shard (kill -9 of a master, then its restart from its AOF and
    nodes.conf): the hub's listener on it re-subscribes, and the socket hears the next move."""
    from ...redis_servers import redis_binary, redis_cli, start_cluster

    if redis_binary() is None or redis_cli() is None:
        pytest.skip("redis-server and redis-cli are needed for a private cluster")
    cluster = start_cluster(tmp_path, 3, durable=True)
    client = cluster.client()
    hub = Fanout(client, TableService(client, cache_size=0))
    try:
        writer = TableService(client)
        tid = autoplay.new_table(writer, players=1)
        q = hub.subscribe(tid)
        next_state(q, 1)
        port = client.get_node_from_key(changes_channel(tid)).port
        (node,) = [n for n in cluster.nodes if n.port == port]
        node.kill()
        time.sleep(1.5)  # the listener's reads fail while the master is gone
        node.start()  # same port, directory and nodes.conf: it takes its slots back
        cluster.wait_ok()
        deadline = time.monotonic() + 20
        while True:  # the writer's client finds the node again too
            try:
                after = sit(writer, tid, 1)
                break
            except (redis_lib.ConnectionError, redis_lib.exceptions.ClusterError, redis_lib.TimeoutError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert next_state(q, after, timeout=20).version == after
        hub.unsubscribe(tid, q)
    finally:
        hub.stop()
        client.close()
        cluster.stop()


def test_the_hub_wakes_every_handler_now_and_then_with_nothing_to_send(fake_redis):
    """A handler waits with no timeout of its own: the hub's one timer wakes it to check on its reader."""
    svc = TableService(fake_redis, cache_size=0)
    hub = Fanout(fake_redis, svc, check_every=0.05)
    try:
        tid = autoplay.new_table(svc, players=1)
        q = hub.subscribe(tid)
        next_state(q, 1)  # the subscription's resync
        for _ in range(3):
            q.wake.clear()
            assert q.wake.wait(2.0)
            assert q.take() == (None, [])  # woken with nothing
        hub.unsubscribe(tid, q)
    finally:
        hub.stop()
    hub._checker.join(1)
    assert not hub._checker.is_alive()  # stop ends the timer too


@pytest.fixture
def local_hub(backends, monkeypatch):
    """(service, hub, table id) for published's tests, the hub's PREBUILT_MAX set by the caller."""
    from api.sockets import fanout as fanout_module

    made = []

    def make(prebuilt_max: int):
        monkeypatch.setattr(fanout_module, "PREBUILT_MAX", prebuilt_max)
        service = TableService(backends.tables, rng=random.Random(5))
        made.append(Fanout(backends.tables, service))
        return service, made[-1], autoplay.new_table(service, players=1)

    yield make
    for hub in made:
        hub.stop()


def test_a_change_this_process_made_has_its_other_sockets_frames_built_at_once(local_hub):
    """published builds each of the table's other sockets' frames in the mover's greenlet (their
    handlers then find them in the views' cache): never the mover's own (its handler builds it next),
    at most PREBUILT_MAX, and a build that fails leaves the rest built and the move posted."""
    from api.sockets.fanout import Mailbox

    service, hub, tid = local_hub(3)
    built: list[tuple[str, int]] = []

    def builder(name, fails=False):
        def frames_for(state):
            built.append((name, state.version))
            if fails:
                raise RuntimeError("a view that will not build")
        return frames_for

    mover = hub.subscribe(tid, Mailbox(frames_for=builder("mover")))
    next_state(mover, 1)  # subscribed, and the hub among the table's listeners (its confirmation's resync)
    broken = hub.subscribe(tid, Mailbox(frames_for=builder("broken", fails=True)))
    others = [hub.subscribe(tid, Mailbox(frames_for=builder(f"other{i}"))) for i in range(3)]
    plain = hub.subscribe(tid)  # a mailbox without a builder (a test's, a notice's) is posted to only
    built.clear()
    # as the API appends (local: the hub is the table's only listener, so no notice comes back to post
    # the version before published does)
    outcome = service.execute(tid, {"type": "sit", "player": "x1", "name": "X1"}, actor="guest",
                              parts=MoveStep(hub.listener_id))
    hub.published(tid, outcome.state, skip=mover)
    names = [name for name, version in built if version == outcome.version]
    assert "mover" not in names and len(names) == 3 and len(set(names)) == 3
    for q in (broken, *others, plain):  # every other socket was posted the move, the failed build's too
        assert q.state is outcome.state
    built.clear()
    hub.published(tid, outcome.state, skip=mover)  # a version posted already builds nothing again
    assert built == []
    for q in (mover, broken, *others, plain):
        hub.unsubscribe(tid, q)


def test_a_change_this_process_made_is_sent_at_once_where_a_socket_takes_it_and_posted_elsewhere(local_hub):
    """published hands each other socket the move (``send_now``, api/sockets/route.py ``_Direct``): one that
    took it is neither posted nor woken nor built for; one that declined, or whose send failed, is posted
    and built for as before; at most PREBUILT_MAX take it at once, the rest are posted."""
    from api.sockets.fanout import Mailbox

    service, hub, tid = local_hub(2)
    calls: list[tuple[str, str]] = []

    def box(name, answer):
        q = Mailbox(frames_for=lambda state: calls.append(("built", name)))

        def send_now(state):
            calls.append(("asked", name))
            if answer == "raises":
                raise OSError("the socket went away")
            return answer

        q.send_now = send_now
        return hub.subscribe(tid, q)

    mover = box("mover", True)
    next_state(mover, 1)  # subscribed, and the hub among the table's listeners
    boxes = {name: box(name, answer) for name, answer in
             (("a", True), ("b", True), ("c", True), ("declined", False), ("failed", "raises"))}
    calls.clear()
    for q in boxes.values():
        q.wake.clear()
    outcome = service.execute(tid, {"type": "sit", "player": "x1", "name": "X1"}, actor="guest",
                              parts=MoveStep(hub.listener_id))
    hub.published(tid, outcome.state, skip=mover)
    built = {name for kind, name in calls if kind == "built"}
    taken = {name for kind, name in calls if kind == "asked"} & {"a", "b", "c"}
    assert ("asked", "mover") not in calls and "mover" not in built
    assert len(taken) == 2  # PREBUILT_MAX took it; the third acceptor was not even asked
    for name, q in boxes.items():
        if name in taken:  # written at once: its handler sleeps on, nothing to post or build
            assert q.state is None and not q.wake.is_set()
        else:  # the mailbox's way, as before
            assert q.state is outcome.state and q.wake.is_set()
    assert len(built) == 2 and not built & taken  # the posted ones' frames built ahead, PREBUILT_MAX of them
    assert hub.posts == {"direct": 2, "mailbox": 3}  # escoba_socket_posts_total: how each got it
    for q in (mover, *boxes.values()):
        hub.unsubscribe(tid, q)


def test_a_change_this_process_made_is_posted_at_once_and_its_notice_then_does_nothing(backends, topology):
    """published: the table's other mailboxes here get the move's state straight from the append
    (the mover's own is skipped: its socket sends the move with its ack); the notice that follows
    through Redis finds that version posted and neither loads nor posts. A change made elsewhere
    still comes by its notice."""
    service = TableService(backends.tables, rng=random.Random(5))
    hub = Fanout(backends.tables, service)
    try:
        tid = autoplay.new_table(service, players=1)
        mover = hub.subscribe(tid)
        next_state(mover, 1)  # subscribed (its confirmation resynced the table)
        other = hub.subscribe(tid)
        time.sleep(0.1)
        mover.take(), other.take()
        heard, loads = [], []
        deliver = hub.listener.on_notice
        posted = threading.Event()

        def hear(raw):  # the notice waits for the post here (it may come first: see load_noticed's test)
            posted.wait(10)
            heard.append(orjson.loads(raw).get("version"))
            deliver(raw)

        hub.listener.on_notice = hear
        real = service.load_noticed
        service.load_noticed = lambda *a, **k: loads.append(a) or real(*a, **k)
        outcome = service.execute(tid, {"type": "sit", "player": "x1", "name": "X1"}, actor="guest")
        hub.published(tid, outcome.state, skip=mover)
        posted.set()
        assert other.take()[0] is outcome.state  # posted at once, before any notice
        assert mover.take() == (None, [])
        deadline = time.monotonic() + 10
        while outcome.version not in heard and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)  # the notice's dispatch, had it done anything
        assert outcome.version in heard and loads == []
        assert other.take() == (None, []) and mover.take() == (None, [])
        # an older or the same version posted again is not posted
        hub.published(tid, outcome.state)
        assert other.take() == (None, [])
        # a change made by another process comes by its notice, as before
        elsewhere = TableService(backends.tables, rng=random.Random(6))
        done = elsewhere.execute(tid, {"type": "start", "by": 0}, actor="seat:0").version
        assert next_state(other, done).version == done and next_state(mover, done).version == done
        hub.unsubscribe(tid, mover), hub.unsubscribe(tid, other)
        assert tid not in hub._posted  # forgotten with the table's last socket
    finally:
        hub.stop()


@pytest.mark.parametrize("stock", [False, True], ids=["patched", "stock"])
def test_on_one_redis_a_notice_is_taken_straight_from_the_reply(redis_server, monkeypatch, stock):
    """ChannelListener's lean read (one Redis; the sharded listener reads through redis-py): a
    published notice reaches the hub without redis-py's message handling (which subscription
    replies still go through). With the stock libraries (events/patches.py) every reply goes through it."""
    from events import patches
    from events.config import Config
    from events.connection import connect

    monkeypatch.setattr(patches, "_stock", [stock])

    backends = connect(Config(redis_url=redis_server.url), wait=5)
    service = TableService(backends.tables, rng=random.Random(5))
    hub = Fanout(backends.tables, TableService(backends.tables, cache_size=0))
    try:
        tid = autoplay.new_table(service, players=1)
        q = hub.subscribe(tid)
        next_state(q, 1)
        handled = []
        real = redis_lib.client.PubSub.handle_message
        redis_lib.client.PubSub.handle_message = lambda self, *a, **k: handled.append(a) or real(self, *a, **k)
        try:
            done = sit(service, tid, 1)
            assert next_state(q, done).version == done
        finally:
            redis_lib.client.PubSub.handle_message = real
        if stock:
            assert [a[0][0] for a in handled] == [b"message"]
        else:
            assert handled == []
        hub.unsubscribe(tid, q)
    finally:
        hub.stop()
        backends.close()


def _listeners(backends, tid) -> set[str]:
    from events.store import listeners_key

    return {m.decode() if isinstance(m, bytes) else m for m in backends.tables.smembers(listeners_key(tid))}


def test_a_move_made_here_is_published_only_while_another_process_listens(backends, topology):
    """Two API processes (two hubs). A hub joins the table's listeners with its subscription and
    leaves with its last socket; a move made through ``here`` (``MoveStep``'s ``quiet_for``: it posts the move to its
    own sockets) publishes its notice only while ``there`` listens too, and ``there``'s socket
    hears every such move."""
    service = TableService(backends.tables, rng=random.Random(5))
    here, there = Fanout(backends.tables, service), Fanout(backends.tables, TableService(backends.tables, cache_size=0))
    try:
        tid = autoplay.new_table(service, players=1)
        mine = here.subscribe(tid)
        next_state(mine, 1)  # confirmed: it joined before the resync read the log
        assert _listeners(backends, tid) == {here.listener_id}
        heard = []
        deliver = here.listener.on_notice
        here.listener.on_notice = lambda raw: heard.append(orjson.loads(raw).get("version")) or deliver(raw)

        def move(command, actor):
            outcome = service.execute(tid, command, actor=actor, parts=MoveStep(here.listener_id))
            here.published(tid, outcome.state)
            return outcome.version

        alone = move({"type": "sit", "player": "x1", "name": "X1"}, "guest")
        assert next_state(mine, alone).version == alone
        theirs = there.subscribe(tid)
        next_state(theirs, alone)
        assert _listeners(backends, tid) == {here.listener_id, there.listener_id}
        shared = move({"type": "start", "by": 0}, "seat:0")
        assert next_state(theirs, shared).version == shared  # only the notice brings it there
        there.unsubscribe(tid, theirs)
        assert _listeners(backends, tid) == {here.listener_id}
        time.sleep(0.3)  # every notice sent so far has come back
        assert shared in heard and alone not in heard
        here.unsubscribe(tid, mine)
        assert _listeners(backends, tid) == set()
    finally:
        here.stop()
        there.stop()


def test_a_hub_that_cannot_join_the_listeners_retries_and_then_reads_the_log(backends, topology, monkeypatch):
    """The join fails (the store away for it): the table's sockets are not told of the subscription
    until a retry joins, and then the log is read, so a move made meanwhile by a process that
    thought itself alone reaches them."""
    import api.sockets.fanout as fanout_module

    monkeypatch.setattr(fanout_module, "RETRY_LISTEN", 0.05)
    writer = TableService(backends.tables, rng=random.Random(5))
    reader = TableService(backends.tables, cache_size=0)
    hub = Fanout(backends.tables, reader)
    real, tries = reader.store.listen, []

    def flaky(table_id, listener):
        tries.append(listener)
        if len(tries) < 3:
            raise redis_lib.ConnectionError("away")
        real(table_id, listener)

    reader.store.listen = flaky
    try:
        tid = autoplay.new_table(writer, players=1)
        writer.store.listen(tid, "elsewhere")  # the writer's own process, alone in the set
        q = hub.subscribe(tid)
        moved = writer.execute(tid, {"type": "sit", "player": "x1", "name": "X1"}, actor="guest",
                               parts=MoveStep("elsewhere")).version  # no notice: no one else has joined
        assert next_state(q, moved).version == moved  # the retry joined, then read the log
        assert len(tries) == 3 and _listeners(backends, tid) == {"elsewhere", hub.listener_id}
        hub.unsubscribe(tid, q)
    finally:
        hub.stop()


def test_the_fanout_histogram_times_notices_not_local_posts(backends, topology):
    """escoba_fanout_seconds is a notice's arrival to its state posted (its help, and the
    EscobaFanoutSlow alert): a move posted here from its own append is not one."""
    from prometheus_client import CollectorRegistry, Histogram

    fanout = Histogram("fanout_seconds", "test", registry=CollectorRegistry())
    service = TableService(backends.tables, rng=random.Random(5))
    hub = Fanout(backends.tables, service, notice_seconds=fanout)

    def count() -> float:
        return next(s.value for s in fanout.collect()[0].samples if s.name == "fanout_seconds_count")

    try:
        tid = autoplay.new_table(service, players=1)
        q = hub.subscribe(tid)
        next_state(q, 1)
        outcome = service.execute(tid, {"type": "sit", "player": "x1", "name": "X1"}, actor="guest",
                                  parts=MoveStep(hub.listener_id))  # as a move: no notice, no one else listens
        hub.published(tid, outcome.state)
        assert next_state(q, outcome.version).version == outcome.version
        time.sleep(0.2)
        assert count() == 0
        elsewhere = TableService(backends.tables, rng=random.Random(6))
        done = elsewhere.execute(tid, {"type": "start", "by": 0}, actor="seat:0").version
        assert next_state(q, done).version == done
        assert count() == 1
        hub.unsubscribe(tid, q)
    finally:
        hub.stop()
