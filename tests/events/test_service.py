"""TableService on fakeredis[lua]: create, execute, chance, idempotency, retries, snapshots."""

from __future__ import annotations

import json
import random
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine
from engine.cards import FULL_DECK
from events import autoplay, snapshots
from events.service import MAX_ATTEMPTS, Outcome, TableService, iso_utc
from events.store import VersionConflict, index_key, snapshot_key


def new_service(redis, **kw):
    kw.setdefault("rng", random.Random(3))
    return TableService(redis, **kw)


def test_create_opens_a_table_in_the_index(fake_redis):
    seen = []
    svc = new_service(fake_redis, clock=lambda: 1_700_000_000.5,
                      on_change=lambda t, s, r: seen.append((t, s.version, len(r))))
    table_id, out = svc.create(autoplay.open_command())
    assert re.fullmatch(r"[A-Za-z0-9_-]{6,}", table_id)
    assert isinstance(out, Outcome) and out.version == 1 and not out.repeated
    assert out.state.status == "waiting" and out.state.version == 1
    assert [r["type"] for r in out.records] == ["TableOpened"]
    r = out.records[0]
    assert r["actor"] == "seat:0" and r["version"] == 1 and r["at"] == "2023-11-14T22:13:20.500Z"
    assert svc.table_ids() == [table_id] and fake_redis.zscore(index_key(table_id), table_id) == 1_700_000_000.5
    assert seen == [(table_id, 1, 1)]
    assert svc.load(table_id) == out.state
    assert svc.records(table_id) == out.records


def test_create_needs_an_open_command(service):
    with pytest.raises(engine.RuleError):
        service.create({"type": "sit", "player": "x", "name": "y"})


def test_not_found(service):
    with pytest.raises(engine.RuleError) as exc:
        service.execute("nope", {"type": "sit", "player": "x", "name": "X"}, actor="seat:1")
    assert exc.value.code == "not_found" and exc.value.message == "No such table."
    with pytest.raises(engine.RuleError):
        service.load("nope")


def test_chance_is_filled_and_recorded(fake_redis):
    svc = new_service(fake_redis)
    tid = autoplay.new_table(svc)
    command = {"type": "start", "by": 0}
    out = svc.execute(tid, command, actor="seat:0")
    assert command == {"type": "start", "by": 0}  # the caller's dict is left alone
    dealt = next(r for r in out.records if r["type"] == "RoundDealt")
    assert sorted(dealt["data"]["deck"]) == sorted(FULL_DECK)
    assert dealt["data"]["deck"] != list(FULL_DECK)
    # chance the caller gives is kept
    cmd = svc.with_chance(engine.parse_command({"type": "start", "deck": list(FULL_DECK), "pick": 2}))
    assert cmd == engine.commands.Start(deck=list(FULL_DECK), pick=2)
    dealt = svc.with_chance(engine.parse_command({"type": "next_round", "deck": list(FULL_DECK)}))
    assert dealt == engine.commands.NextRound(deck=list(FULL_DECK))
    play = engine.parse_command({"type": "play"})
    assert svc.with_chance(play) is play


def test_refused_command_appends_nothing(fake_redis):
    calls = []
    svc = new_service(fake_redis, on_change=lambda *a: calls.append(a))
    tid = autoplay.new_table(svc)
    calls.clear()
    with pytest.raises(engine.RuleError) as exc:
        svc.execute(tid, {"type": "start", "by": 1}, actor="seat:1")
    assert exc.value.code == "host_only"
    assert svc.version(tid) == 2 and calls == []


def test_an_appended_move_is_posted_before_the_change_hook_and_a_refused_or_repeated_one_never(fake_redis):
    # the caller's sockets hear a move before the hook's writes (a round trip at a round's end)
    order = []
    svc = new_service(fake_redis, on_change=lambda t, s, r: order.append(("hook", s.version)))
    tid = autoplay.new_table(svc)
    order.clear()

    def posted(state):
        assert svc.version(tid) == state.version  # appended already
        order.append(("posted", state.version))

    out = svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0", idempotency_key="k", posted=posted)
    assert order == [("posted", out.version), ("hook", out.version)]
    order.clear()
    again = svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0", idempotency_key="k", posted=posted)
    with pytest.raises(engine.RuleError):
        svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0", posted=posted)
    assert again.repeated and order == []


def test_a_move_that_brings_a_snapshot_is_posted_before_the_snapshot_is_written(fake_redis):
    svc = new_service(fake_redis, snapshot_every=5)
    tid = autoplay.new_table(svc)
    rng = random.Random(5)
    seen = []  # (the version posted, the snapshot's version when it was posted)

    def posted(state):
        raw = fake_redis.get(snapshot_key(tid))
        seen.append((state.version, json.loads(raw)["version"] if raw else None))

    state = svc.load(tid)
    previous, crossings = state.version, 0
    while state.version < 12:
        command, actor = autoplay.next_command(state, rng)
        state = svc.execute(tid, command, actor=actor, posted=posted).state
        version, snap = seen[-1]
        if version // 5 > previous // 5:  # this append brings a snapshot: none of its stretch yet when posted
            crossings += 1
            assert snap is None or snap // 5 < version // 5
            assert json.loads(fake_redis.get(snapshot_key(tid)))["version"] == version  # saved after
        previous = version
    assert crossings >= 2


def test_a_state_handed_out_stays_as_it_was_after_later_moves(fake_redis):
    # the process cache shares states instead of copying them: nothing may change one in place
    svc = new_service(fake_redis)
    tid = autoplay.new_table(svc)
    started = svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0")
    before = engine.replay([engine.event_from(r["type"], r["data"]) for r in svc.records(tid)])
    assert started.state == before and svc.load(tid) is started.state
    seat = started.state.turn
    card = started.state.hands[seat][0]
    with pytest.raises(engine.RuleError):
        svc.execute(tid, {"type": "play", "by": 1 - seat, "card": card}, actor=f"seat:{1 - seat}")
    svc.execute(tid, {"type": "play", "by": seat, "card": card, "capture": []}, actor=f"seat:{seat}")
    assert started.state == before and svc.load(tid).version > before.version


def test_stale_expected_version(service):
    tid = autoplay.new_table(service)
    with pytest.raises(engine.RuleError) as exc:
        service.execute(tid, {"type": "start", "by": 0}, actor="seat:0", expected_version=1)
    assert exc.value.code == "version_conflict" and exc.value.details == {"current": 2}
    assert service.version(tid) == 2
    out = service.execute(tid, {"type": "start", "by": 0}, actor="seat:0", expected_version=2)
    assert out.version > 2


def test_idempotent_repeat(fake_redis):
    calls = []
    svc = new_service(fake_redis, on_change=lambda t, s, r: calls.append(s.version))
    tid = autoplay.new_table(svc)
    sit = {"type": "sit", "player": "p2", "name": "Cy"}
    first = svc.execute(tid, sit, actor="guest", idempotency_key="abc")
    again = svc.execute(tid, sit, actor="guest", idempotency_key="abc")
    assert not first.repeated and again.repeated
    assert again.version == first.version == 3 and again.records == []
    assert again.state == first.state
    assert svc.version(tid) == 3 and calls == [1, 2, 3]
    key = f"table:{{{tid}}}:idem:guest:abc"
    assert json.loads(fake_redis.get(key)) == {"version": 3}
    assert 86000 < fake_redis.ttl(key) <= 86400
    # a repeat after the table has moved on answers with the state it made then
    svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0")
    late = TableService(fake_redis).execute(tid, sit, actor="guest", idempotency_key="abc")
    assert late.repeated and late.version == 3 and late.state == first.state
    # the same key from another actor is another request
    other = svc.execute(tid, {"type": "exit", "by": 1}, actor="seat:1", idempotency_key="abc")
    assert not other.repeated


def test_a_key_costs_no_lookup_and_a_repeat_the_rules_accept_is_still_answered_once(fake_redis):
    """The store is asked about a key only when the rules refuse the move or it changes nothing: the
    append refuses a used key in its own step, so a repeat the rules would accept again appends nothing."""
    svc = new_service(fake_redis)
    asked = []
    real = svc.store.idempotent_version
    svc.store.idempotent_version = lambda *a: asked.append(a) or real(*a)
    tid = autoplay.new_table(svc)
    change = {"type": "settings", "player": "p0", "settings": {"target": 15}}
    first = svc.execute(tid, change, actor="player:p0", idempotency_key="s1")
    assert not first.repeated and first.records and asked == []  # no round trip for the key
    again = svc.execute(tid, change, actor="player:p0", idempotency_key="s1")  # the rules accept it again
    assert again.repeated and again.version == first.version and svc.version(tid) == first.version
    # the table moves on: a late repeat is refused by the rules, and answered from its key
    svc.execute(tid, {"type": "start", "player": "p0"}, actor="player:p0")
    late = svc.execute(tid, change, actor="player:p0", idempotency_key="s1")
    assert late.repeated and late.version == first.version and late.state == first.state
    stale = svc.execute(tid, change, actor="player:p0", idempotency_key="s1", expected_version=1)
    assert stale.repeated and stale.version == first.version
    assert len(asked) == 2  # the two refused by the rules or the version, and only those
    with pytest.raises(engine.RuleError):  # a refused move with an unused key is refused
        svc.execute(tid, change, actor="player:p0", idempotency_key="s2")


def test_retries_after_a_conflict(fake_redis):
    svc, rival = new_service(fake_redis), new_service(fake_redis)
    tid = autoplay.new_table(svc, players=1)
    real_append = svc.store.append
    raced = []

    def append_after_a_rival(append, meanwhile=None):
        if not raced:
            raced.append(rival.execute(tid, {"type": "sit", "player": "r", "name": "R"},
                                       actor="seat:1"))
        return real_append(append, meanwhile)

    svc.store.append = append_after_a_rival
    out = svc.execute(tid, {"type": "sit", "player": "me", "name": "Me"}, actor="seat:2")
    assert out.version == 3
    assert [s.player if s else None for s in out.state.seats] == ["p0", "r", "me", None]
    assert svc.load(tid) == out.state


def test_gives_up_after_a_few_conflicts(fake_redis):
    svc = new_service(fake_redis)
    tid = autoplay.new_table(svc)
    tries = []

    def always_conflict(append, meanwhile=None):
        tries.append(1)
        raise VersionConflict(99)

    svc.store.append = always_conflict
    with pytest.raises(engine.RuleError) as exc:
        svc.execute(tid, {"type": "start", "by": 0}, actor="seat:0")
    assert exc.value.code == "version_conflict" and len(tries) == MAX_ATTEMPTS


def test_load_until(fake_redis):
    svc = new_service(fake_redis)
    tid = autoplay.new_table(svc)
    states = {}
    autoplay.play(svc, tid, random.Random(5), until_version=120,
                  on_outcome=lambda o: states.__setitem__(o.version, o.state))
    fresh = TableService(fake_redis, cache_size=0)
    for v, state in states.items():
        assert fresh.load(tid, until=v) == state


# --- snapshots ------------------------------------------------------------------

def test_state_json_round_trips_at_every_version(game_in_memory):
    for preset, players in (("selminha", 4), ("del15", 3), ("cardgames", 2)):
        for _, state in game_in_memory(11, preset=preset, players=players):
            text = json.dumps(snapshots.state_to_json(state))
            assert snapshots.state_from_json(json.loads(text)) == state


def test_snapshots_every_fifty_events_and_loads_from_them(fake_redis):
    svc = new_service(fake_redis)
    tid = autoplay.new_table(svc)
    state = autoplay.play(svc, tid, random.Random(9), until_version=160)
    snap = json.loads(fake_redis.get(snapshot_key(tid)))
    assert snap["engine"] == engine.ENGINE_VERSION
    assert snap["version"] >= 150 and snap["version"] // 50 == state.version // 50
    fresh = TableService(fake_redis, cache_size=0)
    read = []
    real_read = fresh.store.read_raw
    fresh.store.read_raw = lambda t, after=0, until=None, limit=None: (
        read.append(after) or real_read(t, after, until, limit)
    )
    assert fresh.load(tid) == state
    # only the tail after the snapshot was read, with the snapshot's own record (the log still has it)
    assert read == [snap["version"] - 1]
    # the snapshot is a cache: deleting it changes nothing
    snapshots.delete_snapshot(fake_redis, tid)
    assert TableService(fake_redis, cache_size=0).load(tid) == state


def _plant(redis, tid, engine_version, state):
    data = json.loads(snapshots.dumps_snapshot(state))
    data["engine"] = engine_version
    redis.set(snapshot_key(tid), json.dumps(data))


def test_snapshot_of_another_engine_version_is_ignored_and_rebuilt(fake_redis):
    svc = new_service(fake_redis)
    tid = autoplay.new_table(svc)
    state = autoplay.play(svc, tid, random.Random(4), until_version=130)
    bogus = state.copy()
    bogus.status, bogus.scores = "bogus", [99, 99]
    _plant(fake_redis, tid, engine.ENGINE_VERSION + 1, bogus)
    assert TableService(fake_redis, cache_size=0).load(tid) == state
    rebuilt = json.loads(fake_redis.get(snapshot_key(tid)))
    assert rebuilt["engine"] == engine.ENGINE_VERSION and rebuilt["version"] == state.version
    # the same snapshot under this engine's version would be believed (so the check matters)
    _plant(fake_redis, tid, engine.ENGINE_VERSION, bogus)
    assert TableService(fake_redis, cache_size=0).load(tid).status == "bogus"


@pytest.mark.parametrize("garbage", [b"not json", b'{"engine": 1}', b"[]",
                                      b'{"engine": 1, "version": 3, "state": {"version": 3}}'])
def test_unreadable_snapshot_is_ignored(fake_redis, garbage):
    svc = new_service(fake_redis)
    tid = autoplay.new_table(svc)
    state = autoplay.play(svc, tid, random.Random(2), until_version=20)
    fake_redis.set(snapshot_key(tid), garbage)
    assert TableService(fake_redis, cache_size=0).load(tid) == state


def test_engine_version_bump_ignores_snapshots(fake_redis, monkeypatch):
    svc = new_service(fake_redis)
    tid = autoplay.new_table(svc)
    state = autoplay.play(svc, tid, random.Random(6), until_version=110)
    assert fake_redis.get(snapshot_key(tid))
    monkeypatch.setattr(engine, "ENGINE_VERSION", engine.ENGINE_VERSION + 1)
    assert snapshots.load_snapshot(fake_redis, tid) is None
    assert TableService(fake_redis, cache_size=0).load(tid) == state
    assert json.loads(fake_redis.get(snapshot_key(tid)))["engine"] == engine.ENGINE_VERSION


@pytest.mark.parametrize("kind", ["start", "start_rematch"])
def test_the_service_draws_the_first_dealers_pick_evenly_for_three_players(fake_redis, kind):
    """The shell's pick is drawn from range(engine.PICK_RANGE), which 2, 3 and 4 divide."""
    from collections import Counter

    class Recording(random.Random):
        ranges = []

        def randrange(self, *args):
            self.ranges.append(args)
            return super().randrange(*args)

    rng = Recording(11)
    svc = new_service(fake_redis, rng=rng)
    picks = [svc.with_chance(engine.parse_command({"type": kind})).pick for _ in range(3000)]
    assert set(rng.ranges) == {(engine.PICK_RANGE,)}
    assert all(engine.PICK_RANGE % n == 0 for n in (2, 3, 4))
    seats = Counter(p % 3 for p in picks)
    assert all(900 < seats[s] < 1100 for s in range(3)), seats  # randrange(4) % 3 gives seat 0 1500


def test_table_ids_never_look_like_a_command_line_flag(monkeypatch):
    from events import service as service_module

    drawn = iter(["-VlajBWf", "-abcdefg", "Ab3_x-yz"])
    monkeypatch.setattr(service_module.secrets, "token_urlsafe", lambda n: next(drawn))
    assert service_module.new_table_id() == "Ab3_x-yz"


@settings(max_examples=2000, deadline=None)
@given(st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False))
def test_the_stamp_of_a_batch_reads_as_datetime_writes_it(ts):
    # iso_utc formats the second once and the milliseconds each time; any instant reads the same
    assert iso_utc(ts) == datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_a_notice_of_its_own_append_heard_before_the_answer_is_the_state_it_worked_out(any_redis):
    """An append's change notice can reach this process's listener before the append's answer
    (published in the same Lua step): load_noticed then takes the state the append worked out, with
    neither a read nor a fold; a notice of other records after the same version is folded as before."""
    from events import autoplay

    service = TableService(any_redis, rng=random.Random(3))
    tid = autoplay.new_table(service, players=1)
    before = service.load(tid)
    heard = {}
    real_append = service.store.append

    def append_and_hear(append, meanwhile=None):
        expected = append.expected_version
        heard["notice"] = append.encoded
        heard["during"] = service.load_noticed(append.table_id, expected + len(append.records), expected,
                                               list(append.encoded))
        return real_append(append, meanwhile)

    service.store.append = append_and_hear
    reads = []
    real_read = service.store.read_raw
    service.store.read_raw = lambda *a, **k: reads.append(a) or real_read(*a, **k)
    outcome = service.execute(tid, {"type": "sit", "player": "x1", "name": "X1"}, actor="guest")
    assert heard["during"] is outcome.state and reads == [] and not service._in_flight
    assert outcome.state == TableService(any_redis, cache_size=0).load(tid)
    # other records after the same version (another process's) are not taken for this append's
    service._cache.clear()
    service._remember(tid, before)
    service._in_flight[tid] = (before.version, ["{}"], outcome.state)
    folded = service.load_noticed(tid, outcome.version, before.version, list(heard["notice"]))
    assert folded == outcome.state and folded is not outcome.state
