"""A table's log as JSON lines (one record per line), and reading it back."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from .records import LogError, Record, dumps, loads
from .service import TableService
from .store import EventStore


def export_lines(records: Iterable[Record]) -> Iterator[str]:
    """Each record as one line of JSON (newline included)."""
    for record in records:
        yield dumps(record) + "\n"


def export_text(records: Iterable[Record]) -> str:
    return "".join(export_lines(records))


def export_table(store: EventStore | TableService, table_id: str, after: int = 0) -> str:
    """The log of ``table_id`` (an EventStore or TableService) as JSON lines."""
    records = store.records(table_id, after) if isinstance(store, TableService) else store.read(table_id, after)
    return export_text(records)


def write_file(path: str | os.PathLike[str], records: Iterable[Record]) -> int:
    """Write ``records`` to ``path`` as JSON lines; how many."""
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        for line in export_lines(records):
            out.write(line)
            n += 1
    return n


def read_lines(lines: Iterable[str]) -> list[Record]:
    """Records from JSON lines; blank lines are skipped. LogError names the
    version a bad line should have carried (the one after the last good one)."""
    records: list[Record] = []
    for line in lines:
        if not line.strip():
            continue
        last = records[-1].get("version") if records else 0
        nxt = last + 1 if isinstance(last, int) else None
        records.append(loads(line, version=nxt))
    return records


def read_text(text: str) -> list[Record]:
    return read_lines(text.splitlines())


def read_file(path: str | os.PathLike[str]) -> list[Record]:
    with open(path, encoding="utf-8") as f:
        return read_lines(f)


__all__ = ["LogError", "export_lines", "export_table", "export_text", "read_file", "read_lines",
           "read_text", "write_file"]
