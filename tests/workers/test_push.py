"""Web Push turn notices end to end: the API takes a subscription, a real worker on the
suite's own Redis sends when the turn changes, and a local push service decrypts it.

The subscription is registered through the API as the page does it (``push.js`` posts
the browser's ``PushSubscription.toJSON()``); the browser's keys are made here with
``cryptography``, and the local push service decrypts with them (http-ece), so what is
checked is what a browser would show.
"""

from __future__ import annotations

import dataclasses
import re
import time

import pytest
import redis as redis_lib

from api.app import create_app
from events.config import Config
from workers import push

from .push_receiver import PushService, Subscriber, unb64
from .test_integration import WorkerProcess

pytestmark = pytest.mark.integration

CARD = re.compile(r"\b(10|[1-9])[ocebOCEB]\b")
VAPID = push.generate_private_key()
SETTINGS = {"ESCOBA_BOT_DELAY": "0.05", "ESCOBA_VAPID_PRIVATE_KEY": VAPID,
            "ESCOBA_NOTIFY_ALLOW_PRIVATE": "1"}


@pytest.fixture
def url(redis_server):
    return redis_server.url_db(12)


@pytest.fixture
def rdb(url):
    client = redis_lib.Redis.from_url(url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def worker(tmp_path, url):
    w = WorkerProcess(tmp_path, url, SETTINGS, "push-worker")
    yield w
    w.stop()


def _http(rdb, url, **overrides):
    config = dataclasses.replace(Config.from_env({"REDIS_URL": url, **SETTINGS}), **overrides)
    app = create_app(rdb, config)
    app.testing = True
    return app.test_client()


def _wait(predicate, timeout, what, worker):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}\n{worker.log.read_text()[-3000:]}")


def _bearer(token):
    return {"Authorization": f"Bearer {token}"}


def _play_any(http, tid, token):
    view = http.get(f"/tables/{tid}", headers=_bearer(token)).get_json()
    option = view["options"][0]
    capture = option["captures"][0] if option["captures"] and not option["may_leave"] else []
    r = http.post(f"/tables/{tid}/moves", headers=_bearer(token),
                  json={"type": "play", "card": option["card"], "capture": capture})
    assert r.status_code == 200, r.get_json()
    return r.get_json()["table"]


def test_a_turn_reaches_a_closed_tab_by_web_push_and_a_gone_subscription_is_dropped(rdb, url, worker):
    http = _http(rdb, url)
    key = http.get("/push/key").get_json()["public_key"]
    assert key == push.public_key(VAPID) and len(unb64(key)) == 65
    host = http.post("/tables", json={"name": "Ana", "preset": "del15", "table_name": "Casa Ana"}).get_json()
    tid = host["table_id"]
    guest = http.post(f"/tables/{tid}/seats", json={"name": "Bea"}).get_json()
    browser = Subscriber()
    with PushService(browser, statuses=[]) as service:
        r = http.post(f"/tables/{tid}/push", headers=_bearer(guest["token"]),
                      json=browser.subscription(service.endpoint))
        assert r.status_code == 201 and r.get_json()["seat"] == guest["seat"]
        # del15: the host deals, the player on the dealer's right (the guest) leads
        view = http.post(f"/tables/{tid}/moves", headers=_bearer(host["token"]),
                         json={"type": "start"}).get_json()["table"]
        assert view["turn"] == guest["seat"]

        _wait(lambda: service.messages or service.errors, 30, "the push message", worker)
        time.sleep(1.5)  # time for a second message, which must not come
        assert service.errors == []
        assert len(service.messages) == 1 and len(service.attempts) == 1
        message = service.messages[0]
        assert message["table_id"] == tid and message["table_name"] == "Casa Ana"
        assert "Your turn at Casa Ana" in message["body"] and message["url"].endswith(f"/t/{tid}")
        shown = " ".join(str(v) for k, v in message.items() if k not in ("table_id", "url", "tag"))
        assert not CARD.search(shown), shown  # no card in the message
        assert set(message) == {"title", "body", "table_id", "table_name", "reason", "url", "tag"}
        headers = {k.lower(): v for k, v in service.attempts[0]["headers"].items()}
        vapid = headers.get("authorization", "")
        assert vapid.startswith("vapid t=") and f"k={key}" in vapid  # signed with our key
        assert headers["content-encoding"] == "aes128gcm"

        # the guest plays: the host's turn, and the host has no subscription
        _play_any(http, tid, guest["token"])
        # the host plays: the guest's turn again, but the push service has forgotten them
        service.statuses.append(410)
        _play_any(http, tid, host["token"])
        _wait(lambda: len(service.attempts) == 2, 30, "the second push", worker)
        _wait(lambda: rdb.hlen(push.push_key(tid)) == 0, 10, "the gone subscription dropped", worker)
        assert [k for k in rdb.hkeys(f"table:{{{tid}}}:notify") if k.startswith(b"push:")] == []
        assert len(service.messages) == 1
        # no subscription left: the next turn sends nothing
        _play_any(http, tid, guest["token"])
        _play_any(http, tid, host["token"])
        time.sleep(1.5)
        assert len(service.attempts) == 2


def test_a_hostile_push_endpoint_is_refused_at_the_api_and_at_sending(rdb, url):
    http = _http(rdb, url, notify_allow_private=False)
    host = http.post("/tables", json={"name": "Ana", "preset": "del15"}).get_json()
    tid = host["table_id"]
    browser = Subscriber()
    for endpoint in ("http://127.0.0.1:6379/", "https://10.0.0.7/push", "https://[::1]/x",
                     "https://169.254.169.254/latest/meta-data", "http://example.com/push",
                     "https://user:pw@push.example.com/x", "ftp://push.example.com/x"):
        r = http.post(f"/tables/{tid}/push", headers=_bearer(host["token"]),
                      json=browser.subscription(endpoint))
        assert r.status_code == 400, (endpoint, r.get_json())
        assert r.get_json()["error"]["code"] == "bad_request"
    assert rdb.hlen(push.push_key(tid)) == 0
    # at sending, the endpoint is checked again (a name may resolve elsewhere by now)
    with PushService(browser) as service:
        config = Config(vapid_private_key=VAPID, notify_allow_private=False)
        outcome = push.send(browser.subscription(service.endpoint), {"title": "x"}, config, 60)
        assert outcome == "refused" and service.attempts == []
        allowed = dataclasses.replace(config, notify_allow_private=True)
        assert push.send(browser.subscription(service.endpoint), {"title": "x"}, allowed, 60) == "sent"
        assert service.messages == [{"title": "x"}]
