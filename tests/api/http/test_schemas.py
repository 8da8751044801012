"""api/http/schemas.py: what a name others see may hold."""

from __future__ import annotations

import re

import pytest

from api.http import schemas
from api.http.openapi import build_spec

REFUSED = [" ", "   \t", "\u200b", "\u200b\u200c\u200d", "\ufeff", "\u3164", "\u00a0\u2003", "\x00", "Ana\x00",
           "\u202eanA", "Ana\u2066", "\u200fAna", "Ana\n", "\x7f", "\u0085Bea"]
TAKEN = ["Ana", " Bea ", "José", "Zoë Ø", "\U0001f469\u200d\U0001f4bb", "李", "محمد", "a b"]


@pytest.mark.parametrize("name", REFUSED)
def test_a_name_without_a_visible_character_or_with_a_control_or_direction_one_is_refused(client, name):
    r = client.http.post("/tables", json={"name": name, "preset": "selminha"})
    assert r.status_code == 400, r.get_json()
    assert r.get_json()["error"]["code"] == "bad_request" and "name" in r.get_json()["error"]["details"]
    host = client.create()
    r = client.http.post(f"/tables/{host['table_id']}/seats", json={"name": name})
    assert r.status_code == 400 and "name" in r.get_json()["error"]["details"]
    r = client.http.post("/tables", json={"name": "Ana", "preset": "selminha", "table_name": name})
    assert r.status_code == 400 and "table_name" in r.get_json()["error"]["details"]


@pytest.mark.parametrize("name", TAKEN)
def test_a_name_that_shows_is_taken(client, name):
    r = client.http.post("/tables", json={"name": name, "preset": "selminha"})
    assert r.status_code == 201, r.get_json()


@pytest.mark.parametrize("name", REFUSED + TAKEN)
def test_openapi_documents_the_same_rule_the_server_applies(name):
    """schemathesis generates names from the document's pattern: it must agree with the validator."""
    pattern = build_spec()["components"]["schemas"]["TakeSeat"]["properties"]["name"]["pattern"]
    assert pattern == schemas.NAME_PATTERN
    assert (re.fullmatch(pattern, name) is not None) == (name in TAKEN)


_PLAYS = [
    {"type": "play", "card": "7o"},
    {"type": "play", "card": "7o", "capture": []},
    {"type": "play", "card": "7o", "capture": ["1c", "7e"]},
    {"type": "play", "card": "7o", "capture": ["1c"], "expected_version": 12},
    {"type": "play", "card": "7o", "expected_version": 0},
    {"type": "play", "card": "7o", "expected_version": 2**53 - 1},
    {"type": "play", "card": "7o", "expected_version": 2**53},
    {"type": "play", "card": "7o", "expected_version": -1},
    {"type": "play", "card": "7o", "expected_version": True},
    {"type": "play", "card": "7o", "expected_version": 3.0},
    {"type": "play", "card": "7o", "expected_version": "3"},
    {"type": "play", "card": "7o", "expected_version": None},
    {"type": "play", "card": "11o"},
    {"type": "play", "card": 7},
    {"type": "play", "card": None},
    {"type": "play"},
    {"type": "play", "card": "7o", "capture": None},
    {"type": "play", "card": "7o", "capture": "1c"},
    {"type": "play", "card": "7o", "capture": ["1c", "99x"]},
    {"type": "play", "card": "7o", "capture": ["1c"] * 40},
    {"type": "play", "card": "7o", "capture": ["1c"] * 41},
    {"type": "play", "card": "7o", "capture": [["1c"]]},
    {"type": "play", "card": "7o", "extra": 1},
    {"type": "play", "card": "7o", "seat": 1},
]


@pytest.mark.parametrize("body", _PLAYS)
def test_a_play_is_answered_as_its_schema_answers_it(body):
    """load_move checks a plain play by hand (schemas._plain_play): the same move, or the same errors."""
    try:
        expected = ("ok", schemas._MOVE_LOADERS["play"].load(body))
    except schemas.ValidationError as exc:
        expected = ("refused", exc.messages)
    try:
        got = ("ok", schemas.load_move(dict(body)))
    except schemas.ValidationError as exc:
        got = ("refused", exc.messages)
    assert got == expected
    if got[0] == "ok":  # and every play taken here was taken without the schema
        assert schemas._plain_play(body) == expected[1]
