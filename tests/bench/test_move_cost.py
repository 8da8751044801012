"""bench/move_cost.py plays its moves as the socket path decides them, and says what they cost."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_it_plays_every_move_it_times_and_prints_their_cpu():
    done = subprocess.run([sys.executable, "bench/move_cost.py", "--tables", "2", "--moves", "4", "--redis", "memory",
                           "--profile", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r"^(\d+) socket moves on 2 tables, .* \(memory Redis\) .*: (\d+) us of CPU per move", done.stdout,
                      re.M)
    assert found and int(found.group(1)) == 8 and int(found.group(2)) > 0, done.stdout[-2000:]
    assert "api/sockets/moves.py" in done.stdout and "(answer)" in done.stdout  # the profile of the moves after
