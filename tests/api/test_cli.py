"""The ``escoba`` command's help, its one Redis flag, and ``escoba replay --server``."""

from __future__ import annotations

import dataclasses
import re
import threading

import pytest
from werkzeug.serving import make_server

from api.app import create_app
from api.cli import main
from events.config import Config

from .conftest import ADMIN

COMMANDS = ("serve", "dev", "worker", "reconcile", "replay")


def _help(capsys, command) -> str:
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"]) if command not in ("replay",) else _replay_help()
    assert exc.value.code in (0, None)
    return capsys.readouterr().out


def _replay_help():
    code = main(["replay", "--help"])
    raise SystemExit(code)


def _options(text: str) -> dict[str, str]:
    """Each listed option (bar -h) and its help text, joined across wrapped lines."""
    body = text.split("options:", 1)[1]
    body = body.split("\n\n", 1)[0]
    found, name = {}, None
    for line in body.splitlines():
        m = re.match(r"\s{2}(--[\w-]+)(.*)", line)
        if m:
            name = m.group(1)
            found[name] = m.group(2)
        elif name:
            found[name] += " " + line.strip()
    found.pop("--help", None)
    return {k: " ".join(v.split()) for k, v in found.items()}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_of_every_command_says_its_meaning_and_default(capsys, command):
    text = _help(capsys, command)
    assert "``" not in text and ":func:" not in text  # no raw doc markup
    options = _options(text)
    assert options, text
    for name, help_text in options.items():
        assert "(default:" in help_text, f"{command} {name}: {help_text!r}"
    assert "--redis-url" in options  # the one name of the Redis flag
    assert "--redis " not in text and "--redis\n" not in text  # the old name is hidden


def test_the_old_redis_flag_still_works(monkeypatch):
    seen = {}
    monkeypatch.setattr("api.server.dev.run_dev", lambda host, port, url, **kw: seen.update(url=url) or 0)
    assert main(["dev", "--redis", "redis://x:1/0"]) == 0 and seen["url"] == "redis://x:1/0"
    assert main(["dev", "--redis-url", "redis://y:2/0"]) == 0 and seen["url"] == "redis://y:2/0"


@pytest.fixture
def server(fake_redis):
    config = dataclasses.replace(Config(), admin_token=ADMIN, bot_delay=0.0)
    app = create_app(fake_redis, config)
    srv = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{srv.server_port}", app
    srv.shutdown()
    srv.server_close()


def test_replay_reads_a_running_servers_admin_log(server, capsys, monkeypatch):
    url, app = server
    http = app.test_client()
    host = http.post("/tables", json={"name": "Ana", "preset": "del15"}).get_json()
    tid = host["table_id"]
    http.post(f"/tables/{tid}/seats", json={"name": "Bea"})
    http.post(f"/tables/{tid}/moves", json={"type": "start"}, headers={"Authorization": f"Bearer {host['token']}"})
    version = http.get(f"/tables/{tid}").get_json()["version"]

    assert main(["replay", tid, "--server", url, "--token", ADMIN]) == 0
    out = capsys.readouterr().out
    assert len(re.findall(r"^v\d+ ", out, re.M)) == version
    assert f"version {version}: status=playing" in out and "RoundDealt" in out

    monkeypatch.setenv("ESCOBA_ADMIN_TOKEN", ADMIN)  # the token from the environment
    assert main(["replay", tid, "--server", url, "--json"]) == 0
    assert '"hands"' in capsys.readouterr().out

    assert main(["replay", tid, "--server", url, "--token", "wrong"]) == 1
    assert "answered 401" in capsys.readouterr().err
    assert main(["replay", "nosuch00", "--server", url, "--token", ADMIN]) == 1
    assert "answered 404" in capsys.readouterr().err
    monkeypatch.delenv("ESCOBA_ADMIN_TOKEN")
    assert main(["replay", tid, "--server", url]) == 1
    assert "admin token" in capsys.readouterr().err
