"""The ratings job on the timers: a rated game's end schedules it, it runs once, and running it again
(a doubled hand-off, a retry, the reconciler re-arming it) changes nothing."""

from __future__ import annotations

import orjson

from events import ratings
from tests.events.ratings_games import new_players, open_rated, play
from workers import ratings as ratings_job
from workers import runner, scheduling


def _stored(env, pids):
    return {p: (env.redis.hgetall(ratings.player_key(p, "ratings")), env.redis.hgetall(ratings.player_key(p, "totals")))
            for p in pids}


def test_a_rated_game_ending_schedules_the_ratings_job_which_rates_once(env):
    a, b = new_players(2)
    tid = open_rated(env.svc, [a, b])
    state = play(env.svc, tid, seed=3)
    assert state.status == "finished"
    timers = scheduling.read_timers(env.redis, tid)
    entry = orjson.loads(timers["ratings"])
    assert entry["id"] == f"{tid}_ratings_1" and entry["func"] == "workers.ratings.run"
    env.drain()
    winner = state.seats[state.winners[0]].account
    loser = b if winner == a else a
    won = orjson.loads(env.redis.hget(ratings.player_key(winner, "ratings"), "del15:two"))
    lost = orjson.loads(env.redis.hget(ratings.player_key(loser, "ratings"), "del15:two"))
    assert won["rating"] > 1500 > lost["rating"] and won["games"] == 1
    once = _stored(env, [a, b])
    # the same job again, by hand and through the reconciler (a finished job is gone from RQ: re-armed)
    assert ratings_job.run(tid, 1) == "already"
    runner.reconcile(env.redis, env.queue, env.config, table_ids=[tid], clock=env.clock)
    env.drain()
    assert _stored(env, [a, b]) == once


def test_an_unrated_game_schedules_no_ratings_job(env):
    a, b = new_players(2)
    tid = open_rated(env.svc, [a, b], rated=False)
    play(env.svc, tid, seed=4)
    assert "ratings" not in scheduling.read_timers(env.redis, tid)
