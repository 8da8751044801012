"""What ``TableService`` asks of its change hook (``TableService(on_change=...)``).

Every hook is a ``ChangeHook``: called after each append with the table, its new state and the
records appended. A hook may have two abilities more, each a protocol it declares by
subclassing it (``workers.scheduling.TimersHook`` has both):

- ``ReadsBack``: ``read_back(table_id) -> (keys, stamp)`` names hashes of the table to read in
  the append's own Lua step (``Append.read_back``), so the hook needs no round trip of
  its own; the hook is then called with the append's ``Appended`` as a fourth argument.
- ``NotesUnacknowledged``: ``unacknowledged(table_id)`` hears of an append that stands on the
  master without its replicas' acknowledgement (events/replication.py): nothing followed it.

- ``WritesRow``: ``row(table_id, before, after, records) -> (key, fields)`` names a hash of the
  table's to set in the append's own step (the row of the players' lists, events/my_tables.py).

The service tells them apart with ``isinstance`` (the protocols are runtime-checkable, so a
hook that has the methods without declaring them is still found, as before).

A caller of ``TableService.execute`` may add its own parts to its request's append step
(``StepParts``): the service puts them in each attempt's ``Append`` and reads nothing of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from engine import State

    from .records import Record
    from .store import Appended, RateCount


class ChangeHook(Protocol):
    def __call__(self, table_id: str, state: State, records: list[Record], /) -> None: ...


@runtime_checkable
class ReadsBack(Protocol):
    def read_back(self, table_id: str) -> tuple[tuple[str, ...], bool]: ...

    def __call__(self, table_id: str, state: State, records: list[Record],
                 appended: Appended | None = None, /) -> None: ...


@runtime_checkable
class NotesUnacknowledged(Protocol):
    def unacknowledged(self, table_id: str) -> None: ...


@runtime_checkable
class WritesRow(Protocol):
    def row(self, table_id: str, before: State, after: State,
            records: list[Record]) -> tuple[str, dict[str, str]]: ...


class StepParts(Protocol):
    """A caller's own parts of its request's append step (``TableService.execute(..., parts=...)``;
    the API's: api/moves.py). Read once an attempt, and put in its ``Append`` as they are."""

    @property
    def quiet_for(self) -> str | None:
        """``Append.quiet_for``: the caller's listener id when it tells its own sockets itself."""

    def count(self) -> RateCount | None:
        """``Append.count`` of this attempt's step (a request is counted once: at its first step)."""


__all__ = ["ChangeHook", "NotesUnacknowledged", "ReadsBack", "StepParts", "WritesRow"]
