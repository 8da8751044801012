"""The job loop outlives its store: a store away is retried with a backoff and a bug only twice;
a job whose worker stopped beating (or that was taken and never started) goes back on its queue;
a job without a result leaves nothing behind (workers/jobloop.py, workers/liveness.py)."""

from __future__ import annotations

import contextlib
import time

from rq.job import Job

from workers import jobloop, liveness, queues, scheduling, ticker


def _hand(queue, func: str, job_id: str) -> None:
    assert ticker.enqueue_once(queue, {"id": job_id, "func": f"tests.workers.flaky.{func}", "args": [job_id],
                                       "kwargs": {}, "retry": None})


def _worker(queue):
    return jobloop.ThreadWorker(queues.worker_queues(queue), connection=queue)


def test_a_job_failing_on_a_store_away_is_retried_later_with_a_backoff(fake_queue):
    _hand(fake_queue, "store_away", "t1_bot_1")
    started = time.time()
    _worker(fake_queue).work(burst=True)
    job = Job.fetch("t1_bot_1", connection=fake_queue)
    assert job.get_status() == "scheduled"  # not three times in one second: later
    assert job.retries_left == jobloop.STORE_RETRIES - 1
    due = fake_queue.zscore("rq:scheduled:escoba", "t1_bot_1")
    assert started <= due <= started + jobloop.STORE_BACKOFF[0] + 1  # RQ keeps whole seconds


def test_a_bug_is_retried_only_twice(fake_queue):
    _hand(fake_queue, "bug", "t2_bot_1")
    worker = _worker(fake_queue)
    for _ in range(jobloop.BUG_RETRIES + 2):
        worker.work(burst=True)
        ticker.enqueue_due(fake_queue, time.time() + 60)  # its retries, due at once
    job = Job.fetch("t2_bot_1", connection=fake_queue)
    assert job.get_status() == "failed" and worker.jobs_run == jobloop.BUG_RETRIES + 1


def test_a_job_without_a_result_leaves_nothing_behind(fake_queue):
    _hand(fake_queue, "fine", "t3_bot_1")
    worker = _worker(fake_queue)
    worker.work(burst=True)
    assert worker.jobs_run == 1
    assert not fake_queue.exists(Job.key_for("t3_bot_1"))
    assert fake_queue.zcard("rq:wip:escoba") == 0 and fake_queue.llen("rq:queue:escoba:intermediate") == 0
    assert not fake_queue.keys("rq:execution*")
    assert not fake_queue.hget(Job.key_for("t3_bot_1"), "description")


def test_the_hand_off_writes_no_description(fake_queue):
    _hand(fake_queue, "fine", "t4_bot_1")
    fields = {k.decode() for k in fake_queue.hgetall(Job.key_for("t4_bot_1"))}
    assert "description" not in fields and {"data", "status", "origin", "retries_left"} <= fields
    assert not ticker.enqueue_once(fake_queue, {"id": "t4_bot_1", "func": "tests.workers.flaky.fine",
                                                "args": ["x"], "kwargs": {}, "retry": None})  # live: not twice


def _started_by(queue, job_id: str, worker: str) -> None:
    """As a worker that took ``job_id`` and started it, then died (no more beats)."""
    queue.lmove("rq:queue:escoba", "rq:queue:escoba:intermediate")
    queue.zadd("rq:wip:escoba", {f"{job_id}:exec1": time.time() + 180})
    queue.hset(Job.key_for(job_id), mapping={"status": "started", "worker_name": worker})
    queue.lrem("rq:queue:escoba:intermediate", 1, job_id)


def test_a_dead_workers_job_goes_back_on_its_queue_and_a_live_ones_stays(fake_queue):
    _hand(fake_queue, "fine", "t5_bot_1")
    _started_by(fake_queue, "t5_bot_1", "alive-one")
    liveness.Heartbeat(fake_queue, "alive-one").beat()
    assert liveness.sweep(fake_queue, force=True) == []
    fake_queue.delete(liveness.alive_key("alive-one"))  # its beats lapsed: dead
    assert liveness.sweep(fake_queue, force=True) == ["t5_bot_1"]
    assert queues.queue_for(fake_queue).job_ids == ["t5_bot_1"] and fake_queue.zcard("rq:wip:escoba") == 0
    worker = _worker(fake_queue)
    worker.work(burst=True)
    assert worker.jobs_run == 1


def test_a_store_that_dies_while_a_dead_workers_job_goes_back_leaves_it_findable(fake_queue, monkeypatch):
    """The sweep's put-back fails half way (the queue Redis dies): the job is still in the started
    registry, so the next sweep puts it back, never a "started" job in no list at all."""
    from redis.exceptions import ConnectionError as StoreGone
    from rq import Queue

    _hand(fake_queue, "fine", "t7_bot_1")
    _started_by(fake_queue, "t7_bot_1", "gone-one")

    def dies(*args, **kwargs):
        raise StoreGone("killed")

    monkeypatch.setattr(Queue, "enqueue_job", dies)
    with contextlib.suppress(StoreGone):
        liveness.sweep(fake_queue, force=True)
    monkeypatch.undo()
    assert fake_queue.zcard("rq:wip:escoba") == 1  # still findable
    assert liveness.sweep(fake_queue, force=True) == ["t7_bot_1"]
    assert queues.queue_for(fake_queue).job_ids == ["t7_bot_1"] and fake_queue.zcard("rq:wip:escoba") == 0


def test_a_job_loop_that_dies_between_taking_a_job_and_starting_it_puts_it_back(fake_queue):
    """RQ pops a job of a worker serving two queues (escoba, analysis) with LPOP, not into the
    intermediate list: between its pop and its start it is in no list, its hash saying queued. A
    loop that dies there (its store killed) leaves it stranded; run_jobs puts it back from the
    loop's ``taken``, once, and only while it waits nowhere."""
    _hand(fake_queue, "fine", "t8_bot_1")
    worker = _worker(fake_queue)
    job, queue = worker.dequeue_job_and_maintain_ttl(1)
    assert job.id == "t8_bot_1" and worker.taken == ("t8_bot_1", "escoba")
    assert fake_queue.llen("rq:queue:escoba") == 0 and fake_queue.llen("rq:queue:escoba:intermediate") == 0
    assert liveness.stranded(fake_queue, [worker.taken]) == {"t8_bot_1"}  # ...and the loop dies here
    assert jobloop.requeue_abandoned(fake_queue, worker.name, worker.taken) == "t8_bot_1"
    assert queues.queue_for(fake_queue).job_ids == ["t8_bot_1"]
    assert jobloop.requeue_abandoned(fake_queue, worker.name, worker.taken) is None  # waits again: not twice
    assert queues.queue_for(fake_queue).job_ids == ["t8_bot_1"]
    worker = _worker(fake_queue)
    worker.work(burst=True)
    assert worker.jobs_run == 1
    # started: no longer the loop's to put back (the lean start forgets it; RQ's own, with the stock
    # libraries, leaves it, and a job that started is never put back)
    assert worker.taken is None or jobloop.requeue_abandoned(fake_queue, worker.name, worker.taken) is None
    assert queues.queue_for(fake_queue).job_ids == []


def test_a_job_a_live_worker_is_starting_is_not_stranded(fake_queue):
    """Between RQ's LPOP and its start a job a live worker took waits nowhere too, for milliseconds:
    looked at again after the settle, it has started, and nothing hands a second copy of it."""
    import threading

    _hand(fake_queue, "fine", "t9_bot_1")
    worker = _worker(fake_queue)
    job, _ = worker.dequeue_job_and_maintain_ttl(1)
    starts = threading.Timer(0.05, lambda: fake_queue.hset(Job.key_for(job.id), "status", "started"))
    starts.start()
    assert liveness.stranded(fake_queue, [worker.taken], settle=0) == {"t9_bot_1"}  # at a glance
    assert liveness.stranded(fake_queue, [worker.taken]) == set()  # after the settle: it started
    starts.join()
    assert not scheduling.job_alive(fake_queue, "t8_none")
    assert scheduling.job_alive(fake_queue, "t9_bot_1")


def test_a_job_taken_and_never_started_goes_back_after_a_while(fake_queue):
    _hand(fake_queue, "fine", "t6_bot_1")
    fake_queue.lmove("rq:queue:escoba", "rq:queue:escoba:intermediate")  # and the worker died
    now = time.time()
    assert liveness.sweep(fake_queue, now, force=True) == []  # first seen: may be starting
    assert liveness.sweep(fake_queue, now + 1, force=True) == []
    assert liveness.sweep(fake_queue, now + liveness.STUCK_AFTER + 0.1, force=True) == ["t6_bot_1"]
    assert queues.queue_for(fake_queue).job_ids == ["t6_bot_1"]


def test_sweeps_are_once_a_second_over_every_ticker(fake_queue):
    now = 1000.0
    assert liveness.sweep(fake_queue, now) == [] and fake_queue.exists("escoba:sweep:1000")
    fake_queue.zadd("rq:wip:escoba", {"t7_bot_1:e": now})  # would be looked at, were it its turn
    fake_queue.hset(Job.key_for("t7_bot_1"), mapping={"status": "started", "worker_name": "gone"})
    assert liveness.sweep(fake_queue, now + 0.5) == []  # another ticker, the same second: skipped
    assert fake_queue.zcard("rq:wip:escoba") == 1


def test_the_job_loop_starts_again_when_rq_quits_on_its_store(fake_queue, monkeypatch):
    """RQ's loop ends by itself (its failure handling needed the store); run_jobs waits for the
    store, puts back what the dead loop held and runs a new loop, which runs the job."""
    _hand(fake_queue, "fine", "t8_bot_1")
    loops = []

    class Dies(jobloop.ThreadWorker):
        def work(self, *args, **kwargs):
            loops.append(self.name)
            if len(loops) == 1:  # the first loop quits holding the job, as RQ does
                self.register_birth()
                _started_by(self.connection, "t8_bot_1", self.name)
                self.died_of = ConnectionError("the store went away")  # what RQ's loop quit on
                return False
            return super().work(*args, **kwargs)

    monkeypatch.setattr(jobloop, "EscobaWorker", Dies)
    frozen = []
    monkeypatch.setattr(jobloop.gc, "freeze", lambda: frozen.append(len(loops)))
    assert jobloop.run_jobs(fake_queue, burst=True, name="loop", logging_level="WARNING") == 2
    assert frozen == [0]  # the heap settled once, before the first job (settle_heap)
    assert loops == ["loop", "loop.2"]
    assert not fake_queue.exists(Job.key_for("t8_bot_1"))  # run to its end by the second loop


def test_a_workers_teardown_does_not_wait_out_its_listener(real_redis):
    """The listener for RQ's commands that has read its own unsubscribe waits for a subscription that
    never comes; the loop's teardown waits for the listener (redis-py 8.2). With RQ's 60 s wait a burst
    or a stop hung a minute (seen in CI: a bot game stopped halfway through a test's burst)."""
    worker = _worker(real_redis)
    worker.subscribe()
    deadline = time.monotonic() + 10
    while not worker.pubsub.subscribed and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.pubsub.unsubscribe()
    # the listener reads the reply and finds itself unsubscribed: from here it waits for a subscription
    while worker.pubsub.subscribed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not worker.pubsub.subscribed
    time.sleep(0.2)
    started = time.monotonic()
    worker.unsubscribe()
    assert time.monotonic() - started <= 5.0
    assert not worker.pubsub_thread.is_alive()


def test_a_job_costs_the_queue_redis_fewer_commands_lean_than_rqs_own(real_redis, monkeypatch):
    """events/patches.py RQ_LEAN: the same job, counted in the queue Redis's own INFO commandstats,
    run lean and then with the stock libraries (RQ's own bookkeeping), both leaving nothing behind."""
    from events import patches

    def commands() -> int:
        return sum(v["calls"] for k, v in real_redis.info("commandstats").items())

    spent = {}
    for stock in (False, True):
        monkeypatch.setattr(patches, "_stock", [stock])
        job_id = f"lean{stock:d}_bot_1"
        _hand(real_redis, "fine", job_id)
        worker = _worker(real_redis)
        worker.register_birth()
        before = commands()
        worker.execute_job(*worker.dequeue_job_and_maintain_ttl(1))
        spent[stock] = commands() - before
        worker.register_death()
        assert worker.jobs_run == 1 and not real_redis.exists(Job.key_for(job_id))
    assert spent[False] < spent[True], spent
