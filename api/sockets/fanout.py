"""How a change reaches every socket of its table, in this process and in others: ``Fanout``.

A change reaches a socket one of three ways, and each socket is sent each version at most once:

- **direct**: a change appended here (a POST, a socket's move frame, a rename) is written to each
  other socket of the table here by the appender's own greenlet, when that socket is free to write
  (``Fanout.published``; the socket's side is api/sockets/route.py ``_Direct``);
- **mailbox**: otherwise it is posted to the socket's ``Mailbox`` and its handler sends it;
- **notice**: a change appended by another process is heard through Redis pub/sub (the listener of
  api/sockets/notices.py: SUBSCRIBE on one Redis, SSUBSCRIBE and a listener a node on a cluster)
  and posted to every mailbox of the table here (``Fanout.noticed``).

Two more mechanisms keep them from doubling or missing a change: the versions posted here
(``_posted``: a notice of a change already posted does nothing), and the table's listeners set
(``EventStore.listen``: the append's step publishes no notice while this process is the table's only
listener, since it posts its own changes itself). The states of a table here, and what each keeps
true: docs/fanout.md.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import defaultdict, deque
from typing import TYPE_CHECKING

import orjson

from api.sockets import frames
from api.sockets.frames import Ahead, ViewFrames
from api.sockets.notices import listener_for
from events.locks import short_lock

if TYPE_CHECKING:
    from engine import State

log = logging.getLogger("escoba.hub")

CHAT_BACKLOG = 64  # chat frames a socket may have waiting; older ones are dropped
# seconds: every socket's handler is woken this often with nothing to send, in case its reader died without
# a word (the reader sets the handler's event whenever it ends a connection, so a rare check suffices, and
# a frequent one over thousands of idle handlers is a steady cost). One timer for the process: a wait with a
# timeout of its own cost each handler a gevent Timeout per change it sent (docs/benchmarks.md)
CHECK_EVERY = 300.0
RETRY_LISTEN = 1.0  # seconds between tries to join a table's listeners (the store away)
# sockets whose frames a move made here builds ahead of their handlers (a table's players, a few of its
# spectators: the readers of one version share their views, so more would mostly find them built)
PREBUILT_MAX = 8


class Mailbox:
    """What one socket has yet to send: the latest state (an older one is never sent after it) and chat frames.

    ``wake`` is set on every post; the socket's handler waits on it.
    """

    __slots__ = ("wake", "state", "chats", "frames_for", "send_now")
    _lock = short_lock()  # one for every mailbox: posts and takes are a few instructions, never a wait

    def __init__(self, wake=None, frames_for=None):
        self.wake = wake if wake is not None else threading.Event()
        self.state = None
        self.chats: deque[bytes] = deque(maxlen=CHAT_BACKLOG)
        # (state, ahead=None) -> this socket's frames of it (its handler's own, kept in the views' cache):
        # ``published`` builds them right after the mover's, while that work is still in the processor's
        # caches; with ``ahead`` (api/sockets/frames.py ``Ahead``), into it, while the state's append is in
        # flight (``Fanout.ahead``)
        self.frames_for = frames_for
        # state -> whether this socket was sent its frames of it (or of a newer one) at once, by the poster,
        # its handler left asleep (api/sockets/route.py ``_Direct``); None, or False: the mailbox's way
        self.send_now = None

    def post_state(self, state) -> None:
        with self._lock:
            if self.state is None or state.version > self.state.version:
                self.state = state
        self.wake.set()

    def post_chat(self, frame: bytes) -> None:
        with self._lock:
            self.chats.append(frame)
        self.wake.set()

    def take(self):
        """(the latest state posted or None, the chat frames posted), emptying the mailbox."""
        with self._lock:
            state, self.state = self.state, None
            chats = list(self.chats)
            self.chats.clear()
        return state, chats


def _sent_now(q: Mailbox, state) -> bool:
    try:
        return q.send_now(state)
    except Exception:  # its handler sends it, and meets whatever went wrong itself
        log.exception("could not send a socket its frames at once")
        return False


class Fanout:
    """How a change reaches every socket of its table, in this process and in others (one per
    process). Its interface: ``subscribe`` / ``unsubscribe`` a socket's mailbox to a table,
    ``published`` (a change this process appended), ``noticed`` (a notice from pub/sub: another
    process's change, a chat line, a resync), and ``listener_id``, the ``local`` every append made
    here passes to the store (api/moves.py).

    What it keeps true (docs/fanout.md draws it):

    1. A socket is never sent an older version after a newer one: a mailbox keeps only the newest
       state posted, and a direct write goes out only past the version its socket was sent last.
    2. ``_posted[table]`` is the newest version posted to the table's mailboxes here, and a notice
       at or below it does nothing: a change made here, posted by ``published``, costs its own
       notice no load and no post when that notice comes back.
    3. A change appended here reaches every other socket of its table here before the appender
       answers (``published``: directly or through their mailboxes); its notice is for the other
       processes only, so the append's step publishes none while ``listener_id`` is the table's
       only listener.
    4. While a socket here watches a table, this process is subscribed to its notices and, from
       the subscription's confirmation on, in its listeners set; it joins the set before that
       confirmation's resync reads the log, so a change is either published to it or in what the
       resync reads. Each (re)subscription's confirmation resyncs the table from the log; a failed
       join is retried every ``RETRY_LISTEN`` s, each success followed by a resync of its own.
    5. Posting never waits for a socket: a direct write is tried only on a socket free to write
       (at most ``PREBUILT_MAX`` a change), anything else goes to the mailbox, and a mailbox post
       is a few instructions under a lock no one holds across a wait.
    6. A notice of an append this process still has in flight (it can beat the append's answer)
       is folded from the records the service noted for it (``TableService.load_noticed``), never
       read from the log; a notice whose records follow the version held here is folded in too.
    """

    def __init__(self, redis, service, check_every: float = CHECK_EVERY, notice_seconds=None,
                 posts: dict[str, int] | None = None, frames: ViewFrames | None = None):
        self.redis = redis
        self.service = service
        self.frames = frames  # the process's views (``ahead``: none built ahead without it)
        # table -> the frames being built for the state its append in flight would make (``ahead``), kept by
        # ``published`` when that very state is appended; a refused one is dropped at the table's next move
        self._ahead: dict[str, Ahead] = {}
        self.notice_seconds = notice_seconds  # a Histogram: each state notice's posting (escoba_fanout_seconds)
        self.check_every = check_every
        self._stopped = threading.Event()
        self._checker: threading.Thread | None = None
        self._lock = short_lock()  # the watchers' dicts only; subscribing waits, under its own lock
        self._watchers: dict[str, set[Mailbox]] = defaultdict(set)
        # table -> the newest version posted to its mailboxes here: a change this process made is
        # posted at once (``published``), and its own notice, when it comes back, costs no load or post
        self._posted: dict[str, int] = {}
        # subscription changes in order (a table's last socket leaving while its next one
        # arrives must end subscribed); dispatch never waits for this one
        self._subscribing = threading.Lock()
        self.listener_id = uuid.uuid4().hex
        self._retrying: set[str] = set()  # tables whose listen failed, retried by a thread of their own
        self.listener = listener_for(redis, self.noticed)
        # changes made here posted to another socket of the table: written by the mover, or mailed to
        # the socket's handler (escoba_socket_posts_total: ``Metrics.socket_posts``, read when scraped)
        self.posts = posts if posts is not None else {"direct": 0, "mailbox": 0}

    def subscribe(self, table_id: str, mailbox: Mailbox | None = None) -> Mailbox:
        """``mailbox`` (a new one when None) hears every change of the table from now on. A socket
        subscribes before it loads its table: a change landing in between is then in its mailbox."""
        q = mailbox if mailbox is not None else Mailbox()
        with self._subscribing:
            with self._lock:
                first = not self._watchers.get(table_id)
                self._watchers[table_id].add(q)
            if first:  # the first socket here on this table: subscribe (it resyncs once confirmed)
                self.listener.add(table_id)
            if self._checker is None:
                self._checker = threading.Thread(target=self._check, name="escoba-hub-check", daemon=True)
                self._checker.start()
        return q

    def unsubscribe(self, table_id: str, q: Mailbox) -> None:
        """``q`` hears no more; the table's last socket here ends the subscription, the process's
        place in the table's listeners set and what was posted (``_posted``)."""
        with self._subscribing:
            with self._lock:
                self._watchers[table_id].discard(q)
                last = not self._watchers[table_id]
                if last:
                    del self._watchers[table_id]
                    self._posted.pop(table_id, None)
                    self._ahead.pop(table_id, None)
            if last:
                self.listener.remove(table_id)
                try:
                    self.service.store.unlisten(table_id, self.listener_id)
                except Exception:  # left in the set: the table's moves here publish as before, no more
                    log.warning("could not leave table %s's listeners", table_id, exc_info=True)

    def open_sockets(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._watchers.values())

    def stop(self) -> None:
        self._stopped.set()
        self.listener.stop()

    def wake_all(self) -> None:
        """Wakes every socket's handler here: one with nothing to send checks that its reader lives."""
        with self._lock:
            boxes = [q for qs in self._watchers.values() for q in qs]
        for q in boxes:
            q.wake.set()

    def _check(self) -> None:
        while not self._stopped.wait(self.check_every):
            self.wake_all()

    def ahead(self, table_id: str, state: State, skip: Mailbox | None = None) -> None:
        """A change whose append is in flight (``TableService.execute(ahead=...)``, run between the step's send
        and its reply): the table's other sockets' frames of it are built now, while Redis works on the step
        (its fsync several times longer than the build), so they are ready when ``published`` sends them. They
        are kept apart (api/sockets/frames.py ``Ahead``) and join the views' caches only if ``published`` is
        called with this very state: an append refused leaves nothing behind."""
        if self.frames is None:
            return
        with self._lock:
            targets = [q for q in self._watchers.get(table_id, ())
                       if q is not skip and q.frames_for is not None][:PREBUILT_MAX]
            if not targets:
                return
            ahead = self._ahead[table_id] = self.frames.ahead(table_id, state)
        for q in targets:
            try:
                q.frames_for(state, ahead)
            except Exception:  # left to be built once appended, as without this
                log.exception("could not build table %s's frames ahead of its append", table_id)

    def published(self, table_id: str, state: State, skip: Mailbox | None = None) -> None:
        """A change this process appended (a move by POST or socket), posted to the table's mailboxes
        here at once, as its notice would be (``skip``: the mover's own socket, which sends it with
        its ack). Its notice, when it comes back through Redis, then finds that version posted and
        does nothing: the process's other sockets hear the move without that round trip."""
        with self._lock:
            ahead = self._ahead.pop(table_id, None) if self._ahead else None
        if ahead is not None and ahead.state is state:  # built while it was appended: they are its frames
            ahead.keep()
        with self._lock:
            targets = self._watchers.get(table_id)
            if not targets or self._posted.get(table_id, 0) >= state.version:
                return
            self._posted[table_id] = state.version
            targets = list(targets)
        # not timed as a fan-out (escoba_fanout_seconds): a notice's is, as its help says; a post from
        # the append's answer is a few appends to mailboxes, and counted there it hid a starved
        # process's slow notices (EscobaFanoutSlow) among a crowd of fast posts
        # Sent at once where the socket is free to write: waking its handler would cost a switch to its
        # greenlet and back and a pass of its loop for one write (docs/benchmarks.md). The mover's answer
        # waits for these sends; a socket whose write would wait, and the rest, get the mailbox
        waiting, sent = [], 0
        for q in targets:
            if q is skip:
                continue
            if q.send_now is not None and sent < PREBUILT_MAX and _sent_now(q, state):
                sent += 1
            else:
                q.post_state(state)
                waiting.append(q)
        with self._lock:
            self.posts["direct"] += sent
            self.posts["mailbox"] += len(waiting)
        # Each reader's frames built now, in the mover's greenlet, where its handler would build them a
        # little later (found then in the views' cache, api/sockets/frames.py): a view built right after
        # another of the same version runs on code and data still in the processor's caches, where the
        # handler's, after the mover's send and a switch, ran on cold ones, several times slower
        # (docs/benchmarks.md). A failure here
        # leaves the build to the handler.
        built = 0
        for q in waiting:
            if q.frames_for is not None and built < PREBUILT_MAX:
                built += 1
                try:
                    q.frames_for(state)
                except Exception:
                    log.exception("could not build table %s's frames ahead of its socket", table_id)

    # --- what a notice does (nothing here waits for a socket) ---------------------------
    def noticed(self, raw: bytes | str) -> None:
        """A notice from the listener (events/store.py ``change_notice``, a chat line, or the listener's
        resync on a subscription's confirmation), posted to the table's mailboxes here."""
        notice = orjson.loads(raw)
        table_id = notice.get("table_id")
        targets = self._targets(table_id)
        if not targets:
            return
        if "chat" in notice:
            self._post_chat(targets, notice["chat"])
        elif notice.get("resync"):  # (re)subscribed: notices may have been missed, read the log
            if self._listen(table_id):
                self._post_state(targets, table_id, float("inf"))
        else:
            if self._posted.get(table_id, 0) >= notice.get("version", 0):
                return  # this process made that change and posted it already (published)
            started = time.perf_counter()
            self._post_state(targets, table_id, notice.get("version", 0), notice.get("after"),
                             notice.get("records"))
            if self.notice_seconds is not None:
                self.notice_seconds.observe(time.perf_counter() - started)

    def _listen(self, table_id: str) -> bool:
        """Join the table's listeners (before the resync reads the log); False: it failed, and a
        thread retries it, each success followed by a resync of its own."""
        try:
            self.service.store.listen(table_id, self.listener_id)
            return True
        except Exception:
            log.warning("could not join table %s's listeners; retrying", table_id, exc_info=True)
        with self._lock:
            if table_id in self._retrying:
                return False
            self._retrying.add(table_id)
        threading.Thread(target=self._listen_later, args=(table_id,), name="escoba-hub-listen", daemon=True).start()
        return False

    def _listen_later(self, table_id: str) -> None:
        try:
            while not self._stopped.wait(RETRY_LISTEN):
                targets = self._targets(table_id)
                if not targets:
                    return  # no socket here watches it any more
                try:
                    self.service.store.listen(table_id, self.listener_id)
                except Exception:
                    continue
                self._post_state(targets, table_id, float("inf"))
                return
        finally:
            with self._lock:
                self._retrying.discard(table_id)

    def _targets(self, table_id) -> list[Mailbox]:
        with self._lock:
            return list(self._watchers.get(table_id, ()))

    def _post_chat(self, targets: list[Mailbox], line) -> None:
        frame = frames.message({"type": "chat", "line": line})  # one encoding for every socket
        for q in targets:
            q.post_chat(frame)

    def _post_state(self, targets: list[Mailbox], table_id: str, version: int,
                    after: int | None = None, records: list | None = None) -> None:
        # the process that made the move already holds that state, and one that holds the state
        # before it folds in the records the notice carries: no read of the log then
        try:
            state = self.service.load_noticed(table_id, version, after, records)
        except Exception:  # a table gone or a log that won't fold: the sockets keep what they have
            log.exception("could not load table %s for its sockets", table_id)
            return
        with self._lock:
            if table_id in self._watchers and self._posted.get(table_id, 0) < state.version:
                self._posted[table_id] = state.version
        for q in targets:
            q.post_state(state)
