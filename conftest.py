"""The repository's own pytest settings beyond pyproject.toml.

``--doctest-modules`` runs the engine's docstring examples (testpaths: tests, engine). The two
modules mypyc compiles (setup.py) are imported as their extensions, which pytest cannot match
to their source file; they hold no examples, so they are not collected.
"""

collect_ignore = ["engine/bots/sim.py", "engine/bots/people.py"]
