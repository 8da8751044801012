"""Shared pieces of the page's browser tests: the app served with its own strict CSP (api/http/headers.py),
Debian's chromium through Playwright, and small helpers that drive and check the page.

Playwright's ``wait_for_function`` compiles its predicate with ``eval``, which the
page's CSP refuses; ``until`` polls ``page.evaluate`` (run by the debugger protocol,
outside the CSP) instead.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path
from types import SimpleNamespace

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--autoplay-policy=no-user-gesture-required"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ADMIN = "page-admin"
# a policy violation is a console error, which every test counts
REPORT_CSP = ("document.addEventListener('securitypolicyviolation',"
              " e => console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));")
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True, "device_scale_factor": 2}
DESKTOP = {"viewport": {"width": 1280, "height": 800}}
PACE = "0.03"  # the page's animations, sped up (every wait times this)

CATALOGUES = Path(__file__).resolve().parents[2] / "api" / "static" / "i18n"

needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                    reason="Debian chromium is not installed at /usr/bin/chromium")


def serve(**overrides):
    """The app on a free port in a werkzeug thread, with the in-process bot worker (rate limits off:
    the tests open many tables from one address)."""
    import fakeredis
    from werkzeug.serving import WSGIRequestHandler, make_server

    from api.app import create_app
    from events.config import Config
    from workers.runner import start_background_worker

    class Quiet(WSGIRequestHandler):
        def log_request(self, *args, **kwargs):
            pass

    redis = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    config = dataclasses.replace(Config(), bot_delay=0.0, admin_token=ADMIN, rate_limits="off", **overrides)
    app = create_app(redis, config)

    stop_worker = start_background_worker(redis, config, poll=0.02)  # bots move at once; the page paces them
    srv = make_server("127.0.0.1", 0, app, threaded=True, request_handler=Quiet)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()

    def stop():
        srv.shutdown()
        srv.server_close()
        stop_worker()

    return SimpleNamespace(url=f"http://127.0.0.1:{srv.server_port}", stop=stop, app=app)


def http(method, url, body=None, token=None):
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return json.loads(res.read())
    except urllib.error.HTTPError as e:
        raise AssertionError(f"{method} {url}: {e.code} {e.read()[:300]!r}") from None


class Page:
    """A browser context and its page, collecting console errors and page errors."""

    def __init__(self, browser, kind="desktop", pace=PACE, allow=(), **extra):
        opts = dict(PHONE if kind == "phone" else DESKTOP)
        opts.update(extra)
        self.kind = kind
        self.ctx = browser.new_context(**opts)
        self.ctx.add_init_script(f"try {{ localStorage.setItem('escoba.pace', '{pace}'); }} catch (e) {{}}")
        self.ctx.add_init_script(REPORT_CSP)
        self.page = self.ctx.new_page()
        self.errors = []
        self.allow = allow  # console texts a test expects (a refused move's 422)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on("console", self._console)

    def _console(self, msg):
        if msg.type == "error" and not any(a in msg.text for a in self.allow):
            self.errors.append(f"console: {msg.text}")

    def close(self):
        self.ctx.close()


def until(page, js, timeout=20.0, what=None):
    end = time.time() + timeout
    while True:
        if page.evaluate(js):
            return
        if time.time() > end:
            shot(page, f"timeout-{int(time.time())}")
            raise AssertionError(f"timed out after {timeout} s waiting for {what or js}")
        time.sleep(0.04)


def shot(page, name, full_page=False):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)


def version(page) -> int:
    return int(page.get_attribute("body", "data-version") or 0)


def status(page) -> str:
    return page.get_attribute("body", "data-status") or ""


def settled(page) -> bool:
    """No play waiting to be shown."""
    return not page.evaluate("window.escobaShowing ? window.escobaShowing() : true")


def no_overflow(page):
    widths = page.evaluate("[document.documentElement.scrollWidth, document.body.scrollWidth, innerWidth]")
    assert max(widths[:2]) <= widths[2], f"horizontal overflow: {widths}"


# One look at the element, in one evaluate: a locator's bounding_box resolves the element and then
# measures it in a second round trip, and the page rebuilds its seats on every render (a bot's play
# between the two left a detached element, measured as "not drawn").
BOX = """(sel) => {
  const el = document.querySelector(sel);
  if (!el) return null;
  const r = el.getBoundingClientRect();
  return r.width || r.height ? { x: r.left, y: r.top, width: r.width, height: r.height } : null;
}"""


def in_viewport(page, selector):
    box = page.evaluate(BOX, selector)
    vp = page.viewport_size
    assert box, f"{selector} is not drawn"
    assert box["y"] >= 0 and box["y"] + box["height"] <= vp["height"], f"{selector} is off screen: {box} in {vp}"
    assert box["x"] >= 0 and box["x"] + box["width"] <= vp["width"], f"{selector} is off screen: {box} in {vp}"


SETTLED = """() => Promise.race([
  Promise.all(document.getAnimations()
    .filter(a => a.effect && a.effect.getComputedTiming().endTime !== Infinity)
    .map(a => a.finished.catch(() => null))),
  new Promise(r => setTimeout(r, 3000)),
])"""


def axe_check(page, where):
    """axe-core (axe-playwright-python) finds no serious or critical violation."""
    from axe_playwright_python.sync_playwright import Axe

    # Contrast is judged at rest: the banner's pop fades it in over half a second, and axe run
    # mid-fade read its colours at partial opacity (CI, 2026-12-02: color-contrast on #banner).
    # Waiting for the animations to end was not enough on a loaded machine (CI, 2026-12-03): a bot's
    # move popped a new banner between the wait and axe's read. So axe reads the page as a reader
    # who asks for reduced motion sees it (the page's own CSS: every animation over in 10 ms), the
    # animations running then finished first; the page's CSP allows no style of the test's own.
    page.evaluate(SETTLED)
    page.emulate_media(reduced_motion="reduce")
    try:
        page.evaluate("""() => document.getAnimations()
          .filter(a => a.effect && a.effect.getComputedTiming().endTime !== Infinity).forEach(a => a.finish())""")
        results = Axe().run(page)
    finally:
        page.emulate_media(reduced_motion="no-preference")
    bad = [(v["id"], v["impact"], [n["target"] for n in v["nodes"]][:3])
           for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    assert not bad, f"axe at {where}: {bad}"


def button(english: str, lang: str = "en") -> str:
    """A button's accessible name in ``lang``: the catalogue's word for what is "english" in en.json."""
    if lang == "en":
        return english
    [key] = [k for k, v in words("en").items() if v == english]
    return words(lang)[key]


def open_table(page, base, preset="selminha", name="Ana", deck=None, settings=None, lang="en"):
    page.goto(f"{base}/")
    page.get_by_role("button", name=button("OPEN A TABLE", lang)).click()
    page.fill("#create-name", name)
    page.select_option("#create-preset", preset)
    if deck:
        page.select_option("#create-deck", deck)
    for key, value in (settings or {}).items():
        page.select_option(f"#create-settings select[data-setting={key}]", json.dumps(value))
    page.get_by_role("button", name=button("CREATE INVITE", lang)).click()
    page.wait_for_url("**/t/*")
    page.wait_for_selector("#waiting:not([hidden])")
    return page.url.rstrip("/").split("/t/")[-1]


def add_bots(page, n):
    for _ in range(n):
        before = page.locator(".waiting-seat .add-bot").count()
        page.locator(".waiting-seat .add-bot").first.click()
        until(page, f"document.querySelectorAll('.waiting-seat .add-bot').length === {before - 1}", what="a bot seated")


def start(page, lang="en"):
    page.get_by_role("button", name=button("START THE GAME", lang)).click()
    page.wait_for_selector("#felt:not([hidden])")


def my_turn(page) -> bool:
    return page.locator(".seat.you.turn").count() > 0 and status(page) == "playing" and settled(page)


# One play through the page's own controls in a single round trip (clicks and an ↓ key as DOM
# events, through the page's handlers): a whole game's many plays stay quick on a loaded machine.
DOM_PLAY = """() => {
  const take = document.querySelector('#fifteen button.take-fifteen');
  if (take) { take.click(); return 'take'; }
  const card = document.querySelector('#hand button.card');
  card.click();
  const cap = document.querySelector('#capture');
  if (!cap.disabled) { cap.click(); return 'capture'; }
  if (document.querySelector('#table-cards button.card.lit')) {
    document.querySelector('#hand button.card.picked').focus();
    document.dispatchEvent(new KeyboardEvent('keydown', { key: 'ArrowDown', bubbles: true }));
    cap.click();
    return 'capture a 15';
  }
  document.querySelector('#leave').click();
  return 'leave';
}"""


# What the page holds when a play seems lost: said in the failure, for whoever reads it next
PAGE_STATE = """async () => {
  const s = await import('/static/state.js');
  const view = s.v();
  return { version: view && view.version, turn: view && view.turn, you: view && view.you,
           my_turn: s.myTurn(), busy: !!s.app.busy, picked: s.app.picked, dragged: !!s.app.dragged,
           selected: [...(s.app.selected || [])], showing: window.escobaShowing ? window.escobaShowing() : null,
           live: document.body.dataset.live, hand: view ? view.hand : null,
           said: (document.getElementById('live') || {}).textContent || '' };
}"""


def play_turn(page, how="tap", tries=3):
    """One play from the page: TAKE THE 15 when offered, else the first card (a 15 if it has one).

    Seen once on a loaded machine: the play was made through the page's controls and no move
    followed within 20 s, the page still on its turn and idle. The play is made again then
    (never while a move is on its way: the page refuses a second one itself), and if none
    takes, the failure says what the page held. A card still picked is tapped again, as a
    player would: the page plays a picked card on a second tap."""
    before = version(page)
    held = None
    for attempt in range(tries):
        if held and held["picked"]:  # tapped again, a picked card is played (its marked 15, or left)
            page.locator("#hand button.card.picked").first.click()
        else:
            _play_once(page, how)
        try:
            until(page, f"Number(document.body.dataset.version) > {before} || "
                        "!!document.querySelector('#error:not([hidden])')", timeout=8.0, what="the play drawn")
            break
        except AssertionError:
            held = page.evaluate(PAGE_STATE)
            if held["version"] is not None and held["version"] > before:
                break  # drawn meanwhile
            if held["busy"]:  # the move is on its way: wait for its answer, never send another
                until(page, f"Number(document.body.dataset.version) > {before} || "
                            "!!document.querySelector('#error:not([hidden])')", what="the move on its way drawn")
                break
            if attempt == tries - 1 or not held["my_turn"]:
                raise AssertionError(f"no move after the play ({attempt + 1} tries); the page held {held}") from None
            # a warning, so a run that needed it says so in its summary even when it passes
            warnings.warn(f"play_turn: no move 8 s after the play, made again; the page held {held}",
                          stacklevel=2)
    assert page.locator("#error").is_hidden(), page.text_content("#error")


def _play_once(page, how):
    take = page.locator("#fifteen button.take-fifteen")
    if how == "dom":
        page.evaluate(DOM_PLAY)
    elif take.count():
        take.first.click()
    else:
        hand = page.locator("#hand button.card")
        if how == "keys":
            page.locator("#hint").click()
            page.keyboard.press("ArrowRight")
            page.keyboard.press("ArrowLeft")
            page.keyboard.press("Enter")
            page.wait_for_selector("#hand button.card.picked")
            if page.locator("#capture").is_disabled() and page.locator("#table-cards .card.lit").count():
                page.keyboard.press("ArrowDown")  # mark a 15
            page.keyboard.press("Enter")
        else:
            hand.first.click()
            page.wait_for_selector("#hand button.card.picked")
            if page.locator("#capture").is_enabled():
                page.get_by_role("button", name="CAPTURE").click()
            elif page.locator("#table-cards button.card.lit").count():
                page.locator("#hand button.card.picked").focus()
                page.keyboard.press("ArrowDown")  # several ways: mark the first 15
                page.get_by_role("button", name="CAPTURE").click()
            else:
                page.get_by_role("button", name="LEAVE ON TABLE").click()


def touch_drag(page, source, target):
    """A finger drags `source` onto `target` (touch events through the debugger protocol)."""
    cdp = page.context.new_cdp_session(page)
    a = page.evaluate(BOX, source)
    b = page.evaluate(BOX, target)
    x0, y0 = a["x"] + a["width"] / 2, a["y"] + a["height"] / 2
    x1, y1 = b["x"] + b["width"] / 2, b["y"] + b["height"] / 2
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x0, "y": y0}]})
    for i in range(1, 9):
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [
            {"x": x0 + (x1 - x0) * i / 8, "y": y0 + (y1 - y0) * i / 8}]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


def seat_token(page, base, table_id, token):
    """Hand a seat token to the page as if it had opened or joined the table itself."""
    seat = json.dumps({"token": token})
    page.add_init_script(f"try {{ localStorage.setItem('escoba.table.{table_id}', '{seat}'); }} catch (e) {{}}")


def stacked_table(base, deck_rounds, preset="selminha", settings=None):
    """A table dealt from known orders (operators' `decks`), the host Ana and Bruno seated, started."""
    body = {"name": "Ana", "preset": preset, "decks": deck_rounds, "settings": settings or {}}
    host = http("POST", f"{base}/tables", body, token=ADMIN)
    guest = http("POST", f"{base}/tables/{host['table_id']}/seats", {"name": "Bruno"})
    return host["table_id"], host["token"], guest["token"]


def full_deck(first):
    """A round's order: the given cards first, then the rest of the forty."""
    from engine.cards import FULL_DECK

    return list(first) + [c for c in FULL_DECK if c not in first]


# --- the page's words (api/static/i18n): what the page should say, from its own catalogues

def words(lang: str = "en") -> dict:
    return json.loads((CATALOGUES / f"{lang}.json").read_text(encoding="utf-8"))


def say(cat: dict, key: str, lang: str = "en", **params) -> str:
    """A catalogue message filled as the page fills it (ICU MessageFormat, tests/api/icu.py); plural forms
    by `lang`'s rules (English's by default, which the tests only ask for where the languages agree)."""
    from .icu import fill

    return fill(cat[key], params, lang)


def spanish_card(card: str, cat: dict | None = None) -> str:
    """A card of the Spanish deck named in a language's words ("7 of coins", "Sota de oros")."""
    cat = cat or words("en")
    value, suit = int(card[:-1]), card[-1]
    rank = say(cat, f"card.rank.{value}") if value in (1, 8, 9, 10) else str(value)
    return say(cat, "card.spanish", rank=rank, suit=say(cat, f"card.suit.{suit}"))


def resign(page, lang: str = "en", confirm: bool = True):
    """RESIGN from the menu, answered in the page's own dialog (no browser confirm())."""
    page.get_by_role("button", name=button("MENU", lang)).click()
    page.get_by_role("dialog").get_by_role("button", name=button("RESIGN", lang)).click()
    dialog = page.get_by_role("dialog", name=words(lang)["confirm.resign_title"])
    dialog.wait_for()
    dialog.get_by_role("button", name=button("RESIGN" if confirm else "KEEP PLAYING", lang)).click()


def card_words(card: str, design: str, cat: dict | None = None) -> str:
    """A card named in words as the page names it for a screen reader, whatever its design ("Queen of
    diamonds" on a French design, "Dama de ouros", "Sota de oros" on the baraja)."""
    from engine.cards import label

    cat = cat or words("en")
    if design == "spanish":
        return spanish_card(card, cat)
    letter = label(card, design)[:-1]  # "Q♦": its rank before the suit's symbol
    rank = cat[f"card.french_rank.{letter}"] if letter in ("A", "J", "Q", "K") else letter
    return say(cat, "card.french", rank=rank, suit=cat[f"card.french_suit.{card[-1]}"])
