"""The names of the table keys workers/ keeps (each hash-tagged by its table id, like every table key)."""

from __future__ import annotations

from events.store import table_key


def timers_key(table_id: str) -> str:
    """``table:{ID}:timers``: the table's timers (workers.scheduling)."""
    return table_key(table_id, "timers")


def notify_key(table_id: str) -> str:
    """``table:{ID}:notify``: seat -> notice URL, and a ``push:<player>`` marker per subscriber."""
    return table_key(table_id, "notify")


def push_key(table_id: str) -> str:
    """``table:{ID}:push``: the players' Web Push subscriptions (workers.push)."""
    return table_key(table_id, "push")


def push_marker(player: str) -> str:
    """The field in ``table:{ID}:notify`` saying ``player`` has a push subscription."""
    return f"push:{player}"


__all__ = ["notify_key", "push_key", "push_marker", "timers_key"]
