"""A player's games in one list (docs/api.md v1.3), on one Redis and on a cluster: a guest's games from
its seat tokens, claimed into an account; ``GET /me/tables`` in its order and pages; no row holds a card."""

from __future__ import annotations

import dataclasses
import json
import re
import time

import pytest

from api.app import create_app
from events import my_tables
from events.config import Config

from ..conftest import ADMIN
from .test_players import bearer, sign_up, unique_name

ROW_FIELDS = {"table_id", "name", "preset", "status", "seat", "your_turn", "players", "version", "updated_at"}
CARD = re.compile(r"^(10|[1-9])[ocebOCEB]$")


@pytest.fixture
def http(backends):
    app = create_app(backends, dataclasses.replace(Config(), admin_token=ADMIN, bot_delay=0.0, rate_limits="off"))
    app.testing = True
    yield app.test_client()
    app.extensions["escoba"].fanout.stop()


def create(http, token=None, **body):
    r = http.post("/tables", json={"name": "Ana", "preset": "del15", **body},
                  headers=bearer(token) if token else {})
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def sit(http, table_id, token=None, name="Bea"):
    r = http.post(f"/tables/{table_id}/seats", json={"name": name}, headers=bearer(token) if token else {})
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def move(http, table_id, token, **body):
    r = http.post(f"/tables/{table_id}/moves", json=body, headers=bearer(token))
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def summaries(http, tokens):
    r = http.post("/tables/summaries", json={"tokens": tokens})
    assert r.status_code == 200, r.get_json()
    return r.get_json()["tables"]


def mine(http, token, **query):
    r = http.get("/me/tables", query_string=query, headers=bearer(token))
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def no_card_in(rows) -> None:
    def strings(value):
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for k, v in value.items():
                yield k
                yield from strings(v)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)

    text = json.dumps(rows)
    assert not any(CARD.match(s) for s in strings(rows)), text
    assert "hand" not in text and "deck" not in text and "p_" not in text


@pytest.mark.integration
def test_a_guests_games_are_listed_from_its_tokens_and_claimed(http):
    own = create(http, name="Gus")
    other = create(http, name="Hal")
    seat = sit(http, other["table_id"], name="Gus")
    move(http, own["table_id"], own["token"], type="add_bot", bot="tito")
    started = move(http, own["table_id"], own["token"], type="start")["table"]
    rows = summaries(http, [own["token"], seat["token"], "nope.nothing", "P.p0123456789abcdef.x", own["token"]])
    assert sorted(r["table_id"] for r in rows) == sorted([own["table_id"], other["table_id"]])
    by_id = {r["table_id"]: r for r in rows}
    first = by_id[own["table_id"]]
    assert set(first) >= ROW_FIELDS and first["seat"] == 0 and first["players"] == ["Gus", "Tito"]
    assert first["status"] == "playing" and first["preset"] == "del15"
    assert first["your_turn"] == (started["turn"] == 0)
    assert by_id[other["table_id"]]["seat"] == 1 and by_id[other["table_id"]]["status"] == "waiting"
    assert by_id[other["table_id"]]["players"] == ["Hal", "Gus"]
    no_card_in(rows)
    bad = http.post("/tables/summaries", json={"tokens": []})
    assert bad.status_code == 400 and bad.get_json()["error"]["code"] == "bad_request"
    assert http.post("/tables/summaries", json={"tokens": ["x"] * 101}).status_code == 400

    # claimed into an account: listed there, under the account's name; the seat token still plays
    account = sign_up(http, unique_name("gus"))
    r = http.post("/me/claim", json={"tokens": [own["token"], seat["token"], "nope.nothing"]},
                  headers=bearer(account["token"]))
    assert r.status_code == 200 and r.get_json() == {"claimed": 2}
    again = http.post("/me/claim", json={"tokens": [own["token"]]}, headers=bearer(account["token"]))
    assert again.get_json() == {"claimed": 0}
    listed = mine(http, account["token"])["tables"]
    assert sorted(r["table_id"] for r in listed) == sorted([own["table_id"], other["table_id"]])
    assert all(account["name"] in r["players"] for r in listed)
    no_card_in(listed)
    view = http.get(f"/tables/{own['table_id']}", headers=bearer(account["token"])).get_json()
    assert view["you"] == 0 and view["seats"][0]["name"] == account["name"] and view["seats"][0]["account"]
    assert http.get(f"/tables/{own['table_id']}", headers=bearer(own["token"])).get_json()["you"] == 0
    # another account cannot take those seats
    thief = sign_up(http, unique_name("thief"))
    r = http.post("/me/claim", json={"tokens": [own["token"], seat["token"]]}, headers=bearer(thief["token"]))
    assert r.get_json() == {"claimed": 0}
    assert mine(http, thief["token"])["tables"] == []
    assert http.post("/me/claim", json={"tokens": [own["token"]]}).status_code == 401


@pytest.mark.integration
def test_my_active_tables_put_my_turn_first_then_the_newest_change(http):
    me = sign_up(http, unique_name("me"))
    tables = []
    for _ in range(4):
        made = create(http, me["token"])
        guest = sit(http, made["table_id"])
        tables.append((made["table_id"], guest["token"]))
    waiting = create(http, me["token"])["table_id"]  # never started
    time.sleep(0.01)
    turns = {}
    for table_id, _guest in tables:
        view = move(http, table_id, me["token"], type="start")["table"]
        turns[table_id] = view["turn"] == view["you"]
        time.sleep(0.01)  # each table's last change a little later than the one before
    # the first table changes last: a move by whoever's turn it is
    first_id, first_guest = tables[0]
    view = http.get(f"/tables/{first_id}", headers=bearer(me["token"])).get_json()
    mover = me["token"] if view["turn"] == view["you"] else first_guest
    option = http.get(f"/tables/{first_id}", headers=bearer(mover)).get_json()["options"][0]
    after = move(http, first_id, mover, type="play", card=option["card"],
                 capture=option["captures"][0] if option["captures"] else [])["table"]
    turns[first_id] = after["turn"] == after["you"] if mover == me["token"] else after["turn"] == 0

    rows = mine(http, me["token"], status="active")["tables"]
    changed = [first_id, *[t for t, _ in reversed(tables[1:])], waiting]  # newest change first
    expected = [t for t in changed if turns.get(t)] + [t for t in changed if not turns.get(t)]
    assert [r["table_id"] for r in rows] == expected
    assert [r["your_turn"] for r in rows] == [bool(turns.get(t)) for t in expected]
    for row in rows:
        if row["status"] == "playing":
            assert "away_claimable_at" in row and row["away_claimable_at"] > row["updated_at"][:19]
        else:
            assert "away_claimable_at" not in row
    no_card_in(rows)
    assert mine(http, me["token"], status="finished") == {"tables": []}
    assert http.get("/me/tables").status_code == 401
    bad = http.get("/me/tables?status=mine", headers=bearer(me["token"]))
    assert bad.status_code == 400 and bad.get_json()["error"]["code"] == "bad_request"


@pytest.mark.integration
def test_finished_tables_come_newest_first_in_pages(http, monkeypatch):
    monkeypatch.setattr(my_tables, "PAGE", 2)
    me = sign_up(http, unique_name("me"))
    finished = []
    for _ in range(5):
        made = create(http, me["token"])
        sit(http, made["table_id"])
        move(http, made["table_id"], me["token"], type="start")
        move(http, made["table_id"], me["token"], type="resign")
        finished.append(made["table_id"])
        time.sleep(0.005)
    assert mine(http, me["token"])["tables"] == []  # none is active
    seen, cursor = [], None
    for _ in range(5):
        page = mine(http, me["token"], status="finished", **({"cursor": cursor} if cursor else {}))
        assert len(page["tables"]) <= 2
        seen += page["tables"]
        cursor = page.get("cursor")
        if cursor is None:
            break
    assert [r["table_id"] for r in seen] == list(reversed(finished))
    assert all(r["status"] == "finished" and not r["your_turn"] and "away_claimable_at" not in r for r in seen)
    no_card_in(seen)
    for cursor in ("xyz", "", "12:a%0Ab", "12:" + "a" * 65):  # docs/api.md's pattern: an empty one too
        bad = http.get(f"/me/tables?status=finished&cursor={cursor}", headers=bearer(me["token"]))
        assert bad.status_code == 400, cursor
    active = http.get("/me/tables?cursor=0:0", headers=bearer(me["token"]))  # one page: nothing to page
    assert active.status_code == 200 and active.get_json() == mine(http, me["token"])
