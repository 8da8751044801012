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
