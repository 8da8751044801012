"""The timers in burst mode, on fakeredis, with a clock the test moves."""

from __future__ import annotations

import dataclasses
import math

from rq.job import Job

from events import compaction
from events.service import TableService
from workers import index, runner, scheduling, ticker


def _to_human_turn(env, tid):
    """Let the bots play until it is the human's (seat 0) turn."""
    env.drain()
    state = env.state(tid)
    assert state.status == "playing" and state.turn == 0
    return state


def _want(env, tid, kind):
    """The id of the ``kind`` timer the table's log calls for now."""
    return scheduling.timers_from_log(env.redis, tid, env.state(tid), env.config)[kind].job_id


def _due(env, tid, job_id):
    """The due time the table's own timers hash holds for ``job_id``."""
    return scheduling.timer_due(env.redis, tid, job_id)


# --- which timers, from state and log times (pure) --------------------------------

def test_due_timers_for_a_human_turn_and_a_bot_turn(env):
    tid = env.open(bots=("tito",))
    state = env.start(tid)
    times = scheduling.LogTimes(last_at=1000.0, move_at=1000.0, move_version=state.version,
                                turn_at=990.0)
    wanted = scheduling.due_timers(tid, state, times, env.config)
    if state.turn == 0:
        assert set(wanted) == {"away", "expire"}
        assert wanted["away"].due == 990.0 + env.config.away_after
        assert wanted["away"].job_id == f"{tid}_away_{990 + int(env.config.away_after)}"
    else:
        assert set(wanted) == {"bot", "expire"}
        assert wanted["bot"].job_id == f"{tid}_bot_{state.version}"
    assert wanted["expire"].due == 1000.0 + env.config.expire_after
    assert wanted["expire"].job_id == f"{tid}_expire_{1000 + int(env.config.expire_after)}"
    # lazy timers are named by their due second, rounded up
    later = dataclasses.replace(times, move_at=1000.2)
    assert scheduling.due_timers(tid, state, later, env.config)["expire"].job_id == \
        f"{tid}_expire_{1001 + int(env.config.expire_after)}"


def test_only_compaction_once_expired_and_lapse_once_finished(env):
    tid = env.open()
    env.start(tid)
    env.drain()
    env.svc.execute(tid, {"type": "resign", "by": 0}, actor="seat:0")
    assert env.pending(tid) == [f"{tid}_rematch_{env.state(tid).version}"]
    tid2 = env.open()
    env.svc.execute(tid2, {"type": "expire"}, actor="system")
    assert env.pending(tid2) == [f"{tid2}_compact_{env.state(tid2).version}"]


def test_a_table_closed_for_good_is_compacted_after_compact_after(env, config):
    tid = env.open()
    env.start(tid)
    env.drain()
    env.svc.execute(tid, {"type": "resign", "by": 0}, actor="seat:0")
    log = env.svc.records(tid)
    env.clock.advance(config.rematch_window + 1)
    env.drain()  # the offer lapses: closed for good, the compact timer is set
    final = env.state(tid)
    assert env.types(tid)[-1] == "RematchLapsed"
    assert env.pending(tid) == [f"{tid}_compact_{final.version}"]
    env.clock.advance(config.compact_after - 5)
    env.drain()
    assert not compaction.is_compacted(env.redis, tid)  # never early
    env.clock.advance(10)
    env.drain()
    assert compaction.is_compacted(env.redis, tid)
    assert env.pending(tid) == []
    # kept: the archive, the tokens and the table's row in its players' lists (events/my_tables.py)
    left = [k for k in env.redis.keys(f"table:{{{tid}}}:*") if not k.endswith((b":archive", b":tokens", b":row"))]
    # idempotency keys cannot be named without a SCAN: they go by their TTL, which (in real
    # time, not this test's clock) is over before compact_after
    assert left and all(b":idem:" in k for k in left)
    assert all(0 < env.redis.ttl(k) <= config.compact_after for k in left)
    fresh = TableService(env.redis, cache_size=0)
    assert fresh.records(tid)[: len(log)] == log and fresh.load(tid) == final
    # the reconciler leaves it alone: no timer, no hot key written again
    assert runner.reconcile(env.redis, env.queue, config, [tid], clock=env.clock)["scheduled"] == []
    assert not env.redis.exists(scheduling.timers_key(tid))


# --- each timer fires once when due, and not once the table moved on ------------------

def test_away_fires_once_when_due(env, config):
    tid = env.open(bots=("tito",))
    env.start(tid)
    _to_human_turn(env, tid)
    assert _want(env, tid, "away") in env.pending(tid)
    expire_id = _want(env, tid, "expire")
    env.clock.advance(config.away_after - 2)
    env.drain()
    assert "AwayOpened" not in env.types(tid)
    env.clock.advance(3)
    env.drain()
    assert env.types(tid).count("AwayOpened") == 1
    assert env.state(tid).away_open == 0
    env.clock.advance(config.away_after * 3)
    env.drain()
    assert env.types(tid).count("AwayOpened") == 1
    # the other player may now claim it; the expiry timer is still the last move's
    assert [j for j in env.pending(tid) if "_expire_" in j] == [expire_id]


def test_away_does_not_fire_once_the_turn_moved_on(env, config):
    tid = env.open(bots=("tito",))
    env.start(tid)
    state = _to_human_turn(env, tid)
    old = _want(env, tid, "away")
    env.clock.advance(config.away_after / 2)
    env.play_first(tid, state)
    # a bot's turn wants no away timer, but the lazy job stays (no reschedule per turn)
    assert old in env.pending(tid)
    env.drain()  # the bot answers at once (bot_delay 0): the human's turn again
    state2 = env.state(tid)
    env.clock.advance(config.away_after / 2 + 5)  # past the first turn's due time
    env.drain()  # it fires, finds itself early and moves to the new turn's due time
    assert "AwayOpened" not in env.types(tid)
    assert old not in env.pending(tid)
    if state2.status == "playing" and state2.turn == 0:
        assert _want(env, tid, "away") in env.pending(tid)
        env.clock.advance(config.away_after)
        env.drain()
        assert env.types(tid).count("AwayOpened") == 1
        assert env.state(tid).turn_seq == state2.turn_seq


def test_expiry_fires_once_after_the_last_move_only(env, config):
    tid = env.open(bots=("tito",))
    env.start(tid)
    state = _to_human_turn(env, tid)
    env.clock.advance(config.expire_after / 2)
    env.play_first(tid, state)
    env.drain()
    last_move = env.state(tid).version
    env.clock.advance(config.expire_after / 2 + 10)  # past the first move's expiry time
    env.drain()
    types = env.types(tid)
    assert "TableExpired" not in types
    assert types.count("AwayOpened") == 1  # PLAYER AWAY opened, but that is no move
    env.clock.advance(config.expire_after / 2)
    env.drain()
    types = env.types(tid)
    assert types.count("TableExpired") == 1
    assert env.state(tid).status == "expired"
    assert env.pending(tid) == [f"{tid}_compact_{env.state(tid).version}"]  # the only timer left
    expired = [r for r in env.svc.records(tid) if r["type"] == "TableExpired"][0]
    assert expired["actor"] == "system" and expired["version"] > last_move
    env.clock.advance(config.expire_after * 2)
    env.drain()
    assert env.types(tid).count("TableExpired") == 1


def test_lazy_timers_stay_put_while_a_table_plays_then_move_themselves(env, config, monkeypatch):
    """Two humans play many moves: the away and expire jobs scheduled at the start stay (no
    transaction, no new job). Each fires at its first due time, finds the table moved on,
    reschedules itself at the right later time, and then fires once."""
    import random

    from events.autoplay import next_command

    tid = env.open(bots=(), humans=2)
    env.start(tid)
    first = {k: _want(env, tid, k) for k in ("away", "expire")}
    assert sorted(env.pending(tid)) == sorted(first.values())
    first_due = {k: _due(env, tid, j) for k, j in first.items()}
    start = env.clock.now

    transactions = []
    real_apply = scheduling.apply_timers
    monkeypatch.setattr(scheduling, "apply_timers",
                        lambda *a, **kw: transactions.append(a[1:3]) or real_apply(*a, **kw))
    rng = random.Random(3)
    moves = 0
    for _ in range(20):
        state = env.state(tid)
        if state.status != "playing":
            break
        env.clock.advance(2)
        command, actor = next_command(state, rng)
        env.svc.execute(tid, command, actor=actor)
        moves += 1
    state = env.state(tid)
    assert moves >= 10 and state.status == "playing"
    assert transactions == []  # the hook only read (and stamped the version): no MULTI
    assert sorted(env.pending(tid)) == sorted(first.values())
    assert env.queue.keys("rq:*") == []  # nothing handed to RQ before it is due
    monkeypatch.setattr(scheduling, "apply_timers", real_apply)

    last_move = env.clock.now
    away_due = scheduling.timers_from_log(env.redis, tid, state, config)["away"].due
    assert away_due > first_due["away"] and away_due == last_move + config.away_after
    # the first away job fires at its own (earlier) time: too early, so it moves itself
    env.clock.now = first_due["away"] + 1
    env.drain()
    assert "AwayOpened" not in env.types(tid)
    assert first["away"] not in env.pending(tid)
    moved = _want(env, tid, "away")
    assert moved == f"{tid}_away_{math.ceil(away_due)}" and moved in env.pending(tid)
    assert _due(env, tid, moved) == away_due
    assert first["expire"] in env.pending(tid)  # not due yet: untouched
    env.clock.now = away_due - 1
    env.drain()
    assert "AwayOpened" not in env.types(tid)
    env.clock.now = away_due + 1
    env.drain()
    assert env.types(tid).count("AwayOpened") == 1

    # the expiry: due at the first move's time + expire_after, but the last move was later
    assert first_due["expire"] == start + config.expire_after
    env.clock.now = first_due["expire"] + 1
    env.drain()
    assert "TableExpired" not in env.types(tid)
    moved = _want(env, tid, "expire")
    assert env.pending(tid) == [moved] and moved == \
        f"{tid}_expire_{math.ceil(last_move + config.expire_after)}"
    env.clock.now = last_move + config.expire_after - 1
    env.drain()
    assert "TableExpired" not in env.types(tid)
    env.clock.now = last_move + config.expire_after + 1
    env.drain()
    env.clock.advance(config.expire_after * 2)
    env.drain()
    assert env.types(tid).count("TableExpired") == 1 and env.types(tid).count("AwayOpened") == 1
    assert env.pending(tid) == [f"{tid}_compact_{env.state(tid).version}"]  # closed for good


def test_an_early_lazy_job_under_its_own_id_reschedules_under_another(env, config):
    """Read on a clock behind the one that scheduled it, a job may find the timer it stands
    for not due yet: it must not reuse its own (running) id."""
    tid = env.open(bots=(), humans=2)
    env.start(tid)
    expire_id = _want(env, tid, "expire")
    due = scheduling.timers_from_log(env.redis, tid, env.state(tid), config)["expire"].due
    queue = scheduling.queue_for(env.queue)
    queue.enqueue("workers.jobs.expire", tid, 1, job_id=expire_id, result_ttl=0)  # fires now
    env.clock.now = due - 5  # not due by the job's clock
    env.drain()
    assert "TableExpired" not in env.types(tid)
    assert f"{expire_id}_r" in env.pending(tid)
    env.clock.now = due + 1
    env.drain()
    assert env.types(tid).count("TableExpired") == 1


def test_a_waiting_table_expires_too(env, config):
    tid = env.open(bots=())
    env.clock.advance(config.expire_after + 1)
    env.drain()
    assert env.state(tid).status == "expired"


# --- bots ------------------------------------------------------------------------

def test_bot_turns_chain_through_a_bots_only_game(env):
    tid = env.bots_only(bots=("carmen", "tito"))
    ran = env.drain()
    state = env.state(tid)
    assert state.status == "finished", state.status
    assert state.ended_by == "target"
    types = env.types(tid)
    assert types.count("RoundDealt") >= 2  # NEXT ROUND came from a bot between rounds
    assert ran >= types.count("CardPlayed")
    # every bot move at its own version: one append per job, never two for one version
    bot_records = [r for r in env.svc.records(tid) if r["type"] == "CardPlayed"]
    assert all(r["actor"].startswith("seat:") for r in bot_records)
    # the finished game keeps one timer: the rematch offer's lapse
    assert env.pending(tid) == [f"{tid}_rematch_{state.version}"]


def test_a_bot_job_run_twice_plays_once(env):
    tid = env.open(bots=("tito",))
    state = env.start(tid)
    if state.turn == 0:
        state = env.play_first(tid, state)
    assert state.seats[state.turn].kind == "bot"
    queue = scheduling.queue_for(env.queue)
    for n in range(3):  # copies of the same job under other ids, as after a crash
        queue.enqueue("workers.jobs.bot_turn", tid, state.version, job_id=f"dup{n}", result_ttl=0)
    before = env.svc.records(tid, after=state.version)
    assert before == []
    env.drain()
    after = env.svc.records(tid, after=state.version)
    plays_at_next = [r for r in after if r["version"] == state.version + 1]
    assert len(plays_at_next) == 1 and plays_at_next[0]["actor"] == f"seat:{state.turn}"


def test_a_stale_bot_job_does_nothing(env):
    tid = env.open(bots=("tito",))
    state = env.start(tid)
    queue = scheduling.queue_for(env.queue)
    queue.enqueue("workers.jobs.bot_turn", tid, state.version - 1, job_id="stale1", result_ttl=0)
    queue.enqueue("workers.jobs.expire", tid, 1, job_id="stale2", result_ttl=0)
    queue.enqueue("workers.jobs.away", tid, state.turn_seq - 1, job_id="stale3", result_ttl=0)
    versions = env.state(tid).version
    runner.run_burst(env.redis, env.queue, env.clock.now - 10)  # nothing of the table's own is due yet
    types = env.types(tid)
    assert "TableExpired" not in types and "AwayOpened" not in types
    assert env.state(tid).version >= versions


def _play_to_round_end(env, tid):
    """Two humans play the engine's first legal move until the round is over."""
    state = env.state(tid)
    while state.status == "playing":
        state = env.play_first(tid, state, state.turn)
    return state


def test_between_rounds_the_away_job_stays_and_drops_itself_if_it_fires(env, config, monkeypatch):
    tid = env.open(bots=(), humans=2, preset="del15")
    env.start(tid)
    away_before = env.redis.hget(scheduling.timers_key(tid), "away")
    assert away_before is not None
    rescheduled = []
    real_apply = scheduling.apply_timers
    monkeypatch.setattr(scheduling, "apply_timers", lambda *a, **k: rescheduled.append(a) or real_apply(*a, **k))
    state = _play_to_round_end(env, tid)
    assert state.status == "round_over" and "away" not in scheduling.due_timers(
        tid, state, scheduling.times_for(env.redis, tid, state), config)
    # no turn is open, yet the away job stays: ending a round rescheduled nothing
    assert rescheduled == [] and any("_away_" in j for j in env.pending(tid))
    # nobody starts the next round for the away time: the job fires, finds nothing to do, goes
    env.clock.advance(config.away_after + 5)
    env.drain()
    assert "AwayOpened" not in env.types(tid)
    assert env.redis.hget(scheduling.timers_key(tid), "away") is None
    assert not any("_away_" in j for j in env.pending(tid))
    # the next round's first turn gets its own away timer again
    state = env.svc.execute(tid, {"type": "next_round", "by": 0}, actor="seat:0").state
    assert state.status == "playing"
    assert any("_away_" in j for j in env.pending(tid))
    env.clock.advance(config.away_after + 5)
    env.drain()
    assert env.types(tid).count("AwayOpened") == 1


def test_a_finished_game_drops_its_lazy_timers(env):
    tid = env.open(bots=(), humans=2)
    env.start(tid)
    assert any("_away_" in j for j in env.pending(tid))
    env.svc.execute(tid, {"type": "resign", "by": 0}, actor="seat:0")
    assert not any("_away_" in j or "_expire_" in j for j in env.pending(tid))


# --- the rematch -----------------------------------------------------------------

def test_rematch_starts_promptly_when_everyone_accepted(env):
    tid = env.open(bots=("tito",))
    env.start(tid)
    env.drain()
    env.svc.execute(tid, {"type": "resign", "by": 0}, actor="seat:0")
    env.svc.execute(tid, {"type": "rematch", "by": 0, "accept": True}, actor="seat:0")
    assert env.pending(tid) == [f"{tid}_rematch_{env.state(tid).version}"]
    env.drain()
    state = env.state(tid)
    assert state.game == 2 and state.status in ("playing", "round_over")
    assert env.types(tid).count("RematchStarted") == 1


def test_rematch_offer_lapses_once(env, config):
    tid = env.open(bots=("tito",))
    env.start(tid)
    env.drain()
    env.svc.execute(tid, {"type": "resign", "by": 0}, actor="seat:0")
    env.clock.advance(config.rematch_window - 2)
    env.drain()
    assert "RematchLapsed" not in env.types(tid)
    env.clock.advance(3)
    env.drain()
    env.clock.advance(config.rematch_window * 2)
    env.drain()
    assert env.types(tid).count("RematchLapsed") == 1
    assert env.pending(tid) == [f"{tid}_compact_{env.state(tid).version}"]  # closed for good


# --- ordering and repair -------------------------------------------------------------

def test_the_hook_reads_its_timers_in_the_appends_own_step(env, monkeypatch):
    def no_round_trip(*args, **kwargs):
        raise AssertionError("the hook made a round trip of its own")

    monkeypatch.setattr(scheduling, "_read_and_stamp", no_round_trip)
    tid = env.open(bots=("tito",))
    state = env.start(tid)
    if state.turn == 0:
        state = env.play_first(tid, state)
    stamped = env.redis.hget(scheduling.timers_key(tid), "version")
    assert int(stamped) == state.version
    assert env.pending(tid)  # and the timers were scheduled from what the append read back
    env.drain()
    assert int(env.redis.hget(scheduling.timers_key(tid), "version")) == env.state(tid).version


def test_a_move_that_starts_no_turn_needs_no_log_read_while_away_is_pending(env, config, monkeypatch):
    tid = env.open(bots=(), humans=2)
    state = env.start(tid)
    due = _want(env, tid, "away")
    env.clock.advance(30)
    # a move within the turn (as TAKE THE 15 is): its record starts no turn
    within = [{"type": "FifteenTaken", "version": state.version, "at": scheduling.utcnow_iso(env.clock.now)}]
    real_tail = scheduling.read_tail

    def no_log_read(*args, **kwargs):
        raise AssertionError("read the log back")

    monkeypatch.setattr(scheduling, "read_tail", no_log_read)
    assert scheduling.after_change(env.redis, tid, state, within, config) == {
        "scheduled": [], "removed": [], "skipped": False}
    assert due in env.pending(tid)
    # with no away job pending, the turn's start is read back from the log: the same due time
    monkeypatch.setattr(scheduling, "read_tail", real_tail)
    env.redis.hdel(scheduling.timers_key(tid), "away")
    result = scheduling.after_change(env.redis, tid, state, within, config)
    assert result["scheduled"] == [due]


def test_a_late_hook_for_an_older_version_changes_nothing(env):
    tid = env.open(bots=("tito",))
    old = env.start(tid)
    env.drain()
    now = env.pending(tid)
    old_records = env.svc.records(tid, after=old.version - 1)[:1]
    result = scheduling.after_change(env.redis, tid, old, old_records, env.config)
    assert result["skipped"] and env.pending(tid) == now


def test_reconciler_rebuilds_lost_timers(env, config):
    tid = env.open(bots=("tito",))
    env.start(tid)
    state = _to_human_turn(env, tid)
    waiting = env.open(bots=())
    finished = env.open(bots=("carmen",))
    env.start(finished)
    env.drain()
    env.svc.execute(finished, {"type": "resign", "by": 0}, actor="seat:0")
    before = {t: env.pending(t) for t in (tid, waiting, finished)}
    dues = {j: _due(env, t, j) for t, ids in before.items() for j in ids}
    assert all(before.values())
    # the queue Redis loses everything; the tables' store loses the timers and the due index
    env.queue.flushall()
    for t in before:
        env.redis.delete(scheduling.timers_key(t))
    for b in range(index.BUCKETS):
        env.redis.delete(index.due_key(b), index.claims_key(b))
    assert all(env.pending(t) == [] for t in before)
    summary = runner.reconcile(env.redis, env.queue, config, clock=env.clock)
    assert summary["tables"] >= 3 and not summary["errors"]
    after = {t: env.pending(t) for t in before}
    assert after == before
    assert {j: _due(env, t, j) for t, ids in after.items() for j in ids} == dues
    assert all(index.due_at(env.redis, t) == min(_due(env, t, j) for j in after[t]) for t in after)
    # a second pass changes nothing
    assert runner.reconcile(env.redis, env.queue, config, clock=env.clock)["scheduled"] == []
    # and the rebuilt timers fire when due
    env.clock.advance(config.away_after + 1)
    env.drain()
    assert env.types(tid).count("AwayOpened") == 1
    assert env.state(tid).turn_seq == state.turn_seq


def test_reconciler_rearms_a_timer_whose_job_failed(env, config):
    tid = env.open(bots=("tito",))
    env.start(tid)
    _to_human_turn(env, tid)
    job_id = _want(env, tid, "away")
    due = _due(env, tid, job_id)
    # the ticker hands it at its due time, then the job fails (as a worker that died mid-job
    # leaves it once RQ cleans up)
    assert job_id in ticker.tick(env.redis, env.queue, due + 1)
    assert env.redis.hget(scheduling.timers_key(tid), "sent:away").decode() == job_id
    Job.fetch(job_id, connection=env.queue).set_status("failed")
    assert not scheduling.job_alive(env.queue, job_id)
    assert job_id not in env.pending(tid)
    summary = runner.reconcile(env.redis, env.queue, config, clock=env.clock)
    assert job_id in summary["scheduled"]
    assert job_id in env.pending(tid) and index.due_at(env.redis, tid) == due
    env.clock.now = due + 2
    env.drain()
    assert env.types(tid).count("AwayOpened") == 1


def test_a_short_bot_delay_is_handed_when_due_not_before(env, config):
    env.config = dataclasses.replace(config, bot_delay=0.3)
    tid = env.open(bots=("tito",))
    state = env.start(tid)
    if state.turn == 0:
        state = env.play_first(tid, state)
    env.redis.delete(scheduling.timers_key(tid))  # as if scheduled afresh, with the new delay
    last = env.svc.records(tid, after=state.version - 1)
    scheduling.after_change(env.redis, tid, state, last, env.config)
    job_id = f"{tid}_bot_{state.version}"
    due = scheduling.parse_at(last[-1]["at"]) + 0.3
    assert _due(env, tid, job_id) == due and index.due_at(env.redis, tid) <= due  # only lowered
    assert ticker.tick(env.redis, env.queue, due - 0.05) == []
    assert index.due_at(env.redis, tid) == due  # the look found nothing due yet: put back
    assert ticker.tick(env.redis, env.queue, due) == [job_id]
    assert Job.fetch(job_id, connection=env.queue).get_status() == "queued"
