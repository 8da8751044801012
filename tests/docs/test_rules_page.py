"""docs/rules.md, the project's own rules page, says what engine/rules.py does."""

from __future__ import annotations

import re
from pathlib import Path

from engine.rules import CHOICES, OFFERED, PRESETS

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "rules.md").read_text()


def _settings_table() -> dict[str, list[str]]:
    rows = {}
    for line in PAGE.splitlines():
        m = re.match(r"\| `(\w+)` \|(.*)\|\s*$", line)
        if m and m.group(1) in CHOICES:
            rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
    return rows


def _word(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def test_every_setting_has_its_row_with_each_presets_default():
    rows = _settings_table()
    assert set(rows) == set(CHOICES)
    presets = list(PRESETS)  # selminha, del15, cardgames: the table's columns after the meaning
    for key, cells in rows.items():
        defaults = cells[1:]
        assert len(defaults) == len(presets), key
        for preset, cell in zip(presets, defaults, strict=True):
            value = getattr(PRESETS[preset], key)
            cell = cell.replace("`", "").lower()
            assert cell.startswith(_word(value).lower()), (key, preset, cell, value)
            for offered in OFFERED[preset].get(key, ()):  # what the host may choose is listed
                if not isinstance(offered, bool) and len(OFFERED[preset][key]) > 1:
                    assert _word(offered) in cell, (key, preset, offered, cell)


def test_the_readme_points_to_the_projects_rules_page():
    readme = (ROOT / "README.md").read_text()
    assert "docs/rules.md" in readme and "shared/RULES.md" not in readme
    for preset in PRESETS:
        assert f"`{preset}`" in PAGE
    assert "Worked examples" in PAGE


def test_no_file_of_the_project_cites_one_outside_it():
    """The contract the project keeps is docs/api.md and its rules docs/rules.md (issue 58): code, docs and
    tests cite those, never the shared folder beside the repository, which a clone does not have."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True).stdout.split()
    citing = []
    for name in tracked:
        if name.endswith((".py", ".md", ".js", ".html", ".yml", ".toml")) and name != "tests/docs/test_rules_page.py":
            text = (root / name).read_text(errors="replace")
            if "shared/API.md" in text or "shared/RULES.md" in text or "../shared" in text:
                citing.append(name)
    assert citing == []
