"""A player's profile page (/p/{name}) in Debian's chromium, in the three languages: its ratings,
totals and recent games after two rated games, each game linked to its review, said in the page's
language, axe clean, no console error or CSP violation, and no card anywhere on it."""

from __future__ import annotations

import json
import secrets

import pytest

from engine.cards import FULL_DECK
from events import ratings
from tests.events.ratings_games import open_rated, play

from ..browser import Page, axe_check, http, needs_chromium, say, until, words

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed")

LANGUAGES = ("en", "pt-BR", "es")


def test_a_profile_in_each_language(server, browser):
    ana, bea = (http("POST", f"{server.url}/players", {"name": f"{n}_{secrets.token_hex(3)}",
                                                        "password": "correct horse battery"})
                for n in ("ana", "bea"))
    ctx = server.app.extensions["escoba"]
    tables = []
    for seed in (3, 4):
        tid = open_rated(ctx.service, [ana["player_id"], bea["player_id"]], names=[ana["name"], bea["name"]])
        state = play(ctx.service, tid, seed=seed)
        ratings.rate_table(ctx.redis, ctx.service, tid, state.game)
        tables.append(tid)
    profile = http("GET", f"{server.url}/players/{ana['name']}")
    [rating] = profile["ratings"]
    for lang in LANGUAGES:
        cat = words(lang)
        p = Page(browser, "phone" if lang == "pt-BR" else "desktop")
        page = p.page
        page.goto(f"{server.url}/p/{ana['name'].upper()}?lang={lang}")
        until(page, "!document.querySelector('#profile').hidden", what=f"the profile, {lang}")
        assert page.evaluate("document.documentElement.lang") == lang
        assert page.locator("#profile-name").text_content() == ana["name"]
        assert page.title() == say(cat, "profile.page_title_of", name=ana["name"])
        row = page.locator("#ratings tbody tr").first.text_content()
        assert cat["preset.del15"] in row and cat["profile.mode.two"] in row
        assert say(cat, "profile.provisional", rating="").strip() in row  # two games: provisional
        totals = page.locator("#totals").text_content()
        assert f"{cat['profile.games']}: 2" in totals
        links = page.locator("#recent a")
        assert links.count() == 2
        hrefs = {links.nth(i).get_attribute("href") for i in range(2)}
        assert {h.split("?")[0] for h in hrefs} == {f"/t/{tid}/review" for tid in tables}
        assert all(f"lang={lang}" in h for h in hrefs)
        assert links.first.text_content() == cat["profile.review"]
        recent = page.locator("#recent").text_content()
        assert cat["profile.result.win"] in recent or cat["profile.result.loss"] in recent
        assert page.locator("#accuracy").text_content() == cat["profile.no_accuracy"]
        text = page.locator("body").inner_text()
        assert not any(f" {card} " in f" {text} " for card in FULL_DECK if len(card) > 1)
        axe_check(page, f"profile, {lang}")
        assert p.errors == [], p.errors
        p.close()
    assert rating["games"] == 2 and rating["provisional"]

    # an unknown name: said in the page's language
    p = Page(browser, allow=("404",))
    page = p.page
    page.goto(f"{server.url}/p/nobody_{secrets.token_hex(3)}?lang=es")
    until(page, "!document.querySelector('#error').hidden", what="the error")
    assert page.locator("#error").text_content() == words("es")["profile.not_found"]
    assert json.dumps(p.errors) == "[]"
    p.close()
