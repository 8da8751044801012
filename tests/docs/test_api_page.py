"""docs/api.md, the project's contract page, is kept in step with /openapi.json: every operation the
server documents is on the page, and every operation on the page is served and documented."""

from __future__ import annotations

import re
from pathlib import Path

from api.http.openapi import build_spec

PAGE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
# a table row whose first cell is one operation: | `GET /tables/{id}` | ...
ROW = re.compile(r"^\| `(GET|POST|PUT|PATCH|DELETE) (/[^`]*)` \|", re.M)
# operations on the page that are not served yet (none today); a served one must leave this set
PENDING: set[tuple[str, str]] = set()


def page_operations() -> set[tuple[str, str]]:
    return {(method, path.replace("{id}", "{seek_id}" if path.startswith("/seeks/") else "{table_id}"))
            for method, path in ROW.findall(PAGE.read_text())}


def served_operations() -> set[tuple[str, str]]:
    return {(method.upper(), path) for path, operations in build_spec()["paths"].items()
            for method in operations if method != "parameters"}


def test_every_operation_of_openapi_is_on_the_contract_page():
    missing = served_operations() - page_operations()
    assert not missing, f"served and in /openapi.json, but not in docs/api.md: {sorted(missing)}"


def test_every_operation_on_the_contract_page_is_served():
    assert not PENDING & served_operations(), "served now: take them out of PENDING"
    extra = page_operations() - served_operations() - PENDING
    assert not extra, f"in docs/api.md, but not in /openapi.json: {sorted(extra)}"


def test_the_page_and_the_document_say_the_same_version():
    assert build_spec()["info"]["version"] == "1.3.0"
    assert PAGE.read_text().startswith("# The Escoba table server's API, v1.3\n")
