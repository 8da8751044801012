"""The page's catalogues (api/static/i18n/<lang>.json): one a language, the same keys in each, every
key the page's code or HTML names present, none left unused, placeholders and plural forms alike,
and the seeds' English button words exactly as the contract lists them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ..icu import IcuError, args_of_kind, arguments, fill

STATIC = Path(__file__).resolve().parents[3] / "api" / "static"
LANGUAGES = ("en", "pt-BR", "es")
# a key is named for what it means: dotted lower-case words
KEY = re.compile(r"^[a-z][a-z0-9_]*(\.[a-zA-Z0-9_]+)+$")
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
def test_entries_are_icu_messages_with_the_same_arguments(lang):
    """Every entry is one ICU MessageFormat string that parses; a language asks for no argument English's
    message does not (the code passes English's), but `count`, which a language may need to agree with."""
    en, other = catalogue("en"), catalogue(lang)
    for key, entry in other.items():
        assert KEY.match(key), key
        assert isinstance(entry, str) and entry.strip(), f"{lang} {key}: not one message"
        try:
            theirs = set(arguments(entry))
        except IcuError as e:
            raise AssertionError(f"{lang} {key}: {e}") from None
        ours = set(arguments(en[key]))
        assert theirs - ours <= {"count"}, f"{lang} {key}: asks for {sorted(theirs - ours)} that English does not"
        assert ours - theirs <= {"count"}, f"{lang} {key}: leaves out {sorted(ours - theirs)}"
        for arg in args_of_kind(entry, "plural"):
            forms = {b for b in arg.branches if not b.startswith("=")}
            assert forms <= PLURAL_FORMS, f"{lang} {key}: plural forms {sorted(forms)}"


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


# ---- grammar as the languages have it (issue 57): the forms a language needs, and no grammatical gender

# messages whose words agree with a number the code passes as `count`: the cards left on the table
# ("sobrou"/"sobraram"), the players of a side ("Ana gana"/"Ana & Tito ganan"), the points or cards counted
AGREES = {
    "pt-BR": ["round.leftovers", "say.leftovers", "result.win", "result.win_why", "result.left_win",
              "result.resigned_win", "result.you_lose_left", "result.you_lose_resigned", "result.you_lose_side_left",
              "result.you_lose_side_resigned", "round.tie", "count.captured", "count.points", "count.in_hand",
              "count.escobas", "felt.deck_label", "seat.points_short", "settings.points", "score.side_has",
              "round.side_read", "card.ways", "chat.unread", "review.stock", "analysis.loss"],
}
AGREES["es"] = AGREES["pt-BR"]
AGREES["en"] = [k for k in AGREES["pt-BR"] if k not in ("round.leftovers",)]
# words that give a player a grammatical gender the page does not know ("o último a capturar" for Ana,
# "Lucía (anfitrión)"): a sentence about a player is phrased so it needs none
GENDERED = {
    "pt-BR": ["anfitrião", "anfitriã", "o último", "a última a", "parceiro", "parceira", "convidado", "convidada",
              "vencedor", "sozinho", "sozinha", "esse jogador", "um jogador", "deixada", "deixado na mesa por",
              "obrigado", "obrigada"],
    "es": ["anfitrión", "anfitriona", "el último", "la última en", "compañero", "compañera", "invitado",
           "invitada", "ganador", "solo tú", "ese jugador", "un jugador", "dejada", "dejado"],
}
# except the words of a button or a rule that name no one (the seeds' END GAME: PLAYER AWAY)
GENDER_FREE = {"play.claim_away", "notice.away_body", "step.away_opened", "result.no_winner", "result.no_winner_why",
               "card.part_of_fifteen", "felt.last_deal", "step.last_deal", "round.last_title"}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_message_that_agrees_with_a_number_has_its_plural_forms(lang):
    cat = catalogue(lang)
    lacking = [k for k in AGREES[lang] if not [a for a in args_of_kind(cat[k], "plural") if a.name == "count"]]
    assert lacking == [], f"{lang}: no plural forms on `count` in {lacking}"


def test_portuguese_says_zero_in_the_plural():
    """CLDR gives Portuguese's "one" to 0 as well: a plural that says its number has an "=0" form, so
    "0 pontos", "0 cartas no monte", never "0 ponto"."""
    cat = catalogue("pt-BR")
    lacking = []
    for key, entry in cat.items():
        for arg in args_of_kind(entry, "plural"):
            says_number = "#" in arg.branches.get("one", []) or any(
                getattr(p, "name", None) == arg.name for p in arg.branches.get("one", []))
            if says_number and "=0" not in arg.branches:
                lacking.append(key)
    assert lacking == [], f"pt-BR plurals that would say '0 ponto': {lacking}"
    assert fill(cat["count.points"], {"count": 0}, "pt-BR") == "0 pontos"
    assert fill(cat["count.points"], {"count": 1}, "pt-BR") == "1 ponto"
    assert fill(cat["felt.deck_label"], {"count": 0}, "pt-BR").startswith("0 cartas")


@pytest.mark.parametrize("lang", ["pt-BR", "es"])
def test_sentences_about_a_player_need_no_grammatical_gender(lang):
    cat = catalogue(lang)
    found = [(k, w) for k, v in cat.items() if k not in GENDER_FREE for w in GENDERED[lang] if w in v.lower()]
    assert found == [], f"{lang}: gendered words about a player: {found}"


def test_the_forms_read_as_the_languages_say_them():
    pt, es = catalogue("pt-BR"), catalogue("es")
    one = fill(pt["round.leftovers"], {"count": 1, "cards": "Rei de paus", "who": "Ana"}, "pt-BR")
    two = fill(pt["round.leftovers"], {"count": 2, "cards": "Rei de paus + 3 de copas", "who": "Ana"}, "pt-BR")
    assert "que sobrou na mesa, foi para Ana" in one and "que sobraram na mesa, foram para Ana" in two
    assert "el último" not in fill(es["round.leftovers"], {"count": 1, "cards": "Rey de oros", "who": "Ana"}, "es")
    win = fill(pt["result.win"], {"count": 2, "names": "Ana & Tito"}, "pt-BR")
    assert win == "Ana & Tito ganham.", win
    assert fill(es["result.win"], {"count": 2, "names": "Ana & Tito"}, "es") == "Ganan Ana & Tito."
    assert fill(es["result.win"], {"count": 1, "names": "Ana"}, "es") == "Gana Ana."
    assert fill(pt["count.captured"], {"count": 1}, "pt-BR") == "1 carta capturada"
