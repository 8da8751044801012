"""Jobs for tests/workers/test_liveness.py: a store away, a bug, a success (RQ imports them by name)."""

from __future__ import annotations

import redis


def store_away(key: str) -> None:
    raise redis.ConnectionError(f"{key}: the store is away")


def bug(key: str) -> None:
    raise ValueError(f"{key}: a bug")


def fine(key: str) -> str:
    return key
