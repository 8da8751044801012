"""The reference page in a real browser: open a table, add a bot, play a round, watch it.

Drives Debian's chromium (``/usr/bin/chromium``) through Playwright for
Python against the app served by a werkzeug thread on a free port, with the
in-process bot worker when the project has one. Screenshots go to
``test-artifacts/``. Waits are written as functions (``"v => ..."``): Playwright
evaluates a bare expression with eval, which the page's CSP refuses.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian chromium is not installed at /usr/bin/chromium"),
]

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


def _start_worker(redis, config):
    """The in-process bot worker, if the project has one; None otherwise."""
    try:
        from workers.runner import start_background_worker
    except ImportError:
        return None
    return start_background_worker(redis, config)


def _serve(**overrides):
    """The app on a free port in a werkzeug thread, with the bot worker when there is one."""
    fakeredis = pytest.importorskip("fakeredis")
    from werkzeug.serving import make_server

    from api.app import create_app
    from events.config import Config

    redis = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    config = dataclasses.replace(Config(), bot_delay=0.05, **overrides)
    app = create_app(redis, config)
    stop_worker = _start_worker(redis, config)
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{srv.server_port}"

    def stop():
        srv.shutdown()
        srv.server_close()
        if stop_worker:
            stop_worker()

    return SimpleNamespace(url=url, bots=stop_worker is not None, stop=stop)


@pytest.fixture(scope="module")
def server():
    s = _serve()
    try:
        yield s
    finally:
        s.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


def _http(method, url, body=None, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=10) as res:
        return json.loads(res.read())


def _shot(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def _version(page) -> int:
    return int(page.get_attribute("body", "data-version") or 0)


def _table_labels(page) -> list[str]:
    return page.locator("#table-cards button.card").evaluate_all("bs => bs.map(b => b.getAttribute('aria-label'))")


def _opponent_move(base, table_id, token):
    """Without a bot worker, the second seat is a human playing over HTTP."""
    view = _http("GET", f"{base}/tables/{table_id}", token=token)
    if view["status"] != "playing" or view["turn"] != view["you"]:
        return
    opt = view["options"][0]
    capture = opt["captures"][0] if opt["captures"] else []
    _http(
        "POST",
        f"{base}/tables/{table_id}/moves",
        {"type": "play", "card": opt["card"], "capture": capture},
        token,
    )


@pytest.mark.parametrize("opponent_kind", ["bot", "human"])
def test_open_play_a_round_and_watch(server, browser, opponent_kind):
    """The host opens a table and plays a round against a bot (or a second player over HTTP)."""
    if opponent_kind == "bot" and not server.bots:
        pytest.skip("no in-process bot worker (workers.runner.start_background_worker)")
    base = server.url
    host_ctx = browser.new_context(viewport={"width": 1100, "height": 900})
    page = host_ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # --- open a table
    page.goto(f"{base}/")
    page.get_by_role("button", name="OPEN A TABLE").click()
    page.fill("#create-name", "Ana")
    page.select_option("#create-preset", "selminha")
    page.select_option("select[data-setting=target]", "21")
    page.get_by_role("button", name="CREATE INVITE").click()
    page.wait_for_url("**/t/*")
    table_id = page.url.rstrip("/").split("/t/")[-1]
    invite = page.input_value("#invite-url")
    assert invite.endswith(f"/t/{table_id}")
    page.get_by_role("button", name="COPY", exact=True).click()
    page.wait_for_selector("#waiting:not([hidden])")

    # --- a bot (or, without a bot worker, a second human over HTTP)
    opponent = None
    if opponent_kind == "bot":
        row = page.locator(".waiting-seat").nth(1)
        row.locator("select").select_option("tito")
        row.get_by_role("button", name="Add a bot to seat 2").click()
        page.wait_for_selector(".waiting-seat:has-text('(bot)')")
    else:
        opponent = _http("POST", f"{base}/tables/{table_id}/seats", {"name": "Bruno"})["token"]
        page.wait_for_selector(".waiting-seat:has-text('Bruno')")
    _shot(page, f"{opponent_kind}-01-waiting-room")

    # a reload keeps the seat (token in localStorage)
    page.reload()
    page.wait_for_selector("#start:not([hidden])")
    page.get_by_role("button", name="START THE GAME").click()
    page.wait_for_selector("#felt:not([hidden])")

    # --- a spectator on a phone-sized screen joins by the invitation link
    watch_ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    watcher = watch_ctx.new_page()
    watcher.on("pageerror", lambda e: errors.append(str(e)))
    watcher.goto(invite)
    watcher.get_by_role("button", name="WATCH").click()
    watcher.wait_for_selector("#felt:not([hidden])")
    assert watcher.locator("#chat-form").is_hidden()  # spectators read only
    assert watcher.locator("#me").is_hidden()  # no hand for a spectator

    # chat: the host writes, the spectator reads it live (behind CHAT on a phone)
    page.fill("#chat-text", "hola")
    page.get_by_role("button", name="SEND").click()
    watcher.get_by_role("button", name="CHAT").click()
    watcher.wait_for_selector("#chat-lines li:has-text('hola')")
    assert "Ana" in watcher.text_content("#chat-lines")
    watcher.get_by_role("button", name="CHAT").click()

    # Esc opens the menu
    page.keyboard.press("Escape")
    page.wait_for_selector("#menu[open]")
    page.get_by_role("button", name="BACK TO THE GAME").click()

    # --- play the round to the score box
    compared = tried_bad_pick = used_keyboard = used_drag = False
    moves = 0
    last_seen, last_change = _version(page), time.time()
    deadline = time.time() + 150
    while time.time() < deadline:
        status = page.get_attribute("body", "data-status")
        if status != "playing":
            break
        if page.locator(".seat.you.turn").count() == 0:
            if opponent:
                _opponent_move(base, table_id, opponent)
            page.wait_for_timeout(60)
            seen = _version(page)
            if seen != last_seen:
                last_seen, last_change = seen, time.time()
            elif time.time() - last_change > 20:
                _shot(page, f"{opponent_kind}-stalled")
                pytest.fail(f"the opponent did not move for 20 s at version {seen} (bot worker running?)")
            continue
        last_seen, last_change = _version(page), time.time()
        before = _version(page)
        if not compared:
            # the spectator sees the same table, live
            watcher.wait_for_function("v => Number(document.body.dataset.version) >= v", arg=before, timeout=10000)
            assert _table_labels(watcher) == _table_labels(page)
            _shot(watcher, f"{opponent_kind}-02-spectator-phone")
            compared = True
        take = page.locator("#fifteen button")
        if take.count():
            # the 15 left behind: take it before playing
            take.first.click()
            page.wait_for_function("v => Number(document.body.dataset.version) > v", arg=before)
            continue
        hand = page.locator("#hand button.card")
        assert hand.count() > 0
        first_label = hand.first.get_attribute("aria-label") or ""
        if not used_drag and moves >= 4 and ("no 15" in first_label or "1 way " in first_label):
            # dragging a card onto the table plays it (its one 15, or left there)
            hand.first.drag_to(page.locator("#felt"))
            used_drag = True
        elif not used_keyboard and moves >= 2:
            # ←/→ browse the hand, Enter picks, Enter again plays
            page.locator("body").click(position={"x": 5, "y": 5})
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowLeft")
            page.keyboard.press("Enter")
            page.wait_for_selector("#hand button.card.picked")
            if page.locator("#capture").is_disabled() and page.locator("#table-cards .card.lit").count():
                page.keyboard.press("ArrowDown")  # mark a 15
            page.keyboard.press("Enter")
            used_keyboard = True
        else:
            hand.first.click()
            page.wait_for_selector("#hand button.card.picked")
            lit = page.locator("#table-cards button.card.lit")
            if page.locator("#capture").is_enabled():
                page.get_by_role("button", name="CAPTURE").click()
            elif lit.count():
                page.locator("#hand button.card.picked").focus()
                page.keyboard.press("ArrowDown")  # several ways: mark the first 15
                page.get_by_role("button", name="CAPTURE").click()
            else:
                table = page.locator("#table-cards button.card")
                if not tried_bad_pick and table.count():
                    # a pick that does not make 15: the server's message, nothing played
                    table.first.click()
                    page.get_by_role("button", name="CAPTURE").click()
                    page.wait_for_selector("#error:not([hidden])")
                    assert page.text_content("#error").strip()
                    assert _version(page) == before
                    _shot(page, f"{opponent_kind}-03-not-fifteen")
                    tried_bad_pick = True
                    table.first.click()  # unmark it
                page.get_by_role("button", name="LEAVE ON TABLE").click()
        page.wait_for_function("v => Number(document.body.dataset.version) > v", arg=before, timeout=10000)
        moves += 1
        if moves == 3:
            _shot(page, f"{opponent_kind}-04-playing")

    page.wait_for_selector("#round-box:not([hidden])", timeout=15000)
    assert moves >= 10
    assert used_keyboard
    assert page.locator("#score-table tbody tr").count() >= 6
    assert page.locator("#next-round").is_visible()
    _shot(page, f"{opponent_kind}-05-score-box")

    # the spectator follows to the score box over the socket
    watcher.wait_for_selector("#round-box:not([hidden])", timeout=15000)
    assert watcher.get_attribute("body", "data-version") == page.get_attribute("body", "data-version")
    assert watcher.locator("#next-round").is_hidden()
    _shot(watcher, f"{opponent_kind}-06-spectator-score-box")

    # NEXT ROUND deals again
    page.get_by_role("button", name="NEXT ROUND").click()
    page.wait_for_selector("#round-box", state="hidden", timeout=10000)
    page.wait_for_function("() => document.body.dataset.status !== 'round_over'")
    assert "Round 2" in page.text_content("#round-info")

    assert not errors, errors
    host_ctx.close()
    watch_ctx.close()


def _open_with_human(page, base, name="Ana", opponent="Bruno"):
    """The host opens a table in the page; a second player sits over HTTP; the host starts."""
    page.goto(f"{base}/")
    page.get_by_role("button", name="OPEN A TABLE").click()
    page.fill("#create-name", name)
    page.get_by_role("button", name="CREATE INVITE").click()
    page.wait_for_url("**/t/*")
    table_id = page.url.rstrip("/").split("/t/")[-1]
    token = _http("POST", f"{base}/tables/{table_id}/seats", {"name": opponent})["token"]
    page.wait_for_selector(f".waiting-seat:has-text('{opponent}')")
    page.get_by_role("button", name="START THE GAME").click()
    page.wait_for_selector("#felt:not([hidden])")
    return table_id, token


def test_resign_shows_the_result_and_the_rematch(server, browser):
    base = server.url
    ctx = browser.new_context(viewport={"width": 800, "height": 900})
    page = ctx.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: d.accept())  # "Resign? ..." is confirmed
    table_id, bruno = _open_with_human(page, base)

    page.get_by_role("button", name="RESIGN").click()
    page.wait_for_selector("#result:not([hidden])")
    text = page.text_content("#result-text")
    assert "Bruno" in text and "resigned" in text
    assert page.locator("#rematch-yes").is_visible()
    assert page.locator("#teams-keep").is_hidden()  # only with four
    page.get_by_role("button", name="REMATCH").click()
    page.wait_for_selector("#rematch-text:has-text('Yes so far')")
    _shot(page, "resign-result")

    _http("POST", f"{base}/tables/{table_id}/moves", {"type": "rematch", "accept": True}, bruno)
    if server.bots:  # the worker's job starts the rematch
        page.wait_for_function("() => document.body.dataset.status === 'playing'", timeout=15000)
        assert page.locator("#result").is_hidden()
    assert not errors, errors
    ctx.close()


def test_player_away_can_be_ended(browser):
    s = _serve(away_after=1.0)
    try:
        if not s.bots:
            pytest.skip("no in-process worker to open the away timer")
        ctx = browser.new_context(viewport={"width": 800, "height": 900})
        page = ctx.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        _open_with_human(page, s.url)
        # the host deals, so Bruno leads; he never plays
        claim = page.get_by_role("button", name="END GAME: PLAYER AWAY")
        claim.wait_for(timeout=15000)
        page.wait_for_selector(".badge:has-text('AWAY')")
        _shot(page, "away-open")
        claim.click()
        page.wait_for_selector("#result:not([hidden])")
        text = page.text_content("#result-text")
        assert "You win" in text and "away" in text
        assert page.locator("#rematch-yes").is_hidden()  # no rematch after an absence
        _shot(page, "away-result")
        assert not errors, errors
        ctx.close()
    finally:
        s.stop()


def test_the_page_works_under_its_content_security_policy(server, browser):
    """The page's own CSP (api/headers.py) blocks nothing the page needs: no violation, no console
    error, while it opens a table, takes a socket and starts a game; and no site can frame it."""
    ctx = browser.new_context(viewport={"width": 900, "height": 900})
    page = ctx.new_page()
    problems = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.add_init_script("document.addEventListener('securitypolicyviolation',"
                         " e => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));")
    response = page.goto(f"{server.url}/")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    _open_with_human(page, server.url)
    page.wait_for_timeout(300)
    assert not problems, problems
    ctx.close()
