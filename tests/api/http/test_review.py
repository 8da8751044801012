"""Game review over HTTP: every state of a finished game, every hand shown; refused while playing."""

from __future__ import annotations

import random

import engine
from events.export import read_text

from ..conftest import ADMIN, play_out, two_player_table


def _get(client, path, token=None, query_token=None):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = path + (f"?token={query_token}" if query_token else "")
    return client.http.get(url, headers=headers)


def _log(client, table_id):
    r = client.http.get(f"/admin/tables/{table_id}/log", headers=client.admin())
    return read_text(r.get_data(as_text=True))


def test_a_finished_game_is_reviewed_step_by_step_with_every_hand(client):
    tid, host, guest = two_player_table(client, preset="cardgames")
    client.ok(tid, host, type="start")
    # a hand mid-game: the player's review is refused while the game is being played
    r = _get(client, f"/tables/{tid}/review", guest)
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "game_in_progress"
    r = _get(client, f"/tables/{tid}/review/3", host)
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "game_in_progress"
    play_out(client, tid, {0: host, 1: guest}, random.Random(7))

    index = _get(client, f"/tables/{tid}/review", guest).get_json()
    records = _log(client, tid)
    assert index["last"] == len(records) == len(index["steps"])
    assert [s["type"] for s in index["steps"]] == [r["type"] for r in records]
    state = engine.State()
    seen_hands = 0
    for record in records:
        state = engine.fold(state, [engine.event_from(record["type"], record["data"])])
        step = _get(client, f"/tables/{tid}/review/{record['version']}", guest).get_json()
        assert step["version"] == record["version"] and step["record"]["type"] == record["type"]
        expected = {str(s): list(h) for s, h in state.hands.items()}
        assert step["table"]["hands"] == expected
        assert step["table"]["table_cards"] == list(state.table)
        assert step["table"]["stock"] == list(state.stock)
        seen_hands += sum(1 for h in expected.values() if h)
        assert not step["record"]["actor"].startswith("player:")  # seats, never player handles
    assert seen_hands > 0  # the opponent's hand was shown too


def test_review_needs_a_token_of_the_table_in_the_header(client):
    tid, host, guest = two_player_table(client)
    client.ok(tid, host, type="start")
    client.ok(tid, host, type="resign")
    assert _get(client, f"/tables/{tid}/review").status_code == 401
    assert _get(client, f"/tables/{tid}/review", query_token=host).status_code == 401  # header only
    other = client.create()
    r = _get(client, f"/tables/{tid}/review", other["token"])
    assert r.status_code == 401
    assert _get(client, f"/tables/{tid}/review", host).status_code == 200
    assert _get(client, f"/tables/{tid}/review/0", host).status_code == 404
    assert _get(client, f"/tables/{tid}/review/x", host).status_code == 400
    assert _get(client, "/tables/nosuch00/review", ADMIN).status_code == 404


def test_the_operator_reviews_any_table_at_any_version_with_the_admin_token(client):
    tid, host, guest = two_player_table(client)
    client.ok(tid, host, type="start")
    current = client.view(tid)["version"]
    r = _get(client, f"/tables/{tid}/review", ADMIN)
    assert r.status_code == 200 and r.get_json()["last"] == current and r.get_json()["operator"]
    step = _get(client, f"/tables/{tid}/review/{current}", ADMIN).get_json()
    assert all(len(h) == 3 for h in step["table"]["hands"].values())  # mid-game, every hand
    assert _get(client, f"/tables/{tid}/review/{current + 1}", ADMIN).status_code == 404
    assert _get(client, f"/tables/{tid}/review", query_token=ADMIN).status_code == 401


def test_a_rematch_keeps_the_finished_game_reviewable_and_hides_the_new_one(client):
    tid, host, guest = two_player_table(client, preset="cardgames")
    client.ok(tid, host, type="start")
    play_out(client, tid, {0: host, 1: guest}, random.Random(3))
    client.ok(tid, host, type="rematch", accept=True)
    view = client.ok(tid, guest, type="rematch", accept=True)["table"]
    # the worker starts the rematch; start it here the way its job does
    app_ctx = client.http.application.extensions["escoba"]
    if view["status"] == "finished":
        app_ctx.service.execute(tid, {"type": "start_rematch", "by": None}, actor="system")
    assert client.view(tid)["status"] == "playing"
    index = _get(client, f"/tables/{tid}/review", host).get_json()
    current = client.view(tid)["version"]
    assert index["last"] < current
    r = _get(client, f"/tables/{tid}/review/{current}", host)
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "game_in_progress"
    assert _get(client, f"/tables/{tid}/review/{index['last']}", host).status_code == 200


def test_a_version_beyond_what_json_carries_is_a_clear_400_not_a_500(client):
    """2^64 and more had answered 500: the 404's details echoed a number orjson cannot encode."""
    tid, host, _ = two_player_table(client)
    for version in (2**64, 2**64 + 1, 10**40, 2**53, "-1", "1e3"):
        r = _get(client, f"/tables/{tid}/review/{version}", ADMIN)
        assert r.status_code == 400, (version, r.get_json())
        assert r.get_json()["error"]["code"] == "bad_request" and "version" in r.get_json()["error"]["details"]
    assert _get(client, f"/tables/{tid}/review/{2**53 - 1}", ADMIN).status_code == 404


def test_a_review_step_is_labelled_in_the_readers_deck_design(client):
    tid, host, guest = two_player_table(client, preset="cardgames")
    client.ok(tid, host, type="start")
    client.ok(tid, host, type="resign")
    version = _get(client, f"/tables/{tid}/review", host).get_json()["last"]
    table = _get(client, f"/tables/{tid}/review/{version}", host).get_json()["table"]
    spanish = _get(client, f"/tables/{tid}/review/{version}?deck=spanish", host).get_json()["table"]
    assert spanish["deck"] == "spanish" != table["deck"]
    assert spanish["labels"].keys() == table["labels"].keys() and spanish["labels"] != table["labels"]
    assert any(" de " in name for name in spanish["labels"].values())  # "Sota de oros", not "J♦"
    assert spanish["hands"] == table["hands"]  # labels only: the same cards
    r = _get(client, f"/tables/{tid}/review/{version}?deck=tarot", host)
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "bad_request"
