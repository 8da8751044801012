"""Accounts: every key of one player's, hash-tagged by the player id (one cluster slot a player).

Keys (docs/scale.md sizes them):

- ``player:{P}``            hash: ``name``, ``joined`` (ISO-8601), ``password`` (argon2id text; "" without one)
- ``player:{P}:sessions``   hash: a player token's SHA-256 -> when it was issued (the token itself is never kept)
- ``player:{P}:passkeys``   hash: a WebAuthn credential id (base64url) -> JSON (public key, sign count)
- ``player:{P}:tables``     sorted set: the player's tables (events/my_tables.py keeps it)
- ``name:{N}``              string: the player id holding name N (N: the name case-folded), ``SET NX``
- ``passkey:{C}``           string: the player id a credential C belongs to (a passkey sign-in names only C)
- ``webauthn:{X}``          string: a ceremony's challenge X, what it was for; a short TTL, taken once (GETDEL)

A name is unique across a cluster though each name key sits in its own slot: whoever sets the name
key first (``SET NX``, atomic on the one node that owns that slot) holds the name. The player's own
hash is written first, then the name key: a name key always names a player that exists; when the
name is taken (or the write fails) the player's hash is deleted again. A process that dies between
the two leaves a hash no name leads to, which nobody can sign in to (docs/scale.md).

A player token is ``P.<player id>.<secret>``: the id says which slot holds its session, so checking
a token is one command on one node; ``.`` never occurs in a seat token (URL-safe base64), so the two
are told apart by their first two characters.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata
from dataclasses import dataclass
from typing import TypeGuard

from .connection import Client
from .text import as_text

NAME_MIN, NAME_MAX = 3, 20
PASSWORD_MIN, PASSWORD_MAX = 10, 200
CHALLENGE_TTL = 300  # seconds a WebAuthn ceremony may take
_PLAYER_ID = re.compile(r"p[0-9a-f]{16}")
TOKEN_PREFIX = "P."


class NameTaken(Exception):
    """Another account holds that name (in any case)."""


@dataclass(frozen=True)
class Player:
    player_id: str
    name: str
    joined: str
    password: str  # the argon2id hash; "" for an account that signs in by passkey only


def new_player_id() -> str:
    """An account's id: "p" and 16 hex digits (a guest's seat is "p_..."; the log's ``account`` flag
    is what says a seat is an account's, engine/events.py)."""
    return "p" + secrets.token_hex(8)


def player_key(player_id: str, name: str = "") -> str:
    return f"player:{{{player_id}}}" + (f":{name}" if name else "")


def sessions_key(player_id: str) -> str:
    return player_key(player_id, "sessions")


def passkeys_key(player_id: str) -> str:
    return player_key(player_id, "passkeys")


def tables_key(player_id: str) -> str:
    return player_key(player_id, "tables")


def folded(name: str) -> str:
    """The form two names are compared in: "Ana", "ANA" and "ana" are one name."""
    return unicodedata.normalize("NFKC", name).casefold()


def name_key(name: str) -> str:
    return f"name:{{{folded(name)}}}"


def credential_key(credential_id: str) -> str:
    return f"passkey:{{{credential_id}}}"


def challenge_key(challenge: str) -> str:
    return f"webauthn:{{{challenge}}}"


# letters and digits of any script (Python's Unicode ``\w``: what str.isalnum() takes), ``_`` and ``-``;
# /openapi.json documents this very pattern
NAME_PATTERN = r"^[\w-]{3,20}$"
_NAME = re.compile(r"[\w-]{3,20}")


# words of the routes beside ``/players/{name}`` (``/players/passkeys``): never a player's name, so an
# address is one route's (api/http/tables.py ``PlayerName``)
RESERVED_NAMES = frozenset({"passkeys"})


def name_problem(name: object) -> str | None:
    """Why ``name`` is not an account's name (docs/api.md v1.3), or None."""
    if not isinstance(name, str):
        return "must be a string"
    if not NAME_MIN <= len(name) <= NAME_MAX:
        return f"must be {NAME_MIN} to {NAME_MAX} characters"
    if _NAME.fullmatch(name) is None:
        return "letters, digits, _ and - only"
    if unicodedata.normalize("NFKC", name).casefold() in RESERVED_NAMES:
        return "is a word the server's addresses use"
    return None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def is_player_token(token: str | None) -> TypeGuard[str]:
    return token is not None and token.startswith(TOKEN_PREFIX)


def session_of(redis: Client, token: str | None) -> str | None:
    """The player a player token stands for while its session lasts (one HEXISTS), else None."""
    if not is_player_token(token):
        return None
    player_id = player_of_token(token)
    if player_id is None or not redis.hexists(sessions_key(player_id), token_hash(token)):
        return None
    return player_id


def player_of_token(token: str) -> str | None:
    """The player id a player token names (not whether it is valid: ``PlayerStore.session``)."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != "P" or not _PLAYER_ID.fullmatch(parts[1]) or not parts[2]:
        return None
    return parts[1]


_DELETE_IF = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class PlayerStore:
    """The accounts' keys (above) on the tables' Redis or cluster; every command touches one slot."""

    def __init__(self, redis: Client):
        self.redis = redis
        self._delete_if = redis.register_script(_DELETE_IF)

    # --- accounts -----------------------------------------------------------
    def create(self, name: str, password_hash: str, joined: str) -> tuple[Player, str]:
        """A new account and its first token; NameTaken when the name is held, whatever its case."""
        player_id = new_player_id()
        key = player_key(player_id)
        self.redis.hset(key, mapping={"name": name, "joined": joined, "password": password_hash})
        try:
            taken = not self.redis.set(name_key(name), player_id, nx=True)
        except Exception:
            self.redis.delete(key)
            raise
        if taken:
            self.redis.delete(key)
            raise NameTaken(name)
        return Player(player_id, name, joined, password_hash), self.issue(player_id, joined)

    def get(self, player_id: str) -> Player | None:
        fields = self.redis.hgetall(player_key(player_id))
        if not fields:
            return None
        f = {as_text(k): as_text(v) for k, v in fields.items()}
        return Player(player_id, f.get("name", ""), f.get("joined", ""), f.get("password", ""))

    def by_name(self, name: str) -> Player | None:
        player_id = self.redis.get(name_key(name))
        return None if player_id is None else self.get(as_text(player_id))

    def set_password(self, player_id: str, password_hash: str) -> None:
        self.redis.hset(player_key(player_id), "password", password_hash)

    def delete_name(self, name: str, player_id: str) -> None:
        """Give a name up (its key only when it still names ``player_id``)."""
        self._delete_if(keys=[name_key(name)], args=[player_id])

    # --- player tokens --------------------------------------------------------
    def issue(self, player_id: str, now: str) -> str:
        token = f"{TOKEN_PREFIX}{player_id}.{secrets.token_urlsafe(24)}"
        self.redis.hset(sessions_key(player_id), token_hash(token), now)
        return token

    def session(self, token: str | None) -> str | None:
        return session_of(self.redis, token)

    def end(self, token: str) -> bool:
        """End that token's session (only that one)."""
        player_id = player_of_token(token)
        return bool(player_id and self.redis.hdel(sessions_key(player_id), token_hash(token)))

    # --- passkeys -------------------------------------------------------------
    def add_passkey(self, player_id: str, credential_id: str, data: str) -> bool:
        """Keep a credential; False when that credential id is registered already (to anyone)."""
        if not self.redis.set(credential_key(credential_id), player_id, nx=True):
            return False
        try:
            self.redis.hset(passkeys_key(player_id), credential_id, data)
        except Exception:
            self._delete_if(keys=[credential_key(credential_id)], args=[player_id])
            raise
        return True

    def passkey_owner(self, credential_id: str) -> str | None:
        owner = self.redis.get(credential_key(credential_id))
        return None if owner is None else as_text(owner)

    def passkey(self, player_id: str, credential_id: str) -> str | None:
        data = self.redis.hget(passkeys_key(player_id), credential_id)
        return None if data is None else as_text(data)

    def passkey_ids(self, player_id: str) -> list[str]:
        return sorted(as_text(k) for k in self.redis.hkeys(passkeys_key(player_id)))

    def update_passkey(self, player_id: str, credential_id: str, data: str) -> None:
        self.redis.hset(passkeys_key(player_id), credential_id, data)

    # --- WebAuthn challenges -----------------------------------------------------
    def put_challenge(self, challenge: str, data: str, ttl: int = CHALLENGE_TTL) -> None:
        self.redis.set(challenge_key(challenge), data, ex=ttl)

    def take_challenge(self, challenge: str) -> str | None:
        """The challenge's record, once: a second ceremony with it finds nothing."""
        data = self.redis.getdel(challenge_key(challenge))
        return None if data is None else as_text(data)


__all__ = ["NameTaken", "Player", "PlayerStore", "folded", "is_player_token", "name_problem",
           "player_of_token", "tables_key"]
