"""events/config.py: the settings operators set by environment, read in one place."""

from __future__ import annotations

import pytest

from events.config import CORE_MAX, Config, core_list


def test_a_core_list_is_read_as_taskset_and_redis_write_it():
    assert core_list("1", "X") == {1}
    assert core_list("0,2", "X") == {0, 2}
    assert core_list("2-4, 7", "X") == {2, 3, 4, 7}
    assert core_list("", "X") == core_list(" ", "X") == frozenset()


@pytest.mark.parametrize("bad", ["a", "1-", "-1", "3-2", "1;2", f"0-{CORE_MAX + 1}"])
def test_a_bad_core_list_stops_with_its_settings_name(bad):
    with pytest.raises(ValueError, match="ESCOBA_REDIS_CPUS"):
        core_list(bad, "ESCOBA_REDIS_CPUS")


def test_redis_cores_are_none_unless_set():
    assert Config.from_env({}).redis_cpus == frozenset()
    assert Config.from_env({"ESCOBA_REDIS_CPUS": "1"}).redis_cpus == {1}
    with pytest.raises(ValueError, match="ESCOBA_REDIS_CPUS"):
        Config.from_env({"ESCOBA_REDIS_CPUS": "one"})
