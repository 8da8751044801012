"""The page's turn notices in a real browser (Debian chromium, notifications permission
granted), on the suite's own Redis with a real worker process.

Chromium's own push service cannot be reached offline, so the browser's
``PushManager.subscribe`` is stubbed to hand back a subscription to a local push service,
with keys the test holds; everything else is real: the page's flow (permission, service
worker registration at /sw.js, the server's key, POST /tables/{id}/push), the worker's
push on the turn change, and the local service decrypting what it sends.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import os
import threading
import time

import pytest
import redis as redis_lib

from workers import push

from ...workers.push_receiver import PushService, Subscriber
from ...workers.test_integration import WorkerProcess

CHROMIUM = "/usr/bin/chromium"
VAPID = push.generate_private_key()
SETTINGS = {"ESCOBA_BOT_DELAY": "0.05", "ESCOBA_VAPID_PRIVATE_KEY": VAPID, "ESCOBA_NOTIFY_ALLOW_PRIVATE": "1"}

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian chromium is not installed at /usr/bin/chromium"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

HARNESS = """<!doctype html><html><head><title>Casa Ana</title></head><body>
<div id="slot"></div>
<script type="module">
import { setupTurnNotices } from "/static/push.js";
const p = new URLSearchParams(location.search);
window.notices = setupTurnNotices({ tableId: p.get("t"), token: p.get("k"),
                                    container: document.getElementById("slot") });
window.ready = true;
</script></body></html>"""

# Before any page script: the browser's push service is out of reach offline, so subscribe()
# answers with the test's subscription; document.hidden is the test's to set.
STUB = """
window.__subscribeCalls = [];
window.__notifications = [];
PushManager.prototype.getSubscription = async function () { return null; };
PushManager.prototype.subscribe = async function (options) {
  const key = new Uint8Array(options.applicationServerKey);
  window.__subscribeCalls.push({ userVisibleOnly: options.userVisibleOnly,
                                 key: btoa(String.fromCharCode(...key)) });
  const sub = window.__fakeSubscription;
  return { endpoint: sub.endpoint, toJSON: () => sub, unsubscribe: async () => true };
};
Object.defineProperty(document, "hidden", { configurable: true, get: () => window.__hidden === true });
const RealNotification = window.Notification;
window.Notification = class extends RealNotification {
  constructor(title, options) { super(title, options); window.__notifications.push({ title, ...options }); }
};
"""


@pytest.fixture
def url(redis_server):
    return redis_server.url_db(11)


@pytest.fixture
def rdb(url):
    client = redis_lib.Redis.from_url(url)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def site(rdb, url):
    from werkzeug.serving import make_server

    from api.app import create_app
    from events.config import Config

    config = dataclasses.replace(Config.from_env({"REDIS_URL": url, **SETTINGS}))
    app = create_app(rdb, config)
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_port}", app.test_client()
    srv.shutdown()
    srv.server_close()


@pytest.fixture
def worker(tmp_path, url):
    w = WorkerProcess(tmp_path, url, SETTINGS, "push-browser-worker")
    yield w
    w.stop()


def test_the_page_subscribes_and_the_worker_pushes_the_turn_to_it(site, worker, rdb, browser):
    base, http = site
    host = http.post("/tables", json={"name": "Ana", "preset": "del15", "table_name": "Casa Ana"}).get_json()
    tid = host["table_id"]
    guest = http.post(f"/tables/{tid}/seats", json={"name": "Bea"}).get_json()
    browser_keys = Subscriber()
    with PushService(browser_keys) as service:
        context = browser.new_context(permissions=["notifications"])
        try:
            context.add_init_script(STUB)
            page = context.new_page()
            errors = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.route(f"{base}/harness*", lambda route: route.fulfill(
                status=200, content_type="text/html", body=HARNESS))
            page.goto(f"{base}/harness?t={tid}&k={guest['token']}")
            page.wait_for_function("window.ready === true")
            page.evaluate("sub => { window.__fakeSubscription = sub; }",
                          browser_keys.subscription(service.endpoint))

            # 1. a background tab: the title and favicon are marked, and a page notice is shown
            view = {"status": "playing", "you": 1, "turn": 1, "turn_seq": 1, "name": "Casa Ana"}
            page.evaluate("v => { window.__hidden = true; window.notices.update(v); }", view)
            assert page.title().startswith("\u25cf Your turn")
            assert page.evaluate("document.querySelector(\"link[rel~='icon']\").href").endswith("favicon-turn.svg")
            notes = page.evaluate("window.__notifications")
            assert len(notes) == 1 and notes[0]["body"] == "Your turn at Casa Ana."
            page.evaluate("() => { window.__hidden = false; document.dispatchEvent(new Event('visibilitychange')); }")
            assert page.title() == "Casa Ana"

            # 2. the player turns push on: the page's subscription flow, through a click
            button = page.get_by_role("button", name="TURN NOTICES: OFF")
            button.click()
            page.get_by_role("button", name="TURN NOTICES: ON").wait_for()
            calls = page.evaluate("window.__subscribeCalls")
            key = base64.b64decode(calls[0]["key"])
            assert calls[0]["userVisibleOnly"] is True
            assert base64.urlsafe_b64encode(key).rstrip(b"=").decode() == push.public_key(VAPID)
            assert page.evaluate("navigator.serviceWorker.getRegistration('/').then(r => !!r && r.scope)") \
                == f"{base}/"
            stored = [json.loads(v) for v in rdb.hvals(push.push_key(tid))]
            assert [s["endpoint"] for s in stored] == [service.endpoint]

            # 3. the turn comes while the tab is closed: the worker pushes, once, no card
            page.close()
            start = http.post(f"/tables/{tid}/moves", headers={"Authorization": f"Bearer {host['token']}"},
                              json={"type": "start"}).get_json()["table"]
            assert start["turn"] == guest["seat"]
            deadline = time.time() + 30
            while not service.messages and time.time() < deadline:
                time.sleep(0.1)
            time.sleep(1.0)
            assert service.errors == [] and len(service.messages) == 1, worker.log.read_text()[-2000:]
            message = service.messages[0]
            assert message["table_id"] == tid and message["body"] == "Your turn at Casa Ana."
            hands = http.get(f"/tables/{tid}", headers={"Authorization": f"Bearer {guest['token']}"}).get_json()
            assert not set(hands["hand"]) & set(json.dumps(message).replace('"', " ").split())
            assert errors == []
        finally:
            context.close()
