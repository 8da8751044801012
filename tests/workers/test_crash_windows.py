"""Crash windows between the tables' store and the queue Redis, and a change hook that fails.

No transaction spans the table's timers hash, the due index and RQ: each step is one
single-slot write, and each window between two steps is repaired (the reconciler, a lease
that runs out, a deterministic job id). Two fakeredis servers: the tables', RQ's.
"""

from __future__ import annotations

import logging

import pytest

from workers import index, runner, scheduling, ticker


def _bot_turn_table(env):
    """A table of one human and one bot, at the bot's turn; (id, state)."""
    tid = env.open(bots=("tito",))
    state = env.start(tid)
    if state.turn == 0:
        from engine import view

        option = view(state, 0)["options"][0]
        capture = option["captures"][0] if option["captures"] and not option["may_leave"] else []
        state = env.svc.execute(tid, {"type": "play", "by": 0, "card": option["card"],
                                      "capture": capture}, actor="seat:0").state
    assert state.status == "playing" and state.seats[state.turn].kind == "bot"
    return tid, state


def _bot_moves(env, tid, version):
    return [r for r in env.svc.records(tid, after=version) if r["version"] == version + 1]


def test_hook_crashes_between_the_timers_hash_and_the_index(env, config, monkeypatch):
    """The hash holds the bot's timer, the due index never heard of it: no tick finds it, the
    reconciler's walk over the live tables does, and the bot plays."""
    monkeypatch.setattr(scheduling, "_mark_due", lambda *a: None)  # the process died here
    tid, state = _bot_turn_table(env)
    job_id = f"{tid}_bot_{state.version}"
    assert job_id in env.pending(tid)  # in the table's hash...
    monkeypatch.undo()
    for b in range(index.BUCKETS):  # ...and in no index entry at all
        env.redis.delete(index.due_key(b))
    env.drain()
    assert _bot_moves(env, tid, state.version) == []  # nobody knows to look
    summary = runner.reconcile(env.redis, env.queue, config, clock=env.clock, batch=50)
    assert tid in env.redis.smembers(index.live_key(index.bucket_of(tid))) or summary["tables"]
    assert index.due_at(env.redis, tid) is not None
    env.drain()
    assert _bot_moves(env, tid, state.version)[0]["actor"] == f"seat:{state.turn}"


def test_ticker_crashes_after_its_claim(env):
    """Claimed, then the ticker dies before enqueueing: the lease runs out and a tick finds the
    table again."""
    tid, state = _bot_turn_table(env)
    lease_end, claimed = index.claim(env.redis, index.bucket_of(tid), env.clock.now, 1000)
    assert tid in claimed  # ...and this ticker dies
    env.drain()
    assert _bot_moves(env, tid, state.version) == []  # held by the dead ticker's claim
    assert index.claimed_until(env.redis, tid) == lease_end
    env.clock.now = lease_end + 0.1
    env.drain()
    assert len(_bot_moves(env, tid, state.version)) == 1
    assert index.claimed_until(env.redis, tid) is None


def test_ticker_crashes_after_enqueueing_before_noting_it(env, monkeypatch):
    """Enqueued, not noted as sent: an error there puts the table back due in RETRY_SOON
    (a ticker that died there: its lease runs out); the job still waiting under the same id
    is not enqueued twice, and the bot plays once."""
    tid, state = _bot_turn_table(env)
    job_id = f"{tid}_bot_{state.version}"

    def crash(*args):
        raise RuntimeError("the ticker failed here")

    monkeypatch.setattr(ticker, "_note_sent", crash)
    assert ticker.tick(env.redis, env.queue, env.clock.now) == []  # logged, not noted
    monkeypatch.undo()
    rq_queue = scheduling.queue_for(env.queue)
    assert rq_queue.job_ids == [job_id]
    assert index.claimed_until(env.redis, tid) is None
    lease_end = index.due_at(env.redis, tid)
    assert lease_end == env.clock.now + ticker.RETRY_SOON
    assert ticker.tick(env.redis, env.queue, lease_end - 0.1) == []  # not before
    assert index.due_at(env.redis, tid) == lease_end
    # a moment later, before any worker ran the job: the table is claimed again
    assert ticker.tick(env.redis, env.queue, lease_end + 0.1) == []  # found live: not again
    assert rq_queue.job_ids == [job_id]
    assert env.redis.hget(scheduling.timers_key(tid), "sent:bot").decode() == job_id
    env.clock.now = lease_end + 0.1
    env.drain()
    assert len(_bot_moves(env, tid, state.version)) == 1


def test_a_job_whose_push_the_store_lost_is_handed_again(env):
    """The queue Redis died between the job's hash and its push (kill -9 mid-hand-off; the hand-off
    failed, nothing noted): the hash says queued, no list holds it. The next claim must not take it
    for a live job (it would note it sent and the bot would never play): it is handed again."""
    tid, state = _bot_turn_table(env)
    job_id = f"{tid}_bot_{state.version}"
    rq_queue = scheduling.queue_for(env.queue)
    assert ticker.tick(env.redis, env.queue, env.clock.now) == [job_id]
    env.queue.lrem(rq_queue.key, 0, job_id)  # the push lost with the store...
    env.redis.hdel(scheduling.timers_key(tid), "sent:bot")  # ...so the hand-off failed, nothing noted
    index.mark_due(env.redis, tid, env.clock.now)
    assert env.queue.hget(f"rq:job:{job_id}", "status") == b"queued" and rq_queue.job_ids == []
    assert ticker.tick(env.redis, env.queue, env.clock.now + 0.1) == [job_id]
    assert rq_queue.job_ids == [job_id]
    env.drain()
    assert len(_bot_moves(env, tid, state.version)) == 1


def test_the_reconciler_hands_again_a_job_noted_sent_that_waits_nowhere(env, config):
    """Noted sent, and the job waits in no list (lost as above, by whatever path): no tick looks at
    the table again, the reconciler's pass finds the job stranded and the bot plays. A job taken by
    a worker and not started yet (RQ's intermediate list) is not stranded."""
    tid, state = _bot_turn_table(env)
    job_id = f"{tid}_bot_{state.version}"
    rq_queue = scheduling.queue_for(env.queue)
    ticker.tick(env.redis, env.queue, env.clock.now)
    env.queue.lmove(rq_queue.key, f"{rq_queue.key}:intermediate")  # taken, not started
    assert job_id in scheduling.pending_jobs(env.redis, tid, env.queue)
    env.queue.delete(f"{rq_queue.key}:intermediate")  # ...and gone
    assert job_id not in scheduling.pending_jobs(env.redis, tid, env.queue)
    env.drain()
    assert _bot_moves(env, tid, state.version) == []  # nobody knows to look
    runner.reconcile(env.redis, env.queue, config, [tid], clock=env.clock)
    env.drain()
    assert len(_bot_moves(env, tid, state.version)) == 1


def test_when_a_store_comes_back_the_ticker_asks_for_a_reconcile_pass_at_once(env, monkeypatch):
    """A job the outage stranded (noted sent, waiting nowhere) waits for no minute's pass: the first
    tick that works after failing ones asks for a pass (once over every ticker), which re-arms the
    timer, and the bot plays."""
    tid, state = _bot_turn_table(env)
    job_id = f"{tid}_bot_{state.version}"
    rq_queue = scheduling.queue_for(env.queue)
    ticker.tick(env.redis, env.queue, env.clock.now)
    env.queue.lrem(rq_queue.key, 0, job_id)  # stranded by the outage
    asked = []
    tick = ticker.Ticker(env.redis, env.queue, clock=lambda: env.clock.now,
                         recovered=lambda q: asked.append(runner.reconcile_now(q, env.clock.now)))
    real = ticker.tick

    def away(*args, **kwargs):
        raise ticker.StoreAway([]) from ConnectionError("the store is away")

    monkeypatch.setattr(ticker, "tick", away)
    tick.run_once()
    tick.run_once()
    assert asked == []  # not while it fails
    monkeypatch.setattr(ticker, "tick", real)
    tick.run_once()
    assert asked == [f"escoba_reconcile_recovery_{int(env.clock.now // runner.RECOVERY_SLOT)}"]
    tick.run_once()
    assert len(asked) == 1  # once per outage
    assert runner.reconcile_now(env.queue, env.clock.now) is None  # another ticker, the same outage
    env.drain()  # the pass, then the bot's turn it handed again
    assert len(_bot_moves(env, tid, state.version)) == 1


def test_a_job_enqueued_twice_after_it_ran_appends_nothing(env, monkeypatch):
    """Enqueued and run, but the ticker died before noting it: the next claim enqueues it
    again (the first copy is gone); the copy finds the table moved on and appends nothing."""
    tid, state = _bot_turn_table(env)
    job_id = f"{tid}_bot_{state.version}"
    monkeypatch.setattr(ticker, "_note_sent", lambda *a: (_ for _ in ()).throw(RuntimeError()))
    ticker.tick(env.redis, env.queue, env.clock.now)
    monkeypatch.undo()
    worker = runner.ThreadWorker([scheduling.queue_for(env.queue)], connection=env.queue)
    worker.work(burst=True)  # the bot plays; its move writes the next timers
    assert len(_bot_moves(env, tid, state.version)) == 1
    entry = {"id": job_id, "func": "workers.jobs.bot_turn",
             "args": [tid, state.version], "kwargs": {}, "retry": None}
    assert ticker.enqueue_once(env.queue, entry)  # as a second hand-off would
    before = env.state(tid).version
    worker.work(burst=True)
    assert env.state(tid).version == before  # the copy found the table moved on
    assert len(_bot_moves(env, tid, state.version)) == 1


def test_ticker_crashes_before_putting_the_next_due_time_back(env, config, monkeypatch):
    """The away timer is handed and noted, the expiry's due time not put back: the lease runs
    out, the table is claimed again, and the expiry still fires."""
    tid = env.open(bots=(), humans=2)
    env.start(tid)
    away = scheduling.timers_from_log(env.redis, tid, env.state(tid), config)["away"]

    def crash(*args):
        raise RuntimeError("the ticker died here")

    monkeypatch.setattr(index, "release", crash)
    ticker.tick(env.redis, env.queue, away.due)
    monkeypatch.undo()
    assert scheduling.queue_for(env.queue).job_ids == [away.job_id]
    assert index.due_at(env.redis, tid) is None and index.claimed_until(env.redis, tid)
    env.clock.now = away.due
    worker = runner.ThreadWorker([scheduling.queue_for(env.queue)], connection=env.queue)
    worker.work(burst=True)
    assert env.types(tid).count("AwayOpened") == 1
    env.clock.advance(config.expire_after + 1)
    env.drain()
    assert env.types(tid).count("TableExpired") == 1


def test_a_failing_hook_is_logged_counted_and_repaired_and_the_bot_still_plays(
        env, config, monkeypatch, caplog):
    tid = env.open(bots=("tito",))
    failures = scheduling.FAILURES.value

    def broken(*args, **kwargs):
        raise ConnectionError("the tables' store went away for a moment")

    monkeypatch.setattr(scheduling, "_cas", broken)
    with caplog.at_level(logging.ERROR, logger="escoba.workers"):
        state = env.start(tid)  # the move itself succeeds
        if state.turn == 0:
            env.drain()
            state = env.state(tid)
    monkeypatch.undo()
    assert state.status == "playing"
    assert scheduling.FAILURES.value > failures
    assert any(tid in r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR)
    assert tid in {x.decode() for x in env.redis.smembers(index.repair_key(index.bucket_of(tid)))}
    if state.seats[state.turn].kind != "bot":  # the human leads: make it the bot's turn
        from engine import view

        option = view(state, 0)["options"][0]
        capture = option["captures"][0] if option["captures"] and not option["may_leave"] else []
        monkeypatch.setattr(scheduling, "_cas", broken)
        state = env.svc.execute(tid, {"type": "play", "by": 0, "card": option["card"],
                                      "capture": capture}, actor="seat:0").state
        monkeypatch.undo()
    bot_version = state.version
    env.drain()
    assert _bot_moves(env, tid, bot_version) == []  # no timer: the bot would wait forever
    summary = runner.reconcile(env.redis, env.queue, config, clock=env.clock, batch=1)
    assert f"{tid}_bot_{bot_version}" in summary["scheduled"]  # from the repair set, first
    assert env.redis.scard(index.repair_key(index.bucket_of(tid))) == 0
    env.drain()
    assert _bot_moves(env, tid, bot_version)[0]["actor"].startswith("seat:")


def test_metrics_count_failed_schedules(fake_redis, monkeypatch):
    from api.app import create_app
    from events.config import Config

    app = create_app(fake_redis, Config(bot_delay=0.0))
    http = app.test_client()

    def count() -> float:
        text = http.get("/metrics").get_data(as_text=True)
        line = [x for x in text.splitlines() if x.startswith("escoba_schedule_failures_total")]
        return float(line[0].split()[-1])

    before = count()
    monkeypatch.setattr(scheduling, "_cas", lambda *a, **k: 1 / 0)
    created = http.post("/tables", json={"name": "Ana", "preset": "del15"})
    assert created.status_code == 201, created.get_json()
    assert count() == before + 1


@pytest.mark.parametrize("batch", [1, 3])
def test_each_reconcile_pass_takes_a_bounded_batch_and_the_cursor_goes_round(env, config, batch):
    tids = [env.open(bots=()) for _ in range(7)]
    live = set()
    for b in range(index.BUCKETS):
        live |= {x.decode() for x in env.redis.smembers(index.live_key(b))}
    assert set(tids) <= live
    seen: list[str] = []
    loads = []
    real = runner.reconcile_table

    def counting(tables, queue, svc, table_id, *rest):
        loads.append(table_id)
        return real(tables, queue, svc, table_id, *rest)

    runner.reconcile_table = counting
    try:
        for _ in range(40):
            loads.clear()
            runner.reconcile(env.redis, env.queue, config, clock=env.clock, batch=batch)
            assert len(loads) <= batch * 2  # SSCAN's COUNT is a hint: about a batch, never all
            seen += loads
            if set(tids) <= set(seen):
                break
    finally:
        runner.reconcile_table = real
    assert set(tids) <= set(seen)  # every live table is reached, a batch at a time


def test_the_store_goes_away_between_a_bots_move_and_its_timers(env, monkeypatch):
    """A bots-only game: a bot's move is appended, then writing its timers fails (the store went
    away between the two). The job fails on it (not quietly: nothing else would write them but
    the reconciler's slow walk), RQ retries it a moment later; the retry finds the table moved
    on and writes its timers; the bots play on."""
    from redis.exceptions import ConnectionError as StoreAway

    tid = env.bots_only()
    ticker.tick(env.redis, env.queue, env.clock.now)  # the first bot's job is handed
    original = scheduling.apply_timers
    failures = scheduling.FAILURES.value

    def away_once(*args, **kwargs):
        monkeypatch.setattr(scheduling, "apply_timers", original)
        raise StoreAway("the store went away")

    monkeypatch.setattr(scheduling, "apply_timers", away_once)
    before = env.state(tid).version
    worker = runner.ThreadWorker([scheduling.queue_for(env.queue)], connection=env.queue)
    worker.work(burst=True)
    after = env.state(tid).version
    assert after > before  # the move stands
    assert scheduling.FAILURES.value == failures + 1
    assert f"{tid}_bot_{after}" not in env.pending(tid)  # the next bot's timer: the chain would stop
    assert env.queue.zcard("rq:scheduled:escoba") == 1  # the job's retry, a moment later
    env.clock.advance(2)
    env.drain()  # the retry: stale, it writes the timers; then the bots play on
    assert env.state(tid).status == "finished"


def test_a_worker_dies_between_a_bots_timers_and_their_index_entry(env, monkeypatch):
    """The bot's move and its next timer are written, the due index entry is not (the worker died
    there); its job, put back by the sweep, runs again, finds the table moved on and puts the
    entry back: the bots play on without the reconciler."""
    tid = env.bots_only()
    ticker.tick(env.redis, env.queue, env.clock.now)
    monkeypatch.setattr(scheduling, "_mark_due", lambda *a: None)  # the worker died here...
    job_id = scheduling.queue_for(env.queue).job_ids[0]
    worker = runner.ThreadWorker([scheduling.queue_for(env.queue)], connection=env.queue)
    worker.work(burst=True)
    monkeypatch.undo()
    assert index.due_at(env.redis, tid) > env.clock.now + 60  # only the expiry: the bot's timer is lost to it
    from workers import ticker as t

    t.enqueue_once(env.queue, {"id": job_id, "func": "workers.jobs.bot_turn",  # ...and its job runs again
                               "args": [tid, int(job_id.rsplit("_", 1)[1])], "kwargs": {}, "retry": None})
    worker.work(burst=True)
    env.drain()
    assert env.state(tid).status == "finished"
