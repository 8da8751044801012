"""JSON-lines logs and Prometheus metrics."""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC

import orjson
from flask import Response, g, request
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from events import patches
from events.locks import short_lock, unpatched
from events.seconds import PerSecond
from events.store import EventStore

_local_second = PerSecond(lambda whole: time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(whole)))


def log_time(ts: float) -> str:
    """``ts`` as logging's default ``asctime`` (local time, ``2026-12-01 19:10:06,123``); the part
    up to the second is formatted once a second, not on every line."""
    whole = int(ts)
    return f"{_local_second(whole)},{int((ts - whole) * 1000):03d}"


def json_line(logger: str, level: str, message: str, fields: dict, created: float) -> str:
    line = {"time": log_time(created), "level": level, "logger": logger, "message": message}
    line.update(fields)
    # a line per request: orjson (as the answers); anything it cannot write becomes text
    return orjson.dumps(line, default=str).decode()


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        try:
            message = record.getMessage()
        except Exception:  # a caller's format and arguments that don't fit: keep both, lose nothing
            message = f"{record.msg} {record.args!r}"
        fields = getattr(record, "fields", {})
        if record.exc_info:
            fields = {**fields, "exc": self.formatException(record.exc_info)}
        return json_line(record.name, record.levelname, message, fields, record.created)


def _os_thread_tools():
    """``start_new_thread``, ``allocate_lock`` and ``sleep`` as the OS has them, even under
    gevent's monkey patching (where ``threading.Thread`` starts a greenlet).

    The log writer must be a real thread: under the gevent worker a greenlet's write to a pipe
    nobody reads (stderr piped to a stalled log collector) blocks the whole process, every
    request with it; a real thread blocks only itself while requests go on filling the deque.
    """
    return (unpatched("_thread", "start_new_thread"), unpatched("_thread", "allocate_lock"),
            unpatched("time", "sleep"))


class BatchedLines(logging.Handler):
    """Log lines formatted by the caller and written in batches by one writer thread.

    A request thread formats its line and appends it to a deque (thread-safe, no
    lock, no wake-up); the writer wakes every ``interval`` seconds and writes what
    gathered in one write. Two designs were measured and dropped: a handler writing
    in the request thread held its lock while it waited for the GIL (a quarter of a
    busy worker's threads were seen waiting there), and a QueueListener woke its
    thread for every line, a thread switch each (docs/benchmarks.md).

    A request's own line and metrics are not even formatted by its thread: ``add_request`` leaves
    what it needs (``request_done``), and ``settle`` counts and formats the gathered ones in a
    batch, in their place among the other lines. In the server a move's path runs on code and data
    out of the processor's caches, so the same work done once a move costs more than in a batch
    (docs/benchmarks.md). ``settle`` runs before every write, before /metrics is read (so a
    scrape counts every request answered before it), and whenever ``SETTLE_AT`` are waiting (so a
    writer stuck on a full pipe loses lines, as ever, but no count).
    """

    # a log reader that stops reading (a full pipe) costs at most this many lines, never the server
    MAX_PENDING = 100_000
    SETTLE_AT = 10_000  # requests waiting to be counted: counted in the request's thread then

    def __init__(self, stream=None, interval: float = 0.1):
        super().__init__()
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self._lines: deque = deque(maxlen=self.MAX_PENDING)  # lines, and requests to settle (tuples)
        self._ready: deque[str] = deque(maxlen=self.MAX_PENDING)  # settled: lines only, in order
        start_thread, lock, self._sleep = _os_thread_tools()
        self._settling = lock()  # one settle at a time: each request counted once, lines kept in order
        self._stopping = False
        self._running = lock()  # held while the writer runs
        self._running.acquire()
        start_thread(self._run, ())

    def handle(self, record: logging.LogRecord) -> bool:
        # no handler lock: emit only appends to a deque
        keep = self.filter(record)
        if keep:
            self.emit(record)
        return bool(keep)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._lines.append(self.format(record))
        except Exception:
            self.handleError(record)

    def add_request(self, done: tuple) -> None:
        """A request answered: ``_settled``'s arguments, counted and written by ``settle``."""
        self._lines.append(done)
        if len(self._lines) >= self.SETTLE_AT:
            self.settle()

    def settle(self) -> None:
        """Count and format the requests gathered, each line kept in its place (never writes)."""
        with self._settling:
            ready, lines = self._ready, self._lines
            try:
                while True:
                    line = lines.popleft()
                    if type(line) is tuple:
                        try:
                            line = _settled(*line)
                        except Exception:  # a request that cannot be counted costs its line, not the rest
                            logging.getLogger("escoba.log").exception("could not count a request")
                            continue
                    ready.append(line)
            except IndexError:
                pass

    def flush(self) -> None:
        """Write what has gathered (the writer thread, and ``close``)."""
        self.settle()
        batch = []
        try:
            while True:
                batch.append(self._ready.popleft())
        except IndexError:
            pass
        if batch:
            try:
                self.stream.write("\n".join(batch) + "\n")
                self.stream.flush()
            except Exception:  # a closed or broken stream must not kill the writer
                pass

    @property
    def writing(self) -> bool:
        """Whether the writer thread still runs."""
        return self._running.locked()

    def close(self) -> None:
        self._stopping = True
        if self._running.acquire(timeout=max(1.0, 5 * self.interval)):  # the writer's last round
            self._running.release()
        self.flush()
        super().close()

    def _run(self) -> None:
        try:
            while not self._stopping:
                self._sleep(self.interval)
                self.flush()
        finally:
            self._running.release()


_writer: BatchedLines | None = None


def stop_logging() -> None:
    """Write out the gathered lines and stop the writer thread (at exit, or for a new setup)."""
    global _writer
    writer, _writer = _writer, None
    if writer is not None:
        logging.getLogger().removeHandler(writer)
        logging.getLogger("gunicorn.error").removeHandler(writer)
        writer.close()


atexit.register(stop_logging)


def setup_logging(level=logging.INFO, stream=None) -> None:
    """JSON lines on stderr (or ``stream``), written in batches by a thread of their own.

    Lines reach the stream within about a tenth of a second; ``stop_logging`` (run at
    exit) writes out the rest.
    """
    global _writer
    stop_logging()
    # the JSON line names neither the source file nor the thread: don't look them up. The
    # process id stays: gunicorn's own format prints %(process)d, and None there broke its lines
    logging._srcfile = None
    logging.logThreads = logging.logMultiprocessing = False
    _writer = BatchedLines(stream)
    _writer.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [_writer]
    # gunicorn's worker-side lines ("Socket error processing request.", timeouts) as JSON lines too
    logging.getLogger("gunicorn.error").handlers[:] = [_writer]
    root.setLevel(level)
    # our own request log line carries table, version, seat, command, outcome, latency
    logging.getLogger("werkzeug").setLevel(logging.WARNING)


# /metrics sums 16384 small counters per index (a bounded pipeline per node): at most this often
TABLE_COUNTS_EVERY = 15.0
# A timer still in the due index this long after its due time is late: the ticker looks every 0.2 s
# (workers/ticker.py), so only a worker gone or a ticker failing lets one wait that long.
TIMER_LATE_AFTER = 10.0
# every status a table may have (engine/table.py), reported even at 0: "no tables playing" is a 0
TABLE_STATUSES = ("waiting", "playing", "round_over", "finished", "expired")
LATENCY_BUCKETS = (.002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5)
# what a move is carried by: "http" (POST /tables/{id}/moves); the socket path labels its own
TRANSPORT_HTTP = "http"
# a request's ``log`` key for its move's (transport, decision seconds): escoba_command_seconds, never a line's
DECIDED = "_decided"


@dataclass
class Metrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)

    def __post_init__(self):
        # prometheus_client guards each value's += with a threading.Lock, gevent's under the gevent worker:
        # the C lock instead, unless the libraries run stock
        patches.PROMETHEUS_LOCKS.apply()
        r = self.registry
        self.moves = Counter("escoba_moves_total", "Commands by type, outcome and transport",
                             ["command", "outcome", "transport"], registry=r)
        self.command_latency = Histogram("escoba_command_seconds", "Move latency, by command and transport",
                                         ["command", "transport"], registry=r, buckets=LATENCY_BUCKETS)
        self.requests = Counter("escoba_http_requests_total", "HTTP requests by route, method and status",
                                ["route", "method", "status"], registry=r)
        self.request_latency = Histogram("escoba_http_request_seconds", "HTTP request latency by route and method",
                                         ["route", "method"], registry=r, buckets=LATENCY_BUCKETS)
        self.open_sockets = Gauge("escoba_open_sockets", "Open WebSockets in this process", registry=r)
        self.fanout = Histogram("escoba_fanout_seconds",
                                "From a change notice's arrival to its state posted to every socket of the "
                                "table in this process (the load or fold of the change included)",
                                registry=r, buckets=(.0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1))
        r.register(_ScheduleFailures())
        # the fan-out counts its posts in this dict (plain ints, under its own lock): read when scraped
        self.socket_posts = {"direct": 0, "mailbox": 0}
        r.register(_SocketPosts(self.socket_posts))
        # label sets that exist from the start, so that a rate over them is 0, not "no data"
        self.moves.labels("play", "ok", TRANSPORT_HTTP)
        self.command_latency.labels("play", TRANSPORT_HTTP)
        for status in ("200", "429", "500", "503"):
            self.requests.labels(MOVE_ROUTE, "POST", status)
        self.request_latency.labels(MOVE_ROUTE, "POST")
        self._request_children: dict = {}
        self._move_children: dict = {}
        self._latency_children: dict = {}
        r.register(_Durability())
        # labels() and the scrape's collect take each parent's own lock: labels() now runs in the log's
        # writer thread too (BatchedLines.settle), and gevent's lock is not for two OS threads. Its
        # sections are dict operations that never wait: the C lock (events/locks.py; events/patches.py)
        patches.PROMETHEUS_PARENT_LOCKS.apply()
        for metric in (self.moves, self.command_latency, self.requests, self.request_latency):
            metric._lock = short_lock()

    def add_redis_collectors(self, backends) -> None:
        self.registry.register(_RedisCollector(backends))

    def move(self, command: str, outcome: str, transport: str) -> None:
        """One move counted (``escoba_moves_total``); children cached as in ``request``."""
        key = (command, outcome, transport)
        child = self._move_children.get(key)
        if child is None:
            child = self._move_children[key] = self.moves.labels(command, outcome, transport)
        child.inc()

    def command_seconds(self, command: str, transport: str, seconds: float) -> None:
        """A move's decision time (``escoba_command_seconds``); children cached as in ``request``."""
        key = (command, transport)
        child = self._latency_children.get(key)
        if child is None:
            child = self._latency_children[key] = self.command_latency.labels(command, transport)
        child.observe(seconds)

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        """One answered request (children cached: labels() takes a lock and builds a key each call)."""
        if method not in METHODS:  # a client's made-up methods must not make series without end
            method = "other"
        key = (route, method, status)
        children = self._request_children.get(key)
        if children is None:
            children = self._request_children[key] = (self.requests.labels(route, method, str(status)),
                                                       self.request_latency.labels(route, method))
        children[0].inc()
        children[1].observe(seconds)


# "WS": a move frame on a table's socket (api/sockets/moves.py), counted under the socket's route
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "WS"})
VIEW_ROUTE = "/tables/<table_id>"
MOVE_ROUTE = "/tables/<table_id>/moves"
SOCKET_ROUTE = "/tables/<table_id>/ws"
UNMATCHED_ROUTE = "unmatched"  # no route took it (404s): one label, whatever the address


class _ScheduleFailures:
    """Change hooks of this process whose timers could not be written (logged with the table
    id; the reconciler repairs them): ``escoba_schedule_failures_total``."""

    def collect(self):
        from workers.scheduling import FAILURES

        family = CounterMetricFamily("escoba_schedule_failures",
                                     "Moves whose timers could not be scheduled (repaired by the reconciler)")
        family.add_metric([], FAILURES.value)
        yield family


class _SocketPosts:
    """How the changes this process made reached the table's other sockets here (``Fanout.posts``, these
    counts): ``direct``, written by the mover's greenlet at once; ``mailbox``, handed to the socket's
    handler (a socket behind, past the mover's few, or a worker without gevent)."""

    def __init__(self, counts: dict):
        self.counts = counts

    def collect(self):
        family = CounterMetricFamily("escoba_socket_posts", "Changes made in this process posted to the "
                                     "table's other sockets here, by way: direct (written by the mover) or "
                                     "mailbox (sent by the socket's handler)", labels=["way"])
        for way, count in sorted(self.counts.items()):
            family.add_metric([way], count)
        yield family


def unreplicated_family() -> CounterMetricFamily:
    """``escoba_unreplicated_acks_total``: writes acknowledged on a master with no replica online
    (ESCOBA_UNREPLICATED=accept, events/replication.py); the workers' metrics report it too."""
    from events.replication import UNREPLICATED

    family = CounterMetricFamily("escoba_unreplicated_acks", "Writes acknowledged on a master with no replica "
                                 "online, held by its AOF alone (ESCOBA_UNREPLICATED=accept)")
    family.add_metric([], UNREPLICATED.total())
    return family


class _Durability:
    """Moves whose replicas did not acknowledge them in time (answered 503), moves acknowledged on a
    master alone, and reads that found a table's log gone or behind what this process had read
    (events/replication.py)."""

    def collect(self):
        from events.replication import LOST_LOGS, UNACKNOWLEDGED

        family = CounterMetricFamily("escoba_unacknowledged_appends",
                                     "Appends fewer replicas than ESCOBA_REPLICA_ACKS held in time (answered 503)")
        family.add_metric([], UNACKNOWLEDGED.total())
        yield family
        yield unreplicated_family()
        lost = CounterMetricFamily("escoba_lost_logs", "Reads that found a table's log gone or behind this "
                                   "process's copy (a failover that lost data)", labels=["kind"])
        for kind in ("vanished", "behind"):
            lost.add_metric([kind], LOST_LOGS.values.get(kind, 0))
        yield lost


class _RedisCollector:
    """Counts that live in Redis, so every process reports the same numbers.

    Table counts and timers come from the tables' store, RQ's from each queue shard (label ``shard``).
    """

    def __init__(self, backends, cache_for: float = TABLE_COUNTS_EVERY, clock=time.monotonic, now=time.time):
        self.store = EventStore(backends.tables)
        self.tables = backends.tables
        self.queues = backends.queues  # the queue shards: RQ's counts, labelled by shard
        self.cache_for = cache_for
        self.clock = clock
        self.now = now
        self._counts: dict[str, int] = {}
        self._timers: tuple[int, int] = (0, 0)
        self._read_at: float | None = None
        self._lock = threading.Lock()

    def _refresh(self) -> None:
        now = self.clock()
        if self._read_at is None or now - self._read_at >= self.cache_for:
            self._counts = self.store.status_counts()
            self._timers = self._timer_counts()
            self._read_at = now

    def table_counts(self) -> dict[str, int]:
        """Tables by status: the buckets' counters (kept by every append, never a scan of the
        tables), summed at most once every ``cache_for`` seconds by this process."""
        with self._lock:
            self._refresh()
            return dict(self._counts)

    def timer_counts(self) -> tuple[int, int]:
        """(tables with a timer due now not yet handed to RQ, those due over ``TIMER_LATE_AFTER`` s ago):
        two ZCOUNTs per bucket and queue shard of the due index, at most once every ``cache_for`` seconds."""
        with self._lock:
            self._refresh()
            return self._timers

    def _timer_counts(self) -> tuple[int, int]:
        from workers import index

        now = self.now()
        pipe = self.tables.pipeline(transaction=False)
        for shard in range(len(self.queues)):  # the due index is split by queue shard
            for bucket in range(index.BUCKETS):
                pipe.zcount(index.due_key(bucket, shard), "-inf", now)
                pipe.zcount(index.due_key(bucket, shard), "-inf", now - TIMER_LATE_AFTER)
        counts = pipe.execute()
        return sum(counts[0::2]), sum(counts[1::2])

    def collect(self):
        tables = GaugeMetricFamily("escoba_tables", "Tables by status", labels=["status"])
        counts = self.table_counts()
        for status in sorted(set(TABLE_STATUSES) | set(counts)):
            tables.add_metric([status], counts.get(status, 0))
        yield tables
        due, late = self.timer_counts()
        yield GaugeMetricFamily("escoba_timers_due", "Tables with a timer due now, not yet handed to RQ", value=due)
        yield GaugeMetricFamily("escoba_timers_late",
                                f"Tables with a timer due over {TIMER_LATE_AFTER:g} s ago, not yet handed to RQ",
                                value=late)
        from rq import Worker

        from workers.queues import QUEUE_NAMES

        counts_by_worker = GaugeMetricFamily("escoba_jobs_total", "Jobs run by the live workers, by outcome and "
                                             "queue shard", labels=["outcome", "shard"])
        workers = GaugeMetricFamily("escoba_workers", "RQ workers registered, by queue shard", labels=["shard"])
        jobs = GaugeMetricFamily("escoba_jobs", "RQ jobs by registry, by queue and queue shard",
                                 labels=["queue", "state", "shard"])
        # RQ pushes at the tail and pops at the head: the head is the job that has waited longest
        oldest = GaugeMetricFamily("escoba_queue_oldest_job_seconds",
                                   "Seconds the oldest job still queued has waited (0: none queued)",
                                   labels=["queue", "shard"])
        for number, queue in enumerate(self.queues):
            shard = str(number)
            run = failed = 0
            registered = Worker.all(connection=queue)
            for worker in registered:
                run += worker.successful_job_count or 0
                failed += worker.failed_job_count or 0
            counts_by_worker.add_metric(["ok", shard], run)
            counts_by_worker.add_metric(["failed", shard], failed)
            workers.add_metric([shard], len(registered))
            for name in QUEUE_NAMES:
                for state in ("failed", "scheduled", "started"):
                    jobs.add_metric([name, state, shard], queue.zcard(f"rq:{state}:{name}"))
                jobs.add_metric([name, "queued", shard], queue.llen(f"rq:queue:{name}"))
                oldest.add_metric([name, shard], self._oldest(queue, name))
        yield counts_by_worker
        yield workers
        yield jobs
        yield oldest

    def _oldest(self, queue, name: str) -> float:
        """Seconds the job at the head of queue ``name`` (the longest waiting) has waited; 0: none."""
        from rq.job import Job

        head = queue.lindex(f"rq:queue:{name}", 0)
        if head is None:
            return 0.0
        enqueued = queue.hget(Job.key_for(head.decode() if isinstance(head, bytes) else head), "enqueued_at")
        if not enqueued:
            return 0.0
        from rq.utils import utcparse

        stamp = utcparse(enqueued.decode() if isinstance(enqueued, bytes) else enqueued)
        return max(0.0, self.now() - stamp.replace(tzinfo=UTC).timestamp())


def install(app, metrics: Metrics) -> None:
    @app.before_request
    def _start():
        g.started = time.perf_counter()
        g.log = {}

    @app.after_request
    def _finish(response):
        if g.get("counted"):  # a refusal: counted as it was answered (api.http.errors.refused_response)
            return response
        log = g.get("log")
        code = _error_code(response) if response.status_code >= 400 and log and log.get("command") else None
        rule = request.url_rule
        request_done(metrics, log, request.method, request.path, response.status_code, code,
                     g.get("started"), rule.rule if rule is not None else UNMATCHED_ROUTE)
        return response

    @app.get("/metrics")
    def metrics_endpoint():
        settle_requests()
        return Response(generate_latest(metrics.registry), mimetype="text/plain; version=0.0.4")


_request_log = logging.getLogger("escoba.api")


def request_done(metrics: Metrics, log: dict | None, method: str, path: str, status: int, error_code: str | None,
                 started: float | None, route: str = UNMATCHED_ROUTE) -> None:
    """A request's log line (its ``log`` fields: table, command, version...), its count and latency by
    route, and a command's count by outcome, whether Flask or api/http/hot.py answered it. The caller
    hands ``log`` over: it is read later."""
    now = time.perf_counter()
    seconds = max(0.0, now - (started if started is not None else now))
    writer = _writer
    if writer is not None and logging.root.handlers == [writer] and _request_log.isEnabledFor(logging.INFO):
        # the same line the logging call below makes, without its record and handler chain (their cost
        # a request was a visible share of the API's CPU: docs/benchmarks.md), and made in a batch
        writer.add_request((metrics, log, method, path, status, error_code, seconds, route, time.time()))
    else:  # another handler listens (a test's, a tool's): the record goes through logging, now
        fields = _counted(metrics, log, method, path, status, error_code, seconds, route)
        _request_log.info("request", extra={"fields": fields})


def _counted(metrics: Metrics, log: dict | None, method: str, path: str, status: int, error_code: str | None,
             seconds: float, route: str) -> dict:
    """The request counted in ``metrics``; its line's fields."""
    fields = dict(log or {})
    decided = fields.pop(DECIDED, None)
    if fields.get("command"):
        outcome = "ok" if status < 400 else (error_code or str(status))
        fields["outcome"] = outcome
        metrics.move(fields["command"], outcome, fields.get("transport", TRANSPORT_HTTP))
        if decided is not None:
            metrics.command_seconds(fields["command"], *decided)
    metrics.request(route, method, status, seconds)
    fields.update(method=method, path=path, status=status, latency_ms=round(seconds * 1000, 2))
    return fields


def _settled(metrics, log, method, path, status, error_code, seconds, route, created) -> str:
    """A request left by ``request_done`` counted, and its line."""
    fields = _counted(metrics, log, method, path, status, error_code, seconds, route)
    return json_line("escoba.api", "INFO", "request", fields, created)


def settle_requests() -> None:
    """Every request answered so far counted in its metrics (before /metrics is read)."""
    writer = _writer
    if writer is not None:
        writer.settle()


def _error_code(response) -> str:
    try:
        return response.get_json()["error"]["code"]
    except Exception:
        return str(response.status_code)
