"""events/patches.py: every third-party patch pinned to the version it was written against, checked at
start, and switched off (the speed ones) with ESCOBA_STOCK=1."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

from events import patches
from events.config import stock_libraries
from events.patches import FIX, PATCHES, SPEED, PatchVersionError

ROOT = Path(__file__).resolve().parents[2]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version.strip()
    return pins


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_each_patched_library_is_installed_at_the_version_its_patch_was_written_against(patch):
    pins = _pins()
    for package, version in patch.versions.items():
        assert importlib.metadata.version(package) == version, f"{patch.name}: {package}"
        assert pins[package] == version, f"{patch.name}: constraints.txt pins {package} {pins[package]}"
    patch.check()


@pytest.mark.parametrize("patch", PATCHES, ids=lambda p: p.name)
def test_each_patch_says_what_it_changes_why_and_where(patch):
    assert patch.kind in (SPEED, FIX) and patch.versions and patch.changes and patch.why
    for path in re.findall(r"[a-z_/]+\.py", patch.where):
        assert (ROOT / path).is_file(), f"{patch.name}: {path}"


def test_a_library_at_another_version_stops_the_start_naming_the_package_and_both_versions(monkeypatch):
    monkeypatch.setattr(patches.RQ_LEAN, "versions", {"rq": "2.9.9"})
    monkeypatch.setattr(patches.PROMETHEUS_LOCKS, "applied", False)
    monkeypatch.setattr(patches, "_stock", [False])
    installs = []
    monkeypatch.setattr(patches.PROMETHEUS_LOCKS, "install", lambda: installs.append(1))
    with pytest.raises(PatchVersionError) as error:
        patches.apply_all()
    said = str(error.value)
    assert "rq" in said and "2.9.9" in said and importlib.metadata.version("rq") in said and "rq-lean" in said
    assert (error.value.package, error.value.pinned) == ("rq", "2.9.9")
    assert installs == [] and not patches.PROMETHEUS_LOCKS.applied  # nothing applied when one differs


def test_a_library_not_installed_is_said_so(monkeypatch):
    monkeypatch.setattr(patches.GUNICORN_WIRE, "versions", {"no-such-library-here": "1.0"})
    with pytest.raises(PatchVersionError, match="no-such-library-here: not installed"):
        patches.GUNICORN_WIRE.check()


def test_with_the_stock_libraries_only_the_fixes_are_on_and_checked(monkeypatch):
    monkeypatch.setattr(patches, "_stock", [True])
    monkeypatch.setattr(patches.RQ_LEAN, "versions", {"rq": "2.9.9"})  # a speed patch's pin is not asked
    chosen = patches.check_all()
    assert chosen and {p.kind for p in chosen} == {FIX}
    assert not any(p.on for p in PATCHES if p.kind == SPEED)
    monkeypatch.setattr(patches.RQ_SURVIVES, "versions", {"rq": "2.9.9"})  # a fix's still is
    with pytest.raises(PatchVersionError, match="rq-survives"):
        patches.check_all()


def test_escoba_worker_checks_the_patches_before_it_connects(monkeypatch):
    from workers import cli

    monkeypatch.setattr(patches, "_stock", [False])
    monkeypatch.setattr(patches.RQ_LEAN, "versions", {"rq": "2.9.9"})
    monkeypatch.setattr("workers.runner.run_worker", lambda *a, **k: pytest.fail("started"))
    with pytest.raises(PatchVersionError, match="rq"):
        cli.main(["worker", "--burst"])


@pytest.mark.parametrize(("value", "stock"), [("", False), ("0", False), ("1", True), (" 1 ", True)])
def test_escoba_stock_reads_one_or_zero(value, stock):
    assert stock_libraries({"ESCOBA_STOCK": value}) is stock
    assert stock_libraries({}) is False


def test_escoba_stock_refuses_anything_else():
    with pytest.raises(ValueError, match="ESCOBA_STOCK"):
        stock_libraries({"ESCOBA_STOCK": "yes"})


@pytest.mark.parametrize("stock", [False, True])
def test_the_redis_paths_follow_the_switch(monkeypatch, real_redis, stock):
    import redis

    from events.connection import Connection, _connection_class
    from events.direct import Direct
    from events.store import EventStore

    monkeypatch.setattr(patches, "_stock", [stock])
    kwargs = _connection_class("redis://127.0.0.1:1/0")
    assert kwargs == ({} if stock else {"connection_class": Connection})
    port = real_redis.connection_pool.connection_kwargs["port"]
    client = redis.Redis.from_url(f"redis://127.0.0.1:{port}/0", **kwargs)
    try:
        assert (Direct.for_client(client) is None) is stock
        store = EventStore(client)
        assert (store._direct is None) is stock
        assert store.read_raw("patches-none") == []  # the log read either way
    finally:
        client.close()
