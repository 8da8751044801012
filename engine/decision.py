"""A decision under way: the events decided so far, and the state they lead to.

Later rules read the state the earlier events made (after a play, are the
hands empty? is the round over?), so each event is folded as it is added.
"""

from __future__ import annotations

from .events import Event
from .state import State, evolve


class Decision:
    def __init__(self, state: State):
        self.state = state.copy()
        self.events: list[Event] = []

    def add(self, event: Event) -> None:
        evolve(self.state, event)
        self.events.append(event)
