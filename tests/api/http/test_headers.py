"""Security headers on the page and on the API; the admin token only in the Authorization header."""

from __future__ import annotations

import pytest

from ..conftest import ADMIN


@pytest.mark.parametrize("path", ["/", "/t/abc", "/static/app.js", "/healthz", "/openapi.json", "/tables/nope"])
def test_every_answer_carries_the_security_headers(client, path):
    r = client.http.get(path)
    csp = r.headers["Content-Security-Policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["frame-ancestors"] == "'none'"
    assert directives["script-src"] == "'self'" and "unsafe" not in csp
    assert directives["style-src"] == "'self'" and directives["default-src"] == "'none'"
    assert r.headers["X-Content-Type-Options"] == "nosniff"
    assert r.headers["Referrer-Policy"] == "no-referrer"
    assert r.headers["X-Frame-Options"] == "DENY"


def test_the_page_has_no_inline_script_or_style(client):
    import re

    html = client.http.get("/").get_data(as_text=True)
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.S)
    assert scripts and all("src=" in attrs and not body.strip() for attrs, body in scripts)
    assert "<style" not in html and " style=" not in html
    assert not re.search(r"\son[a-z]+=", html)  # no inline event handlers


def test_the_admin_token_is_accepted_only_in_the_authorization_header(client):
    table_id = client.create()["table_id"]
    assert client.http.get(f"/admin/tables/{table_id}", headers=client.admin()).status_code == 200
    r = client.http.get(f"/admin/tables/{table_id}?token={ADMIN}")
    assert r.status_code == 401 and r.get_json()["error"]["code"] == "unauthorized"
    r = client.http.post("/tables", query_string={"token": ADMIN},
                         json={"name": "Ana", "preset": "selminha", "first_dealer": 1})
    assert r.status_code == 403


def test_a_seat_token_in_the_address_is_not_read_by_http(client):
    host = client.create()
    r = client.http.post(f"/tables/{host['table_id']}/moves?token={host['token']}", json={"type": "start"})
    assert r.status_code == 401
