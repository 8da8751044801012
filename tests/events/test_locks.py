"""``events.locks.short_lock``: the C lock, also where gevent has patched ``threading``."""

from __future__ import annotations

import subprocess
import sys
import threading

from events.locks import short_lock


def test_without_gevents_patching_it_is_threadings_own_lock():
    lock = short_lock()
    assert type(lock) is type(threading.Lock())
    with lock:
        assert not lock.acquire(blocking=False)
    assert lock.acquire(blocking=False)


def test_under_gevents_patching_it_is_the_c_lock_not_gevents():
    code = ("from gevent import monkey; monkey.patch_all()\n"
            "import threading, _thread\n"
            "from events.locks import short_lock\n"
            "from api.sockets import fanout, frames\n"
            "from events.service import TableService\n"
            "c = type(monkey.get_original('_thread', 'allocate_lock')())\n"
            "assert type(threading.Lock()) is not c, 'gevent patched the lock'\n"
            "assert type(short_lock()) is c\n"
            "assert type(frames.ViewFrames()._lock) is c and type(fanout.Mailbox._lock) is c\n"
            "from api.server.observability import Metrics\n"
            "m = Metrics()\n"
            "m.move('play', 'ok', 'socket')\n"
            "assert type(m.moves.labels('play', 'ok', 'socket')._value._lock) is c\n"
            "assert m.moves.labels('play', 'ok', 'socket')._value.get() == 1\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
