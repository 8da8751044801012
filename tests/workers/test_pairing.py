"""Quick pairing's waves (workers/pairing.py) and choices (workers/matching.py).

The choices are pure and tested as such; the waves run on one Redis and on the cluster, with the
seeks written through events/seeks.py as ``POST /seeks`` writes them, at times the test gives."""

from __future__ import annotations

import threading

import pytest

from events import seeks as store
from events.service import TableService
from workers import matching, pairing, ticker

from .conftest import Clock

# --- the choices (pure) -------------------------------------------------------------


def _s(name, rating=None, waited=0.0, identity=None, bot_due=False, last=()):
    return matching.Seeker(name, identity or name, rating, waited, bot_due, frozenset(last))


def test_a_rated_pool_pairs_the_closest_ratings_first():
    seekers = [_s("a", 1500), _s("b", 1800), _s("c", 1510), _s("d", 1790)]
    pairs = {frozenset(s.seek_id for s in g) for g in matching.groups(seekers, 2, True)}
    assert pairs == {frozenset("ac"), frozenset("bd")}


def test_the_accepted_gap_widens_with_the_time_waited():
    far = [_s("a", 1500), _s("b", 1900)]
    assert matching.groups(far, 2, True) == []  # 400 apart, neither has waited
    waited = (400 - matching.BASE_GAP) / matching.GAP_PER_SECOND
    assert matching.groups([_s("a", 1500, waited - 1), _s("b", 1900, waited + 5)], 2, True) == []  # a not yet
    paired = matching.groups([_s("a", 1500, waited), _s("b", 1900, waited)], 2, True)
    assert [sorted(s.seek_id for s in g) for g in paired] == [["a", "b"]]


def test_four_players_sit_as_two_teams_of_close_strength():
    seekers = [_s("weak", 1000, 40), _s("mid1", 1400, 40), _s("mid2", 1500, 40), _s("strong", 1900, 40)]
    (group,) = matching.groups(seekers, 4, True)
    seats = [s.seek_id for s in group]
    # partners across: seats 0 and 2, 1 and 3; the strongest with the weakest
    assert {seats[0], seats[2]} == {"weak", "strong"} and {seats[1], seats[3]} == {"mid1", "mid2"}
    assert matching.teams(list(reversed(seekers)))[0].seek_id == "weak"


def test_nobody_is_paired_with_themselves():
    seekers = [_s("a1", identity="ana", waited=9), _s("a2", identity="ana", waited=8)]
    assert matching.groups(seekers, 2, False) == []
    assert matching.groups(seekers, 2, True) == []
    seekers.append(_s("b", waited=1))
    (group,) = matching.groups(seekers, 2, False)
    assert {s.identity for s in group} == {"ana", "b"}


def test_nobody_meets_the_same_person_twice_in_a_row_when_others_wait():
    ana = _s("ana", waited=9, last={"bea"})
    bea = _s("bea", waited=8, last={"ana"})
    cris = _s("cris", waited=1)
    (group,) = matching.groups([ana, bea, cris], 2, False)
    assert {s.seek_id for s in group} == {"ana", "cris"}
    # when nobody else waits, they play again rather than wait for ever
    (again,) = matching.groups([ana, bea], 2, False)
    assert {s.seek_id for s in again} == {"ana", "bea"}
    rated = matching.groups([_s("ana", 1500, 9, last={"bea"}), _s("bea", 1500, 8, last={"ana"}),
                             _s("cris", 1550, 1)], 2, True)
    assert {s.seek_id for s in rated[0]} == {"ana", "cris"}


def test_unrated_pools_seat_the_longest_waiting_first():
    seekers = [_s(str(i), waited=float(i)) for i in range(5)]
    groups = matching.groups(seekers, 2, False)
    assert [[s.seek_id for s in g] for g in groups] == [["4", "3"], ["2", "1"]]


def test_the_fallback_seats_a_seek_past_its_time_with_whoever_is_left():
    left = [_s("late", waited=31, bot_due=True), _s("new", waited=1), _s("new2", waited=0.5)]
    (group,) = matching.fallback(left, 4)
    assert [s.seek_id for s in group] == ["late", "new", "new2"]
    assert matching.fallback([_s("new", waited=1)], 2) == []


def test_a_wave_of_ten_thousand_chooses_everyone_once():
    seekers = [_s(f"s{i}", 1000 + (i * 7919) % 1000, waited=i % 40) for i in range(10_000)]
    groups = matching.groups(seekers, 2, True)
    seated = [s.seek_id for g in groups for s in g]
    assert len(seated) == len(set(seated)) and len(seated) > 9_000


# --- waves on the store -----------------------------------------------------------------


@pytest.fixture
def tables(stores):
    return stores.tables


POOL = store.Pool("del15", 2, False, {})
RATED = store.Pool("del15", 2, True, {})


def _add(tables, pool: store.Pool, name: str, now: float, *, rating=None, bot_after=None,
         identity=None) -> str:
    """A live seek as POST /seeks writes it."""
    seek_id = store.new_seek_id(pool.name)
    token = store.new_seek_token()
    grant = store.token_digest(store.seat_token(token))
    player = "p_" + name
    identity = identity or seek_id
    fields = {"status": store.WAITING, "token": store.token_digest(token), "grant": grant, "player": player,
              "name": name, "identity": identity, "rating": rating, "created": now, "bot_after": bot_after,
              "correspondence": False, "players": pool.players}
    info = {"identity": identity, "rating": rating, "created": now, "bot_after": bot_after, "player": player,
            "name": name, "grant": grant}
    store.Seeks(tables).add(pool, seek_id, fields, now, live=True, info=info)
    return seek_id


def _status(tables, seek_id: str) -> str:
    return store.Seeks(tables).read(seek_id)["status"]


class Made:
    """A wave's ``make``: the tables it hands on, noted (not made)."""

    def __init__(self):
        self.tables: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, pool_name, table_id):
        with self.lock:
            self.tables.append((pool_name, table_id))


def _seated(tables, pool: store.Pool, made: Made) -> list[str]:
    seeks = store.Seeks(tables)
    out = []
    for _, table_id in made.tables:
        out += [s["seek"] for s in seeks.spec(pool.name, table_id)["seats"] if "seek" in s]
    return out


@pytest.mark.integration
def test_two_workers_pairing_the_same_pool_never_seat_one_seek_twice(tables, monkeypatch):
    """Both waves read the pool before either takes anything (their claim set aside, as if it had
    lapsed): each chooses every seek, and the pool's one-slot step lets only one have each."""
    now = Clock().now
    ids = [_add(tables, POOL, f"n{i}", now) for i in range(20)]
    monkeypatch.setattr(store.Seeks, "claim_wave", lambda self, pool, holder, ms: True)
    both_read = threading.Barrier(2)
    commit = store.Seeks.commit

    def racing_commit(self, *args, **kwargs):
        both_read.wait(10)  # neither commits before both have chosen
        return commit(self, *args, **kwargs)

    monkeypatch.setattr(store.Seeks, "commit", racing_commit)
    made = Made()
    results = []
    workers = [threading.Thread(target=lambda: results.append(pairing.run_wave(tables, (tables,), POOL.name, now,
                                                                               make=made)))
               for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(20)
    assert len(results) == 2
    seated = _seated(tables, POOL, made)
    assert sorted(seated) == sorted(ids)  # everyone once, nobody twice
    assert len(made.tables) == 10
    assert {_status(tables, s) for s in ids} == {store.MATCHED}


@pytest.mark.integration
def test_one_wave_a_pool_at_a_time(tables):
    now = Clock().now
    _add(tables, POOL, "a", now)
    _add(tables, POOL, "b", now)
    seeks = store.Seeks(tables)
    assert seeks.claim_wave(POOL.name, "other worker", 5000)
    made = Made()
    assert pairing.run_wave(tables, (tables,), POOL.name, now, make=made)["claimed"] is False
    assert made.tables == []
    seeks.release_wave(POOL.name, "other worker")
    summary = pairing.run_wave(tables, (tables,), POOL.name, now, make=made)
    assert summary["claimed"] and len(summary["tables"]) == 1
    assert tables.get(store.key(POOL.name, "wave")) is None  # released


@pytest.mark.integration
def test_a_rated_wave_pairs_the_closest_ratings_first(tables):
    now = Clock().now
    by_rating = {r: _add(tables, RATED, f"r{r}", now, rating=r, identity=f"acct{r}")
                 for r in (1500, 1800, 1510, 1790, 2400)}
    made = Made()
    summary = pairing.run_wave(tables, (tables,), RATED.name, now, make=made)
    seeks = store.Seeks(tables)
    pairs = {frozenset(seeks.read(s["seek"])["rating"] for s in seeks.spec(RATED.name, t)["seats"])
             for _, t in made.tables}
    assert pairs == {frozenset({"1500", "1510"}), frozenset({"1790", "1800"})}
    assert summary["waiting"] == 1 and _status(tables, by_rating[2400]) == store.WAITING
    assert all(seeks.spec(RATED.name, t)["rated"] for _, t in made.tables)
    # whom they played is kept, for the next pairing
    assert seeks.last_opponents(RATED.name, ["acct1500"]) == {"acct1500": {"acct1510"}}


@pytest.mark.integration
def test_a_holder_silent_ten_seconds_is_dropped_and_never_paired(tables):
    clock = Clock()
    gone = _add(tables, POOL, "gone", clock.now)
    clock.advance(store.GONE_AFTER + 0.5)
    fresh = _add(tables, POOL, "fresh", clock.now)
    made = Made()
    summary = pairing.run_wave(tables, (tables,), POOL.name, clock.now, make=made)
    assert summary["expired"] == 1 and made.tables == []
    assert _status(tables, gone) == store.EXPIRED and _status(tables, fresh) == store.WAITING
    other = _add(tables, POOL, "other", clock.now)
    pairing.run_wave(tables, (tables,), POOL.name, clock.now, make=made)
    assert sorted(_seated(tables, POOL, made)) == sorted([fresh, other])


@pytest.mark.integration
def test_the_commit_step_takes_a_seek_at_most_once(tables):
    """Two groups sharing a seek in one step, and a group naming a cancelled seek: only what is all
    still waiting is taken."""
    now = Clock().now
    a, b, c, d = (_add(tables, POOL, n, now) for n in "abcd")
    seeks = store.Seeks(tables)
    assert seeks.end(d) == store.WAITING
    spec = {"at": now, "seats": []}
    expired, made = seeks.commit(POOL.name, now, [], [("T1", spec, [a, b]), ("T2", spec, [b, c]), ("T3", spec, [c, d])])
    assert (expired, made) == (0, ["T1"])
    assert [_status(tables, s) for s in (a, b, c, d)] == [store.MATCHED, store.MATCHED, store.WAITING,
                                                           store.CANCELLED]
    assert seeks.read(a)["table_id"] == "T1" and seeks.read(b)["seat"] == "1"


@pytest.mark.integration
def test_the_ticker_hands_a_due_pool_a_wave_and_the_wave_makes_its_table(stores):
    from events.config import Config
    from workers import context, runner

    tables, queue = stores.tables, stores.queues
    clock = Clock()
    context.configure(Config(bot_delay=0.0), clock, tables=tables, queues=queue)
    try:
        a, b = _add(tables, POOL, "a", clock.now), _add(tables, POOL, "b", clock.now)
        seeks = store.Seeks(tables)
        seeks.mark_due(POOL.name, clock.now + 2)
        assert ticker.tick(tables, queue, clock.now) == []  # not due yet
        clock.advance(2)
        handed = ticker.tick(tables, queue, clock.now)
        assert handed and handed[0].startswith("wave_")
        runner.run_burst(tables, queue, clock.now)
        assert _status(tables, a) == _status(tables, b) == store.PAIRED
        table_id = seeks.read(a)["table_id"]
        state = TableService(tables).load(table_id)
        assert state.status == "playing" and sorted(state.seats[s].name for s in state.players) == ["a", "b"]
        assert seeks.making(POOL.name) == {}
    finally:
        context.configure(None, None)


@pytest.mark.integration
def test_a_table_chosen_by_a_wave_that_died_is_made_by_the_next(tables):
    clock = Clock()
    a, b = _add(tables, POOL, "a", clock.now), _add(tables, POOL, "b", clock.now)
    lost = Made()  # the first wave chose the table, and its maker never ran
    pairing.run_wave(tables, (tables,), POOL.name, clock.now, make=lost)
    (_, table_id), = lost.tables
    clock.advance(pairing.MAKE_AGAIN_AFTER)
    svc = TableService(tables)
    pairing.run_wave(tables, (tables,), POOL.name, clock.now,
                     make=lambda pool, tid: pairing.make_chosen(tables, svc, pool, tid))
    assert _status(tables, a) == _status(tables, b) == store.PAIRED
    assert svc.load(table_id).status == "playing"
    # a second maker of the same table (a repeat) appends nothing
    version = svc.load(table_id).version
    spec_again = {"table_id": table_id, "preset": "del15", "settings": {}, "seats": [
        {"seek": a, "player": "p_a", "name": "a", "grant": "x"}, {"seek": b, "player": "p_b", "name": "b",
                                                                    "grant": "y"}]}
    pairing.open_table(svc, spec_again)
    assert svc.load(table_id).version == version


# --- the wave made fast (2026-12-06): what it must keep ---------------------------------------


def _add_old(tables, pool: store.Pool, name: str, now: float, *, identity=None, last=()) -> str:
    """A live seek as POST /seeks wrote it before 2026-12-06: its pool entry a JSON object with the
    seat's parts in it (a pool holds such seeks at the deploy)."""
    import json

    seek_id = _add(tables, pool, name, now, identity=identity)
    token_hash = store.Seeks(tables).read(seek_id)["grant"]
    old = {"identity": identity or seek_id, "rating": None, "created": now, "bot_after": None,
           "player": "p_" + name, "name": name, "grant": token_hash, "account": identity is not None}
    if last:
        old["last"] = sorted(last)
    tables.hset(store.key(pool.name, "info"), seek_id, json.dumps(old, separators=(",", ":")))
    return seek_id


@pytest.mark.integration
def test_seeks_and_tables_written_before_the_compact_form_still_pair_and_are_made(tables):
    """Seeks live up to a day in a pool's hashes and tables chosen wait in ``making``: what the old
    form wrote is read beside the new, paired and made with the right seats."""
    clock = Clock()
    old_a, old_b = _add_old(tables, POOL, "oa", clock.now - 2), _add_old(tables, POOL, "ob", clock.now - 1)
    new_c = _add(tables, POOL, "nc", clock.now)
    pooled = store.Seeks(tables).waiting(POOL.name, 0.0)
    assert [w.seek_id for w in pooled.heard] == [old_a, old_b, new_c]
    live = store.Seeks(tables).live(POOL.name, 0.0)
    rows = dict(zip(live.ids, live.rows, strict=True))
    assert rows[old_a] == [clock.now - 2, None, None, old_a, None]
    assert rows[new_c] == [clock.now, None, None, None, None]
    made = Made()
    summary = pairing.run_wave(tables, (tables,), POOL.name, clock.now, make=made)
    assert len(summary["tables"]) == 1 and summary["waiting"] == 1
    spec = store.Seeks(tables).spec(POOL.name, summary["tables"][0])
    assert [(s["seek"], s["name"], s["player"]) for s in spec["seats"]] == [(old_a, "oa", "p_oa"),
                                                                            (old_b, "ob", "p_ob")]
    assert spec["seats"][0]["grant"] == store.Seeks(tables).read(old_a)["grant"] and spec["rated"] is False
    # a table chosen by the old wave (its whole spec in ``making``) and never made: made by the next
    d, e = _add(tables, POOL, "d", clock.now), _add(tables, POOL, "e", clock.now)
    seeks = store.Seeks(tables)
    seeks.commit(POOL.name, clock.now, [], [("OLDTBL01", {"at": clock.now}, [d, e])])
    whole = {"table_id": "OLDTBL01", "preset": "del15", "settings": {}, "rated": False, "at": clock.now,
             "seats": [{"seek": s, "player": "p_" + n, "name": n, "grant": seeks.read(s)["grant"], "account": False}
                       for s, n in ((d, "d"), (e, "e"))]}
    import orjson

    tables.hset(store.key(POOL.name, "making"), "OLDTBL01", orjson.dumps(whole))
    assert seeks.spec(POOL.name, "OLDTBL01") == whole and seeks.making(POOL.name)["OLDTBL01"] == whole
    clock.advance(pairing.MAKE_AGAIN_AFTER)
    for s in (new_c,):
        seeks.heard(s, clock.now)
    svc = TableService(tables)
    pairing.run_wave(tables, (tables,), POOL.name, clock.now,
                     make=lambda pool, tid: pairing.make_chosen(tables, svc, pool, tid))
    assert _status(tables, d) == _status(tables, e) == store.PAIRED
    state = svc.load("OLDTBL01")
    assert state.status == "playing" and sorted(state.seats[s].name for s in state.players) == ["d", "e"]


@pytest.mark.integration
def test_whom_an_account_played_last_reads_in_both_forms(tables):
    """An old seek's ``last`` (in its JSON object) keeps it from the same opponent as a new one's does."""
    now = Clock().now
    ana = _add_old(tables, POOL, "ana", now - 3, identity="pana", last={"pbea"})
    bea = _add(tables, POOL, "bea", now - 2, identity="pbea")
    cris = _add(tables, POOL, "cris", now - 1, identity="pcris")
    made = Made()
    pairing.run_wave(tables, (tables,), POOL.name, now, make=made)
    assert sorted(_seated(tables, POOL, made)) == sorted([ana, cris]) and _status(tables, bea) == store.WAITING
    # the step noted whom each played last, in the form POST /seeks reads
    assert store.Seeks(tables).last_opponents(POOL.name, ["pana", "pcris"]) == {"pana": {"pcris"},
                                                                                 "pcris": {"pana"}}


@pytest.mark.integration
def test_a_big_wave_hands_its_tables_to_few_jobs_and_one_failing_table_stops_no_other(stores, monkeypatch):
    from events.config import Config
    from workers import context, runner

    tables, queue = stores.tables, stores.queues
    clock = Clock()
    monkeypatch.setattr(pairing, "MAKE_JOBS", 2)
    context.configure(Config(bot_delay=0.0), clock, tables=tables, queues=queue)
    try:
        ids = [_add(tables, POOL, f"n{i}", clock.now - i) for i in range(6)]
        summary = pairing.run_wave(tables, queue, POOL.name, clock.now)
        assert len(summary["tables"]) == 3
        shards = pairing.queues.shards(queue)
        jobs = [j for q in shards for j in pairing.queues.queue_for(q).get_job_ids()]
        assert len(jobs) == 2 and all(j.startswith("pairs_") for j in jobs)  # 2 + 1 tables, not 3 jobs
        bad = summary["tables"][0]  # first of the first job: the others must still be made
        real = pairing.make_chosen

        def failing(tables_, svc, pool_name, table_id):
            if table_id == bad:
                raise RuntimeError("this table fails")
            return real(tables_, svc, pool_name, table_id)

        monkeypatch.setattr(pairing, "make_chosen", failing)
        runner.run_burst(tables, queue, clock.now)
        seeks = store.Seeks(tables)
        statuses = {s: _status(tables, s) for s in ids}
        unmade = {s for s in ids if seeks.read(s)["table_id"] == bad}
        assert len(unmade) == 2 and {statuses[s] for s in unmade} == {store.MATCHED}
        assert {statuses[s] for s in ids if s not in unmade} == {store.PAIRED}
        assert list(seeks.making(POOL.name)) == [bad]  # made again by a later wave
    finally:
        context.configure(None, None)


@pytest.mark.integration
def test_a_wave_leaves_the_collector_as_it_found_it_and_no_cycles_of_its_own(tables):
    """A wave holds Python's cycle collector off while it runs (workers/pairing.py
    ``_collector_paused``): that is safe only if what it makes of its seekers is freed by counts
    alone. The clients' own objects may leave a few small cycles (redis-py's cluster pipeline
    does), as many whatever the pool's size; nothing of the wave's seekers is among them."""
    import gc

    now = Clock().now

    def cycles_left(n: int, enabled: bool) -> list:
        for i in range(n):
            _add(tables, RATED, f"r{i}", now, rating=1400 + 10 * i, identity=f"acct{n}-{i}")
        gc.collect()
        (gc.enable if enabled else gc.disable)()
        try:
            gc.set_debug(gc.DEBUG_SAVEALL)
            summary = pairing.run_wave(tables, (tables,), RATED.name, now, make=Made())
            assert gc.isenabled() is enabled and len(summary["tables"]) == n // 2
            gc.collect()
            return list(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            gc.enable()

    cycles_left(40, True)  # the scripts loaded, the clients' first uses
    small, large = cycles_left(40, True), cycles_left(400, False)
    assert len(large) == len(small)
    assert not [o for o in large if isinstance(o, matching.Seeker) or (isinstance(o, list) and o
                                                                       and isinstance(o[0], matching.Seeker))]


def test_table_ids_made_in_one_go_look_like_the_others():
    from events.service import new_table_ids

    ids = new_table_ids(5000)
    assert len(set(ids)) == 5000
    assert all(len(t) == 8 and not t.startswith("-") and t.replace("-", "").replace("_", "").isalnum() for t in ids)
