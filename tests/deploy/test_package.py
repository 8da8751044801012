"""What `pip install .` (the Dockerfile's install, not an editable one) ships of the page."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_every_file_the_page_serves_is_package_data():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["api"]
    static = ROOT / "api" / "static"
    # fnmatch's * crosses "/": compare the depth too, as setuptools' glob does not cross it
    missing = [str(p.relative_to(static)) for p in static.rglob("*") if p.is_file()
               and "__pycache__" not in p.parts
               and not any(fnmatch(str(p.relative_to(ROOT / "api")), pat)
                           and str(p.relative_to(ROOT / "api")).count("/") == pat.count("/") for pat in patterns)]
    assert not missing, f"served by the page but left out of the package (pyproject package-data): {missing}"


def test_every_install_takes_the_versions_the_suite_passed_with():
    """CI, the README's two commands and the image install with constraints.txt, which pins every
    requirement of the project and of its tests: a new release of a dependency (redis-py 8.2, whose
    waits failed CI on 2026-12-04) changes nothing until the pins are moved on deliberately."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    root = Path(__file__).resolve().parents[2]
    pins = {}
    for line in (root / "constraints.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"constraints.txt pins each version exactly: {line!r}"
            pins[canonicalize_name(name)] = version
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    for text in project["dependencies"] + project["optional-dependencies"]["test"]:
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not pinned in constraints.txt"
        assert requirement.specifier.contains(pins[name]), (name, pins[name], str(requirement.specifier))
    readme = (root / "README.md").read_text()
    assert "pip install -c constraints.txt -e . && escoba dev" in readme
    assert "pip install -c constraints.txt -e '.[test]' && ruff check ." in readme
    assert "pip install -q -c constraints.txt -e '.[test]'" in (root / ".ci" / "run").read_text()
    dockerfile = (root / "Dockerfile").read_text()
    assert "COPY constraints.txt ./" in dockerfile
    assert "pip wheel --no-cache-dir --wheel-dir /wheels -c constraints.txt ." in dockerfile
