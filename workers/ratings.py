"""The ratings job: a rated game ended, its players' ratings are updated once (events/ratings.py).

Scheduled by the timers hook (``workers.scheduling.due_timers``, kind ``ratings``) when a rated
table's game finishes, as ``<table>_ratings_<game>``. Idempotent: each player's update is one Lua
step that applies only if that game is not yet among the player's games, so a retried, doubled or
re-armed job changes nothing (docs/ratings.md).
"""

from __future__ import annotations

from events import ratings

from . import context


def run(table_id: str, game: int) -> str:
    redis = context.tables()
    done = ratings.rate_table(redis, context.service(redis), table_id, game)
    return "already" if done["already"] else f"rated:{done['games']}"
