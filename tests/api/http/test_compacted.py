"""A compacted table through the API: every read as before, every write a 409 table_closed."""

from __future__ import annotations

import random

from api.app import create_app
from events import compaction

from ..conftest import Client, play_out, two_player_table


def test_a_compacted_table_reads_as_before_and_refuses_writes(app, client, fake_redis, config):
    tid, host, guest = two_player_table(client)
    client.ok(tid, host, type="start")
    play_out(client, tid, {0: host, 1: guest}, random.Random(8))
    r = client.http.post(f"/tables/{tid}/chat", json={"text": "gg"},
                         headers={"Authorization": f"Bearer {guest}"})
    assert r.status_code == 201
    client.ok(tid, guest, type="rematch", accept=False)

    def reads(c):
        return {
            "host": c.view(tid, host), "guest": c.view(tid, guest), "public": c.view(tid),
            "events": c.http.get(f"/tables/{tid}/events?limit=1000",
                                 headers={"Authorization": f"Bearer {host}"}).get_json(),
            "past": c.http.get(f"/tables/{tid}/events?after=30&limit=5").get_json(),
            "chat": c.http.get(f"/tables/{tid}/chat").get_json(),
            "log": c.http.get(f"/admin/tables/{tid}/log", headers=c.admin()).data,
        }

    before = reads(client)
    version = before["host"]["version"]
    assert compaction.compact(fake_redis, tid, version)["events"] == version
    other = create_app(fake_redis, config)  # another process: nothing cached
    other.testing = True
    for c in (client, Client(other.test_client())):
        assert reads(c) == before  # the admin log byte for byte, too
        auth = {"Authorization": f"Bearer {host}"}
        writes = [
            c.http.post(f"/tables/{tid}/moves", json={"type": "rematch", "accept": True}, headers=auth),
            c.http.post(f"/tables/{tid}/chat", json={"text": "again?"}, headers=auth),
            c.http.post(f"/tables/{tid}/notify", json={"url": "https://example.com/n"}, headers=auth),
            c.http.post(f"/tables/{tid}/seats", json={"name": "Zoe"}),
        ]
        for w in writes:
            assert w.status_code == 409, w.get_json()
            assert w.get_json()["error"]["code"] == "table_closed"
    # kept: the archive, the tokens, and the table's row in its players' lists (events/my_tables.py)
    assert sorted(k.decode().rsplit(":", 1)[1] for k in fake_redis.keys(f"table:{{{tid}}}:*")) == \
        ["archive", "row", "tokens"]
