"""Every test carries exactly one tier (conftest.py gives them; .ci/run runs the unit tier first)."""

from __future__ import annotations

import pytest

from conftest import TIER_MARKS, TIERS

from . import redis_servers


def test_every_collected_test_carries_exactly_one_tier(request):
    marks = request.config.stash[TIER_MARKS]  # every test this run collected, before -m deselected any
    assert (request.node.nodeid, ["unit"]) in marks
    wrong = [(nodeid, tiers) for nodeid, tiers in marks if len(tiers) != 1]
    assert not wrong, f"{len(wrong)} tests without exactly one tier of {TIERS}: {wrong[:10]}"


def test_this_test_is_in_the_unit_tier_and_could_start_no_server(request, tmp_path):
    assert request.node.get_closest_marker("unit") is not None
    with pytest.raises(RuntimeError, match="in the unit tier"):
        redis_servers.start_plain(tmp_path)


def test_ci_runs_the_readmes_test_command_the_unit_tier_first():
    """README says what .ci/run runs: its pytest commands are .ci/run's, in the same order, and the
    unit tier goes first (runs of part of the suite under other settings may follow in .ci/run)."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    readme = (root / "README.md").read_text()
    block = readme[readme.index("pip install -c constraints.txt -e '.[test]' && ruff check ."):]
    block = block[:block.index("\n\n")].replace("\\\n", " ")
    said = re.findall(r"python -m pytest [^&\n]*?(?=\s*(?:&&|$))", block)
    # the tiers' runs, wherever a step runs them (the second inside a function, beside the stock rerun)
    ci = re.findall(r'python -m pytest -q -n \d+ -m (?:unit|"not unit")', (root / ".ci" / "run").read_text())
    assert said == ['python -m pytest -q -n 2 -m unit', 'python -m pytest -q -n 4 -m "not unit"'], said
    assert ci == said, ci
