"""TableService: load a table, decide a command, append its events atomically.

``execute`` loads the table (snapshot + tail), puts chance into the command
(a shuffled deck, a random pick), lets ``engine.decide`` judge it, and appends
the events at the version it loaded. When another writer got there first the
append is refused (``VersionConflict``); the service reloads and decides
again, a few times, before it answers ``version_conflict``. A caller who sent
``expected_version`` gets ``version_conflict`` at once if the table moved.

An idempotency key is scoped to the table and the actor and is set in the same
Lua step as the append, so a repeated request (from this process or another)
appends nothing and answers with the version the first one made.
"""

from __future__ import annotations

import base64
import math
import os
import random
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import engine
from engine.cards import FULL_DECK
from engine.commands import WITH_CHANCE, Command, NextRound, Open
from engine.state import State

from . import compaction, decoding, replication, snapshots, stages
from .connection import Client
from .hooks import ChangeHook, NotesUnacknowledged, ReadsBack, StepParts, WritesRow
from .locks import short_lock
from .records import Entry, LogError, Record, dumps, from_record, loads, to_record
from .seconds import PerSecond
from .store import (
    IDEMPOTENCY_TTL,
    AlreadyApplied,
    Append,
    Appended,
    EventStore,
    Idempotency,
    VersionConflict,
    idempotency_key,
)

CHANCE_COMMANDS = ("start", "next_round", "start_rematch")
# Tables by status (for metrics) are kept in the append's own step, in the table's status
# bucket (events/store.py), by whichever process appends (API or worker), after these events:
# the ones after which a table's status may differ (engine/state.py sets it only in these)
STATUS_CHANGES = frozenset({"TableOpened", "GameStarted", "RoundDealt", "RoundScored", "GameFinished",
                            "TableExpired"})
MAX_ATTEMPTS = 5
ARCHIVES_KEPT = 16  # compacted tables' archives kept decompressed in a process
HOST_ACTOR = "seat:0"


@dataclass(frozen=True)
class Outcome:
    version: int
    state: State
    records: list[Record]
    repeated: bool = False
    appended: Appended | None = None  # what the append read back for the hook


_utc_second = PerSecond(lambda whole: datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S"))


def iso_utc(ts: float) -> str:
    """``ts`` as ``2026-12-01T19:10:06.123Z``, as datetime's isoformat in milliseconds would write
    it (microseconds rounded, then cut); the part up to the second is formatted once a second:
    every appended batch is stamped."""
    whole = math.floor(ts)
    us = round((ts - whole) * 1e6)
    if us >= 1_000_000:
        whole, us = whole + 1, us - 1_000_000
    return f"{_utc_second(whole)}.{us // 1000:03d}Z"


def fold_records(state: State, records: list[Record]) -> State:
    """``state`` with ``records`` folded in, checking the versions run on without a gap.

    Raises LogError naming the version where the log cannot be folded.
    """
    events = []
    expected = state.version
    for record in records:
        expected += 1
        event = from_record(record)
        if record["version"] != expected:
            raise LogError(expected, f"version {expected} is missing (found {record['version']})")
        events.append(event)
    try:
        return engine.fold(state, events)
    except Exception:
        # find the event that breaks, one at a time
        current = state
        for record, event in zip(records, events, strict=True):
            try:
                current = engine.fold(current, [event])
            except Exception as exc:
                raise LogError(record["version"], f"{record['type']} does not fold: "
                               f"{type(exc).__name__}: {exc}") from None
        raise


def fold_entries(state: State, entries: Sequence[Entry]) -> State:
    """``state`` with stored records (``[(version, JSON)]``, EventStore.read_raw) folded in:
    the fast decoder (events.decoding), the versions checked to run on without a gap."""
    events = []
    expected = state.version
    for version, event in decoding.decode_many(entries):
        expected += 1
        if version != expected:
            raise LogError(expected, f"version {expected} is missing (found {version})")
        events.append(event)
    try:
        return engine.fold(state, events)
    except Exception:
        # the strict path finds and names the event that breaks
        return fold_records(state, [loads(raw, version=v) for v, raw in entries])


def _closed(state: State) -> engine.RuleError:
    return engine.RuleError("table_closed", "This table is closed for good: it is kept read-only.",
                            {"version": state.version})


def new_table_id() -> str:
    """Eight URL-safe characters, never starting with "-": an id that looks like a flag would
    need ``--`` before it on every command line (``escoba replay -VlajBWf`` fails)."""
    while True:
        table_id = secrets.token_urlsafe(6)
        if not table_id.startswith("-"):
            return table_id


def new_table_ids(n: int) -> list[str]:
    """``n`` ids as ``new_table_id`` makes them, from one read of the system's randomness (a wave
    names up to 2,000 tables at once)."""
    text = base64.urlsafe_b64encode(os.urandom(6 * n)).decode()  # 6 bytes: 8 characters, no padding
    return [text[i:i + 8] if text[i] != "-" else new_table_id() for i in range(0, 8 * n, 8)]


class TableService:
    def __init__(self, redis: Client, *, clock: Callable[[], float] = time.time,
                 rng: random.Random | None = None,
                 on_change: ChangeHook | ReadsBack | None = None,
                 snapshot_every: int = snapshots.SNAPSHOT_EVERY,
                 idempotency_ttl: int = IDEMPOTENCY_TTL, cache_size: int = 256,
                 replica_acks: int = 0, ack_timeout: float = replication.ACK_TIMEOUT,
                 unreplicated: str = replication.ACCEPT):
        self.redis = redis
        # replica_acks > 0: an append counts once that many replicas hold it, or (``unreplicated``
        # accept) its master alone when it has no replica online (events/replication.py). A load
        # then shows only acknowledged versions; the states cached here are such (never a writer's
        # read of the whole log)
        self.store = EventStore(redis, replica_acks=replica_acks, ack_timeout=ack_timeout,
                                unreplicated=unreplicated)
        self.clock = clock
        self.rng = rng if rng is not None else random.SystemRandom()
        # on_change(table_id, state, records) runs after every append. A hook that also has
        # read_back(table_id) -> (keys, stamp) gets those hashes of the table, read in the
        # append's own Lua step (Append.read_back), as a fourth argument: no round trip.
        self.on_change = on_change
        self.snapshot_every = snapshot_every
        self.idempotency_ttl = idempotency_ttl
        # The latest state of recently used tables, in this process. The log is
        # append-only, so a state at version V stays right: only the tail after
        # it is read. cache_size=0 turns it off (every load: snapshot + tail).
        # States are shared, not copied: nothing outside the engine changes a state,
        # and the engine changes only its own copies (fold, Decision).
        self.cache_size = cache_size
        self._cache: OrderedDict[str, State] = OrderedDict()
        self._archives: OrderedDict[str, compaction.Archive] = OrderedDict()
        self._lock = short_lock()  # the caches' dicts only: never held across a read of the store
        # table -> (version before, stored records, state after) of an append this process has in
        # flight: its change notice may come back before the append's answer (load_noticed)
        self._in_flight: dict[str, tuple[int, list[str], State]] = {}

    @property
    def on_change(self) -> ChangeHook | ReadsBack | None:
        return self._on_change

    @on_change.setter
    def on_change(self, hook: ChangeHook | ReadsBack | None) -> None:
        # its abilities (events/hooks.py), found once: an isinstance of a runtime protocol costs
        # tens of microseconds, too much for every append
        self._on_change = hook
        self._reads_back = hook if isinstance(hook, ReadsBack) else None
        self._notes_unacknowledged = hook if isinstance(hook, NotesUnacknowledged) else None
        self._writes_row = hook if isinstance(hook, WritesRow) else None

    # --- reading -----------------------------------------------------------
    def load(self, table_id: str, until: int | None = None, *, acknowledged: bool = True) -> State:
        """The table's state (at version ``until`` if given): snapshot + tail of the log.

        With replica acks, only what was acknowledged (events/store.py, ``acked_key``);
        ``acknowledged=False``: the whole log, for a writer (kept out of the cache and snapshots).
        RuleError("not_found") when there is no such table; LogError when the
        log cannot be folded.
        """
        keep = acknowledged or not self.store.replica_acks  # a state others may be shown
        base = None
        if until is None and self.cache_size > 0:
            with self._lock:
                base = self._cache.get(table_id)
        from_cache = base is not None
        if base is None and self.snapshot_every:
            if until is not None:
                # the past: the newest checkpoint at or before it (events after N cost O(new));
                # the newest snapshot is a checkpoint too, and serves a table older than checkpoints
                base = snapshots.load_checkpoint(self.redis, table_id, until, self.snapshot_every)
            if base is None:
                base = snapshots.load_snapshot(self.redis, table_id)
                if base is not None and until is not None and base.version > until:
                    base = None
        if base is None:
            base = State()
        records = self._tail(table_id, base, until, acknowledged)
        if records is None:  # the log lacks what this process (or a snapshot) had read
            base, from_cache = self._lost(table_id, base, until), False
            if base.version:  # compacted meanwhile: its archive is the table
                return base
            records = self._read(table_id, 0, until, acknowledged)
        if base.version == 0 and not records:
            archive = self.archive(table_id)
            if archive is None:
                raise engine.RuleError("not_found", "No such table.")
            records = [e for e in archive.entries if until is None or e[0] <= until]
            state = fold_entries(base, records)
            if until is None:
                self._remember(table_id, state)
            return state
        state = fold_entries(base, records) if records else base
        if until is None and keep:
            if not from_cache and self.snapshot_every and len(records) >= self.snapshot_every:
                snapshots.save_snapshot(self.store, table_id, state, self.snapshot_every)
            self._remember(table_id, state)
        return state

    def _tail(self, table_id: str, base: State, until: int | None, acknowledged: bool = True) -> list[Entry] | None:
        """The stored records after ``base`` (up to ``until``); None when the log no longer holds
        ``base``'s own version. A copy read before (this process's, or a snapshot) is checked
        against the store on every load: the record at its version comes back with the tail, so
        a log that vanished or went back (a failover to a replica that lacked it) is noticed
        for the price of one record, never served as if the table were alive."""
        if base.version == 0:
            return self._read(table_id, 0, until, acknowledged)
        entries = self._read(table_id, base.version - 1, until, acknowledged)
        if not entries or entries[0][0] != base.version:
            return None
        return entries[1:]

    def _read(self, table_id: str, after: int, until: int | None, acknowledged: bool) -> list[Entry]:
        if acknowledged and self.store.replica_acks:  # (one Redis without acks: the plain read, as ever)
            return self.store.read_raw(table_id, after=after, until=until, acknowledged=True)
        return self.store.read_raw(table_id, after=after, until=until)

    def _lost(self, table_id: str, base: State, until: int | None) -> State:
        """What to read from when the log lacks ``base.version``: a compacted table's archive state
        (no stream is right for it), else nothing (``State()``, after logging and counting it)."""
        archive = self.archive(table_id)
        if archive is not None:
            if until is None and base.version == archive.version:
                return base  # this process's copy of a compacted table: it never changes
            with self._lock:
                self._cache.pop(table_id, None)
            state = fold_entries(State(), [e for e in archive.entries if until is None or e[0] <= until])
            if until is None:
                self._remember(table_id, state)
            return state
        with self._lock:
            self._cache.pop(table_id, None)
        stored = self.store.version(table_id)
        replication.lost_log(table_id, "behind" if stored else "vanished", base.version, stored)
        return State()

    def load_noticed(self, table_id: str, version: int, after: int | None = None,
                     encoded: list[str] | list[bytes] | None = None) -> State:
        """The state at ``version`` or later, for a change notice (events/store.change_notice):
        this process's copy when it is that new; the notice's records folded into the copy when
        it is at ``after`` (no read of the log); a load otherwise."""
        state = self._cached(table_id)
        if state is not None and state.version >= version:
            return state
        flying = self._in_flight.get(table_id)
        if flying is not None and encoded and flying[0] == after and flying[1] == encoded:
            # this process's own append, whose answer has not come back yet: the same records after
            # the same version fold to the state it worked out (the fold is deterministic)
            self._remember(table_id, flying[2])
            return flying[2]
        if state is not None and encoded and state.version == after and after + len(encoded) == version:
            state = fold_entries(state, list(enumerate(encoded, after + 1)))  # str or bytes: both decode
            self._remember(table_id, state)
            return state
        return self.load(table_id)

    def records(self, table_id: str, after: int = 0) -> list[Record]:
        """Every record after ``after`` (the admin log, ``escoba replay``), compacted or not."""
        return [loads(raw, version=v) for v, raw in self.entries(table_id, after)]

    def entries(self, table_id: str, after: int = 0, until: int | None = None,
                limit: int | None = None) -> list[Entry]:
        """``[(version, record JSON)]`` after ``after`` up to ``until``, at most ``limit``; from the
        stream, or from the archive of a compacted table. An empty or short answer where
        ``until`` says there must be more (or none at all from the start) looks at the archive."""
        out = (self.store.read_raw(table_id, after=after, until=until, limit=limit, acknowledged=True)
               if self.store.replica_acks else self.store.read_raw(table_id, after=after, until=until, limit=limit))
        wanted = None if until is None else until - after
        if limit is not None and wanted is not None:
            wanted = min(wanted, limit)
        short = (not out and after == 0) or (wanted is not None and len(out) < wanted)
        if short:
            archive = self.archive(table_id)
            if archive is not None:
                out = [e for e in archive.entries if e[0] > after and (until is None or e[0] <= until)]
                return out if limit is None else out[:limit]
        return out

    def compacted(self, table_id: str) -> bool:
        """Whether the table was compacted (read-only for good)."""
        with self._lock:
            if table_id in self._archives:
                return True
        return compaction.is_compacted(self.redis, table_id)

    def archive(self, table_id: str) -> compaction.Archive | None:
        """A compacted table's archive (a few kept in this process: it never changes), or None."""
        with self._lock:
            archive = self._archives.get(table_id)
            if archive is not None:
                self._archives.move_to_end(table_id)
                return archive
        archive = compaction.load(self.redis, table_id)
        if archive is not None:
            with self._lock:
                self._archives[table_id] = archive
                while len(self._archives) > ARCHIVES_KEPT:
                    self._archives.popitem(last=False)
        return archive

    def version(self, table_id: str) -> int:
        version = self.store.version(table_id)
        if version == 0:  # no stream: a compacted table, or none
            archive = self.archive(table_id)
            return archive.version if archive is not None else 0
        return version

    def exists(self, table_id: str) -> bool:
        return self.store.exists(table_id) or self.compacted(table_id)

    def table_ids(self) -> list[str]:
        return self.store.table_ids()

    def status_counts(self) -> dict[str, int]:
        return self.store.status_counts()

    # --- writing -----------------------------------------------------------
    def create(self, command: Command | Mapping[str, object], *, actor: str = HOST_ACTOR,
               grant: tuple[str, str] | Callable[[str], tuple[str, str]] | None = None,
               table_id: str | None = None) -> tuple[str, Outcome]:
        """Open a new table with an ``open`` command; its id and the outcome.

        One step: the first event, the index entry and (``grant`` = ``(token_hash,
        player)``) the host's token are written together, or nothing is. ``grant`` may be a
        function of the table id drawn (a seat token names its table: api/auth.py ``new_token``).
        ``table_id``: the id to take (a paired table's, chosen before it is made:
        workers/pairing.py); RuleError ``table_exists`` when it is taken.
        """
        command = engine.parse_command(command) if isinstance(command, Mapping) else command  # (once)
        if not isinstance(command, Open):
            raise engine.RuleError("bad_request", "A table is created by an open command.",
                                   {"type": "must be open"})
        chosen = table_id
        for _ in range(MAX_ATTEMPTS):
            table_id = chosen or new_table_id()
            try:
                outcome = self._apply(table_id, State(), command, actor, None, created_at=self.clock(),
                                      grant=grant(table_id) if callable(grant) else grant)
            except VersionConflict:
                if chosen:
                    raise engine.RuleError("table_exists", "That table exists already.",
                                           {"table_id": chosen}) from None
                continue  # that id is taken: draw another
            except replication.NotAcknowledged:
                self._unacknowledged(table_id)
                raise
            self._snapshot(table_id, outcome)
            self._changed(table_id, outcome)
            return table_id, outcome
        raise engine.RuleError("version_conflict", "Could not find a free table id; try again.")

    def execute(self, table_id: str, command: Command | Mapping[str, object], *, actor: str,
                expected_version: int | None = None,
                idempotency_key: str | None = None,
                grant: tuple[str, str] | None = None, parts: StepParts | None = None,
                posted: Callable[[State], None] | None = None,
                ahead: Callable[[State], None] | None = None) -> Outcome:
        """Decide ``command`` at the table and append its events; the outcome.

        ``grant`` = ``(token_hash, player)``: a seat token issued in the append's own
        step (taking a seat), so a seat is never taken without its token. ``parts``: the
        caller's own parts of each attempt's append (events/hooks.py ``StepParts``: the API's
        listener id and rate count), put in its ``Append`` unread; the step's ``CountOver`` reaches
        the caller as raised.
        Raises engine.RuleError: the rules' refusals, ``not_found``, ``version_conflict``.

        ``posted(state)``: called with the new state once it is appended, before the snapshot (when one
        is due) and the change hook, so the caller's sockets see the move without waiting for their
        writes (each a round trip to the store: a snapshot every ``snapshot_every`` versions, the
        timers when they change, as at a round's end): other processes' sockets hear the notice the
        append's own step published, before them too.

        ``ahead(state)``: called with each attempt's new state while its append is in flight (after the step
        is sent, before its reply is awaited, where the store can: ``EventStore.append(meanwhile=...)``), so
        the caller's work on it overlaps Redis's (api/sockets/fanout.py builds the other sockets' frames).
        None of that work may be seen unless ``posted`` is then called with that very state: an attempt
        whose append is refused or fails is followed by no post.

        A used idempotency key is not looked up before deciding: the append refuses it in
        its own step (AlreadyApplied), so a repeat the rules accept is answered from there,
        and only a repeat the rules refuse (the table has moved on since) or that changes
        nothing asks the store for the first answer. A move pays no round trip for its key.
        """
        command = engine.parse_command(command) if isinstance(command, Mapping) else command  # (once)
        current = None
        for attempt in range(MAX_ATTEMPTS):
            # First try this process's latest state without reading the log: the append
            # is checked against the stream's version, so a stale guess can only conflict.
            # A guess never answers for the rules: any refusal is confirmed on a fresh load.
            cached = self._cached(table_id) if attempt == 0 else None
            fresh = cached is None
            if cached is None:
                state = self.load(table_id, acknowledged=False)  # appended after the log's last entry
                if table_id in self._archives:  # this load read the archive: no round trip
                    raise _closed(state)
            else:
                state = cached
            current = state.version
            if expected_version is not None and expected_version != state.version:
                if not fresh:
                    continue
                repeat = self._repeated(table_id, actor, idempotency_key)
                if repeat is not None:
                    return repeat
                if self.store.replica_acks:
                    # the caller's version may be a view's, read up to the acknowledged mark: the
                    # table is past it only once what follows is acknowledged (else 503, try again)
                    self.store.confirm_log(table_id, state.version)
                raise engine.RuleError(
                    "version_conflict",
                    f"The table is at version {state.version}, not {expected_version}.",
                    {"current": state.version},
                )
            try:
                outcome = self._apply(table_id, state, command, actor, idempotency_key, grant=grant, parts=parts,
                                      ahead=ahead)
            except replication.NotAcknowledged:
                self._unacknowledged(table_id)
                raise
            except engine.RuleError:
                if not fresh:
                    continue
                repeat = self._repeated(table_id, actor, idempotency_key)
                if repeat is not None:
                    return repeat
                if self.store.replica_acks:
                    # refused on the whole log, maybe past what the caller could see: only once that
                    # is acknowledged (else 503, try again), never for a move a failover may take back
                    self.store.confirm_log(table_id, state.version)
                if compaction.closed_for_good(state) and self.compacted(table_id):
                    raise _closed(state) from None  # this process had it cached from before
                raise
            except VersionConflict as exc:
                current = exc.current
                continue
            except AlreadyApplied as exc:
                if self.store.replica_acks and idempotency_key is not None:  # another request's append,
                    self.store.confirm(table_id, actor, idempotency_key)  # maybe not acknowledged yet
                return self._repeat(table_id, exc.version)
            if outcome.records:
                if posted is not None:
                    posted(outcome.state)
                self._snapshot(table_id, outcome)
                self._changed(table_id, outcome)
                if stages.ON:
                    stages.mark("hooked")
            elif idempotency_key is not None:  # nothing to append: a repeat answers as the first time
                return self._repeated(table_id, actor, idempotency_key) or outcome
            return outcome
        raise engine.RuleError(
            "version_conflict",
            "The table kept changing while the move was being made; try again.",
            {"current": current},
        )

    def _repeated(self, table_id: str, actor: str, idempotency_key: str | None) -> Outcome | None:
        return None if idempotency_key is None else self.repeated(table_id, actor, idempotency_key)

    def repeated(self, table_id: str, actor: str, idempotency_key: str) -> Outcome | None:
        """The outcome of the request ``actor`` made with this idempotency key, as it was then
        (``repeated`` set); None when the key is unused. With replica acks on, only once the
        first result is acknowledged (``store.confirm``)."""
        done = self.store.confirm(table_id, actor, idempotency_key)
        return None if done is None else self._repeat(table_id, done)

    # --- inside ------------------------------------------------------------
    def with_chance(self, command: Command) -> Command:
        """A copy of ``command`` with the chance it needs (deck, pick) when it has none."""
        if not isinstance(command, WITH_CHANCE):
            return command
        deck = command.deck
        if deck is None:
            deck = list(FULL_DECK)
            self.rng.shuffle(deck)
        if isinstance(command, NextRound):  # a pick drawn and unused, as always: a seeded rng deals the same decks
            self.rng.randrange(engine.PICK_RANGE)
            return replace(command, deck=deck)
        pick = self.rng.randrange(engine.PICK_RANGE) if command.pick is None else command.pick  # even for 2, 3, 4
        return replace(command, deck=deck, pick=pick)

    def _apply(self, table_id: str, state: State, command: Command, actor: str,
               idem: str | None, *, created_at: float | None = None,
               grant: tuple[str, str] | None = None, parts: StepParts | None = None,
               ahead: Callable[[State], None] | None = None) -> Outcome:
        events, new_state = engine.decide_and_fold(state, self.with_chance(command))
        if not events:
            return Outcome(state.version, state, [], False)
        at = iso_utc(self.clock())
        records = [
            to_record(e, version=state.version + i + 1, at=at, actor=actor)
            for i, e in enumerate(events)
        ]
        new_version = state.version + len(records)
        idempotency = None
        if idem is not None:
            idempotency = Idempotency(
                idempotency_key(table_id, actor, idem),
                f'{{"version": {new_version:d}}}',  # json.dumps({"version": ...})'s very text
                self.idempotency_ttl,
            )
        read_back, stamp = self._hook_reads(table_id)
        writes_row = self._writes_row  # the table's row, set in the append's step
        row = writes_row.row(table_id, state, new_state, records) if writes_row is not None else None
        status = new_state.status if any(r["type"] in STATUS_CHANGES for r in records) else None
        encoded = [dumps(r) for r in records]
        append = Append(table_id, state.version, records, encoded, idempotency,
                        read_back=read_back, stamp=stamp, created_at=created_at, status=status, grant=grant,
                        row=row, quiet_for=parts.quiet_for if parts is not None else None,
                        count=parts.count() if parts is not None else None)
        self._in_flight[table_id] = (state.version, encoded, new_state)
        if stages.ON:
            stages.mark("decided")
        try:
            appended = self.store.append(append, (lambda: ahead(new_state)) if ahead is not None else None)
        finally:
            if self._in_flight.get(table_id, (None, None))[1] is encoded:
                del self._in_flight[table_id]
        if stages.ON:
            stages.mark("appended")
            stages.tag(table_id, appended.version)
        version = appended.version
        self._remember(table_id, new_state)
        return Outcome(version, new_state, records, False, appended)

    def _snapshot(self, table_id: str, outcome: Outcome) -> None:
        """The snapshot when the append crossed its stretch's end (every ``snapshot_every`` versions): a
        step of its own, after the caller's sockets heard the move (``posted``), which need none of it."""
        before = outcome.version - len(outcome.records)
        if self.snapshot_every and snapshots.due(before, outcome.version, self.snapshot_every):
            snapshots.save_snapshot(self.store, table_id, outcome.state, self.snapshot_every)

    def _hook_reads(self, table_id: str) -> tuple[tuple[str, ...], bool]:
        """The hashes the change hook wants read back in the append's own step (see __init__)."""
        hook = self._reads_back
        return hook.read_back(table_id) if hook is not None else ((), False)

    def _cached(self, table_id: str) -> State | None:
        if self.cache_size <= 0:
            return None
        with self._lock:
            return self._cache.get(table_id)

    def _remember(self, table_id: str, state: State) -> None:
        if self.cache_size <= 0:
            return
        with self._lock:
            cached = self._cache.get(table_id)
            if cached is not None and cached.version >= state.version:
                self._cache.move_to_end(table_id)
                return
            self._cache[table_id] = state
            self._cache.move_to_end(table_id)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def _repeat(self, table_id: str, version: int) -> Outcome:
        if self.store.replica_acks:
            self._follow_repeat(table_id)
        return Outcome(version, self.load(table_id, until=version), [], True)

    def _unacknowledged(self, table_id: str) -> None:
        """Tell the change hook (``unacknowledged(table_id)``, if it has one) that an append stands
        on the master without its replicas' acknowledgement: nothing followed it."""
        hook = self._notes_unacknowledged
        if hook is not None:
            hook.unacknowledged(table_id)

    def _follow_repeat(self, table_id: str) -> None:
        """A repeat of an append whose first answer may have been 503 (its replicas were late):
        the notice and the timers that then did not follow it follow now that it is
        acknowledged. Both are idempotent (a listener at that version ignores the notice; the
        timers hook plans the same timers again)."""
        state = self.load(table_id)
        self.store.notify(table_id, state.version)
        if self.on_change is not None and state.version:
            self.on_change(table_id, state, self.store.read(table_id, after=state.version - 1))

    def _changed(self, table_id: str, outcome: Outcome) -> None:
        if self.on_change is None:
            return
        hook = self._reads_back
        if outcome.appended is not None and hook is not None:
            hook(table_id, outcome.state, outcome.records, outcome.appended)
        else:
            self.on_change(table_id, outcome.state, outcome.records)


__all__ = ["CHANCE_COMMANDS", "Outcome", "TableService", "fold_records", "iso_utc"]
