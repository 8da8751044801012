"""The jobs RQ runs. They decide nothing themselves.

Each loads the table, checks it is still where the job was scheduled for
(the version; for the lazy ``away`` and ``expire``, whether the timer is due
by the log, else it reschedules itself later), asks the engine, and executes
at that version (``expected_version``) with an idempotency key, so a stale
job or a second run of the same job appends nothing. Refusals (``engine.RuleError``: the
table moved on, the turn is over) end the job quietly.

The TableService a job uses comes from ``workers.context``: the tables' store
(never the job's own RQ connection, which is its shard's queue Redis) with
``on_change`` = ``workers.scheduling.TimersHook``, so one job's append schedules
the next (bot after bot).
"""

from __future__ import annotations

import json
import logging
import random
import time

import engine
from engine.bots import choose as _bots_choose  # imported here, once: a forking worker's job processes inherit it
from engine.bots.common import Move
from engine.view import View
from events.config import Config

from . import context, outbound, scheduling
from .context import get_config, service, tables

log = logging.getLogger("escoba.workers")

SYSTEM = "system"
MAX_INLINE_WAIT = scheduling.INLINE_DELAY
NOTIFY_TIMEOUT = 5.0
# Luna thinks within her own default budget (100 ms of CPU, read on the clocks passed below).
BOT_BUDGET_MS = None
LAZY_ATTEMPTS = 5  # a lazy timer looks again this often when moves keep racing it


def _load(svc, table_id: str):
    # the whole log, as a writer reads it: a table moved on by an append not yet acknowledged is
    # stale to its jobs, which follow it only once it is (``_stale``)
    try:
        return svc.load(table_id, acknowledged=False)
    except engine.RuleError:
        return None


def _execute(svc, table_id: str, command: dict, *, actor: str, expected_version: int,
             key: str) -> str:
    failed_before = scheduling.FAILURES.value  # one job at a time in a job process
    try:
        outcome = svc.execute(table_id, engine.parse_command(command), actor=actor, expected_version=expected_version,
                              idempotency_key=key)
    except engine.RuleError as exc:
        log.info("table %s: %s at version %s refused (%s): the table moved on",
                 table_id, command.get("type"), expected_version, exc.code)
        return f"refused:{exc.code}"
    if scheduling.FAILURES.value > failed_before:  # the move stands, its timers do not (yet)
        raise scheduling.HookFailed(f"table {table_id}: {command.get('type')} appended at version "
                                    f"{outcome.version}, its timers not written")
    if outcome.repeated:
        return "repeated"
    return f"done:{outcome.version}"


def _stale(svc, table_id: str, state) -> str:
    """The job's table moved on: its timers are made what the log calls for (the move that moved
    it may have had its hook fail with the store away, and this job be its retry)."""
    if state is not None and state.version > 0:
        # with replica acks, timers follow only a log the replicas hold (NotAcknowledged, a
        # ConnectionError, has the job retried later like any store that is away)
        svc.store.confirm_log(table_id, state.version)
        scheduling.refresh(svc.redis, table_id, state, get_config(), context.shard_count())
    return "stale"


# --- bots -------------------------------------------------------------------

def _choose(bot: str, view: View, rng: random.Random) -> Move:
    # the engine reads no clock: Luna's CPU budget and her wall-time bound are read on these
    return _bots_choose(bot, view, rng, budget_ms=BOT_BUDGET_MS, clock=time.process_time,
                        wall_clock=time.monotonic)


def bot_turn(table_id: str, version: int, delay: float = 0.0) -> str:
    """A bot's move (or, between rounds at a bots-only table, NEXT ROUND) at ``version``."""
    if delay > 0:
        time.sleep(min(delay, MAX_INLINE_WAIT))
    svc = service()
    state = _load(svc, table_id)
    if state is None or state.version != version:
        return _stale(svc, table_id, state)
    if state.status == "playing" and state.turn is not None:
        seat = state.turn
        occupant = state.seats[seat]
        if occupant is None or occupant.kind != "bot":
            return "not a bot's turn"
        rng = random.Random(f"{table_id}:{version}")
        command = dict(_choose(occupant.bot, engine.view(state, seat), rng))
    elif state.status == "round_over" and state.players and all(
        state.seats[p] is not None and state.seats[p].kind == "bot" for p in state.players
    ):
        seat = state.players[0]
        command = {"type": "next_round"}
    else:
        return "nothing to do"
    command["by"] = seat
    return _execute(svc, table_id, command, actor=f"seat:{seat}", expected_version=version,
                    key=f"bot:{version}")


# --- system timers ---------------------------------------------------------------

def _lazy_timer(kind: str, table_id: str, act) -> str:
    """Run the lazy timer ``kind`` (``away``, ``expire``) of ``table_id``, or move it later.

    Its due time is worked out again from the log (the fresh state, the times of its last
    records). Due now: ``act(svc, state, times)`` executes at the current version (with an
    idempotency key); a version conflict (a move meanwhile) means: look again. Not due yet
    (moves since it was scheduled): the job replaces itself with the timer at the right, later
    time and does nothing else. Nothing of the kind wanted now (between rounds; the hook keeps
    a lazy job while the game goes on): it drops its own entry and does nothing.
    """
    from rq import get_current_job

    job = get_current_job()
    redis = tables()
    own_id = job.id if job is not None else None
    config = get_config()
    svc = service(redis, config)
    for _ in range(LAZY_ATTEMPTS):
        state = _load(svc, table_id)
        if state is None or state.version == 0:
            return "stale"
        times = scheduling.times_for(redis, table_id, state)
        wanted = scheduling.due_timers(table_id, state, times, config)
        timer = wanted.get(kind)
        now = svc.clock()
        if timer is not None and timer.due <= now:
            outcome = act(svc, state, times)
            if outcome != "refused:version_conflict":
                return outcome
            continue
        # early, or not wanted now: the wanted timers replace this job (none of its kind: it goes)
        result = scheduling.reschedule_early(redis, table_id, state.version, wanted, kind, own_id,
                                             now, context.shard_count())
        if not result["skipped"]:
            return "stale" if timer is None else f"early: due at {timer.due}"
        # a hook for a newer version got there first: load that version and look again
    log.warning("table %s: %s timer gave up after %d attempts (the reconciler repairs it)",
                table_id, kind, LAZY_ATTEMPTS)
    return "gave up"


def away(table_id: str, turn_seq: int | None = None, version: int | None = None) -> str:
    """The current turn is still open after the away time: open PLAYER AWAY.

    A lazy timer (see ``_lazy_timer``): the arguments say what it was scheduled for; what it
    does is worked out from the log when it runs. AwayOpened's change notice goes to every
    socket; the after-change hook sends a notice to the others' registered URLs.
    """

    def act(svc, state, times):
        command = {"type": "open_away", "turn": state.turn_seq, "by": None}
        return _execute(svc, table_id, command, actor=SYSTEM, expected_version=state.version,
                        key=f"away:{state.turn_seq}")

    return _lazy_timer("away", table_id, act)


def expire(table_id: str, version: int | None = None) -> str:
    """No move for the expiry time since the last one: the table expires.

    A lazy timer (see ``_lazy_timer``): ``version`` is the last move it was scheduled after;
    the last move when it runs is what counts.
    """

    def act(svc, state, times):
        return _execute(svc, table_id, {"type": "expire", "by": None}, actor=SYSTEM,
                        expected_version=state.version, key=f"expire:{times.move_version}")

    return _lazy_timer("expire", table_id, act)


def start_rematch(table_id: str, version: int) -> str:
    """Every human accepted the rematch: the new game starts."""
    svc = service()
    state = _load(svc, table_id)
    if state is None or state.version != version or not state.rematch_ready():
        return _stale(svc, table_id, state)
    return _execute(svc, table_id, {"type": "start_rematch", "by": None}, actor=SYSTEM,
                    expected_version=version, key=f"rematch:{version}")


def lapse_rematch(table_id: str, version: int) -> str:
    """Nobody answered the rematch offer in time: it lapses."""
    svc = service()
    state = _load(svc, table_id)
    if state is None or state.version != version:
        return _stale(svc, table_id, state)
    return _execute(svc, table_id, {"type": "lapse_rematch", "by": None}, actor=SYSTEM,
                    expected_version=version, key=f"lapse:{version}")


def compact(table_id: str, version: int) -> str:
    """The table closed for good at ``version``: its log becomes one compressed value."""
    from events import compaction

    svc = service()
    state = _load(svc, table_id)
    if state is None or state.version != version or not compaction.closed_for_good(state):
        return "stale"
    done = compaction.compact(svc.redis, table_id, version)
    return "stale" if done is None else f"compacted:{done['events']}:{done['archive_bytes']}"


# --- notices ---------------------------------------------------------------------

class DeliveryFailed(Exception):
    """The receiver did not take the notice; RQ retries with backoff (its own, not a bug's)."""

    transient = True


def notice(table_id: str, seat: int, version: int, state, reason: str, config: Config) -> dict:
    """The small JSON a seat's URL receives: who and when, never a card."""
    body = {"table_id": table_id, "seat": seat, "version": version, "turn": state.turn}
    if reason == "away":
        body["away"] = state.away_open
    if config.public_url:
        body["url"] = f"{config.public_url.rstrip('/')}/t/{table_id}"
    return body


def notify(table_id: str, seat: int, version: int, reason: str = "turn") -> str:
    """POST a turn notice (or a PLAYER AWAY notice) to the URL the seat registered."""
    redis = tables()
    config = get_config()
    url = redis.hget(scheduling.notify_key(table_id), str(seat))
    if url is None:
        return "no url"
    url = url.decode() if isinstance(url, bytes) else url
    svc = service(redis, config)
    state = _load(svc, table_id)
    if state is None:
        return "stale"
    if reason == "turn" and (state.status != "playing" or state.turn != seat):
        return "stale"
    body = json.dumps(notice(table_id, seat, version, state, reason, config)).encode()
    try:
        status = outbound.post(url, data=body, timeout=NOTIFY_TIMEOUT,
                               headers={"Content-Type": "application/json", "User-Agent": "escoba-notify/1"},
                               allow_private=config.notify_allow_private)
    except outbound.RefusedURL as exc:
        # refused now though accepted at registration (DNS changed): retrying would not help
        log.warning("table %s seat %s: notice not sent: %s", table_id, seat, exc)
        return f"refused: {exc}"
    except OSError as exc:
        raise DeliveryFailed(f"{url}: {exc}") from None
    if not 200 <= status < 300:
        raise DeliveryFailed(f"{url} answered {status}")
    return f"delivered:{status}"


__all__ = [
    "DeliveryFailed", "away", "bot_turn", "compact", "expire", "lapse_rematch", "notice", "notify",
    "start_rematch",
]
