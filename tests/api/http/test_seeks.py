"""Quick pairing through the API (docs/api.md, "Quick pairing"), on one Redis and on the cluster: the
seeks are posted over HTTP, the workers' waves run in this process at a clock the test moves (as the
timers' tests drive theirs), and the seats they give work at their tables."""

from __future__ import annotations

import dataclasses

import pytest

from api.app import create_app
from api.http import seeks as seeks_http
from events import seeks as store
from workers import context, runner

from ...workers.conftest import Clock

pytestmark = pytest.mark.integration


class Seeking:
    def __init__(self, http, stores, clock: Clock):
        self.http, self.stores, self.clock = http, stores, clock

    def seek(self, name="Ana", preset="del15", players=2, **extra) -> dict:
        r = self.http.post("/seeks", json={"name": name, "preset": preset, "players": players, **extra})
        assert r.status_code == 201, r.get_json()
        body = r.get_json()
        assert body["status"] == "waiting" and set(body) == {"seek_id", "token", "status"}
        return body

    def poll(self, seek: dict) -> dict:
        r = self.http.get(f"/seeks/{seek['seek_id']}", headers={"Authorization": f"Bearer {seek['token']}"})
        assert r.status_code == 200, r.get_json()
        return r.get_json()

    def pair(self) -> int:
        """The workers at the clock's time: the ticker hands the due pools' waves, RQ runs them and the
        tables they choose (and the bots' turns after), until nothing is due."""
        return runner.run_burst(self.stores.tables, self.stores.queues, self.clock.now)

    def view(self, table_id: str, token: str | None = None) -> dict:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        r = self.http.get(f"/tables/{table_id}", headers=headers)
        assert r.status_code == 200, r.get_json()
        return r.get_json()

    def seek_keys(self) -> list:
        return sorted(self.stores.tables.keys("seeks:*")) + sorted(self.stores.tables.keys("lobby:*"))


@pytest.fixture
def seeking(stores, topology, monkeypatch):
    clock = Clock()
    config = dataclasses.replace(topology.config(), bot_delay=0.0, rate_limits="off")
    monkeypatch.setattr(seeks_http, "_now", clock)  # the API's seeks and the workers on one clock
    app = create_app(stores, config)
    app.testing = True
    context.configure(config, clock, tables=stores.tables, queues=stores.queues)
    yield Seeking(app.test_client(), stores, clock)
    context.configure(None, None)


def _play_first(seeking, table_id: str, tokens: dict[int, str]) -> dict:
    """The seat on turn plays its first legal move with its own token; the answer."""
    view = seeking.view(table_id, tokens[0])
    turn = view["turn"]
    mine = seeking.view(table_id, tokens[turn])
    option = mine["options"][0]
    capture = option["captures"][0] if option["captures"] and not option["may_leave"] else []
    r = seeking.http.post(f"/tables/{table_id}/moves", json={"type": "play", "card": option["card"],
                                                              "capture": capture},
                          headers={"Authorization": f"Bearer {tokens[turn]}"})
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def test_two_seekers_are_seated_at_one_playing_table_with_tokens_that_work(seeking):
    ana, bea = seeking.seek("Ana"), seeking.seek("Bea")
    assert seeking.poll(ana) == {"status": "waiting"}  # nothing paired until a worker's wave
    seeking.pair()
    a, b = seeking.poll(ana), seeking.poll(bea)
    assert a["status"] == b["status"] == "paired"
    assert a["table_id"] == b["table_id"] and {a["seat"], b["seat"]} == {0, 1}
    tokens = {a["seat"]: a["token"], b["seat"]: b["token"]}
    for seat, token in tokens.items():
        view = seeking.view(a["table_id"], token)
        assert view["status"] == "playing" and view["you"] == seat
        assert [s["kind"] for s in view["seats"] if s["kind"]] == ["human", "human"]
    before = seeking.view(a["table_id"])["version"]
    assert _play_first(seeking, a["table_id"], tokens)["version"] > before
    # the tokens are the seat's only: the seek's own token is no seat token
    r = seeking.http.post(f"/tables/{a['table_id']}/moves", json={"type": "resign"},
                          headers={"Authorization": f"Bearer {ana['token']}"})
    assert r.status_code == 401


def test_four_seekers_make_two_teams(seeking):
    seekers = [seeking.seek(name, players=4) for name in ("Ana", "Bea", "Cris", "Dani")]
    seeking.pair()
    answers = [seeking.poll(s) for s in seekers]
    assert {a["status"] for a in answers} == {"paired"}
    assert len({a["table_id"] for a in answers}) == 1 and sorted(a["seat"] for a in answers) == [0, 1, 2, 3]
    view = seeking.view(answers[0]["table_id"], answers[0]["token"])
    assert view["status"] == "playing"
    assert sorted(sorted(side["seats"]) for side in view["scores"]) == [[0, 2], [1, 3]]


def test_a_lone_seeker_gets_a_bot_after_bot_after(seeking):
    ana = seeking.seek("Ana", bot_after=3)
    seeking.pair()
    assert seeking.poll(ana) == {"status": "waiting"}
    seeking.clock.advance(2)
    seeking.pair()
    assert seeking.poll(ana) == {"status": "waiting"}  # not before its time
    seeking.clock.advance(1.5)
    seeking.pair()
    a = seeking.poll(ana)
    assert a["status"] == "paired" and a["seat"] == 0
    view = seeking.view(a["table_id"], a["token"])
    assert view["status"] == "playing"
    assert [(s["name"], s["kind"]) for s in view["seats"] if s["kind"]] == [("Ana", "human"), ("Tito", "bot")]


def test_four_player_pool_fills_with_whoever_waits_and_bots(seeking):
    ana = seeking.seek("Ana", players=4, bot_after=2)
    bea = seeking.seek("Bea", players=4, bot_after=None)
    seeking.clock.advance(2.5)
    seeking.pair()
    a, b = seeking.poll(ana), seeking.poll(bea)
    assert a["status"] == b["status"] == "paired" and a["table_id"] == b["table_id"]
    view = seeking.view(a["table_id"])
    assert [s["kind"] for s in view["seats"]] == ["human", "human", "bot", "bot"]


def test_a_seeker_gone_for_ten_seconds_is_never_paired(seeking):
    gone = seeking.seek("Ana", bot_after=None)
    seeking.clock.advance(store.GONE_AFTER + 1)  # no poll, no socket meanwhile
    bea = seeking.seek("Bea", bot_after=None)
    seeking.pair()
    assert seeking.poll(bea) == {"status": "waiting"}  # not seated against an empty chair
    assert seeking.poll(gone) == {"status": "expired"}
    cris = seeking.seek("Cris", bot_after=None)
    seeking.clock.advance(2)  # the pool's next wave (an at-once wave was asked for a moment ago)
    seeking.pair()
    b, c = seeking.poll(bea), seeking.poll(cris)
    assert b["status"] == c["status"] == "paired" and b["table_id"] == c["table_id"]
    assert seeking.poll(gone) == {"status": "expired"}
    names = [s["name"] for s in seeking.view(b["table_id"])["seats"] if s["kind"]]
    assert "Ana" not in names


def test_a_seeker_that_polls_is_heard(seeking):
    ana = seeking.seek("Ana", bot_after=None)
    for _ in range(4):  # 20 s of waiting, heard every 5 s
        seeking.clock.advance(5)
        assert seeking.poll(ana) == {"status": "waiting"}
        seeking.pair()
    bea = seeking.seek("Bea", bot_after=None)
    seeking.pair()
    assert seeking.poll(ana)["status"] == seeking.poll(bea)["status"] == "paired"


def test_a_cancelled_seek_is_never_paired(seeking):
    ana = seeking.seek("Ana", bot_after=1)
    r = seeking.http.delete(f"/seeks/{ana['seek_id']}", headers={"Authorization": f"Bearer {ana['token']}"})
    assert r.status_code == 204
    bea, cris = seeking.seek("Bea"), seeking.seek("Cris")
    seeking.clock.advance(2)
    seeking.pair()
    assert seeking.poll(ana) == {"status": "cancelled"}
    b, c = seeking.poll(bea), seeking.poll(cris)
    assert b["table_id"] == c["table_id"]
    assert "Ana" not in [s["name"] for s in seeking.view(b["table_id"])["seats"] if s["kind"]]
    # cancelling a seek at its table already is refused, and changes nothing
    r = seeking.http.delete(f"/seeks/{bea['seek_id']}", headers={"Authorization": f"Bearer {bea['token']}"})
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "seek_paired"
    assert seeking.poll(bea)["status"] == "paired"


def test_a_seek_answers_only_its_own_token(seeking):
    ana = seeking.seek("Ana")
    path = f"/seeks/{ana['seek_id']}"
    assert seeking.http.get(path).status_code == 401
    assert seeking.http.get(path, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert seeking.http.delete(path, headers={"Authorization": "Bearer nope"}).status_code == 401
    assert seeking.http.get("/seeks/del15.2.0.00000000.nosuchseek",
                            headers={"Authorization": "Bearer x"}).status_code == 404
    assert seeking.http.get("/seeks/garbage", headers={"Authorization": "Bearer x"}).status_code == 404
    # the store holds the token only as a hash
    stored = seeking.stores.tables.hgetall(store.seek_key(store.pool_of(ana["seek_id"]), ana["seek_id"]))
    assert ana["token"].encode() not in b"".join(k + v for k, v in stored.items())
    assert stored[b"token"].decode() == store.token_digest(ana["token"])


def test_a_correspondence_seek_waits_in_the_lobby_and_is_accepted(seeking):
    ana = seeking.seek("Ana", preset="selminha", correspondence=True, settings={"target": 31})
    lobby = seeking.http.get("/lobby").get_json()
    assert [(s["seek_id"], s["name"], s["preset"], s["players"], s["rated"]) for s in lobby["seeks"]] == \
        [(ana["seek_id"], "Ana", "selminha", 2, False)]
    seeking.clock.advance(60)
    seeking.pair()  # no wave pairs it, no bot comes, its holder's silence ends nothing
    assert seeking.poll(ana) == {"status": "waiting"}
    r = seeking.http.post(f"/seeks/{ana['seek_id']}/accept", json={"name": "Bea"})
    assert r.status_code == 201, r.get_json()
    bea = r.get_json()
    assert bea["status"] == "paired" and bea["seat"] == 1
    a = seeking.poll(ana)
    assert a["status"] == "paired" and a["table_id"] == bea["table_id"] and a["seat"] == 0
    view = seeking.view(a["table_id"], a["token"])
    assert view["status"] == "playing" and view["you"] == 0 and view["settings"]["target"] == 31
    assert seeking.view(a["table_id"], bea["token"])["you"] == 1
    assert seeking.http.get("/lobby").get_json()["seeks"] == []
    again = seeking.http.post(f"/seeks/{ana['seek_id']}/accept", json={"name": "Cris"})
    assert again.status_code == 409 and again.get_json()["error"]["code"] == "seek_closed"


def test_a_live_seek_is_not_accepted_from_the_lobby(seeking):
    ana = seeking.seek("Ana")
    r = seeking.http.post(f"/seeks/{ana['seek_id']}/accept", json={"name": "Bea"})
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "not_correspondence"


def test_the_lobby_lists_tables_playing_now(seeking):
    ana, bea = seeking.seek("Ana"), seeking.seek("Bea")
    seeking.pair()
    table_id = seeking.poll(ana)["table_id"]
    live = seeking.http.get("/lobby").get_json()["live"]
    assert [(t["table_id"], sorted(t["players"])) for t in live] == [(table_id, ["Ana", "Bea"])]
    assert bea  # both seated


def test_the_lobby_lists_a_new_table_in_a_slot_it_did_not_list_before_within_seconds(seeking, monkeypatch):
    """The slots that hold tables are kept a minute by each process; a table in a slot not yet listed
    is shown as soon as the live tables are read again (LIVE_KEPT), not a minute later."""
    from api.http import seeks as seeks_http
    from events.buckets import slot_of

    monkeypatch.setattr(seeks_http, "LIVE_KEPT", 0.001)  # the live rows read again at every call
    first = [seeking.seek("Ana"), seeking.seek("Bea")]
    seeking.pair()
    one = seeking.poll(first[0])["table_id"]
    assert [t["table_id"] for t in seeking.http.get("/lobby").get_json()["live"]] == [one]  # slots now kept
    second = [seeking.seek("Cris"), seeking.seek("Dan")]
    seeking.clock.advance(2)  # the pool's next wave: one ran a moment ago
    seeking.pair()
    two = seeking.poll(second[0])["table_id"]
    assert slot_of(two) != slot_of(one)  # (one chance in 16,384 that they share one)
    assert sorted(t["table_id"] for t in seeking.http.get("/lobby").get_json()["live"]) == sorted([one, two])


@pytest.mark.parametrize("body, field", [
    ({"name": "Ana", "preset": "tute", "players": 2}, "preset"),
    ({"name": "Ana", "preset": "del15", "players": 5}, "players"),
    ({"name": "Ana", "preset": "del15", "players": 1}, "players"),
    ({"name": "Ana", "preset": "del15", "players": 2, "bot_after": -1}, "bot_after"),
    ({"name": "Ana", "preset": "del15", "players": 2, "bot_after": "30"}, "bot_after"),
    ({"name": "Ana", "preset": "del15", "players": 2, "settings": {"target": 31}}, "target"),
    ({"name": "Ana", "preset": "cardgames", "players": 2, "settings": {"capture": "hybrid"}}, "capture"),
    ({"name": "Ana", "preset": "del15", "players": 2, "colour": "red"}, "colour"),
    ({"preset": "del15", "players": 2}, "name"),
    ({"name": "Ana", "preset": "del15", "players": "2"}, "players"),
])
def test_bad_input_gets_a_400_naming_it_and_changes_nothing(seeking, body, field):
    r = seeking.http.post("/seeks", json=body)
    assert r.status_code == 400, r.get_json()
    error = r.get_json()["error"]
    assert error["code"] == "bad_request" and field in error["details"]
    assert seeking.seek_keys() == []
    assert seeking.http.get("/lobby").get_json() == {"seeks": [], "live": []}


def test_a_rated_seek_needs_an_account(seeking):
    r = seeking.http.post("/seeks", json={"name": "Ana", "preset": "del15", "players": 2, "rated": True})
    assert r.status_code == 401 and r.get_json()["error"]["code"] == "unauthorized"
    assert seeking.seek_keys() == []


def _account(seeking, prefix: str) -> dict:
    from .test_players import sign_up, unique_name

    return sign_up(seeking.http, unique_name(prefix))


def _seek_as(seeking, account: dict, **body) -> dict:
    r = seeking.http.post("/seeks", json={"preset": "del15", "players": 2, **body},
                          headers={"Authorization": f"Bearer {account['token']}"})
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def test_accounts_are_seated_as_themselves_and_their_player_tokens_act_for_the_seats(seeking):
    ana, bea = _account(seeking, "ana"), _account(seeking, "bea")
    a_seek, b_seek = _seek_as(seeking, ana), _seek_as(seeking, bea)
    seeking.pair()
    a, b = seeking.poll(a_seek), seeking.poll(b_seek)
    assert a["table_id"] == b["table_id"]
    view = seeking.view(a["table_id"])
    assert sorted(s["name"] for s in view["seats"] if s["kind"]) == sorted([ana["name"], bea["name"]])
    # the seat token and the account's own player token both act for the seat
    assert seeking.view(a["table_id"], a["token"])["you"] == a["seat"]
    assert seeking.view(a["table_id"], ana["token"])["you"] == a["seat"]
    assert seeking.view(b["table_id"], bea["token"])["you"] == b["seat"]
    _play_first(seeking, a["table_id"], {a["seat"]: ana["token"], b["seat"]: bea["token"]})


def test_an_account_is_never_paired_with_itself(seeking):
    ana = _account(seeking, "ana")
    first, second = _seek_as(seeking, ana, bot_after=None), _seek_as(seeking, ana, bot_after=None)
    seeking.clock.advance(2)
    seeking.pair()
    assert seeking.poll(first) == seeking.poll(second) == {"status": "waiting"}
    cris = seeking.seek("Cris", bot_after=None)
    seeking.clock.advance(2)
    seeking.pair()
    answers = [seeking.poll(s) for s in (first, second, cris)]
    assert sorted(a["status"] for a in answers) == ["paired", "paired", "waiting"]
    assert answers[2]["status"] == "paired"


def test_a_paired_guest_token_names_its_table(seeking):
    ana, bea = seeking.seek("Ana"), seeking.seek("Bea")
    seeking.pair()
    a = seeking.poll(ana)
    assert a["token"].startswith(a["table_id"] + ".")
    r = seeking.http.post("/tables/summaries", json={"tokens": [a["token"]]})
    assert r.status_code == 200 and [row["table_id"] for row in r.get_json()["tables"]] == [a["table_id"]]
    assert seeking.poll(ana) == a and seeking.poll(bea)["status"] == "paired"  # asked again: the same


def _rated(seeking, account: dict, rating: float) -> None:
    """The account's del15 two-player rating, as the ratings' projection keeps it (events/ratings.py)."""
    import orjson

    from engine.ratings import Rating
    from events.ratings import player_key

    seeking.stores.tables.hset(player_key(account["player_id"], "ratings"), "del15:two",
                               orjson.dumps(Rating(rating, 60.0, 0.06, 30).as_dict()))


def test_a_rated_pool_pairs_the_closest_ratings_first_at_rated_tables(seeking):
    accounts = {r: _account(seeking, f"r{r}") for r in (1500, 1800, 1510, 1790)}
    for rating, account in accounts.items():
        _rated(seeking, account, rating)
    seeks = {r: _seek_as(seeking, a, rated=True) for r, a in accounts.items()}
    seeking.clock.advance(2)
    seeking.pair()
    answers = {r: seeking.poll(s) for r, s in seeks.items()}
    assert {a["status"] for a in answers.values()} == {"paired"}
    assert answers[1500]["table_id"] == answers[1510]["table_id"]
    assert answers[1790]["table_id"] == answers[1800]["table_id"] != answers[1500]["table_id"]
    view = seeking.view(answers[1500]["table_id"], answers[1500]["token"])
    assert view["status"] == "playing" and view["settings"]["rated"] is True


def test_nobody_meets_the_same_player_twice_in_a_row_when_another_waits(seeking):
    ana, bea, cris = (_account(seeking, n) for n in ("ana", "bea", "cris"))
    first = [_seek_as(seeking, ana), _seek_as(seeking, bea)]
    seeking.pair()
    assert {seeking.poll(s)["status"] for s in first} == {"paired"}
    again = {"ana": _seek_as(seeking, ana, bot_after=None), "bea": _seek_as(seeking, bea, bot_after=None)}
    seeking.clock.advance(1)
    again["cris"] = _seek_as(seeking, cris, bot_after=None)
    seeking.clock.advance(2)
    seeking.pair()
    answers = {n: seeking.poll(s) for n, s in again.items()}
    paired = {n for n, a in answers.items() if a["status"] == "paired"}
    assert len(paired) == 2 and paired != {"ana", "bea"}
    assert len({answers[n]["table_id"] for n in paired}) == 1


def test_a_bad_rated_setting_is_refused(seeking):
    r = seeking.http.post("/seeks", json={"name": "Ana", "preset": "del15", "players": 2, "settings": {"rated": 7}})
    assert r.status_code == 400 and "rated" in r.get_json()["error"]["details"]
    assert seeking.seek_keys() == []


def test_a_correspondence_seek_of_three_fills_seat_by_seat(seeking):
    ana = seeking.seek("Ana", preset="cardgames", players=3, correspondence=True)
    bea = seeking.http.post(f"/seeks/{ana['seek_id']}/accept", json={"name": "Bea"}).get_json()
    assert bea["status"] == "paired" and bea["seat"] == 1
    assert seeking.poll(ana) == {"status": "waiting"}
    assert seeking.view(bea["table_id"])["status"] == "waiting"
    assert [s["seek_id"] for s in seeking.http.get("/lobby").get_json()["seeks"]] == [ana["seek_id"]]
    # once someone sits at its table, its holder may no longer take it away
    r = seeking.http.delete(f"/seeks/{ana['seek_id']}", headers={"Authorization": f"Bearer {ana['token']}"})
    assert r.status_code == 409 and r.get_json()["error"]["code"] == "seek_paired"
    cris = seeking.http.post(f"/seeks/{ana['seek_id']}/accept", json={"name": "Cris"}).get_json()
    assert cris["seat"] == 2 and seeking.view(cris["table_id"])["status"] == "playing"
    assert seeking.poll(ana)["status"] == "paired"
    assert seeking.http.get("/lobby").get_json()["seeks"] == []
