"""``escoba worker`` and ``escoba reconcile`` (also ``python -m workers.cli ...``)."""

from __future__ import annotations

import argparse
import json
import logging
import sys

from events.config import Config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="escoba",
                                     description="Escoba's RQ worker and reconciler.")
    sub = parser.add_subparsers(dest="command", required=True)
    worker = sub.add_parser("worker", help="an RQ worker with its scheduler (queue 'escoba')")
    worker.add_argument("--burst", action="store_true", help="run what is due, then exit")
    worker.add_argument("--simple", action="store_true",
                        help="run jobs in the worker process (no fork per job)")
    reconcile = sub.add_parser("reconcile", help="rebuild every table's timers from its log, once")
    reconcile.add_argument("--table", action="append", help="only this table (repeatable)")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    config = Config.from_env()
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
