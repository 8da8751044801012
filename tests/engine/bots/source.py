"""``engine/bots/sim.py`` as Python, beside the module as installed (mypyc's extension: setup.py).

A test that must see each simulated play (its Python methods patched) runs Luna on this one:
the compiled rollouts call their own methods, not a patched attribute."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

import engine.bots

NAME = "engine.bots._sim_source"


def sim_source():
    """The simulator's source, as a module of the package of its own (loaded once)."""
    if NAME not in sys.modules:
        path = str(Path(engine.bots.__file__).with_name("sim.py"))
        loader = importlib.machinery.SourceFileLoader(NAME, path)
        spec = importlib.util.spec_from_file_location(NAME, path, loader=loader)
        module = importlib.util.module_from_spec(spec)
        sys.modules[NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[NAME]
