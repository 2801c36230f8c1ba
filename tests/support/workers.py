"""Worker, producer and stalled-checker processes for the race and fault tests, and the harness
that runs them.

Each role runs in its own OS process: `python -m tests.support.workers ROLE CONFIG_JSON`. A process
talks to Redis only through the generated wrappers (and BZPOPMIN on the marker, EXISTS of the
stop key, HGET of a job's result), and appends what it did to its own records file, one JSON
object a line, written unbuffered so that a process killed with SIGKILL leaves every line it
wrote.

- `worker`: `slots` threads, each a worker loop of its own connection. A slot draws a fresh lock
  token for every moveToActive-11 call (`<worker id>:<n>`), uses it for that job's extendLock-2
  heartbeats and its moveToFinished-14, and with `fetch_next` hands it on to the job the finish
  picks up. Idle, it blocks on the marker (BZPOPMIN with a short timeout) and checks the stop
  key. A job's data says how long it works and how many of its first attempts fail.
- `producer`: adds the jobs of a plan, with custom ids, so that an add re-sent after a lost
  reply adds nothing twice; it records each add once Redis acknowledged it.
- `checker`: runs moveStalledJobsToWait-8 every `interval_ms` until the stop key is set.

Every call is re-sent while Redis cannot be reached (redis-py retries first, then the loop
here): the protocol makes a re-sent call safe, and a finish re-sent after it landed answers what
the first send did (docs/protocol.md, re-sent calls). A finish that answers a lock code is
checked against the job's `returnvalue` (or `failedReason`), which holds the finish's own result
(its token and job id): when it is there, an earlier send landed and the re-send did not say so,
which breaks the protocol, and the process fails. A process that meets anything else writes the
traceback to stderr and exits non-zero.

`Fleet` (the test side) starts the processes, waits for a condition while checking that none
died, and stops them by pid; `check_completed_once` asserts that every job of a plan completed
exactly once by every count the protocol keeps, and by the workers' own records.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, ParamSpec, TypeVar, cast

import redis
import redis.exceptions
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from echomq_scripts import generated as g
from echomq_scripts.runtime import ScriptFailed, keys
from echomq_scripts.runtime.arguments import now_ms
from tests.support.invariants import assert_one_state, text

T = TypeVar("T")
P = ParamSpec("P")
REPO = Path(__file__).resolve().parent.parent

OUTAGE = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
"""What a call meets while Redis is down or loading (BusyLoadingError is a ConnectionError)."""
OUTAGE_LIMIT_S = 60.0
"""How long a process keeps re-sending one call before it gives up and fails."""
IDLE_S = 0.2
"""How long an idle slot blocks on the marker before it looks at the stop key again."""
MAX_EVENTS = 10_000_000
"""The stream's length limit for a run: high enough that no event of the run is trimmed."""


def stop_key(queue: str) -> str:
    """Set when the run is over. Outside the queue's `emq:{q}:` keys, so it is no job's key."""
    return f"test:{{{queue}}}:stop"


# -- what the processes are told --------------------------------------------------------------


@dataclass(frozen=True)
class JobSpec:
    """One job of a plan: how it is added, how long it works, how many attempts fail first."""

    id: str
    kind: Literal["standard", "prioritized", "delayed"] = "standard"
    priority: int = 1
    delay_ms: int = 0
    fails: int = 0
    work_ms: int = 0

    def opts(self) -> dict[str, object]:
        if not self.fails:
            return {}
        return {"attempts": self.fails + 1, "backoff": {"type": "exponential", "delay": 10}}

    def data(self) -> dict[str, int]:
        return {"fails": self.fails, "work_ms": self.work_ms}


def make_plan(
    jobs: int,
    *,
    seed: int,
    delayed: float = 0.0,
    prioritized: float = 0.0,
    failing: float = 0.0,
    slow: float = 0.0,
    work_ms: tuple[int, int] = (0, 0),
    slow_ms: tuple[int, int] = (250, 500),
) -> list[JobSpec]:
    """`jobs` jobs, ids j0..: the given shares delayed (0-300 ms), prioritized (1-10), failing
    their first one or two attempts, and slow (working `slow_ms`, long enough for heartbeats);
    the others work `work_ms`."""
    rng = random.Random(seed)
    plan = []
    for n in range(jobs):
        roll = rng.random()
        kind: Literal["standard", "prioritized", "delayed"] = "standard"
        if roll < delayed:
            kind = "delayed"
        elif roll < delayed + prioritized:
            kind = "prioritized"
        span = slow_ms if rng.random() < slow else work_ms
        plan.append(
            JobSpec(
                id=f"j{n}",
                kind=kind,
                priority=rng.randint(1, 10),
                delay_ms=rng.randint(0, 300),
                fails=rng.randint(1, 2) if rng.random() < failing else 0,
                work_ms=rng.randint(*span),
            )
        )
    return plan


@dataclass(frozen=True)
class WorkerConfig:
    name: str
    slots: int = 1
    lock_ms: int = 5_000
    heartbeat_ms: int = 1_000
    fetch_next: bool = False


@dataclass(frozen=True)
class CheckerConfig:
    name: str = "checker"
    interval_ms: int = 200
    max_stalled: int = 1_000


@dataclass(frozen=True)
class ProducerConfig:
    plan: str
    """The path of the plan, a JSON list of JobSpec fields."""
    name: str = "producer"
    pause_ms: int = 0
    """A pause after each add, so that the adds span the run."""


Role = Literal["worker", "checker", "producer"]


@dataclass(frozen=True)
class Process:
    """What every process is told: the server, the queue, where to write its records."""

    role: Role
    port: int
    queue: str
    records: str
    config: dict[str, Any]


# -- the process side -------------------------------------------------------------------------


class Records:
    """A records file, appended line by line with single unbuffered writes."""

    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, event: str, **fields: object) -> None:
        os.write(self.fd, (json.dumps({"e": event, **fields}) + "\n").encode())


class Agent:
    """A process's connection to the run: its client, records, and the re-sending of calls."""

    def __init__(self, spec: Process) -> None:
        self.spec = spec
        self.queue = spec.queue
        self.records = Records(spec.records)
        self.outages = 0

    def client(self) -> redis.Redis:
        # redis-py re-sends a command a few times within about 0.2 s; a longer outage reaches
        # `resend`, which keeps re-sending the call.
        return redis.Redis(
            host="127.0.0.1",
            port=self.spec.port,
            socket_timeout=5,
            socket_connect_timeout=2,
            retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), 3),
        )

    def resend(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`call(*args, **kwargs)`, sent again while Redis cannot be reached."""
        deadline = time.monotonic() + OUTAGE_LIMIT_S
        while True:
            try:
                return call(*args, **kwargs)
            except OUTAGE:
                self.outages += 1
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stopping(self, client: redis.Redis) -> bool:
        return bool(self.resend(client.exists, stop_key(self.queue)))


Job = tuple[str, dict[str, str], str]
"""A job a slot holds: its id, its hash as pickup answered it, the token of that pickup."""


class Worker(Agent):
    def __init__(self, spec: Process) -> None:
        super().__init__(spec)
        self.config = WorkerConfig(**spec.config)
        self.id = f"{self.config.name}-{uuid.uuid4().hex[:8]}"
        self.counter = itertools.count()
        self.counter_lock = threading.Lock()

    def token(self) -> str:
        """A fresh token: one per moveToActive-11 call."""
        with self.counter_lock:
            return f"{self.id}:{next(self.counter)}"

    def run(self) -> None:
        def slot() -> None:
            try:
                Slot(self).run()
            except BaseException:
                traceback.print_exc()
                sys.stderr.flush()
                os._exit(2)  # one slot's failure is the process's: the test sees it at once

        threads = [threading.Thread(target=slot) for _ in range(self.config.slots)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.records.write("exit", worker=self.id, outages=self.outages)


class Slot:
    """One worker loop: pick up, work with heartbeats, finish; block on the marker when idle."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.config = worker.config
        self.queue = worker.queue
        self.client = worker.client()
        self.write = worker.records.write
        self.resend = worker.resend

    def run(self) -> None:
        job: Job | None = None
        while True:
            if job is None:
                job = self.pick(self.worker.token())
                if job is None:
                    if self.worker.stopping(self.client):
                        return
                    self.wait_for_work()
                    continue
            job = self.process(job)

    def pick(self, token: str) -> Job | None:
        """moveToActive-11 with `token`; re-sent with the same token after a lost reply."""
        job_id, fields, _, _ = self.resend(
            g.move_to_active,
            self.client,
            queue=self.queue,
            token=token,
            lock_duration=self.config.lock_ms,
            now=now_ms(),
            limit_max=0,
            limit_duration=0,
            concurrency=0,
        )
        return self.picked(job_id, fields, token)

    def picked(self, job_id: str, fields: dict[str, str], token: str) -> Job | None:
        if not job_id:
            return None
        self.write("picked", job=job_id, token=token, atm=int(fields["atm"]))
        return job_id, fields, token

    def wait_for_work(self) -> None:
        """Block on the marker until work is signalled or IDLE_S passes; a marker scored in the
        future (the next delayed job's run-at) means waiting until then, at most IDLE_S."""
        popped = self.resend(self.client.bzpopmin, keys.marker(self.queue), IDLE_S)
        if popped:
            due_in = float(popped[2]) - now_ms()
            if due_in > 0:
                time.sleep(min(due_in / 1000, IDLE_S))

    def process(self, job: Job) -> Job | None:
        """Work the job and finish it; the job the finish picked up (fetch_next), if any."""
        job_id, fields, token = job
        spec = json.loads(fields["data"])
        beats = self.work(job, spec["work_ms"])
        if beats is None:
            return None
        outcome: Literal["completed", "failed"] = (
            "failed" if int(fields["atm"]) < spec["fails"] else "completed"
        )
        # The result names this pickup, so that the job's hash tells whose finish took effect.
        result = json.dumps({"job": job_id, "token": token})
        try:
            went, next_id, next_fields, _ = self.resend(
                g.move_to_finished,
                self.client,
                queue=self.queue,
                job_id=job_id,
                token=token,
                now=now_ms(),
                outcome=outcome,
                result=result,
                stacktrace="",
                jitter=random.random(),
                fetch_next=self.config.fetch_next,
                lock_duration=self.config.lock_ms,
                limit_max=0,
                limit_duration=0,
                concurrency=0,
                max_metrics=0,
                backoff_delay=0,
            )
        except ScriptFailed as exc:
            field_name = "returnvalue" if outcome == "completed" else "failedReason"
            stored = self.resend(self.client.hget, keys.job(self.queue, job_id), field_name)
            if stored is not None and text(stored) == result:
                raise AssertionError(
                    f"moveToFinished of {job_id} answered {exc.code} when re-sent, though an"
                    " earlier send of it landed: a re-sent finish must answer the first's outcome"
                ) from exc
            self.write("lost", job=job_id, token=token, at="moveToFinished", code=exc.code)
            return None
        self.write(outcome, job=job_id, token=token, beats=beats, went=went)
        return self.picked(next_id, next_fields, token)

    def work(self, job: Job, work_ms: int) -> int | None:
        """Work `work_ms`, renewing the lock every heartbeat_ms: how many heartbeats it took, or
        None when the lock was lost."""
        job_id, _, token = job
        deadline = time.monotonic() + work_ms / 1000
        beats = 0
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(left, self.config.heartbeat_ms / 1000))
            if deadline - time.monotonic() <= 0:
                break
            try:
                self.resend(
                    g.extend_lock,
                    self.client,
                    queue=self.queue,
                    token=token,
                    duration=self.config.lock_ms,
                    job_id=job_id,
                )
            except ScriptFailed as exc:
                self.write("lost", job=job_id, token=token, at="extendLock", code=exc.code)
                return None
            beats += 1
        return beats


class Checker(Agent):
    def run(self) -> None:
        config = CheckerConfig(**self.spec.config)
        client = self.client()
        while not self.stopping(client):
            recovered, failed = self.resend(
                g.move_stalled_jobs_to_wait,
                client,
                queue=self.queue,
                max_stalled=config.max_stalled,
                now=now_ms(),
            )
            if recovered or failed:
                self.records.write("stalled", recovered=recovered, failed=failed)
            time.sleep(config.interval_ms / 1000)
        self.records.write("exit", outages=self.outages)


ADD: dict[str, Callable[..., tuple[str, int]]] = {
    "standard": g.add_standard_job,
    "prioritized": g.add_prioritized_job,
    "delayed": g.add_delayed_job,
}


class Producer(Agent):
    def run(self) -> None:
        config = ProducerConfig(**self.spec.config)
        plan = [JobSpec(**entry) for entry in json.loads(Path(config.plan).read_text())]
        client = self.client()
        for job in plan:
            extra: dict[str, int] = {}
            if job.kind == "prioritized":
                extra["priority"] = job.priority
            elif job.kind == "delayed":
                extra["delay"] = job.delay_ms
            job_id, added = self.resend(
                ADD[job.kind],
                client,
                queue=self.queue,
                job_id=job.id,
                name=job.kind,
                data=job.data(),
                opts=job.opts(),
                now=now_ms(),
                dedup_id="",
                **extra,
            )
            # added is 0 when a re-sent add found the job its lost first send had added.
            self.records.write("added", job=job_id, added=added)
            if config.pause_ms:
                time.sleep(config.pause_ms / 1000)
        self.records.write("exit", outages=self.outages)


ROLES: dict[str, type[Worker | Checker | Producer]] = {
    "worker": Worker,
    "checker": Checker,
    "producer": Producer,
}


def main(argv: list[str]) -> None:
    role, config = argv
    spec = Process(**json.loads(config))
    assert spec.role == role
    ROLES[role](spec).run()


# -- the test side ----------------------------------------------------------------------------


@dataclass
class Started:
    role: Role
    name: str
    process: subprocess.Popen[bytes]
    records: Path
    stderr: Path
    killed: bool = False

    def stderr_tail(self) -> str:
        return self.stderr.read_text(errors="replace")[-3000:]

    def read(self) -> list[dict[str, Any]]:
        """The records so far; a line still being written (no newline yet) is left out."""
        if not self.records.exists():
            return []
        return [json.loads(line) for line in self.records.read_text().split("\n")[:-1]]


@dataclass
class Fleet:
    """The processes of one run on one queue: started, watched, and stopped by pid."""

    directory: Path
    port: int
    queue: str
    started: list[Started] = field(default_factory=list)

    def __enter__(self) -> Fleet:
        with self.client() as client:
            client.hset(keys.meta(self.queue), "max-events", MAX_EVENTS)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if kind is not None:
            self.stop(grace_s=2)  # the test failed already: end the processes, report that
            return
        unstopped = self.stop(grace_s=30)
        self.check_alive()
        assert unstopped == [], f"processes that did not stop when told: {unstopped}"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=10)

    def spawn(
        self, role: Role, name: str, config: WorkerConfig | CheckerConfig | ProducerConfig
    ) -> Started:
        records = self.directory / f"{name}.jsonl"
        stderr = self.directory / f"{name}.err"
        spec = Process(role, self.port, self.queue, str(records), asdict(config))
        with stderr.open("wb") as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "tests.support.workers", role, json.dumps(asdict(spec))],
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=err,
                stderr=err,
            )
        started = Started(role, name, process, records, stderr)
        self.started.append(started)
        return started

    def worker(self, config: WorkerConfig) -> Started:
        return self.spawn("worker", config.name, config)

    def checker(self, config: CheckerConfig | None = None) -> Started:
        config = config or CheckerConfig()
        return self.spawn("checker", config.name, config)

    def producer(self, plan: list[JobSpec], pause_ms: int = 0) -> Started:
        path = self.directory / "plan.json"
        path.write_text(json.dumps([asdict(job) for job in plan]))
        return self.spawn("producer", "producer", ProducerConfig(str(path), pause_ms=pause_ms))

    def kill(self, started: Started) -> None:
        """SIGKILL one process by its pid, as a crash would end it."""
        started.killed = True
        os.kill(started.process.pid, signal.SIGKILL)
        started.process.wait()

    def check_alive(self) -> None:
        """Fail when a process ended with an error (a killed one excepted)."""
        for started in self.started:
            code = started.process.poll()
            if code not in (None, 0) and not started.killed:
                raise AssertionError(
                    f"{started.name} exited with {code}; its stderr ends:\n{started.stderr_tail()}"
                )

    def wait_until(self, done: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
        """Poll `done` until it holds; fail with the queue's counts when a process died or
        `timeout_s` passed (a guard against a hung run, not a measure of speed)."""
        deadline = time.monotonic() + timeout_s
        while not done():
            self.check_alive()
            if time.monotonic() > deadline:
                with self.client() as client:
                    status = counts(client, self.queue)
                raise AssertionError(f"{what}: not reached in {timeout_s:g} s; {status}")
            time.sleep(0.05)
        self.check_alive()

    def wait_until_completed(self, jobs: int) -> None:
        """Wait until the completed metric counts `jobs`: the run is over."""
        with self.client() as client:
            self.wait_until(
                lambda: metric(client, self.queue) >= jobs, "every job completed", 60 + jobs / 20
            )

    def stop(self, grace_s: float) -> list[str]:
        """Set the stop key and wait up to `grace_s` for every process to exit; SIGKILL by pid
        what is left, and answer their names."""
        try:
            with self.client() as client:
                client.set(stop_key(self.queue), 1)
        except OUTAGE:
            grace_s = 0
        deadline = time.monotonic() + grace_s
        unstopped = []
        for started in self.started:
            try:
                started.process.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                unstopped.append(started.name)
                self.kill(started)
        return unstopped

    def records(self, role: Role) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every record of the processes of `role`, each with its process's name."""
        for started in self.started:
            if started.role == role:
                for record in started.read():
                    yield started.name, record


def counts(client: redis.Redis, queue: str) -> str:
    """The state counts, for a failure message."""
    return str(dict(zip(keys.STATES, g.get_counts(client, queue=queue), strict=True)))


def metric(client: redis.Redis, queue: str, outcome: str = "completed") -> int:
    return int(client.hget(keys.metrics(queue, outcome), "count") or 0)


def completed_events(client: redis.Redis, queue: str) -> Counter[str]:
    """How many `completed` events the stream holds for each job id."""
    found: Counter[str] = Counter()
    start = "-"
    while entries := cast(
        list[tuple[bytes, dict[bytes, bytes]]],
        client.xrange(keys.events(queue), start, "+", count=10_000),
    ):
        for _, fields in entries:
            if fields[b"event"] == b"completed":
                found[fields[b"jobId"].decode()] += 1
        start = "(" + entries[-1][0].decode()
    return found


@dataclass(frozen=True)
class Summary:
    picks: Counter[str]
    """How often the workers recorded picking each job up."""
    completed_by: dict[str, str]
    """The worker that completed each job."""
    recovered: list[str]
    """Jobs that went through stalled recovery (`stc` >= 1): each was handed out again."""
    lost: int
    """Heartbeats and finishes a worker sent after its lock was gone; it dropped the job."""
    beats: int
    """Heartbeats (extendLock-2) that renewed a lock."""


def check_completed_once(
    client: redis.Redis, fleet: Fleet, plan: list[JobSpec]
) -> tuple[dict[str, str], Summary]:
    """Assert that every job of `plan` completed exactly once: by the one-state invariant (each
    is in `completed`, nothing else is in any state), by the completed set, the metric, the
    event stream and the workers' records, and that the record of each completion names the
    pickup whose result the job holds. Answer the states and what the records show."""
    queue = fleet.queue
    ids = [job.id for job in plan]
    states = assert_one_state(client, queue)
    assert states == dict.fromkeys(ids, "completed"), counts(client, queue)
    assert client.zcard(keys.completed(queue)) == len(ids)
    assert metric(client, queue) == len(ids)
    assert metric(client, queue, "failed") == 0
    events = completed_events(client, queue)
    assert set(events) == set(ids)
    assert {job_id for job_id, n in events.items() if n != 1} == set()

    completions: dict[str, list[str]] = {}
    completed_by: dict[str, str] = {}
    picks: Counter[str] = Counter()
    lost = beats = 0
    for name, record in fleet.records("worker"):
        beats += record.get("beats", 0)
        if record["e"] == "completed":
            completions.setdefault(record["job"], []).append(record["token"])
            completed_by[record["job"]] = name
        elif record["e"] == "picked":
            picks[record["job"]] += 1
        elif record["e"] == "lost":
            lost += 1
    pipe = client.pipeline(transaction=False)
    for job_id in ids:
        pipe.hmget(keys.job(queue, job_id), "returnvalue", "stc")
    stored = dict(zip(ids, pipe.execute(), strict=True))
    # A killed worker's finish may land and the SIGKILL come before it writes its record: the job
    # holds that worker's token, and counts as completed by it.
    killed = [s.name for s in fleet.started if s.killed]
    for job_id in set(ids) - set(completions):
        token = json.loads(stored[job_id][0])["token"] if stored[job_id][0] else ""
        for name in killed:
            if token.startswith(f"{name}-"):
                completions[job_id] = [token]
                completed_by[job_id] = name
    assert set(completions) == set(ids)
    twice = {job_id: tokens for job_id, tokens in completions.items() if len(tokens) != 1}
    assert twice == {}, "jobs the workers completed more than once"
    for job_id in ids:
        returned = json.loads(stored[job_id][0])
        assert returned == {"job": job_id, "token": completions[job_id][0]}, job_id

    stalls = {job_id: int(stored[job_id][1]) for job_id in ids}
    needed = {job.id: job.fails + 1 for job in plan}
    # Only stalled recovery hands a job out more often than its attempts: it counted the stall.
    unstalled = [job_id for job_id in ids if picks[job_id] > needed[job_id] and not stalls[job_id]]
    assert unstalled == [], "jobs picked up more often than their attempts without a stall"
    recovered = sorted(job_id for job_id in ids if stalls[job_id])
    return states, Summary(picks, completed_by, recovered, lost, beats)


if __name__ == "__main__":
    main(sys.argv[1:])
