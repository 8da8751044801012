"""The page's words in Debian's chromium: English, Brazilian Portuguese and Spanish (API.md v1.2).

Each language: `<html lang>`, buttons named in it, a whole round played on the table page with the
Spanish deck named in that language only, axe clean, no console error or CSP violation; the review
page steps through a whole game said in it (each play as the page announces it, the round-end box at
each round's end, the analysis); a pseudo-locale run wraps every catalogue string and finds no bare
text; a stubbed controller (navigator.getGamepads) picks and plays a card and opens the menu.

The analysis is served by another part of the server (GET/POST /tables/{id}/analysis): these tests
answer it with Playwright's route interception, in the contract's shape, from the game's real log.
"""

from __future__ import annotations

import json
import random
import re

import pytest

from events.export import read_text

from ..browser import (
    ADMIN,
    DOM_PLAY,
    Page,
    add_bots,
    axe_check,
    needs_chromium,
    no_overflow,
    say,
    seat_token,
    serve,
    shot,
    spanish_card,
    start,
    status,
    until,
    words,
)
from ..conftest import Client, play_out

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed")

LANGUAGES = ("en", "pt-BR", "es")
OPERATOR = {"Authorization": f"Bearer {ADMIN}"}  # the served app's admin token (browser.serve)
# the Spanish deck's names in each language, and the words of the others that must not show
SPANISH_DECK = {
    "en": (
        r"\b(?:Ace|Jack|Knight|King|[2-7]) of (?:coins|cups|swords|clubs)\b",
        r" de (?:oros|ouros|copas|espadas|bastos|paus)\b",
    ),
    "pt-BR": (
        r"\b(?:Ás|Valete|Cavalo|Rei|[2-7]) de (?:ouros|copas|espadas|paus)\b",
        r"\b(?:of|oros|bastos|Sota|Caballo|Rey)\b",
    ),
    "es": (
        r"\b(?:As|Sota|Caballo|Rey|[2-7]) de (?:oros|copas|espadas|bastos)\b",
        r"\b(?:of|ouros|paus|Valete|Cavalo|Rei)\b",
    ),
}


def card_name(cat: dict, card: str) -> str:
    return spanish_card(card, cat)


def cards_text(cat, cards):
    return " + ".join(card_name(cat, c) for c in cards)


@pytest.fixture(scope="module")
def server():
    s = serve()
    s.client = Client(s.app.test_client())
    try:
        yield s
    finally:
        s.stop()


def _until_my_turn_or(page, what="my turn or the round's end", timeout=30.0):
    until(
        page,
        "(!!document.querySelector('.seat.you.turn') && document.body.dataset.status === 'playing'"
        " && !window.escobaShowing()) || ['round_over', 'finished'].includes(document.body.dataset.status)",
        timeout=timeout,
        what=what,
    )


def _play_round(page):
    """Plays through the page's own controls until the round is over; returns how many."""
    plays = 0
    while status(page) == "playing":
        _until_my_turn_or(page)
        if status(page) != "playing":
            break
        before = int(page.get_attribute("body", "data-version"))
        page.evaluate(DOM_PLAY)
        until(
            page,
            f"Number(document.body.dataset.version) > {before} || !!document.querySelector('#error:not([hidden])')",
            what="the play drawn",
        )
        assert page.locator("#error").is_hidden(), page.text_content("#error")
        plays += 1
    until(page, "window.escobaShowing() === false", what="the round's end shown")
    return plays


def test_each_language_plays_a_round_on_the_table_page(server, browser):
    for lang in LANGUAGES:
        cat = words(lang)
        # pt-BR from the browser's languages, es from the address, en by default
        locale = {"pt-BR": "pt-BR", "es": "en-US", "en": "en-GB"}[lang]
        # the longest words (Portuguese) on the narrowest screen: a phone held upright
        p = Page(browser, "phone" if lang == "pt-BR" else "desktop", locale=locale)
        page = p.page
        page.add_init_script(PAD)
        page.goto(f"{server.url}/{'?lang=es' if lang == 'es' else ''}")
        until(page, f"document.documentElement.lang === {json.dumps(lang)}", what=f"<html lang> {lang}")
        assert page.title() == cat["page.title"]
        axe_check(page, f"home, {lang}")
        page.get_by_role("button", name=cat["home.open"], exact=True).click()
        page.fill("#create-name", "Ana")
        page.select_option("#create-preset", "del15")
        page.get_by_role("button", name=cat["home.create"], exact=True).click()
        page.wait_for_selector("#waiting:not([hidden])")
        assert page.locator(".waiting-seat .add-bot").first.text_content() == cat["waiting.add_bot"]
        add_bots(page, 1)
        page.get_by_role("button", name=cat["waiting.start"], exact=True).click()
        page.wait_for_selector("#felt:not([hidden])")
        _until_my_turn_or(page)
        no_overflow(page)
        assert page.locator("#capture").text_content() == cat["play.capture"]
        assert page.locator("#leave").text_content() == cat["play.leave"]
        # the ESCOBA! banner pops in with a scale and fade: axe would judge its contrast mid-animation
        until(page, "document.getElementById('banner').hidden", what="the banner gone", timeout=15)
        axe_check(page, f"table page, {lang}")
        _play_round(page)
        page.wait_for_selector("#round-box:not([hidden])")
        box = page.text_content("#round-box")
        assert cat["round.next"] in page.text_content("#next-round")
        assert cat["score.coins.spanish"] in box and cat["score.seven_of_coins.spanish"] in box
        assert cat["score.round_points"] in box
        # every card named in the strip and the live line is named in this language only
        strip = page.text_content("#strip")
        named, foreign = SPANISH_DECK[lang]
        assert re.search(named, strip), strip
        assert not re.search(foreign, strip), strip
        assert page.evaluate("document.documentElement.lang") == lang
        axe_check(page, f"round box, {lang}")
        shot(page, f"words-round-{lang}")
        if status(page) == "round_over":  # the controller's ↑ reaches NEXT ROUND first, A presses it
            press(page, UP)
            assert page.evaluate("document.activeElement.id") == "next-round"
            press(page, A)
            until(page, "document.body.dataset.status === 'playing'", what="NEXT ROUND from the controller")
        # an error from the API's code, worded by the page
        page.goto(f"{server.url}/t/no-such-table{'?lang=es' if lang == 'es' else ''}")
        page.wait_for_selector("#error:not([hidden])")
        assert page.text_content("#error") == cat["error.no_table"]
        assert [e for e in p.errors if "404" not in e] == [], p.errors  # the missing table's own 404 only
        p.close()


def test_a_language_picked_in_the_menu_is_kept_and_the_address_wins(server, browser):
    p = Page(browser, locale="en-US")
    page = p.page
    page.goto(f"{server.url}/")
    until(page, "document.documentElement.lang === 'en'")
    with page.expect_navigation():  # the page is shown again in the language picked
        page.select_option("#home-lang", "es")
    until(page, "document.documentElement.lang === 'es'", what="the page shown again in Spanish")
    assert page.get_by_role("button", name=words("es")["home.open"], exact=True).is_visible()
    assert page.evaluate("localStorage.getItem('escoba.lang')") == "es"
    page.goto(f"{server.url}/?lang=pt-BR")
    until(page, "document.documentElement.lang === 'pt-BR'", what="?lang= over the kept pick")
    page.goto(f"{server.url}/")
    until(page, "document.documentElement.lang === 'es'", what="the kept pick again")
    assert page.evaluate("document.querySelector('#home-lang').value") == "es"
    assert p.errors == []
    p.close()


# --------------------------------------------------------------------------- the pseudo-locale

# Every text node shown (and every option, accessible name, placeholder, title) must come from the
# catalogue, which wraps each string in ⟦ ⟧ under the pseudo-locale; what is left outside the marks
# may only be data: players' names, card symbols, numbers and punctuation. Card faces (SVG) are
# drawings, not words.
BARE = r"""(names) => {
  const bad = [];
  const closedUp = (el) => {
    for (let e = el; e; e = e.parentElement) if (e.hidden || (e.tagName === 'DIALOG' && !e.open)) return true;
    return false;
  };
  const shown = (el) => {
    if (closedUp(el)) return false;
    const cs = getComputedStyle(el);
    return cs.display !== 'none' && cs.visibility !== 'hidden' && el.getClientRects().length > 0;
  };
  const outside = (s) => {
    let out = '', depth = 0;
    for (const ch of s) {
      if (ch === '⟦') depth++;
      else if (ch === '⟧') depth = Math.max(0, depth - 1);
      else if (depth === 0) out += ch;
    }
    return out;
  };
  const data = (s) => {
    let r = s.replace(/(?:10|[1-9AJQK])[♦♥♠♣]/g, '');
    for (const n of names) r = r.split(n).join('');
    return r;
  };
  const check = (where, text) => {
    if (/\p{L}/u.test(data(outside(text)))) bad.push(`${where}: ${text.trim().slice(0, 140)}`);
  };
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || !n.textContent.trim() || el.closest('svg, script, style')) continue;
    if (el.tagName === 'OPTION') { if (!closedUp(el.parentElement)) check('option', n.textContent); continue; }
    if (shown(el)) check(el.id ? `#${el.id}` : el.tagName.toLowerCase(), n.textContent);
  }
  const attrs = ['aria-label', 'placeholder', 'title', 'aria-valuetext'];
  for (const el of document.querySelectorAll(attrs.map((a) => `[${a}]`).join(', '))) {
    if (closedUp(el) || el.closest('svg')) continue;
    for (const a of attrs) if (el.getAttribute(a)) check(`${a} of ${el.id || el.tagName}`, el.getAttribute(a));
  }
  check('title', document.title);
  return bad;
}"""
NAMES = ["Ana", "Bea", "Carmen", "Tito", "Luna"]


def _bare(page, where):
    found = page.evaluate(BARE, NAMES)
    assert found == [], f"text not from the catalogue at {where}: {found}"


def test_the_pseudo_locale_leaves_no_bare_text(server, browser):
    p = Page(browser)
    page = p.page
    page.add_init_script("try { localStorage.setItem('escoba.pseudo', 'on'); } catch (e) {}")
    page.on("dialog", lambda d: (p.errors.append(f"a browser dialog: {d.message}"), d.dismiss()))
    page.goto(f"{server.url}/")
    page.wait_for_selector("#home:not([hidden])")
    _bare(page, "home")
    page.click("#open-table")
    page.wait_for_selector("#create-form:not([hidden])")
    page.wait_for_selector("#create-settings select")
    _bare(page, "the create form")
    page.select_option("#create-preset", "del15")  # every choice a host may make, worded
    page.wait_for_selector("#create-settings select[data-setting=capture]")
    _bare(page, "the create form for del15")
    page.select_option("#create-preset", "selminha")
    page.fill("#create-name", "Ana")
    page.click("#create-form button[type=submit]")
    page.wait_for_selector("#waiting:not([hidden])")
    _bare(page, "waiting")
    guest = Page(browser)  # the invitation, as the one invited sees it
    guest.page.add_init_script("try { localStorage.setItem('escoba.pseudo', 'on'); } catch (e) {}")
    guest.page.goto(page.url)
    guest.page.wait_for_selector("#join:not([hidden])")
    _bare(guest.page, "the invitation")
    assert guest.errors == [], guest.errors
    guest.close()
    add_bots(page, 1)
    _bare(page, "waiting with a bot")
    page.click("#start")
    page.wait_for_selector("#felt:not([hidden])")
    _until_my_turn_or(page)
    _bare(page, "my turn")
    page.click("#hand button.card")
    _bare(page, "a card picked")
    page.keyboard.press("p")
    page.wait_for_selector("#menu[open]")
    _bare(page, "the menu")
    page.keyboard.press("Escape")
    _play_round(page)
    page.wait_for_selector("#round-box:not([hidden])")
    _bare(page, "the round's end")
    page.evaluate("document.getElementById('resign').click()")  # asked in the page's dialog: the game ends, lost
    page.wait_for_selector("#confirm[open]")
    _bare(page, "the confirmation")
    page.click("#confirm-yes")
    page.wait_for_selector("#result:not([hidden])")
    until(page, "window.escobaShowing() === false")
    _bare(page, "the game's end")
    review = page.get_attribute("#review-link", "href")
    assert p.errors == [], p.errors

    table_id = review.split("/")[2]
    log = server.client.http.get(f"/admin/tables/{table_id}/log", headers=OPERATOR).get_data(as_text=True)
    records = read_text(log)
    judged, analysis = _judged(records, server.client, table_id)
    page.route(
        "**/tables/*/analysis",
        lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(analysis)),
    )
    firsts = {}
    for r in records:
        firsts.setdefault(r["type"], r["version"])
    looks = sorted(
        {
            judged["version"],
            *(
                firsts[k]
                for k in (
                    "CardPlayed",
                    "RoundEnded",
                    "RoundScored",
                    "PlayerResigned",
                    "GameFinished",
                    "OpeningTableTaken",
                )
                if k in firsts
            ),
        }
    )
    for v in looks:
        page.goto(f"{server.url}{review}?v={v}")
        page.wait_for_selector(f"body[data-version='{v}']")
        until(page, "document.body.dataset.analysis === 'done'")
        _bare(page, f"the review at {v}")
    assert p.errors == [], p.errors
    p.close()


# --------------------------------------------------------------------------- the review


def _finished(client, seed=7):
    """A two-player game of the Spanish deck (del15 to 10) played out through HTTP."""
    host = client.create(preset="del15", settings={"target": 10})
    tid = host["table_id"]
    guest = client.sit(tid)
    client.ok(tid, host["token"], type="start")
    play_out(client, tid, {0: host["token"], 1: guest["token"]}, random.Random(seed))
    log = client.http.get(f"/admin/tables/{tid}/log", headers=OPERATOR).get_data(as_text=True)
    return tid, host["token"], read_text(log)


def _judged(records, client, table_id):
    """The analysis stub: seat 0's first card played from a hand of two or more is a blunder; the
    best was another card of that hand (the review's full view before it), left on the table."""
    first = None
    for r in records:
        d = r["data"]
        if r["type"] != "CardPlayed" or d["seat"] != 0:
            continue
        before = client.http.get(f"/tables/{table_id}/review/{r['version'] - 1}", headers=OPERATOR).get_json()
        hand = before["table"]["hands"]["0"]
        if len(hand) > 1:
            other = next(c for c in hand if c != d["card"])
            first = {
                "version": r["version"],
                "round": 1,
                "played": {"type": "play", "card": d["card"], "capture": d["captured"]},
                "best": {"type": "play", "card": other, "capture": []},
                "loss": 1.25,
                "label": "blunder",
            }
            break
    rest = [
        {
            "version": r["version"],
            "round": 1,
            "played": {"type": "play", "card": r["data"]["card"], "capture": r["data"]["captured"]},
            "best": {"type": "play", "card": r["data"]["card"], "capture": r["data"]["captured"]},
            "loss": 0,
            "label": None,
        }
        for r in records
        if r["type"] == "CardPlayed" and r["data"]["seat"] == 1
    ]
    return first, {
        "status": "done",
        "seats": [{"seat": 0, "accuracy": 87.5, "moves": [first]}, {"seat": 1, "accuracy": 100, "moves": rest}],
    }


STEP = """() => {
  const q = (sel) => document.querySelector(sel);
  const cards = (sel) => [...document.querySelectorAll(sel)].map((li) => li.dataset.card);
  return {
    version: Number(document.body.dataset.version), text: q('#review-event').textContent,
    type: q('#review-event').dataset.type, play: cards('#review-play li[data-card]'),
    drawn: document.querySelectorAll('#review-play li[data-card] svg.face').length,
    round: q('#review-round').hidden ? null : q('#review-round').textContent,
    judged: q('#review-judgement').hidden ? null : q('#review-judgement').textContent,
    best: cards('#judgement-best li[data-card]'),
  };
}"""

# an init script: navigator.getGamepads answers one standard pad whose buttons the test presses
PAD = """(() => {
  const buttons = Array.from({ length: 17 }, () => ({ pressed: false, touched: false, value: 0 }));
  window.__pad = { buttons, axes: [0, 0, 0, 0] };
  const pad = {
    index: 0, id: 'stub pad (STANDARD GAMEPAD)', connected: true, mapping: 'standard',
    get buttons() { return window.__pad.buttons; }, get axes() { return window.__pad.axes; },
    get timestamp() { return performance.now(); },
  };
  const getGamepads = () => [pad, null, null, null];
  Object.defineProperty(Navigator.prototype, 'getGamepads', { configurable: true, value: getGamepads });
})();"""


def press(page, button):
    """A controller button pressed and let go, a few frames each (the page reads pads once a frame)."""
    frames = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => requestAnimationFrame(r))))"
    page.evaluate(f"window.__pad.buttons[{button}] = {{ pressed: true, touched: true, value: 1 }}")
    page.evaluate(frames)
    page.evaluate(f"window.__pad.buttons[{button}] = {{ pressed: false, touched: false, value: 0 }}")
    page.evaluate(frames)


A, B, BACK, START, UP, DOWN, LEFT, RIGHT = 0, 1, 8, 9, 12, 13, 14, 15


def _kinds(records: list[dict], judged_version: int) -> list[int]:
    """The indexes of one record of each kind the review words differently (a play left, a capture, a
    capture with its escoba; each other event type), the judged move and the last record."""
    seen, picked = set(), []
    for i, r in enumerate(records):
        d = r["data"]
        kind = (r["type"], bool(d.get("captured")), bool(d.get("escoba"))) if r["type"] == "CardPlayed" else r["type"]
        if kind not in seen or r["version"] == judged_version or i == len(records) - 1:
            seen.add(kind)
            picked.append(i)
    return picked


def _check_step(page, cat, record, names, judged, lang, boxed):
    """What the review shows at ``record``'s step, in ``lang``'s words; True when it boxed a round."""
    shown = page.evaluate(STEP)
    assert shown["type"] == record["type"]
    assert shown["text"] and record["type"] not in shown["text"], shown
    d = record["data"]
    if record["type"] == "CardPlayed":
        who = names[d["seat"]]
        if d["captured"]:
            text = say(cat, "play.text.takes", who=who, card=card_name(cat, d["card"]),
                       cards=cards_text(cat, d["captured"]))
            worths = [int(c[:-1]) for c in [d["card"], *d["captured"]]]  # a capture read as its sum
            text += say(cat, "play.sum", sum=" + ".join(map(str, worths)) + f" = {sum(worths)}")
        else:
            text = say(cat, "play.text.left", who=who, card=card_name(cat, d["card"]))
        if d["escoba"]:
            text = say(cat, "review.with_escoba", play=text, escoba=cat["banner.escoba"])
        assert shown["text"] == text
        assert shown["play"] == [d["card"], *d["captured"]] and shown["drawn"] == len(shown["play"])
    if record["type"] == "RoundScored":
        assert shown["round"] and say(cat, "round.title", n=d["round"]) in shown["round"]
        assert cat["score.seven_of_coins.spanish"] in shown["round"] and cat["score.round_points"] in shown["round"]
        if not boxed:
            axe_check(page, f"review round box, {lang}")
    else:
        assert shown["round"] is None
    if record["version"] == judged["version"]:
        assert cat["analysis.blunder"] in shown["judged"], shown
        assert card_name(cat, judged["best"]["card"]) in shown["judged"]
        assert shown["best"] == [judged["best"]["card"]]  # the best move drawn
        axe_check(page, f"review judged move, {lang}")
    return record["type"] == "RoundScored"


def test_the_review_words_a_whole_game_in_each_language(server, browser):
    """In each language: the first steps by the controller, then one step of each kind the review words
    differently (opened at its version, as a shared link opens it), the judged move and the game's end.
    Stepping through every event, by the buttons and the keys, is test_review_browser's."""
    tid, token, records = _finished(server.client)
    judged, analysis = _judged(records, server.client, tid)
    names = {r["data"]["seat"]: r["data"]["name"] for r in records if r["type"] == "PlayerSeated"}
    names[0] = next(r["data"]["host_name"] for r in records if r["type"] == "TableOpened")
    kinds = _kinds(records, judged["version"])
    assert any(records[i]["type"] == "RoundScored" for i in kinds) and records[kinds[-1]] is records[-1]
    for lang in LANGUAGES:
        cat = words(lang)
        p = Page(browser)
        page = p.page
        page.add_init_script(PAD)
        seat_token(page, server.url, tid, token)
        page.route(
            "**/tables/*/analysis",
            lambda route: route.fulfill(status=200, content_type="application/json", body=json.dumps(analysis)),
        )
        page.goto(f"{server.url}/t/{tid}/review?lang={lang}&v=1")
        page.wait_for_selector("body[data-version='1']")
        assert page.evaluate("document.documentElement.lang") == lang
        until(page, "document.body.dataset.analysis === 'done'", what="the analysis shown")
        accuracy = page.text_content("#analysis-seats")
        # the reader's numbers: 87.5 in English, 87,5 in Portuguese and Spanish
        assert say(cat, "analysis.accuracy", name=names[0], accuracy="87.5" if lang == "en" else "87,5") in accuracy
        boxed = False
        for record in records[:5]:  # the controller steps as the keys do
            page.wait_for_selector(f"body[data-version='{record['version']}']")
            boxed |= _check_step(page, cat, record, names, judged, lang, boxed)
            press(page, RIGHT)
        for i in kinds:
            record = records[i]
            page.goto(f"{server.url}/t/{tid}/review?lang={lang}&v={record['version']}")
            page.wait_for_selector(f"body[data-version='{record['version']}']")
            if record["version"] == judged["version"]:
                until(page, "document.body.dataset.analysis === 'done'", what="the analysis shown")
            boxed |= _check_step(page, cat, record, names, judged, lang, boxed)
        assert boxed
        final = page.text_content("#review-scores")
        assert say(cat, "review.winners", names="", count=1).strip() in final  # two players: one wins
        press(page, UP)  # the controller's ↑: back to the first step
        page.wait_for_selector("body[data-version='1']")
        assert page.locator("#step-next").text_content() == cat["review.next"]
        assert p.errors == [], p.errors
        p.close()


def test_analyse_asks_for_the_analysis_and_shows_it_when_done(server, browser):
    tid, token, records = _finished(server.client, seed=3)
    judged, analysis = _judged(records, server.client, tid)
    answers = []  # what the stub answered, in order

    def route(r):
        if r.request.method == "POST":
            answers.append("post")
            r.fulfill(
                status=202, content_type="application/json", body=json.dumps({"status": "pending", "progress": 0})
            )
        elif "post" not in answers:
            answers.append("404")
            r.fulfill(
                status=404,
                content_type="application/json",
                body=json.dumps(
                    {"error": {"code": "not_found", "message": "No analysis was asked for.", "details": {}}}
                ),
            )
        elif answers.count("pending") < 1:
            answers.append("pending")
            r.fulfill(
                status=202, content_type="application/json", body=json.dumps({"status": "pending", "progress": 0.5})
            )
        else:
            answers.append("done")
            r.fulfill(status=200, content_type="application/json", body=json.dumps(analysis))

    cat = words("en")
    p = Page(browser, allow=("status of 404",))
    page = p.page
    seat_token(page, server.url, tid, token)
    page.route("**/tables/*/analysis", route)
    page.goto(f"{server.url}/t/{tid}/review")
    page.wait_for_selector("body[data-analysis='none']")
    page.get_by_role("button", name=cat["analysis.ask"], exact=True).click()
    until(page, "document.body.dataset.analysis === 'pending'")
    assert "%" in page.text_content("#analysis-status")
    until(page, "document.body.dataset.analysis === 'done'", what="the analysis polled until done")
    assert answers == ["404", "post", "pending", "done"]
    assert page.locator("#analyse").is_hidden()
    page.locator("#analysis-seats button.judged").first.click()  # a flagged move: its step
    page.wait_for_selector(f"body[data-version='{judged['version']}']")
    assert page.locator("#review-judgement").is_visible()
    assert p.errors == [], p.errors
    p.close()


# --------------------------------------------------------------------------- the controller


def test_a_controller_picks_and_plays_a_card_and_opens_the_menu(server, browser):
    p = Page(browser)
    page = p.page
    page.add_init_script(PAD)
    page.on("dialog", lambda d: d.dismiss())
    page.goto(f"{server.url}/")
    page.get_by_role("button", name="OPEN A TABLE").click()
    page.fill("#create-name", "Ana")
    page.select_option("#create-preset", "cardgames")
    page.get_by_role("button", name="CREATE INVITE").click()
    page.wait_for_selector("#waiting:not([hidden])")
    add_bots(page, 1)
    start(page)
    for _ in range(3):  # a few turns, each played with the controller alone
        _until_my_turn_or(page)
        if status(page) != "playing":
            break
        hand = page.evaluate("[...document.querySelectorAll('#hand button.card')].map(b => b.dataset.card)")
        before = int(page.get_attribute("body", "data-version"))
        press(page, RIGHT)  # the D-pad browses the hand
        focused = page.evaluate("document.activeElement.dataset.card || null")
        assert focused in hand
        press(page, LEFT)
        press(page, RIGHT)
        assert page.evaluate("document.activeElement.dataset.card || null") == focused
        press(page, A)  # A picks the card in focus
        page.wait_for_selector(f"#hand button.card.picked[data-card='{focused}']")
        if page.locator("#capture").is_disabled() and page.locator("#table-cards button.card.lit").count():
            press(page, DOWN)  # several ways to 15: ↓ marks one, as the keys do
        press(page, 2)  # X plays it, as A would
        until(
            page,
            f"Number(document.body.dataset.version) > {before} || !!document.querySelector('#error:not([hidden])')",
            what="the controller's play",
        )
        assert page.locator("#error").is_hidden(), page.text_content("#error")
        until(page, f"!document.querySelector('#hand button.card[data-card=\"{focused}\"]')", what="the card played")
    press(page, START)
    page.wait_for_selector("#menu[open]")
    press(page, DOWN)  # the D-pad browses the menu's controls
    assert page.evaluate("document.getElementById('menu').contains(document.activeElement)")
    press(page, B)
    until(page, "!document.getElementById('menu').open", what="B closes the menu")
    sound = page.get_attribute("body", "data-sound")
    press(page, BACK)
    until(page, f"document.body.dataset.sound !== {json.dumps(sound)}", what="Back toggles the sound")
    assert p.errors == [], p.errors
    p.close()


# --------------------------------------------------------------------------- the service worker's notices

SHOWN = "navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns => ns.map(n => [n.title, n.body]))"


def _pushed(browser, base, lang, message):
    """The notices the worker registered as the page registers it shows for one pushed message."""
    ctx = browser.new_context(permissions=["notifications"])
    try:
        page = ctx.new_page()
        page.goto(f"{base}/?lang={lang}")
        cdp = ctx.new_cdp_session(page)
        registrations = []
        cdp.on("ServiceWorker.workerRegistrationUpdated", lambda e: registrations.extend(e["registrations"]))
        cdp.send("ServiceWorker.enable")
        page.evaluate(f"navigator.serviceWorker.register('/sw.js?lang={lang}', {{ scope: '/' }})"
                      ".then(() => navigator.serviceWorker.ready)")
        until(page, "true")  # a round trip: the registration's event has arrived
        live = [r for r in registrations if not r.get("isDeleted")]
        assert live, registrations
        # delivered again if not shown in 10 s: on a loaded machine (CI at load 7) one delivery
        # through the debugger was once never shown; the same tag makes a second one replace the first
        for attempt in range(3):
            cdp.send("ServiceWorker.deliverPushMessage",
                     {"origin": base, "registrationId": live[0]["registrationId"], "data": json.dumps(message)})
            try:
                until(page, f"{SHOWN}.then(ns => ns.length > 0)", timeout=10.0, what="the notice shown")
                break
            except AssertionError:
                if attempt == 2:
                    raise
        return page.evaluate(SHOWN)
    finally:
        ctx.close()


@pytest.mark.parametrize(("lang", "reason"), [("pt-BR", "turn"), ("es", "away")])
def test_the_service_worker_words_its_notices_in_the_pages_language(server, browser, lang, reason):
    """A push delivered to the worker (the debugger protocol's push, as a push service would) is
    shown in the language the page registered it with (push.js: /sw.js?lang=...), not in the
    server's English."""
    cat = words(lang)
    message = {"title": "Escoba: your turn", "body": "Your turn at Casa Ana.", "table_name": "Casa Ana",
               "reason": reason, "url": "/t/x", "tag": "escoba-x"}  # the server's shape (workers/push.py)
    [(title, body)] = _pushed(browser, server.url, lang, message)
    assert (title, body) == (cat[f"notice.{reason}_title"], say(cat, f"notice.{reason}_body", table="Casa Ana"))
