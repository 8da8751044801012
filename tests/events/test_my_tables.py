"""The players' lists are a projection of the tables' logs (events/my_tables.py): rebuilt from the logs,
the sets and the rows are what the appends kept, on one Redis and on a cluster."""

from __future__ import annotations

import dataclasses

import pytest

from api.app import create_app
from engine import State
from events import my_tables
from events.config import Config
from events.service import TableService

from ..api.http.test_my_tables import create, move, sit
from ..api.http.test_players import bearer, sign_up, unique_name


def _sets(redis, player_id):
    return {which: {m.decode(): int(s) for m, s in redis.zrange(my_tables.set_key(player_id, which), 0, -1,
                                                                 withscores=True)}
            for which in (my_tables.ACTIVE, my_tables.FINISHED)}


@pytest.mark.integration
def test_the_lists_rebuilt_from_the_logs_are_the_ones_kept(backends, topology):
    topology.flush()  # the rebuild reads every table (the suite's own servers)
    app = create_app(backends, dataclasses.replace(Config(), bot_delay=0.0, rate_limits="off"))
    app.testing = True
    http = app.test_client()
    ana, bea = sign_up(http, unique_name("ana")), sign_up(http, unique_name("bea"))
    tables = []
    # ana hosts, bea sits: one finished, one playing, one rematched and playing again
    for finish in (True, False, "rematch"):
        made = create(http, ana["token"])
        sit(http, made["table_id"], bea["token"])
        move(http, made["table_id"], ana["token"], type="start")
        if finish:
            move(http, made["table_id"], bea["token"], type="resign")
        if finish == "rematch":
            move(http, made["table_id"], ana["token"], type="rematch", accept=True)
            r = http.post(f"/tables/{made['table_id']}/moves", json={"type": "rematch", "accept": True},
                          headers=bearer(bea["token"]))
            assert r.status_code == 200, r.get_json()
            # the worker's timer starts it; here the same system command, through the app's service
            app.extensions["escoba"].service.execute(made["table_id"], {"type": "start_rematch"}, actor="system")
        tables.append(made["table_id"])
    # a guest's table, claimed by bea once it is finished; a guest-only table
    guest = create(http, name="Gus")
    sit(http, guest["table_id"])
    move(http, guest["table_id"], guest["token"], type="start")
    move(http, guest["table_id"], guest["token"], type="exit")
    assert http.post("/me/claim", json={"tokens": [guest["token"]]},
                     headers=bearer(bea["token"])).get_json() == {"claimed": 1}
    tables.append(guest["table_id"])
    other = create(http, name="Zed")["table_id"]

    redis = backends.tables
    kept = {p["player_id"]: _sets(redis, p["player_id"]) for p in (ana, bea)}
    assert set(kept[ana["player_id"]][my_tables.FINISHED]) == {tables[0]}
    assert set(kept[ana["player_id"]][my_tables.ACTIVE]) == {tables[1], tables[2]}
    assert set(kept[bea["player_id"]][my_tables.FINISHED]) == {tables[0], tables[3]}
    rows = my_tables.read_rows(redis, [*tables, other])
    assert set(rows) == {*tables, other}

    service = TableService(redis, cache_size=0)
    for p in (ana, bea):
        for which in (my_tables.ACTIVE, my_tables.FINISHED):
            redis.delete(my_tables.set_key(p["player_id"], which))
        rebuilt = my_tables.rebuild_player(service, p["player_id"])
        assert rebuilt == kept[p["player_id"]]
        assert _sets(redis, p["player_id"]) == kept[p["player_id"]]
    for table_id, stored in rows.items():
        key, fields = my_tables.rebuild_row(service, table_id)
        assert key == my_tables.row_key(table_id)
        assert my_tables.parse_row(fields) == stored, table_id
    # the lists read the same after the rebuild
    r = http.get("/me/tables", headers=bearer(ana["token"]))
    assert [t["table_id"] for t in r.get_json()["tables"]] and r.status_code == 200


def test_a_row_is_the_tables_seats_and_status_never_its_cards():
    from engine import decide_and_fold

    state = State()
    for command in ({"type": "open", "name": "t", "preset": "del15", "settings": {}, "player": "p_a",
                     "host_name": "Ana"}, {"type": "sit", "player": "p_b", "name": "Bea"},
                    {"type": "start", "by": 0, "deck": None, "pick": 0}):
        if command["type"] == "start":
            from engine.cards import FULL_DECK

            command["deck"] = list(FULL_DECK)
        _events, after = decide_and_fold(state, command)
        records = [{"at": "2026-01-01T00:00:00.000Z"}]
        key, fields = my_tables.row_fields("T1", state, after, records)
        state = after
    row = my_tables.parse_row(fields)
    public = my_tables.public_row("T1", row, 0, 3600.0)
    assert public["players"] == ["Ana", "Bea"] and public["away_claimable_at"] == "2026-01-01T01:00:00Z"
    text = repr(fields)
    for hand in state.hands.values():
        for card in hand:
            assert f'"{card}"' not in text
    for card in state.table:
        assert f'"{card}"' not in text
