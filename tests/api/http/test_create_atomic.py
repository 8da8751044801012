"""Creating a table is one step: first event, host token and index entry together, or none.

A full Redis (noeviction) refuses the create whole: nothing of the table is left
(issue 14: a refused create used to leave its TableOpened without token or index entry).
"""

from __future__ import annotations

import dataclasses
import time

import pytest
import redis as redis_lib

from api.app import create_app
from events.buckets import SLOTS, SLOTS_KEY
from events.config import Config

from ...redis_servers import start_plain

pytestmark = pytest.mark.integration


def _fill(client) -> None:
    """Writes junk until Redis refuses a write (OOM)."""
    junk = b"x" * 4096
    for i in range(100_000):
        try:
            client.set(f"junk:{i}", junk)
        except redis_lib.ResponseError as exc:
            assert "maxmemory" in str(exc)
            return
    raise AssertionError("Redis never filled up")


def test_a_create_refused_by_a_full_redis_leaves_nothing(redis_server_binary, tmp_path):
    server = start_plain(tmp_path)
    try:
        client = server.client()
        app = create_app(client, dataclasses.replace(Config(), bot_delay=0.0, rate_limits="off"))
        http = app.test_client()
        # the slot directory is written before the step (events/buckets.py): list every slot now
        # so that the only write a create makes is the one Lua step under test
        client.sadd(SLOTS_KEY, *range(SLOTS))
        app.extensions["escoba"].service.store.slots._known.update(dict.fromkeys(range(SLOTS), time.monotonic()))
        ok = http.post("/tables", json={"name": "Ana", "preset": "del15"})
        assert ok.status_code == 201
        client.config_set("maxmemory", int(client.info("memory")["used_memory"]) + 512 * 1024)
        _fill(client)
        before = set(client.keys("*"))

        refused = http.post("/tables", json={"name": "Bea", "preset": "del15"})
        assert refused.status_code >= 500
        assert "error" in refused.get_json()
        assert set(client.keys("*")) == before  # no log, no token, no index entry, no status

        # At the edge: a little room, less than a create needs. The step's first write is
        # allowed, the rest of the step then runs over the limit (Redis lets a script that has
        # written finish): the table is whole. Written as separate commands, the token or the
        # index entry after the event would be refused here, leaving a half-made table.
        crossed = None
        for step in range(40):
            client.config_set("maxmemory", int(client.info("memory")["used_memory"]) + 256 * step)
            r = http.post("/tables", json={"name": "Cai", "preset": "del15"})
            if r.status_code == 201:
                crossed = r.get_json()
                over = int(client.info("memory")["used_memory"]) > int(client.config_get("maxmemory")["maxmemory"])
                if over:
                    break
                # made whole within the limit: what a later refusal must leave untouched now has it
                # (else a refusal after it was judged against the keys from before it)
                before = set(client.keys("*"))
            else:
                assert set(client.keys("*")) == before
        assert crossed is not None and over, "no create crossed the memory limit midway"
        table_id, token = crossed["table_id"], crossed["token"]
        view = http.get(f"/tables/{table_id}", headers={"Authorization": f"Bearer {token}"}).get_json()
        assert view["you_are_host"] is True
        svc = app.extensions["escoba"].service
        client.config_set("maxmemory", 0)
        assert table_id in svc.table_ids() and ok.get_json()["table_id"] in svc.table_ids()
        assert svc.status_counts()["waiting"] == len(svc.table_ids())
        client.close()
    finally:
        server.stop()
