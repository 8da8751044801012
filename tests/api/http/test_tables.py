"""Each endpoint's happy path and error codes, and a whole game through HTTP alone."""

from __future__ import annotations

import dataclasses
import random
import re

from api.app import create_app
from engine.cards import FULL_DECK
from workers.scheduling import notify_key

from ..conftest import ADMIN, Client, play_out, two_player_table


def error(r):
    body = r.get_json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
    return body["error"]["code"]


def log_length(client, table_id):
    r = client.http.get(f"/admin/tables/{table_id}/log", headers=client.admin())
    return len([line for line in r.get_data(as_text=True).splitlines() if line])


def test_create_table_returns_seat_zero_token_and_invite(client):
    body = client.create(name="Ana", preset="del15", settings={"target": 21})
    assert body["seat"] == 0 and body["token"]
    assert body["invite_url"].endswith(f"/t/{body['table_id']}")
    assert body["table"]["you"] == 0
    assert body["table"]["settings"]["target"] == 21
    assert body["table"]["seats"][0]["name"] == "Ana"


def test_bad_bodies_are_400_naming_the_field(client):
    assert error(client.http.post("/tables", data="{nope", content_type="application/json")) == "bad_request"
    r = client.http.post("/tables", json={"name": "Ana", "preset": "selminha", "colour": "red"})
    assert error(r) == "bad_request" and "colour" in r.get_json()["error"]["details"]
    r = client.http.post("/tables", json={"name": "x" * 41, "preset": "selminha"})
    assert error(r) == "bad_request" and "name" in r.get_json()["error"]["details"]
    r = client.http.post("/tables", json={"name": "Ana", "preset": "selminha", "settings": {"target": 17}})
    assert r.status_code == 400 and "target" in r.get_json()["error"]["details"]
    r = client.http.post("/tables", json={"name": "Ana", "preset": "selminha", "settings": {"capture": "hybrid"}})
    assert r.status_code == 400 and "capture" in r.get_json()["error"]["details"]
    r = client.http.post("/tables", data="x" * 20000, content_type="application/json")
    assert r.status_code == 413 and error(r) == "bad_request"


def test_operator_decks_need_the_admin_token(client):
    deck = list(FULL_DECK)
    r = client.http.post("/tables", json={"name": "Ana", "preset": "selminha", "decks": [deck]})
    assert r.status_code == 403 and error(r) == "forbidden"
    r = client.http.post("/tables", json={"name": "Ana", "preset": "selminha", "decks": [deck], "first_dealer": 1},
                         headers=client.admin())
    assert r.status_code == 201
    table_id, token = r.get_json()["table_id"], r.get_json()["token"]
    client.sit(table_id)
    view = client.ok(table_id, token, type="start")["table"]
    assert view["dealer"] == 1
    # the first four of the operator's deck go to the table (unless the dealer took them)
    assert view["table_cards"] in (deck[:4], [])


def test_seats_fill_then_table_full_then_watch(client):
    host = client.create()
    table_id = host["table_id"]
    seats = [client.sit(table_id, f"P{i}")["seat"] for i in range(3)]
    assert seats == [1, 2, 3]
    r = client.http.post(f"/tables/{table_id}/seats", json={"name": "Late"})
    assert r.status_code == 409 and error(r) == "table_full"
    spectator = client.view(table_id)
    assert spectator["you"] is None and spectator["hand"] == []


def test_no_such_table_is_404(client):
    assert error(client.http.get("/tables/nope")) == "not_found"
    assert client.http.get("/tables/nope").status_code == 404
    assert client.http.post("/tables/nope/seats", json={"name": "A"}).status_code == 404


def test_moves_need_a_valid_token(client):
    table_id, host, _ = two_player_table(client)
    r = client.http.post(f"/tables/{table_id}/moves", json={"type": "start"})
    assert r.status_code == 401 and error(r) == "unauthorized"
    r = client.move(table_id, "forged", type="start")
    assert r.status_code == 401
    before = log_length(client, table_id)
    r = client.move(table_id, host, type="dance")
    assert r.status_code == 400 and "type" in r.get_json()["error"]["details"]
    r = client.move(table_id, host, type="start", extra=1)
    assert r.status_code == 400 and "extra" in r.get_json()["error"]["details"]
    r = client.move(table_id, host, type="play", card="11o")
    assert r.status_code == 400 and "card" in r.get_json()["error"]["details"]
    assert log_length(client, table_id) == before


def test_host_only_and_game_started(client):
    table_id, host, guest = two_player_table(client)
    r = client.move(table_id, guest, type="start")
    assert r.status_code == 403 and error(r) == "host_only"
    r = client.move(table_id, guest, type="add_bot", bot="tito")
    assert error(r) == "host_only"
    assert client.ok(table_id, host, type="add_bot", bot="tito")["table"]["seats"][2]["kind"] == "bot"
    client.ok(table_id, host, type="remove_bot", seat=2)
    client.ok(table_id, host, type="start")
    r = client.http.post(f"/tables/{table_id}/seats", json={"name": "Late"})
    assert r.status_code == 409 and error(r) == "game_started"
    r = client.move(table_id, host, type="add_bot", bot="luna")
    assert r.status_code == 409 and error(r) == "game_started"


def test_play_errors_carry_rule_codes_and_change_nothing(client, fake_redis):
    deck = list(FULL_DECK)
    # table 3o 5o 8o 2c (18: no opening escoba); leader (seat 1) gets 7o 4o 6o; dealer gets 1c 9c 10c
    order = ["3o", "5o", "8o", "2c", "7o", "4o", "6o", "1c", "9c", "10c"]
    deck = order + [c for c in deck if c not in order]
    r = client.http.post("/tables", json={"name": "Ana", "preset": "cardgames", "decks": [deck], "first_dealer": 0},
                         headers=client.admin())
    table_id, host = r.get_json()["table_id"], r.get_json()["token"]
    guest = client.sit(table_id)["token"]
    client.ok(table_id, host, type="start")
    before = log_length(client, table_id)
    r = client.move(table_id, host, type="play", card="1c", capture=[])
    assert r.status_code == 409 and error(r) == "not_your_turn"
    r = client.move(table_id, guest, type="play", card="9c", capture=[])
    assert r.status_code == 422 and error(r) == "card_not_in_hand"
    r = client.move(table_id, guest, type="play", card="7o", capture=["5o", "2c"])
    assert r.status_code == 422 and error(r) == "illegal_capture"
    assert "7 + 5 + 2 makes 14, not 15" in r.get_json()["error"]["message"]
    r = client.move(table_id, guest, type="play", card="7o", capture=[])
    assert r.status_code == 422 and error(r) == "must_capture"
    r = client.move(table_id, guest, type="take_fifteen", cards=["7o", "8o"])
    assert r.status_code == 422 and error(r) == "no_fifteen_to_take"
    r = client.move(table_id, guest, type="play", card="7o", capture=["8o"], expected_version=1)
    assert r.status_code == 409 and error(r) == "version_conflict"
    assert log_length(client, table_id) == before
    body = client.ok(table_id, guest, type="play", card="7o", capture=["8o"])
    assert body["version"] == before + 1
    assert sorted(body["table"]["table_cards"]) == sorted(["3o", "5o", "2c"])


def test_idempotency_key_returns_the_first_answer_and_appends_nothing(client):
    table_id, host, _ = two_player_table(client)
    first = client.move(table_id, host, headers={"Idempotency-Key": "k1"}, type="start")
    assert first.status_code == 200
    length = log_length(client, table_id)
    again = client.move(table_id, host, headers={"Idempotency-Key": "k1"}, type="start")
    assert again.status_code == 200
    assert again.get_json()["version"] == first.get_json()["version"]
    assert log_length(client, table_id) == length
    # without the key the same move is refused: the game has started
    assert client.move(table_id, host, type="start").status_code == 409


def test_events_feed_is_redacted_for_its_reader(client):
    table_id, host, guest = two_player_table(client, preset="del15")
    client.ok(table_id, host, type="start")
    mine = client.view(table_id, host)["hand"]
    theirs = client.view(table_id, guest)["hand"]
    feed = client.http.get(f"/tables/{table_id}/events?after=0", headers={"Authorization": f"Bearer {host}"})
    events = feed.get_json()["events"]
    dealt = next(e for e in events if e["type"] == "RoundDealt")
    assert "deck" not in dealt["data"] and sorted(dealt["data"]["hand"]) == sorted(mine)
    text = feed.get_data(as_text=True)
    assert not any(f'"{c}"' in text for c in theirs)
    spectator = client.http.get(f"/tables/{table_id}/events?after=0").get_json()["events"]
    assert "hand" not in next(e for e in spectator if e["type"] == "RoundDealt")["data"]
    later = client.http.get(f"/tables/{table_id}/events?after=3").get_json()["events"]
    assert [e["version"] for e in later] == list(range(4, 4 + len(later)))
    assert client.http.get(f"/tables/{table_id}/events?after=x").status_code == 400


def test_chat_for_seated_players_only(client):
    table_id, host, guest = two_player_table(client)
    r = client.http.post(f"/tables/{table_id}/chat", json={"text": "hola"},
                         headers={"Authorization": f"Bearer {host}"})
    assert r.status_code == 201
    r = client.http.post(f"/tables/{table_id}/chat", json={"text": "yo"})
    assert r.status_code == 401
    r = client.http.post(f"/tables/{table_id}/chat", json={"text": "x" * 501},
                         headers={"Authorization": f"Bearer {guest}"})
    assert r.status_code == 400
    client.http.post(f"/tables/{table_id}/chat", json={"text": "buenas"}, headers={"Authorization": f"Bearer {guest}"})
    lines = client.http.get(f"/tables/{table_id}/chat?after=0").get_json()["lines"]
    assert [(line["id"], line["name"], line["text"]) for line in lines] == [(1, "Ana", "hola"), (2, "Bea", "buenas")]
    assert [line["id"] for line in client.http.get(f"/tables/{table_id}/chat?after=1").get_json()["lines"]] == [2]


def test_admin_log_needs_the_token_and_is_off_without_one(client, fake_redis, config):
    import dataclasses

    from api.app import create_app

    table_id, host, _ = two_player_table(client)
    client.ok(table_id, host, type="start")
    assert client.http.get(f"/admin/tables/{table_id}/log").status_code == 401
    r = client.http.get(f"/admin/tables/{table_id}/log", headers=client.admin())
    assert r.status_code == 200 and '"deck"' in r.get_data(as_text=True)
    off = create_app(fake_redis, dataclasses.replace(config, admin_token=None)).test_client()
    assert off.get(f"/admin/tables/{table_id}/log", headers={"Authorization": f"Bearer {ADMIN}"}).status_code == 404


def test_partner_choice_moves_seats_and_tokens_follow(client):
    host = client.create(preset="selminha")
    table_id = host["table_id"]
    others = [client.sit(table_id, n) for n in ("B", "C", "D")]
    client.ok(table_id, host["token"], type="choose_partner", seat=3)
    # D chose as partner now sits across from the host, at seat 2
    assert client.view(table_id, others[2]["token"])["you"] == 2
    assert client.view(table_id, others[1]["token"])["you"] == 3
    view = client.ok(table_id, host["token"], type="start")["table"]
    assert view["scores"][0]["seats"] == [0, 2]


def test_openapi_and_healthz(client):
    spec = client.http.get("/openapi.json").get_json()
    assert "/tables/{table_id}/moves" in spec["paths"]
    assert "Move_play" in spec["components"]["schemas"]
    assert client.http.get("/healthz").get_json()["ok"] is True
    assert b"escoba_moves_total" in client.http.get("/metrics").data


def test_whole_game_between_two_tokens_through_http(client):
    table_id, host, guest = two_player_table(client, preset="cardgames")
    client.ok(table_id, host, type="start")
    final = play_out(client, table_id, {0: host, 1: guest}, random.Random(7))
    assert final["status"] == "finished"
    (winner,) = final["winners"]
    points = {s["seats"][0]: s["points"] for s in final["scores"]}
    assert points[winner] >= 21 and points[winner] > points[1 - winner]
    # rematch: both accept, the game starts again through the workers' job
    client.ok(table_id, host, type="rematch", accept=True)
    assert client.ok(table_id, guest, type="rematch", accept=True)["table"]["rematch"]["ready"] is True


def test_resign_ends_the_game_and_the_other_wins(client):
    table_id, host, guest = two_player_table(client)
    client.ok(table_id, host, type="start")
    view = client.ok(table_id, guest, type="resign")["table"]
    assert view["status"] == "finished" and view["winners"] == [0] and view["ended_by"] == "resign"
    r = client.move(table_id, host, type="claim_away")
    assert r.status_code == 409


def test_a_watching_host_runs_a_table_of_bots(client):
    body = client.create(preset="cardgames", watch=True)
    table_id, token = body["table_id"], body["token"]
    assert body["seat"] is None and body["table"]["you_are_host"] is True
    client.ok(table_id, token, type="add_bot", bot="carmen")
    view = client.ok(table_id, token, type="add_bot", bot="tito")["table"]
    assert [s["kind"] for s in view["seats"]] == ["bot", "bot", None, None]
    view = client.ok(table_id, token, type="start")["table"]
    assert view["status"] == "playing" and view["you"] is None and view["hand"] == []
    r = client.move(table_id, token, type="play", card=view["table_cards"][0] if view["table_cards"] else "1o")
    assert r.status_code in (409, 422)


def test_each_reader_picks_a_deck_design_for_labels_only(client):
    table_id, host, guest = two_player_table(client, preset="del15")
    client.ok(table_id, host, type="start")
    spanish = client.view(table_id, host)
    french = client.http.get(f"/tables/{table_id}?deck=french", headers={"Authorization": f"Bearer {host}"}).get_json()
    assert spanish["hand"] == french["hand"] and spanish["deck"] == "spanish" and french["deck"] == "french"
    card = spanish["hand"][0]
    assert " de " in spanish["labels"][card] and " de " not in french["labels"][card]
    assert client.http.get(f"/tables/{table_id}?deck=tarot").status_code == 400


def test_a_notify_url_inside_is_refused_naming_the_field(client):
    table_id, host, _guest = two_player_table(client)
    for url in ("http://127.0.0.1:6379/", "http://169.254.169.254/latest", "http://[::ffff:10.0.0.1]/x"):
        r = client.http.post(f"/tables/{table_id}/notify", json={"url": url},
                             headers={"Authorization": f"Bearer {host}"})
        assert r.status_code == 400, r.get_json()
        error = r.get_json()["error"]
        assert error["code"] == "bad_request" and "url" in error["details"]
    assert client.http.application.extensions["escoba"].redis.hgetall(notify_key(table_id)) == {}


def test_a_notify_url_inside_is_accepted_when_private_addresses_are_allowed(fake_redis, config):
    app = create_app(fake_redis, dataclasses.replace(config, notify_allow_private=True))
    c = Client(app.test_client())
    table_id, host, _guest = two_player_table(c)
    r = c.http.post(f"/tables/{table_id}/notify", json={"url": "http://127.0.0.1:8999/hook"},
                    headers={"Authorization": f"Bearer {host}"})
    assert r.status_code == 201 and r.get_json() == {"seat": 0, "url": "http://127.0.0.1:8999/hook"}


def test_the_events_feed_names_seats_never_player_ids(client):
    table_id, host, guest = two_player_table(client, preset="del15")
    client.ok(table_id, host, type="start")
    log = client.http.get(f"/admin/tables/{table_id}/log", headers=client.admin()).get_data(as_text=True)
    ids = set(re.findall(r"p_[0-9a-f]{16}", log))
    assert len(ids) == 2  # the host's and the guest's, in the operators' log
    for token in (None, host, guest):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        feed = client.http.get(f"/tables/{table_id}/events?after=0", headers=headers)
        text = feed.get_data(as_text=True)
        assert not any(i in text for i in ids), text[:300]
        events = feed.get_json()["events"]
        opened = next(e for e in events if e["type"] == "TableOpened")["data"]
        seated = next(e for e in events if e["type"] == "PlayerSeated")["data"]
        assert "host" not in opened and opened["host_seated"] is True
        assert seated == {"seat": 1, "name": "Bea", "account": False}


def test_after_is_a_bounded_whole_number_on_events_and_chat(client):
    table_id = client.create()["table_id"]
    for path in ("events", "chat"):
        for bad in ("-1", "x", "1.5", "+3", " 3", str(10**30), str(2**53), "9" * 1500):
            r = client.http.get(f"/tables/{table_id}/{path}", query_string={"after": bad})
            assert r.status_code == 400, (path, bad, r.get_json())
            assert error(r) == "bad_request" and "after" in r.get_json()["error"]["details"]
        assert client.http.get(f"/tables/{table_id}/{path}?after={2**53 - 1}").status_code == 200
    assert client.http.get(f"/tables/{table_id}/events?after={2**53 - 1}").get_json()["events"] == []
