"""Redis replies as text: redis-py hands back bytes unless a client decodes its replies, and the
project's clients are made both ways (the API's, the workers', the tests' fakes)."""

from __future__ import annotations

from typing import overload


@overload
def as_text(value: bytes | str) -> str: ...
@overload
def as_text(value: None) -> None: ...
def as_text(value: bytes | str | None) -> str | None:
    """``value`` decoded as UTF-8 when it is bytes, else as it is (a ``str``, or None for a missing key)."""
    return value.decode() if isinstance(value, bytes) else value


__all__ = ["as_text"]
