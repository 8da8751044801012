"""Export and replay: a log replays to the live state at every version; broken logs are named."""

from __future__ import annotations

import json
import random

import pytest

import engine
from events import autoplay, export, replay
from events.records import LogError
from events.service import TableService


@pytest.fixture
def played(fake_redis):
    """A table played through the service: (service, table id, {version: live state})."""
    svc = TableService(fake_redis, rng=random.Random(12))
    tid = autoplay.new_table(svc, players=4, preset="selminha")
    live = {}
    autoplay.play(svc, tid, random.Random(12), until_version=400,
                  on_outcome=lambda o: live.__setitem__(o.version, o.state))
    return svc, tid, live


def test_exported_log_replays_to_the_live_state_at_every_version(played, tmp_path):
    svc, tid, live = played
    path = tmp_path / "log.jsonl"
    path.write_text(export.export_table(svc, tid))
    lines = path.read_text().splitlines()
    assert len(lines) == svc.version(tid) and all(json.loads(x)["version"] for x in lines)
    records = export.read_file(path)
    assert records == svc.records(tid)
    at = {}

    def step(record, state):
        at[record["version"]] = state.copy()

    final = replay.replay_records(records, on_step=step)
    for version, state in live.items():
        assert at[version] == state, version
    assert final == svc.load(tid)


def test_cli_file_json_until(played, tmp_path, capsys):
    svc, tid, live = played
    path = tmp_path / "log.jsonl"
    export.write_file(path, svc.records(tid))
    assert replay.main(["--file", str(path), "--json"]) == 0
    final = live[max(live)]
    expected = json.loads(json.dumps(engine.view(final, None, full=True)))
    assert json.loads(capsys.readouterr().out) == expected
    version = max(v for v in live if v <= 60)
    assert replay.main(["--file", str(path), "--until", str(version)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("v1 ") and "TableOpened" in out[0]
    assert out[1].strip().startswith("status=waiting")
    assert out[-1].startswith(f"version {version}: status=")
    assert f"stock={len(live[version].stock)}" in out[-1]
    assert not any(line.startswith(f"v{version + 1} ") for line in out)


def test_cli_reads_a_table_from_redis(played, fake_redis, monkeypatch, capsys):
    svc, tid, live = played
    import redis

    monkeypatch.setattr(redis.Redis, "from_url", classmethod(lambda cls, url, **kw: fake_redis))
    monkeypatch.setenv("REDIS_URL", "redis://example.invalid:6379/0")
    assert replay.main([tid, "--until", "5"]) == 0
    assert "version 5:" in capsys.readouterr().out
    assert replay.main(["no-such-table"]) == 1
    assert "no such table" in capsys.readouterr().err


def _broken(records, tmp_path, change) -> tuple[int, str]:
    lines = [json.dumps(r) for r in records]
    lines = change(lines)
    path = tmp_path / "broken.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _first(records, kind):
    return next(i for i, r in enumerate(records) if r["type"] == kind)


def _set(records, i, **changes):
    def change(lines):
        r = json.loads(lines[i])
        for k, v in changes.items():
            if k.startswith("data."):
                r["data"][k[5:]] = v
            else:
                r[k] = v
        lines[i] = json.dumps(r)
        return lines
    return change


@pytest.mark.parametrize("case", ["gap", "unknown_type", "bad_data", "not_in_hand", "not_json",
                                  "wrong_turn", "duplicate"])
def test_broken_logs_are_reported_with_their_version(played, tmp_path, capsys, case):
    svc, tid, _ = played
    records = svc.records(tid)
    play = _first(records, "CardPlayed")
    v = records[play]["version"]
    hand = json.loads(json.dumps(records[play]))
    if case == "gap":
        change = lambda lines: lines[:play] + lines[play + 1:]  # noqa: E731
    elif case == "unknown_type":
        change = _set(records, play, type="CardJuggled")
    elif case == "bad_data":
        change = _set(records, play, **{"data.card": "99x"})
    elif case == "not_in_hand":
        # a real card, but one that seat does not hold: only folding finds it
        state = svc.load(tid, until=v - 1)
        other = next(c for s, h in state.hands.items() if s != hand["data"]["seat"] for c in h)
        change = _set(records, play, **{"data.card": other, "data.captured": []})
    elif case == "not_json":
        def change(lines):
            lines[play] = "{not json"
            return lines
    elif case == "wrong_turn":
        change = _set(records, play, **{"data.seat": (hand["data"]["seat"] + 1) % 4})
    else:
        change = lambda lines: lines[:play + 1] + [lines[play]] + lines[play + 1:]  # noqa: E731
    path = _broken(records, tmp_path, change)
    assert replay.main(["--file", str(path)]) == 1
    err = capsys.readouterr().err
    expect = v + 1 if case == "duplicate" else v
    assert f"log breaks at version {expect}:" in err, err
    assert "Traceback" not in err
    with pytest.raises(LogError) as exc:
        replay.replay_records(export.read_file(path))
    assert exc.value.version == expect


def test_service_load_names_a_broken_log(fake_redis):
    svc = TableService(fake_redis, rng=random.Random(1), cache_size=0, snapshot_every=0)
    tid = autoplay.new_table(svc)
    key = f"table:{{{tid}}}:events"
    fake_redis.xadd(key, {"e": json.dumps({"type": "Nope", "v": 1, "version": 3, "at": "x",
                                           "actor": "system", "data": {}})}, id="3-0")
    with pytest.raises(LogError) as exc:
        svc.load(tid)
    assert exc.value.version == 3


def test_cli_usage_errors(capsys, tmp_path):
    assert replay.main([]) == 2
    assert replay.main(["--file", str(tmp_path / "missing.jsonl")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_cli_replays_a_compacted_table_from_redis_as_before(played, fake_redis, monkeypatch, capsys):
    from events import compaction

    svc, tid, live = played
    import redis

    monkeypatch.setattr(redis.Redis, "from_url", classmethod(lambda cls, url, **kw: fake_redis))
    monkeypatch.setenv("REDIS_URL", "redis://example.invalid:6379/0")
    assert replay.main([tid, "--json"]) == 0
    before = capsys.readouterr().out
    assert compaction.compact(fake_redis, tid, svc.version(tid)) is not None
    assert not fake_redis.exists(f"table:{{{tid}}}:events")
    assert replay.main([tid, "--json"]) == 0
    assert capsys.readouterr().out == before
