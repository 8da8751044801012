"""Passkeys (docs/api.md v1.3): the WebAuthn ceremonies, verified by the ``webauthn`` package.

Registration (a signed-in player): ``POST /players/passkeys/options`` gives the browser's
``navigator.credentials.create`` options; ``POST /players/passkeys`` takes its credential (its
``toJSON()``), verifies the attestation and keeps the public key. Sign-in (anyone):
``POST /sessions/passkey/options``, then ``POST /sessions/passkey`` with the assertion, whose
signature is verified against that key: 201 with a player token.

Each challenge is kept in Redis (events/players.py ``webauthn:{challenge}``) with what it is for, for a
few minutes, and is taken once (GETDEL): the challenge the browser signed (in ``clientDataJSON``)
finds its record, and a replayed response finds nothing. The relying party's id and the origin come
from ``ESCOBA_WEBAUTHN_RP_ID`` / ``ESCOBA_WEBAUTHN_ORIGIN``, else ``ESCOBA_PUBLIC_URL``, else the
request's own scheme and host (docs/operations.md).
"""

from __future__ import annotations

import json
from urllib.parse import urlsplit

from flask import Blueprint, current_app, jsonify, request
from webauthn import (
    generate_authentication_options,
    generate_registration_options,
    options_to_json,
    verify_authentication_response,
    verify_registration_response,
)
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url, parse_client_data_json
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from api.http import limits
from api.http.players import _body, now, require_account, signed_in, store
from engine import RuleError

bp = Blueprint("passkeys", __name__)

RP_NAME = "Escoba"
TIMEOUT_MS = 300_000  # as the challenge's TTL (events/players.CHALLENGE_TTL)
REGISTER, SIGN_IN = "register", "sign_in"
_FAILED = "That passkey did not sign in."


def relying_party() -> tuple[str, str]:
    """``(rp_id, origin)`` for this request (see the module's docstring)."""
    config = current_app.extensions["escoba"].config
    origin = config.webauthn_origin or _origin(config.public_url) or request.host_url.rstrip("/")
    rp_id = config.webauthn_rp_id or (urlsplit(origin).hostname or "")
    return rp_id, origin


def _origin(url: str) -> str:
    if not url:
        return ""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""


def _options(options) -> dict:
    return json.loads(options_to_json(options))


def _challenge_of(credential: dict, failed: RuleError | None = None) -> str:
    """The challenge the browser signed, read from the credential's ``clientDataJSON`` (base64url);
    ``failed`` (else a 400) when there is none."""
    try:
        data = parse_client_data_json(base64url_to_bytes(credential["response"]["clientDataJSON"]))
    except (KeyError, TypeError, ValueError, WebAuthnException):
        raise failed or RuleError("bad_request", "That is not a WebAuthn credential.",
                                  {"response": "clientDataJSON missing or malformed"}) from None
    return bytes_to_base64url(data.challenge)


def _take(credential: dict, kind: str, failed: RuleError | None = None) -> dict | None:
    record = store().take_challenge(_challenge_of(credential, failed))
    if record is None:
        return None
    record = json.loads(record)
    return record if record.get("kind") == kind else None


@bp.post("/players/passkeys/options")
def registration_options():
    player = require_account()
    rp_id, origin = relying_party()
    options = generate_registration_options(
        rp_id=rp_id, rp_name=RP_NAME, user_name=player.name, user_display_name=player.name,
        user_id=player.player_id.encode(), timeout=TIMEOUT_MS,
        # a discoverable credential: signing in then needs no name typed
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED, user_verification=UserVerificationRequirement.PREFERRED),
        exclude_credentials=[PublicKeyCredentialDescriptor(id=base64url_to_bytes(c))
                             for c in store().passkey_ids(player.player_id)],
    )
    store().put_challenge(bytes_to_base64url(options.challenge), json.dumps(
        {"kind": REGISTER, "player": player.player_id, "rp_id": rp_id, "origin": origin}))
    return jsonify(_options(options))


@bp.post("/players/passkeys")
def register():
    player = require_account()
    credential = _body()
    record = _take(credential, REGISTER)
    if record is None or record["player"] != player.player_id:
        raise RuleError("bad_request", "That registration's challenge is unknown, used or expired: ask again.",
                        {"challenge": "unknown"})
    try:
        verified = verify_registration_response(
            credential=credential, expected_challenge=base64url_to_bytes(_challenge_of(credential)),
            expected_rp_id=record["rp_id"], expected_origin=record["origin"])
    except (WebAuthnException, KeyError, TypeError, ValueError) as exc:
        raise RuleError("bad_request", f"The passkey could not be verified: {exc}", {"credential": "invalid"}) from None
    credential_id = bytes_to_base64url(verified.credential_id)
    data = json.dumps({"public_key": bytes_to_base64url(verified.credential_public_key),
                       "sign_count": verified.sign_count, "added": now()})
    if not store().add_passkey(player.player_id, credential_id, data):
        raise RuleError("bad_request", "That passkey is registered already.", {"credential": "registered"})
    return jsonify({"credential_id": credential_id}), 201


@bp.post("/sessions/passkey/options")
def authentication_options():
    body = request.get_json(silent=True)
    name = body.get("name") if isinstance(body, dict) else None
    allow = []
    if isinstance(name, str) and 0 < len(name) <= 200:  # optional: a name lists its passkeys
        player = store().by_name(name)
        if player is not None:
            allow = [PublicKeyCredentialDescriptor(id=base64url_to_bytes(c))
                     for c in store().passkey_ids(player.player_id)]
    rp_id, origin = relying_party()
    options = generate_authentication_options(rp_id=rp_id, timeout=TIMEOUT_MS, allow_credentials=allow,
                                              user_verification=UserVerificationRequirement.PREFERRED)
    store().put_challenge(bytes_to_base64url(options.challenge), json.dumps(
        {"kind": SIGN_IN, "rp_id": rp_id, "origin": origin}))
    return jsonify(_options(options))


@bp.post("/sessions/passkey")
def sign_in():
    credential = _body()
    limit: limits.SignInLimit | None = current_app.extensions["escoba"].sign_in_limit
    address = limits.client_address()
    if limit is not None:
        limit.check(None, address)
    try:  # a malformed assertion is a failed sign-in like a forged one: 401, and counted
        record = _take(credential, SIGN_IN, RuleError("unauthorized", _FAILED))
    except RuleError:
        record = None
    player = _verified(credential, record) if record is not None else None
    if player is None:
        if limit is not None:
            limit.failed(None, address)
        raise RuleError("unauthorized", _FAILED)
    return signed_in(player, store().issue(player.player_id, now()))


def _verified(credential: dict, record: dict):
    """The account whose passkey signed ``credential``, or None."""
    credential_id = credential.get("id")
    if not isinstance(credential_id, str) or not 0 < len(credential_id) <= 1400:
        return None
    owner = store().passkey_owner(credential_id)
    kept = store().passkey(owner, credential_id) if owner else None
    if kept is None or not owner:
        return None
    response = credential.get("response")
    handle = response.get("userHandle") if isinstance(response, dict) else None
    kept = json.loads(kept)
    try:
        if handle and base64url_to_bytes(handle) != owner.encode():  # the key's, not another account's
            return None
        verified = verify_authentication_response(
            credential=credential, expected_challenge=base64url_to_bytes(_challenge_of(credential)),
            expected_rp_id=record["rp_id"], expected_origin=record["origin"],
            credential_public_key=base64url_to_bytes(kept["public_key"]),
            credential_current_sign_count=kept["sign_count"])
    except (WebAuthnException, KeyError, TypeError, ValueError):
        return None
    store().update_passkey(owner, credential_id, json.dumps({**kept, "sign_count": verified.new_sign_count}))
    return store().get(owner)
