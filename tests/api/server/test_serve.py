"""``escoba serve``'s app factory: what each gunicorn worker builds."""

from __future__ import annotations

import gc
import os
import weakref

import pytest
from flask import Flask

from api import app as app_module
from api.server import observability, serve


def test_the_worker_app_freezes_what_it_built_out_of_the_collectors_full_passes(monkeypatch, fake_redis):
    # the factory's app on the suite's fakeredis, not on whatever the environment names
    build = app_module.create_app
    monkeypatch.setattr(app_module, "create_app", lambda: build(fake_redis))
    gc.unfreeze()
    thresholds = gc.get_threshold()
    try:
        app = serve._escoba_app()
        assert isinstance(app, Flask)
        assert gc.get_freeze_count() > 1000  # the modules, schemas and routes built so far
        assert serve._log_slow_collections in gc.callbacks
        # young collections far rarer than CPython's; the older generations' thresholds as they were
        assert gc.get_threshold() == (serve.YOUNG_COLLECTION, *thresholds[1:])
        assert thresholds[0] < serve.YOUNG_COLLECTION
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        if serve._log_slow_collections in gc.callbacks:
            gc.callbacks.remove(serve._log_slow_collections)
        observability.stop_logging()


def test_a_cycle_made_after_the_workers_freeze_is_collected_by_a_young_pass_within_its_threshold():
    # what a rare young pass relies on: the frozen generation keeps only what was built before the
    # freeze, and garbage cycles made since (a refused move's traceback, a request's) are found by the
    # automatic young pass that the threshold's net allocations bring, with no full pass or explicit call
    class Held:
        pass

    gc.unfreeze()
    thresholds = gc.get_threshold()
    assert gc.isenabled()
    try:
        gc.collect()
        gc.freeze()
        gc.set_threshold(serve.YOUNG_COLLECTION, *thresholds[1:])
        a, b = Held(), Held()
        a.other, b.other = b, a
        probe = weakref.ref(a)
        del a, b
        kept = []
        for _ in range(serve.YOUNG_COLLECTION + 1_000):  # containers kept alive: each counts toward a pass
            kept.append([])
            if probe() is None:
                break
        assert probe() is None
        assert len(kept) > serve.YOUNG_COLLECTION // 2  # not freed at once: a young pass found it
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def test_serve_keeps_off_redis_cores_only_while_the_host_leaves_it_others(monkeypatch):
    mask, set_to = {0, 1, 2}, []
    monkeypatch.setattr(serve.os, "sched_getaffinity", lambda pid: set(mask))
    monkeypatch.setattr(serve.os, "sched_setaffinity", lambda pid, cores: set_to.append((pid, set(cores))))
    assert serve.keep_off(frozenset({1})) == {0, 2}
    assert set_to == [(0, {0, 2})]  # this process: the workers it forks after inherit it
    assert serve.keep_off(frozenset()) is None  # ESCOBA_REDIS_CPUS unset or empty
    assert serve.keep_off(frozenset({5})) is None  # a core this host lacks: ignored, as Redis ignores it
    assert serve.keep_off(frozenset({0, 1, 2})) is None  # none would be left: a one-core host
    assert len(set_to) == 1


@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="keeps off core 1 of two")
def test_escoba_serve_and_its_worker_keep_off_the_cores_redis_holds(redis_server):
    from ..served import Served

    mine = os.sched_getaffinity(0)
    for redis_cpus, cores in (("1", mine - {1}), ("", mine)):
        server = Served(redis_server.url, ESCOBA_REDIS_CPUS=redis_cpus)
        try:
            tasks = [int(t) for pid in server.pids() for t in os.listdir(f"/proc/{pid}/task")]
            assert len(server.pids()) == 2 and all(os.sched_getaffinity(t) == cores for t in tasks), redis_cpus
        finally:
            server.stop()


def test_the_server_runs_gevent_workers_with_room_for_many_sockets():
    options = serve.gunicorn_options("0.0.0.0", 8000, 64, 2)
    assert options["worker_class"] == "gevent" and options["workers"] == 2
    assert options["worker_connections"] >= 10_000 and "threads" not in options
    threaded = serve.gunicorn_options("0.0.0.0", 8000, 64, 1, worker_class="gthread")
    assert threaded["threads"] == 64 and threaded["worker_connections"] == 64 + 256


def test_the_master_imports_no_app_module_before_the_worker_patches_the_standard_library():
    import subprocess
    import sys

    code = ("import sys, api.cli, api.server.serve; api.cli._parser(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('api', 'redis', 'flask', 'werkzeug', 'events', 'engine', 'workers', 'rq')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # the settings alone: nothing that opens a socket or makes a lock at import
    assert out.strip() == ("['api', 'api.cli', 'api.server', 'api.server.dev', 'api.server.serve', 'events', "
                           "'events.config']")


def test_the_open_files_limit_is_raised_to_the_hard_limit():
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
        now = serve.raise_fd_limit()
        assert now == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        assert now == hard or hard == resource.RLIM_INFINITY
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
