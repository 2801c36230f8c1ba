"""Queue and Worker (sync and asyncio) on a real Redis: jobs run once each, retries with backoff,
locks kept alive, stalled jobs recovered after a SIGKILL, nothing lost on SIGTERM."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from echomq_scripts.events import AsyncQueueEvents, Event, QueueEvents
from echomq_scripts.flows import FlowJob
from echomq_scripts.generated.errors import ParentJobNotExist
from echomq_scripts.queue import AsyncQueue, Backoff, Dependencies, Job, JobOptions, Queue
from echomq_scripts.runtime import ArgumentError, keys
from echomq_scripts.runtime.arguments import now_ms
from echomq_scripts.runtime.replies import text
from echomq_scripts.worker import (
    ActiveJob,
    AsyncActiveJob,
    AsyncWorker,
    Worker,
    WorkerSettings,
)
from tests.support.environment import REPO
from tests.support.redis_server import RedisServer


def wait_until(condition: Callable[[], bool], seconds: float = 20.0) -> None:
    """Poll `condition` until it holds; fail the test when it never does."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


@pytest.fixture
def running() -> Iterator[Callable[[Worker], threading.Thread]]:
    """Start a worker's `run()` in a thread; every one started is closed and joined after."""
    started: list[tuple[Worker, threading.Thread]] = []

    def start(worker: Worker) -> threading.Thread:
        thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
        thread.start()
        started.append((worker, thread))
        return thread

    yield start
    for worker, thread in started:
        worker.close()
        thread.join(30)
        assert not thread.is_alive()


# -- a thousand jobs, once each -----------------------------------------------------------


def test_a_worker_runs_every_job_once(r: redis.Redis) -> None:
    queue = Queue(r, "mail")
    added = queue.add_bulk([("send", {"n": n}) for n in range(1000)])
    assert [a.added for a in added] == [1] * 1000
    assert len({a.job_id for a in added}) == 1000
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def send(job: ActiveJob) -> dict[str, Any]:
        with lock:
            seen[job.id] += 1
        assert isinstance(job.data, dict)
        return {"doubled": job.data["n"] * 2}

    Worker(r, "mail", send, concurrency=10).run(burst=True, handle_signals=False)
    assert seen == Counter({a.job_id: 1 for a in added})
    counts = queue.counts()
    assert (counts.completed, counts.wait, counts.active) == (1000, 0, 0)
    job = queue.get_job(added[7].job_id)
    assert job is not None
    assert (job.data, job.return_value, job.attempts_made) == ({"n": 7}, {"doubled": 14}, 1)


def test_an_asyncio_worker_runs_every_job_once(redis_server: RedisServer, r: redis.Redis) -> None:
    seen: Counter[str] = Counter()

    async def main() -> list[str]:
        client = redis.asyncio.Redis(port=redis_server.port)
        try:
            queue = AsyncQueue(client, "mail")
            added = await queue.add_bulk([("send", n) for n in range(1000)])

            async def send(job: AsyncActiveJob) -> object:
                seen[job.id] += 1
                await job.update_progress({"done": True})
                await asyncio.sleep(0)
                return job.data

            await AsyncWorker(client, "mail", send, concurrency=10).run(burst=True)
            job = await queue.get_job(added[3].job_id)
            assert job is not None
            assert (job.return_value, job.progress) == (3, {"done": True})
            return [a.job_id for a in added]
        finally:
            await client.aclose()

    ids = asyncio.run(main())
    assert seen == Counter(dict.fromkeys(ids, 1))
    assert Queue(r, "mail").counts().completed == 1000


# -- failures and retries -----------------------------------------------------------------


def refuse(job: ActiveJob) -> None:
    raise ValueError(f"no mail for {job.data}")


def test_a_failing_job_is_retried_with_its_backoff_then_fails_with_its_traceback(
    r: redis.Redis,
) -> None:
    queue = Queue(r, "mail")
    options = JobOptions(attempts=3, backoff=Backoff("fixed", 200))
    job_id = queue.add("send", "ada", options).job_id
    starts: list[int] = []

    def failing(job: ActiveJob) -> None:
        starts.append(int(job.fields["processedOn"]))
        refuse(job)

    worker = Worker(r, "mail", failing, idle_block=0.05)
    thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
    thread.start()
    try:
        wait_until(lambda: queue.counts().failed == 1)
    finally:
        worker.close()
        thread.join(30)
    job = queue.get_job(job_id)
    assert job is not None
    assert job.attempts_made == 3
    assert job.failed_reason == "no mail for ada"
    assert "in refuse" in job.stacktrace
    assert "ValueError: no mail for ada" in job.stacktrace
    # Each retry waited in delayed for the backoff, by the server's clock.
    assert len(starts) == 3
    assert all(later - earlier >= 200 for earlier, later in itertools.pairwise(starts))


def test_a_custom_backoff_type_takes_the_workers_strategy(r: redis.Redis) -> None:
    queue = Queue(r, "mail")
    linear = JobOptions(attempts=3, extra={"backoff": {"type": "linear", "delay": 700}})
    custom = queue.add("send", "ada", linear).job_id
    slow_retry = JobOptions(attempts=3, backoff=Backoff("fixed", 50_000))
    fixed = queue.add("send", "bob", slow_retry).job_id
    asked: list[tuple[int, str, str]] = []

    def strategy(attempts: int, job: Job, failure: Exception) -> int:
        asked.append((attempts, job.id, str(failure)))
        return attempts * 60_000  # long: the burst ends before either job is due again

    Worker(r, "mail", refuse, backoff_strategy=strategy).run(burst=True, handle_signals=False)
    # Only the job of a type the script leaves to the caller asks the strategy.
    assert asked == [(1, custom, "no mail for ada")]
    delays = {
        job_id: (queue.get_job(job_id) or pytest.fail("gone")).fields["delay"]
        for job_id in (custom, fixed)
    }
    assert delays == {custom: "60000", fixed: "50000"}
    assert {queue.get_state(custom), queue.get_state(fixed)} == {"delayed"}


def test_a_value_that_is_not_json_fails_the_job(r: redis.Redis) -> None:
    queue = Queue(r, "mail")
    job_id = queue.add("send").job_id
    Worker(r, "mail", lambda job: {1, 2}).run(burst=True, handle_signals=False)
    job = queue.get_job(job_id)
    assert job is not None
    assert job.failed_reason == "Object of type set is not JSON serializable"
    assert queue.get_state(job_id) == "failed"


def test_the_workers_own_failure_stops_it_and_is_raised(r: redis.Redis) -> None:
    Queue(r, "mail").add("send")

    def leave(job: ActiveJob) -> None:
        raise SystemExit(3)  # not a job's failure: the process is told to stop

    with pytest.raises(SystemExit):
        Worker(r, "mail", leave).run(burst=True, handle_signals=False)


# -- locks ---------------------------------------------------------------------------------


def test_a_long_job_keeps_its_lock_while_others_check_for_stalls(
    r: redis.Redis, running: Callable[[Worker], threading.Thread]
) -> None:
    """A job three times as long as the lock: the heartbeats keep it, so another worker's
    stalled checks, every 50 ms, never take it."""
    queue = Queue(r, "mail")
    job_id = queue.add("send").job_id
    runs: list[str] = []

    def slow(job: ActiveJob) -> str:
        runs.append(job.token)
        time.sleep(1.5)
        return "sent"

    running(Worker(r, "mail", slow, lock_duration=500))
    wait_until(lambda: bool(runs))
    running(Worker(r, "mail", slow, stalled_interval=50, idle_block=0.05))
    wait_until(lambda: queue.get_state(job_id) == "completed")
    job = queue.get_job(job_id)
    assert job is not None
    assert len(runs) == 1
    assert (job.return_value, job.attempts_made, job.fields.get("stc", "0")) == ("sent", 1, "0")


def test_a_job_still_running_at_the_shutdown_timeout_is_handed_back(r: redis.Redis) -> None:
    queue = Queue(r, "mail")
    job_id = queue.add("send").job_id
    started, release = threading.Event(), threading.Event()

    def stuck(job: ActiveJob) -> str:
        started.set()
        release.wait(10)
        return "late"

    worker = Worker(r, "mail", stuck, shutdown_timeout=0.2)
    thread = threading.Thread(target=worker.run, kwargs={"handle_signals": False})
    thread.start()
    assert started.wait(10)
    worker.close()
    thread.join(10)
    assert not thread.is_alive()
    assert queue.get_state(job_id) == "wait"  # back for another worker
    release.set()  # its late finish finds the lock gone and changes nothing
    wait_until(lambda: not r.exists(keys.lock("mail", job_id)))
    time.sleep(0.2)
    assert queue.get_state(job_id) == "wait"
    assert (queue.get_job(job_id) or pytest.fail("gone")).return_value is None


# -- the queue's limits -------------------------------------------------------------------


def test_a_worker_obeys_the_rate_limit(
    r: redis.Redis, running: Callable[[Worker], threading.Thread]
) -> None:
    queue = Queue(r, "mail")
    queue.add_bulk([("send", n) for n in range(10)])
    running(Worker(r, "mail", lambda job: None, concurrency=4, limit=(3, 60_000)))
    wait_until(lambda: queue.counts().completed == 3)
    time.sleep(0.3)  # long enough for the slots to try again, far below the window
    counts = queue.counts()
    assert (counts.completed, counts.wait, counts.active) == (3, 7, 0)


# -- processes killed and stopped ---------------------------------------------------------

# Run as a process: argv is the server's port, the records file, the lock time and the job's
# work in ms. It records each start ("start <id>") and each end ("end <id>") of a job.
WORKER_PROCESS = """
import sys, time
import redis
from echomq_scripts.worker import Worker

port, records, lock_ms, work_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

def work(job):
    with open(records, "a") as out:
        out.write(f"start {job.id}\\n")
    time.sleep(work_ms / 1000)
    with open(records, "a") as out:
        out.write(f"end {job.id}\\n")
    return job.id

Worker(redis.Redis(port=int(port)), "mail", work, concurrency=3, lock_duration=lock_ms).run()
"""


def start_worker(port: int, records: Path, lock_ms: int, work_ms: int) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-c", WORKER_PROCESS, str(port), str(records)]
    return subprocess.Popen([*command, str(lock_ms), str(work_ms)], env=env, text=True)


def lines(records: Path, kind: str) -> list[str]:
    text = records.read_text() if records.exists() else ""
    return [line.split()[1] for line in text.splitlines() if line.startswith(kind + " ")]


def test_sigterm_finishes_the_jobs_in_hand_and_takes_no_more(
    redis_server: RedisServer, r: redis.Redis, tmp_path: Path
) -> None:
    queue = Queue(r, "mail")
    ids = [a.job_id for a in queue.add_bulk([("send", n) for n in range(20)])]
    records = tmp_path / "records"
    process = start_worker(redis_server.port, records, 30_000, 400)
    try:
        wait_until(lambda: len(lines(records, "start")) >= 3)
        process.send_signal(signal.SIGTERM)
        assert process.wait(20) == 0
    finally:
        process.kill()
    started, ended = lines(records, "start"), lines(records, "end")
    # Every job it started it finished, once; each of those completed, the rest wait.
    assert sorted(started) == sorted(ended)
    assert len(set(started)) == len(started)
    states = {job_id: queue.get_state(job_id) for job_id in ids}
    assert {j for j, s in states.items() if s == "completed"} == set(started)
    assert {j for j, s in states.items() if s == "wait"} == set(ids) - set(started)


def test_the_jobs_of_a_killed_worker_come_back_through_the_stalled_check(
    redis_server: RedisServer,
    r: redis.Redis,
    tmp_path: Path,
    running: Callable[[Worker], threading.Thread],
) -> None:
    queue = Queue(r, "mail")
    ids = [a.job_id for a in queue.add_bulk([("send", n) for n in range(6)])]
    records = tmp_path / "records"
    process = start_worker(redis_server.port, records, 300, 60_000)
    try:
        wait_until(lambda: len(lines(records, "start")) == 3)
    finally:
        process.kill()  # SIGKILL, mid-job: no finish, no hand-back
        process.wait(10)
    killed = set(lines(records, "start"))
    assert queue.counts().active == 3
    done: list[str] = []
    running(Worker(r, "mail", lambda job: done.append(job.id), stalled_interval=100))
    wait_until(lambda: queue.counts().completed == 6)
    assert sorted(done) == sorted(ids)
    for job_id in killed:  # each counted one stall, then ran again
        job = queue.get_job(job_id)
        assert job is not None
        assert (job.fields["stc"], job.attempts_made) == ("1", 1)


# -- connection errors --------------------------------------------------------------------


class Flaky(redis.Redis):
    """A client that counts the calls that timed out."""

    timeouts = 0

    def execute_command(self, *args: Any, **options: Any) -> Any:
        try:
            return super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        except redis.TimeoutError:
            type(self).timeouts += 1
            raise


def test_calls_that_time_out_are_sent_again_and_land_once(
    redis_server: RedisServer, r: redis.Redis, running: Callable[[Worker], threading.Thread]
) -> None:
    """The server stops answering for a while (CLIENT PAUSE): the worker's calls time out, are
    sent again when it answers, and each job still completes once."""
    queue = Queue(r, "mail")
    ids = [a.job_id for a in queue.add_bulk([("send", n) for n in range(200)])]
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def send(job: ActiveJob) -> None:
        with lock:
            seen[job.id] += 1
        if len(seen) == 50:
            r.execute_command("CLIENT", "PAUSE", 1000, "ALL")  # type: ignore[no-untyped-call]

    # Without redis-py's own retries, which would hide the pause from the worker.
    flaky = Flaky(port=redis_server.port, socket_timeout=0.2, retry=Retry(NoBackoff(), 0))
    running(Worker(flaky, "mail", send, concurrency=4))
    wait_until(lambda: queue.counts().completed == 200, 30)
    assert flaky.timeouts > 0  # the pause was felt
    assert set(seen) == set(ids)
    # A job may run again only when a finish was lost with its lock: never here, where every
    # finish is sent again with its token until it lands.
    assert set(seen.values()) == {1}


# -- the queue ----------------------------------------------------------------------------


def test_options_choose_the_add_and_travel_with_the_job(r: redis.Redis) -> None:
    queue = Queue(r, "mail")
    delayed = queue.add("later", 1, JobOptions(delay=60_000, attempts=2))
    urgent = queue.add("urgent", 2, JobOptions(priority=1, lifo=True))
    custom = queue.add("mine", 3, JobOptions(job_id="m-1", remove_on_complete=True))
    assert custom == ("m-1", 1)
    assert queue.add("mine", 4, JobOptions(job_id="m-1")) == ("m-1", 0)  # there already
    states = [queue.get_state(a.job_id) for a in (delayed, urgent, custom)]
    assert states == ["delayed", "prioritized", "wait"]
    job = queue.get_job(delayed.job_id)
    assert job is not None
    assert (job.name, job.data, job.opts) == ("later", 1, {"attempts": 2})
    queue.pause()
    assert queue.is_paused()
    queue.resume()
    assert not queue.is_paused()
    assert queue.get_job("nothing") is None
    # A parent makes the add a flow of one, alone or within a bulk add.
    parent_id = queue.add("parent", 0).job_id
    below = JobOptions(parent_id=parent_id)
    child = queue.add("child", 1, JobOptions(parent_id=parent_id, delay=60_000))
    bulk = queue.add_bulk([("a", 2, below), ("b", 3), ("c", 4, below)])
    assert [a.added for a in bulk] == [1, 1, 1]
    assert queue.get_state(child.job_id) == "delayed"
    assert queue.get_dependencies(parent_id).unprocessed == sorted(
        [child.job_id, bulk[0].job_id, bulk[2].job_id]
    )
    below_parent = queue.get_job(bulk[2].job_id) or pytest.fail("gone")
    assert below_parent.fields["parentKey"] == keys.job("mail", parent_id)
    assert "parentKey" not in (queue.get_job(bulk[1].job_id) or pytest.fail("gone")).fields
    with pytest.raises(ParentJobNotExist):
        queue.add("orphan", 5, JobOptions(parent_id="nobody"))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda q: q.add("x", {1}), "addStandardJob-6: argument 'data' is not JSON"),
        (lambda q: q.add("x", None, JobOptions(delay=-1)), "job 'x': delay must be >= 0"),
        (lambda q: q.add("x", None, JobOptions(priority=2**21)), "priority must be from 0 to"),
        (lambda q: q.add("x", None, JobOptions(job_id="a:b")), "job id"),
        (
            lambda q: q.add_bulk([("ok", 1), ("x", float("nan"))]),
            "job 'x', item 1 of the bulk: addStandardJob-6: argument 'data' is not JSON",
        ),
        (
            lambda q: q.add("x", "\udc80", JobOptions(parent_id="p")),
            "job 'x': argument 'data' must be JSON whose strings UTF-8 can encode",
        ),
    ],
)
def test_a_bad_add_sends_nothing(r: redis.Redis, call: Any, message: str) -> None:
    with pytest.raises(ArgumentError, match=message):
        call(Queue(r, "mail"))
    assert r.keys("*") == []


def test_a_bad_queue_name_or_setting_is_refused_at_once(r: redis.Redis) -> None:
    with pytest.raises(ArgumentError, match="queue"):
        Queue(r, "a{b")
    with pytest.raises(ArgumentError, match="queue"):
        Worker(r, "a:b}", lambda job: None)
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        WorkerSettings(concurrency=0)
    with pytest.raises(TypeError, match="pass settings= or concurrency=, not both"):
        Worker(r, "mail", lambda job: None, WorkerSettings(), concurrency=2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'concurency'"):
        Worker(r, "mail", lambda job: None, concurency=2)


def test_the_options_are_the_json_the_scripts_read() -> None:
    options = JobOptions(
        attempts=3,
        backoff=Backoff("exponential", 100, jitter=0.5),
        remove_on_fail=10,
        extra={"failParentOnFailure": True},
    )
    assert json.loads(json.dumps(options.to_json())) == {
        "attempts": 3,
        "backoff": {"type": "exponential", "delay": 100, "jitter": 0.5},
        "removeOnFail": 10,
        "failParentOnFailure": True,
    }


# -- the event stream ---------------------------------------------------------------------


def test_a_reader_sees_a_jobs_life_in_order(r: redis.Redis) -> None:
    queue = Queue(r, "mail")
    queue.add("before")  # before the reader: "$" starts after it
    reader = QueueEvents(r, "mail")
    assert reader.read(block=0.05) == []
    retried = JobOptions(attempts=2, backoff=Backoff("fixed", 0))  # again at once, from wait
    job_id = queue.add("send", options=retried).job_id

    def flaky(job: ActiveJob) -> str:
        if job.id == job_id and job.attempts_made == 0:
            raise ValueError("once")
        return "ok"

    Worker(r, "mail", flaky).run(burst=True, handle_signals=False)
    mine = [(e.event, e.fields.get("prev", "")) for e in reader.read() if e.job_id == job_id]
    assert mine == [
        ("waiting", ""),
        ("active", "waiting"),
        ("waiting", "active"),  # the retry
        ("active", "waiting"),
        ("completed", "active"),
    ]
    # A reader that starts at "0" gets every event again; one from the last id, none.
    everything = QueueEvents(r, "mail", last_id="0").read()
    assert everything[0].event == "waiting"
    assert QueueEvents(r, "mail", last_id=everything[-1].id).read(block=0.05) == []


def test_an_asyncio_reader_waits_for_the_next_event(
    redis_server: RedisServer, r: redis.Redis
) -> None:
    async def main() -> list[Event]:
        client = redis.asyncio.Redis(port=redis_server.port)
        try:
            reader = AsyncQueueEvents(client, "mail")
            waiting = asyncio.create_task(reader.read(block=5))
            await asyncio.sleep(0.1)  # the read blocks; then an add wakes it
            await AsyncQueue(client, "mail").add("send")
            return await waiting
        finally:
            await client.aclose()

    (event,) = asyncio.run(main())
    assert (event.event, event.job_id, event.fields) == ("waiting", "1", {"name": "send"})


# -- the queue's other operations ---------------------------------------------------------


def test_the_queue_reads_retries_and_removes_jobs(r: redis.Redis) -> None:
    queue = Queue(r, "mail")
    ids = [a.job_id for a in queue.add_bulk([("send", n) for n in range(5)])]
    later = queue.add("later", None, JobOptions(delay=60_000)).job_id
    assert [j.id for j in queue.get_jobs("wait", asc=True)] == ids
    assert [j.data for j in queue.get_jobs("wait", "delayed", start=0, end=1)] == [4, 3, None]
    queue.promote(later)
    assert queue.get_state(later) == "wait"
    Worker(r, "mail", refuse).run(burst=True, handle_signals=False)
    assert queue.counts().failed == 6
    assert queue.retry(ids[0], reset_attempts=True) == "wait"
    assert (queue.get_job(ids[0]) or pytest.fail("gone")).attempts_made == 0
    assert queue.remove(ids[0]) is True
    assert queue.get_job(ids[0]) is None
    assert sorted(queue.clean("failed")) == sorted([*ids[1:], later])
    assert queue.counts() == (0,) * 8


def test_the_queue_drains_in_batches(r: redis.Redis) -> None:
    queue = Queue(r, "mail")
    queue.add_bulk([("send", n) for n in range(2500)])  # more than one call's batch
    queue.add("later", None, JobOptions(delay=60_000))
    assert queue.drain() == 2500
    assert (queue.counts().wait, queue.counts().delayed) == (0, 1)
    assert queue.drain(delayed=True) == 1


def test_the_queue_schedules_jobs(r: redis.Redis) -> None:
    queue = Queue(r, "mail")
    before = now_ms()
    job_id, run_at = queue.upsert_job_scheduler("digest", name="digest", every=60_000)
    # The first iteration runs now, by this machine's clock, and is named for the scheduler.
    assert before <= run_at <= now_ms()
    assert job_id == f"repeat-digest-{run_at}"
    assert queue.get_state(job_id) == "wait"
    assert (queue.get_job(job_id) or pytest.fail("gone")).name == "digest"


def test_the_asyncio_queue_does_the_same(redis_server: RedisServer, r: redis.Redis) -> None:
    async def main() -> tuple[list[str], bool, int, list[str]]:
        client = redis.asyncio.Redis(port=redis_server.port)
        try:
            queue = AsyncQueue(client, "mail")
            ids = [a.job_id for a in await queue.add_bulk([("send", n) for n in range(3)])]
            listed = [j.id for j in await queue.get_jobs("wait", asc=True)]
            removed = await queue.remove(ids[0])
            drained = await queue.drain()
            return listed, removed, drained, ids
        finally:
            await client.aclose()

    listed, removed, drained, ids = asyncio.run(main())
    assert (listed, removed, drained) == (ids, True, 2)


# -- jobs that wait for children ----------------------------------------------------------


def test_a_job_that_adds_children_waits_for_them_and_runs_again(
    r: redis.Redis, running: Callable[[Worker], threading.Thread]
) -> None:
    # The function adds two children on the first run and returns: the completion is refused
    # for pending children (-4), so the worker hands the job over to waiting-children; once
    # both children are done, the job runs again and completes with their values.
    queue = Queue(r, "mail")
    parent_id = queue.add("digest", {"step": "start"}).job_id
    runs: list[tuple[str, str]] = []
    seen_waiting = threading.Event()

    def work(job: ActiveJob) -> object:
        runs.append((job.name, job.id))
        if job.name == "part":
            seen_waiting.wait(20)  # hold the children until the parent is seen waiting
            assert isinstance(job.data, int)
            return job.data * 10
        children = queue.get_dependencies(job.id)
        if not children.processed and not children.unprocessed:
            for n in (1, 2):
                queue.add("part", n, JobOptions(parent_id=job.id))
            return "not yet"  # a completion the server refuses: children pending
        return sorted(children.processed.values())  # type: ignore[type-var]

    running(Worker(r, "mail", work, concurrency=3, idle_block=0.05))
    wait_until(lambda: queue.get_state(parent_id) == "waiting-children")
    seen_waiting.set()
    wait_until(lambda: queue.get_state(parent_id) == "completed")
    parent = queue.get_job(parent_id) or pytest.fail("the parent is gone")
    assert parent.return_value == [10, 20]
    assert [name for name, job_id in runs if job_id == parent_id] == ["digest", "digest"]
    assert sorted(name for name, _ in runs) == ["digest", "digest", "part", "part"]
    assert queue.counts().completed == 3


def test_a_job_hands_itself_over_to_wait_for_one_child(
    redis_server: RedisServer, r: redis.Redis
) -> None:
    # The asyncio form, with the function moving the job itself: after that the worker sends no
    # finish, and the job's next run finds the child done (move_to_waiting_children: False).
    moves: list[bool] = []

    async def main() -> tuple[object, int]:
        client = redis.asyncio.Redis(port=redis_server.port)
        try:
            queue = AsyncQueue(client, "mail")
            parent_id = (await queue.add("parent", 0)).job_id

            async def work(job: AsyncActiveJob) -> object:
                if job.name == "child":
                    return "child done"
                if not moves:
                    child = await queue.add("child", 1, JobOptions(parent_id=job.id))
                    moves.append(await job.move_to_waiting_children(child.job_id))
                    assert job.moved_to_waiting_children
                    return "dropped: the job is no longer this run's"
                moves.append(await job.move_to_waiting_children())
                return "parent done"

            await AsyncWorker(client, "mail", work, concurrency=2, idle_block=0.05).run(burst=True)
            parent = await queue.get_job(parent_id)
            assert parent is not None
            return parent.return_value, (await queue.counts()).completed
        finally:
            await client.aclose()

    assert asyncio.run(main()) == ("parent done", 2)
    assert moves == [True, False]


def test_a_job_whose_child_failed_fails_instead_of_completing(
    r: redis.Redis, running: Callable[[Worker], threading.Thread]
) -> None:
    # A child that fails for good without a policy while its parent runs leaves the parent
    # unable to complete (-9): the worker fails the parent instead, with the reason.
    queue = Queue(r, "mail")
    parent_id = queue.add("parent", 0).job_id

    def work(job: ActiveJob) -> object:
        if job.name == "child":
            raise RuntimeError("the child broke")
        child_id = queue.add("child", 1, JobOptions(parent_id=job.id)).job_id
        wait_until(lambda: queue.get_state(child_id) == "failed")
        assert queue.get_dependencies(job.id).failed == [child_id]
        return "parent done"

    running(Worker(r, "mail", work, concurrency=2, idle_block=0.05))
    wait_until(lambda: queue.get_state(parent_id) == "failed")
    parent = queue.get_job(parent_id) or pytest.fail("the parent is gone")
    assert parent.failed_reason == "a child of the job failed"
    assert queue.counts().failed == 2


def test_a_parents_dependencies_are_read_whole_past_one_page(r: redis.Redis) -> None:
    # 1,100 children: more than one call's page (1,000), so the records come in pages.
    queue = Queue(r, "mail")
    children = [FlowJob("child", "mail", data=str(n)) for n in range(1100)]
    ids = queue.add_flow(FlowJob("parent", "mail", children=children))
    child_ids = [child.job_id for child in ids.children]
    pending = queue.get_dependencies(ids.job_id)
    assert pending == Dependencies({}, sorted(child_ids), {}, [])
    seen: list[Dependencies] = []

    def work(job: ActiveJob) -> object:
        if job.name == "parent":
            seen.append(queue.get_dependencies(job.id))
        return job.data

    Worker(r, "mail", work, concurrency=8).run(burst=True, handle_signals=False)
    assert seen == [Dependencies(dict(zip(child_ids, range(1100), strict=True)), [], {}, [])]
    assert queue.get_state(ids.job_id) == "completed"


# -- schedulers, logs, metrics, obliterate --------------------------------------------------


def test_a_worker_that_picks_an_iteration_up_schedules_the_next(
    r: redis.Redis, running: Callable[[Worker], threading.Thread]
) -> None:
    queue = Queue(r, "mail")
    names: list[str] = []
    first_id, _ = queue.upsert_job_scheduler("tick", name="tick", every=150, data={"n": 1})
    running(Worker(r, "mail", lambda job: names.append(job.name), idle_block=0.05))
    wait_until(lambda: queue.counts().completed >= 3)
    assert set(names) == {"tick"}
    completed = queue.get_jobs("completed", asc=True)
    assert completed[0].id == first_id
    run_at = [int(job.id.rsplit("-", 1)[1]) for job in completed]
    assert all(later - earlier == 150 for earlier, later in itertools.pairwise(run_at[:3]))


def test_the_asyncio_queue_schedules_and_its_worker_goes_on(
    redis_server: RedisServer, r: redis.Redis
) -> None:
    async def main() -> tuple[str, int]:
        client = redis.asyncio.Redis(port=redis_server.port)
        try:
            queue = AsyncQueue(client, "mail")
            first_id, run_at = await queue.upsert_job_scheduler("digest", name="d", every=60_000)

            async def noop(job: AsyncActiveJob) -> None:
                return None

            await AsyncWorker(client, "mail", noop).run(burst=True)
            assert await queue.get_state(first_id) == "completed"
            return f"repeat-digest-{run_at + 60_000}", (await queue.counts()).delayed
        finally:
            await client.aclose()

    next_id, delayed = asyncio.run(main())
    assert delayed == 1
    assert Queue(r, "mail").get_state(next_id) == "delayed"


def test_the_queue_reads_logs_and_metrics_and_obliterates(r: redis.Redis) -> None:
    queue = Queue(r, "mail")
    ids = [a.job_id for a in queue.add_bulk([("send", n) for n in range(5)])]

    def work(job: ActiveJob) -> None:
        for line in ("start", "middle", "end"):
            job.log(f"{line} {job.data}")
        if job.data == 4:
            raise ValueError("four")

    Worker(r, "mail", work, max_metrics=10).run(burst=True, handle_signals=False)
    assert queue.get_job_logs(ids[1]) == (3, ["start 1", "middle 1", "end 1"])
    assert queue.get_job_logs(ids[1], start=0, count=2, asc=False) == (3, ["end 1", "middle 1"])
    completed, failed = queue.get_metrics("completed"), queue.get_metrics("failed")
    assert (completed.count, failed.count) == (4, 1)
    # With max_metrics the series starts at the first finish: its minute's point is pushed
    # when a later minute's first job finishes, so none is yet.
    assert completed.prev_ts > 0
    assert (completed.prev_count, completed.data, completed.points) == (0, [], 0)
    # Obliterate: refused while the queue runs, then everything of the queue is gone.
    assert not queue.obliterate()
    assert r.exists(keys.job("mail", ids[0]))
    queue.pause()
    assert queue.obliterate()
    # Left: the workers' token records (kept for re-sent calls), each expiring with its lock.
    left = r.keys("emq:{mail}:*")
    assert all(text(key).startswith("emq:{mail}:token:") for key in left)
    assert all(0 < r.pttl(key) <= 30_000 for key in left)
