"""The build's one step beyond pyproject.toml: Luna's simulator and her model of people compiled to C with mypyc.

``engine/bots/sim.py`` plays out every rollout of Luna's search and the game analysis, and
``engine/bots/people.py`` weighs her reading of the others' hands: nearly all of their CPU.
Compiled by mypyc from the same source, they run about twice as fast and decide exactly as
the Python does (tests/engine/bots/test_compiled.py), so Luna plays twice the deals in her
CPU budget (docs/bots.md). Each extension is optional: where it cannot be built (no C
compiler) the install goes on and the module runs as Python. Set ``ESCOBA_PURE_PYTHON=1`` to
leave them out on purpose.
"""

from __future__ import annotations

import os

from setuptools import setup

COMPILED = ["engine/bots/sim.py", "engine/bots/people.py"]


def extensions() -> list:
    if os.environ.get("ESCOBA_PURE_PYTHON") == "1":
        return []
    from mypyc.build import mypycify

    # the modules it imports are read for their types, not held to them
    modules = mypycify(["--follow-imports=silent", *COMPILED], opt_level="3", separate=True)
    for module in modules:
        module.optional = True  # a failed compile leaves the Python module in place, with a warning
    return modules


setup(ext_modules=extensions())
