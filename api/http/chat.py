"""Table chat: a stream per table beside the game's log (chat is not a game fact).

Line numbers come from a counter in the same Lua step as the write, so
``after=N`` paging has no gaps and two API processes never reuse a number.
"""

from __future__ import annotations

import json

from engine import RuleError
from events.compaction import archive_key
from events.connection import is_cluster
from events.store import table_key

_POST = """
if redis.call('EXISTS', KEYS[4]) == 1 then return false end
local n = redis.call('INCR', KEYS[2])
local line = cjson.decode(ARGV[1])
line['id'] = n
local encoded = cjson.encode(line)
redis.call('XADD', KEYS[1], 'MAXLEN', '~', 2000, n .. '-0', 'line', encoded)
redis.call(ARGV[3], KEYS[3], cjson.encode({table_id = ARGV[2], chat = line}))
return encoded
"""


class ChatStore:
    """``archive(table_id)``: a compacted table's archive or None (TableService.archive): chat
    is compacted with the log (events/compaction.py), read from there, and closed to posts."""

    def __init__(self, redis, archive=None):
        self.redis = redis
        self._post = redis.register_script(_POST)
        self._archive = archive
        # the notice goes where the table's moves' notices go (events/store.py): SPUBLISH on a cluster
        self._publish = "SPUBLISH" if is_cluster(redis) else "PUBLISH"

    @staticmethod
    def _keys(table_id: str) -> list[str]:
        return [table_key(table_id, "chat"), table_key(table_id, "chatseq"), table_key(table_id, "changes"),
                archive_key(table_id)]

    def post(self, table_id: str, seat: int, name: str, text: str, at: str) -> dict:
        line = {"seat": seat, "name": name, "text": text, "at": at}
        raw = self._post(keys=self._keys(table_id), args=[json.dumps(line), table_id, self._publish])
        if raw is None:  # the same Lua step found the table compacted
            raise RuleError("table_closed", "This table is closed for good: it is kept read-only.")
        return json.loads(raw)

    def read(self, table_id: str, after: int = 0, limit: int = 500) -> list[dict]:
        entries = self.redis.xrange(self._keys(table_id)[0], min=f"{after + 1}-0", max="+", count=limit)
        if not entries and self._archive is not None:
            archive = self._archive(table_id)
            if archive is not None:
                lines = [json.loads(raw) for raw in archive.lines]
                return [x for x in lines if x["id"] > after][:limit]
        return [json.loads(fields[b"line"] if b"line" in fields else fields["line"]) for _, fields in entries]
