"""The pictures at the top of the README, made by playing: docs/screenshot-phone.png (Escoba del 15
with the Spanish cards on a 390x844 phone) and docs/screenshot-desktop.png (Selminha's rules with the
French cards on a 1280x800 screen), each a four-player table at the reader's turn with a card
picked and the table cards it makes 15 with lit.

The deals are stacked (the operators' ``decks``) so each picture shows court cards on the felt and
in hand; the other three play from their own views' ``options`` over HTTP, as a client would. The
test also checks what it shows: one screen, nothing overlapping (test_screens.PROBLEMS), no console
error.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from ..browser import Page, full_deck, http, needs_chromium, seat_token, start, until
from .test_screens import PROBLEMS

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

DOCS = Path(__file__).resolve().parents[3] / "docs"

# the table's four, then the hands in play order (Bruno, Carla, Davi, then Ana who deals); each of
# the three plays the first card of their hand, which takes nothing, so seven cards lie on the felt
SHOTS = {
    "phone": {
        "size": (390, 844), "touch": True, "preset": "del15", "settings": {"target": 15},
        "deal": ["10o", "3c", "9e", "1b",  # Rey de oros, 3 de copas, Caballo de espadas, As de bastos
                 "8c", "2e", "6o", "10b", "4b", "5c", "9c", "3e", "4o", "7o", "8o", "5e"],
        "pick": "5e",  # 5 de espadas: a Rey, or the Caballo and the As
    },
    "desktop": {
        "size": (1280, 800), "touch": False, "preset": "selminha", "settings": {"target": 21},
        "deal": ["10c", "3b", "9o", "1e",  # K♥ 3♣ J♦ A♠
                 "8c", "2o", "6c", "10b", "4e", "5b", "9c", "3o", "4c", "10e", "8o", "5e"],
        "pick": "5e",
    },
}
CHAT = {"phone": ["¡Buenas!", "Vamos, compañero"], "desktop": ["Boa noite!", "Bora, parceiro"]}


def _others_play(base, table_id, tokens, until_seat=0):
    """Each other seat plays its first card from its own options (a capture if it has one)."""
    for _ in range(12):
        view = http("GET", f"{base}/tables/{table_id}")
        if view["turn"] == until_seat:
            return
        token = tokens[view["turn"]]
        mine = http("GET", f"{base}/tables/{table_id}", token=token)
        opt = mine["options"][0]
        assert not opt["captures"], opt  # the deal is stacked so that nobody takes before Ana
        move = {"type": "play", "card": opt["card"], "capture": []}
        http("POST", f"{base}/tables/{table_id}/moves", move, token)
    raise AssertionError("Ana's turn never came")


def _png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


@pytest.mark.parametrize("name", list(SHOTS))
def test_readme_screenshot(server, browser, name):
    shot = SHOTS[name]
    base = server.url
    w, h = shot["size"]
    extra = {"viewport": {"width": w, "height": h}, "device_scale_factor": 1}
    if shot["touch"]:
        extra.update(is_mobile=True, has_touch=True)
    body = {"name": "Ana", "preset": shot["preset"], "settings": shot["settings"], "first_dealer": 0,
            "table_name": "Mesa da Ana" if name == "desktop" else "Mesa de Ana",
            "decks": [full_deck(shot["deal"])]}
    host = http("POST", f"{base}/tables", body, token="page-admin")
    table_id = host["table_id"]
    tokens = {0: host["token"]}
    for who in ("Bruno", "Carla", "Davi"):
        seat = http("POST", f"{base}/tables/{table_id}/seats", {"name": who})
        tokens[seat["seat"]] = seat["token"]
    p = Page(browser, "phone" if shot["touch"] else "desktop", **extra)
    page = p.page
    try:
        seat_token(page, base, table_id, host["token"])
        page.goto(f"{base}/t/{table_id}")
        page.wait_for_selector("#waiting:not([hidden])")
        start(page)
        _others_play(base, table_id, tokens)
        for seat, text in zip((1, 2), CHAT[name], strict=True):
            http("POST", f"{base}/tables/{table_id}/chat", {"text": text}, tokens[seat])
        until(page, "!!document.querySelector('.seat.you.turn') && !window.escobaShowing()"
                    " && document.querySelectorAll('#chat-lines li').length === 2", what="Ana's turn shown")
        page.locator(f"#hand [data-card='{shot['pick']}']").click()
        page.wait_for_selector("#table-cards .card.lit")
        # the pictures drawn, the last play's glow faded, before the picture is taken
        until(page, "[...document.images, ...document.querySelectorAll('image')].length === 0 ||"
                    " !document.querySelector('.card.just-played')", what="the glow faded")
        page.wait_for_timeout(600)
        assert page.evaluate(PROBLEMS) == []
        DOCS.mkdir(exist_ok=True)
        out = DOCS / f"screenshot-{name}.png"
        page.screenshot(path=str(out))
        assert _png_size(out) == (w, h)
        assert not p.errors, p.errors
    finally:
        p.close()
