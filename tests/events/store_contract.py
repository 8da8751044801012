"""The event store's contract: what any backend under ``EventStore`` must keep, written once.

Modelled on the ``eventsourcing`` library's recorder test case: ``EventStoreContract`` holds the
tests and asks each backend for a client (its ``client`` fixture); tests/events/test_store.py
subclasses it for fakeredis[lua], one real Redis and the suite's 3-master Redis Cluster. A new
backend (another Redis-compatible server, another client) passes by passing this class.

What it pins, each through ``EventStore.append(Append(...))`` and the store's reads:
- an append at the expected version writes the batch and answers the new version;
- any refusal (a wrong version, a repeat, a count over its limit, a key of another slot) writes
  nothing of the batch: no entry, no key, no index or status change, no token, no row;
- an idempotency key's repeat answers the first version and applies nothing twice;
- reads give back what was appended, in order, versions rising from 1 with no gap;
- snapshots and checkpoints read back the state saved, and a stale one reads as none;
- every key one table's append writes (its own, and its index buckets) is in one cluster slot;
- the parts of a move (token granted, row, status, index entry, hashes read back and stamped, the
  count, the change notice) go with the append, in its one step, or not at all.
"""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

import pytest
from redis.crc import key_slot

from events import snapshots
from events.buckets import bucket_key
from events.connection import is_cluster
from events.records import dumps
from events.store import (
    COUNTS,
    STATUS,
    AlreadyApplied,
    Append,
    CountOver,
    EventStore,
    Idempotency,
    RateCount,
    VersionConflict,
    changes_channel,
    events_key,
    idempotency_key,
    index_key,
    table_key,
    tokens_key,
)


def rec(version: int, seat: int = 0) -> dict[str, Any]:
    return {"type": "BotRemoved", "v": 1, "version": version, "at": "2024-01-01T00:00:00.000Z",
            "actor": "seat:0", "data": {"seat": seat}}


def new_id() -> str:
    return "t" + secrets.token_urlsafe(8)


def idem(t: str, key: str, version: int, ttl: int = 60) -> Idempotency:
    return Idempotency(idempotency_key(t, "seat:0", key), f'{{"version": {version}}}', ttl)


def text(raw: Any) -> Any:
    return raw.decode() if isinstance(raw, bytes) else raw


def every_part(t: str, after: int, n: int = 1, *, key: str = "k", status: str = "waiting") -> Append:
    """An append of ``n`` records after ``after`` with every part the step takes (a create's and a
    move's: the index entry, the status, a token, a row, a key, hashes read back and stamped, a count)."""
    return Append(
        t, after, [rec(after + i) for i in range(1, n + 1)],
        idempotency=idem(t, key, after + n), created_at=1_700_000_000.0, status=status,
        grant=("hash-" + key, "p_" + key), row=(table_key(t, "row"), {"row": f'{{"v":{after + n}}}'}),
        read_back=(table_key(t, "timers"), table_key(t, "notify")), stamp=True,
        count=RateCount(table_key(t, "limit:moves:x"), 1000, 60), quiet_for="me")


class EventStoreContract:
    """The contract; a subclass gives the backend as its ``client`` fixture."""

    @pytest.fixture
    def client(self) -> Any:
        raise NotImplementedError("a backend's subclass gives its client")

    @pytest.fixture
    def store(self, client: Any) -> EventStore:
        return EventStore(client)

    # --- helpers -----------------------------------------------------------
    @staticmethod
    def keys_of(client: Any, t: str) -> list[str]:
        pattern = f"table:{{{t}}}:*"
        found = client.keys(pattern, target_nodes=client.ALL_NODES) if is_cluster(client) else client.keys(pattern)
        return sorted(text(k) for k in found)

    def contents(self, client: Any, t: str) -> dict[str, Any]:
        """Everything the table's append may write: its own keys' values, and its place in the
        index and status buckets (shared with other tables: only its own entries)."""
        out: dict[str, Any] = {}
        for key in self.keys_of(client, t):
            kind = text(client.type(key))
            if kind == "string":
                out[key] = text(client.get(key))
            elif kind == "hash":
                out[key] = {text(k): text(v) for k, v in client.hgetall(key).items()}
            elif kind == "set":
                out[key] = sorted(text(m) for m in client.smembers(key))
            elif kind == "stream":
                out[key] = [(text(i), {text(k): text(v) for k, v in f.items()}) for i, f in client.xrange(key)]
            else:
                out[key] = kind
        out["index"] = client.zscore(index_key(t), t)
        out["status"] = text(client.hget(bucket_key(STATUS, t), t))
        return out

    # --- appending ---------------------------------------------------------
    def test_an_append_at_the_expected_version_answers_the_new_version(self, store: EventStore) -> None:
        t = new_id()
        assert store.version(t) == 0 and not store.exists(t) and store.read(t) == []
        assert store.append(Append(t, 0, [rec(1), rec(2)])).version == 2
        assert store.append(Append(t, 2, [rec(3)])).version == 3
        assert store.exists(t) and store.version(t) == 3

    def test_a_wrong_expected_version_is_refused_and_writes_nothing(self, client: Any, store: EventStore) -> None:
        t = new_id()
        store.append(every_part(t, 0, 2, key="first"))
        before = self.contents(client, t)
        for after in (0, 1, 5):  # behind the log, and ahead of it
            with pytest.raises(VersionConflict) as conflict:
                store.append(every_part(t, after, 3, key=f"k{after}", status="playing"))
            assert conflict.value.current == 2
        after_refusals = self.contents(client, t)
        count = table_key(t, "limit:moves:x")
        assert int(after_refusals.pop(count)) == int(before.pop(count)) + 3  # counted first, whatever follows
        assert after_refusals == before  # no entry, key, token, row, stamp, index or status change
        assert store.version(t) == 2 and len(store.read(t)) == 2

    def test_a_first_append_at_a_wrong_version_leaves_no_key_at_all(self, client: Any, store: EventStore) -> None:
        t = new_id()
        append = every_part(t, 3)
        with pytest.raises(VersionConflict):
            store.append(Append(t, 3, append.records, idempotency=append.idempotency, grant=append.grant,
                                row=append.row, created_at=append.created_at, status=append.status))
        assert self.keys_of(client, t) == [] and not store.exists(t)
        assert client.zscore(index_key(t), t) is None and client.hget(bucket_key(STATUS, t), t) is None

    def test_an_append_that_must_not_run_is_refused_before_it_writes(self, client: Any, store: EventStore) -> None:
        t = new_id()
        elsewhere = "escoba:elsewhere"
        wrong = [
            Append(t, 0, []),  # no records
            Append(t, 0, [rec(2)]),  # a version that does not follow
            Append(t, 0, [rec(1), rec(3)]),
            Append(t, 0, [rec(1)], stamp=True),  # nothing to stamp
            Append(t, 0, [rec(1)], read_back=(elsewhere,)),  # keys of another slot
            Append(t, 0, [rec(1)], idempotency=Idempotency(elsewhere, "{}")),
            Append(t, 0, [rec(1)], row=(elsewhere, {"a": "b"})),
            Append(t, 0, [rec(1)], count=RateCount(elsewhere, 1, 60)),
        ]
        for append in wrong:
            with pytest.raises(ValueError):
                store.append(append)
        assert self.keys_of(client, t) == [] and client.get(elsewhere) is None

    def test_a_repeat_answers_the_first_version_and_applies_nothing_twice(self, client: Any,
                                                                          store: EventStore) -> None:
        t = new_id()
        first = store.append(every_part(t, 0, 2, key="k"))
        assert first.version == 2
        settled = self.contents(client, t)
        count = table_key(t, "limit:moves:x")
        for after in (2, 0, 1):  # at the log's version (the step's SET NX), and a resend from before
            with pytest.raises(AlreadyApplied) as repeat:
                store.append(every_part(t, after, 2, key="k", status="playing"))
            assert repeat.value.version == 2
        now = self.contents(client, t)
        assert int(now.pop(count)) == int(settled.pop(count)) + 3
        assert now == settled and store.version(t) == 2
        assert store.idempotent_version(t, "seat:0", "k") == 2
        assert json.loads(client.get(idempotency_key(t, "seat:0", "k"))) == {"version": 2}
        assert 0 < client.ttl(idempotency_key(t, "seat:0", "k")) <= 60
        # a new key at a wrong version is a conflict and leaves the key free for its retry
        with pytest.raises(VersionConflict):
            store.append(Append(t, 1, [rec(2)], idempotency=idem(t, "k2", 2)))
        assert client.get(idempotency_key(t, "seat:0", "k2")) is None
        assert store.append(Append(t, 2, [rec(3)], idempotency=idem(t, "k2", 3))).version == 3
        assert store.idempotent_version(t, "seat:0", "k2") == 3 and store.idempotent_version(t, "seat:0", "k3") is None

    # --- reading -----------------------------------------------------------
    def test_reads_give_back_what_was_appended_in_order(self, client: Any, store: EventStore,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
        import events.store as store_module

        monkeypatch.setattr(store_module, "READ_CHUNK", 3)  # reads that take several chunks
        t = new_id()
        batches = [[rec(1)], [rec(2), rec(3), rec(4)], [rec(v) for v in range(5, 12)], [rec(12, seat=1)]]
        after = 0
        for batch in batches:
            after = store.append(Append(t, after, batch)).version
        appended = [r for batch in batches for r in batch]
        assert store.read(t) == appended
        raw = store.read_raw(t)
        assert [v for v, _ in raw] == list(range(1, 13)) and [json.loads(r) for _, r in raw] == appended
        assert [r["version"] for r in store.read(t, after=4)] == list(range(5, 13))
        assert [r["version"] for r in store.read(t, after=4, until=9)] == [5, 6, 7, 8, 9]
        assert [v for v, _ in store.read_raw(t, after=2, limit=4)] == [3, 4, 5, 6]
        assert store.read(t, after=12) == [] and store.read(t, after=5, until=5) == []
        ids = [text(i) for i, _ in client.xrange(events_key(t))]
        assert ids == [f"{v}-0" for v in range(1, 13)]  # the entry id is the version

    def test_stored_records_are_the_records_as_dumped(self, client: Any, store: EventStore) -> None:
        t = new_id()
        records = [rec(1), rec(2)]
        store.append(Append(t, 0, records, encoded=[dumps(r) for r in records]))
        store.append(Append(t, 2, [rec(3)]))  # dumped by the store
        assert [json.loads(text(f[b"e"] if b"e" in f else f["e"])) for _, f in client.xrange(events_key(t))] \
            == [rec(1), rec(2), rec(3)]

    # --- snapshots ---------------------------------------------------------
    def test_snapshots_read_back_the_state_saved(self, client: Any, store: EventStore,
                                                  game_in_memory: Any) -> None:
        t = new_id()
        states = [state for _, state in game_in_memory(5, max_events=30)]  # versions 1 to 30
        assert snapshots.load_snapshot(client, t) is None
        for state in states[::7]:  # versions 1, 8, 15, 22, 29
            snapshots.save_snapshot(store, t, state, every=10)
        assert snapshots.load_snapshot(client, t) == states[28]
        # checkpoints: the first state saved in each stretch of 10 versions
        assert snapshots.load_checkpoint(client, t, 16, every=10) == states[14]
        assert snapshots.load_checkpoint(client, t, 29, every=10) == states[21]
        assert snapshots.load_checkpoint(client, t, 9, every=10) is None
        client.set(table_key(t, "snapshot"), b'{"engine": "another", "version": 1, "state": {}}')
        assert snapshots.load_snapshot(client, t) is None  # stale: as if none (a cache only)
        snapshots.delete_snapshot(client, t)
        assert self.keys_of(client, t) == []

    def test_the_index_lists_tables_oldest_first(self, client: Any, store: EventStore) -> None:
        a, b, c = new_id(), new_id(), new_id()
        store.add_to_index(a, 1.0)  # a table made without created_at (tools, old data)
        store.append(Append(c, 0, [rec(1)], created_at=3.0))  # a create: its index entry in its step
        store.add_to_index(b, 2.0)
        ids = store.table_ids()
        assert [i for i in ids if i in (a, b, c)] == [a, b, c]
        assert client.zscore(index_key(a), a) == 1.0 and client.zscore(index_key(c), c) == 3.0
        for t in (a, b, c):  # the index is shared by the session's tests
            client.zrem(index_key(t), t)

    # --- one slot ----------------------------------------------------------
    def test_every_key_a_tables_append_writes_is_in_the_tables_slot(self, client: Any, store: EventStore) -> None:
        t = new_id()
        store.listen(t, "me")
        store.append(every_part(t, 0, 2, key="a"))
        store.append(every_part(t, 2, 1, key="b", status="playing"))
        written = self.keys_of(client, t)
        assert set(written) >= {events_key(t), idempotency_key(t, "seat:0", "a"), tokens_key(t),
                                table_key(t, "row"), table_key(t, "timers"), table_key(t, "limit:moves:x")}
        slot = key_slot(events_key(t).encode())
        buckets = [index_key(t), bucket_key(STATUS, t), bucket_key(COUNTS, t)]
        assert {key_slot(k.encode()) for k in [*written, *buckets, changes_channel(t)]} == {slot}
        assert all(f"{{{t}}}" in k for k in written)  # tagged by the table's id itself

    # --- the parts of a move -----------------------------------------------
    def test_the_token_row_status_and_index_go_with_the_append(self, client: Any, store: EventStore) -> None:
        t = new_id()
        done = store.append(every_part(t, 0, 1, key="a", status="waiting"))
        assert done.version == 1
        assert text(client.hget(tokens_key(t), "hash-a")) == "p_a"
        assert {text(k): text(v) for k, v in client.hgetall(table_key(t, "row")).items()} == {"row": '{"v":1}'}
        assert client.zscore(index_key(t), t) == 1_700_000_000.0
        assert text(client.hget(bucket_key(STATUS, t), t)) == "waiting"
        counts = bucket_key(COUNTS, t)
        waiting = int(client.hget(counts, "waiting") or 0)
        playing = int(client.hget(counts, "playing") or 0)
        store.append(every_part(t, 1, 1, key="b", status="playing"))
        assert text(client.hget(bucket_key(STATUS, t), t)) == "playing"
        assert int(client.hget(counts, "waiting") or 0) == waiting - 1
        assert int(client.hget(counts, "playing") or 0) == playing + 1
        assert client.zscore(index_key(t), t) == 1_700_000_000.0  # NX: a table's creation stays

    def test_hashes_are_read_back_and_the_first_stamped_in_the_step(self, client: Any, store: EventStore) -> None:
        t = new_id()
        stamp, other = table_key(t, "timers"), table_key(t, "notify")
        client.hset(stamp, mapping={"version": "0", "bot": "job-1"})
        client.hset(other, "1", "https://example.test/hook")
        done = store.append(Append(t, 0, [rec(1), rec(2)], read_back=(stamp, other), stamp=True))
        assert done.version == 2 and done.stamped_over == 0
        assert done.hashes == ({"version": "2", "bot": "job-1"}, {"1": "https://example.test/hook"})
        done = store.append(Append(t, 2, [rec(3)], read_back=(stamp, table_key(t, "none")), stamp=True))
        assert (done.version, done.stamped_over, done.hashes) == (3, 2, ({"version": "3", "bot": "job-1"}, {}))
        client.hset(stamp, "version", "9")  # a later writer's: never lowered
        done = store.append(Append(t, 3, [rec(4)], read_back=(stamp,), stamp=True))
        assert (done.stamped_over, done.hashes[0]["version"]) == (9, "9")
        assert store.append(Append(t, 4, [rec(5)], read_back=(other,))).hashes == ({"1": "https://example.test/hook"},)
        with pytest.raises(VersionConflict):  # a refused append reads and stamps nothing
            store.append(Append(t, 1, [rec(2)], read_back=(other,), stamp=True))
        assert "version" not in {text(k) for k in client.hkeys(other)}

    def test_the_count_is_counted_first_and_over_its_limit_nothing_else_is_written(self, client: Any,
                                                                                   store: EventStore) -> None:
        t = new_id()
        counter = table_key(t, "limit:moves:abc")
        count = RateCount(counter, 3, 60)
        store.append(Append(t, 0, [rec(1)], count=count))
        assert int(client.get(counter)) == 1 and 0 < client.ttl(counter) <= 60
        with pytest.raises(VersionConflict):  # a refusal counts too
            store.append(Append(t, 0, [rec(1)], count=count))
        store.append(Append(t, 1, [rec(2)], idempotency=idem(t, "k", 2), count=count))
        assert int(client.get(counter)) == 3
        before = self.contents(client, t)
        with pytest.raises(CountOver) as over:
            store.append(Append(t, 2, [rec(3)], idempotency=idem(t, "k2", 3), grant=("h", "p"), count=count))
        assert 1 <= over.value.retry_after <= 60
        now = self.contents(client, t)
        assert (int(now.pop(counter)), int(before.pop(counter))) == (4, 3)
        assert now == before and store.version(t) == 2  # no entry, no key, no token
        with pytest.raises(AlreadyApplied) as repeat:  # over the limit, a repeat still gets its answer
            store.append(Append(t, 1, [rec(2)], idempotency=idem(t, "k", 2), count=count))
        assert repeat.value.version == 2
        assert store.append(Append(t, 2, [rec(3)])).version == 3  # uncounted appends are not limited

    # --- the change notice -------------------------------------------------
    @staticmethod
    def subscribed(client: Any, t: str) -> Any:
        pubsub = client.pubsub()
        if is_cluster(client):
            pubsub.ssubscribe(changes_channel(t))
            pubsub.get_message = pubsub.get_sharded_message
        else:
            pubsub.subscribe(changes_channel(t))
        EventStoreContract.next_message(pubsub, 0.2)
        return pubsub

    @staticmethod
    def next_message(pubsub: Any, timeout: float = 2.0) -> Any:
        end = time.time() + timeout
        while time.time() < end:
            m = pubsub.get_message(ignore_subscribe_messages=True, timeout=0.1)
            if m:
                return m
        return None

    def test_the_change_notice_is_published_in_the_step_with_the_records(self, client: Any,
                                                                         store: EventStore) -> None:
        t = new_id()
        assert store.publish == ("SPUBLISH" if is_cluster(client) else "PUBLISH")
        pubsub = self.subscribed(client, t)
        try:
            store.append(Append(t, 0, [rec(1), rec(2)]))
            m = self.next_message(pubsub)
            assert m is not None and json.loads(m["data"]) == {
                "table_id": t, "version": 2, "after": 0, "records": [text(raw) for _, raw in store.read_raw(t)]}
            store.append(Append(t, 2, [rec(3)], notice=False))
            with pytest.raises(VersionConflict):
                store.append(Append(t, 0, [rec(1)]))
            assert self.next_message(pubsub, 0.3) is None  # none asked for, and none for a refusal
        finally:
            pubsub.close()

    def test_the_notice_is_left_out_only_when_quiet_for_is_the_only_listener(self, client: Any,
                                                                              store: EventStore) -> None:
        """``quiet_for``: the appender tells its own sockets itself. Its notice is then needed by no
        one while the table's listeners are only that appender; anyone else in the set, or an empty
        set (a listener that never joined, such as this raw subscriber), and it is sent."""
        t = new_id()
        pubsub = self.subscribed(client, t)
        heard = []

        def append(version: int, quiet_for: str | None) -> None:
            store.append(Append(t, version, [rec(version + 1)], quiet_for=quiet_for))
            m = self.next_message(pubsub, 0.3)
            heard.append(m is not None and json.loads(m["data"])["version"] == version + 1)

        try:
            append(0, "a")  # no listeners at all: sent
            store.listen(t, "a")
            append(1, "a")  # "a" alone: left out
            append(2, None)  # an appender that tells no socket itself (a worker): sent
            store.listen(t, "b")
            append(3, "a")  # "b" listens too: sent
            store.unlisten(t, "b")
            append(4, "a")  # "a" alone again: left out
            append(5, "b")  # "b" is not "a": sent
            store.unlisten(t, "a")
            append(6, "a")
        finally:
            pubsub.close()
        assert heard == [True, False, True, True, False, True, True]
        assert store.version(t) == 7  # every append went in, published or not
