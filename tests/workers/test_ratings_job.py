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


def test_a_rated_rematch_is_rated_as_the_next_game(env):
    a, b = new_players(2)
    tid = open_rated(env.svc, [a, b])
    state = play(env.svc, tid, seed=5, resign_after=3, resigner=1)
    assert state.status == "finished" and state.rematch_allowed()
    # both accept before any worker ran: the ratings job (due at the game's end) goes first
    for seat in (0, 1):
        env.svc.execute(tid, {"type": "rematch", "by": seat, "accept": True}, actor=f"seat:{seat}")
    env.drain()
    state = env.state(tid)
    assert state.game == 2 and state.status == "playing"
    first = orjson.loads(env.redis.hget(ratings.player_key(a, "ratings"), "del15:two"))
    assert first["games"] == 1 and first["rating"] > 1500  # seat 1 resigned: a won
    # the rematch played out: the second game rated from the first's ratings
    rng_state = play_rest(env, tid, seed=6)
    assert rng_state.status == "finished" and rng_state.game == 2
    env.drain()
    second = orjson.loads(env.redis.hget(ratings.player_key(a, "ratings"), "del15:two"))
    assert second["games"] == 2
    games = env.redis.hkeys(ratings.player_key(b, "games"))
    assert sorted(g.decode() for g in games) == [f"{tid}:1", f"{tid}:2"]


def play_rest(env, tid, seed):
    import random

    from tests.engine.helpers import random_command

    rng = random.Random(seed)
    state = env.state(tid)
    while (command := random_command(state, rng)) is not None:
        command.pop("deck", None)
        state = env.svc.execute(tid, command, actor=f"seat:{command['by']}").state
    return state
