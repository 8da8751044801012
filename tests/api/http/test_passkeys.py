"""Passkeys over HTTP (docs/api.md v1.3), on one Redis and on a cluster: a software authenticator
(tests/api/http/authenticator.py) registers a key and signs in with it; the server verifies the
attestation and the assertion's signature, and each challenge serves once."""

from __future__ import annotations

import dataclasses

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from api.app import create_app
from events.config import Config
from events.players import passkeys_key

from .authenticator import Authenticator
from .test_players import bearer, sign_up, unique_name

ORIGIN = "http://localhost"  # the test client's host


@pytest.fixture
def http(backends):
    app = create_app(backends, dataclasses.replace(Config(), bot_delay=0.0, rate_limits="off"))
    app.testing = True
    return app.test_client()


def register(http, token, device):
    r = http.post("/players/passkeys/options", headers=bearer(token))
    assert r.status_code == 200, r.get_json()
    options = r.get_json()
    assert options["rp"]["id"] == "localhost" and options["challenge"]
    r = http.post("/players/passkeys", json=device.create(options), headers=bearer(token))
    assert r.status_code == 201, r.get_json()
    return options


def sign_in_options(http, body=None):
    r = http.post("/sessions/passkey/options", json=body or {})
    assert r.status_code == 200, r.get_json()
    return r.get_json()


@pytest.mark.integration
def test_a_passkey_registered_signs_in(http, tables):
    made = sign_up(http, unique_name("key"), password=None)
    device = Authenticator(ORIGIN)
    register(http, made["token"], device)
    assert len(tables.hkeys(passkeys_key(made["player_id"]))) == 1

    options = sign_in_options(http)
    r = http.post("/sessions/passkey", json=device.get(options, "localhost"))
    assert r.status_code == 201, r.get_json()
    signed = r.get_json()
    assert signed["player_id"] == made["player_id"] and signed["name"] == made["name"]
    assert http.get("/me", headers=bearer(signed["token"])).status_code == 200

    # a name lists its passkeys
    named = sign_in_options(http, {"name": made["name"].upper()})
    assert [c["id"] for c in named["allowCredentials"]] == [device.get(named, "localhost")["id"]]


@pytest.mark.integration
def test_a_challenge_serves_once_and_a_wrong_signature_is_refused(http):
    made = sign_up(http, unique_name("key"), password=None)
    device = Authenticator(ORIGIN)
    register(http, made["token"], device)
    options = sign_in_options(http)
    assertion = device.get(options, "localhost")
    assert http.post("/sessions/passkey", json=assertion).status_code == 201
    again = http.post("/sessions/passkey", json=assertion)
    assert again.status_code == 401 and again.get_json()["error"]["code"] == "unauthorized"

    # signed by another key, for a fresh challenge: refused
    forged = device.get(sign_in_options(http), "localhost", key=ec.generate_private_key(ec.SECP256R1()))
    assert http.post("/sessions/passkey", json=forged).status_code == 401
    # another origin or relying party: refused
    assert http.post("/sessions/passkey", json=device.get(sign_in_options(http), "localhost",
                                                          origin="http://evil.example")).status_code == 401
    assert http.post("/sessions/passkey", json=device.get(sign_in_options(http), "evil.example")).status_code == 401
    # an unknown credential
    stranger = Authenticator(ORIGIN)
    stranger.user_handle = made["player_id"].encode()
    assert http.post("/sessions/passkey", json=stranger.get(sign_in_options(http), "localhost")).status_code == 401


@pytest.mark.integration
def test_registration_needs_a_player_token_and_its_own_challenge(http, tables):
    made = sign_up(http, unique_name("key"))
    other = sign_up(http, unique_name("oth"))
    assert http.post("/players/passkeys/options").status_code == 401
    device = Authenticator(ORIGIN)
    r = http.post("/players/passkeys/options", headers=bearer(made["token"]))
    credential = device.create(r.get_json())
    # another account cannot use this challenge
    r = http.post("/players/passkeys", json=credential, headers=bearer(other["token"]))
    assert r.status_code == 400 and r.get_json()["error"]["code"] == "bad_request"
    # the challenge was taken by that attempt: it is gone for good
    r = http.post("/players/passkeys", json=credential, headers=bearer(made["token"]))
    assert r.status_code == 400
    # a credential from the wrong origin
    options = http.post("/players/passkeys/options", headers=bearer(made["token"])).get_json()
    r = http.post("/players/passkeys", json=device.create(options, origin="http://evil.example"),
                  headers=bearer(made["token"]))
    assert r.status_code == 400
    # not a credential at all
    r = http.post("/players/passkeys", json={"id": "x"}, headers=bearer(made["token"]))
    assert r.status_code == 400
    assert tables.hlen(passkeys_key(made["player_id"])) == 0
    register(http, made["token"], device)
    assert tables.hlen(passkeys_key(made["player_id"])) == 1


def test_the_relying_party_follows_the_settings(fake_redis):
    config = dataclasses.replace(Config(), rate_limits="off", webauthn_rp_id="escoba.example",
                                 webauthn_origin="https://escoba.example")
    http = create_app(fake_redis, config).test_client()
    made = sign_up(http, unique_name("key"), password=None)
    options = http.post("/players/passkeys/options", headers=bearer(made["token"])).get_json()
    assert options["rp"]["id"] == "escoba.example"
    device = Authenticator("https://escoba.example")
    assert http.post("/players/passkeys", json=device.create(options), headers=bearer(made["token"])).status_code == 201
    r = http.post("/sessions/passkey", json=device.get(sign_in_options(http), "escoba.example"))
    assert r.status_code == 201
