"""The ``escoba`` command: serve, dev, worker, reconcile, replay."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="escoba", description="Escoba table server")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="the API under gunicorn (gevent worker: a socket is a greenlet)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument("--workers", type=int, default=1, help="processes; about one per core")
    serve.add_argument("--worker-class", choices=("gevent", "gthread"), default="gevent")
    serve.add_argument("--connections", type=int, default=20_000,
                       help="gevent: open sockets and HTTP connections one worker accepts")
    serve.add_argument("--threads", type=int, default=64, help="gthread only: threads per worker")
    dev = sub.add_parser("dev", help="everything in one process on an embedded store")
    dev.add_argument("--host", default="127.0.0.1")
    dev.add_argument("--port", type=int, default=8000)
    dev.add_argument("--redis", default=None, help="use this Redis URL instead of the embedded store")
    sub.add_parser("worker", help="an RQ worker with its scheduler", add_help=False)
    sub.add_parser("reconcile", help="rebuild every table's due timers from the logs", add_help=False)
    sub.add_parser("replay", help="step through a table's log", add_help=False)

    if argv and argv[0] in ("replay", "worker", "reconcile"):
        return _delegate(argv[0], argv[1:])
    args = parser.parse_args(argv)
    if args.command == "serve":
        from .serve import serve as run

        return run(args.host, args.port, args.threads, args.workers, worker_class=args.worker_class,
                   connections=args.connections)
    from .dev import run_dev

    return run_dev(args.host, args.port, args.redis)


def _delegate(command: str, rest: list[str]) -> int:
    if command == "replay":
        from events.replay import main as replay

        return replay(rest)
    from workers.cli import main as worker_main

    return worker_main([command, *rest])


if __name__ == "__main__":
    raise SystemExit(main())
