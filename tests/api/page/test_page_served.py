"""The page under ``escoba serve``, gunicorn's gevent worker, as production serves it (the other page
tests serve it from werkzeug's threads): two players' pages at one table, in Debian's chromium.

Under gevent a move made over one page's socket is written to the other page's socket by the mover's
greenlet itself (api/sockets/route.py ``_Direct``); under werkzeug's threads it always goes through
the socket's mailbox. So only here does a browser read the frames the direct way."""

from __future__ import annotations

import pytest

from ..browser import Page, http, my_turn, needs_chromium, open_table, play_turn, start, until
from ..served import Served

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

PLAYS = 6


@pytest.fixture(scope="module")
def served(redis_server):
    server = Served(redis_server.url, ESCOBA_RATE_LIMITS="off")  # two pages, one address
    yield server
    server.stop()


def _shown(page) -> dict:
    token = page.evaluate("(id) => JSON.parse(localStorage.getItem('escoba.table.' + id)).token",
                          page.url.rstrip("/").split("/t/")[-1])
    return {"version": int(page.get_attribute("body", "data-version")), "token": token,
            "hand": sorted(page.eval_on_selector_all("#hand .card", "cards => cards.map(c => c.dataset.card)")),
            "table": sorted(page.eval_on_selector_all("#table-cards .card", "cards => cards.map(c => c.dataset.card)"))}


def test_two_players_pages_hear_each_others_moves_written_by_the_movers_greenlet(served, browser):
    host, guest = Page(browser, "desktop"), Page(browser, "phone")
    try:
        table_id = open_table(host.page, served.url)
        guest.page.goto(host.page.input_value("#invite-url"))
        guest.page.fill("#join-name", "Bruno")
        guest.page.get_by_role("button", name="TAKE A SEAT").click()
        host.page.wait_for_selector(".waiting-seat:has-text('Bruno')")
        start(host.page)
        guest.page.wait_for_selector("#felt:not([hidden])")
        until(guest.page, "document.body.dataset.live === 'yes'", what="the guest's socket open")
        for p in (host.page, guest.page):
            p.evaluate("window.heldOn = true")
        direct_before = served.metric('escoba_socket_posts_total{way="direct"}')

        for _ in range(PLAYS):
            pages = (host.page, guest.page)
            for _wait in range(200):
                movers = [p for p in pages if my_turn(p)]
                if movers:
                    break
                host.page.wait_for_timeout(50)
            else:
                raise AssertionError("neither page came to its turn")
            [mover] = movers
            [other] = [p for p in pages if p is not mover]
            play_turn(mover, how="dom")
            moved_to = int(mover.get_attribute("body", "data-version"))
            # the other page draws it from its socket, never reloading
            until(other, f"Number(document.body.dataset.version) >= {moved_to}", what="the move heard")

        view = http("GET", f"{served.url}/tables/{table_id}")
        for p in (host.page, guest.page):
            until(p, f"Number(document.body.dataset.version) === {view['version']}", what="the last version")
            shown = _shown(p)
            own = http("GET", f"{served.url}/tables/{table_id}", token=shown["token"])
            assert shown["version"] == own["version"] == view["version"]
            assert shown["hand"] == sorted(own["hand"]) and shown["table"] == sorted(own["table_cards"])
        assert host.page.evaluate("window.heldOn") and guest.page.evaluate("window.heldOn")  # never reloaded
        direct = served.metric('escoba_socket_posts_total{way="direct"}') - direct_before
        assert direct >= PLAYS - 1, direct  # each play reached the other page the direct way (one may find it busy)
        assert not host.errors and not guest.errors, (host.errors, guest.errors)
    finally:
        host.close()
        guest.close()
