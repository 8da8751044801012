"""The page's own routes: the favicon every browser asks for, and the presets the create form starts from."""

from engine.rules import OFFERED, PRESETS


def test_favicon_is_served(client):
    r = client.http.get("/favicon.ico")
    assert r.status_code == 200
    assert r.mimetype == "image/svg+xml"
    assert b"<svg" in r.data


def test_presets_are_each_presets_own_defaults(client):
    r = client.http.get("/presets")
    assert r.status_code == 200
    presets = r.get_json()["presets"]
    assert set(presets) == set(PRESETS)
    for name, p in presets.items():
        assert p["defaults"] == PRESETS[name].as_dict()
        assert p["offered"] == {k: list(v) for k, v in OFFERED[name].items()}
    # the defects the page had: del15 plays to 15, both extras off, 30 is two escobas only if split
    d = presets["del15"]["defaults"]
    assert (d["target"], d["all_coins_extra"], d["all_sevens_extra"], d["opening_thirty"]) == (
        15, False, False, "two_escobas_if_split")


def test_the_page_and_its_modules_are_served(client):
    page = client.http.get("/t/abc").get_data(as_text=True)
    assert '<script type="module" src="/static/main.js"></script>' in page
    assert '<script type="module" src="/static/pairing.js"></script>' in page  # PLAY NOW and the lobby (issue 56)
    assert "style=" not in page and "onclick" not in page  # nothing the strict CSP would refuse
    for name in ("main.js", "state.js", "table.js", "cards.js", "motion.js", "sockets.js", "chat.js",
                 "forms.js", "sound.js", "hooks.js", "pairing.js", "style.css", "favicon.svg"):
        assert client.http.get(f"/static/{name}").status_code == 200, name
