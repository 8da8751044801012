"""A home worth opening (issue 57): one picture and two lines saying what the game is, the rules a link
away, OPEN A TABLE; one deck choice in the create form (the reader's), the language select its own
width, and the whole create form, CREATE INVITE included, on one laptop screen (1280x800)."""

from __future__ import annotations

import re

import pytest

from ..browser import Page, axe_check, button, needs_chromium, shot, words

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed")

IN_VIEW = """(el) => { const r = el.getBoundingClientRect();
  return r.width > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight && r.right <= innerWidth; }"""


@pytest.mark.parametrize("lang", ["en", "pt-BR", "es"])
def test_the_home_says_what_the_game_is_and_the_form_fits_a_laptop(server, browser, lang):
    cat = words(lang)
    p = Page(browser, "desktop", locale=lang)
    page = p.page
    try:
        page.goto(f"{server.url}/")
        home = page.get_by_role("region", name=cat["home.title"])
        picture = home.get_by_role("img", name=cat["home.picture_alt"])
        assert picture.evaluate(IN_VIEW) and picture.evaluate("(img) => img.complete && img.naturalWidth > 0")
        assert home.get_by_role("heading", name=cat["home.title"]).is_visible()
        assert home.get_by_text(cat["home.intro"]).is_visible()
        language = home.get_by_label(re.compile("^" + re.escape(cat["language.label"])))
        width = language.evaluate("(s) => s.getBoundingClientRect().width")
        assert width <= 320, f"the language select is {width:.0f} px wide"
        shot(page, f"home-{lang}")
        axe_check(page, f"home ({lang})")

        # the rules, a link away
        home.get_by_role("link", name=cat["home.rules"]).click()
        page.get_by_role("heading", name=cat["rules.title"]).wait_for()
        assert page.get_by_text(cat["rules.play"]).is_visible()
        axe_check(page, f"rules ({lang})")
        page.go_back()

        open_button = page.get_by_role("button", name=button("OPEN A TABLE", lang))
        assert open_button.evaluate(IN_VIEW)
        open_button.click()
        create = page.get_by_role("button", name=button("CREATE INVITE", lang))
        for preset in ("selminha", "del15", "cardgames"):
            home.get_by_label(re.compile("^" + re.escape(cat["form.rules"]))).select_option(preset)
            create.wait_for()
            if not create.evaluate(IN_VIEW):
                shot(page, f"home-create-fold-{preset}-{lang}")
            assert create.evaluate(IN_VIEW), f"{preset}: CREATE INVITE is below the fold at 1280x800"
            assert page.evaluate("document.documentElement.scrollHeight <= innerHeight"), f"{preset}: the home scrolls"
            # one deck choice: the reader's design (the table's own is the host's to change once seated)
            labels = home.get_by_role("combobox").evaluate_all("(ss) => ss.map((s) => s.labels[0].textContent)")
            decks = [n for n in labels if cat["form.deck"] in n or cat["settings.deck"] in n]
            assert len(decks) == 1, decks
        shot(page, f"home-create-{lang}")
        assert not p.errors, p.errors
    finally:
        p.close()
