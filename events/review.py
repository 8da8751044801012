"""Game review: a table's log stepped through version by version, every hand shown.

Once a game is over nothing in it is secret any more, so anyone at the table may
see every state it went through (``reviewable_until``). An operator may see any
table at any version (the dispute tool, beside ``escoba replay``). The states are
the engine's, folded from the log; no rule is decided here or in the page.
"""

from __future__ import annotations

from typing import Any

import engine
from engine import events as ev
from engine.state import State, evolve

from .records import Record, from_record, summary

OVER = ("finished", "expired")


def _public_actor(actor: str, state: State) -> str:
    # player ids are bearer-token handles: a review shows seats instead
    if actor.startswith("player:"):
        seat = state.seat_of(actor[7:])
        return f"seat:{seat}" if seat is not None else "player"
    return actor


def _shown(record: Record, event: ev.Event, operator: bool) -> Record:
    """A record as the reviewer sees it: the operator's decks for later games stay hidden
    from players (they may be dealt in a rematch)."""
    data = record["data"] if operator else engine.redact(event, None)["data"] \
        if isinstance(event, ev.TableOpened) else record["data"]
    return {**record, "data": data}


class Review:
    """One table's log folded once: the steps, and the states at each version on demand."""

    def __init__(self, records: list[Record], *, operator: bool):
        self.records = records
        self.operator = operator
        self.steps: list[dict[str, Any]] = []
        self.last_over: int | None = None  # the last version at which a game was over
        state = State().copy()
        self._actors: list[str] = []
        for record in records:
            event = from_record(record)
            actor = _public_actor(record.get("actor", "?"), state)
            evolve(state, event)
            shown = _shown(record, event, operator)
            self._actors.append(actor)
            self.steps.append({"version": record["version"], "type": record["type"], "actor": actor,
                               "at": record["at"], "summary": summary(shown)})
            if state.status in OVER:
                self.last_over = record["version"]
        self.final = state

    @property
    def last(self) -> int | None:
        """The last version this reviewer may see (None: none yet, a game is being played)."""
        if self.operator:
            return self.final.version
        return self.last_over

    def state_at(self, version: int) -> State:
        state = State().copy()
        for record in self.records[:version]:
            evolve(state, from_record(record))
        return state

    def step(self, version: int, *, deck: str | None = None) -> dict[str, Any]:
        """The record at ``version`` and the full view after it, labelled in ``deck``'s design
        (the reader's own, as for a table's view; None: the table's)."""
        record = self.records[version - 1]
        shown = _shown(record, from_record(record), self.operator)
        shown["actor"] = self._actors[version - 1]
        shown["summary"] = self.steps[version - 1]["summary"]
        return {"record": shown, "table": engine.view(self.state_at(version), None, deck=deck, full=True)}


__all__ = ["OVER", "Review"]
