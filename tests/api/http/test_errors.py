"""Errors in the contract's shape when the store fails: 503 unavailable with Retry-After, never 500."""

from __future__ import annotations

import dataclasses

import pytest
import redis as redis_lib
from redis.backoff import NoBackoff
from redis.retry import Retry

from api.app import create_app
from events.store import table_key

from ...redis_servers import RedisServer, free_port
from ..conftest import Client


def _unavailable(r, state=None):
    assert r.status_code == 503, (r.status_code, r.get_json())
    body = r.get_json()
    assert body["error"]["code"] == "unavailable"
    assert int(r.headers["Retry-After"]) > 0
    if state:
        assert body["error"]["details"] == {"store": state}
    return body


@pytest.fixture
def private_redis(redis_server_binary, tmp_path):
    """A redis-server of this test's own: tiny maxmemory, noeviction (as in production)."""
    server = RedisServer(free_port(), tmp_path, extra=("--maxmemory", "4mb")).start()
    yield server
    server.stop()


def _app(server, config):
    # no retries: redis-py's default backoff spends some 3 s on each refused connection
    client = redis_lib.Redis(port=server.port, socket_timeout=2, socket_connect_timeout=1,
                             retry=Retry(NoBackoff(), 0))
    # limits on: their counters live in the same store, and must fail the same way
    return Client(create_app(client, dataclasses.replace(config, rate_limits="on")).test_client()), client


def test_a_full_store_answers_503_and_healthz_says_so(private_redis, config):
    c, rdb = _app(private_redis, config)
    host = c.create()
    table_id = host["table_id"]
    assert c.http.get("/healthz").status_code == 200
    first = c.move(table_id, host["token"], headers={"Idempotency-Key": "bot-1"}, type="add_bot", bot="carmen")
    assert first.status_code == 200, first.get_json()
    # fill it: noeviction refuses every write once used memory passes maxmemory
    with pytest.raises(redis_lib.exceptions.OutOfMemoryError):  # noqa: PT012
        for i in range(100_000):  # small values: a big refused one only fills the query buffer
            rdb.set(f"filler:{i}", b"x" * 1000)
    # the refused write's buffer is freed with it, and the store may then sit a few bytes under its
    # limit, where one small write would still fit by luck of bytes: hold the limit under what is used
    rdb.config_set("maxmemory", rdb.info("memory")["used_memory"] - 64 * 1024)
    events = table_key(table_id, "events")
    before = rdb.xlen(events)
    assert before > 0
    body = _unavailable(c.http.get("/healthz"), "full")
    assert str(private_redis.port) not in str(body) and "127.0.0.1" not in str(body)
    _unavailable(c.http.post("/tables", json={"name": "Ana", "preset": "selminha"}), "full")
    _unavailable(c.http.post(f"/tables/{table_id}/seats", json={"name": "Bea"}), "full")
    _unavailable(c.move(table_id, host["token"], type="add_bot", bot="tito"), "full")
    _unavailable(c.move(table_id, host["token"], headers={"Idempotency-Key": "bot-2"}, type="add_bot",
                        bot="tito"), "full")
    # a retry of a move that was applied still gets its first answer: it needs only a read
    again = c.move(table_id, host["token"], headers={"Idempotency-Key": "bot-1"}, type="add_bot", bot="carmen")
    assert again.status_code == 200 and again.data == first.data, again.get_json()
    assert rdb.xlen(events) == before
    # reads still work: a full store still answers them
    assert c.http.get(f"/tables/{table_id}").status_code == 200
    rdb.config_set("maxmemory", "0")
    assert c.http.get("/healthz").status_code == 200
    assert c.move(table_id, host["token"], type="add_bot", bot="tito").status_code == 200


def test_a_stopped_store_answers_503_everywhere(private_redis, config):
    c, _rdb = _app(private_redis, config)
    host = c.create()
    table_id = host["table_id"]
    private_redis.stop()
    for r in (c.http.get("/healthz"),
              c.http.post("/tables", json={"name": "Ana", "preset": "selminha"}),
              c.http.post(f"/tables/{table_id}/seats", json={"name": "Bea"}),
              c.move(table_id, host["token"], type="add_bot", bot="tito"),
              c.http.get(f"/tables/{table_id}/chat"),
              c.http.get(f"/tables/{table_id}/events")):
        body = _unavailable(r, "unreachable")
        assert str(private_redis.port) not in str(body)


@pytest.mark.integration
def test_a_cluster_whose_master_dies_then_every_node_answers_503_never_500(tmp_path, config):
    """A private cluster with no replica: a master killed -9 takes its slots away (the cluster then
    says CLUSTERDOWN), then every node stopped; redis-py's cluster client raises errors outside
    RedisError's family for the last (RedisClusterUnreachableError), which the API answered 500."""
    from events.connection import cluster_client, from_clients
    from events.store import events_key

    from ...conftest import _need_binaries
    from ...redis_servers import start_cluster, start_plain

    _need_binaries(cluster=True)
    cluster = start_cluster(tmp_path / "cluster", 3)
    queue = start_plain(tmp_path / "queue")
    client = cluster_client(cluster.url, wait=10)
    try:
        app = create_app(from_clients(client, queue.client()), dataclasses.replace(config, rate_limits="on"))
        c = Client(app.test_client())
        host = c.create()
        table_id = host["table_id"]

        def every_request():
            return (c.http.get("/healthz"),
                    c.http.get(f"/tables/{table_id}", headers={"Authorization": f"Bearer {host['token']}"}),
                    c.http.post("/tables", json={"name": "Ana", "preset": "selminha"}),
                    c.move(table_id, host["token"], type="add_bot", bot="tito"),
                    c.http.get(f"/tables/{table_id}/chat"))

        port = client.get_node_from_key(events_key(table_id)).port
        next(node for node in cluster.nodes if node.port == port).kill()
        answers = every_request()
        assert all(r.status_code < 500 or r.status_code == 503 for r in answers), [r.status_code for r in answers]
        _unavailable(answers[3], "unreachable")  # the table's own master is gone
        for node in cluster.nodes:
            node.stop()
        for r in every_request():
            body = _unavailable(r, "unreachable")
            assert "127.0.0.1" not in str(body)
    finally:
        client.close()
        cluster.stop()
        queue.stop()


def test_a_read_only_store_answers_503(private_redis, config):
    c, rdb = _app(private_redis, config)
    host = c.create()
    rdb.config_set("replica-read-only", "yes")
    rdb.execute_command("REPLICAOF", "127.0.0.1", str(free_port()))  # a replica of nothing: read-only
    try:
        _unavailable(c.move(host["table_id"], host["token"], type="add_bot", bot="tito"), "read-only")
        _unavailable(c.http.get("/healthz"), "read-only")
    finally:
        rdb.execute_command("REPLICAOF", "NO", "ONE")


def test_every_error_is_the_contracts_json(client):
    """404, 405 (with Allow), 413, 414, 431, 415-ish bodies: all in the contract's shape."""
    from api.http.errors import HEADERS_MAX, URL_MAX

    table_id = client.create()["table_id"]
    cases = {
        404: client.http.get("/no/such/route"),
        405: client.http.delete("/tables"),
        413: client.http.post("/tables", data=b'{"name": "' + b"x" * 20_000 + b'"}', content_type="application/json"),
        414: client.http.get(f"/tables/{table_id}?deck=" + "x" * URL_MAX),
        431: client.http.get(f"/tables/{table_id}", headers={f"X-Pad-{i}": "y" * 1000
                                                             for i in range(HEADERS_MAX // 1000 + 1)}),
        400: client.http.post("/tables", data=b"not json", content_type="text/plain"),
    }
    for status, r in cases.items():
        assert r.status_code == status, (status, r.status_code, r.get_data()[:200])
        body = r.get_json()
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
        assert r.mimetype == "application/json"
    assert set(cases[405].headers["Allow"].replace(" ", "").split(",")) == {"POST", "OPTIONS"}
    assert cases[404].get_json()["error"]["code"] == "not_found"
    assert cases[405].get_json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize("body,field", [
    ({"name": "Ana", "preset": "selminha", "watch": "yes"}, "watch"),
    ({"name": "Ana", "preset": "selminha", "watch": 1}, "watch"),
    ({"name": 7, "preset": "selminha"}, "name"),
    ({"name": "Ana", "preset": "selminha", "settings": {"target": "21"}}, "target"),
    ({"name": "Ana", "preset": "selminha", "settings": {"opening_fifteen": 1}}, "opening_fifteen"),
])
def test_wrong_json_types_are_refused_never_coerced(client, body, field):
    r = client.http.post("/tables", json=body)
    assert r.status_code == 400, r.get_json()
    assert field in r.get_json()["error"]["details"]


@pytest.mark.parametrize("move,field", [
    ({"type": "start", "expected_version": "0"}, "expected_version"),
    ({"type": "start", "expected_version": 4.5}, "expected_version"),
    ({"type": "start", "expected_version": 1.0}, "expected_version"),
    ({"type": "start", "expected_version": True}, "expected_version"),
    ({"type": "choose_partner", "seat": "1"}, "seat"),
    ({"type": "rematch", "accept": "true"}, "accept"),
    ({"type": "play", "card": "1o", "capture": ["7x"]}, "capture"),
    ({"type": "play", "card": "1o", "capture": [1]}, "capture"),
    ({"type": "take_fifteen", "cards": ["7o", 8]}, "cards"),
    ({"type": 5}, "type"),
])
def test_wrong_move_types_are_refused_with_details_naming_the_field(client, move, field):
    host = client.create()
    before = client.view(host["table_id"], host["token"])["version"]
    r = client.move(host["table_id"], host["token"], **move)
    assert r.status_code == 400, r.get_json()
    assert field in r.get_json()["error"]["details"]
    assert client.view(host["table_id"], host["token"])["version"] == before


def test_a_bad_element_of_an_operators_deck_is_a_400_not_a_500(client):
    deck = ["1o"] * 39 + ["7x"]
    r = client.http.post("/tables", json={"name": "Ana", "preset": "selminha", "decks": [deck]},
                         headers=client.admin())
    assert r.status_code == 400
    assert r.get_json()["error"]["details"]["decks"]["0"]["39"]


def test_a_plain_request_to_the_socket_route_is_426_naming_the_protocol(client):
    """It had answered a bare 400 that /openapi.json did not document."""
    table_id = client.create()["table_id"]
    r = client.http.get(f"/tables/{table_id}/ws")
    assert r.status_code == 426 and r.headers["Upgrade"] == "websocket"
    assert r.get_json()["error"]["code"] == "upgrade_required"
    assert client.http.post(f"/tables/{table_id}/ws").status_code == 405


def test_openapi_documents_every_status_the_server_can_answer_on_each_operation(client):
    """Sizes (413, 414, 431) on every operation, whatever its route; the store's 503 and the limits' 429
    where they apply; 426 on the socket route."""
    document = client.http.get("/openapi.json").get_json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if method == "parameters":
                continue
            statuses = set(operation["responses"])
            assert {"413", "414", "431", "405"} <= statuses, (method, path)
            if method in ("post", "delete"):
                assert {"429", "503", "415", "400"} <= statuses, (method, path)
    ws = document["paths"]["/tables/{table_id}/ws"]["get"]["responses"]
    assert ws["426"]["headers"]["Upgrade"]["schema"]["enum"] == ["websocket"]
    for path in ("/tables/{table_id}", "/tables/{table_id}/events", "/admin/tables/{table_id}/log", "/healthz"):
        assert "503" in document["paths"][path]["get"]["responses"], path
