"""An installable page (issue 57): the web app manifest and its icons, linked from the table page and the
review, read by chromium with no manifest error and no installability error (but the test's own: its
browser contexts are incognito-like)."""

from __future__ import annotations

import json
import struct
import urllib.request

import pytest

from ..browser import Page, needs_chromium

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


def _get(url: str) -> tuple[str, bytes]:
    with urllib.request.urlopen(url, timeout=10) as res:
        return res.headers.get("Content-Type", ""), res.read()


def test_the_manifest_and_its_icons(server):
    _, body = _get(f"{server.url}/static/manifest.webmanifest")
    manifest = json.loads(body)
    assert manifest["start_url"] == "/" and manifest["scope"] == "/" and manifest["display"] == "standalone"
    sizes = set()
    for icon in manifest["icons"]:
        kind, data = _get(f"{server.url}{icon['src']}")
        assert kind.startswith(icon["type"]), (icon, kind)
        if icon["type"] == "image/png":
            assert data[:8] == b"\x89PNG\r\n\x1a\n"
            width, height = struct.unpack(">II", data[16:24])
            assert f"{width}x{height}" == icon["sizes"], icon
            sizes.add(icon["sizes"])
    assert {"192x192", "512x512"} <= sizes
    assert any("maskable" in icon.get("purpose", "") for icon in manifest["icons"])


@pytest.mark.parametrize("path", ["/", "/static/rules.html"])
def test_chromium_finds_the_page_installable(server, browser, path):
    p = Page(browser, "desktop")
    page = p.page
    try:
        page.goto(f"{server.url}{path}")
        page.wait_for_load_state("load")
        cdp = page.context.new_cdp_session(page)
        manifest = cdp.send("Page.getAppManifest")
        assert manifest.get("url", "").endswith("/static/manifest.webmanifest"), manifest
        assert manifest.get("errors") == [], manifest.get("errors")
        errors = [e["errorId"] for e in cdp.send("Page.getInstallabilityErrors")["installabilityErrors"]]
        assert [e for e in errors if e != "in-incognito"] == [], errors
        assert not p.errors, p.errors
    finally:
        p.close()
