"""The rules model: presets as named defaults, the host's settings, custom tables."""

import random
from dataclasses import fields, replace

import pytest

from engine import (
    PRESETS,
    RuleError,
    Settings,
    State,
    custom_settings,
    decide,
    replay,
    settings_for,
)
from engine.cards import FULL_DECK
from engine.errors import STATUS
from engine.rules import CHOICES, OFFERED, settings_from_dict

from .helpers import apply, open_table, random_game


def test_presets_match_rules_md_section_2():
    sel, d15, cg = PRESETS["selminha"], PRESETS["del15"], PRESETS["cardgames"]
    assert (sel.target, d15.target, cg.target) == (21, 15, 21)
    assert (sel.opening_thirty, d15.opening_thirty, cg.opening_thirty) == (
        "two_escobas",
        "two_escobas_if_split",
        "two_escobas",
    )
    assert sel.opening_fifteen and d15.opening_fifteen and cg.opening_fifteen
    assert (sel.mandatory_capture, d15.mandatory_capture, cg.mandatory_capture) == (
        False,
        True,
        True,
    )
    assert sel.take_the_fifteen and not d15.take_the_fifteen and not cg.take_the_fifteen
    assert sel.capture == d15.capture == cg.capture == "spanish"
    assert sel.last_sweep_escoba and d15.last_sweep_escoba and cg.last_sweep_escoba
    assert sel.teams and d15.teams and not cg.teams
    assert sel.choose_partner and not d15.choose_partner
    assert (sel.first_dealer, d15.first_dealer, cg.first_dealer) == ("host", "host", "random")
    assert sel.most_cards_double and not d15.most_cards_double and not cg.most_cards_double
    # all ten coins: 2 in selminha and cardgames, an off-by-default extra in del15
    assert sel.all_coins_extra and cg.all_coins_extra and not d15.all_coins_extra
    assert (sel.sevens, d15.sevens, cg.sevens) == ("most", "setenta", "most")
    assert sel.all_sevens_extra and cg.all_sevens_extra and not d15.all_sevens_extra
    assert (sel.deck, d15.deck, cg.deck) == ("french", "spanish", "numeric")
    assert (sel.direction, d15.direction, cg.direction) == ("right", "right", "left")


def test_every_option_has_choices_and_a_default_among_them():
    names = {f.name for f in fields(Settings)}
    assert names == set(CHOICES)
    for preset in PRESETS.values():
        for name in names:
            assert getattr(preset, name) in CHOICES[name]


def test_host_settings_override_preset():
    s = settings_for("del15", {"target": 21, "opening_thirty": "nothing", "all_coins_extra": True})
    assert (s.target, s.opening_thirty, s.all_coins_extra) == (21, "nothing", True)
    assert s.sevens == "setenta"  # the rest stays the preset's
    assert settings_for("selminha", {"target": 31}).target == 31
    assert settings_for("selminha", {"deck": "french_swapped"}).deck == "french_swapped"
    assert settings_for("cardgames", None) == PRESETS["cardgames"]


def test_hybrid_capture_drops_the_last_card_escoba():
    assert settings_for("del15", {"capture": "hybrid"}).last_sweep_escoba is False
    assert settings_for("del15", {"capture": "spanish"}).last_sweep_escoba is True


@pytest.mark.parametrize(
    ("preset", "settings", "key"),
    [
        ("selminha", {"target": 17}, "target"),
        ("selminha", {"target": 15}, "target"),
        ("cardgames", {"target": 31}, "target"),
        ("del15", {"target": 31}, "target"),
        ("selminha", {"capture": "hybrid"}, "capture"),
        ("cardgames", {"all_coins_extra": True}, "all_coins_extra"),
        ("del15", {"colour": "red"}, "colour"),
        ("del15", {"opening_thirty": "three"}, "opening_thirty"),
        ("del15", {"opening_fifteen": 1}, "opening_fifteen"),  # 1 is not true
        ("del15", {"target": True}, "target"),
        ("del15", {"target": "15"}, "target"),
    ],
)
def test_a_setting_that_does_not_fit_is_bad_request_naming_the_key(preset, settings, key):
    with pytest.raises(RuleError) as err:
        settings_for(preset, settings)
    assert err.value.code == "bad_request"
    assert err.value.status == 400
    assert key in err.value.details
    assert key in err.value.message


def test_unknown_preset_and_non_dict_settings():
    with pytest.raises(RuleError) as err:
        settings_for("poker")
    assert err.value.code == "bad_request" and "preset" in err.value.details
    with pytest.raises(RuleError) as err:
        settings_for("del15", ["target"])
    assert err.value.code == "bad_request"


def test_open_refuses_bad_settings():
    with pytest.raises(RuleError) as err:
        decide(
            State(),
            {
                "type": "open",
                "name": "t",
                "preset": "selminha",
                "settings": {"target": 17},
                "player": "p0",
                "host_name": "Ana",
            },
        )
    assert err.value.code == "bad_request" and "target" in err.value.details


def test_settings_move_before_start_only_by_the_host():
    state = open_table("del15", 2)
    state = apply(
        state, {"type": "settings", "by": 0, "settings": {"capture": "hybrid", "target": 30}}
    )
    assert state.settings.capture == "hybrid" and state.settings.target == 30
    assert state.settings.last_sweep_escoba is False
    # a later change keeps the earlier ones
    state = apply(state, {"type": "settings", "by": 0, "settings": {"all_sevens_extra": True}})
    assert state.settings.capture == "hybrid" and state.settings.all_sevens_extra
    with pytest.raises(RuleError) as err:
        apply(state, {"type": "settings", "by": 1, "settings": {"target": 10}})
    assert err.value.code == "host_only"
    with pytest.raises(RuleError) as err:
        apply(state, {"type": "settings", "by": 0, "settings": {"wild": 1}})
    assert err.value.code == "bad_request" and "wild" in err.value.details
    state = apply(state, {"type": "start", "by": 0, "deck": list(FULL_DECK), "pick": 0})
    with pytest.raises(RuleError) as err:
        apply(state, {"type": "settings", "by": 0, "settings": {"target": 10}})
    assert err.value.code == "game_started"


def test_custom_settings_checks_each_option():
    s = custom_settings(capture="hybrid", sevens="setenta", teams=False, target=10)
    assert (s.capture, s.sevens, s.teams, s.target) == ("hybrid", "setenta", False, 10)
    with pytest.raises(RuleError) as err:
        custom_settings(target=17)
    assert err.value.code == "bad_request" and "target" in err.value.details
    with pytest.raises(RuleError):
        custom_settings(nonsense=True)


def test_settings_round_trip_through_the_log():
    for s in PRESETS.values():
        assert settings_from_dict(s.as_dict()) == s


def test_offered_keys_are_the_contract():
    for preset, offered in OFFERED.items():
        assert {"target", "opening_fifteen", "opening_thirty"} <= set(offered), preset
    assert set(OFFERED["del15"]) >= {"all_coins_extra", "all_sevens_extra", "capture"}
    assert OFFERED["selminha"]["target"] == (21, 31)
    assert OFFERED["del15"]["target"] == (10, 15, 21, 30)
    assert OFFERED["cardgames"]["target"] == (21,)


def test_error_codes_and_statuses_follow_the_contract():
    expected = {
        "bad_request": 400,
        "unauthorized": 401,
        "forbidden": 403,
        "host_only": 403,
        "not_found": 404,
        "not_your_turn": 409,
        "table_full": 409,
        "game_started": 409,
        "version_conflict": 409,
        "no_rematch": 409,
        "illegal_capture": 422,
        "must_capture": 422,
        "card_not_in_hand": 422,
        "no_fifteen_to_take": 422,
    }
    for code, status in expected.items():
        assert STATUS[code] == status
    err = RuleError("must_capture", "Capture.", {"card": "7o"})
    assert err.as_dict() == {
        "error": {"code": "must_capture", "message": "Capture.", "details": {"card": "7o"}}
    }


def test_direction_and_deck_design_never_change_the_rules():
    base = PRESETS["del15"]
    runs = []
    for changes in ({}, {"direction": "left"}, {"deck": "numeric"}):
        rules = replace(base, **changes)
        final, events = random_game(rules, 3, random.Random(8))
        runs.append(([type(e).__name__ for e in events[1:]], final.scores, final.winners))
        assert replay(events) == final
    assert runs[0] == runs[1] == runs[2]
