"""Timestamps whose whole-second part is formatted once a second.

Every appended batch is stamped (``events.service.iso_utc``), every request writes a log
line (``api.server.observability.log_time``) and every answer carries a Date (``api.server.wire.http_date``):
each formats the same second many times over, and formatting is what costs.
"""

from __future__ import annotations

from collections.abc import Callable


class PerSecond:
    """``format_second(whole_second)``, computed once for each second in turn."""

    __slots__ = ("_format", "_last")

    def __init__(self, format_second: Callable[[int], str]):
        self._format = format_second
        self._last: tuple[int, str] = (-1, "")

    def __call__(self, whole: int) -> str:
        last = self._last  # one tuple, read and replaced whole: safe across threads
        if last[0] != whole:
            last = self._last = (whole, self._format(whole))
        return last[1]
