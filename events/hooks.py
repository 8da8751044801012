"""What ``TableService`` asks of its change hook (``TableService(on_change=...)``).

Every hook is a ``ChangeHook``: called after each append with the table, its new state and the
records appended. A hook may have two abilities more, each a protocol it declares by
subclassing it (``workers.scheduling.TimersHook`` has both):

- ``ReadsBack``: ``read_back(table_id) -> (keys, stamp)`` names hashes of the table to read in
  the append's own Lua step (``EventStore.append_reading``), so the hook needs no round trip of
  its own; the hook is then called with the append's ``Appended`` as a fourth argument.
- ``NotesUnacknowledged``: ``unacknowledged(table_id)`` hears of an append that stands on the
  master without its replicas' acknowledgement (events/replication.py): nothing followed it.

The service tells them apart with ``isinstance`` (the protocols are runtime-checkable, so a
hook that has the methods without declaring them is still found, as before).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from engine import State

    from .store import Appended


class ChangeHook(Protocol):
    def __call__(self, table_id: str, state: State, records: list[dict[str, Any]], /) -> None: ...


@runtime_checkable
class ReadsBack(Protocol):
    def read_back(self, table_id: str) -> tuple[tuple[str, ...], bool]: ...

    def __call__(self, table_id: str, state: State, records: list[dict[str, Any]],
                 appended: Appended | None = None, /) -> None: ...


@runtime_checkable
class NotesUnacknowledged(Protocol):
    def unacknowledged(self, table_id: str) -> None: ...


__all__ = ["ChangeHook", "NotesUnacknowledged", "ReadsBack"]
