"""Quick pairing on the workers: waves over each pool, and the tables they make.

Nothing here runs in an API process. The ticker (``workers/ticker.py``) claims the pools due
now from their due index (``events.seeks``: ``seeks:{pb<n>}:due``, like the timers') and hands
RQ a ``wave(pool)`` job; ``POST /seeks`` hands one at once when its pool has enough waiting.

A wave (``run_wave``):

1. claims the pool (``SET NX PX``, ``CLAIM_MS``): one wave per pool at a time over every worker;
2. reads the pool's live seeks (two reads, whatever their number) and the tables chosen before
   and not yet made (a crashed maker's: made again);
3. chooses (``workers.matching``, pure): full tables first, then each seek past its
   ``bot_after`` with the others left and bots (Tito) in the empty seats, unrated; seeks whose
   holder was not heard from for ``GONE_AFTER`` seconds are dropped, never seated;
4. takes them in one Lua step in the pool's slot (``Seeks.commit``): a group whose seeks are not
   all still waiting is skipped, so a seek is matched at most once even when two workers race;
5. hands its tables to ``make_tables(pool, table_ids)`` jobs (one a table, at most ``MAKE_JOBS``,
   all enqueued in one pipeline a queue shard), which open each through ``TableService`` (the same
   path as ``POST /tables``: no rule here), seat the players with the seat tokens their seeks
   will derive, add the bots, start the game, and mark the seeks paired. Each step has an
   idempotency key: a second run (a crash, a repeat) appends nothing;
6. puts the pool's next look in its due index: in ``WAVE_EVERY`` seconds while enough wait for a
   table, else at the first seek's bot time or its holder's 10 s of silence.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import logging
import operator
import secrets
import threading
import time
from collections.abc import Sequence
from typing import Any

from rq import Queue

import engine
from events import seeks as store
from events.connection import queue_shard
from events.service import TableService, new_table_ids
from events.store import tokens_key

from . import context, index, matching, queues, scheduling

log = logging.getLogger("escoba.workers")

WAVE_EVERY = 2.0  # seconds between a pool's waves, at most (a wave also runs at once when enough wait)
CLAIM_MS = 30_000  # a wave's claim lapses after this (a worker that died mid-wave)
MAX_GROUPS = 2000  # tables chosen in one wave; more waiting: the next wave runs at once
MAKE_AGAIN_AFTER = 30.0  # seconds: a table chosen this long ago and not made is made again
LEASE = index.LEASE
CLAIM_BATCH = 100
SYSTEM = "system"
ACCOUNT_PREFIX = "acct:"  # api/auth.py's: the tokens hash's entry of an account's seat
BOT = "tito"
WAVE_FUNC = "workers.pairing.wave"
MAKE_FUNC = "workers.pairing.make_table"
MAKES_FUNC = "workers.pairing.make_tables"
MAKE_JOBS = 64  # a wave's tables are made by at most this many jobs (RQ's enqueue costs 0.2 ms of CPU a job)
JOB_TIMEOUT = 120
JOB_FAILURE_TTL = 24 * 3600


_WAITED = operator.itemgetter(3)  # matching.Seeker's waited, as a sort's key (a C call, not a lambda's)
_SEEKER = functools.partial(tuple.__new__, matching.Seeker)  # a Seeker of a tuple, all in C


def _job_id(*parts) -> str:
    return "_".join(str(p).replace(":", "-").replace(".", "-") for p in parts)


# --- the ticker's part ------------------------------------------------------------------

_CLAIM_SCRIPTS: dict[int, object] = {}


def _claim_script(tables):
    found = _CLAIM_SCRIPTS.get(id(tables))
    if found is None or found.registered_client is not tables:
        found = _CLAIM_SCRIPTS[id(tables)] = tables.register_script(index._CLAIM)
    return found


def tick_pools(tables, shards, now: float, own=None, limit: int = CLAIM_BATCH) -> list[str]:
    """Hand RQ a wave for every pool due by ``now`` in the shards ``own``ed (the ids handed).
    A pool's claim here is only its hand-off: the wave job puts its next look back."""
    shards = queues.shards(shards)
    owned = tuple(range(len(shards))) if own is None else tuple(own)
    handed: list[str] = []
    for shard in owned:
        for bucket in range(store.POOL_BUCKETS):
            due, claims = store.due_key(bucket, shard), store.claims_key(bucket, shard)
            found = _claim_script(tables)(keys=[due, claims], args=[repr(float(now)), repr(now + LEASE), limit])
            for raw in found:
                pool_name = raw.decode() if isinstance(raw, bytes) else raw
                try:
                    job_id = hand_wave(shards, pool_name, now)
                    if job_id is not None:
                        handed.append(job_id)
                    tables.zrem(claims, pool_name)
                except Exception:  # its claim lapses and the pool is looked at again
                    log.exception("pairing: handing the wave of pool %s", pool_name)
    return handed


def hand_wave(shards, pool_name: str, now: float) -> str | None:
    """Enqueue ``wave(pool)`` on the pool's queue shard unless one is waiting or running; its id."""
    shards = queues.shards(shards)
    queue_redis = shards[queue_shard(store.tag(pool_name), len(shards))]
    job_id = _job_id("wave", pool_name, int(now * 4))
    return job_id if _enqueue_once(queue_redis, job_id, WAVE_FUNC, pool_name) else None


def _enqueue_once(queue_redis, job_id: str, func: str, *args) -> bool:
    """``func(*args)`` on the queue under ``job_id`` unless a live job holds that id (two callers at
    once may both enqueue it: the wave's claim and the makers' idempotency keys make a second run
    do nothing)."""
    if scheduling.job_alive(queue_redis, job_id):
        return False
    queues.queue_for(queue_redis).enqueue(func, *args, job_id=job_id, result_ttl=0, failure_ttl=JOB_FAILURE_TTL,
                                          job_timeout=JOB_TIMEOUT)
    return True


# --- a wave -----------------------------------------------------------------------------

def wave(pool_name: str) -> dict:
    """The RQ job: one wave of ``pool_name`` at the jobs' clock."""
    now = (context.clock() or time.time)()
    return run_wave(context.tables(), context.queues(), pool_name, now)


def run_wave(tables, shards, pool_name: str, now: float, *, make=None) -> dict:
    """One wave (see the module's docstring); a summary. ``make(pool, table_id)``: how each table
    chosen is made (default: ``make_tables`` jobs, at most ``MAKE_JOBS``, enqueued together on the
    queue shards; a table chosen before and not made: a ``make_table`` job of its own)."""
    seeks = store.Seeks(tables)
    holder = secrets.token_hex(8)
    summary: dict[str, Any] = {"claimed": False, "tables": [], "expired": 0, "waiting": 0}
    if not seeks.claim_wave(pool_name, holder, CLAIM_MS):
        return summary
    summary["claimed"] = True
    try:
        with _collector_paused():
            _choose_and_take(seeks, shards, pool_name, now, make, summary)
    finally:
        seeks.release_wave(pool_name, holder)
    return summary


def _choose_and_take(seeks: store.Seeks, shards, pool_name: str, now: float, make, summary: dict) -> None:
    """The wave's work under its claim: ``summary`` filled in."""
    pool = seeks.pool(pool_name)
    if pool is None:
        return
    for table_id, spec in seeks.making(pool_name).items():  # chosen by a wave that died
        if now - float(spec.get("at", 0)) >= MAKE_AGAIN_AFTER:
            (make or (lambda p, t: _hand_make(shards, p, t)))(pool_name, table_id)
    live = seeks.live(pool_name, now - store.GONE_AFTER)
    gone = live.gone
    seekers = _seekers(live, now)
    full = matching.groups(seekers, pool.players, pool.rated, limit=MAX_GROUPS)
    with_bots: list[list[matching.Seeker]] = []
    if len(full) < MAX_GROUPS:
        chosen = {s.seek_id for g in full for s in g}
        with_bots = matching.fallback([s for s in seekers if s.seek_id not in chosen], pool.players)
    # what ``making`` keeps beside the seats: the seats' own parts are in the seeks' hashes
    # (events.seeks Seeks.spec), so the wave writes none of them
    plain, bots = {"at": now}, {"at": now, "bot": BOT}
    groups = []
    for (group, spec), table_id in zip([(g, plain) for g in full] + [(g, bots) for g in with_bots],
                                       new_table_ids(len(full) + len(with_bots)), strict=True):
        # accounts only: whom each played last, noted by the step for the tables it takes
        accounts = [s.identity for s in group] if len(group) > 1 and all(
            s.identity != s.seek_id for s in group) else ()
        groups.append((table_id, spec, [s.seek_id for s in group], accounts))
    expired, made = seeks.commit(pool_name, now, sorted(gone), groups)
    summary["expired"] = expired
    summary["tables"] = made
    if make is None:
        _hand_makes(shards, pool_name, made)
    else:
        for table_id in made:
            make(pool_name, table_id)
    taken = set(made)
    seated = sum(len(members) for table_id, _, members, _ in groups if table_id in taken)
    summary["waiting"] = len(seekers) - seated
    rest: list[tuple[float, float | None]] = []
    if summary["waiting"] < pool.players:  # when its bots are due: read only when too few wait
        used = {s for table_id, _, members, _ in groups if table_id in taken for s in members}
        rest = [(row[0], row[1]) for seek_id, row in zip(live.ids, live.rows, strict=True)
                if seek_id not in gone and seek_id not in used]
    next_look = _next_look(pool, summary["waiting"], rest, live.earliest_seen, now,
                           more=len(full) >= MAX_GROUPS)
    if next_look is not None:
        seeks.mark_due(pool_name, next_look, len(queues.shards(shards)))


_paused_lock = threading.Lock()
_paused_depth = 0
_paused_was_enabled = False


@contextlib.contextmanager
def _collector_paused():
    """Python's cycle collector held off while a wave runs. A wave of 10,000 seekers makes some
    50,000 short-lived objects, none in a cycle (tests/workers/test_pairing.py checks), all freed by
    their counts when it ends; left on, the collector ran a full pass over the worker's heap in
    nearly every such wave (30 to 40 ms of its 70 to 100, measured with bench/pairing.py). Waves
    on a worker's threads nest: the first in turns it off, the last out turns it back on if it
    was on."""
    global _paused_depth, _paused_was_enabled
    with _paused_lock:
        if _paused_depth == 0:
            _paused_was_enabled = gc.isenabled()
            gc.disable()
        _paused_depth += 1
    try:
        yield
    finally:
        with _paused_lock:
            _paused_depth -= 1
            if _paused_depth == 0 and _paused_was_enabled:
                gc.enable()


def _seekers(live: store.Live, now: float) -> list[matching.Seeker]:
    """The pool's seekers heard from, as the choice sees them, longest waiting first: made a column
    at a time, each ``Seeker`` by ``tuple.__new__`` from C (a wave reads thousands)."""
    ids, rows = live.ids, live.rows
    if live.gone:
        kept = [(seek_id, row) for seek_id, row in zip(ids, rows, strict=True) if seek_id not in live.gone]
        ids, rows = [k[0] for k in kept], [k[1] for k in kept]
    if not rows:
        return []
    n = len(rows)
    created, bot_after, rating, identity, last = zip(*rows, strict=True)
    waited = list(map(operator.sub, itertools.repeat(now, n), created))
    if None in bot_after:
        due = [b is not None and w >= b for w, b in zip(waited, bot_after, strict=True)]
    else:
        due = list(map(operator.ge, waited, bot_after))
    guests = identity.count(None)
    who: Sequence[str] = identity
    if guests == n:
        who = ids  # a guest's identity: its seek id
    elif guests:
        who = [i or seek_id for i, seek_id in zip(identity, ids, strict=True)]
    # whom each account played last was read into its seek when it was made (POST /seeks)
    none: frozenset[str] = frozenset()
    lasts = [frozenset(x) if x else none for x in last] if any(last) else [none] * n
    seekers = list(map(_SEEKER, zip(ids, who, rating, waited, due, lasts, strict=True)))
    seekers.sort(key=_WAITED, reverse=True)  # oldest first, as the choice's ties fall
    return seekers


def _next_look(pool: store.Pool, waiting: int, rest: list[tuple[float, float | None]],
               earliest_seen: float | None, now: float, *, more: bool) -> float | None:
    """When the pool wants its next wave: at once with more to choose, every ``WAVE_EVERY`` while
    enough wait for a table, else when the first seek's bots are due or its holder's silence ends
    (``rest``: the seeks left, (created, bot_after) each, read only when fewer than a table wait)."""
    if more:
        return now
    if not waiting:
        return None
    if waiting >= pool.players:
        return now + WAVE_EVERY
    times = [created + bot_after for created, bot_after in rest if bot_after is not None]
    if earliest_seen is not None:
        times.append(earliest_seen + store.GONE_AFTER)
    return max(now, min(times)) if times else now + store.GONE_AFTER


# --- making a table ---------------------------------------------------------------------

def _hand_make(shards, pool_name: str, table_id: str) -> None:
    shards = queues.shards(shards)
    queue_redis = shards[queue_shard(table_id, len(shards))]
    _enqueue_once(queue_redis, _job_id("pair", table_id), MAKE_FUNC, pool_name, table_id)


def _hand_makes(shards, pool_name: str, table_ids: list[str]) -> None:
    """``make_tables`` jobs for the tables a wave took: a table a job when a wave takes few (each
    made at once, side by side), at most ``MAKE_JOBS`` jobs when it takes thousands (2,000 jobs
    cost a wave 1.7 s of CPU in RQ); each on the queue shard of its first table, every shard's
    enqueued in one pipeline (RQ's ``enqueue_many``). Their ids are new (the tables are), so no
    job can hold them yet."""
    if not table_ids:
        return
    shards = queues.shards(shards)
    by_shard: dict[int, list] = {}
    size = -(-len(table_ids) // MAKE_JOBS)
    for start in range(0, len(table_ids), size):
        batch = table_ids[start:start + size]
        shard = queue_shard(batch[0], len(shards))
        by_shard.setdefault(shard, []).append(Queue.prepare_data(
            MAKES_FUNC, (pool_name, batch), job_id=_job_id("pairs", batch[0]), result_ttl=0,
            failure_ttl=JOB_FAILURE_TTL, timeout=JOB_TIMEOUT))
    for shard, datas in by_shard.items():
        queues.queue_for(shards[shard]).enqueue_many(datas)  # one pipeline


def make_tables(pool_name: str, table_ids: list[str]) -> int:
    """The RQ job: make the tables a wave chose, in turn (``make_chosen``: each idempotent); how many
    were made. One that fails does not stop the others; the job then fails, naming them, and each
    is made again by a later wave of its pool (``MAKE_AGAIN_AFTER``)."""
    tables, svc = context.tables(), context.service()
    made, failed = 0, []
    for table_id in table_ids:
        try:
            made += make_chosen(tables, svc, pool_name, table_id)
        except Exception:
            log.exception("pairing: making table %s of pool %s", table_id, pool_name)
            failed.append(table_id)
    if failed:
        raise RuntimeError(f"pairing: {len(failed)} of {len(table_ids)} tables not made: {', '.join(failed)}")
    return made


def make_table(pool_name: str, table_id: str) -> bool:
    """The RQ job: make the table a wave chose (idempotent: a second run appends nothing)."""
    return make_chosen(context.tables(), context.service(), pool_name, table_id)


def make_chosen(tables, svc: TableService, pool_name: str, table_id: str) -> bool:
    """Open, seat, start the table ``table_id`` of ``pool_name``'s ``making`` hash, then mark its seeks
    paired; False when it is not there (made already)."""
    seeks = store.Seeks(tables)
    spec = seeks.spec(pool_name, table_id)
    if spec is None:
        return False
    open_table(svc, spec)
    seeks.done(pool_name, table_id, [s["seek"] for s in spec["seats"] if "seek" in s])
    return True


def open_table(svc: TableService, spec: dict) -> engine.State:
    """The table of ``spec``: opened by its first seeker (the host), each seat taken in order, the game
    started. Every step is keyed, so it may run again after a crash and append nothing more."""
    table_id = spec["table_id"]
    seats = spec["seats"]
    host = seats[0]
    command = {"type": "open", "name": f"{host['name']}'s table", "preset": spec["preset"],
               "settings": spec["settings"], "player": host["player"], "host_name": host["name"],
               "account": bool(host.get("account"))}
    try:
        svc.create(command, actor=SYSTEM, grant=(host["grant"], host["player"]), table_id=table_id)
    except engine.RuleError as exc:
        if exc.code != "table_exists":
            raise
    for seat, who in enumerate(seats[1:], 1):
        if "bot" in who:
            move = {"type": "add_bot", "player": host["player"], "bot": who["bot"], "seat": seat}
            svc.execute(table_id, move, actor=SYSTEM, idempotency_key=f"pair-{seat}")
        else:
            svc.execute(table_id, {"type": "sit", "player": who["player"], "name": who["name"],
                                   "account": bool(who.get("account"))}, actor=SYSTEM,
                        idempotency_key=f"pair-{seat}", grant=(who["grant"], who["player"]))
    accounts = [who["player"] for who in seats if who.get("account")]
    if accounts:  # an account's player tokens act for its seat too (api/auth.py account_grant)
        svc.redis.hset(tokens_key(table_id), mapping={ACCOUNT_PREFIX + p: p for p in accounts})
    outcome = svc.execute(table_id, {"type": "start", "player": host["player"]}, actor=SYSTEM,
                          idempotency_key="pair-start")
    return outcome.state


__all__ = ["MAKE_JOBS", "MAX_GROUPS", "WAVE_EVERY", "hand_wave", "make_chosen", "make_table", "make_tables",
           "open_table", "run_wave", "tick_pools", "wave"]
