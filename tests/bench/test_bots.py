"""bench/bots.py's same-games mode: Luna's budget counted in plays, her chance her own, --compare's pairing."""

from __future__ import annotations

import pytest

from bench import bots
from engine.bots import luna


@pytest.fixture(autouse=True)
def one_round(monkeypatch):
    monkeypatch.setattr(bots, "MAX_ROUNDS", 1)  # a game of one round: fast


def job(g: int, *changed: str, opponent: str = "carmen") -> bots.Job:
    return bots.Job("del15", "luna", opponent, g, "t", None, 2000.0, True, plays_budget=2, luna=changed)


def same(result: dict) -> tuple:
    """What a game played: every command (its CRC), each round's points, the result (not its times)."""
    return result["trace"], result["diffs"], result["result"]


def test_the_same_job_plays_the_same_game():
    first = [bots._one_game(job(g, opponent="tito")) for g in range(2)]
    again = [bots._one_game(job(g, opponent="tito")) for g in range(2)]
    assert [same(r) for r in first] == [same(r) for r in again]
    assert first[0]["trace"] != first[1]["trace"]  # the seats swapped: another game


def test_a_setting_that_cannot_matter_changes_nothing(monkeypatch, capsys):
    # MARGIN is the share of a CPU budget: with no clock the plays are counted, and it is unread
    seen = []
    choose = luna.choose

    def spy(*args, **kwargs):
        seen.append(luna.MARGIN)
        return choose(*args, **kwargs)

    monkeypatch.setattr(luna, "choose", spy)
    before = luna.MARGIN
    main = [bots._one_game(job(g)) for g in range(4)]
    assert set(seen) == {before}
    seen.clear()
    changed = [bots._one_game(job(g, "MARGIN=0.5")) for g in range(4)]
    assert set(seen) == {0.5}  # set in the job ...
    assert before == luna.MARGIN  # ... and only there
    assert [same(r) for r in changed] == [same(r) for r in main]
    assert bots.field_gap(changed, main) == (0.0, 0.0, 0.0)
    assert {r["luna"] for r in changed} == {"MARGIN=0.5"}
    bots.report_compare(main + changed, ["del15"], "MARGIN=0.5")
    out = capsys.readouterr().out
    assert "changed-main +0.000 [95% +0.000..+0.000]  same games 4/4" in out


def test_settings_are_parsed_by_their_type():
    assert bots.luna_setting("POINTS_WEIGHT=1") == ("POINTS_WEIGHT", 1.0)
    assert bots.luna_setting("STYLE_PRIOR=0.5,0.2,0.2,0.1") == ("STYLE_PRIOR", (0.5, 0.2, 0.2, 0.1))
    with pytest.raises(ValueError):
        bots.luna_setting("NO_SUCH=1")
