"""events/seeks.py: a pool's keys in one slot, its steps, the lobby's buckets (fakeredis, one Redis, the
cluster)."""

from __future__ import annotations

import secrets

import pytest
import redis as redis_lib

from events import seeks as store
from events.buckets import slot_of

POOL = store.Pool("selminha", 4, False, {"target": 31})


@pytest.fixture
def pool():
    """A pool of this test's own (the suite's Redis is shared: its keys are the test's alone)."""
    return store.Pool("selminha", 4, False, {"target": 31, "test": secrets.token_hex(4)})


def _add(redis, name, now, pool=POOL, live=True):
    seek_id = store.new_seek_id(pool.name)
    token = store.new_seek_token()
    fields = {"status": store.WAITING, "token": store.token_digest(token), "name": name, "created": now,
              "players": pool.players, "correspondence": pool.correspondence}
    info = {"identity": seek_id, "created": now, "bot_after": 30, "player": "p_" + name, "name": name}
    n, at_once = store.Seeks(redis).add(pool, seek_id, fields, now, live=live, info=info)
    return seek_id, token, n, at_once


def test_a_pools_keys_and_its_seeks_share_one_slot():
    seek_id = store.new_seek_id(POOL.name)
    keys = [store.key(POOL.name, k) for k in ("meta", "waiting", "seen", "info", "making", "last", "wave")]
    keys.append(store.seek_key(POOL.name, seek_id))
    assert len({redis_lib.cluster.key_slot(k.encode()) for k in keys}) == 1
    assert store.pool_of(seek_id) == POOL.name
    # the same table asked in other words is the same pool; other settings, another
    assert store.Pool("selminha", 4, False, {"target": 31}).name == POOL.name
    assert store.Pool("selminha", 4, False, {}).name != POOL.name
    assert store.Pool("selminha", 4, False, {"target": 31}, correspondence=True).name.endswith(":c")
    assert slot_of("x") >= 0


def test_seek_ids_we_never_made_name_no_pool():
    for bad in ("", "x", "a.b.c.d", "del15.two.0.12345678.x", "del15.2.7.12345678.x", "del15.2.0.123.x",
                "del15.2.0.12345678.z.x", "del15..0.12345678.x", "a" * 200):
        assert store.pool_of(bad) is None, bad


def test_a_seek_is_written_whole_and_its_token_kept_as_a_hash(any_redis, pool):
    seek_id, token, n, at_once = _add(any_redis, "Ana", 100.0, pool=pool)
    assert (n, at_once) == (1, False)
    seek = store.Seeks(any_redis).read(seek_id)
    assert seek["status"] == "waiting" and seek["name"] == "Ana" and seek["token"] == store.token_digest(token)
    assert token not in str(any_redis.hgetall(store.seek_key(pool.name, seek_id)))
    assert store.Seeks(any_redis).pool(pool.name) == pool
    # the seat token is its holder's to work out, and differs from the seek's
    assert store.seat_token(token) == store.seat_token(token) != token


def test_the_pool_asks_for_a_wave_at_once_when_enough_wait(any_redis, pool):
    answers = [_add(any_redis, name, 100.0, pool=pool)[2:] for name in ("a", "b", "c", "d", "e")]
    assert answers[:3] == [(1, False), (2, False), (3, False)]
    assert answers[3] == (4, True)  # four wait: a wave now
    assert answers[4] == (5, False)  # and not again for every seek after it


def test_a_cancelled_seek_leaves_its_pool(any_redis, pool):
    seeks = store.Seeks(any_redis)
    seek_id = _add(any_redis, "Ana", 100.0, pool=pool)[0]
    assert seeks.end(seek_id) == store.WAITING
    assert seeks.read(seek_id)["status"] == store.CANCELLED
    assert seeks.waiting(pool.name, 0.0).heard == []
    assert seeks.end(seek_id) == store.CANCELLED  # again: nothing changes


def test_a_wave_reads_the_live_seeks_oldest_first_and_the_silent_apart(any_redis, pool):
    seeks = store.Seeks(any_redis)
    second = _add(any_redis, "b", 101.0, pool=pool)[0]
    first = _add(any_redis, "a", 100.0, pool=pool)[0]
    third = _add(any_redis, "c", 102.0, pool=pool)[0]
    seeks.heard(first, 105.0)
    pooled = seeks.waiting(pool.name, 101.5)  # heard before 101.5: silent
    # what a wave chooses by (a seat's name and player are read from the seek's hash when its table is made)
    assert [(w.seek_id, w.identity, w.created, w.bot_after) for w in pooled.heard] == [(first, first, 100.0, 30),
                                                                                       (third, third, 102.0, 30)]
    assert pooled.gone == [second] and pooled.earliest_seen == 102.0
    seeks.heard(first, 103.0)  # an older hearing never moves it back
    assert seeks.waiting(pool.name, 104.0).earliest_seen == 105.0


def test_the_commit_expires_only_the_still_silent(any_redis, pool):
    seeks = store.Seeks(any_redis)
    silent = _add(any_redis, "a", 100.0, pool=pool)[0]
    back = _add(any_redis, "b", 100.0, pool=pool)[0]
    seeks.heard(back, 111.0)  # heard between the wave's read and its step
    expired, made = seeks.commit(pool.name, 111.0, [silent, back], [])
    assert (expired, made) == (1, [])
    assert seeks.read(silent)["status"] == store.EXPIRED and seeks.read(back)["status"] == store.WAITING


def test_a_table_done_pairs_its_seeks(any_redis, pool):
    seeks = store.Seeks(any_redis)
    ids = [_add(any_redis, n, 100.0, pool=pool)[0] for n in "abcd"]
    _, made = seeks.commit(pool.name, 100.0, [], [("T", {"at": 100.0}, ids)])
    assert made == ["T"] and seeks.making(pool.name) == {"T": {"at": 100.0}}
    seeks.done(pool.name, "T", ids)
    assert [seeks.read(s)["status"] for s in ids] == [store.PAIRED] * 4
    assert [seeks.read(s)["seat"] for s in ids] == ["0", "1", "2", "3"]
    assert seeks.making(pool.name) == {}


def test_the_lobby_lists_the_newest_and_forgets_after_seven_days(any_redis):
    seeks = store.Seeks(any_redis)
    day = 86400.0
    old = store.new_seek_id(POOL.name)
    seeks.list_in_lobby(old, {"seek_id": old, "name": "old"}, 1000.0)
    rows = []
    for i in range(5):
        seek_id = store.new_seek_id(POOL.name)
        seeks.list_in_lobby(seek_id, {"seek_id": seek_id, "name": f"n{i}"}, 1000.0 + day + i)
        rows.append(seek_id)
    now = 1000.0 + 7 * day + 10
    assert [r["name"] for r in seeks.lobby(now, 3)] == ["n4", "n3", "n2"]
    assert [r["name"] for r in seeks.lobby(now)] == ["n4", "n3", "n2", "n1", "n0"]  # the 7 days old one gone
    seeks.unlist(rows[4])
    assert [r["name"] for r in seeks.lobby(now, 1)] == ["n3"]


def test_the_take_seat_step_hands_out_the_seats_once(any_redis):
    seeks = store.Seeks(any_redis)
    pool = store.Pool("del15", 3, False, {}, correspondence=True)
    seek_id = _add(any_redis, "Ana", 100.0, pool=pool, live=False)[0]
    assert [seeks.take_seat(seek_id, 2) for _ in range(3)] == [1, 2, 0]
    seeks.give_back_seat(seek_id)
    assert seeks.take_seat(seek_id, 2) == 2
    assert seeks.waiting(pool.name, 0.0).heard == []  # a correspondence seek waits in the lobby, not in a wave
