"""``escoba replay``: step through a table's log, printing each event and the state after it.

    escoba replay TABLE_ID                          read the log from Redis (REDIS_URL)
    escoba replay TABLE_ID --server URL --token T   read it from a running server's admin log
    escoba replay --file LOG.jsonl                  read an exported log (one record per line)
    --until N                                       stop at version N
    --json                                          print only the final full view (hidden cards included)

A log that does not replay (a gap in the versions, an unknown event type, data
that does not fit its schema, an event the state cannot take) is reported as
``log breaks at version N: reason`` with exit code 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable

import engine
from engine import events as ev
from engine.state import State, evolve

from .config import Config
from .export import read_file, read_text
from .records import LogError, Record, from_record, summary


def check_event(state: State, event: ev.Event) -> str | None:
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


def replay_records(records: Iterable[Record], *, until: int | None = None,
                   on_step: Callable[[Record, State], object] | None = None) -> State:
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


DESCRIPTION = "Step through a table's log: each event, and the state after it (every hand shown)."
EPILOG = """where the log comes from (one of):
  TABLE_ID                    from Redis (--redis-url, else $REDIS_URL)
  TABLE_ID --server URL       from a running server's admin log (GET /admin/tables/ID/log),
                              with the admin token (--token, else $ESCOBA_ADMIN_TOKEN);
                              the way to reach a game played on 'escoba dev', whose store is in memory
  --file LOG.jsonl            an exported log (what GET /admin/tables/ID/log returns)

A log that does not replay is reported as 'log breaks at version N: reason', exit code 1."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="escoba replay", description=DESCRIPTION, epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("table_id", nargs="?", metavar="TABLE_ID", help="the table whose log to read")
    p.add_argument("--file", metavar="LOG.jsonl",
                   help="read an exported log instead, one JSON record a line (default: none)")
    p.add_argument("--until", type=int, metavar="N", help="stop at version N (default: the whole log)")
    p.add_argument("--json", action="store_true",
                   help="print only the final full view as JSON, hidden cards included (default: every step)")
    p.add_argument("--redis-url", metavar="URL",
                   help="the Redis to read TABLE_ID from (default: $REDIS_URL, else redis://127.0.0.1:6379/0)")
    p.add_argument("--redis", dest="redis_url", help=argparse.SUPPRESS)  # the old name on escoba dev
    p.add_argument("--server", metavar="URL", default=os.environ.get("ESCOBA_SERVER_URL"),
                   help="read TABLE_ID from this running server's admin log, e.g. http://127.0.0.1:8000 "
                        "(default: $ESCOBA_SERVER_URL; unset: read Redis)")
    p.add_argument("--token", metavar="TOKEN",
                   help="the server's admin token, for --server (default: $ESCOBA_ADMIN_TOKEN)")
    return p


def _records_from_redis(table_id: str, url: str | None) -> list[Record]:
    from . import compaction
    from .connection import tables_client
    from .records import loads
    from .store import EventStore

    url = url or Config.from_env().redis_url
    # only the tables' store is read: no queue Redis needed (events/connection.py finds the topology)
    client = tables_client(url, wait=5)
    try:
        records = EventStore(client).read(table_id)
        if not records:  # a compacted table: its archive holds the same records
            archive = compaction.load(client, table_id)
            if archive is not None:
                records = [loads(raw, version=v) for v, raw in archive.entries]
    finally:
        client.close()
    if not records:
        raise LookupError(f"no such table {table_id!r} at {url}")
    return records


SERVER_TIMEOUT = 30


def _records_from_server(table_id: str, server: str, token: str | None) -> list[Record]:
    """The log from ``GET {server}/admin/tables/{id}/log`` (the admin token in the header)."""
    from urllib.parse import quote

    token = token or os.environ.get("ESCOBA_ADMIN_TOKEN")
    if not token:
        raise LookupError("--server needs the admin token: --token TOKEN or ESCOBA_ADMIN_TOKEN")
    url = f"{server.rstrip('/')}/admin/tables/{quote(table_id, safe='')}/log"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}",
                                                   "Accept": "application/x-ndjson"})
    try:
        with urllib.request.urlopen(request, timeout=SERVER_TIMEOUT) as response:
            text = response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        try:
            message = json.loads(exc.read())["error"]["message"]
        except Exception:
            message = exc.reason
        raise LookupError(f"{url} answered {exc.code}: {message}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise LookupError(f"cannot reach {server}: {getattr(exc, 'reason', exc)}") from None
    return read_text(text)


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
        elif args.server:
            records = _records_from_server(args.table_id, args.server, args.token)
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

    def step(record: Record, state: State) -> None:
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
