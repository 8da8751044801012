"""Fan-out latency and memory of the table WebSocket: 1,000 sockets over 250 tables.

    python bench/sockets.py [--tables 250] [--workers 2] [--threads 1100] [--moves 400] [--rate 20]

Starts ``escoba serve`` (gunicorn gthread) on the benchmark's own Redis DB
(BENCH_REDIS_URL, default redis://127.0.0.1:6379/9, flushed before and after),
opens the tables with operator decks (games scripted in advance with the engine,
bench/_common.py) and connects four sockets to each: the two players (with their
tokens) and two spectators. Then it POSTs a stream of moves on random tables at a
steady rate and measures, for each move, the time from its HTTP answer to the
moment the last of that table's four sockets has received a
``{"type": "table", "version": N}`` message with N >= the move's version.

Memory per socket: the summed VmRSS of the gunicorn master and workers after
all sockets are connected (and have their first view) minus before, / sockets.

The client is one thread with a selector over raw sockets and a minimal
RFC 6455 reader (it answers the server's pings), so it costs little CPU on a
2-core machine; the moves go out from the main thread on one persistent
http.client connection.
"""

from __future__ import annotations

import argparse
import base64
import os
import random
import re
import selectors
import socket
import struct
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (  # noqa: E402
    REDIS_URL,
    Http,
    cpu_seconds,
    escoba_server,
    exit_on_sigterm,
    flush_bench_db,
    free_port,
    game_script,
    open_table,
    percentile,
    pool_starmap,
    summary_ms,
)

HEAD = re.compile(rb'^\{"type": "(\w+)", "version": (\d+)')


class Socket:
    """One client WebSocket: the raw socket, a receive buffer, what it has heard."""

    def __init__(self, table: int, role: str):
        self.table = table
        self.role = role
        self.sock: socket.socket | None = None
        self.buf = bytearray()
        self.fragments = bytearray()
        self.heard: list[tuple[int, float]] = []  # (version of a "table" message, when)
        self.closed = False

    def connect(self, port: int, path: str) -> None:
        key = base64.b64encode(os.urandom(16)).decode()
        sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        sock.sendall(
            (
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                f"Sec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(4096)
            if not chunk:
                raise ConnectionError(f"closed during the handshake of {path}")
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"handshake refused for {path}: {head[:200]!r}")
        sock.setblocking(False)
        self.sock = sock
        self.buf += rest

    def feed(self, now: float) -> None:
        """Take every complete frame out of the buffer."""
        buf = self.buf
        while len(buf) >= 2:
            opcode = buf[0] & 0x0F
            n = buf[1] & 0x7F
            at = 2
            if n == 126:
                if len(buf) < 4:
                    return
                n = struct.unpack_from("!H", buf, 2)[0]
                at = 4
            elif n == 127:
                if len(buf) < 10:
                    return
                n = struct.unpack_from("!Q", buf, 2)[0]
                at = 10
            if len(buf) < at + n:
                return
            payload = bytes(buf[at : at + n])
            fin = buf[0] & 0x80
            del buf[: at + n]
            if opcode == 0x9:  # ping: answer with a masked pong
                self._send(0xA, payload)
            elif opcode == 0x8:
                self.closed = True
            elif opcode in (0x1, 0x2, 0x0):
                self.fragments += payload
                if fin:
                    self._message(bytes(self.fragments), now)
                    self.fragments.clear()

    def _message(self, text: bytes, now: float) -> None:
        m = HEAD.match(text)
        if m and m.group(1) == b"table":
            self.heard.append((int(m.group(2)), now))

    def _send(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        frame = bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked
        try:
            self.sock.send(frame)
        except OSError:
            self.closed = True

    def first_at(self, version: int) -> float | None:
        for v, t in self.heard:
            if v >= version:
                return t
        return None


class Reader(threading.Thread):
    """One thread, one selector, every socket."""

    def __init__(self):
        super().__init__(name="ws-reader", daemon=True)
        self.selector = selectors.DefaultSelector()
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def add(self, ws: Socket) -> None:
        with self.lock:
            self.selector.register(ws.sock, selectors.EVENT_READ, ws)
            if ws.buf:  # the first frame may have come with the handshake's answer
                ws.feed(time.perf_counter())

    def run(self) -> None:
        while not self.stop.is_set():
            if not self.selector.get_map():
                time.sleep(0.01)
                continue
            events = self.selector.select(0.1)  # epoll: registering meanwhile is safe
            now = time.perf_counter()
            with self.lock:
                for key, _ in events:
                    ws: Socket = key.data
                    try:
                        chunk = ws.sock.recv(1 << 16)
                    except BlockingIOError:
                        continue
                    except OSError:
                        chunk = b""
                    if not chunk:
                        ws.closed = True
                        self.selector.unregister(ws.sock)
                        continue
                    ws.buf += chunk
                    ws.feed(now)


def rss_total(server) -> tuple[int, dict[int, int]]:
    per = server.rss_kib()
    return sum(per.values()), per


def fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="WebSocket fan-out latency and memory per socket")
    parser.add_argument("--tables", type=int, default=250)
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=1100, help="gthread threads per worker")
    parser.add_argument("--moves", type=int, default=400, help="moves in the stream")
    parser.add_argument("--rate", type=float, default=20.0, help="moves per second")
    parser.add_argument("--seed", default="sockets")
    args = parser.parse_args(argv)
    exit_on_sigterm()
    n_sockets = args.tables * 4
    print(
        f"sockets: {args.tables} tables x 4 sockets (2 players + 2 spectators) = {n_sockets}; "
        f"escoba serve: gunicorn gthread workers={args.workers} threads={args.threads}; "
        f"{args.moves} moves at {args.rate:g}/s on random tables; redis {REDIS_URL}",
        flush=True,
    )

    per_table = max(8, 3 * args.moves // args.tables + 8)
    flush_bench_db()
    scripts = pool_starmap(game_script, [(f"ws:{i}", per_table) for i in range(args.tables)], 2)

    server = None
    sockets: list[Socket] = []
    reader = Reader()
    try:
        server = escoba_server(free_port(), args.threads, args.workers)
        http = Http(server.port)
        tables = [open_table(http, s) for s in scripts]
        time.sleep(1.0)
        before, before_per = rss_total(server)

        reader.start()
        t0 = time.perf_counter()
        for i, (table_id, tokens) in enumerate(tables):
            for role, token in (("p0", tokens[0]), ("p1", tokens[1]), ("s1", None), ("s2", None)):
                ws = Socket(i, role)
                path = f"/tables/{table_id}/ws" + (f"?token={token}" if token else "")
                ws.connect(server.port, path)
                reader.add(ws)
                sockets.append(ws)
        deadline = time.monotonic() + 60
        while any(not ws.heard for ws in sockets) and time.monotonic() < deadline:
            time.sleep(0.1)
        connected = time.perf_counter() - t0
        waiting = sum(1 for ws in sockets if not ws.heard)
        time.sleep(2.0)
        after, after_per = rss_total(server)
        print(f"connected {len(sockets)} sockets in {connected:.1f}s ({waiting} without a first view)")
        for pid in server.pids():
            role = "master" if pid == server.proc.pid else "worker"
            print(
                f"  {role} {pid}: VmRSS {before_per.get(pid, 0) / 1024:.1f} -> "
                f"{after_per.get(pid, 0) / 1024:.1f} MiB, open fds {fds(pid)}"
            )
        per_socket = (after - before) / len(sockets)
        print(
            f"memory: VmRSS {before / 1024:.1f} MiB before, {after / 1024:.1f} MiB after -> "
            f"{per_socket:.1f} KiB per socket"
        )

        by_table: dict[int, list[Socket]] = {}
        for ws in sockets:
            by_table.setdefault(ws.table, []).append(ws)
        offsets = [0] * len(tables)
        rng = random.Random(args.seed)
        sent: list[tuple[int, int, float, float]] = []  # (table, version, sent, answered)
        http_lat: list[float] = []
        cpu0 = cpu_seconds(server.pids())
        start = time.perf_counter()
        for k in range(args.moves):
            due = start + k / args.rate
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            live = [i for i in range(len(tables)) if offsets[i] < len(scripts[i].moves)]
            if not live:
                print("ran out of scripted moves")
                break
            i = rng.choice(live)
            seat, move, version = scripts[i].moves[offsets[i]]
            offsets[i] += 1
            t = time.perf_counter()
            status, answer = http.call("POST", f"/tables/{tables[i][0]}/moves", move, tables[i][1][seat])
            answered = time.perf_counter()
            assert status == 200 and answer["version"] == version, (status, answer, version)
            http_lat.append(answered - t)
            sent.append((i, version, t, answered))
        stream = time.perf_counter() - start
        time.sleep(3.0)
        server_cpu = cpu_seconds(server.pids()) - cpu0
        http.close()

        delays, from_sent, missing, early = [], [], 0, 0
        for i, version, posted, answered in sent:
            got = [ws.first_at(version) for ws in by_table[i]]
            if any(t is None for t in got):
                missing += 1
                continue
            last = max(got)
            early += last < answered
            delays.append(max(0.0, last - answered))
            from_sent.append(last - posted)
        closed = sum(ws.closed for ws in sockets)
        print(
            f"stream: {len(sent)} moves in {stream:.1f}s; server CPU {server_cpu:.1f}s "
            f"({server_cpu / max(stream, 1e-9) * 100:.0f}% of one core)"
        )
        print(f"  POST /moves latency: {summary_ms(http_lat)}")
        print(f"  answer -> all 4 sockets of the table have the version: {summary_ms(delays)}")
        print(f"  POST sent -> all 4 sockets of the table have the version: {summary_ms(from_sent)}")
        print(
            f"  moves whose sockets did not all hear: {missing}; all heard before the answer: {early}; "
            f"sockets closed by the server: {closed}"
        )
        p99 = percentile(delays, 99)
        verdict = "met" if p99 < 0.1 and not missing else "MISSED"
        print(
            f"fan-out p50 {percentile(delays, 50) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms "
            f"(target p99 < 100 ms: {verdict}); memory {per_socket:.1f} KiB per socket"
        )
    finally:
        reader.stop.set()
        for ws in sockets:
            if ws.sock is not None:
                ws.sock.close()
        if server is not None:
            server.stop()
        flush_bench_db()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
