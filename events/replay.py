"""``escoba replay``: step through a table's log, printing each event and the state after it.

    escoba replay TABLE_ID            read the log from Redis (REDIS_URL)
    escoba replay --file LOG.jsonl    read an exported log (one record per line)
    --until N                         stop at version N
    --json                            print only the final full view (hidden cards included)

A log that does not replay (a gap in the versions, an unknown event type, data
that does not fit its schema, an event the state cannot take) is reported as
``log breaks at version N: reason`` with exit code 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable

import engine
from engine import events as ev
from engine.state import State, evolve

from .config import Config
from .export import read_file
from .records import LogError, from_record, summary


def check_event(state: State, event) -> str | None:
    """Why ``event`` cannot follow ``state`` (beyond what folding itself catches), or None."""
    if state.status == "new" and not isinstance(event, ev.TableOpened):
        return f"the log must begin with TableOpened, not {engine.event_type(event)}"
    if state.status != "new" and isinstance(event, ev.TableOpened):
        return "TableOpened again on an open table"
    if isinstance(event, ev.CardPlayed | ev.FifteenTaken):
        if state.status != "playing":
            return f"a play while the table is {state.status}"
        if event.seat != state.turn:
            return f"seat {event.seat} played on seat {state.turn}'s turn"
        if isinstance(event, ev.CardPlayed) and event.card not in state.hands.get(event.seat, ()):
            return f"{event.card} is not in seat {event.seat}'s hand"
        missing = [c for c in event.captured if c not in state.table]
        if missing:
            return f"captured {' '.join(missing)}, not on the table"
    if isinstance(event, ev.PlayerSeated | ev.BotAdded) and state.seats[event.seat] is not None:
        return f"seat {event.seat} is taken"
    return None


def replay_records(records: Iterable[dict], *, until: int | None = None, on_step=None) -> State:
    """Fold ``records`` one by one, checking each; LogError where the log breaks.

    ``on_step(record, state)`` is called after each event.
    """
    state = State().copy()
    for record in records:
        expected = state.version + 1
        version = record.get("version") if isinstance(record, dict) else None
        if until is not None and isinstance(version, int) and version > until:
            break
        if version != expected:
            if isinstance(version, int) and version > expected:
                raise LogError(expected, f"version {expected} is missing (next is {version})")
            raise LogError(expected, f"found version {version!r} where {expected} belongs")
        event = from_record(record)
        problem = check_event(state, event)
        if problem:
            raise LogError(version, problem)
        try:
            evolve(state, event)
        except Exception as exc:  # a fold that fails is a broken log, never a traceback
            reason = f"{record['type']} does not fold: {type(exc).__name__}: {exc}"
            raise LogError(version, reason) from None
        if on_step is not None:
            on_step(record, state)
    return state


def compact(state: State) -> str:
    """A one-line state: status, round, turn, table cards, hands, stock count, scores."""
    hands = " ".join(f"{seat}:[{' '.join(h)}]" for seat, h in sorted(state.hands.items()))
    parts = [
        f"status={state.status}",
        f"game={state.game} round={state.round}",
        f"turn={state.turn}",
        f"table=[{' '.join(state.table)}]",
        f"hands={{{hands}}}",
        f"stock={len(state.stock)}",
        f"scores={list(state.scores)}",
    ]
    if state.winners is not None:
        parts.append(f"winners={list(state.winners)}")
    return " ".join(parts)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="escoba replay", description=__doc__.split("\n\n")[0])
    p.add_argument("table_id", nargs="?", help="the table to read from Redis")
    p.add_argument("--file", help="an exported log, one JSON record per line")
    p.add_argument("--until", type=int, help="stop at this version")
    p.add_argument("--json", action="store_true", help="print the final full view as JSON")
    p.add_argument("--redis-url", help="Redis to read (default: REDIS_URL)")
    return p


def _records_from_redis(table_id: str, url: str | None) -> list[dict]:
    from .connection import tables_client
    from .store import EventStore

    url = url or Config.from_env().redis_url
    # only the tables' store is read: no queue Redis needed (events/connection.py finds the topology)
    client = tables_client(url, wait=5)
    try:
        records = EventStore(client).read(table_id)
    finally:
        client.close()
    if not records:
        raise LookupError(f"no such table {table_id!r} at {url}")
    return records


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, or bad arguments (argparse has printed why)
        return int(exc.code or 0)
    if bool(args.file) == bool(args.table_id):
        parser.print_usage(sys.stderr)
        print("escoba replay: give a TABLE_ID or --file LOG.jsonl (one of them)", file=sys.stderr)
        return 2
    out = sys.stdout
    try:
        if args.file:
            records = read_file(args.file)
        else:
            records = _records_from_redis(args.table_id, args.redis_url)
    except LogError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"escoba replay: cannot read {args.file}: {exc}", file=sys.stderr)
        return 1
    except LookupError as exc:
        print(f"escoba replay: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # Redis unreachable, and the like
        print(f"escoba replay: cannot read the log: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1

    def step(record: dict, state: State) -> None:
        print(f"v{record['version']:<5} {record['type']:<17} {record.get('actor', '?'):<8} "
              f"{summary(record)}", file=out)
        print(f"       {compact(state)}", file=out)

    try:
        state = replay_records(records, until=args.until, on_step=None if args.json else step)
    except LogError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(engine.view(state, None, full=True), ensure_ascii=False), file=out)
    else:
        print(f"version {state.version}: {compact(state)}", file=out)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
