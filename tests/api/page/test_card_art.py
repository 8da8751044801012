"""The card pictures (api/static/cards/): served with the page from this origin, each one the
page's cards.js asks for, none of them loading anything from elsewhere, their licence recorded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[3] / "api" / "static"
# what cards.js builds: /static/cards/french/<J|Q|K><D|H|S|C>.svg and /static/cards/spanish/<figure>.svg
ART = [f"french/{r}{s}.svg" for r in "JQK" for s in "DHSC"] + [f"spanish/{f}.svg" for f in ("sota", "caballo", "rey")]


@pytest.mark.parametrize("name", ART)
def test_each_picture_is_served_as_svg(client, name):
    r = client.http.get(f"/static/cards/{name}")
    assert r.status_code == 200, name
    assert r.mimetype == "image/svg+xml"
    assert r.data.lstrip().startswith(b"<svg")


@pytest.mark.parametrize("name", ART)
def test_no_picture_reaches_outside(name):
    text = (STATIC / "cards" / name).read_text()
    # namespaces are names, not requests; any other address would be one
    addresses = set(re.findall(r"""(?:href|src)\s*=\s*["']([^"'#][^"']*)""", text))
    assert not addresses, addresses
    assert "<script" not in text and "<image" not in text and "@import" not in text


def test_the_page_asks_for_exactly_these_pictures():
    js = (STATIC / "cards.js").read_text()
    assert 'const ART = "/static/cards";' in js
    assert "`${ART}/french/${p.index}${FRENCH_FILE_SUIT[p.suit]}.svg`" in js
    assert "`${ART}/spanish/${figure}.svg`" in js
    on_disk = {str(p.relative_to(STATIC / "cards")) for p in (STATIC / "cards").rglob("*.svg")}
    assert on_disk == set(ART)


def test_the_licence_is_recorded():
    text = (STATIC / "cards" / "LICENSE").read_text()
    assert "CC0 1.0 Universal" in text and "Adrian Kennard" in text
    assert "@heruka_urgyen/react-playing-cards 0.5.0" in text
