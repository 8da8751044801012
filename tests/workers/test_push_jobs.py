"""Push subscriptions and the push job on fakeredis, with RQ's jobs run in burst mode."""

from __future__ import annotations

import dataclasses

import pytest

from events.config import Config
from workers import push, scheduling

from .push_receiver import PushService, Subscriber

VAPID = push.generate_private_key()


@pytest.fixture
def config() -> Config:
    return Config(bot_delay=0.0, away_after=60.0, expire_after=600.0, rematch_window=300.0,
                  vapid_private_key=VAPID, notify_allow_private=True)


def _markers(redis, tid):
    return sorted(k.decode() for k in redis.hkeys(scheduling.notify_key(tid)) if k.startswith(b"push:"))


def test_subscriptions_are_kept_per_player_capped_and_dropped_with_their_marker(fake_redis):
    tid = "T1234567"
    for i in range(push.MAX_PER_PLAYER + 2):
        push.subscribe(fake_redis, tid, "p_a", Subscriber().subscription(f"https://push.example/{i}"), now=i)
    mine = push.subscriptions(fake_redis, tid, "p_a")
    assert sorted(s["endpoint"] for s in mine.values()) == [f"https://push.example/{i}" for i in range(2, 7)]
    # the same endpoint again replaces, it does not add
    push.subscribe(fake_redis, tid, "p_a", Subscriber().subscription("https://push.example/6"), now=99)
    assert len(push.subscriptions(fake_redis, tid, "p_a")) == push.MAX_PER_PLAYER
    push.subscribe(fake_redis, tid, "p_b", Subscriber().subscription("https://push.example/b"))
    assert _markers(fake_redis, tid) == ["push:p_a", "push:p_b"]
    for field in list(push.subscriptions(fake_redis, tid, "p_a"))[:-1]:
        push.drop(fake_redis, tid, field)
        assert _markers(fake_redis, tid) == ["push:p_a", "push:p_b"]  # others are left
    assert push.unsubscribe(fake_redis, tid, "p_a", "https://push.example/6")
    assert _markers(fake_redis, tid) == ["push:p_b"]
    assert not push.unsubscribe(fake_redis, tid, "p_a", "https://push.example/6")
    assert all(k.startswith(b"table:{T1234567}:") for k in fake_redis.keys("*"))  # hash-tagged


def test_the_turn_seat_gets_a_push_job_only_when_its_player_subscribed(env):
    tid = env.open(bots=(), humans=2)
    with PushService(Subscriber()) as service:
        push.subscribe(env.redis, tid, "p1", service.subscriber.subscription(service.endpoint))
        state = env.start(tid)
        assert state.turn == 1  # del15: the dealer's right leads
        assert any("_push_1_" in j for j in env.pending(tid))
        assert not any("_push_0_" in j for j in env.pending(tid))
        env.drain()
        assert len(service.messages) == 1 and service.messages[0]["table_id"] == tid
        assert not any("_push_" in j for j in env.pending(tid))


def test_a_retry_sends_only_to_the_browsers_not_reached(env, monkeypatch):
    tid = env.open(bots=(), humans=2)
    with PushService(Subscriber()) as ok, PushService(Subscriber(), statuses=[503]) as flaky:
        for service in (ok, flaky):
            push.subscribe(env.redis, tid, "p1", service.subscriber.subscription(service.endpoint))
        env.start(tid)
        env.drain()
        assert len(ok.messages) == 1 and len(flaky.attempts) == 1 and flaky.messages == []
        env.clock.advance(5)
        monkeypatch.setattr("time.time", lambda: env.clock.now)  # RQ's retry is due by the real clock
        env.drain()
        assert len(flaky.messages) == 1, flaky.attempts
        assert len(ok.messages) == 1  # not told twice


def test_send_outcomes_by_the_push_services_answer(config):
    browser = Subscriber()
    for status, outcome in ((201, "sent"), (404, "gone"), (410, "gone"), (400, "rejected:400"),
                            (403, "rejected:403")):
        with PushService(browser, statuses=[status]) as service:
            assert push.send(browser.subscription(service.endpoint), {"t": 1}, config, 60) == outcome
    for status in (429, 500, 503):
        with PushService(browser, statuses=[status]) as service, pytest.raises(push.DeliveryFailed):
            push.send(browser.subscription(service.endpoint), {"t": 1}, config, 60)
    with pytest.raises(push.DeliveryFailed):  # nobody listening
        push.send(browser.subscription("http://127.0.0.1:9/x"), {"t": 1}, config, 60)


def test_the_message_names_the_table_and_never_a_card(env):
    tid = env.open(bots=(), humans=2)
    state = env.start(tid)
    msg = push.message(tid, state, "turn", dataclasses.replace(env.config, public_url="https://escoba.example"))
    assert msg["url"] == f"https://escoba.example/t/{tid}" and msg["table_id"] == tid
    cards = {c for hand in state.hands.values() for c in hand} | set(state.table)
    words = set(" ".join(str(v) for v in msg.values()).replace(".", " ").split())
    assert not cards & words


def test_vapid_keys():
    key = push.generate_private_key()
    public = push.public_key(key)
    assert public != push.public_key(push.generate_private_key())
    with pytest.raises(ValueError):
        push.public_key("not-a-key")
    browser = Subscriber().subscription("https://x")["keys"]
    push.check_keys(browser["p256dh"], browser["auth"])
    with pytest.raises(ValueError):
        push.check_keys(browser["p256dh"], browser["p256dh"])
    with pytest.raises(ValueError):
        push.check_keys("AAAA", browser["auth"])


def test_subscriptions_keep_to_one_slot_on_a_cluster_as_on_one_redis(backends):
    """The Lua steps touch the push hash and the notify hash: one table, one slot."""
    import secrets

    tid = secrets.token_urlsafe(6)
    redis = backends.tables
    push.subscribe(redis, tid, "p_a", Subscriber().subscription("https://push.example/1"))
    push.subscribe(redis, tid, "p_a", Subscriber().subscription("https://push.example/2"))
    assert len(push.subscriptions(redis, tid, "p_a")) == 2
    assert redis.hexists(scheduling.notify_key(tid), push.marker("p_a"))
    assert push.unsubscribe(redis, tid, "p_a", "https://push.example/1")
    assert redis.hexists(scheduling.notify_key(tid), push.marker("p_a"))
    assert push.unsubscribe(redis, tid, "p_a", "https://push.example/2")
    assert not redis.hexists(scheduling.notify_key(tid), push.marker("p_a"))
    assert redis.hlen(push.push_key(tid)) == 0


def test_player_away_is_pushed_to_the_other_player_and_a_webhook_alongside(env, config, monkeypatch):
    from .receiver import Receiver

    tid = env.open(bots=(), humans=2)
    with PushService(Subscriber()) as service, Receiver() as rx:
        # seat 0 (the host) waits for seat 1, who leads and does not play; seat 0 has both
        push.subscribe(env.redis, tid, "p0", service.subscriber.subscription(service.endpoint))
        env.redis.hset(scheduling.notify_key(tid), "0", rx.url)
        state = env.start(tid)
        assert state.turn == 1
        env.drain()
        assert service.messages == [] and rx.delivered == []  # not seat 0's turn
        env.clock.advance(config.away_after + 1)
        monkeypatch.setattr("time.time", lambda: env.clock.now)
        env.drain()
        assert env.state(tid).away_open == 1
        assert len(service.messages) == 1 and service.messages[0]["reason"] == "away"
        assert "PLAYER AWAY" in service.messages[0]["body"]
        assert len(rx.delivered) == 1 and rx.delivered[0]["away"] == 1  # the webhook is its own job


@pytest.mark.parametrize("status", [404, 410])
def test_a_subscription_the_push_service_forgot_is_dropped(env, status):
    tid = env.open(bots=(), humans=2)
    with PushService(Subscriber(), statuses=[status]) as gone, PushService(Subscriber()) as kept:
        for service in (gone, kept):
            push.subscribe(env.redis, tid, "p1", service.subscriber.subscription(service.endpoint))
        env.start(tid)
        env.drain()
        left = push.subscriptions(env.redis, tid, "p1")
        assert [s["endpoint"] for s in left.values()] == [kept.endpoint]
        assert len(kept.messages) == 1 and gone.messages == [] and len(gone.attempts) == 1
        assert env.redis.hexists(scheduling.notify_key(tid), push.marker("p1"))  # one is left
