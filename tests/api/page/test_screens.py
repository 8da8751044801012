"""The table on every screen (issue 25): phones upright and sideways, tablets both ways, a desktop.

Whole games against bots, one a screen size, the preset and the number of players turning from
one size to the next (three and four players both meet a phone). All through each game, looked
at many times a second, bounding boxes and hit tests say:
- one screen: the document never scrolls, and the felt, your seat, hand and buttons and every
  seat's name are inside the window;
- table cards never overlap and stay on the felt;
- nothing covers a name or a badge: no table card, hand card, flying card or ESCOBA! banner is
  the topmost thing over a seat's name, a seat's badge or the felt's Deck and Round badges;
- an ESCOBA! banner sits next to the seat that swept: it faces that seat (its middle within the
  seat's width or height), no other seat it faces is nearer, and it is at most 56 px away (a few
  px, or past the felt's badge row when that row lies between the seat and the felt);
- no console error or CSP violation.
Stacked deals then put ESCOBA! and DOUBLE ESCOBA! at known seats.
"""

from __future__ import annotations

import time

import pytest

from ..browser import (
    DOM_PLAY,
    Page,
    add_bots,
    button,
    full_deck,
    http,
    needs_chromium,
    open_table,
    seat_token,
    serve,
    shot,
    stacked_table,
    start,
    until,
    version,
)

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

# name: (width, height, touch), the preset, how many play, the host's choices
SCREENS = {
    "phone-360x740": ((360, 740, True), "selminha", 4, {"target": 21}),
    "phone-390x844": ((390, 844, True), "del15", 3, {"target": 10}),
    "phone-430x932": ((430, 932, True), "cardgames", 2, {}),
    "phone-sideways-844x390": ((844, 390, True), "del15", 4, {"target": 10}),
    "tablet-upright-820x1180": ((820, 1180, True), "del15", 3, {"target": 10}),
    "tablet-sideways-1180x820": ((1180, 820, True), "selminha", 2, {"target": 21}),
    "desktop-1280x800": ((1280, 800, False), "del15", 4, {"target": 10}),
}
# the browser's language at each size: every language on a phone, a tablet and a wide screen, so
# Portuguese's and Spanish's longer words are laid out too (a whole game each, not every pair)
LANGS = {"phone-360x740": "pt-BR", "phone-390x844": "es", "phone-430x932": "en", "phone-sideways-844x390": "es",
         "tablet-upright-820x1180": "pt-BR", "tablet-sideways-1180x820": "es", "desktop-1280x800": "pt-BR"}

# What covers what, in one look. Flying cards and the banner let pointer events through, so for
# the hit test they take them for a moment (CSSOM, allowed by the CSP), then give them back.
PROBLEMS = r"""() => {
  const out = [];
  const box = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 ? r : null; };
  const all = (sel) => [...document.querySelectorAll(sel)].map((e) => [e, box(e)]).filter(([, r]) => r);
  const meet = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1
    && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const what = (el) => el.dataset.card || (el.textContent || '').trim().slice(0, 24);
  // the page's body is a scroller of its own (overflow-x: hidden), so both are asked
  for (const de of [document.documentElement, document.body]) {
    if (de.scrollHeight > innerHeight || de.scrollWidth > innerWidth || de.scrollTop || de.scrollLeft) {
      out.push(`the document scrolls: ${de.scrollWidth}x${de.scrollHeight} in ${innerWidth}x${innerHeight}`);
    }
  }
  const inside = (r) => r.left >= -0.5 && r.top >= -0.5 && r.right <= innerWidth + 0.5 && r.bottom <= innerHeight + 0.5;
  const needed = ['#felt', '.seat.you', '#hand', '#actions', '.seat-name', '#hand .card', '.seat .badge', '#strip'];
  for (const sel of needed) {
    for (const [el, r] of all(sel)) if (!inside(r)) out.push(`${sel} ${what(el)} is off the screen`);
  }
  // the latest play in the strip is read whole or ends in an ellipsis, never scrolled in from mid-word
  const strip = box(document.getElementById('strip'));
  const latest = document.querySelector('#strip li.latest');
  const rl = latest && box(latest);
  if (strip && rl && (rl.left < strip.left - 1 || rl.right > strip.right + 1)) {
    out.push(`the latest play is cut by the strip's edge: ${what(latest)}`);
  }
  const felt = box(document.getElementById('felt'));
  // a card moved by a transition or an animation (lifted, scaled while taken) is judged
  // where it rests: the loop looks again every few ms, so a card that comes to rest off the felt is caught
  const MOVES = ['transform', 'translate', 'scale', 'left', 'top', 'width', 'height'];
  const moving = (el) => el.getAnimations().some((a) => a.playState === 'running'
    && a.effect.getKeyframes().some((k) => MOVES.some((m) => m in k)));
  const table = all('#table-cards .card:not(.gone)').filter(([el]) => !moving(el));
  table.forEach(([a, ra], i) => {
    const off = felt && (ra.left < felt.left - 1 || ra.right > felt.right + 1
      || ra.top < felt.top - 1 || ra.bottom > felt.bottom + 1);
    if (off) {
      out.push(`table card ${a.dataset.card} off the felt`);
    }
    for (const [b, rb] of table.slice(i + 1)) {
      if (meet(ra, rb)) out.push(`table cards ${a.dataset.card} and ${b.dataset.card} overlap`);
    }
  });
  const seats = all('.seat');
  seats.forEach(([a, ra], i) => {
    for (const [b, rb] of seats.slice(i + 1)) {
      if (meet(ra, rb)) out.push(`seats ${a.dataset.seat} and ${b.dataset.seat} overlap`);
    }
  });
  const lent = [...document.querySelectorAll('.figure, #banner')];
  const before = lent.map((e) => e.style.pointerEvents);
  lent.forEach((e) => { e.style.pointerEvents = 'auto'; });
  try {
    for (const [label, r] of all('.seat-name, .badge')) {
      const points = [[r.left + r.width / 2, r.top + r.height / 2], [r.left + 3, r.top + 3],
        [r.right - 3, r.bottom - 3]];
      for (const [x, y] of points) {
        const top = document.elementFromPoint(x, y);
        const by = top && !label.contains(top) && top.closest('.card, .figure, #banner');
        if (by) {
          const flying = by.classList.contains('figure');
          const who = by.id === 'banner' ? 'the banner' : flying ? 'a card in flight' : `card ${by.dataset.card}`;
          out.push(`${who} covers ${what(label)}`);
          break;
        }
      }
    }
  } finally {
    lent.forEach((e, i) => { e.style.pointerEvents = before[i]; });
  }
  return out;
}"""

SETTLE_MS = 250  # a few frames: long enough for the page to lay out a new table, far shorter than a fault lasts

# The banner and the seat it names: how far apart, and which seat is nearest to it
BANNER = r"""() => {
  const b = document.querySelector('#banner:not([hidden])');
  if (!b || !b.dataset.seat) return null;
  // its own place, not the pop animation's scale of the moment
  const r = { left: b.offsetLeft, top: b.offsetTop,
    right: b.offsetLeft + b.offsetWidth, bottom: b.offsetTop + b.offsetHeight };
  const gap = (s) => {
    const q = s.getBoundingClientRect();
    const dx = Math.max(q.left - r.right, r.left - q.right, 0);
    const dy = Math.max(q.top - r.bottom, r.top - q.bottom, 0);
    return Math.hypot(dx, dy);
  };
  const seats = [...document.querySelectorAll('.seat')].map((s) => [s.dataset.seat, gap(s)]);
  // which seat it faces: its middle within the seat's width (above or below it) or height (beside it)
  const mx = (r.left + r.right) / 2;
  const my = (r.top + r.bottom) / 2;
  const facing = [...document.querySelectorAll('.seat')].filter((s) => {
    const q = s.getBoundingClientRect();
    return (mx >= q.left && mx <= q.right) || (my >= q.top && my <= q.bottom);
  }).map((s) => s.dataset.seat);
  seats.sort((x, y) => x[1] - y[1]);
  const sr = document.querySelector(`.seat[data-seat="${b.dataset.seat}"]`).getBoundingClientRect();
  const f = (q) => [q.left, q.top, q.right, q.bottom].map(Math.round);
  const felt = f(document.getElementById('felt').getBoundingClientRect());
  return { text: b.textContent, seat: b.dataset.seat, gaps: seats, facing, banner: f(r), at: f(sr), felt };
}"""


def _open(browser, size, lang="en"):
    w, h, touch = size
    extra = {"viewport": {"width": w, "height": h}, "locale": lang}
    if touch:
        extra.update(is_mobile=True, has_touch=True, device_scale_factor=2)
    return Page(browser, "phone" if touch else "desktop", **extra)


def _look(page, where, seen_banners):
    problems = page.evaluate(PROBLEMS)
    if problems:
        # judged where things rest: a card is off the felt for a frame while the page lays out a new
        # table (seen once under CI's load); what is still wrong a few frames later is a fault
        page.wait_for_timeout(SETTLE_MS)
        again = page.evaluate(PROBLEMS)
        problems = [p for p in again if p in problems]
    if problems:
        shot(page, f"layout-problem-{where.replace(' ', '-')}")
    assert not problems, f"{where}: {problems}"
    b = page.evaluate(BANNER)
    if b and "ESCOBA" in b["text"]:
        _next_to(b, where)
        seen_banners.add(b["seat"])


def _next_to(b, where):
    mine = dict(b["gaps"])[b["seat"]]
    # a few px, or past the felt's badge row when that row lies between the seat and the felt
    assert mine <= 56, f"{where}: {b['text']} is {mine:.0f} px from seat {b['seat']}: {b}"
    # it faces its seat, and of the seats it faces that one is the nearest
    near = [s for s, gap in b["gaps"] if s in b["facing"]]
    assert near and near[0] == b["seat"], f"{where}: {b['text']} does not face seat {b['seat']} first: {b}"


@pytest.mark.parametrize("screen", list(SCREENS))
def test_a_whole_game_fits_the_screen(server, browser, screen):
    size, preset, players, settings = SCREENS[screen]
    lang = LANGS[screen]
    p = _open(browser, size, lang)
    page = p.page
    banners = set()
    try:
        open_table(page, server.url, preset, settings=settings, lang=lang)
        assert page.evaluate("document.documentElement.lang") == lang
        add_bots(page, players - 1)
        start(page, lang)
        assert page.evaluate("document.querySelectorAll('.seat').length") == players
        deadline = time.time() + 420
        rounds = plays = 0
        while True:
            assert time.time() < deadline, f"{screen}: the game did not end ({rounds} rounds, {plays} plays)"
            st, busy, mine, boxed = page.evaluate(
                "[document.body.dataset.status, window.escobaShowing(), !!document.querySelector('.seat.you.turn'),"
                " !document.getElementById('overlay').hidden]")
            if not boxed:  # the score box is meant to open over the table
                _look(page, f"{screen} round {rounds + 1} after {plays} plays", banners)
            if busy:
                time.sleep(0.01)
                continue
            if st == "finished":
                break
            if st == "round_over":
                rounds += 1
                before = version(page)
                page.get_by_role("button", name=button("NEXT ROUND", lang)).click()
                until(page, f"Number(document.body.dataset.version) > {before}", what="the next deal")
            elif st == "playing" and mine:
                if plays == 0:
                    _chat_and_felt(page, screen, size)
                if plays == 2:
                    shot(page, f"screen-{screen}")
                before = version(page)
                page.evaluate(DOM_PLAY)
                until(page, f"Number(document.body.dataset.version) > {before}", what="the play drawn")
                plays += 1
            time.sleep(0.02)
        assert rounds >= 1 and plays >= 5
        assert not p.errors, p.errors
    finally:
        p.close()


def _chat_and_felt(page, screen, size):
    """Phones and a tablet upright keep the chat behind its button and give the felt the width."""
    behind = screen.startswith(("phone", "tablet-upright"))
    assert page.locator("#chat").is_visible() != behind, screen
    assert page.locator("#chat-toggle").is_visible() == behind, screen
    felt = page.evaluate("document.getElementById('felt').getBoundingClientRect().width")
    if screen.startswith("tablet-upright"):
        assert felt >= 0.75 * size[0], f"{screen}: the felt is {felt:.0f} px wide"


@pytest.mark.parametrize("screen", ["phone-360x740", "phone-sideways-844x390", "desktop-1280x800"])
def test_escoba_shows_next_to_who_swept(server, browser, screen):
    """Ana (at the bottom) takes the 15 Bruno left, then sweeps A♦ 2♦ 4♦ with 8♣: its ESCOBA! sits
    beside Ana's seat. Then an opening table of 30: the DOUBLE ESCOBA! sits beside the dealer."""
    base = server.url
    deal = ["1o", "2o", "4o", "10e", "5c", "6c", "7c", "3b", "9b", "8b"]
    table_id, ana, bruno = stacked_table(base, [full_deck(deal)])
    p = _open(browser, SCREENS[screen][0])
    page = p.page
    banners = set()
    try:
        seat_token(page, base, table_id, ana)
        page.goto(f"{base}/t/{table_id}")
        page.wait_for_selector("#waiting:not([hidden])")
        start(page)
        # Bruno leaves 5♥ (a 15 with K♠): Ana takes the 15, then her 8♣ sweeps A♦ 2♦ 4♦
        http("POST", f"{base}/tables/{table_id}/moves", {"type": "play", "card": "5c", "capture": []}, bruno)
        page.wait_for_selector("#fifteen button.take-fifteen")
        until(page, "!window.escobaShowing()")
        page.locator("#fifteen button.take-fifteen").first.click()
        page.wait_for_selector("#strip li:has-text('TAKES THE 15')")
        until(page, "!window.escobaShowing()", what="the 15 taken, shown")
        page.locator("#hand [data-card='8b']").click()
        page.get_by_role("button", name="CAPTURE").click()
        page.wait_for_selector("#banner:not([hidden]):has-text('ESCOBA!')")
        b = page.evaluate(BANNER)
        assert b["seat"] == "0", b  # Ana's seat
        _next_to(b, screen)
        shot(page, f"escoba-{screen}")
        _look(page, f"{screen} escoba", banners)

        # an opening table of 30 goes to the dealer: DOUBLE ESCOBA! beside the dealer's seat
        table2, ana2, _ = stacked_table(base, [full_deck(["10o", "10c", "5e", "5b"])])
        seat_token(page, base, table2, ana2)
        page.goto(f"{base}/t/{table2}")
        page.wait_for_selector("#waiting:not([hidden])")
        http("POST", f"{base}/tables/{table2}/moves", {"type": "start"}, ana2)
        page.wait_for_selector("#banner:not([hidden]):has-text('DOUBLE ESCOBA!')")
        dealer = str(http("GET", f"{base}/tables/{table2}")["dealer"])
        b = page.evaluate(BANNER)
        assert b["seat"] == dealer, (b, dealer)
        _next_to(b, screen)
        shot(page, f"double-escoba-{screen}")
        _look(page, f"{screen} double escoba", banners)
        assert not p.errors, p.errors
    finally:
        p.close()


def test_the_layout_problems_are_seen(server, browser):
    """The looks above can fail: a table card moved over the Deck badge and over another card,
    and a document taller than the window, are each reported."""
    p = _open(browser, SCREENS["phone-390x844"][0])
    page = p.page
    try:
        table_id, ana, _ = stacked_table(server.url, [full_deck(["1o", "2o", "4o", "10e"])])
        seat_token(page, server.url, table_id, ana)
        page.goto(f"{server.url}/t/{table_id}")
        page.wait_for_selector("#waiting:not([hidden])")
        start(page)
        until(page, "!window.escobaShowing() && document.querySelectorAll('#table-cards .card').length === 4")
        assert page.evaluate(PROBLEMS) == []
        page.evaluate("""() => {
          const [a, b] = document.querySelectorAll('#table-cards .card');
          const deck = document.getElementById('stock').getBoundingClientRect();
          for (const c of [a, b]) {
            const r = c.getBoundingClientRect();
            c.style.transition = 'none';
            c.style.zIndex = '60';
            c.style.transform = `translate(${deck.left - r.left}px, ${deck.top - r.top}px)`;
          }
        }""")
        text = " | ".join(page.evaluate(PROBLEMS))
        assert "table cards 1o and 2o overlap" in text, text
        assert "covers Deck" in text, text
        page.evaluate("document.getElementById('main').style.minHeight = '3000px'")
        text = " | ".join(page.evaluate(PROBLEMS))
        assert "the document scrolls" in text and "#hand .card 7o is off the screen" in text, text
        # a fault that stays is still one after _look's settling
        with pytest.raises(AssertionError, match="the document scrolls"):
            _look(page, "a page made too tall", set())
    finally:
        p.close()


# a card in flight drawn over a seat's name, by their boxes alone (the hit test then says which is on top)
FLIGHT_OVER_NAME = r"""() => [...document.querySelectorAll('.figure.flying')].some((f) => {
  const a = f.getBoundingClientRect();
  return [...document.querySelectorAll('.seat-name')].some((n) => {
    const b = n.getBoundingClientRect();
    return Math.min(a.right, b.right) > Math.max(a.left, b.left)
      && Math.min(a.bottom, b.bottom) > Math.max(a.top, b.top);
  });
})"""


@pytest.mark.parametrize("screen", ["phone-390x844", "desktop-1280x800"])
def test_a_card_in_flight_passes_under_the_names(browser, screen):
    """At the page's own pace, a bot's card leaves its seat and crosses its name's box: the name stays on
    top all the way (the check runs through the flights of the first plays)."""
    s = serve()
    p = _open(browser, SCREENS[screen][0])
    p.ctx.add_init_script("try { localStorage.setItem('escoba.pace', '1'); } catch (e) {}")
    page = p.page
    try:
        open_table(page, s.url, "selminha")
        add_bots(page, 3)
        start(page)  # the host deals: the three bots play before the host
        # the look runs in the page, every frame, from the first flight to the host's turn: a look from here,
        # a round trip each, saw too few frames on a loaded machine to catch a card over a name (CI, 2026-12-06)
        page.evaluate(f"""() => {{
          const problems = {PROBLEMS};
          const over = {FLIGHT_OVER_NAME};
          const seen = window.__flights = {{ looks: 0, crossed: 0, covers: [] }};
          const look = () => {{
            seen.looks += 1;
            seen.covers.push(...problems().filter((x) => x.includes('covers')));
            seen.crossed += over() ? 1 : 0;
            seen.frame = requestAnimationFrame(look);
          }};
          look();
        }}""")
        page.wait_for_function("() => !!document.querySelector('.seat.you.turn') && !window.escobaShowing()",
                               timeout=60000)
        seen = page.evaluate("() => { cancelAnimationFrame(window.__flights.frame); return window.__flights; }")
        assert not seen["covers"], seen["covers"][:5]
        assert seen["crossed"], f"no card was seen crossing a name's box in {seen['looks']} looks"
        assert not p.errors, p.errors
    finally:
        p.close()
        s.stop()


def test_the_table_cards_size_fits_the_felt_and_no_larger(server, browser):
    """layout.fitWidth: every row fits the felt, and one px more would not (unless at the screen's
    largest), for felts from a phone held sideways to a desktop and one to sixteen cards."""
    p = _open(browser, SCREENS["desktop-1280x800"][0])
    page = p.page
    try:
        page.goto(f"{server.url}/")
        out = page.evaluate("""async () => {
          const { fitWidth } = await import('/static/layout.js');
          const gap = 8;
          const fits = (n, w, h, cw) => {
            const cols = Math.max(1, Math.floor((w + gap) / (cw + gap)));
            return Math.ceil(n / cols) * (cw * 1.5 + gap) - gap <= h;
          };
          const bad = [];
          for (const [w, h, max] of [[500, 190, 60], [344, 300, 76], [640, 700, 92], [600, 320, 92], [180, 400, 76]]) {
            for (let n = 1; n <= 16; n++) {
              const cw = fitWidth(n, w, h, max);
              const wrong = cw > max || (cw > 30 && !fits(n, w, h, cw)) || (cw < max && fits(n, w, h, cw + 1));
              if (wrong) bad.push([w, h, max, n, cw]);
            }
          }
          return bad;
        }""")
        assert out == [], out
    finally:
        p.close()
