"""Back and Forward between the home and a table (issue 57): history states, and nothing of the table
left on the home (its header, CHAT, MENU, the live line, a bot's play drawn after leaving); the home
offers to continue the tables this browser holds a seat at (their seat tokens in localStorage)."""

from __future__ import annotations

import time

import pytest

from ..browser import Page, add_bots, needs_chromium, open_table, start, until, words

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

# what of a table shows on the home: nothing, once it is left
LEFT_OVER = """() => {
  const shown = (id) => { const el = document.getElementById(id); return !!el && el.getClientRects().length > 0; };
  return {
    home: shown('home'), game: shown('game'), title: document.getElementById('table-title').textContent,
    chat: shown('chat-toggle'), menu: shown('menu-button'), live: document.getElementById('live').textContent,
    status: document.body.dataset.status || '', path: location.pathname,
  };
}"""


def _home_is_clean(page, where):
    left = page.evaluate(LEFT_OVER)
    assert left == {"home": True, "game": False, "title": "", "chat": False, "menu": False, "live": "",
                    "status": "", "path": "/"}, f"{where}: {left}"


@pytest.mark.parametrize("kind,lang", [("desktop", "en"), ("phone", "pt-BR")])
def test_back_and_forward_between_the_home_and_a_table(server, browser, kind, lang):
    cat = words(lang)
    p = Page(browser, kind, locale=lang)
    page = p.page
    try:
        table_id = open_table(page, server.url, "selminha", name="Ana", lang=lang)
        add_bots(page, 3)  # three bots: they play on while the page is at the home
        start(page, lang)
        until(page, "document.querySelectorAll('#strip li').length > 0 && document.getElementById('live').textContent")
        table_name = page.text_content("#table-title").split(" · ")[0]

        page.go_back()  # to the home
        page.wait_for_selector("#home:not([hidden])")
        _home_is_clean(page, "back at the home")
        time.sleep(1.5)  # the bots' plays go on at the server: none is drawn here
        _home_is_clean(page, "a moment later")
        # the table this browser holds, offered to continue
        heading = page.get_by_role("heading", name=cat["home.continue.title"])
        heading.wait_for()
        link = page.get_by_role("link", name=table_name)
        link.wait_for()
        assert link.get_attribute("href").startswith(f"/t/{table_id}")

        page.go_forward()  # back to the table, as it is now
        page.wait_for_selector("#felt:not([hidden])")
        until(page, f"location.pathname === '/t/{table_id}'")
        until(page, "!!document.body.dataset.status && document.getElementById('table-title').textContent !== ''")
        assert page.locator("#menu-button").is_visible()
        assert page.locator("#home").is_hidden()

        page.go_back()
        page.wait_for_selector("#home:not([hidden])")
        _home_is_clean(page, "back again")
        page.get_by_role("link", name=table_name).click()  # continue: in this page, a new history entry
        page.wait_for_selector("#felt:not([hidden])")
        until(page, f"location.pathname === '/t/{table_id}'")
        page.go_back()
        page.wait_for_selector("#home:not([hidden])")
        _home_is_clean(page, "back after continuing")
        assert not p.errors, p.errors
    finally:
        p.close()
