"""Who is asking: seat tokens (stored only as hashes) and the operators' admin token."""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
import threading
from collections import OrderedDict

from flask import request

from engine import RuleError
from events.store import tokens_key


@functools.lru_cache(maxsize=4096)  # each move names its token again (a hash object costs microseconds)
def token_hash(token: str) -> str:
    """A seat token's SHA-256, as Redis keeps it (and the rate limits count it)."""
    return hashlib.sha256(token.encode()).hexdigest()



def _tokens_key(table_id: str) -> str:
    return tokens_key(table_id)


def new_player_id() -> str:
    return "p_" + secrets.token_hex(8)


def new_token(player: str) -> tuple[str, tuple[str, str]]:
    """A fresh seat token and the grant the service writes in the append's own step:
    ``(token_hash, player)``. Redis keeps only the hash, so a leaked dump seats nobody."""
    token = secrets.token_urlsafe(24)
    return token, (token_hash(token), player)


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
    """The player a token belongs to; RuleError(unauthorized) for a token we never issued."""
    if token is None:
        return None
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


def require_player(redis, table_id: str) -> str:
    return require(redis, table_id, bearer())


def require(redis, table_id: str, token: str | None) -> str:
    """The player of ``token``; RuleError(unauthorized) without one."""
    if token is None:
        raise RuleError("unauthorized", "This needs your seat token: Authorization: Bearer <token>.")
    return player_for(redis, table_id, token)


def is_admin(admin_token: str | None) -> bool:
    token = bearer()
    return bool(admin_token and token and hmac.compare_digest(token, admin_token))
