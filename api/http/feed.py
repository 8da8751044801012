"""The event feed (GET /tables/{id}/events, socket catch-up): pages of redacted events.

Catching up after version N starts from the newest checkpoint at or before N
(events/snapshots.py) and reads only the page after N, so its cost follows the
events that are new, not N's age. A page holds at most ``limit`` events
(``DEFAULT_LIMIT`` when the caller gives none, never more than ``MAX_LIMIT``);
``next`` is the version to pass as ``after`` for the next page and ``more``
says whether events remain after it.
"""

from __future__ import annotations

import engine
from engine.state import evolve
from events import decoding

DEFAULT_LIMIT = 200
MAX_LIMIT = 1000


def events_page(service, table_id: str, player: str | None, after: int,
                limit: int | None = DEFAULT_LIMIT) -> dict:
    """``{"events", "next", "more"}``: the events after ``after``, each as its reader may see it
    at that moment (seats can move). ``limit=None``: every event to the current version."""
    current = service.load(table_id)  # not_found for no such table
    after = min(after, current.version)
    until = current.version if limit is None else min(current.version, after + limit)
    out = []
    if until > after:
        state = (service.load(table_id, until=after) if after else engine.State()).copy()
        for version, raw in service.entries(table_id, after=after, until=until):
            env, event = decoding.decode(raw, version)
            _, _, at, actor = decoding.meta(env)
            seat = state.seat_of(player) if player else None
            out.append({"version": version, "at": at, "actor": public_actor(actor, state),
                        **engine.redact(event, seat)})
            evolve(state, event)
    return {"events": out, "next": until, "more": until < current.version}


def public_actor(actor: str, state) -> str:
    # player ids are bearer-token handles for the API: show seats instead
    if actor.startswith("player:"):
        seat = state.seat_of(actor[7:])
        return f"seat:{seat}" if seat is not None else "player"
    return actor
