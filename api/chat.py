"""Table chat: a stream per table beside the game's log (chat is not a game fact).

Line numbers come from a counter in the same Lua step as the write, so
``after=N`` paging has no gaps and two API processes never reuse a number.
"""

from __future__ import annotations

import json

from events.connection import is_cluster
from events.store import table_key

_POST = """
local n = redis.call('INCR', KEYS[2])
local line = cjson.decode(ARGV[1])
line['id'] = n
local encoded = cjson.encode(line)
redis.call('XADD', KEYS[1], 'MAXLEN', '~', 2000, n .. '-0', 'line', encoded)
redis.call(ARGV[3], KEYS[3], cjson.encode({table_id = ARGV[2], chat = line}))
return encoded
"""


class ChatStore:
    def __init__(self, redis):
        self.redis = redis
        self._post = redis.register_script(_POST)
        # the notice goes where the table's moves' notices go (events/store.py): SPUBLISH on a cluster
        self._publish = "SPUBLISH" if is_cluster(redis) else "PUBLISH"

    @staticmethod
    def _keys(table_id: str) -> list[str]:
        return [table_key(table_id, "chat"), table_key(table_id, "chatseq"), table_key(table_id, "changes")]

    def post(self, table_id: str, seat: int, name: str, text: str, at: str) -> dict:
        line = {"seat": seat, "name": name, "text": text, "at": at}
        raw = self._post(keys=self._keys(table_id), args=[json.dumps(line), table_id, self._publish])
        return json.loads(raw)

    def read(self, table_id: str, after: int = 0, limit: int = 500) -> list[dict]:
        entries = self.redis.xrange(self._keys(table_id)[0], min=f"{after + 1}-0", max="+", count=limit)
        return [json.loads(fields[b"line"] if b"line" in fields else fields["line"]) for _, fields in entries]
