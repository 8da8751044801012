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
    worker = sub.add_parser("worker", help="run jobs (queue 'escoba') and hand out due timers")
    worker.add_argument("--burst", action="store_true", help="run what is due, then exit")
    worker.add_argument("--processes", type=int, default=1, metavar="N",
                        help="N job processes under one supervisor (one per core)")
    worker.add_argument("--fork", action="store_true",
                        help="fork a process per job (RQ's Worker); the default runs jobs in process")
    worker.add_argument("--simple", action="store_true",
                        help="jobs in process: the default now, kept for old command lines")
    reconcile = sub.add_parser("reconcile", help="rebuild the tables' timers from their logs, once")
    reconcile.add_argument("--table", action="append", help="only this table (repeatable)")
    reconcile.add_argument("--batch", type=int, default=None, metavar="N",
                           help="one incremental pass of N live tables (default: every live table)")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    config = Config.from_env()
    if args.command == "worker":
        from .runner import run_worker

        if args.processes < 1:
            parser.error("--processes must be at least 1")
        return run_worker(config, burst=args.burst, processes=args.processes,
                          fork=args.fork and not args.simple)
    from .backends import connect
    from .runner import reconcile as run_reconcile

    stores = connect(config)
    summary = run_reconcile(stores.tables, stores.queue, config, table_ids=args.table,
                            batch=args.batch)
    print(json.dumps(summary, indent=2))
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
