"""schemathesis over /openapi.json: against the app itself (WSGI, in process), and from outside with its
own command line (`schemathesis run --checks all`) against `escoba serve`: 0 failures either way.

Every operation gets a bounded number of generated requests, valid and invalid
(``EXAMPLES`` each, ``ESCOBA_FUZZ_EXAMPLES`` to change it), from a fixed seed: the run is the
same every time and takes a minute or two on a loaded machine. schemathesis checks each answer
against the document: no 500, only documented statuses, bodies and headers as documented
(405 with Allow), schema-valid requests not refused with a 400, invalid ones refused, and no
answer without the seat token an operation needs.

Most requests are aimed at real tables (one per preset, one of them playing) with their real
tokens, so the bodies reach validation and the rules instead of stopping at 404 or 401.

From outside, the requests go through gunicorn and the wire as a client's do (sizes refused before
the app, 426 on the socket route, gunicorn's own refusals), with the admin token on every request;
tests/api/http/schemathesis.toml says what the contract answers that schemathesis's defaults don't know.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import fakeredis
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import positive_data_acceptance

from api.app import create_app
from events.config import Config

EXAMPLES = int(os.environ.get("ESCOBA_FUZZ_EXAMPLES", "40"))
ADMIN = "fuzz-admin-token"

REDIS = fakeredis.FakeRedis(server=fakeredis.FakeServer())
APP = create_app(REDIS, dataclasses.replace(Config(), admin_token=ADMIN, bot_delay=0.0, rate_limits="off"))
# what the contract answers that schemathesis's defaults don't know (sizes refused, 426 on the socket
# route): the same file the run from outside reads
CONFIG = Path(__file__).with_name("schemathesis.toml")
schema = schemathesis.openapi.from_wsgi("/openapi.json", APP, config=SchemathesisConfig.from_path(str(CONFIG)))
# unknown query parameters are ignored, as HTTP servers do (unknown body fields are refused)
schema.config.generation.update(modes=["positive", "negative"], max_examples=EXAMPLES, deterministic=True,
                                allow_extra_parameters=False)

_tables: list[dict] = []
_player: list[str] = []


def player_token() -> str:
    """A player token of an account of the fuzz's own (docs/api.md v1.3), made once."""
    if not _player:
        r = APP.test_client().post("/players", json={"name": "fuzz_player", "password": "fuzz password"})
        assert r.status_code == 201, r.get_json()
        _player.append(r.get_json()["token"])
    return _player[0]


def tables() -> list[dict]:
    """Real tables to aim at: one waiting per preset, and a two-player selminha game under way."""
    if not _tables:
        http = APP.test_client()
        for preset in ("selminha", "del15", "cardgames", "selminha"):
            host = http.post("/tables", json={"name": "Ana", "preset": preset}).get_json()
            guest = http.post(f"/tables/{host['table_id']}/seats", json={"name": "Bea"}).get_json()
            _tables.append({"id": host["table_id"], "tokens": [host["token"], guest["token"]]})
        last = _tables[-1]
        r = http.post(f"/tables/{last['id']}/moves", json={"type": "start"},
                      headers={"Authorization": f"Bearer {last['tokens'][0]}"})
        assert r.status_code == 200, r.get_json()
    return _tables


def _pick(case, salt: str) -> int:
    seen = f"{salt}:{case.operation.label}:{case.path_parameters}:{case.query}:{case.body}".encode()
    return int.from_bytes(hashlib.sha256(seen).digest()[:4], "big")


def _aim(case) -> None:
    """Most cases at a real table (deterministic: from the case's own data)."""
    if not case.path_parameters or "table_id" not in case.path_parameters:
        return
    n = _pick(case, "table")
    if n % 5 == 0:
        return  # a made-up table id: the 404s
    case.path_parameters["table_id"] = tables()[n % len(tables())]["id"]


@schema.auth(refresh_interval=None)
class RealTokens:
    """The token an operation's security asks for: the admin's, or a seat's of the aimed table
    (schemathesis itself then checks that a missing or a wrong token is refused)."""

    def get(self, case, ctx):
        return "tokens"

    def set(self, case, data, ctx):
        security = case.operation.definition.raw.get("security") or []
        wants = {name for entry in security for name in entry}
        table = next((t for t in tables() if t["id"] == (case.path_parameters or {}).get("table_id")), None)
        if "admin" in wants:
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {ADMIN}"}
        elif "player" in wants:
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {player_token()}"}
        elif "seat" in wants:
            token = table["tokens"][_pick(case, "seat") % 2] if table else "not-a-token"
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {token}"}


@pytest.fixture
def _no_dns(monkeypatch):
    """Notify URLs name made-up hosts: they resolve to a public address here, with no lookup."""
    real = socket.getaddrinfo

    def public(host, port, *args, **kwargs):
        try:
            return real(host, port, *args, flags=socket.AI_NUMERICHOST)
        except (socket.gaierror, UnicodeError, TypeError):
            return real("93.184.216.34", port, *args)

    monkeypatch.setattr(socket, "getaddrinfo", public)


@pytest.mark.usefixtures("_no_dns")
@schema.parametrize()
@settings(max_examples=EXAMPLES, derandomize=True, deadline=None, suppress_health_check=list(HealthCheck),
          database=None)
def test_the_server_does_what_its_openapi_document_says(case):
    _aim(case)
    excluded = []
    body = case.body if isinstance(case.body, dict) else {}
    if case.operation.path.endswith("/moves") and body.get("type") == "settings":
        # the values a table takes depend on its preset, which a move does not carry: the document
        # lists every value some preset takes, and the table refuses the others with a 400
        excluded.append(positive_data_acceptance)
    if case.operation.path == "/players/passkeys":
        # a credential's worth is its attestation, which no schema can say: a generated one is a forgery,
        # refused with a 400 (sign-in's, POST /sessions/passkey, is a 401 like a wrong password)
        excluded.append(positive_data_acceptance)
    if case.operation.path.endswith("/notify") and _private_literal(body.get("url")):
        excluded.append(positive_data_acceptance)  # a literal private address: refused, 400, by design
    case.call_and_validate(excluded_checks=excluded)


def _private_literal(url) -> bool:
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
        return not ipaddress.ip_address(host).is_global
    except (ValueError, TypeError, AttributeError):
        return False


# The one finding the contract answers on purpose: a table's analysis exists once someone asked for
# it, so GET /tables/{id}/analysis right after POST /tables is 404 not_found (shared/API.md v1.2).
# Schemathesis's stateful check ST302 reads every path below a created resource as created with it;
# the toml turns that check off for this operation, but `--checks all` on the command line wins.
KNOWN = "Not available with: `GET /tables/{table_id}/analysis`"


def _unexpected_failures(report: str) -> list[str]:
    """The failure blocks of a schemathesis report, but the one the contract answers on purpose."""
    if "FAILURES" not in report:
        return []
    blocks = re.split(r"\n\s*\d+\. Test Case ID: ", report.split("FAILURES", 1)[1].split("WARNINGS", 1)[0])[1:]
    if not blocks:  # a failure in a shape this parser does not know
        return [report]
    return [b for b in blocks if not (re.findall(r"^\s*- (ST\d+) ", b, re.M) == ["ST302"] and KNOWN in b)]


@pytest.mark.integration
def test_schemathesis_from_outside_with_every_check_finds_nothing(redis_server, tmp_path):
    """`schemathesis run --checks all` against `escoba serve`, as an outsider runs it (it had found 413,
    414 and 431 undocumented, a 400 on the socket route, and a 500 for a review version of 2^64)."""
    from ..sockets.test_sockets_served import Served

    cli = shutil.which("schemathesis", path=str(Path(sys.executable).parent)) or shutil.which("schemathesis")
    if cli is None:
        pytest.skip("the schemathesis command is not installed (pip install -e '.[test]')")
    server = Served(redis_server.url, ESCOBA_ADMIN_TOKEN=ADMIN, ESCOBA_RATE_LIMITS="off", ESCOBA_BOT_DELAY="0")
    try:
        out = subprocess.run(
            [cli, "--config-file", str(CONFIG), "run",
             f"http://127.0.0.1:{server.port}/openapi.json", "--checks", "all",
             "--max-examples", str(EXAMPLES), "--seed", "1", "--workers", "1", "--generation-database", "none",
             "-H", f"Authorization: Bearer {ADMIN}", "--no-color"],
            cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    finally:
        server.stop()
    report = out.stdout + out.stderr
    operations = sum(1 for ops in APP.test_client().get("/openapi.json").get_json()["paths"].values()
                     for method in ops if method != "parameters")
    assert not _unexpected_failures(report), report[-6000:]
    # every operation of the document selected and tested (schemathesis may leave /openapi.json itself out)
    selected = re.search(r"Selected: (\d+)/(\d+)", report)
    tested = re.search(r"Tested: (\d+)", report)
    assert selected and tested, report[-3000:]
    assert int(selected[1]) == int(selected[2]) == int(tested[1]) >= operations - 1, report[-3000:]
