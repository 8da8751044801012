"""Passwords hashed with argon2id (argon2-cffi's PasswordHasher, its RFC 9106 defaults).

A hash takes tens of milliseconds of one core and 64 MiB: under gunicorn's gevent worker it runs in
gevent's thread pool (argon2 releases the GIL), so the worker's other greenlets (sockets, moves) go on
meanwhile. A sign-in with an unknown name verifies against a hash made once here, so it spends the same
time as a wrong password and the two cannot be told apart by the clock either.
"""

from __future__ import annotations

import functools

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

_hasher = PasswordHasher()  # argon2id, RFC 9106's low-memory profile: t=3, 64 MiB, p=4


def _off_loop(fn, *args):
    """``fn(*args)`` in gevent's thread pool when this process is gevent's, else here."""
    try:
        from gevent import get_hub
        from gevent.monkey import is_module_patched
    except ImportError:  # pragma: no cover - gevent is a dependency
        return fn(*args)
    if not is_module_patched("threading"):
        return fn(*args)
    return get_hub().threadpool.apply(fn, args)


def hash_password(password: str) -> str:
    return _off_loop(_hasher.hash, password)


@functools.cache
def _decoy() -> str:
    return _hasher.hash("a password nobody has: an unknown name spends a verify too")


def _verify(stored: str, password: str) -> bool:
    try:
        return _hasher.verify(stored, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def verify_password(stored: str | None, password: str) -> bool:
    """Whether ``password`` is the one ``stored`` was made from; ``stored`` None (no such name) or
    "" (a passkey-only account) is verified against a decoy, in the same time, and is False."""
    if not stored:
        _off_loop(_verify, _decoy(), password)
        return False
    return _off_loop(_verify, stored, password)


def needs_rehash(stored: str) -> bool:
    return _hasher.check_needs_rehash(stored)
