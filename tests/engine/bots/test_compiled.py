"""Luna's simulator and her model of people, compiled by mypyc (setup.py), decide exactly as
their Python source does.

Each side plays the same games in a process of its own: Luna (her budget counted in
plays, so no clock) against Carmen and against Tito at two- and four-seat tables, every
preset, her chance seeded per decision. One process imports the simulator as installed
(the compiled extensions where the build made them), the other is made to load
``engine/bots/sim.py`` and ``engine/bots/people.py`` themselves. Every decision of every game must be the same.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# the other process: the .py source of the compiled modules, ahead of their extensions
_SOURCE_FIRST = "from bench.compiled import source_first\nsource_first()\n"

_GAMES = """
import json, random, zlib
import engine.bots.people as people
import engine.bots.sim as sim
from engine.bots import choose, luna
from engine.bots.match import play_game
out = {"file": sim.__file__, "people": people.__file__, "games": []}
for n, (preset, bots) in enumerate([("selminha", ["luna", "carmen"]), ("del15", ["luna", "tito"]),
                                     ("cardgames", ["carmen", "luna"]), ("del15", ["luna", "tito", "carmen", "tito"])]):
    made = []
    def chooser(bot, view, rng):
        if bot != "luna":
            return choose(bot, view, rng)
        command = luna.choose(view, random.Random(f"{n}:{len(made)}"), budget_ms=8)
        made.append(json.dumps(command, sort_keys=True))
        return command
    state = play_game(preset, bots, random.Random(n), chooser=chooser, max_rounds=2)
    out["games"].append({"decisions": len(made), "crc": zlib.crc32("".join(made).encode()),
                         "scores": list(state.scores)})
print(json.dumps(out))
"""


def _play(source_first: bool) -> dict:
    code = (_SOURCE_FIRST if source_first else "") + _GAMES
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_the_compiled_simulator_decides_as_its_source():
    installed, source = _play(False), _play(True)
    assert source["file"].endswith("sim.py") and source["people"].endswith("people.py")
    assert all(g["decisions"] > 10 for g in source["games"])
    assert installed["games"] == source["games"], (
        f"{installed['file']} decides otherwise than engine/bots/sim.py: built from an older source? "
        "(pip install -e .)")


@pytest.mark.skipif(os.environ.get("ESCOBA_PURE_PYTHON") == "1", reason="ESCOBA_PURE_PYTHON=1: built without mypyc")
def test_the_install_compiled_the_simulator():
    import engine.bots.people as people
    import engine.bots.sim as sim

    for module in (sim, people):
        assert not module.__file__.endswith(".py"), f"{module.__file__}: setup.py's mypyc build did not run"
