"""What a job process works with: the configuration, the clock, the tables' store, the queue shards.

Set once per process (``configure``; ``escoba worker`` does it at start), or connected
from the configuration on first use. The jobs' TableService is built here with
``on_change`` = ``workers.scheduling.TimersHook``, so one job's append schedules the
next (bot after bot). Kept apart from the jobs so that every job module (the timers,
the notices, Web Push, analysis) imports this and nothing imports a job module back.
"""

from __future__ import annotations

from typing import Any

from events.config import Config
from events.replication import replica_acks
from events.service import TableService

from . import scheduling

_settings: dict = {"config": None, "clock": None, "tables": None, "queues": None}


def configure(config: Config | None = None, clock=None, tables=None, queues=None) -> None:
    """Set the configuration, the tables' store and the queue shards (else connected from the
    configuration) and, for tests, the clock that the jobs of this process use."""
    _settings.update(config=config, clock=clock, tables=tables,
                     queues=None if queues is None else tuple(queues))


def get_config() -> Config:
    return _settings["config"] or Config.from_env()


def clock():
    """The clock configured for the jobs (tests), else None: the service's own."""
    return _settings["clock"]


def _connect() -> None:
    from .backends import connect

    stores = connect(get_config())
    if _settings["tables"] is None:
        _settings["tables"] = stores.tables
    if _settings["queues"] is None:
        _settings["queues"] = stores.queues


def tables():
    """The tables' store for this process: as configured, or connected once from the
    configuration. (A forked job process may use the client it inherits: redis-py's
    connection pools notice the new pid and open connections of their own.)"""
    if _settings["tables"] is None:
        _connect()
    return _settings["tables"]


def queues() -> tuple:
    """Every queue shard (shard N = the N-th); the running job's own connection when this
    process was given none and only one is configured."""
    if _settings["queues"] is None:
        if len(get_config().queue_urls) <= 1:
            return (current_connection(),)
        _connect()
    return _settings["queues"]


def shard_count() -> int:
    """How many queue shards this process serves or hands jobs to (the due index is split by them)."""
    if _settings["queues"] is not None:
        return len(_settings["queues"])
    return scheduling.shard_count(get_config())


def current_connection():
    """The running job's own connection: its shard's queue Redis."""
    from rq import get_current_job

    job = get_current_job()
    if job is None:
        raise RuntimeError("workers jobs run inside an RQ worker")
    return job.connection


def service(redis=None, config: Config | None = None) -> TableService:
    """A TableService for a job: the tables' store, the scheduler hook, the configured clock."""
    redis = redis if redis is not None else tables()
    config = config or get_config()
    kwargs: dict[str, Any] = {"on_change": scheduling.on_change_hook(redis, config, shard_count()), "cache_size": 0,
              "replica_acks": replica_acks(getattr(config, "replica_acks", None), redis),
              "unreplicated": getattr(config, "unreplicated", "accept")}
    if _settings["clock"] is not None:
        kwargs["clock"] = _settings["clock"]
    return TableService(redis, **kwargs)


__all__ = ["clock", "configure", "current_connection", "get_config", "queues", "service", "shard_count", "tables"]
