"""The home's account and "your games" list (docs/api.md v1.3 "Players") in Debian's chromium: sign up,
sign out and sign in by password; a wrong password said as an error; a passkey registered and used
through Chromium's virtual authenticator; the list in each language with your turn first and the tab
title counting it; a guest's kept tables listed and claimed on sign-in; axe clean with the list."""

from __future__ import annotations

import secrets

import pytest

from ..browser import Page, axe_check, http, needs_chromium, say, shot, until, words

pytestmark = [pytest.mark.browser, needs_chromium]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytest.importorskip("axe_playwright_python", reason="axe-playwright-python is not installed")

LANGUAGES = ("en", "pt-BR", "es")
PASSWORD = "correct horse battery"


def unique(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(3)}"


def signed_in(page, name: str) -> None:
    until(page, "!document.getElementById('account-in').hidden", what="signed in")
    assert page.locator("#account-name").text_content() == name
    assert page.locator("#account-name").get_attribute("href").split("?")[0] == f"/p/{name}"
    assert page.evaluate("JSON.parse(localStorage.getItem('escoba.player')).name") == name


def signed_out(page) -> None:
    until(page, "document.getElementById('account-in').hidden && !document.getElementById('account-out').hidden",
          what="signed out")
    assert page.evaluate("localStorage.getItem('escoba.player')") is None


def open_panel(page, cat) -> None:
    if page.locator("#account-out").get_attribute("open") is None:
        page.get_by_text(cat["account.open"]).click()


def test_sign_up_out_and_in_by_password_and_a_wrong_password(server, browser):
    cat = words("en")
    name = unique("ana")
    p = Page(browser, allow=("401",))
    page = p.page
    try:
        page.goto(f"{server.url}/")
        page.wait_for_selector("#home:not([hidden])")
        open_panel(page, cat)
        page.fill("#account-user", name)
        page.fill("#account-password", PASSWORD)
        page.get_by_role("button", name=cat["account.sign_up"]).click()
        signed_in(page, name)
        token = page.evaluate("JSON.parse(localStorage.getItem('escoba.player')).token")
        assert http("GET", f"{server.url}/me", token=token)["name"] == name

        # the page signs out here at once and tells the server after: wait for the server's answer
        with page.expect_response(lambda r: r.request.method == "DELETE" and r.url.endswith("/sessions")) as ended:
            page.get_by_role("button", name=cat["account.sign_out"]).click()
        assert ended.value.status == 204, ended.value.status
        signed_out(page)
        # that session is over at the server too
        with pytest.raises(AssertionError, match="401"):
            http("GET", f"{server.url}/me", token=token)

        open_panel(page, cat)
        page.fill("#account-user", name.upper())
        page.fill("#account-password", "not the password")
        page.get_by_role("button", name=cat["account.sign_in"]).click()
        until(page, "!document.getElementById('account-error').hidden", what="the error")
        assert page.locator("#account-error").text_content() == cat["account.wrong"]
        axe_check(page, "the home's sign-in form with its error")
        assert page.evaluate("localStorage.getItem('escoba.player')") is None

        page.fill("#account-password", PASSWORD)
        page.get_by_role("button", name=cat["account.sign_in"]).click()
        signed_in(page, name)
        assert page.locator("#account-error").is_hidden()
        # signed in, a table opened here seats the account, under its name, with the player token
        page.get_by_role("button", name="OPEN A TABLE").click()
        assert page.input_value("#create-name") == name
        # signed in, a rated game is offered (a guest is not: tests/api/page/test_page.py). The form's settings
        # are built once the click's handler has the presets (a fetch): wait for them, all built at once
        page.wait_for_selector("#create-settings select[data-setting]", state="attached")
        assert page.locator("#create-settings select[data-setting=rated]").count() == 1
        page.get_by_role("button", name="CREATE INVITE").click()
        page.wait_for_selector("#waiting:not([hidden])")
        table_id = page.url.rstrip("/").split("/t/")[-1]
        player = page.evaluate("JSON.parse(localStorage.getItem('escoba.player')).token")
        view = http("GET", f"{server.url}/tables/{table_id}", token=player)
        assert view["you"] == 0 and view["seats"][0]["account"] and view["seats"][0]["name"] == name
        assert p.errors == [], p.errors
    finally:
        p.close()


def test_a_passkey_registered_then_used_to_sign_in(server, browser):
    cat = words("en")
    name = unique("pia")
    base = server.url.replace("127.0.0.1", "localhost")  # a relying party id is a host name, not an address
    p = Page(browser)
    page = p.page
    try:
        cdp = p.ctx.new_cdp_session(page)
        cdp.send("WebAuthn.enable")
        added = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": {
            "protocol": "ctap2", "transport": "internal", "hasResidentKey": True,
            "hasUserVerification": True, "isUserVerified": True}})
        page.goto(f"{base}/")
        page.wait_for_selector("#home:not([hidden])")
        open_panel(page, cat)
        page.fill("#account-user", name)
        page.fill("#account-password", PASSWORD)
        page.get_by_role("button", name=cat["account.sign_up"]).click()
        signed_in(page, name)
        page.get_by_role("button", name=cat["account.add_passkey"]).click()
        until(page, f"document.getElementById('account-status').textContent === {cat['account.passkey_added']!r}",
              what="the passkey added")
        creds = cdp.send("WebAuthn.getCredentials", {"authenticatorId": added["authenticatorId"]})["credentials"]
        assert len(creds) == 1 and creds[0]["isResidentCredential"]

        page.get_by_role("button", name=cat["account.sign_out"]).click()
        signed_out(page)
        open_panel(page, cat)
        page.fill("#account-user", "")  # a discoverable credential: no name typed
        page.get_by_role("button", name=cat["account.passkey"]).click()
        signed_in(page, name)
        token = page.evaluate("JSON.parse(localStorage.getItem('escoba.player')).token")
        assert http("GET", f"{server.url}/me", token=token)["name"] == name
        creds = cdp.send("WebAuthn.getCredentials", {"authenticatorId": added["authenticatorId"]})["credentials"]
        assert creds[0]["signCount"] >= 1

        # an account with no password: its passkey is made as it signs up, and signs it in by name
        page.get_by_role("button", name=cat["account.sign_out"]).click()
        signed_out(page)
        other = unique("kid")
        open_panel(page, cat)
        page.fill("#account-user", other)
        page.fill("#account-password", "")
        page.get_by_role("button", name=cat["account.sign_up"]).click()
        signed_in(page, other)
        until(page, f"document.getElementById('account-status').textContent === {cat['account.passkey_added']!r}",
              what="the new account's passkey")
        page.get_by_role("button", name=cat["account.sign_out"]).click()
        signed_out(page)
        open_panel(page, cat)
        page.fill("#account-user", other)  # two passkeys here: the name picks its own
        page.get_by_role("button", name=cat["account.passkey"]).click()
        signed_in(page, other)
        assert p.errors == [], p.errors
    finally:
        p.close()


def _table_at(base, token, mine: bool) -> str:
    """A started two-player table of the account and a guest, at the account's turn (`mine`) or the guest's."""
    made = http("POST", f"{base}/tables", {"preset": "del15", "table_name": unique("mesa")}, token=token)
    guest = http("POST", f"{base}/tables/{made['table_id']}/seats", {"name": "Bea"})
    table_id = made["table_id"]
    http("POST", f"{base}/tables/{table_id}/moves", {"type": "start"}, token=token)
    for _ in range(3):
        view = http("GET", f"{base}/tables/{table_id}", token=token)
        if (view["turn"] == view["you"]) == mine:
            return table_id
        mover = token if view["turn"] == view["you"] else guest["token"]
        option = http("GET", f"{base}/tables/{table_id}", token=mover)["options"][0]
        http("POST", f"{base}/tables/{table_id}/moves", {
            "type": "play", "card": option["card"], "capture": option["captures"][0] if option["captures"] else []},
            token=mover)
    raise AssertionError("the turn did not come round")


def test_your_games_in_each_language_your_turn_first(server, browser):
    me = http("POST", f"{server.url}/players", {"name": unique("eva"), "password": PASSWORD})
    yours = _table_at(server.url, me["token"], mine=True)
    theirs = _table_at(server.url, me["token"], mine=False)
    # theirs changed last: by last change alone it would come first
    http("POST", f"{server.url}/tables/{theirs}/chat", {"text": "hola"}, token=me["token"])
    rows = http("GET", f"{server.url}/me/tables", token=me["token"])["tables"]
    assert [r["table_id"] for r in rows] == [yours, theirs]
    names = {r["table_id"]: r["name"] for r in rows}
    for lang in LANGUAGES:
        cat = words(lang)
        p = Page(browser, "phone" if lang == "pt-BR" else "desktop")
        page = p.page
        try:
            page.goto(f"{server.url}/?lang={lang}")  # a second device: only the player token is here
            page.evaluate("(a) => localStorage.setItem('escoba.player', JSON.stringify(a))", me)
            page.reload()
            until(page, "document.querySelectorAll('#continue-list li').length === 2", what=f"the list, {lang}")
            items = page.locator("#continue-list li")
            assert [items.nth(i).get_attribute("data-table") for i in range(2)] == [yours, theirs]
            first, second = items.nth(0).inner_text(), items.nth(1).inner_text()
            assert names[yours] in first and cat["mygames.your_turn"] in first
            assert "your-turn" in items.nth(0).get_attribute("class")
            assert names[theirs] in second and cat["mygames.their_turn"] in second
            assert "Bea" in first and me["name"] in first
            assert say(cat, "mygames.waited", lang, time=say(cat, "mygames.minutes", lang, count=0)) in second
            # END GAME: PLAYER AWAY's time at the guest's turn; at yours, when the others may end it
            assert cat["mygames.away_at"].split("{time}")[0] in second
            assert cat["mygames.you_away_at"].split("{time}")[0] in first
            assert page.title() == say(cat, "mygames.tab_title", lang, count=1, title=cat["page.title"])
            assert page.get_by_role("heading", name=cat["home.continue.title"]).is_visible()
            axe_check(page, f"the home with the list, {lang}")
            shot(page, f"home-my-games-{lang}")
            # a row opens its table with the account's token: seated, not a spectator
            page.get_by_role("link", name=names[yours]).click()
            page.wait_for_selector("#felt:not([hidden])")
            until(page, f"location.pathname === '/t/{yours}'")
            until(page, "document.body.dataset.role === 'player' && !!document.querySelector('.seat.you')",
                  what="seated")
            assert p.errors == [], p.errors
        finally:
            p.close()


def test_a_guests_tables_listed_then_claimed_on_sign_in(server, browser):
    cat = words("en")
    p = Page(browser)
    page = p.page
    try:
        page.goto(f"{server.url}/")
        page.get_by_role("button", name="OPEN A TABLE").click()
        page.fill("#create-name", "Gus")
        page.fill("#create-table-name", "Guest table")
        page.get_by_role("button", name="CREATE INVITE").click()
        page.wait_for_selector("#waiting:not([hidden])")
        table_id = page.url.rstrip("/").split("/t/")[-1]
        page.goto(f"{server.url}/")
        until(page, "document.querySelectorAll('#continue-list li').length === 1", what="the guest's list")
        assert page.locator("#continue-list li").first.get_attribute("data-table") == table_id
        assert cat["mygames.waiting"] in page.locator("#continue-list").inner_text()
        assert page.title() == cat["page.title"]  # nothing at your turn

        account = http("POST", f"{server.url}/players", {"name": unique("gus"), "password": PASSWORD})
        open_panel(page, cat)
        page.fill("#account-user", account["name"])
        page.fill("#account-password", PASSWORD)
        page.get_by_role("button", name=cat["account.sign_in"]).click()
        signed_in(page, account["name"])
        # claimed: the account's own list holds it, under the account's name
        # (the guest's row stays shown until the claim is answered and the account's list drawn)
        until(page, f"document.getElementById('continue-list').innerText.includes({account['name']!r})",
              what="the list redrawn")
        assert page.locator("#continue-list li").count() == 1
        rows = http("GET", f"{server.url}/me/tables", token=account["token"])["tables"]
        assert [r["table_id"] for r in rows] == [table_id]
        assert rows[0]["players"] == [account["name"]]
        assert p.errors == [], p.errors
    finally:
        p.close()
