"""The hook's shortcut for the common move (``scheduling.steady``) against the full plan.

Real appends are recorded from played games (two humans, a human and a bot, bots only, three
humans; PLAYER AWAY opened once), then the timers hash, the notice URLs and the delays they are
judged with are varied around what each append read back. Wherever ``steady`` says nothing can
change, the full plan (``due_timers``, ``_notices``, ``_plan``) must find nothing to write.
"""

from __future__ import annotations

import functools

import fakeredis
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from events.config import Config
from workers import context, scheduling

from .conftest import Clock, Env, start_bots_only

CONFIG = Config(bot_delay=0.0, away_after=60.0, expire_after=600.0, rematch_window=300.0,
                notify_allow_private=True)


def _play_humans(env: Env, tid: str, *, away_at: int | None = None) -> None:
    """Every human seat plays its first legal move until the game ends; bots play by the queue."""
    for n in range(80):
        env.clock.advance(7)
        env.drain()
        state = env.state(tid)
        if state.status == "round_over":
            state = env.svc.execute(tid, {"type": "next_round", "by": state.players[0]},
                                    actor=f"seat:{state.players[0]}").state
        if state.status != "playing":
            return
        if n == away_at:  # the human at the turn goes quiet: PLAYER AWAY opens
            env.clock.advance(CONFIG.away_after + 1)
            env.drain()
            continue
        if state.seats[state.turn].kind != "bot":
            env.play_first(tid, state, state.turn)


@functools.cache
def _appends() -> tuple[Env, tuple]:
    """(env, every append recorded): built once, its store kept for the log reads of the full plan."""
    redis = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    queue = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    clock = Clock()
    context.configure(CONFIG, clock, tables=redis)
    seen = []
    real = scheduling.TimersHook.__call__

    def recording(hook, table_id, state, records, appended=None):  # the API's hook and the jobs' alike
        seen.append((table_id, state, records, appended))
        real(hook, table_id, state, records, appended)

    scheduling.TimersHook.__call__ = recording
    try:
        env = Env(redis, clock, CONFIG, queue)
        for preset, target, bots, humans, away_at in (("selminha", 21, (), 2, 9), ("del15", 10, ("tito",), 1, None),
                                                      ("cardgames", 21, (), 3, None)):
            tid = env.open(bots=bots, humans=humans, preset=preset, target=target)
            env.start(tid)
            _play_humans(env, tid, away_at=away_at)
        start_bots_only(env.svc)
        env.drain()
        env.clock.advance(CONFIG.expire_after + 1)  # the tables still open expire
        env.drain()
    finally:
        scheduling.TimersHook.__call__ = real
        context.configure(None, None)
    return env, tuple(s for s in seen if s[3] is not None)


def test_the_recorded_games_cover_what_the_property_needs():
    _, seen = _appends()
    states = [s for _, s, _, _ in seen]
    assert {s.status for s in states} >= {"playing", "round_over", "finished", "expired"}
    assert any(s.away_open is not None for s in states)
    assert sum(1 for t, s, r, a in seen if scheduling.steady(s, *a.hashes, r, CONFIG)) > 50


_KINDS = ("away", "expire", "bot", "rematch", "compact", "notify:0")


def _varied(table_id: str, stored: dict[str, str], draw) -> dict[str, str]:
    """The read-back timers hash, each kind kept, dropped, or given another due time or id."""
    out = dict(stored)
    for kind in _KINDS:
        how = draw(st.sampled_from(("keep", "keep", "drop", "earlier", "later", "other_id", "add")))
        entry = orjson.loads(out[kind]) if kind in out else None
        if how == "drop":
            out.pop(kind, None)
        elif how == "add" and entry is None:
            due = draw(st.floats(0, 4e9, allow_nan=False))
            out[kind] = orjson.dumps({"id": f"{table_id}_{kind}_x", "due": due}).decode()
        elif entry is not None and how in ("earlier", "later", "other_id"):
            if how == "other_id":
                entry["id"] += "_y"
            else:
                entry["due"] += draw(st.floats(0.001, 1e6)) * (-1 if how == "earlier" else 1)
            out[kind] = orjson.dumps(entry).decode()
        if draw(st.booleans()) and kind in out:
            out[scheduling.SENT + kind] = orjson.loads(out[kind])["id"]
    return out


@settings(max_examples=600, deadline=None)
@given(data=st.data())
def test_steady_means_the_full_plan_writes_nothing(data):
    env, seen = _appends()
    table_id, state, records, appended = data.draw(st.sampled_from(seen))
    stored, urls = appended.hashes
    stored = _varied(table_id, stored, data.draw)
    urls = data.draw(st.sampled_from(({}, dict(urls), {"0": "http://x"}, {"push:p1": "1"})))
    config = Config(bot_delay=0.0, away_after=data.draw(st.sampled_from((1.0, 60.0, 7200.0))),
                    expire_after=data.draw(st.sampled_from((5.0, 600.0, 86400.0))))
    if not scheduling.steady(state, stored, urls, records, config):
        return  # the full plan decides; nothing to hold
    current = scheduling._current(stored)
    times = scheduling.times_for(env.redis, table_id, state, records, turn_bound="away" in current)
    wanted = scheduling.due_timers(table_id, state, times, config)
    extra = scheduling._notices(table_id, state, scheduling._notice_seats(state, records), urls, times.last_at)
    assert not extra
    assert not scheduling._plan(current, wanted, extra, {}, keep=scheduling.keep_lazy(state))


def test_a_steady_move_skips_the_full_plan(env, monkeypatch):
    tid = env.open(bots=(), humans=2)
    state = env.start(tid)
    planned = []
    real = scheduling.due_timers
    monkeypatch.setattr(scheduling, "due_timers", lambda *a, **k: planned.append(a) or real(*a, **k))
    for _ in range(2):
        env.clock.advance(5)
        seat = state.turn
        state = env.play_first(tid, state, seat)
        assert state.status == "playing" and state.turn != seat
    assert planned == []  # two humans' moves: their away and expire timers stand, nothing is planned
    assert {"away", "expire"} <= set(scheduling.read_timers(env.redis, tid))
    # a notice URL registered: the full plan runs again (it may have a notice to send)
    env.redis.hset(scheduling.notify_key(tid), str(state.turn), "http://127.0.0.1:9/x")
    env.clock.advance(5)
    env.play_first(tid, state, state.turn)
    assert planned
