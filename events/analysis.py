"""A table's game analysis, kept beside its log: ``table:{ID}:analysis``, one hash.

Derived data: computed from the log (``engine.analysis``) by the ``analysis``
job (``workers/analysis.py``) and always computable again; it carries the log
version it was computed from, so a reader can tell what it judged. It is not a
hot key of compaction (``events/compaction.HOT``): a compacted table keeps it.

Fields:

- ``version``  the log version analysed; ``status`` ``pending`` or ``done``
- ``total``    the plays to judge (once the job has read the log); ``job`` the job in hand
- ``row:<v>``  a judged play (``engine.analysis.Judgement.row``), while pending: the job
               resumes from these after a crash, judging only what is missing
- ``result``   once done, the contract's ``seats`` (JSON); the rows are then dropped

Every write is one Lua step on the table's slot, guarded by the version: a job
still running for an older version writes nothing into a newer analysis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from .connection import Client
from .store import table_key

PENDING, DONE = "pending", "done"
ROW = "row:"


def analysis_key(table_id: str) -> str:
    return table_key(table_id, "analysis")


# ARGV[1] the version asked. 1: a new analysis was begun (an older one replaced); 0: there is one
# for this version or a later one already.
_ASK = """
local v = tonumber(redis.call('HGET', KEYS[1], 'version') or '-1')
if v >= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'status', 'pending')
return 1
"""

# ARGV[1] the version; ARGV[2..] field, value pairs. Written only into that version's pending analysis.
_SAVE = """
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return 0 end
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
"""

# ARGV[1] the version, ARGV[2] the result. The rows go; the result stays.
_FINISH = """
if redis.call('HGET', KEYS[1], 'version') ~= ARGV[1] then return 0 end
if redis.call('HGET', KEYS[1], 'status') ~= 'pending' then return 0 end
local total = redis.call('HGET', KEYS[1], 'total') or '0'
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'version', ARGV[1], 'status', 'done', 'total', total, 'result', ARGV[2])
return 1
"""


def _text(x: object) -> str:
    return x.decode() if isinstance(x, bytes) else str(x)


def ask(redis: Client, table_id: str, version: int) -> bool:
    """Begin the analysis of the log at ``version``, unless one of it (or later) is there: whether begun."""
    return bool(int(redis.eval(_ASK, 1, analysis_key(table_id), version)))


def save(redis: Client, table_id: str, version: int, *, rows: Sequence[dict[str, Any]] = (),
         total: int | None = None,
         job: str | None = None) -> bool:
    """Add judged rows (and the total, the job in hand) to the pending analysis of ``version``."""
    args: list[str | bytes | int] = []
    for row in rows:
        args += [f"{ROW}{row['version']}", orjson.dumps(row)]
    if total is not None:
        args += ["total", total]
    if job is not None:
        args += ["job", job]
    if not args:
        return True
    return bool(int(redis.eval(_SAVE, 1, analysis_key(table_id), version, *args)))


def finish(redis: Client, table_id: str, version: int, seats: list[dict[str, Any]]) -> bool:
    """Store the result of the analysis of ``version`` (the contract's ``seats``) and drop its rows."""
    return bool(int(redis.eval(_FINISH, 1, analysis_key(table_id), version, orjson.dumps(seats))))


class Stored:
    """What is kept of a table's analysis."""

    __slots__ = ("job", "result", "rows", "status", "total", "version")

    def __init__(self, fields: Mapping[bytes | str, bytes | str]):
        f = {_text(k): v for k, v in fields.items()}
        self.version = int(f["version"])
        self.status = _text(f.get("status", PENDING))
        self.total = int(f["total"]) if "total" in f else None
        self.job = _text(f["job"]) if "job" in f else None
        self.rows = {int(k[len(ROW):]): orjson.loads(v) for k, v in f.items() if k.startswith(ROW)}
        self.result = orjson.loads(f["result"]) if "result" in f else None

    @property
    def progress(self) -> float:
        if self.status == DONE:
            return 1.0
        if not self.total:
            return 0.0
        return min(1.0, len(self.rows) / self.total)

    def answer(self) -> dict[str, Any]:
        """The contract's body for ``GET /tables/{id}/analysis`` (``version``: the log version judged)."""
        if self.status == DONE:
            return {"status": DONE, "version": self.version, "seats": self.result}
        return {"status": PENDING, "version": self.version, "progress": round(self.progress, 3)}


def load(redis: Client, table_id: str) -> Stored | None:
    fields = redis.hgetall(analysis_key(table_id))
    return Stored(fields) if fields else None


__all__ = ["DONE", "PENDING", "Stored", "analysis_key", "ask", "finish", "load", "save"]
