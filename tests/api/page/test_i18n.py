"""The page's catalogues (api/static/i18n/<lang>.json): one a language, the same keys in each, every
key the page's code or HTML names present, none left unused, placeholders and plural forms alike,
and the seeds' English button words exactly as the contract lists them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[3] / "api" / "static"
LANGUAGES = ("en", "pt-BR", "es")
# a key is named for what it means: dotted lower-case words
KEY = re.compile(r"^[a-z][a-z0-9_]*(\.[a-zA-Z0-9_]+)+$")
PLACEHOLDER = re.compile(r"\{(\w+)\}")
PLURAL_FORMS = {"zero", "one", "two", "few", "many", "other"}
# files that word something; the service worker reads its notices' keys like the page
SOURCES = sorted([*STATIC.glob("*.js"), *STATIC.glob("*.html")])
# the seeds' button words (API.md, "The page's words"): the English catalogue keeps them exactly
SEED_WORDS = {
    "home.open": "OPEN A TABLE", "home.create": "CREATE INVITE", "invite.copy": "COPY",
    "waiting.add_bot": "ADD A BOT", "waiting.start": "START THE GAME", "play.capture": "CAPTURE",
    "play.leave": "LEAVE ON TABLE", "banner.fifteen": "TAKE THE 15!", "round.next": "NEXT ROUND",
    "play.resign": "RESIGN", "play.exit": "EXIT GAME", "play.claim_away": "END GAME: PLAYER AWAY",
    "rematch.yes": "REMATCH", "rematch.keep": "KEEP", "rematch.swap": "SWAP",
}


def catalogue(lang: str) -> dict:
    return json.loads((STATIC / "i18n" / f"{lang}.json").read_text(encoding="utf-8"))


def named_keys() -> set[str]:
    """Every key the sources name: data-i18n attributes and quoted dotted strings in the code.
    The code never builds a key from pieces (a test could not see it), so this is all of them."""
    found = set()
    for path in SOURCES:
        text = path.read_text(encoding="utf-8")
        found.update(re.findall(r'data-i18n(?:-[a-z]+)?="([^"]+)"', text))
        found.update(s for s in re.findall(r'"([a-z][a-zA-Z0-9_.]*)"', text) if KEY.match(s))
    return found


def strings(entry) -> list[str]:
    return list(entry.values()) if isinstance(entry, dict) else [entry]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_each_catalogue_has_the_same_keys_as_english(lang):
    en, other = catalogue("en"), catalogue(lang)
    assert sorted(set(en) - set(other)) == [], f"{lang} misses keys"
    assert sorted(set(other) - set(en)) == [], f"{lang} has keys English lacks"


def test_every_key_the_page_names_is_in_the_catalogue_and_every_entry_is_named():
    en = catalogue("en")
    named = named_keys()
    # quoted dotted strings that are not keys: file names, storage keys, the CSS classes of a selector
    not_keys = {k for k in named if k not in en and (k.startswith("escoba.") or k.endswith(".js") or k.endswith(".json")
                                                      or k.startswith("button.") or k.startswith("sw."))}
    missing = sorted(named - set(en) - not_keys)
    assert missing == [], f"keys named in the page but in no catalogue: {missing}"
    unused = sorted(set(en) - named)
    assert unused == [], f"catalogue keys no source names: {unused}"


@pytest.mark.parametrize("lang", LANGUAGES)
def test_entries_are_well_formed_with_the_same_placeholders(lang):
    en, other = catalogue("en"), catalogue(lang)
    for key, entry in other.items():
        assert KEY.match(key), key
        if isinstance(entry, dict):
            assert isinstance(en[key], dict), f"{lang} {key}: plural forms where English has one string"
            assert "other" in entry and set(entry) <= PLURAL_FORMS, f"{lang} {key}: forms {sorted(entry)}"
        else:
            assert isinstance(entry, str) and entry.strip(), f"{lang} {key} is empty"
        theirs = {p for s in strings(entry) for p in PLACEHOLDER.findall(s)}
        ours = {p for s in strings(en[key]) for p in PLACEHOLDER.findall(s)}
        # a language may leave out a placeholder only where its plural form needs no number
        assert theirs <= ours and ours - theirs <= {"count"}, f"{lang} {key}: {sorted(theirs)} vs {sorted(ours)}"


def test_the_english_buttons_keep_the_seeds_words_exactly():
    en = catalogue("en")
    for key, words in SEED_WORDS.items():
        assert en[key] == words, key


@pytest.mark.parametrize("lang", ["pt-BR", "es"])
def test_the_other_languages_translate_the_buttons(lang):
    other = catalogue(lang)
    same = [key for key in SEED_WORDS if other[key] == SEED_WORDS[key] and key not in {"banner.fifteen"}]
    # a word the language shares (none today) would be listed here with its reason
    assert same == [], f"{lang} leaves English buttons: {same}"


def test_players_terms():
    pt, es = catalogue("pt-BR"), catalogue("es")
    assert "escova" in pt["banner.escoba"].lower() and pt["card.suit.o"] == "ouros"
    assert "naipe de ouros" in pt["settings.all_coins_extra"].lower() and "ouros" in pt["score.coins.french"].lower()
    assert es["card.suit.o"] == "oros" and "escoba" in es["banner.escoba"].lower()
    assert es["score.setenta"].lower() == "setenta"
    assert "siete de velo" in es["score.seven_of_coins.spanish"].lower()
    # a Spanish deck is named in one language: no English word in a Spanish card name, no Spanish in English
    en = catalogue("en")
    assert " of " in en["card.spanish"] and en["card.suit.o"] == "coins"
    assert " de " in es["card.spanish"] and " de " in pt["card.spanish"]
