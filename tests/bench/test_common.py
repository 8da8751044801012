"""bench/_common.py's process pool: results, errors, and no worker left behind."""

from __future__ import annotations

import multiprocessing

import pytest

from bench._common import pool_starmap


def _power(base: int, exponent: int) -> int:
    if base < 0:
        raise ValueError("negative")
    return base**exponent


def test_results_come_back_in_order_or_as_they_finish():
    jobs = [(n, 2) for n in range(20)]
    assert pool_starmap(_power, jobs, 2) == [n * n for n in range(20)]
    assert sorted(pool_starmap(_power, jobs, 2, unordered=True)) == [n * n for n in range(20)]
    assert multiprocessing.active_children() == []


def test_an_error_in_a_job_is_raised_and_the_workers_are_gone():
    with pytest.raises(ValueError, match="negative"):
        pool_starmap(_power, [(2, 2), (-1, 2)], 2)
    assert multiprocessing.active_children() == []
