"""Ratings over HTTP (docs/api.md v1.3 "Ratings"), on one Redis and on a cluster: the rated setting and
its not_rated refusal, a profile and /me after a rated game (never a card), the leaderboard, and bad
input refused changing nothing."""

from __future__ import annotations

import dataclasses
import secrets

import pytest

from api.app import create_app
from engine.cards import FULL_DECK
from events import ratings
from events.config import Config
from tests.events.ratings_games import open_rated, play

PASSWORD = "correct horse battery"


@pytest.fixture
def app(backends, topology):
    topology.flush()  # the boards are shared: start from an empty store
    app = create_app(backends, dataclasses.replace(Config(), bot_delay=0.0, rate_limits="off"))
    app.testing = True
    yield app
    topology.flush()


@pytest.fixture
def http(app):
    return app.test_client()


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


def sign_up(http, name):
    r = http.post("/players", json={"name": name, "password": PASSWORD})
    assert r.status_code == 201, r.get_json()
    return r.get_json()


@pytest.fixture
def worker(backends, app):
    """Runs the jobs due now in this process (the ratings job among them), as a worker would."""
    from workers import context, runner

    context.configure(app.extensions["escoba"].config, tables=backends.tables, queues=(backends.queue,))
    yield lambda: runner.run_burst(backends.tables, backends.queue)
    context.configure(None, None)


def _keys(tables) -> int:
    return sum(1 for _ in tables.scan_iter(count=1000))


def test_a_rated_table_with_a_guest_and_a_bot_refuses_to_start_naming_the_seats(http, tables):
    made = http.post("/tables", json={"name": "Ana", "preset": "del15", "rated": True})
    assert made.status_code == 201, made.get_json()
    table = made.get_json()
    assert table["table"]["settings"]["rated"] is True
    token = table["token"]
    r = http.post(f"/tables/{table['table_id']}/moves", json={"type": "add_bot", "bot": "tito"}, headers=bearer(token))
    assert r.status_code == 200
    version = r.get_json()["version"]
    r = http.post(f"/tables/{table['table_id']}/moves", json={"type": "start"}, headers=bearer(token))
    assert r.status_code == 409
    error = r.get_json()["error"]
    assert error["code"] == "not_rated" and error["details"] == {"seats": [0, 1]}
    assert http.get(f"/tables/{table['table_id']}").get_json()["version"] == version  # nothing appended
    # as a setting too, and an unrated table starts as before
    made = http.post("/tables", json={"name": "Ana", "preset": "del15", "settings": {"rated": False}}).get_json()
    http.post(f"/tables/{made['table_id']}/moves", json={"type": "add_bot", "bot": "tito"},
              headers=bearer(made["token"]))
    r = http.post(f"/tables/{made['table_id']}/moves", json={"type": "start"}, headers=bearer(made["token"]))
    assert r.status_code == 200


def test_bad_input_is_refused_and_changes_nothing(http, tables):
    before = _keys(tables)
    for body in ({"name": "Ana", "preset": "del15", "rated": "yes"},
                 {"name": "Ana", "preset": "del15", "rated": 1},
                 {"name": "Ana", "preset": "del15", "settings": {"rated": "true"}}):
        r = http.post("/tables", json=body)
        assert r.status_code == 400, body
        assert r.get_json()["error"]["code"] == "bad_request"
    for query in ("", "?preset=del15", "?mode=two", "?preset=chess&mode=two", "?preset=del15&mode=five",
                  "?preset=&mode=two"):
        r = http.get(f"/leaderboard{query}")
        assert r.status_code == 400, query
        assert r.get_json()["error"]["code"] == "bad_request" and r.get_json()["error"]["details"]
    r = http.get("/players/nobody_" + secrets.token_hex(4))
    assert r.status_code == 404 and r.get_json()["error"]["code"] == "not_found"
    assert _keys(tables) == before


def test_a_rated_game_shows_in_the_profile_and_me_and_a_profile_holds_no_card(app, http, tables):
    ana, bea = (sign_up(http, f"{n}_{secrets.token_hex(3)}") for n in ("ana", "bea"))
    svc = app.extensions["escoba"].service
    tid = open_rated(svc, [ana["player_id"], bea["player_id"]], names=[ana["name"], bea["name"]])
    state = play(svc, tid, seed=3)
    ratings.rate_table(tables, svc, tid, state.game)
    me = http.get("/me", headers=bearer(ana["token"])).get_json()
    [rating] = me["ratings"]
    assert rating["preset"] == "del15" and rating["mode"] == "two" and rating["games"] == 1
    assert rating["provisional"] is True and set(rating) == {"preset", "mode", "rating", "deviation", "games",
                                                             "provisional"}
    winner = state.seats[state.winners[0]].account
    assert (rating["rating"] > 1500) == (winner == ana["player_id"])
    r = http.get(f"/players/{ana['name'].upper()}")
    assert r.status_code == 200
    profile = r.get_json()
    assert profile["name"] == ana["name"] and profile["joined"]
    assert profile["ratings"] == me["ratings"]
    assert profile["totals"]["games"] == 1 and profile["accuracy"] is None
    [recent] = profile["recent"]
    assert recent["table_id"] == tid and recent["review"] == f"/t/{tid}/review"
    assert {"table_id", "preset", "result", "rating_change"} <= set(recent)
    text = r.get_data(as_text=True)
    assert not any(f'"{card}"' in text for card in FULL_DECK)
    # one game each: both provisional, so the board is empty
    r = http.get("/leaderboard?preset=del15&mode=two")
    assert r.status_code == 200 and r.get_json()["players"] == []


def test_a_rated_game_played_over_http_by_two_accounts_changes_both_ratings_once(app, http, worker):
    import random

    from tests.engine.helpers import random_command

    ana, bea = (sign_up(http, f"{n}_{secrets.token_hex(3)}") for n in ("ana", "bea"))
    made = http.post("/tables", json={"preset": "del15", "rated": True, "settings": {"target": 10}},
                     headers=bearer(ana["token"]))
    assert made.status_code == 201, made.get_json()
    tid = made.get_json()["table_id"]
    assert http.post(f"/tables/{tid}/seats", json={}, headers=bearer(bea["token"])).status_code == 201
    tokens = {ana["player_id"]: ana["token"], bea["player_id"]: bea["token"]}
    svc = app.extensions["escoba"].service
    r = http.post(f"/tables/{tid}/moves", json={"type": "start"}, headers=bearer(ana["token"]))
    assert r.status_code == 200, r.get_json()
    rng = random.Random(2)
    state = svc.load(tid)
    while (command := random_command(state, rng)) is not None:
        seat = command.pop("by")
        command.pop("deck", None)
        r = http.post(f"/tables/{tid}/moves", json=command, headers=bearer(tokens[state.seats[seat].account]))
        assert r.status_code == 200, r.get_json()
        state = svc.load(tid)
    assert state.status == "finished"
    worker()
    mine = {p["name"]: http.get("/me", headers=bearer(p["token"])).get_json()["ratings"] for p in (ana, bea)}
    winner = state.seats[state.winners[0]].name
    loser = bea["name"] if winner == ana["name"] else ana["name"]
    assert mine[winner][0]["rating"] > 1500 > mine[loser][0]["rating"]
    assert mine[winner][0]["games"] == mine[loser][0]["games"] == 1
    # the job again (a doubled hand-off) changes nothing
    from workers import ratings as ratings_job

    ratings_job.run(tid, 1)
    worker()
    again = {p["name"]: http.get("/me", headers=bearer(p["token"])).get_json()["ratings"] for p in (ana, bea)}
    assert again == mine
    profile = http.get(f"/players/{loser}").get_json()
    assert profile["totals"]["losses"] == 1 and profile["recent"][0]["rating_change"] < 0
