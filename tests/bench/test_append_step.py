"""bench/append_step.py appends through the store's own step, and prints its cost beside the plain writes."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("redis-server") is None, reason="the bench starts a redis-server")


def test_it_runs_both_ways_and_prints_the_ratio():
    done = subprocess.run([sys.executable, "bench/append_step.py", "--tables", "2", "--moves", "3", "--rounds", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    ways = re.findall(r"^(step|multi) *: Redis user +([\d.]+) us, system +([\d.]+) us per append", done.stdout, re.M)
    assert [w for w, *_ in ways] == ["step", "multi"], done.stdout
    found = re.search(r"^the step's Redis user time per append: ([\d.]+) us, (\S+)", done.stdout, re.M)
    assert found and float(found.group(1)) >= 0, done.stdout
    assert found.group(2).endswith("x") or found.group(2) == "(no", done.stdout


def test_parts_runs_the_whole_step_and_the_step_without_each_part():
    done = subprocess.run([sys.executable, "bench/append_step.py", "--parts", "--tables", "2", "--moves", "3",
                           "--rounds", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    ways = re.findall(r"^(the whole step|without [\w-]+) *: Redis user +[\d.]+ us", done.stdout, re.M)
    assert ways == ["the whole step", "without read-back", "without listeners", "without idempotency",
                    "without count", "without row"], done.stdout
    costs = re.findall(r"^  ([\w-]+) +(-?[\d.]+) us an append", done.stdout, re.M)
    assert [name for name, _ in costs] == ["read-back", "listeners", "idempotency", "count", "row"], done.stdout
