"""Who is asking: seat tokens and player tokens (both stored only as hashes), the operators' admin token.

Every token a table is asked with is resolved here, ``player_for``: a seat token names the player
(the id its seat holds) through the table's tokens hash; a player token (events/players.py: an
account's, docs/api.md v1.3) names its account while its session lasts, and acts for the seat that
account holds at this table, found in the same hash under ``acct:<player id>`` (granted in the step
that seated the account or claimed the seat). Either way the answer is the seat's player id, and
what follows (the rules, the view, the socket) cannot tell the two kinds of token apart.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
import threading
from collections import OrderedDict

from flask import request

from engine import RuleError
from events import players
from events.store import tokens_key


@functools.lru_cache(maxsize=4096)  # each move names its token again (a hash object costs microseconds)
def token_hash(token: str) -> str:
    """A seat token's SHA-256, as Redis keeps it (and the rate limits count it)."""
    return hashlib.sha256(token.encode()).hexdigest()



def _tokens_key(table_id: str) -> str:
    return tokens_key(table_id)


def new_player_id() -> str:
    return "p_" + secrets.token_hex(8)


def new_token(player: str, table_id: str | None = None) -> tuple[str, tuple[str, str]]:
    """A fresh seat token and the grant the service writes in the append's own step:
    ``(token_hash, player)``. Redis keeps only the hash, so a leaked dump seats nobody.

    The token is ``<table id>.<secret>``: it names its table, so a browser's kept tokens alone find
    their games (``POST /tables/summaries``, ``POST /me/claim``) with no index of tokens (a token
    made before this, the secret alone, still works at its table and is left out of those)."""
    secret = secrets.token_urlsafe(24)
    token = secret if table_id is None else f"{table_id}.{secret}"
    return token, (token_hash(token), player)


def table_of(token: str) -> str | None:
    """The table a seat token names (``new_token``), or None."""
    table_id, sep, secret = token.partition(".")
    if not sep or not table_id or not secret or players.is_player_token(token) or len(table_id) > 64:
        return None
    return table_id


def account_grant(account: str, seat_player: str) -> tuple[str, str]:
    """The tokens hash's entry that lets ``account``'s player tokens act for the seat of ``seat_player``
    (written in the append's step, as a seat token's grant)."""
    return ACCOUNT_PREFIX + account, seat_player


ACCOUNT_PREFIX = "acct:"  # never a SHA-256's hex digest: the hash's two kinds of entry cannot meet


def bearer() -> str | None:
    """The token of ``Authorization: Bearer <token>``, never one in the address: addresses end
    up in logs and in the browser's history. (Sockets, which cannot send headers from a
    browser, read their seat token from ``?token=`` in api/sockets/route.py: a seat token only.)"""
    return bearer_of(request.headers.get("Authorization", ""))


def bearer_of(header: str) -> str | None:
    """The token of an ``Authorization`` header's value, if it is ``Bearer <token>``."""
    if header.startswith("Bearer "):
        return header[7:].strip() or None
    return None


# A token, once issued, names the same player for ever: remember the answers (not the refusals).
_known: OrderedDict[tuple[str, str], str] = OrderedDict()
_KNOWN_MAX = 50_000
_known_lock = threading.Lock()


def player_for(redis, table_id: str, token: str | None) -> str | None:
    """The player a token belongs to; RuleError(unauthorized) for a token we never issued (or a player
    token whose session ended). A player token whose account holds no seat here reads as a spectator:
    None (``require`` refuses it with 403)."""
    if token is None:
        return None
    if players.is_player_token(token):
        account = players.session_of(redis, token)
        if account is None:
            raise RuleError("unauthorized", "That player token is not valid (signed out?): sign in again.")
        return _seat_of_account(redis, table_id, account)
    digest = token_hash(token)
    player = _known.get((table_id, digest))
    if player is not None:
        return player
    player = redis.hget(_tokens_key(table_id), digest)
    if player is None:
        raise RuleError("unauthorized", "That seat token is not valid for this table.")
    player = player.decode() if isinstance(player, bytes) else player
    with _known_lock:
        _known[(table_id, digest)] = player
        while len(_known) > _KNOWN_MAX:
            _known.popitem(last=False)
    return player


def _seat_of_account(redis, table_id: str, account: str) -> str | None:
    """The player id of the seat ``account`` holds at the table, or None (an account's seat never
    changes hands: the answer is kept, as a seat token's)."""
    key = ACCOUNT_PREFIX + account
    player = _known.get((table_id, key))
    if player is not None:
        return player
    player = redis.hget(_tokens_key(table_id), key)
    if player is None:
        return None
    player = player.decode() if isinstance(player, bytes) else player
    with _known_lock:
        _known[(table_id, key)] = player
        while len(_known) > _KNOWN_MAX:
            _known.popitem(last=False)
    return player


def require_player(redis, table_id: str) -> str:
    return require(redis, table_id, bearer())


def require(redis, table_id: str, token: str | None) -> str:
    """The player of ``token``; RuleError(unauthorized) without one."""
    if token is None:
        raise RuleError("unauthorized", "This needs your seat token: Authorization: Bearer <token>.")
    player = player_for(redis, table_id, token)
    if player is None:  # a player token, valid, of an account seated elsewhere
        raise RuleError("forbidden", "Your account holds no seat at this table.")
    return player


def is_admin(admin_token: str | None) -> bool:
    token = bearer()
    return bool(admin_token and token and hmac.compare_digest(token, admin_token))
