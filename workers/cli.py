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
    worker = sub.add_parser("worker", help="run jobs (queue 'escoba') and hand out due timers",
                            description="Runs the jobs of the queue 'escoba' (bots' moves, timers: "
                                        "PLAYER AWAY, expiry, rematch; turn notices: webhooks, Web "
                                        "Push) and of the queue 'analysis' in process, and a ticker "
                                        "that hands RQ the timers due now. Settings come from the "
                                        "environment (docs/operations.md, Settings).")
    worker.add_argument("--burst", action="store_true",
                        help="run what is due, then exit (default: keep running)")
    worker.add_argument("--processes", type=int, default=1, metavar="N",
                        help="N job processes under one supervisor, e.g. one per core (default: 1)")
    worker.add_argument("--fork", action="store_true",
                        help="fork a process per job, RQ's Worker (default: jobs run in process)")
    worker.add_argument("--shard", type=int, default=None, metavar="N",
                        help="only queue shard N's jobs (the N-th URL of ESCOBA_QUEUE_URL, from 0) "
                             "(default: every shard)")
    worker.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                        help="serve this process's job metrics for Prometheus on PORT (GET /metrics; with "
                             "several job processes, the k-th on PORT+k) (default: not served)")
    worker.add_argument("--simple", action="store_true",
                        help="jobs in process, kept for old command lines (default: on)")
    reconcile = sub.add_parser("reconcile", help="rebuild the tables' timers from their logs, once",
                               description="Rebuild the live tables' due timers from their logs, "
                                           "once, and print a JSON summary (exit code 1 if a table "
                                           "failed).")
    reconcile.add_argument("--table", action="append", metavar="TABLE_ID",
                           help="only this table; repeatable (default: every live table)")
    reconcile.add_argument("--batch", type=int, default=None, metavar="N",
                           help="one incremental pass: the repair sets and N live tables from the cursor "
                                "(default: every live table)")
    for command in (worker, reconcile):
        command.add_argument("--redis-url", metavar="URL", default=None, help=REDIS_URL_HELP)
        command.add_argument("--redis", dest="redis_url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    config = Config.from_env()
    if args.redis_url:
        config = dataclasses.replace(config, redis_url=args.redis_url)
    if args.command == "worker":
        from events import patches

        from .runner import run_worker

        patches.apply_all()

        if args.processes < 1:
            parser.error("--processes must be at least 1")
        try:
            return run_worker(config, burst=args.burst, processes=args.processes,
                              fork=args.fork and not args.simple, shard=args.shard,
                              metrics_port=args.metrics_port)
        except ValueError as exc:  # a shard the settings do not have
            parser.error(str(exc))
    from .backends import connect
    from .runner import reconcile as run_reconcile

    stores = connect(config)
    summary = run_reconcile(stores.tables, stores.queues, config, table_ids=args.table,
                            batch=args.batch)
    print(json.dumps(summary, indent=2))
    return 1 if summary["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
