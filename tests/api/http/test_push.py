"""The push endpoints: the public key, a seat's subscription, refusals that change nothing."""

from __future__ import annotations

import dataclasses

import pytest

from api.app import create_app
from workers import push

from ...workers.push_receiver import Subscriber
from ..conftest import Client, two_player_table

VAPID = push.generate_private_key()


@pytest.fixture
def config(config):
    return dataclasses.replace(config, vapid_private_key=VAPID)


def _auth(token):
    return {"Authorization": f"Bearer {token}"}


def test_the_page_gets_the_public_key_and_the_service_worker_from_the_root(client):
    r = client.http.get("/push/key")
    assert r.status_code == 200 and r.get_json() == {"public_key": push.public_key(VAPID)}
    r = client.http.get("/sw.js")
    assert r.status_code == 200 and r.mimetype == "text/javascript"
    assert b"addEventListener(\"push\"" in r.data and r.headers["Cache-Control"] == "no-cache"


def test_push_is_off_without_a_key(fake_redis, config):
    app = create_app(fake_redis, dataclasses.replace(config, vapid_private_key=None))
    client = Client(app.test_client())
    assert client.http.get("/push/key").status_code == 404
    host = client.create()
    r = client.http.post(f"/tables/{host['table_id']}/push", headers=_auth(host["token"]),
                         json=Subscriber().subscription("https://push.example.com/x"))
    assert r.status_code == 404 and r.get_json()["error"]["code"] == "not_found"


def test_a_seat_subscribes_and_unsubscribes(client, fake_redis, monkeypatch):
    monkeypatch.setattr(push, "check_endpoint", lambda url, config: None)  # no DNS in this test
    tid, host, guest = two_player_table(client)
    sub = Subscriber().subscription("https://push.example.com/abc")
    r = client.http.post(f"/tables/{tid}/push", headers=_auth(guest), json=sub)
    assert r.status_code == 201 and r.get_json()["seat"] == 1
    assert fake_redis.hlen(push.push_key(tid)) == 1
    r = client.http.delete(f"/tables/{tid}/push", headers=_auth(guest), json={"endpoint": sub["endpoint"]})
    assert r.get_json()["removed"] is True and fake_redis.hlen(push.push_key(tid)) == 0


def test_bad_subscriptions_are_refused_and_change_nothing(client, fake_redis, monkeypatch):
    monkeypatch.setattr(push, "check_endpoint", lambda url, config: None)
    tid, host, guest = two_player_table(client)
    good = Subscriber().subscription("https://push.example.com/abc")
    cases = [
        ({**good, "keys": {"p256dh": good["keys"]["p256dh"]}}, 400),
        ({**good, "keys": {**good["keys"], "auth": "AAAA"}}, 400),
        ({**good, "keys": {**good["keys"], "p256dh": "AAAA"}}, 400),
        ({**good, "extra": 1}, 400),
        ({**good, "endpoint": "not a url"}, 400),
        ("nope", 400),
    ]
    for body, status in cases:
        r = client.http.post(f"/tables/{tid}/push", headers=_auth(host), json=body)
        assert r.status_code == status, (body, r.get_json())
        assert set(r.get_json()["error"]) == {"code", "message", "details"}
    assert client.http.post(f"/tables/{tid}/push", json=good).status_code == 401
    watcher = client.create(watch=True)
    r = client.http.post(f"/tables/{watcher['table_id']}/push", headers=_auth(watcher["token"]), json=good)
    assert r.status_code == 403
    assert client.http.post("/tables/nosuch00/push", headers=_auth(host), json=good).status_code == 401
    assert fake_redis.hlen(push.push_key(tid)) == 0
