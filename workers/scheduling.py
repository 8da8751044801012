"""Which timers a table needs, and keeping RQ's jobs in step with them.

Every append runs ``after_change`` (TableService's ``on_change`` hook, in the
API and in the worker). It works out the table's due timers from its state and
the times in its log, and makes RQ's pending jobs match them:

========  ================================  ==========================================
kind      when                              due
========  ================================  ==========================================
bot       a bot's turn; or between rounds   last record + bot_delay
          when every player is a bot
away      a human's turn (away not open)    the turn's start + away_after
expire    any status but finished/expired   last move + expire_after
rematch   finished: every human accepted    now (start_rematch)
          finished: offer still open        last record + rematch_window (lapse_rematch)
========  ================================  ==========================================

plus a turn notice (``notify:<seat>``) when it becomes the turn of a human
seat that registered a URL in ``table:{ID}:notify``, and a notice to the
others when PLAYER AWAY opens.

Job ids are deterministic: ``<table>_<kind>_<n>``, where ``n`` is the table
version the timer belongs to for ``bot`` and ``rematch``, and the due time in
seconds, rounded up, for the lazy ``away`` and ``expire``. (RQ 3 accepts
only letters, digits, ``_`` and ``-`` in a job id, so not ``:``; table ids are
eight URL-safe characters, so ``<table>_`` is a prefix of that table's jobs
only.) A table keeps at most one pending job per kind; the current id (and due
time) of each kind is kept in the hash ``table:{ID}:timers``, with the newest
version a hook has seen. The append's own Lua step raises that version and
reads the hash back for the hook (``TimersHook``); a slow hook for an older version finds a newer one and does
nothing. Only when a job must change does it reschedule: delete the job it
replaces (from the scheduled registry, the queue and its hash) and schedule
the new one, in one MULTI/EXEC guarded by WATCH on that hash.

Lazy timers: the due times of ``away`` (the turn's start + away_after) and
``expire`` (the last move + expire_after) only move later as a table plays. A
pending job of those kinds due no later than the wanted time stays (no write);
when it fires (``workers.jobs``) it works out its timer again from the log and
acts only if it is really due, otherwise it replaces itself with the timer at
the later time (``reschedule_early``).

Why the version in a bot's id: a bot job's own move reschedules the next bot job from inside
that job; with one fixed id per kind, RQ would write the finished job's hash
over the new job's (or delete it, with ``result_ttl=0``) and the chain would
stop. With the suffix, the same timer always gets the same id (so the
reconciler, rebuilding it, replaces it rather than doubling it) while the next
timer of the same kind never collides with a job still running.

Scheduling precision: RQ's scheduled registry has one-second resolution and
its scheduler polls every second. A timer already due is enqueued at once; a
bot turn due in under ``INLINE_DELAY`` seconds is enqueued at once too, and
the job waits the remainder itself (a short ``bot_delay``); anything else goes
through ``enqueue_at`` at the due time rounded up to the second, so a timer
fires up to about a second late (the scheduler's poll), never early.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

import orjson
from redis.exceptions import NoScriptError, WatchError
from rq import Queue, Retry
from rq.job import Job
from rq.registry import ScheduledJobRegistry

from events.store import flat_hash, table_key

from .push import marker as push_marker

log = logging.getLogger("escoba.workers")

QUEUE_NAME = "escoba"
INLINE_DELAY = 1.0  # seconds: anything due sooner is enqueued now and waits inside the job
JOB_TIMEOUT = 120
FAILURE_TTL = 7 * 24 * 3600
NOTIFY_RETRY = (1, 2, 4, 8, 16)
TIMER_KINDS = ("bot", "away", "expire", "rematch")
# Lazy timers: their due time only ever moves later as a table plays, so a pending job due no
# later than the one wanted stays; when it fires it checks the log and, if early, moves itself.
LAZY_KINDS = frozenset({"away", "expire"})
# Records that are not "a move" for expiry: the timers' own facts.
NOT_MOVES = frozenset({"AwayOpened", "RematchLapsed", "TableExpired"})
# Records after which a new turn begins (turn_seq moves on).
TURN_STARTS = frozenset({"RoundDealt", "CardPlayed"})
TAIL = 32  # records read back from the log to find when the turn began / the last move


def timers_key(table_id: str) -> str:
    return table_key(table_id, "timers")


def notify_key(table_id: str) -> str:
    return table_key(table_id, "notify")


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

    def to_json(self) -> str:
        return json.dumps({"id": self.job_id, "due": self.due, "func": self.func})


@dataclass(frozen=True)
class LogTimes:
    """When things last happened at a table, read from its log."""

    last_at: float  # the last record: "now" for the hook
    move_at: float | None  # the last record that was a move (not a timer's own fact)
    move_version: int | None
    turn_at: float | None  # when the current turn began (None: not found in what was read)


# --- reading the log's times -------------------------------------------------

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
    return out


def timers_from_log(redis, table_id: str, state, config) -> dict[str, Timer]:
    """A table's due timers from its log alone (for the reconciler)."""
    if state.version == 0:
        return {}
    return due_timers(table_id, state, times_for(redis, table_id, state), config)


# --- RQ plumbing ---------------------------------------------------------------

def queue_for(redis) -> Queue:
    return Queue(QUEUE_NAME, connection=redis)


def _text(x):
    return x.decode() if isinstance(x, bytes) else x


def _remove_job(pipe, queue: Queue, job_id: str, running: bool) -> None:
    """Drop a pending job wherever it waits: the scheduled registry, the queue, its hash.

    A running job keeps its hash (RQ still needs it to finish; with ``result_ttl=0`` it
    deletes the hash itself): it is the job whose own move made this change.
    """
    pipe.zrem(ScheduledJobRegistry(queue=queue).key, job_id)
    pipe.lrem(queue.key, 0, job_id)
    if not running:
        pipe.delete(Job.key_for(job_id))


def _enqueue(pipe, queue: Queue, timer: Timer, now: float, retry: Retry | None = None) -> None:
    kwargs = dict(timer.kwargs)
    options = {
        "job_id": timer.job_id,
        "job_timeout": JOB_TIMEOUT,
        "result_ttl": 0,
        "failure_ttl": FAILURE_TTL,
        "retry": retry,
        "pipeline": pipe,
    }
    wait = timer.due - now
    is_bot = timer.func == "workers.jobs.bot_turn"
    if wait <= 0 or (is_bot and wait < INLINE_DELAY):
        if wait > 0:
            kwargs["delay"] = round(wait, 3)
        queue.enqueue(timer.func, *timer.args, **kwargs, **options)
    else:
        # the registry keeps whole seconds: round up, so that a timer never fires early
        when = datetime.fromtimestamp(math.ceil(timer.due), tz=UTC)
        queue.enqueue_at(when, timer.func, *timer.args, **kwargs, **options)


LIVE = frozenset({"scheduled", "queued", "started", "deferred", "rate_limited"})


def _status(redis, job_id: str) -> str | None:
    status = redis.hget(Job.key_for(job_id), "status")
    return None if status is None else _text(status)


def _statuses(redis, job_ids) -> dict[str, str | None]:
    """RQ's status of each job, in one round trip."""
    ids = list(dict.fromkeys(job_ids))
    if not ids:
        return {}
    with redis.pipeline(transaction=False) as pipe:
        for job_id in ids:
            pipe.hget(Job.key_for(job_id), "status")
        found = pipe.execute()
    return {i: None if v is None else _text(v) for i, v in zip(ids, found, strict=True)}


def job_alive(redis, job_id: str) -> bool:
    """Whether a job is still waiting or running (not missing, failed, canceled or stopped)."""
    return _status(redis, job_id) in LIVE


def keep_lazy(state) -> frozenset:
    """The kinds whose pending job the hook leaves alone even while not wanted: the lazy ones,
    while the game goes on. Between rounds no turn is open, so no ``away`` is wanted; keeping
    its job spares every round two reschedules (it fires 48 hours on at the soonest, finds
    itself early or unwanted and moves or drops itself). A finished table drops them."""
    return LAZY_KINDS if state.status in ("playing", "round_over") else frozenset()


def _current(stored: dict[str, str]) -> dict[str, dict]:
    """The ``table:{ID}:timers`` hash (decoded) as kind -> {"id", "due", "func"}."""
    return {k: orjson.loads(v) for k, v in stored.items() if k != "version"}


def _keeps(kind: str, entry: dict, timer: Timer, replacing: dict[str, str]) -> bool:
    """Whether the pending job ``entry`` already stands for ``timer``: the same id, or, for a
    lazy kind, a job due no later (it fires, finds it is early and moves itself) unless it is
    the very job asking to be replaced."""
    if entry["id"] == timer.job_id:
        return True
    return (kind in LAZY_KINDS and replacing.get(kind) != entry["id"]
            and float(entry.get("due", math.inf)) <= timer.due)


@dataclass
class _Plan:
    schedule: list = field(default_factory=list)  # [(Timer, Retry | None)]
    remove: list = field(default_factory=list)  # job ids
    drop: list = field(default_factory=list)  # hash fields

    def __bool__(self) -> bool:
        return bool(self.schedule or self.remove or self.drop)


def _plan(current: dict[str, dict], wanted: dict[str, Timer], extra, replacing: dict[str, str],
          dead: frozenset | set = frozenset(), keep: frozenset = frozenset()) -> _Plan:
    """What to remove and schedule so that the pending jobs match ``wanted`` (pure).

    ``dead``: ids (the reconciler's check) whose job is gone, failed or canceled.
    ``keep``: kinds whose pending job stays even while not wanted (``keep_lazy``).
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
        entry = current.get(kind)
        if entry is None or not _keeps(kind, entry, timer, replacing) or entry["id"] in dead:
            plan.schedule.append((timer, None))
    for timer, retry in extra or ():
        old = current.get(timer.kind)
        if old and old["id"] != timer.job_id:
            plan.remove.append(old["id"])
        plan.schedule.append((timer, retry))
    return plan


def apply_timers(redis, table_id: str, version: int, wanted: dict[str, Timer], *, now: float,
                 verify: bool = False, keep: frozenset = frozenset(),
                 extra: list[tuple[Timer, Retry | None]] | None = None,
                 replacing: dict[str, str] | None = None) -> dict:
    """Make the table's pending jobs match ``wanted``.

    Runs as one transaction, WATCHing ``table:{ID}:timers``; does nothing when that hash
    already belongs to a newer version. A pending lazy timer (``away``, ``expire``) due no
    later than the wanted one stays. ``verify`` (the reconciler) also reschedules a wanted
    job that is gone, failed or was canceled. ``extra`` are one-off jobs (notices) to
    enqueue in the same step. ``replacing`` (kind -> job id): a lazy job that fired early
    and asks to be replaced by the wanted timer (only while the hash still names it).
    Returns ``{"scheduled": [ids], "removed": [ids], "skipped": bool}``.
    """
    key = timers_key(table_id)
    queue = queue_for(redis)
    replacing = replacing or {}
    with redis.pipeline() as pipe:
        while True:
            try:
                pipe.watch(key)
                stored = {_text(k): _text(v) for k, v in pipe.hgetall(key).items()}
                if int(stored.get("version", 0)) > version:
                    pipe.unwatch()
                    return {"scheduled": [], "removed": [], "skipped": True}
                current = _current(stored)
                dead: set = set()
                if verify:
                    ids = [e["id"] for e in current.values()] + [t.job_id for t in wanted.values()]
                    dead = {i for i, st in _statuses(redis, ids).items() if st not in LIVE}
                plan = _plan(current, wanted, extra, replacing, dead, keep)
                if not plan and int(stored.get("version", 0)) == version:
                    pipe.unwatch()
                    return {"scheduled": [], "removed": [], "skipped": False}
                # Watch the jobs to be removed: one that starts meanwhile restarts this step.
                touched = plan.remove + [t.job_id for t, _ in plan.schedule if verify]
                if touched:
                    pipe.watch(key, *(Job.key_for(i) for i in touched))
                running = {i for i, st in _statuses(redis, touched).items() if st == "started"}
                pipe.multi()
                for job_id in plan.remove:
                    _remove_job(pipe, queue, job_id, job_id in running)
                known = {e["id"] for e in current.values()}
                for timer, retry in plan.schedule:
                    if timer.job_id in running:
                        continue  # the same timer is running right now: nothing to add
                    if verify or timer.job_id in known:
                        _remove_job(pipe, queue, timer.job_id, False)  # a failed or stale copy
                    _enqueue(pipe, queue, timer, now, retry)
                if plan.drop:
                    pipe.hdel(key, *plan.drop)
                mapping = {"version": str(version)}
                mapping.update({t.kind: t.to_json() for t, _ in plan.schedule})
                pipe.hset(key, mapping=mapping)
                pipe.execute()
                return {"scheduled": [t.job_id for t, _ in plan.schedule], "removed": plan.remove,
                        "skipped": False}
            except WatchError:
                continue


# One round trip for the hook's steady state: stamp the version (never lower it) and read the
# timers hash and, when asked, the seats' notice URLs. Returns {old version, timers, urls}.
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


def reschedule_early(redis, table_id: str, version: int, wanted: dict[str, Timer], kind: str,
                     own_id: str | None, now: float) -> dict:
    """A lazy job (``own_id``) fired before its timer is due: the wanted timers replace it.

    Its own entry in ``table:{ID}:timers`` goes only while it still names this job. Should
    the wanted timer get this job's own id (the same due second, read on another clock), it
    is scheduled as ``<id>_r``: a running job's id must not be reused.
    """
    timer = wanted.get(kind)
    if timer is not None and own_id is not None and timer.job_id == own_id:
        wanted = {**wanted, kind: dataclasses.replace(timer, job_id=f"{own_id}_r")}
    replacing = {kind: own_id} if own_id is not None else {}
    return apply_timers(redis, table_id, version, wanted, now=now, replacing=replacing)


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
             now: float) -> list:
    """Turn notices (and PLAYER AWAY notices) for the seats ``wanted`` that registered a URL."""
    out = []
    for seat, reason in wanted:
        tag = state.turn_seq if reason == "turn" else f"away{state.turn_seq}"
        if str(seat) in urls:
            timer = Timer(f"notify:{seat}", f"{table_id}_notify_{seat}_{tag}", "workers.jobs.notify",
                          (table_id, seat, state.version), now, {"reason": reason})
            out.append((timer, Retry(max=len(NOTIFY_RETRY), interval=list(NOTIFY_RETRY))))
        occupant = state.seats[seat]
        if occupant is not None and push_marker(occupant.player) in urls:  # workers/push.py
            timer = Timer(f"notify:push:{seat}", f"{table_id}_push_{seat}_{tag}",
                          "workers.push.turn_push", (table_id, seat, state.version), now,
                          {"reason": reason})
            out.append((timer, Retry(max=len(NOTIFY_RETRY), interval=list(NOTIFY_RETRY))))
    return out


# --- the hook ------------------------------------------------------------------

def after_change(redis, table_id: str, state, records: list[dict], config,
                 appended=None) -> dict | None:
    """Reschedule ``table_id``'s timers after an append (``records``: the new records).

    ``appended`` (events.store.Appended): the timers and notice URLs as the append itself
    read them back, the version already stamped (``TimersHook``); without it, one Lua
    call here stamps and reads them. Never raises: a failure here must not fail the move;
    the reconciler repairs it.
    """
    try:
        if not records:
            return None
        seats = _notice_seats(state, records)
        if appended is not None:
            old, (stored, urls) = appended.stamped_over, appended.hashes
        else:
            old, stored, urls = _read_and_stamp(redis, table_id, state.version, bool(seats))
        if old > state.version:  # a hook for a newer version got here first
            return {"scheduled": [], "removed": [], "skipped": True}
        current = _current(stored)
        # A pending away job is due no later than this turn's (lazy): the newest records'
        # time is bound enough to keep it, and spares reading the log back for the turn's start.
        times = times_for(redis, table_id, state, records, turn_bound="away" in current)
        wanted = due_timers(table_id, state, times, config)
        extra = _notices(table_id, state, seats, urls, times.last_at)
        keep = keep_lazy(state)
        if not _plan(current, wanted, extra, {}, keep=keep):
            return {"scheduled": [], "removed": [], "skipped": False}  # nothing to change
        return apply_timers(redis, table_id, state.version, wanted, now=times.last_at, extra=extra,
                            keep=keep)
    except Exception:
        log.exception("could not schedule the timers of table %s at version %s",
                      table_id, getattr(state, "version", "?"))
        return None


class TimersHook:
    """``TableService(on_change=...)`` in the API and the workers: the timers after each append.

    ``read_back`` has the append's own Lua step stamp the version in ``table:{ID}:timers``
    and read it and ``table:{ID}:notify`` back, so a move costs one round trip, not two.
    """

    def __init__(self, redis, config):
        self.redis = redis
        self.config = config

    def read_back(self, table_id: str) -> tuple[tuple[str, str], bool]:
        return (timers_key(table_id), notify_key(table_id)), True

    def __call__(self, table_id: str, state, records: list[dict], appended=None) -> None:
        after_change(self.redis, table_id, state, records, self.config, appended)


def on_change_hook(redis, config) -> TimersHook:
    """``TableService(on_change=...)`` for a process that only needs the timers."""
    return TimersHook(redis, config)


def pending_jobs(redis, table_id: str) -> list[str]:
    """Ids of the table's jobs still waiting (scheduled or queued): to check they stay few."""
    queue = queue_for(redis)
    prefix = job_prefix(table_id)
    ids = [_text(x) for x in redis.zrange(ScheduledJobRegistry(queue=queue).key, 0, -1)]
    ids += [_text(x) for x in redis.lrange(queue.key, 0, -1)]
    return sorted({i for i in ids if i.startswith(prefix)})


def utcnow_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")


__all__ = [
    "INLINE_DELAY", "LAZY_KINDS", "QUEUE_NAME", "LogTimes", "Timer", "TimersHook", "after_change",
    "apply_timers", "due_timers",
    "job_alive", "log_times", "notify_key", "on_change_hook", "parse_at", "pending_jobs",
    "queue_for", "reschedule_early", "times_for", "timers_from_log", "timers_key", "utcnow_iso",
]
