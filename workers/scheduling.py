"""Which timers a table needs, and keeping them in the table's own hash and the due index.

Every append runs ``after_change`` (TableService's ``on_change`` hook, in the
API and in the worker). It works out the table's due timers from its state and
the times in its log (``due_timers``, pure):

========  ================================  ==========================================
kind      when                              due
========  ================================  ==========================================
bot       a bot's turn; or between rounds   last record + bot_delay
          when every player is a bot
away      a human's turn (away not open)    the turn's start + away_after
expire    any status but finished/expired   last move + expire_after
rematch   finished: every human accepted    now (start_rematch)
          finished: offer still open        last record + rematch_window (lapse_rematch)
ratings   finished, a rated table           now (workers/ratings.py: its players' ratings, once)
compact   closed for good: finished with    last record + compact_after (events/compaction.py)
          no rematch possible, or expired
========  ================================  ==========================================

plus a turn notice (``notify:<seat>``) when it becomes the turn of a human
seat that registered a URL in ``table:{ID}:notify``, and a notice to the
others when PLAYER AWAY opens.

Where timers live. The hook writes only the tables' store, never RQ's:

1. ``table:{ID}:timers`` (the table's slot): kind -> ``{"id", "due", "func",
   "args", "kwargs", "retry"}``, the source of truth for what the table wants;
   ``version`` (the newest version a hook has seen, stamped by the append's own
   Lua step), ``rev`` (bumped by every write: the compare-and-set below) and
   ``sent:<kind>`` = the id of the job of that kind already handed to RQ.
2. the due index (``workers.index``, a bucket of its own hash tag): the table's
   earliest due time among timers not yet handed, only ever lowered.

Written in that order, each in one single-slot step: the hash by a Lua
compare-and-set (it applies only while ``rev`` is the one the plan was made
from and no newer version was stamped; else the plan is made again), then the
index. A crash between the two leaves a timer the index does not know: the
reconciler (``workers.runner``) finds it from the bucket's ``live`` set (added
before a table's first timer) and marks it due. The ticker in each worker
(``workers.ticker``) claims due tables from the index, hands what is due to RQ
under the timer's deterministic id and notes ``sent:<kind>``; RQ holds work in
flight only, never every future deadline.

Job ids are deterministic: ``<table>_<kind>_<n>``, where ``n`` is the table
version the timer belongs to for ``bot`` and ``rematch``, and the due time in
seconds, rounded up, for the lazy ``away`` and ``expire``. (RQ 3 accepts
only letters, digits, ``_`` and ``-`` in a job id; table ids are eight
URL-safe characters, so ``<table>_`` is a prefix of that table's jobs only.)
The same timer always gets the same id, so a second hand-off (a ticker that
crashed after enqueueing, before noting it) finds the job there, and the jobs
are idempotent anyway (a version to check, an idempotency key).

Lazy timers: the due times of ``away`` (the turn's start + away_after) and
``expire`` (the last move + expire_after) only move later as a table plays. A
pending timer of those kinds due no later than the wanted time stays (no write);
when it fires (``workers.jobs``) it works out its timer again from the log and
acts only if it is really due, otherwise it replaces itself with the timer at
the later time (``reschedule_early``).

Why the version in a bot's id: a bot job's own move schedules the next bot timer
while that job still runs; under one fixed id the ticker would find a live job
of that id and hand nothing, and the chain would stop.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import math
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson
from redis.exceptions import NoScriptError
from rq.job import Job

from events import my_tables
from events.compaction import closed_for_good
from events.hooks import NotesUnacknowledged, ReadsBack, WritesRow
from events.store import flat_hash
from events.text import as_text

from . import index, liveness, queues
from .keys import notify_key, push_marker, timers_key

log = logging.getLogger("escoba.workers")

QUEUE_NAME = queues.QUEUE_NAME
INLINE_DELAY = 1.0  # seconds a bot job may still wait itself (``delay``), kept for old jobs
NOTIFY_RETRY = (1, 2, 4, 8, 16)
TIMER_KINDS = ("bot", "away", "expire", "rematch", "compact", "ratings")
# Lazy timers: their due time only ever moves later as a table plays, so a pending job due no
# later than the one wanted stays; when it fires it checks the log and, if early, moves itself.
LAZY_KINDS = frozenset({"away", "expire"})
# Records that are not "a move" for expiry: the timers' own facts.
NOT_MOVES = frozenset({"AwayOpened", "RematchLapsed", "TableExpired"})
# Records after which a new turn begins (turn_seq moves on).
TURN_STARTS = frozenset({"RoundDealt", "CardPlayed"})
TAIL = 32  # records read back from the log to find when the turn began / the last move
CAS_ATTEMPTS = 20  # a write that keeps meeting other writers gives up (the reconciler repairs)
SENT = "sent:"  # hash field prefix: sent:<kind> = the id of the job of that kind handed to RQ
META = frozenset({"version", "rev"})


def job_prefix(table_id: str) -> str:
    return f"{table_id}_"


@dataclass(frozen=True)
class Timer:
    """One job a table needs: what to call, with what, and when."""

    kind: str
    job_id: str
    func: str
    args: tuple
    due: float  # epoch seconds
    kwargs: dict = field(default_factory=dict)
    retry: tuple | None = None  # RQ retry intervals (notices); None: the timers' default

    def to_json(self) -> str:
        """The entry in ``table:{ID}:timers``: all a ticker needs to hand the job to RQ."""
        return orjson.dumps({"id": self.job_id, "due": self.due, "func": self.func,
                             "args": list(self.args), "kwargs": self.kwargs,
                             "retry": list(self.retry) if self.retry else None}).decode()


@dataclass(frozen=True)
class LogTimes:
    """When things last happened at a table, read from its log."""

    last_at: float  # the last record: "now" for the hook
    move_at: float | None  # the last record that was a move (not a timer's own fact)
    move_version: int | None
    turn_at: float | None  # when the current turn began (None: not found in what was read)


# --- reading the log's times -------------------------------------------------

@functools.lru_cache(maxsize=4096)  # a move's records share one time, read for the last record and the last move
def parse_at(text: str) -> float:
    """An ISO-8601 record time (``...Z`` or an offset) as epoch seconds."""
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def log_times(records: list[dict]) -> LogTimes:
    """The times that matter, from the tail of a table's log (oldest first, non-empty)."""
    last = records[-1]
    last_at = parse_at(last["at"])
    move_at, move_version, turn_at = None, None, None
    for record in reversed(records):
        if move_at is None and record["type"] not in NOT_MOVES:
            move_at, move_version = parse_at(record["at"]), record["version"]
        if turn_at is None and record["type"] in TURN_STARTS:
            turn_at = parse_at(record["at"])
        if move_at is not None and turn_at is not None:
            break
    return LogTimes(last_at, move_at, move_version, turn_at)


def read_tail(redis, table_id: str, version: int, count: int = TAIL) -> list[dict]:
    from events.store import EventStore

    return EventStore(redis).read(table_id, after=max(0, version - count))


def times_for(redis, table_id: str, state, records: list[dict] | None = None, *,
              turn_bound: bool = False) -> LogTimes:
    """Log times for ``state``: from ``records`` (the newest ones) when they say enough,
    otherwise from the log's tail, and failing that the whole log.

    ``turn_bound``: when the turn's start is not in ``records``, leave ``turn_at`` unknown
    (``due_timers`` then counts from the last record, a later bound) rather than read the log.
    """
    need_turn = _needs_turn_start(state) and not turn_bound
    times = log_times(records) if records else None
    if times is None or times.move_at is None or (need_turn and times.turn_at is None):
        tail = read_tail(redis, table_id, state.version)
        times = log_times(tail)
        if (times.move_at is None or (need_turn and times.turn_at is None)) \
                and len(tail) < state.version:
            tail = read_tail(redis, table_id, state.version, state.version)
            times = log_times(tail)
        if times.move_at is None:  # nothing but timers' facts: the oldest bounds the last move
            first = tail[0]
            times = LogTimes(times.last_at, parse_at(first["at"]), first["version"], times.turn_at)
    return times


def _needs_turn_start(state) -> bool:
    return state.status == "playing" and state.turn is not None and not _is_bot(state, state.turn)


# --- which timers ------------------------------------------------------------

def _is_bot(state, seat) -> bool:
    s = state.seats[seat] if seat is not None else None
    return s is not None and s.kind == "bot"


def _all_bots(state) -> bool:
    return bool(state.players) and all(_is_bot(state, p) for p in state.players)


def due_timers(table_id: str, state, times: LogTimes, config) -> dict[str, Timer]:
    """Every timer ``state`` calls for, by kind (pure: no Redis, no clock)."""
    out: dict[str, Timer] = {}
    v = state.version
    status = state.status

    def add(kind, n, func, args, due, **kwargs):
        if kind in LAZY_KINDS:  # lazy timers: named by their due second, not by a version
            n = math.ceil(due)
        out[kind] = Timer(kind, f"{table_id}_{kind}_{n}", f"workers.jobs.{func}", args, due, kwargs)

    if status == "playing" and state.turn is not None:
        if _is_bot(state, state.turn):
            add("bot", v, "bot_turn", (table_id, v), times.last_at + config.bot_delay)
        elif state.away_open is None:
            start = times.turn_at if times.turn_at is not None else times.last_at
            add("away", state.turn_seq, "away", (table_id, state.turn_seq, v),
                start + config.away_after)
    elif status == "round_over" and _all_bots(state):
        add("bot", v, "bot_turn", (table_id, v), times.last_at + config.bot_delay)

    if status not in ("finished", "expired", "new"):
        add("expire", times.move_version, "expire", (table_id, times.move_version),
            times.move_at + config.expire_after)

    if status == "finished":
        if state.rematch_ready():
            add("rematch", v, "start_rematch", (table_id, v), times.last_at)
        elif state.rematch_allowed():
            add("rematch", v, "lapse_rematch", (table_id, v), times.last_at + config.rematch_window)
    if status == "finished" and state.settings.rated:  # its players' ratings, once (workers/ratings.py)
        out["ratings"] = Timer("ratings", f"{table_id}_ratings_{state.game}", "workers.ratings.run",
                               (table_id, state.game), times.last_at)
    if closed_for_good(state):  # nothing can change it any more: one compressed value (compaction)
        add("compact", v, "compact", (table_id, v), times.last_at + config.compact_after)
    return out


def timers_from_log(redis, table_id: str, state, config) -> dict[str, Timer]:
    """A table's due timers from its log alone (for the reconciler)."""
    if state.version == 0:
        return {}
    return due_timers(table_id, state, times_for(redis, table_id, state), config)


# --- RQ's side (the queue Redis): only to ask whether a handed job still lives ------------

queue_for = queues.queue_for  # the ``escoba`` queue on one queue Redis


LIVE = frozenset({"scheduled", "queued", "started", "deferred", "rate_limited"})
# what a job whose hash says "queued" is, when it waits in neither its queue nor RQ's list of jobs
# taken and not started: popped by a worker that died, or its store with it, before the start was
# written (liveness.stranded; seen in tests/workers/test_survival.py), so nothing will ever run it
STRANDED = "stranded"


def _statuses(queue_redis, job_ids) -> dict[str, str | None]:
    """RQ's status of each job, in one round trip; a "queued" one that waits nowhere is
    ``STRANDED`` (``liveness.stranded``: a second round trip, only for the queued ones)."""
    ids = list(dict.fromkeys(job_ids))
    if not ids:
        return {}
    with queue_redis.pipeline(transaction=False) as pipe:
        for job_id in ids:
            pipe.hmget(Job.key_for(job_id), "status", "origin")
        found = pipe.execute()
    statuses = {i: None if v[0] is None else as_text(v[0]) for i, v in zip(ids, found, strict=True)}
    queued = [(i, as_text(v[1]) or QUEUE_NAME) for i, v in zip(ids, found, strict=True)
              if statuses[i] == "queued"]
    for job_id in liveness.stranded(queue_redis, queued):
        statuses[job_id] = STRANDED
    return statuses


def job_alive(queue_redis, job_id: str) -> bool:
    """Whether a job is still waiting or running (not missing, failed, canceled or stopped)."""
    return _statuses(queue_redis, [job_id])[job_id] in LIVE


# --- the table's timers hash -----------------------------------------------------------

def keep_lazy(state) -> frozenset:
    """The kinds whose pending timer the hook leaves alone even while not wanted: the lazy ones,
    while the game goes on. Between rounds no turn is open, so no ``away`` is wanted; keeping
    its timer spares every round two rewrites (it fires 48 hours on at the soonest, finds
    itself early or unwanted and moves or drops itself). A finished table drops them."""
    return LAZY_KINDS if state.status in ("playing", "round_over") else frozenset()


def _current(stored: dict[str, str]) -> dict[str, dict]:
    """The timers in ``table:{ID}:timers`` (decoded) as kind -> entry."""
    return {k: orjson.loads(v) for k, v in stored.items()
            if k not in META and not k.startswith(SENT)}


def _sent(stored: dict[str, str]) -> dict[str, str]:
    """kind -> id of the job of that kind already handed to RQ."""
    return {k[len(SENT):]: v for k, v in stored.items() if k.startswith(SENT)}


def unsent(stored: dict[str, str]) -> dict[str, dict]:
    """The timers not handed to RQ yet (what the due index is for)."""
    sent = _sent(stored)
    return {k: e for k, e in _current(stored).items() if sent.get(k) != e["id"]}


def next_due(stored: dict[str, str]) -> float | None:
    dues = [float(e["due"]) for e in unsent(stored).values()]
    return min(dues) if dues else None


def read_timers(tables, table_id: str) -> dict[str, str]:
    return {as_text(k): as_text(v) for k, v in tables.hgetall(timers_key(table_id)).items()}


def _keeps(kind: str, entry: dict, timer: Timer, replacing: dict[str, str]) -> bool:
    """Whether the pending timer ``entry`` already stands for ``timer``: the same id, or, for a
    lazy kind, one due no later (it fires, finds it is early and moves itself) unless it is
    the very job asking to be replaced."""
    if entry["id"] == timer.job_id:
        return True
    return (kind in LAZY_KINDS and replacing.get(kind) != entry["id"]
            and float(entry.get("due", math.inf)) <= timer.due)


@dataclass
class _Plan:
    schedule: list = field(default_factory=list)  # [Timer]: written (again), not yet handed
    remove: list = field(default_factory=list)  # ids replaced or dropped
    drop: list = field(default_factory=list)  # kinds whose entry goes

    def __bool__(self) -> bool:
        return bool(self.schedule or self.remove or self.drop)


def _plan(current: dict[str, dict], wanted: dict[str, Timer], extra, replacing: dict[str, str],
          dead: frozenset | set = frozenset(), keep: frozenset = frozenset()) -> _Plan:
    """What to drop and write so that the table's timers match ``wanted`` (pure).

    ``dead``: ids (the reconciler's check) handed to RQ whose job is gone, failed or canceled.
    ``keep``: kinds whose pending timer stays even while not wanted (``keep_lazy``).
    """
    plan = _Plan()
    for kind, entry in current.items():
        timer = wanted.get(kind)
        if timer is None:
            kept = kind in keep and replacing.get(kind) != entry["id"] and entry["id"] not in dead
            if not kind.startswith("notify:") and not kept:
                plan.remove.append(entry["id"])
                plan.drop.append(kind)
        elif not _keeps(kind, entry, timer, replacing) or \
                (entry["id"] in dead and entry["id"] != timer.job_id):
            plan.remove.append(entry["id"])
    for kind, timer in wanted.items():
        have = current.get(kind)
        if have is None or not _keeps(kind, have, timer, replacing) or have["id"] in dead:
            plan.schedule.append(timer)
    for timer in extra or ():
        old = current.get(timer.kind)
        if old and old["id"] != timer.job_id:
            plan.remove.append(old["id"])
        plan.schedule.append(timer)
    return plan


# KEYS[1] the timers hash. ARGV: version, expected rev, number of fields to delete, those
# fields, then field/value pairs to set. Applies only while no newer version is stamped and
# rev is the one the plan was made from. Returns -1 (a newer version: skip), 0 (rev moved on:
# plan again) or 1 (written).
_CAS_LUA = """
local stamped = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if stamped > tonumber(ARGV[1]) then return -1 end
if (redis.call('HGET', KEYS[1], 'rev') or '0') ~= ARGV[2] then return 0 end
local n = tonumber(ARGV[3])
for i = 4, 3 + n do redis.call('HDEL', KEYS[1], ARGV[i]) end
for i = 4 + n, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
if tonumber(ARGV[1]) > stamped then redis.call('HSET', KEYS[1], 'version', ARGV[1]) end
redis.call('HINCRBY', KEYS[1], 'rev', 1)
return 1
"""
_CAS_SHA = hashlib.sha1(_CAS_LUA.encode()).hexdigest()


def _cas(tables, table_id: str, version: int, rev: str, delete: list[str],
         put: dict[str, str]) -> int:
    args = [version, rev, len(delete), *delete]
    for k, v in put.items():
        args += [k, v]
    key = timers_key(table_id)
    try:
        return int(tables.evalsha(_CAS_SHA, 1, key, *args))
    except NoScriptError:
        return int(tables.eval(_CAS_LUA, 1, key, *args))


def _after(stored: dict[str, str], delete: list[str], put: dict[str, str]) -> dict[str, str]:
    out = {k: v for k, v in stored.items() if k not in delete}
    out.update(put)
    return out


def apply_timers(tables, table_id: str, version: int, wanted: dict[str, Timer], *, now: float,
                 verify: bool = False, keep: frozenset = frozenset(),
                 extra: list[Timer] | None = None, replacing: dict[str, str] | None = None,
                 queue=None, stored: dict[str, str] | None = None, shards: int | None = None) -> dict:
    """Make the table's timers (``table:{ID}:timers`` and its due index entry) match ``wanted``.

    Does nothing when the hash already belongs to a newer version. A pending lazy timer
    (``away``, ``expire``) due no later than the wanted one stays. ``verify`` (the
    reconciler; needs ``queue``, the queue Redis) also re-arms a timer handed to RQ whose
    job is gone, failed or canceled, and always puts the index entry back (``queue``: the
    queue Redis or the queue shards; the table's own shard is asked). ``extra`` are
    one-off timers (notices). ``replacing`` (kind -> job id): a lazy job that fired early
    and asks to be replaced by the wanted timer (only while the hash still names it).
    ``stored``: the hash as just read (the append read it back). ``shards``: how many queue
    shards there are (the due index is split by shard; default: ``queue``'s, else one). ``now`` is unused by the
    write itself (due times are absolute) and kept for the callers' clarity.
    Returns ``{"scheduled": [ids], "removed": [ids], "skipped": bool}``.
    """
    replacing = replacing or {}
    if shards is None:
        shards = len(queues.shards(queue)) if queue is not None else 1
    for _ in range(CAS_ATTEMPTS):
        if stored is None:
            stored = read_timers(tables, table_id)
        if int(stored.get("version", 0)) > version:
            return {"scheduled": [], "removed": [], "skipped": True}
        current = _current(stored)
        sent = _sent(stored)
        dead: set = set()
        if verify:
            handed = [e["id"] for k, e in current.items() if sent.get(k) == e["id"]]
            shard = queues.table_queue(queues.shards(queue), table_id)
            dead = {i for i, st in _statuses(shard, handed).items() if st not in LIVE}
        plan = _plan(current, wanted, extra, replacing, dead, keep)
        if not plan and int(stored.get("version", 0)) == version:
            if verify:  # the index entry may be what a crash lost
                due = next_due(stored)
                if due is not None:
                    index.mark_due(tables, table_id, due, shards)
            return {"scheduled": [], "removed": [], "skipped": False}
        delete = list(plan.drop) + [SENT + k for k in plan.drop]
        delete += [SENT + t.kind for t in plan.schedule]  # written again: not handed yet
        put = {t.kind: t.to_json() for t in plan.schedule}
        if put and not unsent(stored):  # nothing pending until now: the table may have left
            index.add_live(tables, table_id)  # the live set; findable before the hash is written
        done = _cas(tables, table_id, version, stored.get("rev", "0"), delete, put)
        if done == -1:
            return {"scheduled": [], "removed": [], "skipped": True}
        if done == 0:
            stored = None  # another writer moved the hash on: plan again from what it holds now
            continue
        due = next_due(_after(stored, delete, put))
        if due is not None:
            _mark_due(tables, table_id, due, shards)
        return {"scheduled": [t.job_id for t in plan.schedule], "removed": plan.remove,
                "skipped": False}
    raise RuntimeError(f"table {table_id}: the timers hash kept changing under {CAS_ATTEMPTS} plans")


def _mark_due(tables, table_id: str, due: float, shards: int = 1) -> None:
    """The index write after the hash (a seam for the crash-window tests)."""
    index.mark_due(tables, table_id, due, shards)


# One round trip for the hook's steady state when called without the append's read-back:
# stamp the version (never lower it) and read the timers hash and, when asked, the notice URLs.
_READ_LUA = """
local old = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if tonumber(ARGV[1]) > old then redis.call('HSET', KEYS[1], 'version', ARGV[1]) end
local urls = {}
if #KEYS > 1 then urls = redis.call('HGETALL', KEYS[2]) end
return {old, redis.call('HGETALL', KEYS[1]), urls}
"""


_READ_SHA = hashlib.sha1(_READ_LUA.encode()).hexdigest()


def _read_and_stamp(redis, table_id: str, version: int, urls: bool):
    keys = [timers_key(table_id)] + ([notify_key(table_id)] if urls else [])
    try:
        old, stored, found = redis.evalsha(_READ_SHA, len(keys), *keys, version)
    except NoScriptError:  # the first call on this server (or after SCRIPT FLUSH)
        old, stored, found = redis.eval(_READ_LUA, len(keys), *keys, version)
    return int(old), flat_hash(stored), flat_hash(found)


def reschedule_early(tables, table_id: str, version: int, wanted: dict[str, Timer], kind: str,
                     own_id: str | None, now: float, shards: int = 1) -> dict:
    """A lazy job (``own_id``) fired before its timer is due: the wanted timers replace it.

    Its own entry in ``table:{ID}:timers`` goes only while it still names this job. Should
    the wanted timer get this job's own id (the same due second, read on another clock), it
    is scheduled as ``<id>_r``: the ticker would find the running job under that id and
    hand nothing.
    """
    timer = wanted.get(kind)
    if timer is not None and own_id is not None and timer.job_id == own_id:
        wanted = {**wanted, kind: dataclasses.replace(timer, job_id=f"{own_id}_r")}
    replacing = {kind: own_id} if own_id is not None else {}
    return apply_timers(tables, table_id, version, wanted, now=now, replacing=replacing, shards=shards)


# --- notices -----------------------------------------------------------------

def _notice_seats(state, records: list[dict]) -> list[tuple[int, str]]:
    """The seats the new records call a notice for, and why (pure)."""
    types = {r["type"] for r in records}
    wanted = []
    if state.status == "playing" and state.turn is not None and types & TURN_STARTS \
            and not _is_bot(state, state.turn):
        wanted.append((state.turn, "turn"))
    if "AwayOpened" in types and state.away_open is not None:
        wanted.extend((s, "away") for s in state.humans() if s != state.away_open)
    return wanted


def _notices(table_id: str, state, wanted: list[tuple[int, str]], urls: dict[str, str],
             now: float) -> list[Timer]:
    """Turn notices (and PLAYER AWAY notices) for the seats ``wanted`` that registered a URL."""
    out = []
    for seat, reason in wanted:
        tag = state.turn_seq if reason == "turn" else f"away{state.turn_seq}"
        if str(seat) in urls:
            out.append(Timer(f"notify:{seat}", f"{table_id}_notify_{seat}_{tag}",
                             "workers.jobs.notify", (table_id, seat, state.version), now,
                             {"reason": reason}, NOTIFY_RETRY))
        occupant = state.seats[seat]
        if occupant is not None and push_marker(occupant.player) in urls:  # workers/push.py
            out.append(Timer(f"notify:push:{seat}", f"{table_id}_push_{seat}_{tag}",
                             "workers.push.turn_push", (table_id, seat, state.version), now,
                             {"reason": reason}, NOTIFY_RETRY))
    return out


# --- failures of the hook: never swallowed ------------------------------------------------

class FailureCount:
    """Failed schedules in this process (``escoba_schedule_failures_total`` in /metrics)."""

    def __init__(self):
        self._lock = threading.Lock()
        self.value = 0

    def add(self) -> None:
        with self._lock:
            self.value += 1


FAILURES = FailureCount()


def _failed(tables, table_id: str, version) -> None:
    """Log it with the table id, count it, and ask the reconciler to repair the table first."""
    FAILURES.add()
    log.exception("could not schedule the timers of table %s at version %s (the reconciler "
                  "repairs them)", table_id, version, extra={"fields": {"table_id": table_id}})
    try:
        index.note_repair(tables, table_id)
    except Exception:  # the store itself is down: the reconciler's walk finds the table
        log.warning("could not note table %s for repair", table_id)


# --- the hook ------------------------------------------------------------------

def steady(state, stored: dict[str, str], urls: dict[str, str], records: list[dict], config) -> bool:
    """Whether these records surely change none of the table's timers: the common move, where a
    human's turn goes on (the same or another human's), its ``away`` and ``expire`` timers pending
    and due no later than the ones now wanted (lazy: they stay), nothing else pending but notices,
    and no notice URL registered.

    A shortcut of the full plan, not a second one: True implies that ``due_timers``, ``_notices``
    and ``_plan`` would find nothing to write (a property test holds it to them); False says
    nothing, and the full plan decides. It exists because Python on a move's path runs far slower in
    the server than in a warm loop, so the full plan's some fifty calls are a real cost (docs/benchmarks.md)
    for the great majority of moves, which change no timer.
    """
    if urls or state.status != "playing" or state.turn is None or state.away_open is not None:
        return False
    seat = state.seats[state.turn]
    if seat is None or seat.kind == "bot":
        return False
    away, expire = stored.get("away"), stored.get("expire")
    if away is None or expire is None:
        return False
    for kind in stored:
        if kind not in _STEADY_FIELDS and not kind.startswith("notify:"):
            return False
    times = log_times(records)
    if times.move_at is None:
        return False
    start = times.turn_at if times.turn_at is not None else times.last_at
    return (orjson.loads(away).get("due", math.inf) <= start + config.away_after
            and orjson.loads(expire).get("due", math.inf) <= times.move_at + config.expire_after)


# what a steady table's hash may hold besides notices: its two lazy timers, and the hash's own fields
_STEADY_FIELDS = frozenset({"away", "expire", SENT + "away", SENT + "expire", *META})


def after_change(tables, table_id: str, state, records: list[dict], config,
                 appended=None, shards: int | None = None) -> dict | None:
    """Reschedule ``table_id``'s timers after an append (``records``: the new records).

    ``appended`` (events.store.Appended): the timers and notice URLs as the append itself
    read them back, the version already stamped (``TimersHook``); without it, one Lua
    call here stamps and reads them. A failure here must not fail the move (it is in the
    log already): it is logged with the table id, counted (``FAILURES``, in /metrics)
    and the table goes to the reconciler's repair set. ``shards``: how many queue shards
    there are (default: ``config``'s).
    """
    try:
        if not records:
            return None
        if appended is not None:
            old, (stored, urls) = appended.stamped_over, appended.hashes
            if old <= state.version and steady(state, stored, urls, records, config):
                return {"scheduled": [], "removed": [], "skipped": False}  # the common move
        seats = _notice_seats(state, records)
        if appended is None:
            old, stored, urls = _read_and_stamp(tables, table_id, state.version, bool(seats))
        if old > state.version:  # a hook for a newer version got here first
            return {"scheduled": [], "removed": [], "skipped": True}
        current = _current(stored)
        # A pending away timer is due no later than this turn's (lazy): the newest records'
        # time is bound enough to keep it, and spares reading the log back for the turn's start.
        times = times_for(tables, table_id, state, records, turn_bound="away" in current)
        wanted = due_timers(table_id, state, times, config)
        extra = _notices(table_id, state, seats, urls, times.last_at)
        keep = keep_lazy(state)
        if not _plan(current, wanted, extra, {}, keep=keep):
            return {"scheduled": [], "removed": [], "skipped": False}  # nothing to change
        return apply_timers(tables, table_id, state.version, wanted, now=times.last_at,
                            extra=extra, keep=keep, stored=stored,
                            shards=shard_count(config) if shards is None else shards)
    except Exception:
        _failed(tables, table_id, getattr(state, "version", "?"))
        return None


class TimersHook(ReadsBack, NotesUnacknowledged, WritesRow):
    """``TableService(on_change=...)`` in the API and the workers: the timers after each append.

    ``read_back`` has the append's own Lua step stamp the version in ``table:{ID}:timers``
    and read it and ``table:{ID}:notify`` back, so a move that changes no timer costs no
    round trip of its own. Only the tables' store is written, never the queue Redis.
    """

    def __init__(self, tables, config, shards: int | None = None):
        self.redis = tables
        self.config = config
        # the queue shards (the due index is split by them): the process's own, else the settings'
        self.shards = shard_count(config) if shards is None else shards

    def read_back(self, table_id: str) -> tuple[tuple[str, str], bool]:
        return (timers_key(table_id), notify_key(table_id)), True

    def __call__(self, table_id: str, state, records: list[dict], appended=None) -> None:
        after_change(self.redis, table_id, state, records, self.config, appended, self.shards)
        my_tables.after_change(self.redis, table_id, state, records)  # the players' lists (rare writes)

    # the table's row in its players' lists, written in the append's own step (events/my_tables.py)
    row = staticmethod(my_tables.row_fields)

    def unacknowledged(self, table_id: str) -> None:
        """An append its replicas did not acknowledge in time (events/replication.py): no timers
        followed it. If it stands, the reconciler plans them from the log (a keyed retry does
        it sooner); if a failover loses it, the repair finds the table as it was."""
        try:
            index.note_repair(self.redis, table_id)
        except Exception:  # the store itself is away: the reconciler's walk finds the table
            log.warning("could not note table %s for repair", table_id)


def on_change_hook(tables, config, shards: int | None = None) -> TimersHook:
    """``TableService(on_change=...)`` for a process that only needs the timers."""
    return TimersHook(tables, config, shards)


def shard_count(config) -> int:
    """How many queue shards ``config`` names (``ESCOBA_QUEUE_URL``; none: one)."""
    return max(1, len(getattr(config, "queue_urls", ()) or ()))


class HookFailed(Exception):
    """A job's append stood but its timers could not be written (the store went away between
    the two): the job is retried later, finds the table moved on and writes them (``refresh``)."""

    transient = True  # retried on the store's backoff (workers.jobloop), not cut short as a bug


def refresh(tables, table_id: str, state, config, shards: int | None = None) -> dict:
    """Make the table's timers what its log calls for now (a job that found its table moved on:
    the hook of the move that moved it may have failed with the store away)."""
    shards = shard_count(config) if shards is None else shards
    wanted = timers_from_log(tables, table_id, state, config)
    result = apply_timers(tables, table_id, state.version, wanted, now=0.0, keep=keep_lazy(state),
                          shards=shards)
    # the hash may have been right and its due-index entry what the failure lost
    due = next_due(read_timers(tables, table_id))
    if due is not None:
        index.mark_due(tables, table_id, due, shards)
    return result


def pending_jobs(tables, table_id: str, queue=None) -> list[str]:
    """Ids of the table's timers still to run: those not yet handed to RQ and, given the queue
    Redis, those handed whose job is still waiting or running. (To check they stay few.)"""
    stored = read_timers(tables, table_id)
    sent = _sent(stored)
    ids: list[str] = []
    handed: list[str] = []
    for kind, entry in _current(stored).items():
        (handed if sent.get(kind) == entry["id"] else ids).append(entry["id"])
    if queue is not None:
        shard = queues.table_queue(queues.shards(queue), table_id)
        ids += [i for i, st in _statuses(shard, handed).items() if st in LIVE]
    return sorted(set(ids))


def timer_due(tables, table_id: str, job_id: str) -> float | None:
    """The due time the table's hash holds for ``job_id`` (None: not there)."""
    for entry in _current(read_timers(tables, table_id)).values():
        if entry["id"] == job_id:
            return float(entry["due"])
    return None


def utcnow_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")


__all__ = [
    "FAILURES", "INLINE_DELAY", "LAZY_KINDS", "QUEUE_NAME", "HookFailed", "LogTimes", "Timer", "TimersHook",
    "after_change", "apply_timers", "due_timers", "job_alive", "log_times", "next_due",
    "notify_key", "on_change_hook", "parse_at", "pending_jobs", "queue_for", "read_timers", "refresh",
    "reschedule_early", "shard_count", "steady", "timer_due", "times_for", "timers_from_log", "timers_key", "unsent",
    "utcnow_iso",
]
