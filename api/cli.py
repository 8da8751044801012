"""The ``escoba`` command: serve, dev, worker, reconcile, replay, analyze, ratings rebuild.

Every command that talks to Redis takes ``--redis-url`` (the old ``--redis`` of
``escoba dev`` still works, unlisted); without it, ``REDIS_URL`` is used.
"""

from __future__ import annotations

import argparse
import os
import sys

from events.config import REDIS_URL_HELP as REDIS_HELP


def add_redis_url(parser: argparse.ArgumentParser, help_text: str = REDIS_HELP) -> None:
    """``--redis-url URL``, the one name of the Redis flag on every command; ``--redis`` is
    kept as a hidden alias (``escoba dev`` used to call it that)."""
    parser.add_argument("--redis-url", metavar="URL", default=None, help=help_text)
    parser.add_argument("--redis", dest="redis_url", metavar="URL", help=argparse.SUPPRESS)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="escoba", description="Escoba table server: an event-sourced server for the make-15 card game.",
        epilog="Run 'escoba COMMAND --help' for a command's flags and their defaults.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="the API under gunicorn (gevent worker: a socket is a greenlet)",
                           description="The API under gunicorn's gevent worker: an open socket is a "
                                       "greenlet, so held sockets never keep HTTP waiting. "
                                       "Run 'escoba worker' beside it.")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default: %(default)s)")
    serve.add_argument("--workers", type=int, default=1,
                       help="worker processes; about one per core for HTTP throughput (default: %(default)s)")
    serve.add_argument("--worker-class", choices=("gevent", "gthread"), default="gevent",
                       help="gevent, or the old threaded worker (a thread per socket) (default: %(default)s)")
    serve.add_argument("--connections", type=int, default=20_000,
                       help="gevent: sockets and HTTP connections one worker holds at once (default: %(default)s)")
    serve.add_argument("--threads", type=int, default=64,
                       help="gthread only: threads per worker; each open socket holds one (default: %(default)s)")
    add_redis_url(serve)

    dev = sub.add_parser("dev", help="everything in one process on an embedded store, for a try-out",
                         description="The API, a worker with its scheduler, the bots and the page in one "
                                     "process. The store is in memory unless --redis-url names a Redis: "
                                     "nothing survives a restart.")
    dev.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    dev.add_argument("--port", type=int, default=8000, help="port to listen on (default: %(default)s)")
    add_redis_url(dev, "use this Redis instead of the embedded in-memory store "
                       "(default: the embedded store; REDIS_URL is not read)")
    from api.server.dev import default_vapid_file

    dev.add_argument("--vapid-key-file", metavar="PATH", default=None,
                     help="where the Web Push (VAPID) private key is kept: made on the first run, "
                          "read on the next ones; ignored when ESCOBA_VAPID_PRIVATE_KEY is set "
                          f"(default: {default_vapid_file()})")

    analyze = sub.add_parser("analyze", help="a game's analysis: what each play cost, judged from what its "
                                             "player could see (judged here if no worker has yet)",
                             description="The analysis of the table's last game at its current version: "
                                         "per seat an accuracy and every play with its loss in round "
                                         "points and its label. Judged in this process when it is not "
                                         "stored yet (the result is kept with the table, as the API's).")
    analyze.add_argument("table_id", metavar="TABLE_ID")
    analyze.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    add_redis_url(analyze)

    rating = sub.add_parser("ratings", help="players' ratings: rebuild them from the tables' logs",
                            description="Ratings are a projection of the finished rated tables' logs "
                                        "(docs/ratings.md).")
    rating_sub = rating.add_subparsers(dest="ratings_command", required=True, metavar="ACTION")
    rebuild = rating_sub.add_parser(
        "rebuild", help="recompute every player's ratings, totals and games from the logs",
        description="Recompute every player's ratings, totals and recent games from the finished rated "
                    "tables' logs, in the order the games ended, and write them over what is stored "
                    "(and the leaderboards). Run it with the workers stopped: a game rated meanwhile "
                    "may be overwritten (run it again).")
    rebuild.add_argument("--dry-run", action="store_true", help="compute and print the counts; write nothing")
    add_redis_url(rebuild)

    # these three parse their own flags (see 'escoba worker --help' and the others)
    sub.add_parser("worker", help="an RQ worker with its scheduler (timers, bots, notices)", add_help=False)
    sub.add_parser("reconcile", help="rebuild every table's due timers from the logs, once", add_help=False)
    sub.add_parser("replay", help="step through a table's log (from Redis, a file or a running server)",
                   add_help=False)
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("replay", "worker", "reconcile"):
        return _delegate(argv[0], argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "serve":
        from api.server.serve import serve as run

        if args.redis_url:  # gunicorn's workers build the app from the environment
            os.environ["REDIS_URL"] = args.redis_url
        return run(args.host, args.port, args.threads, args.workers, worker_class=args.worker_class,
                   connections=args.connections)
    if args.command == "analyze":
        return analyze(args.table_id, as_json=args.json, redis_url=args.redis_url)
    if args.command == "ratings":
        return rebuild_ratings(redis_url=args.redis_url, dry_run=args.dry_run)
    from api.server.dev import run_dev

    return run_dev(args.host, args.port, args.redis_url, vapid_key_file=args.vapid_key_file)


def analyze(table_id: str, *, as_json: bool = False, redis_url: str | None = None, redis=None,
            out=None) -> int:
    """``escoba analyze``: print the table's analysis (the API's answer with ``--json``)."""
    import json

    from engine import RuleError
    from events.config import Config
    from events.connection import tables_client
    from events.service import TableService
    from workers.analysis import analyse_now

    out = out or sys.stdout
    if redis is None:
        redis = tables_client(redis_url or Config.from_env().redis_url)
    svc = TableService(redis, cache_size=0)
    try:
        state = svc.load(table_id)
    except RuleError as exc:
        print(f"escoba analyze: {exc}", file=sys.stderr)
        return 1
    answer = analyse_now(redis, svc, table_id, state.version).answer()
    if as_json:
        print(json.dumps(answer, indent=2), file=out)
        return 0
    print(f"table {table_id}, version {answer['version']}", file=out)
    for seat in answer["seats"]:
        print(f"seat {seat['seat']}: accuracy {seat['accuracy']:.1f}", file=out)
        for m in seat["moves"]:
            print(f"  v{m['version']:<4} round {m['round']:<2} played {_move(m['played']):<16} "
                  f"best {_move(m['best']):<16} loss {m['loss']:5.2f}  {m['label'] or ''}".rstrip(), file=out)
    return 0


def rebuild_ratings(*, redis_url: str | None = None, dry_run: bool = False, redis=None, out=None) -> int:
    """``escoba ratings rebuild``: every rating again from the logs (events/ratings.py ``rebuild``)."""
    import time

    from events import ratings
    from events.config import Config
    from events.connection import tables_client
    from events.service import TableService

    out = out or sys.stdout
    if redis is None:
        redis = tables_client(redis_url or Config.from_env().redis_url)
    began = time.perf_counter()
    done = ratings.rebuild(redis, TableService(redis, cache_size=0), write=not dry_run)
    seconds = time.perf_counter() - began
    print(f"{'computed' if dry_run else 'rebuilt'}: {done['games']} rated games of {done['tables']} tables, "
          f"{done['players']} players, in {seconds:.1f} s", file=out)
    return 0


def _move(move: dict) -> str:
    if move["type"] == "take_fifteen":
        return "15:" + "+".join(move["cards"])
    return move["card"] + ("x" + "+".join(move["capture"]) if move["capture"] else "")


def _delegate(command: str, rest: list[str]) -> int:
    if command == "replay":
        from events.replay import main as replay

        return replay(rest)
    from workers.cli import main as worker_main

    return worker_main([command, *rest])


if __name__ == "__main__":
    raise SystemExit(main())
