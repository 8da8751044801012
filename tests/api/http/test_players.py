"""Accounts over HTTP (docs/api.md v1.3 "Players"), on one Redis and on a cluster: sign up, sign in and
out, names unique whatever their case, bad input refused changing nothing, failed sign-ins limited."""

from __future__ import annotations

import dataclasses
import secrets

import pytest

from api.app import create_app
from api.http import limits
from events.config import Config
from events.players import name_key, player_key, sessions_key, token_hash

PASSWORD = "correct horse battery"


def unique_name(prefix="ana") -> str:
    return f"{prefix}_{secrets.token_hex(4)}"


@pytest.fixture
def http(backends):
    app = create_app(backends, dataclasses.replace(Config(), bot_delay=0.0, rate_limits="off"))
    app.testing = True
    return app.test_client()


def sign_up(http, name, password=PASSWORD):
    body = {"name": name} if password is None else {"name": name, "password": password}
    r = http.post("/players", json=body)
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.integration
def test_sign_up_sign_in_and_out(http, tables):
    name = unique_name()
    made = sign_up(http, name)
    assert set(made) == {"player_id", "name", "token"} and made["name"] == name
    me = http.get("/me", headers=bearer(made["token"]))
    assert me.status_code == 200
    assert me.get_json()["player_id"] == made["player_id"] and me.get_json()["name"] == name
    assert me.get_json()["ratings"] == []
    # the store keeps no token and no password as typed
    kept = tables.hgetall(player_key(made["player_id"]))
    assert kept[b"password"].startswith(b"$argon2id$") and PASSWORD.encode() not in kept[b"password"]
    assert tables.hkeys(sessions_key(made["player_id"])) == [token_hash(made["token"]).encode()]

    # sign in, in any case of the name: a second token, and each signs out alone
    r = http.post("/sessions", json={"name": name.upper(), "password": PASSWORD})
    assert r.status_code == 201, r.get_json()
    second = r.get_json()
    assert second["player_id"] == made["player_id"] and second["name"] == name
    assert second["token"] != made["token"]
    assert http.delete("/sessions", headers=bearer(made["token"])).status_code == 204
    gone = http.get("/me", headers=bearer(made["token"]))
    assert gone.status_code == 401 and gone.get_json()["error"]["code"] == "unauthorized"
    assert http.get("/me", headers=bearer(second["token"])).status_code == 200
    assert http.delete("/sessions", headers=bearer(made["token"])).status_code == 401


@pytest.mark.integration
def test_a_wrong_password_and_an_unknown_name_get_the_same_answer(http):
    name = unique_name()
    sign_up(http, name)
    wrong = http.post("/sessions", json={"name": name, "password": "not the password"})
    unknown = http.post("/sessions", json={"name": unique_name("nobody"), "password": PASSWORD})
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.get_json() == unknown.get_json()
    assert wrong.get_json()["error"]["code"] == "unauthorized"


@pytest.mark.integration
def test_a_name_is_taken_whatever_its_case(http, tables):
    name = unique_name("Bea")
    first = sign_up(http, name)
    for other in (name.upper(), name.lower(), name.swapcase()):
        r = http.post("/players", json={"name": other, "password": PASSWORD})
        assert r.status_code == 409 and r.get_json()["error"]["code"] == "name_taken", other
    assert tables.get(name_key(name)) == first["player_id"].encode()
    # the loser's hash was cleaned up: only the first player's keys carry the name
    r = http.post("/sessions", json={"name": name.swapcase(), "password": PASSWORD})
    assert r.get_json()["player_id"] == first["player_id"]


BAD_BODIES = [
    ({"name": "ab", "password": PASSWORD}, "name"),
    ({"name": "a" * 21, "password": PASSWORD}, "name"),
    ({"name": "has space", "password": PASSWORD}, "name"),
    ({"name": "semi;colon", "password": PASSWORD}, "name"),
    ({"name": "<script>", "password": PASSWORD}, "name"),
    ({"name": "PassKeys", "password": PASSWORD}, "name"),  # a word of /players/passkeys: never a name
    ({"name": 12345, "password": PASSWORD}, "name"),
    ({"password": PASSWORD}, "name"),
    ({"name": "NAME", "password": "short"}, "password"),
    ({"name": "NAME", "password": "x" * 201}, "password"),
    ({"name": "NAME", "password": 1234567890}, "password"),
    ({"name": "NAME", "password": PASSWORD, "email": "a@b.c"}, "email"),
]


@pytest.mark.integration
@pytest.mark.parametrize(("body", "field"), BAD_BODIES)
def test_bad_names_and_passwords_are_refused_and_change_nothing(http, tables, body, field):
    name = unique_name("Cid")
    if body.get("name") == "NAME":
        body = {**body, "name": name}
    r = http.post("/players", json=body)
    assert r.status_code == 400, r.get_json()
    error = r.get_json()["error"]
    assert error["code"] == "bad_request" and field in error["details"]
    if isinstance(body.get("name"), str):
        assert tables.get(name_key(body["name"])) is None
    # and the name is still free
    sign_up(http, name)


@pytest.mark.integration
def test_names_of_other_alphabets_and_a_passkey_only_account(http):
    made = sign_up(http, "João-" + secrets.token_hex(2), password=None)
    # no password: a sign-in by password never works for it
    r = http.post("/sessions", json={"name": made["name"], "password": "anything at all"})
    assert r.status_code == 401
    assert http.get("/me", headers=bearer(made["token"])).status_code == 200


def test_bad_sign_in_bodies_are_400(fake_redis):
    app = create_app(fake_redis, dataclasses.replace(Config(), rate_limits="off"))
    http = app.test_client()
    for body in ({"name": "ana"}, {"password": PASSWORD}, {"name": 1, "password": PASSWORD},
                 {"name": "ana", "password": PASSWORD, "x": 1}, ["ana"]):
        r = http.post("/sessions", json=body)
        assert r.status_code == 400 and r.get_json()["error"]["code"] == "bad_request", body
    assert http.get("/me").status_code == 401
    assert http.get("/me", headers=bearer("P.p0000000000000000.nope")).status_code == 401
    assert http.delete("/sessions").status_code == 401


def _count(limit: str) -> int:
    return int(limit.split(";")[0].split()[0])


def test_failed_sign_ins_are_limited_per_name_and_per_address(fake_redis):
    app = create_app(fake_redis, dataclasses.replace(Config(), rate_limits="on"))
    http = app.test_client()
    name = unique_name()
    assert http.post("/players", json={"name": name, "password": PASSWORD}).status_code == 201
    for _ in range(_count(limits.SIGN_IN_NAME)):
        r = http.post("/sessions", json={"name": name, "password": "wrong password"})
        assert r.status_code == 401
    # the name is held now, from another address and with the right password too
    for body in ({"name": name, "password": "wrong password"}, {"name": name.upper(), "password": PASSWORD}):
        r = http.post("/sessions", json=body, environ_base={"REMOTE_ADDR": "203.0.113.7"})
        assert r.status_code == 429, r.get_json()
        error = r.get_json()["error"]
        assert error["code"] == "rate_limited" and set(error) == {"code", "message", "details"}
        assert 1 <= int(r.headers["Retry-After"]) <= 3600
    # per address: many names tried from one address
    address = {"REMOTE_ADDR": "198.51.100.4"}
    for _ in range(_count(limits.SIGN_IN_ADDRESS)):
        r = http.post("/sessions", json={"name": unique_name(), "password": "wrong password"},
                      environ_base=address)
        assert r.status_code == 401
    r = http.post("/sessions", json={"name": unique_name(), "password": "wrong password"}, environ_base=address)
    assert r.status_code == 429
    # another address, another name: still answered
    other = unique_name()
    assert http.post("/players", json={"name": other, "password": PASSWORD},
                     environ_base={"REMOTE_ADDR": "192.0.2.1"}).status_code == 201
    r = http.post("/sessions", json={"name": other, "password": PASSWORD}, environ_base={"REMOTE_ADDR": "192.0.2.1"})
    assert r.status_code == 201


def test_failed_passkey_sign_ins_count_per_address_and_new_accounts_are_limited(fake_redis):
    app = create_app(fake_redis, dataclasses.replace(Config(), rate_limits="on"))
    http = app.test_client()
    address = {"REMOTE_ADDR": "198.51.100.9"}
    for _ in range(_count(limits.SIGN_IN_ADDRESS)):
        r = http.post("/sessions/passkey", json={"id": "x", "response": {}}, environ_base=address)
        assert r.status_code == 401
    r = http.post("/sessions/passkey", json={"id": "x", "response": {}}, environ_base=address)
    assert r.status_code == 429 and r.get_json()["error"]["code"] == "rate_limited"
    # a password sign-in from that address is held too: the count is the address's
    r = http.post("/sessions", json={"name": "anyone", "password": PASSWORD}, environ_base=address)
    assert r.status_code == 429

    for _ in range(_count(limits.CREATE_PLAYER)):
        assert http.post("/players", json={"name": unique_name(), "password": PASSWORD}).status_code == 201
    r = http.post("/players", json={"name": unique_name(), "password": PASSWORD})
    assert r.status_code == 429 and int(r.headers["Retry-After"]) >= 1
