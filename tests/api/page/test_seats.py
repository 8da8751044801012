"""Every seat shows its name, BOT and team at every size (issue 57), the table cards sized to the felt on
tablets both ways, and the strip of plays following the latest play after a resize. A four-player
table with teams (Selminha) and three bots, looked at once play has begun, at each screen size."""

from __future__ import annotations

import pytest

from ..browser import Page, add_bots, needs_chromium, open_table, shot, start, until, words

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

SIZES = {
    "phone-390x844": ((390, 844, True), "es"),
    "phone-sideways-844x390": ((844, 390, True), "pt-BR"),
    "tablet-upright-820x1180": ((820, 1180, True), "pt-BR"),
    "tablet-sideways-1180x820": ((1180, 820, True), "es"),
    "desktop-1280x800": ((1280, 800, False), "en"),
}
# the smallest table card's width (px) a tablet's felt is to be given (it was 92 px in a mostly empty felt)
TABLET_CARDS = {"tablet-upright-820x1180": 110, "tablet-sideways-1180x820": 96}

# each seat: its name and badges, whether each is drawn whole inside the window and inside its seat
SEATS = r"""() => [...document.querySelectorAll('.seat')].map((seat) => {
  const s = seat.getBoundingClientRect();
  const look = (el) => {
    const r = el.getBoundingClientRect();
    const drawn = r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden';
    const inWindow = r.left >= -0.5 && r.top >= -0.5 && r.right <= innerWidth + 0.5 && r.bottom <= innerHeight + 0.5;
    const inSeat = r.left >= s.left - 0.5 && r.right <= s.right + 0.5
      && r.top >= s.top - 0.5 && r.bottom <= s.bottom + 0.5;
    const whole = el.scrollWidth <= el.clientWidth + 1;
    return { text: el.textContent, ok: drawn && inWindow && inSeat && whole };
  };
  return { seat: seat.dataset.seat, name: look(seat.querySelector('.seat-name')),
           badges: [...seat.querySelectorAll('.tags .badge')].map(look) };
})"""


def _open(browser, size, lang):
    w, h, touch = size
    extra = {"viewport": {"width": w, "height": h}, "locale": lang}
    if touch:
        extra.update(is_mobile=True, has_touch=True, device_scale_factor=2)
    return Page(browser, "phone" if touch else "desktop", **extra)


@pytest.mark.parametrize("screen", list(SIZES))
def test_every_seat_shows_its_name_bot_and_team(server, browser, screen):
    size, lang = SIZES[screen]
    cat = words(lang)
    p = _open(browser, size, lang)
    page = p.page
    try:
        open_table(page, server.url, "selminha", name="Lucía", lang=lang)
        add_bots(page, 3)
        start(page, lang)
        until(page, "!window.escobaShowing() && document.querySelectorAll('.seat').length === 4")
        shot(page, f"seats-{screen}")
        seats = page.evaluate(SEATS)
        assert len(seats) == 4
        bot, team = cat["seat.bot"], cat["seat.team"].split("{")[0].strip()
        for s in seats:
            assert s["name"]["ok"], f"{screen}: seat {s['seat']}'s name is not shown whole: {s}"
            shown = [b["text"] for b in s["badges"] if b["ok"]]
            hidden = [b["text"] for b in s["badges"] if not b["ok"]]
            assert not hidden, f"{screen}: seat {s['seat']} hides {hidden}"
            assert any(b.startswith(team) for b in shown), f"{screen}: seat {s['seat']} shows no team: {shown}"
            if s["seat"] != "0":  # the three bots
                assert bot in shown, f"{screen}: seat {s['seat']} shows no {bot}: {shown}"
        if screen in TABLET_CARDS:
            width = page.evaluate("Math.min(...[...document.querySelectorAll('#table-cards .card')]"
                                  ".map((c) => c.getBoundingClientRect().width))")
            assert width >= TABLET_CARDS[screen], f"{screen}: table cards {width:.0f} px wide"
        assert not p.errors, p.errors
    finally:
        p.close()


def test_the_strip_follows_the_latest_play_after_a_resize(server, browser):
    p = _open(browser, (390, 844, True), "en")
    page = p.page
    try:
        open_table(page, server.url, "selminha")
        add_bots(page, 3)
        start(page)
        # the bots play before Ana until the strip runs past its width
        until(page, "(() => { const s = document.getElementById('strip');"
                    " return s.scrollWidth > s.clientWidth + 20 && !window.escobaShowing(); })()",
              timeout=30, what="a strip longer than the phone is wide")
        at_end = ("(() => { const s = document.getElementById('strip');"
                  " return s.scrollLeft + s.clientWidth >= s.scrollWidth - 2; })()")
        assert page.evaluate(at_end)
        for w, h in ((844, 390), (390, 844), (820, 1180)):
            page.evaluate("document.getElementById('strip').scrollLeft = 0")  # read back by the player
            page.set_viewport_size({"width": w, "height": h})
            until(page, at_end, timeout=5, what=f"the strip at its latest play at {w}x{h}")
        assert not p.errors, p.errors
    finally:
        p.close()
