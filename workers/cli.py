"""``escoba worker`` and ``escoba reconcile`` (also ``python -m workers.cli ...``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys

from events.config import REDIS_URL_HELP, Config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="escoba",
                                     description="Escoba's RQ worker and reconciler.")
    sub = parser.add_subparsers(dest="command", required=True)
    worker = sub.add_parser("worker", help="an RQ worker with its scheduler (queue 'escoba')",
                            description="An RQ worker on the queue 'escoba' with RQ's scheduler: bots' "
                                        "moves, timers (PLAYER AWAY, expiry, rematch) and turn notices "
                                        "(webhooks, Web Push). Settings come from the environment "
                                        "(README, Configuration).")
    worker.add_argument("--burst", action="store_true",
                        help="run what is due, then exit (default: keep running)")
    worker.add_argument("--simple", action="store_true",
                        help="run jobs in the worker process (default: a forked process per job)")
    reconcile = sub.add_parser("reconcile", help="rebuild every table's timers from its log, once",
                               description="Rebuild every table's due timers from its log, once, and "
                                           "print a JSON summary (exit code 1 if a table failed).")
    reconcile.add_argument("--table", action="append", metavar="TABLE_ID",
                           help="only this table; repeatable (default: every table)")
    for command in (worker, reconcile):
        command.add_argument("--redis-url", metavar="URL", default=None, help=REDIS_URL_HELP)
        command.add_argument("--redis", dest="redis_url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    config = Config.from_env()
    if args.redis_url:
        config = dataclasses.replace(config, redis_url=args.redis_url)
    if args.command == "worker":
        from .runner import run_worker

        return run_worker(config, burst=args.burst, simple=args.simple)
    from redis import Redis

    from .runner import reconcile as run_reconcile

    summary = run_reconcile(Redis.from_url(config.redis_url), config, table_ids=args.table)
    print(json.dumps(summary, indent=2))
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
