"""What a script call costs: wrapper against raw EVALSHA, the job cycle, and bulk add, with
BullMQ's own scripts side by side on the same server in the same run.

How to read the numbers:
- Client-side rows (`us/call`, `jobs/s`) are wall time in this process, which is pinned to one
  core while redis-server runs on another (server.py). The wrapper rows take turns call by call
  (or pipeline by pipeline) and compare the medians; the job-cycle and bulk-add rounds alternate
  which side goes first, and a rate ratio is the median of the per-round ratios.
- Redis-side rows (`redis us`) come from `INFO commandstats`: the server's own time inside
  EVALSHA, reset with `CONFIG RESETSTAT` before each phase, so they hold the scripts' work and
  none of the network or the client. Each phase checks that it made exactly the calls it should.
- A job cycle is add, then pick up, then finish. With fetch-next off each step is its own call;
  with fetch-next on, finishing a job picks the next one up in the same call, so the cycle is add
  plus finish (and one pickup to start the chain, spread over the round's jobs).
- Adding a flow (one parent and FLOW_CHILDREN children: EchoMQ's one addFlow-10 call, BullMQ's
  MULTI of add scripts) is measured in the server's
  instructions only, under callgrind, as the job cycle's instruction rows are.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import redis
import redis.asyncio

from echomq_scripts.flows import FlowJob, add_flow
from echomq_scripts.generated import scripts as emq
from echomq_scripts.queue import AsyncQueue, Queue
from echomq_scripts.runtime.arguments import now_ms
from echomq_scripts.schedulers import upsert_job_scheduler

LOCK_MS = 30_000
TOKEN = "bench-worker:1"
# Both sides' event streams are capped at this length (EchoMQ's `max-events`, BullMQ's
# `opts.maxLenEvents`), low enough that every round runs with a full stream, trimmed as it grows,
# as a queue that has run for a while does.
MAX_EVENTS = 100


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else float("nan")


# -- Redis-side time ------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """One timed phase: wall seconds in the client, and the server's EVALSHA calls and time."""

    wall_s: float
    calls: int
    usec: int
    instructions: int | None = None  # the server's, when it runs under callgrind

    @property
    def usec_per_call(self) -> float:
        return _ratio(self.usec, self.calls)


class InstructionCounter(Protocol):
    def zero(self) -> None: ...
    def read(self) -> int: ...


def timed_phase(
    stats: redis.Redis,
    calls: int,
    work: Callable[[], object],
    counter: InstructionCounter | None = None,
) -> Phase:
    """Run `work` between CONFIG RESETSTAT and INFO commandstats; it must make `calls` calls."""
    gc.collect()
    stats.config_resetstat()
    if counter is not None:
        counter.zero()
    start = time.perf_counter()
    work()
    wall = time.perf_counter() - start
    instructions = counter.read() if counter is not None else None
    found = stats.info("commandstats")
    # EVAL too: a pipeline's first call of each script carries the body (runtime.Script.queue),
    # and its server time is part of the cost.
    counted = {name: found.get(f"cmdstat_{name}", {}) for name in ("evalsha", "eval")}
    # A NOSCRIPT answer (the first call after a start, in the warm-up) counts as a failed call.
    done = sum(int(c.get("calls", 0)) - int(c.get("failed_calls", 0)) for c in counted.values())
    if done != calls:
        raise RuntimeError(f"expected {calls} EVALSHA and EVAL calls, the server counted {counted}")
    return Phase(wall, done, sum(int(c.get("usec", 0)) for c in counted.values()), instructions)


# -- 2. wrapper against raw evalsha ----------------------------------------------------------


@dataclass(frozen=True)
class OverheadRow:
    script: str
    mode: str  # "plain" or "pipelined"
    raw_us: float  # median client wall time per call, raw evalsha
    wrapper_us: float
    ratio: float  # wrapper_us / raw_us
    raw_cpu_us: float  # this thread's CPU time per call: the client's own work, no waiting
    wrapper_cpu_us: float
    samples: int  # timed samples a side: calls (plain) or pipelines (pipelined)


class _Pair(Protocol):
    def __call__(self, count: int) -> None: ...


@dataclass(frozen=True)
class _Compared:
    raw_us: float
    wrapper_us: float
    ratio: float
    raw_cpu_us: float
    wrapper_cpu_us: float


def _compare(raw: _Pair, wrapper: _Pair, unit: int, samples: int) -> _Compared:
    """Raw and wrapper take turns, one sample each (`unit` calls: one call, or one pipeline),
    each sample timed on its own; the medians of the samples.

    Taking turns sample by sample puts the two sides moments apart all along, so a slow spell
    of the shared machine touches both alike, and the median drops the samples it hit hardest.
    """
    raw(unit * 10)  # warm-up: connections, script loads, caches
    wrapper(unit * 10)
    walls: dict[str, list[int]] = {"raw": [], "wrapper": []}
    cpus: dict[str, list[int]] = {"raw": [], "wrapper": []}
    sides = [("raw", raw), ("wrapper", wrapper)]
    gc.collect()
    for sample in range(samples):
        for name, side in sides if sample % 2 == 0 else reversed(sides):
            start, cpu = time.perf_counter_ns(), time.thread_time_ns()
            side(unit)
            cpus[name].append(time.thread_time_ns() - cpu)
            walls[name].append(time.perf_counter_ns() - start)

    def per_call(values: list[int]) -> float:
        return statistics.median(values) / unit / 1000

    raw_us, wrapper_us = per_call(walls["raw"]), per_call(walls["wrapper"])
    return _Compared(
        raw_us,
        wrapper_us,
        wrapper_us / raw_us,
        per_call(cpus["raw"]),
        per_call(cpus["wrapper"]),
    )


def wrapper_overhead(port: int, calls: int, rounds: int, batch: int) -> list[OverheadRow]:
    """getJobState-8 (the smallest script, so the largest share for the client) and
    addStandardJob-6 (seven arguments), each called both ways on one connection."""
    client = redis.Redis(host="127.0.0.1", port=port)
    queue = "overhead"
    try:
        job_id, _ = emq.add_standard_job(
            client,
            queue=queue,
            job_id="",
            name="job",
            data={},
            opts={},
            now=now_ms(),
            dedup_id="",
        )
        emq.load_all(client)
        now = now_ms()
        state_keys = emq.get_job_state_keys(queue)
        add_keys = emq.add_standard_job_keys(queue)
        by_name = {script.spec.name: script for script in emq.SCRIPTS}
        state_sha = by_name["getJobState"].spec.sha1
        add_sha = by_name["addStandardJob"].spec.sha1
        add_args = ("", "job", '{"n":1}', "{}", now, "", "")

        def raw_state(count: int) -> None:
            for _ in range(count):
                client.evalsha(state_sha, 8, *state_keys, job_id)

        def wrapper_state(count: int) -> None:
            for _ in range(count):
                emq.get_job_state(client, queue=queue, job_id=job_id)

        def raw_add(count: int) -> None:
            for _ in range(count):
                client.evalsha(add_sha, 6, *add_keys, *add_args)

        def wrapper_add(count: int) -> None:
            for _ in range(count):
                emq.add_standard_job(
                    client,
                    queue=queue,
                    job_id="",
                    name="job",
                    data={"n": 1},
                    opts={},
                    now=now,
                    dedup_id="",
                )

        def pipelined(call: Callable[[Any], Any], decode: bool) -> _Pair:
            def run(count: int) -> None:
                for start in range(0, count, batch):
                    pipe = client.pipeline(transaction=False)
                    pending = [call(pipe) for _ in range(min(batch, count - start))]
                    replies = pipe.execute()
                    if decode:
                        for item in pending:
                            item.result(replies)

            return run

        rows = []
        cases: list[tuple[str, _Pair, _Pair, Callable[[Any], Any], Callable[[Any], Any]]] = [
            (
                "getJobState-8",
                raw_state,
                wrapper_state,
                lambda pipe: pipe.evalsha(state_sha, 8, *state_keys, job_id),
                lambda pipe: emq.get_job_state_pipeline(pipe, queue=queue, job_id=job_id),
            ),
            (
                "addStandardJob-6",
                raw_add,
                wrapper_add,
                lambda pipe: pipe.evalsha(add_sha, 6, *add_keys, *add_args),
                lambda pipe: emq.add_standard_job_pipeline(
                    pipe,
                    queue=queue,
                    job_id="",
                    name="job",
                    data={"n": 1},
                    opts={},
                    now=now,
                    dedup_id="",
                ),
            ),
        ]
        for script, raw, wrapper, raw_queued, wrapper_queued in cases:
            plain = _compare(raw, wrapper, 1, calls)
            queued = _compare(
                pipelined(raw_queued, False),
                pipelined(wrapper_queued, True),
                batch,
                max(calls // batch, 1) * rounds,
            )
            for mode, c, samples in (
                ("plain", plain, calls),
                ("pipelined", queued, max(calls // batch, 1) * rounds),
            ):
                rows.append(
                    OverheadRow(
                        script,
                        mode,
                        c.raw_us,
                        c.wrapper_us,
                        c.ratio,
                        c.raw_cpu_us,
                        c.wrapper_cpu_us,
                        samples,
                    )
                )
        return rows
    finally:
        client.flushall()
        client.close()


# -- 3. the job cycle, EchoMQ and BullMQ -----------------------------------------------------


class Cycle(Protocol):
    """One queue of one protocol, driven the way its worker drives it."""

    label: str

    def add(self, data: dict[str, Any]) -> str: ...
    def move_to_active(self) -> Any: ...
    def finish(self, job: Any, fetch_next: bool) -> Any: ...
    def completed(self) -> int: ...
    def close(self) -> None: ...


class EchoCycle:
    """One EchoMQ queue, through the generated wrappers on a synchronous client."""

    label = "EchoMQ"

    def __init__(self, port: int, queue: str, token: str) -> None:
        self.client = redis.Redis(host="127.0.0.1", port=port)
        self.queue = queue
        self.token = token
        # A token names one pickup (docs/protocol.md, re-sent calls): each pickup draws a new one,
        # as a worker does, and a fetch-next pickup keeps the finishing call's.
        self.pickups = 0
        self.tokens: dict[str, str] = {}
        self.client.hset(f"emq:{{{queue}}}:meta", "max-events", MAX_EVENTS)

    def add(self, data: dict[str, Any]) -> str:
        job_id, _ = emq.add_standard_job(
            self.client,
            queue=self.queue,
            job_id="",
            name="job",
            data=data,
            opts={},
            now=now_ms(),
            dedup_id="",
        )
        return job_id

    def move_to_active(self) -> str | None:
        self.pickups += 1
        token = f"{self.token}:{self.pickups}"
        job_id, _fields, _wait, _token = emq.move_to_active(
            self.client,
            queue=self.queue,
            token=token,
            lock_duration=LOCK_MS,
            now=now_ms(),
            limit_max=0,
            limit_duration=0,
            concurrency=0,
        )
        if job_id:
            self.tokens[job_id] = token
        return job_id or None

    def finish(self, job: str, fetch_next: bool) -> str | None:
        token = self.tokens.pop(job)
        _where, next_id, _fields, _wait = emq.move_to_finished(
            self.client,
            queue=self.queue,
            job_id=job,
            token=token,
            now=now_ms(),
            outcome="completed",
            result=json.dumps("ok"),
            stacktrace="",
            jitter=0.0,
            fetch_next=fetch_next,
            lock_duration=LOCK_MS,
            limit_max=0,
            limit_duration=0,
            concurrency=0,
            max_metrics=0,
            backoff_delay=0,
        )
        if next_id:
            self.tokens[next_id] = token
        return next_id or None

    def completed(self) -> int:
        return int(self.client.zcard(f"emq:{{{self.queue}}}:completed"))

    def close(self) -> None:
        self.client.close()


CycleFactory = Callable[[int, str, str], Cycle]


@dataclass(frozen=True)
class CycleRound:
    """One round of one side in one mode: its phases by script name."""

    phases: dict[str, Phase]
    jobs: int

    @property
    def wall_s(self) -> float:
        return sum(p.wall_s for p in self.phases.values())

    @property
    def redis_usec_per_job(self) -> float:
        return sum(p.usec for p in self.phases.values()) / self.jobs


def one_round(
    factory: CycleFactory,
    port: int,
    stats: redis.Redis,
    queue: str,
    jobs: int,
    fetch_next: bool,
    counter: InstructionCounter | None = None,
) -> CycleRound:
    side = factory(port, queue, TOKEN)
    try:
        phases = {
            "add": timed_phase(
                stats, jobs, lambda: [side.add({"n": n}) for n in range(jobs)], counter
            )
        }
        if fetch_next:

            def chain() -> None:
                job = side.move_to_active()
                while job is not None:
                    job = side.finish(job, True)

            phases["moveToActive + moveToFinished(fetch)"] = timed_phase(
                stats, jobs + 1, chain, counter
            )
        else:
            picked: list[Any] = []
            phases["moveToActive"] = timed_phase(
                stats,
                jobs,
                lambda: picked.extend(side.move_to_active() for _ in range(jobs)),
                counter,
            )
            phases["moveToFinished"] = timed_phase(
                stats, jobs, lambda: [side.finish(job, False) for job in picked], counter
            )
        done = side.completed()
        if done != jobs:
            raise RuntimeError(f"{side.label}: {done} of {jobs} jobs completed")
        return CycleRound(phases, jobs)
    finally:
        side.close()


@dataclass(frozen=True)
class CycleRow:
    """One side in one mode over all rounds (medians)."""

    side: str
    fetch_next: bool
    jobs_per_s: float
    redis_usec_per_job: float  # each phase's least round, summed (see CycleComparison)
    redis_usec_per_job_median: float
    redis_usec_by_phase: dict[str, float]  # per call, the least over the rounds


@dataclass(frozen=True)
class CycleComparison:
    fetch_next: bool
    echomq: CycleRow
    bullmq: CycleRow
    # EchoMQ / BullMQ Redis-side time per job, from each phase's least round: whatever else the
    # machine does can only add server time, so the least round is the closest to the scripts'
    # own cost. The median of the per-round ratios is kept beside it.
    redis_ratio: float
    redis_ratio_median: float
    rate_ratio: float  # median per-round EchoMQ / BullMQ jobs per second


def _usec(phase: Phase) -> int:
    return phase.usec


def _instructions(phase: Phase) -> int:
    if phase.instructions is None:
        raise RuntimeError("a phase measured without the instruction counter")
    return phase.instructions


def _row(side: str, fetch_next: bool, rounds: Sequence[CycleRound]) -> CycleRow:
    names = list(rounds[0].phases)
    # Each phase's least round: phases are measured (and disturbed) one at a time.
    least = {n: min((r.phases[n] for r in rounds), key=_usec) for n in names}
    return CycleRow(
        side,
        fetch_next,
        statistics.median(r.jobs / r.wall_s for r in rounds),
        sum(p.usec for p in least.values()) / rounds[0].jobs,
        statistics.median(r.redis_usec_per_job for r in rounds),
        {n: p.usec_per_call for n, p in least.items()},
    )


def _cycle_rounds(
    stats: redis.Redis,
    port: int,
    bull: CycleFactory,
    jobs: int,
    rounds: int,
    fetch_next: bool,
    counter: InstructionCounter | None = None,
) -> tuple[list[CycleRound], list[CycleRound]]:
    """A warm-up round of each side (script loads, connections, imports), then `rounds`
    rounds of each, the sides alternating which goes first; EchoMQ's rounds, then BullMQ's."""
    sides: dict[str, CycleFactory] = {"EchoMQ": EchoCycle, "BullMQ": bull}
    for factory in sides.values():
        one_round(factory, port, stats, "warm-up", max(jobs // 10, 10), fetch_next)
        stats.flushall()
    done: dict[str, list[CycleRound]] = {name: [] for name in sides}
    for round_ in range(rounds):
        order = list(sides.items())
        for name, factory in order if round_ % 2 == 0 else reversed(order):
            done[name].append(one_round(factory, port, stats, "q", jobs, fetch_next, counter))
            stats.flushall()
    return done["EchoMQ"], done["BullMQ"]


def job_cycle(
    port: int, bull: CycleFactory, jobs: int, rounds: int, progress: Callable[[str], None]
) -> list[CycleComparison]:
    stats = redis.Redis(host="127.0.0.1", port=port)
    comparisons = []
    try:
        for fetch_next in (False, True):
            progress(f"job cycle, fetch-next {'on' if fetch_next else 'off'}")
            echo, bullmq = _cycle_rounds(stats, port, bull, jobs, rounds, fetch_next)
            echo_row = _row("EchoMQ", fetch_next, echo)
            bull_row = _row("BullMQ", fetch_next, bullmq)
            comparisons.append(
                CycleComparison(
                    fetch_next,
                    echo_row,
                    bull_row,
                    echo_row.redis_usec_per_job / bull_row.redis_usec_per_job,
                    statistics.median(
                        e.redis_usec_per_job / b.redis_usec_per_job
                        for e, b in zip(echo, bullmq, strict=True)
                    ),
                    statistics.median(
                        (e.jobs / e.wall_s) / (b.jobs / b.wall_s)
                        for e, b in zip(echo, bullmq, strict=True)
                    ),
                )
            )
    finally:
        stats.close()
    return comparisons


@dataclass(frozen=True)
class InstructionRow:
    """The server's instructions per job, EchoMQ against BullMQ, in one mode (callgrind)."""

    fetch_next: bool
    jobs: int
    echomq_per_job: float
    bullmq_per_job: float
    echomq_by_phase: dict[str, float]  # per call
    bullmq_by_phase: dict[str, float]
    ratio: float
    spread: float  # the largest relative difference between two rounds of one side and phase


def job_cycle_instructions(
    counter: InstructionCounter,
    port: int,
    bull: CycleFactory,
    jobs: int,
    rounds: int,
    progress: Callable[[str], None],
) -> list[InstructionRow]:
    """The job cycle on a server under callgrind: instructions instead of microseconds."""
    stats = redis.Redis(host="127.0.0.1", port=port)
    rows = []
    try:
        for fetch_next in (False, True):
            progress(f"job cycle under callgrind, fetch-next {'on' if fetch_next else 'off'}")
            sides = _cycle_rounds(stats, port, bull, jobs, rounds, fetch_next, counter)

            def least(side: list[CycleRound], phase: str) -> Phase:
                return min((r.phases[phase] for r in side), key=_instructions)

            def per_job(side: list[CycleRound]) -> float:
                return sum(_instructions(least(side, n)) for n in side[0].phases) / jobs

            def by_phase(side: list[CycleRound]) -> dict[str, float]:
                return {
                    n: _instructions(least(side, n)) / least(side, n).calls for n in side[0].phases
                }

            counts = [
                [_instructions(r.phases[n]) for r in side] for side in sides for n in side[0].phases
            ]
            spread = max((max(c) - min(c)) / min(c) for c in counts)
            echo, bullmq = per_job(sides[0]), per_job(sides[1])
            rows.append(
                InstructionRow(
                    fetch_next,
                    jobs,
                    echo,
                    bullmq,
                    by_phase(sides[0]),
                    by_phase(sides[1]),
                    echo / bullmq,
                    spread,
                )
            )
    finally:
        stats.close()
    return rows


# -- 3b. operations side by side (a flow, a dedup add, a scheduler upsert), in instructions ---

FLOW_CHILDREN = 10
FLOW_JOBS = 1 + FLOW_CHILDREN
DEDUP_TTL_MS = 60_000
SCHEDULER_EVERY_MS = 60_000


class Side(Protocol):
    """One side of an operation row, doing the operation `count` times a round.

    Made once, before the warm-up, it keeps its connection (and BullMQ's its event loop) to the
    end, as a long-lived producer does, so that no round counts a connection's set-up."""

    label: str
    calls: int  # the script calls one operation takes

    def key(self, queue: str, name: str) -> str: ...  # the queue's key `name`, as it spells it
    def prepare(self, queue: str) -> None: ...  # before a round, untimed
    def run(self, queue: str, count: int) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class Operation:
    """A row: what each operation does, the two sides, and what a round must leave (a check of
    the work done, read with the side's own key names)."""

    name: str
    echomq: Callable[[int], Side]
    bullmq: Callable[[int], Side]
    check: Callable[[redis.Redis, Side, str, int], None]


class EchoSide:
    """What every EchoMQ side shares: one synchronous client, the queue's key names, and the
    stream's length as the BullMQ side's. A side adds its own `run`."""

    label = "EchoMQ"
    calls = 1  # every EchoMQ operation here is one script call

    def __init__(self, port: int) -> None:
        self.client = redis.Redis(host="127.0.0.1", port=port)

    def key(self, queue: str, name: str) -> str:
        return f"emq:{{{queue}}}:{name}"

    def prepare(self, queue: str) -> None:
        self.client.hset(self.key(queue, "meta"), "max-events", MAX_EVENTS)

    def close(self) -> None:
        self.client.close()


class EchoFlow(EchoSide):
    """EchoMQ's `echomq_scripts.flows.add_flow`: one addFlow-10 a flow."""

    def run(self, queue: str, count: int) -> None:
        for _ in range(count):
            children = [FlowJob("child", queue) for _ in range(FLOW_CHILDREN)]
            add_flow(self.client, FlowJob("parent", queue, children=children), now=now_ms())


def check_flows(stats: redis.Redis, side: Side, queue: str, flows: int) -> None:
    """Every parent in waiting-children with all its children pending, and every child waiting."""
    found = cast(list[bytes], stats.zrange(side.key(queue, "waiting-children"), 0, -1))
    parents = [parent.decode() for parent in found]
    if len(parents) != flows:
        raise RuntimeError(f"{side.label}: {len(parents)} parents in waiting-children, not {flows}")
    pipe = stats.pipeline(transaction=False)
    pipe.llen(side.key(queue, "wait"))
    for parent in parents:
        pipe.scard(side.key(queue, f"{parent}:dependencies"))
    waiting, *pending = pipe.execute()
    if any(count != FLOW_CHILDREN for count in pending):
        raise RuntimeError(f"{side.label}: pending children {pending}, not {FLOW_CHILDREN} each")
    if waiting != flows * FLOW_CHILDREN:
        raise RuntimeError(f"{side.label}: {waiting} children waiting, not {flows * FLOW_CHILDREN}")


class EchoDedupAdd(EchoSide):
    """EchoMQ's addStandardJob-6 through its wrapper, with a dedup id and opts.deduplication's
    TTL: each call a new id (`held` False), or every call the one id a job already holds."""

    def __init__(self, port: int, held: bool) -> None:
        super().__init__(port)
        self.held = held

    def prepare(self, queue: str) -> None:
        super().prepare(queue)
        if self.held:
            self._add(queue, "held")

    def _add(self, queue: str, dedup_id: str) -> None:
        emq.add_standard_job(
            self.client,
            queue=queue,
            job_id="",
            name="job",
            data={},
            opts={"deduplication": {"ttl": DEDUP_TTL_MS}},
            now=now_ms(),
            dedup_id=dedup_id,
        )

    def run(self, queue: str, count: int) -> None:
        for i in range(count):
            self._add(queue, "held" if self.held else f"d{i}")


class EchoUpsertScheduler(EchoSide):
    """EchoMQ's addJobScheduler-10 through echomq_scripts.schedulers: a new every scheduler a
    call, whose first iteration is due now."""

    def run(self, queue: str, count: int) -> None:
        for i in range(count):
            upsert_job_scheduler(
                self.client, queue, f"s{i}", now=now_ms(), name="job", every=SCHEDULER_EVERY_MS
            )


def _waiting(stats: redis.Redis, side: Side, queue: str, want: int) -> None:
    waiting = stats.llen(side.key(queue, "wait"))
    if waiting != want:
        raise RuntimeError(f"{side.label}: {waiting} jobs waiting, not {want}")


def check_new_dedup_ids(stats: redis.Redis, side: Side, queue: str, count: int) -> None:
    """Every add added its job, and took its dedup id with the TTL."""
    _waiting(stats, side, queue, count)
    ttls = [stats.pttl(side.key(queue, f"de:d{i}")) for i in range(count)]
    if not all(0 < ttl <= DEDUP_TTL_MS for ttl in ttls):
        raise RuntimeError(f"{side.label}: dedup keys without their TTL: {sorted(set(ttls))[:5]}")


def check_held_dedup_id(stats: redis.Redis, side: Side, queue: str, count: int) -> None:
    """No call added a job: only the holder waits."""
    _waiting(stats, side, queue, 1)


def check_new_schedulers(stats: redis.Redis, side: Side, queue: str, count: int) -> None:
    """Every upsert made a scheduler and its first iteration, due now."""
    _waiting(stats, side, queue, count)
    found = stats.zcard(side.key(queue, "repeat"))
    if found != count:
        raise RuntimeError(f"{side.label}: {found} job schedulers, not {count}")


def _operation_round(
    side: Side,
    operation: Operation,
    stats: redis.Redis,
    queue: str,
    count: int,
    counter: InstructionCounter | None,
) -> Phase:
    side.prepare(queue)
    phase = timed_phase(stats, count * side.calls, lambda: side.run(queue, count), counter)
    operation.check(stats, side, queue, count)
    stats.flushall()
    return phase


@dataclass(frozen=True)
class OperationRow:
    """The server's instructions an operation takes, EchoMQ against BullMQ (callgrind)."""

    name: str
    count: int  # operations a round
    echomq_per_operation: float  # the least round's
    bullmq_per_operation: float
    ratio: float
    spread: float  # the largest relative difference between two rounds of one side


def operation_instructions(
    counter: InstructionCounter,
    port: int,
    operations: Sequence[Operation],
    count: int,
    rounds: int,
    progress: Callable[[str], None],
) -> list[OperationRow]:
    """For each operation: a warm-up round of each side, then `rounds` rounds of `count`
    operations, the sides alternating which goes first; each side's least round."""
    rows = []
    for operation in operations:
        progress(f"{operation.name} under callgrind")
        with contextlib.ExitStack() as stack:
            stats = redis.Redis(host="127.0.0.1", port=port)
            stack.callback(stats.close)
            sides: dict[str, Side] = {}
            for name, make in (("EchoMQ", operation.echomq), ("BullMQ", operation.bullmq)):
                side = make(port)
                stack.callback(side.close)
                sides[name] = side
            for side in sides.values():
                _operation_round(side, operation, stats, "warm-up", max(count // 10, 2), None)
            done: dict[str, list[Phase]] = {name: [] for name in sides}
            for round_ in range(rounds):
                order = list(sides.items())
                for name, side in order if round_ % 2 == 0 else reversed(order):
                    done[name].append(_operation_round(side, operation, stats, "q", count, counter))
        counts = {name: [_instructions(p) for p in phases] for name, phases in done.items()}
        echo, bullmq = min(counts["EchoMQ"]) / count, min(counts["BullMQ"]) / count
        rows.append(
            OperationRow(
                operation.name,
                count,
                echo,
                bullmq,
                echo / bullmq,
                max((max(c) - min(c)) / min(c) for c in counts.values()),
            )
        )
    return rows


# -- 4. bulk add -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BulkRow:
    side: str  # what added the jobs
    jobs_per_s: float
    redis_usec_per_job: float
    ratio_to_bullmq: float  # median per-round jobs/s against BullMQ's addBulk


def _queue_adds(pipe: Any, queue: str, first: int, size: int) -> list[Any]:
    """`size` adds queued on a pipeline (sync or asyncio), jobs numbered from `first`."""
    return [
        emq.add_standard_job_pipeline(
            pipe,
            queue=queue,
            job_id="",
            name="job",
            data={"n": first + i},
            opts={},
            now=now_ms(),
            dedup_id="",
        )
        for i in range(size)
    ]


class EchoBulkSync:
    """EchoMQ's add through the generated pipeline wrapper, on redis.Redis, in MULTI batches."""

    def __init__(self, port: int, queue: str) -> None:
        self.client = redis.Redis(host="127.0.0.1", port=port)
        self.queue = queue
        self.client.hset(f"emq:{{{queue}}}:meta", "max-events", MAX_EVENTS)

    def __call__(self, batches: int, size: int) -> list[str]:
        ids: list[str] = []
        try:
            for batch in range(batches):
                pipe = self.client.pipeline(transaction=True)
                pending = _queue_adds(pipe, self.queue, batch * size, size)
                replies = pipe.execute()
                ids += [item.result(replies)[0] for item in pending]
        finally:
            self.client.close()
        return ids


class EchoBulkAsync:
    """The same on redis.asyncio, as BullMQ's addBulk runs."""

    def __init__(self, port: int, queue: str) -> None:
        self.port = port
        self.queue = queue
        with redis.Redis(host="127.0.0.1", port=port) as setup:
            setup.hset(f"emq:{{{queue}}}:meta", "max-events", MAX_EVENTS)

    def __call__(self, batches: int, size: int) -> list[str]:
        async def run() -> list[str]:
            client = redis.asyncio.Redis(host="127.0.0.1", port=self.port)
            ids: list[str] = []
            try:
                for batch in range(batches):
                    async with client.pipeline(transaction=True) as pipe:
                        pending = _queue_adds(pipe, self.queue, batch * size, size)
                        replies = await pipe.execute()
                    ids += [item.result(replies)[0] for item in pending]
            finally:
                await client.aclose()
            return ids

        return asyncio.run(run())


class EchoQueueBulkSync:
    """EchoMQ's `Queue.add_bulk`, `size` jobs a call, with the job's data as BullMQ's side
    passes it (a dict the Queue encodes)."""

    def __init__(self, port: int, queue: str) -> None:
        self.client = redis.Redis(host="127.0.0.1", port=port)
        self.queue = Queue(self.client, queue)
        self.client.hset(f"emq:{{{queue}}}:meta", "max-events", MAX_EVENTS)

    def __call__(self, batches: int, size: int) -> list[str]:
        ids: list[str] = []
        try:
            for batch in range(batches):
                jobs = [("job", {"n": batch * size + i}) for i in range(size)]
                ids += [added.job_id for added in self.queue.add_bulk(jobs)]
        finally:
            self.client.close()
        return ids


class EchoQueueBulkAsync:
    """`AsyncQueue.add_bulk`, on redis.asyncio as BullMQ's Queue runs."""

    def __init__(self, port: int, queue: str) -> None:
        self.port = port
        self.name = queue
        with redis.Redis(host="127.0.0.1", port=port) as setup:
            setup.hset(f"emq:{{{queue}}}:meta", "max-events", MAX_EVENTS)

    def __call__(self, batches: int, size: int) -> list[str]:
        async def run() -> list[str]:
            client = redis.asyncio.Redis(host="127.0.0.1", port=self.port)
            queue = AsyncQueue(client, self.name)
            ids: list[str] = []
            try:
                for batch in range(batches):
                    jobs = [("job", {"n": batch * size + i}) for i in range(size)]
                    ids += [added.job_id for added in await queue.add_bulk(jobs)]
            finally:
                await client.aclose()
            return ids

        return asyncio.run(run())


# What a bulk-add side is: made for a port and a queue before the timed part (clients, BullMQ's
# Queue and its scripts), then called once with the batch count and size; the ids, in order.
BulkAdder = Callable[[int, str], Callable[[int, int], list[str]]]


def bulk_add(
    port: int,
    bull_bulk: BulkAdder,
    jobs: int,
    size: int,
    rounds: int,
    progress: Callable[[str], None],
) -> list[BulkRow]:
    progress("bulk add")
    batches = max(jobs // size, 1)
    total = batches * size
    sides: dict[str, BulkAdder] = {
        "EchoMQ AsyncQueue.add_bulk (asyncio)": EchoQueueBulkAsync,
        "EchoMQ Queue.add_bulk (redis.Redis)": EchoQueueBulkSync,
        "EchoMQ, redis.asyncio pipeline (MULTI)": EchoBulkAsync,
        "EchoMQ, redis.Redis pipeline (MULTI)": EchoBulkSync,
        "BullMQ Queue.addBulk (asyncio, MULTI)": bull_bulk,
    }
    stats = redis.Redis(host="127.0.0.1", port=port)
    phases: dict[str, list[Phase]] = {name: [] for name in sides}
    try:
        for make in sides.values():
            make(port, "warm-up")(2, size)
        stats.flushall()
        for round_ in range(rounds):
            order = list(sides.items())
            for name, make in order if round_ % 2 == 0 else reversed(order):
                add = make(port, "q")
                added: list[list[str]] = []

                def run(
                    add: Callable[[int, int], list[str]] = add, into: list[list[str]] = added
                ) -> None:
                    into.append(add(batches, size))

                phase = timed_phase(stats, total, run)
                if len(set(added[0])) != total:
                    raise RuntimeError(f"{name}: {len(set(added[0]))} distinct ids, not {total}")
                phases[name].append(phase)
                stats.flushall()
    finally:
        stats.close()
    bull = phases["BullMQ Queue.addBulk (asyncio, MULTI)"]
    return [
        BulkRow(
            name,
            statistics.median(total / p.wall_s for p in done),
            statistics.median(p.usec_per_call for p in done),
            statistics.median(b.wall_s / p.wall_s for p, b in zip(done, bull, strict=True)),
        )
        for name, done in phases.items()
    ]
