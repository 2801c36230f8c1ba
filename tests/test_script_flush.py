"""Wrapper calls across SCRIPT FLUSH: plain calls, pipelines, MULTI/EXEC and cluster pipelines.

A SCRIPT FLUSH, or a failover to a replica, empties a server's script cache at any moment. A
plain call falls back from EVALSHA to EVAL, which loads and runs the script in one command; a
pipeline carries each script's body in its first call of the script. The storm tests run a
thread that flushes every 1 to 20 ms (random) while wrapper calls run, then check that Redis's
state accounts for every call. They assert outcomes, never durations.
"""

from __future__ import annotations

import asyncio
import gc
import pickle
import random
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster

from echomq_scripts import generated as g
from echomq_scripts.runtime import (
    ArgumentError,
    NotLoadedError,
    PipelineIncompleteError,
    pipelines,
)
from tests.support.invariants import NOW, assert_one_state
from tests.support.redis_cluster import RedisCluster, queues_on_every_primary
from tests.support.redis_server import RedisServer

Client = redis.Redis | redis.cluster.RedisCluster
AsyncClient = redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster
LOCK_MS = 30_000
CYCLES = 250  # job cycles (add, count, pick up, finish) a worker runs under a storm
TRANSACTIONS = 100  # MULTI/EXEC transactions a worker runs under a storm
PIPELINES = 60  # plain pipelines a worker runs under a storm
WORKERS = 3
FLUSHES = 10  # flushes at least while each worker runs, however fast it is


# -- the arguments of the calls ---------------------------------------------------------


def add_args(job_id: str, data: str = "{}") -> dict[str, Any]:
    return {
        "job_id": job_id,
        "name": "job",
        "data": data,
        "opts": {},
        "now": NOW,
        "dedup_id": "",
    }


def pickup_args(token: str) -> dict[str, Any]:
    return {
        "token": token,
        "lock_duration": LOCK_MS,
        "now": NOW,
        "limit_max": 0,
        "limit_duration": 0,
        "concurrency": 0,
    }


def finish_args(job_id: str, token: str) -> dict[str, Any]:
    return {
        "job_id": job_id,
        "token": token,
        "now": NOW + 1,
        "outcome": "completed",
        "result": '"done"',
        "stacktrace": "",
        "jitter": 0.0,
        "fetch_next": False,
        "lock_duration": LOCK_MS,
        "limit_max": 0,
        "limit_duration": 0,
        "concurrency": 0,
        "max_metrics": 0,
        "backoff_delay": 0,
    }


def counter(queue: str) -> str:
    """A counter in the queue's slot, outside its `emq:{q}:` keys (which assert_one_state
    reads)."""
    return f"flush-test:{{{queue}}}:counter"


# -- what the servers counted -----------------------------------------------------------


def calls(servers: Sequence[redis.Redis]) -> dict[str, int]:
    """The script commands the servers ran since their last CONFIG RESETSTAT, by name, and
    NOSCRIPT: how many of them the servers answered with a NOSCRIPT error."""
    found: dict[str, int] = {}
    for server in servers:
        stats = server.info("commandstats")
        for name in ("eval", "evalsha", "script|load", "script|exists"):
            if f"cmdstat_{name}" in stats:
                found[name] = found.get(name, 0) + stats[f"cmdstat_{name}"]["calls"]
        noscript = server.info("errorstats").get("errorstat_NOSCRIPT", {}).get("count", 0)
        if noscript:
            found["NOSCRIPT"] = found.get("NOSCRIPT", 0) + noscript
    return found


def reset_stats(servers: Sequence[redis.Redis]) -> None:
    for server in servers:
        server.config_resetstat()


# -- the storm --------------------------------------------------------------------------


class FlushStorm:
    """A thread sending SCRIPT FLUSH to every server of `servers` every 1 to 20 ms (random)."""

    def __init__(self, servers: Sequence[redis.Redis], seed: int) -> None:
        self.servers = servers
        self.flushes = 0
        self.error: BaseException | None = None
        self._random = random.Random(seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self._random.uniform(0.001, 0.02)):
                for server in self.servers:
                    server.script_flush()
                self.flushes += 1
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def passed(self, start: int, count: int) -> bool:
        """Whether `count` flushes ran since the storm had done `start` (or it has ended)."""
        return self.flushes >= start + count or not self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        if self.error is not None:
            raise self.error


@contextmanager
def flush_storm(servers: Sequence[redis.Redis], seed: int = 7) -> Iterator[FlushStorm]:
    storm = FlushStorm(servers, seed)
    storm.start()
    try:
        yield storm
    finally:
        storm.stop()


# -- the servers of a test: the private server, or every primary of the cluster ---------


class Target:
    """The client a test calls through, the servers the storm flushes, and the queues."""

    def __init__(
        self,
        client: Client,
        servers: list[redis.Redis],
        queues: list[str],
        connect_async: Callable[[], AsyncClient],
    ) -> None:
        self.client = client
        self.servers = servers
        self.queues = queues
        self.connect_async = connect_async

    def queue_of(self, worker: int) -> str:
        return self.queues[worker % len(self.queues)]


@pytest.fixture(params=["server", "cluster"])
def target(request: pytest.FixtureRequest) -> Iterator[Target]:
    if request.param == "server":
        server: RedisServer = request.getfixturevalue("redis_server")
        client: redis.Redis = request.getfixturevalue("r")
        servers = [server.client()]
        yield Target(
            client,
            servers,
            ["storm"],
            lambda: redis.asyncio.Redis(host="127.0.0.1", port=server.port),
        )
    else:
        rc: redis.cluster.RedisCluster = request.getfixturevalue("rc")
        cluster: RedisCluster = request.getfixturevalue("redis_cluster")
        servers = cluster.primary_clients()
        node = rc.get_default_node()  # type: ignore[no-untyped-call]
        yield Target(
            rc,
            servers,
            list(queues_on_every_primary(rc)),
            lambda: redis.asyncio.cluster.RedisCluster(host=node.host, port=node.port),
        )
    for each in servers:
        each.close()


# -- the storm tests' workers ----------------------------------------------------------

# One worker's step: the client, the worker's queue, a name unique to the step, and the step's
# number; the jobs the step reports.
Step = Callable[[Client, str, str, int], list[str]]
AsyncStep = Callable[[AsyncClient, str, str, int], Awaitable[list[str]]]


def under_storm(
    target: Target, mode: str, steps: int, step: Step, astep: AsyncStep, seed: int
) -> list[str]:
    """WORKERS workers (threads, or asyncio tasks) each run `steps` steps at least, and more
    until the storm has flushed FLUSHES times since the worker started; what the steps
    reported."""
    with flush_storm(target.servers, seed) as storm:
        if mode == "sync":

            def work(worker: int) -> list[str]:
                queue, start, number = target.queue_of(worker), storm.flushes, 0
                found: list[str] = []
                while number < steps or not storm.passed(start, FLUSHES):
                    found += step(target.client, queue, f"s{worker}-{number}-", number)
                    number += 1
                return found

            with ThreadPoolExecutor(WORKERS) as pool:
                futures = [pool.submit(work, worker) for worker in range(WORKERS)]
                return [job for future in futures for job in future.result()]

        async def main() -> list[str]:
            client = target.connect_async()

            async def work(worker: int) -> list[str]:
                queue, start, number = target.queue_of(worker), storm.flushes, 0
                found: list[str] = []
                while number < steps or not storm.passed(start, FLUSHES):
                    found += await astep(client, queue, f"a{worker}-{number}-", number)
                    number += 1
                return found

            try:
                answers = await asyncio.gather(*(work(worker) for worker in range(WORKERS)))
            finally:
                await client.aclose()
            return [job for answer in answers for job in answer]

        return asyncio.run(main())


def states(target: Target) -> dict[str, str]:
    """Every job of the target's queues (`queue/id`) and its state; the one-state invariant
    holds."""
    return {
        f"{queue}/{job_id}": state
        for queue in target.queues
        for job_id, state in assert_one_state(target.client, queue).items()
    }


def counted(target: Target) -> int:
    """The sum of the queues' counters."""
    return sum(int(target.client.get(counter(queue)) or 0) for queue in target.queues)


# -- plain calls ------------------------------------------------------------------------


def test_a_plain_call_after_script_flush_runs_as_eval(target: Target) -> None:
    queue = target.queues[0]
    target.client.rpush(f"emq:{{{queue}}}:wait", "7")
    assert g.get_job_state(target.client, queue=queue, job_id="7") == "wait"
    for server in target.servers:
        server.script_flush()
    reset_stats(target.servers)
    assert g.get_job_state(target.client, queue=queue, job_id="7") == "wait"
    # One EVALSHA answered NOSCRIPT, then the call once more as EVAL: no SCRIPT LOAD between.
    assert calls(target.servers) == {"evalsha": 1, "NOSCRIPT": 1, "eval": 1}
    # The EVAL left the script in the cache: the next call is one EVALSHA.
    assert g.get_job_state(target.client, queue=queue, job_id="7") == "wait"
    assert calls(target.servers) == {"evalsha": 2, "NOSCRIPT": 1, "eval": 1}

    async def in_async() -> str:
        client = target.connect_async()
        try:
            for server in target.servers:
                server.script_flush()
            return await g.get_job_state_async(client, queue=queue, job_id="7")
        finally:
            await client.aclose()

    assert asyncio.run(in_async()) == "wait"
    assert calls(target.servers) == {"evalsha": 3, "NOSCRIPT": 2, "eval": 2}


def cycle(client: Client, queue: str, name: str, number: int) -> list[str]:
    """One job's way through the queue, in four plain calls; the job picked up."""
    job_id = name + "job"
    assert g.add_standard_job(client, queue=queue, **add_args(job_id)) == (job_id, 1)
    assert len(g.get_counts(client, queue=queue)) == 8
    token = f"tok-{job_id}"
    picked, fields, _, _ = g.move_to_active(client, queue=queue, **pickup_args(token))
    assert picked
    assert fields["name"] == "job"
    finished = g.move_to_finished(client, queue=queue, **finish_args(picked, token))
    assert finished[0] == "completed"
    return [f"{queue}/{picked}"]


async def acycle(client: AsyncClient, queue: str, name: str, number: int) -> list[str]:
    """`cycle` through the _async wrappers."""
    job_id = name + "job"
    assert await g.add_standard_job_async(client, queue=queue, **add_args(job_id)) == (job_id, 1)
    assert len(await g.get_counts_async(client, queue=queue)) == 8
    token = f"tok-{job_id}"
    picked, fields, _, _ = await g.move_to_active_async(client, queue=queue, **pickup_args(token))
    assert picked
    assert fields["name"] == "job"
    finished = await g.move_to_finished_async(client, queue=queue, **finish_args(picked, token))
    assert finished[0] == "completed"
    return [f"{queue}/{picked}"]


@pytest.mark.parametrize("mode", ["sync", "asyncio"])
def test_plain_calls_under_a_flush_storm_all_land(target: Target, mode: str) -> None:
    reset_stats(target.servers)
    picked = under_storm(target, mode, CYCLES, cycle, acycle, seed=7)
    # Every cycle added one job, picked one up and completed it: each job exactly once.
    assert len(picked) >= WORKERS * CYCLES
    assert len(picked) == len(set(picked))
    assert states(target) == dict.fromkeys(picked, "completed")
    seen = calls(target.servers)
    # The storm hit calls (NOSCRIPT answers); every one of them went on as EVAL, no other way.
    assert seen["NOSCRIPT"] > 0
    assert seen["eval"] == seen["NOSCRIPT"]
    assert "script|load" not in seen


# -- MULTI/EXEC -------------------------------------------------------------------------


def queue_transaction(pipe: Any, queue: str, name: str) -> tuple[list[Any], list[Any]]:
    """An INCR of the queue's counter, two adds and two pickups, queued on `pipe`."""
    pipe.incr(counter(queue))
    adds = [g.add_standard_job_pipeline(pipe, queue=queue, **add_args(f"{name}{x}")) for x in "ab"]
    pickups = [
        g.move_to_active_pipeline(pipe, queue=queue, **pickup_args(f"tok-{name}{x}")) for x in "ab"
    ]
    return adds, pickups


def transaction_outcome(
    queue: str, name: str, adds: list[Any], pickups: list[Any], replies: list[Any]
) -> list[str]:
    """The jobs a transaction picked up; it added and picked up both of its own."""
    assert [p.result(replies) for p in adds] == [(f"{name}a", 1), (f"{name}b", 1)]
    picked = sorted(p.result(replies)[0] for p in pickups)
    assert all(picked)
    return [f"{queue}/{job_id}" for job_id in picked]


def transaction(client: Client, queue: str, name: str, number: int) -> list[str]:
    """One MULTI/EXEC, after WATCH+multi() every other time, run by redis-py's execute() or
    by the runtime's, turn and turn about."""
    with client.pipeline(transaction=True) as pipe:
        if number % 2:
            pipe.watch(counter(queue) + ":watched")
            pipe.multi()
        adds, pickups = queue_transaction(pipe, queue, name)
        replies = pipe.execute() if number % 4 < 2 else g.execute(pipe)
    return transaction_outcome(queue, name, adds, pickups, replies)


async def atransaction(client: AsyncClient, queue: str, name: str, number: int) -> list[str]:
    """`transaction` on an asyncio pipeline."""
    async with client.pipeline(transaction=True) as pipe:
        if number % 2:
            await pipe.watch(counter(queue) + ":watched")
            pipe.multi()  # type: ignore[no-untyped-call]
        adds, pickups = queue_transaction(pipe, queue, name)
        replies = await pipe.execute() if number % 4 < 2 else await g.execute_async(pipe)
    return transaction_outcome(queue, name, adds, pickups, replies)


@pytest.mark.parametrize("mode", ["sync", "asyncio"])
def test_multi_exec_under_a_flush_storm_is_all_or_nothing(target: Target, mode: str) -> None:
    reset_stats(target.servers)
    picked = under_storm(target, mode, TRANSACTIONS, transaction, atransaction, seed=11)
    # Every transaction ran whole: the counters count them, and each added two jobs and picked
    # two up. One applied in part would have counted without its jobs, or the other way round.
    transactions = counted(target)
    assert transactions >= WORKERS * TRANSACTIONS
    assert len(picked) == len(set(picked)) == 2 * transactions
    assert states(target) == dict.fromkeys(picked, "active")
    seen = calls(target.servers)
    # Each EXEC carried both bodies and ran the second call of each script by EVALSHA; no
    # EVALSHA ever missed its script.
    assert seen["eval"] == seen["evalsha"] == 2 * transactions
    assert "NOSCRIPT" not in seen
    assert "script|exists" not in seen
    assert "script|load" not in seen


# -- plain pipelines --------------------------------------------------------------------

ADDS = 10  # adds a plain pipeline queues under the storm
PAYLOAD = '"' + "x" * 2000 + '"'  # so that a pipeline is more than one read for the server


def pipeline_outcome(
    queue: str, ids: list[str], pending: list[Any], replies: list[Any], not_run: Sequence[int]
) -> list[str]:
    """The jobs a plain pipeline's adds reported as added; those reported as not run are
    checked to say so."""
    added = []
    for job_id, call in zip(ids, pending, strict=True):
        if call.index in not_run:
            with pytest.raises(NotLoadedError, match="did not run"):
                call.result(replies)
        else:
            assert call.result(replies) == (job_id, 1)
            added.append(f"{queue}/{job_id}")
    return added


def queue_adds(pipe: Any, queue: str, name: str) -> tuple[list[str], list[Any]]:
    """An INCR of the queue's counter and ADDS adds, queued on a plain pipeline."""
    pipe.incr(counter(queue))
    ids = [f"{name}{n}" for n in range(ADDS)]
    return ids, [
        g.add_standard_job_pipeline(pipe, queue=queue, **add_args(i, PAYLOAD)) for i in ids
    ]


def plain_pipeline(client: Client, queue: str, name: str, number: int) -> list[str]:
    """An INCR and ADDS adds in one plain pipeline; the jobs it reported as added."""
    pipe = client.pipeline(transaction=False)
    ids, pending = queue_adds(pipe, queue, name)
    try:
        return pipeline_outcome(queue, ids, pending, g.execute(pipe), ())
    except PipelineIncompleteError as exc:
        incomplete = exc
    return incomplete_outcome(queue, ids, pending, incomplete)


async def aplain_pipeline(client: AsyncClient, queue: str, name: str, number: int) -> list[str]:
    """`plain_pipeline` on an asyncio pipeline."""
    pipe = client.pipeline(transaction=False)
    ids, pending = queue_adds(pipe, queue, name)
    try:
        return pipeline_outcome(queue, ids, pending, await g.execute_async(pipe), ())
    except PipelineIncompleteError as exc:
        incomplete = exc
    return incomplete_outcome(queue, ids, pending, incomplete)


def incomplete_outcome(
    queue: str, ids: list[str], pending: list[Any], error: PipelineIncompleteError
) -> list[str]:
    """`pipeline_outcome` of a pipeline that raised: its INCR and the add that carried the
    body ran, and every command is in `ran` or in `not_run`."""
    assert 0 in error.ran
    assert pending[0].index in error.ran
    assert sorted(error.ran + error.not_run) == list(range(ADDS + 1))
    return pipeline_outcome(queue, ids, pending, error.replies, error.not_run)


@pytest.mark.parametrize("mode", ["sync", "asyncio"])
def test_plain_pipelines_under_a_flush_storm_say_what_ran(target: Target, mode: str) -> None:
    reset_stats(target.servers)
    added = under_storm(target, mode, PIPELINES, plain_pipeline, aplain_pipeline, seed=13)
    # Every pipeline's INCR ran; the jobs in the queues are exactly those reported as added,
    # and none that was reported as not run.
    pipelines = counted(target)
    assert pipelines >= WORKERS * PIPELINES
    assert states(target) == dict.fromkeys(added, "wait")
    seen = calls(target.servers)
    assert seen["eval"] == pipelines  # one body a pipeline, in its first add
    assert seen["eval"] + seen["evalsha"] == pipelines * ADDS
    assert seen.get("NOSCRIPT", 0) == pipelines * ADDS - len(added)


def test_a_flush_inside_a_plain_pipeline_is_one_typed_error(r: redis.Redis) -> None:
    r.rpush("emq:{mail}:wait", "7")
    pipe = r.pipeline(transaction=False)
    carried = g.get_job_state_pipeline(pipe, queue="mail", job_id="7")  # EVAL with the body
    pipe.script_flush()  # what a flush from elsewhere does between two commands of the send
    lost = g.get_job_state_pipeline(pipe, queue="mail", job_id="7")  # EVALSHA: NOSCRIPT
    pipe.incr("after")
    lost_too = g.get_job_state_pipeline(pipe, queue="mail", job_id="8")
    with pytest.raises(PipelineIncompleteError) as raised:
        g.execute(pipe)
    error = raised.value
    assert (error.ran, error.not_run, error.scripts) == ((0, 1, 3), (2, 4), ("getJobState-8",) * 2)
    assert str(error).startswith(
        "2 of the pipeline's 5 commands did not run (getJobState-8 at 2, 4): the server lost the"
        " script after the call that carried its body (SCRIPT FLUSH or failover)"
    )
    assert carried.result(error.replies) == "wait"
    assert error.replies[1] is True  # SCRIPT FLUSH
    assert error.replies[3] == 1  # INCR
    for call in (lost, lost_too):
        with pytest.raises(NotLoadedError, match=r"^getJobState-8 did not run: the server lacked"):
            call.result(error.replies)
    assert r.get("after") == b"1"
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.ran, copy.not_run, str(copy)) == (
        PipelineIncompleteError,
        error.ran,
        error.not_run,
        str(error),
    )
    # redis-py's own execute() reports the same race as its NoScriptError, for the first call.
    pipe = r.pipeline(transaction=False)
    g.get_job_state_pipeline(pipe, queue="mail", job_id="7")
    pipe.script_flush()
    g.get_job_state_pipeline(pipe, queue="mail", job_id="7")
    with pytest.raises(redis.exceptions.NoScriptError, match="Command # 3"):
        pipe.execute()


# -- how a pipeline carries the bodies --------------------------------------------------


def test_a_pipeline_carries_each_body_once_per_stack(r: redis.Redis) -> None:
    r.rpush("emq:{mail}:wait", *(str(n) for n in range(1000)))
    pipe = r.pipeline(transaction=False)
    reset_stats([r])
    pending = [g.get_job_state_pipeline(pipe, queue="mail", job_id=str(n)) for n in range(1000)]
    counts = g.get_counts_pipeline(pipe, queue="mail")
    replies = g.execute(pipe)
    assert [p.result(replies) for p in pending] == ["wait"] * 1000
    assert counts.result(replies)[0] == 1000
    assert calls([r]) == {"eval": 2, "evalsha": 999}  # no SCRIPT EXISTS, no SCRIPT LOAD
    assert pipe.scripts == set()
    # The pipeline's next stack, after execute, carries the body again (the server still has
    # it, but nothing says so when the stack is sent), and so does one after reset().
    nothing: Callable[[], None] = lambda: None  # noqa: E731
    for prepare in (nothing, pipe.reset):
        r.script_flush()
        g.get_job_state_pipeline(pipe, queue="mail", job_id="1")
        prepare()
        second = g.get_job_state_pipeline(pipe, queue="mail", job_id="2")
        assert second.result(pipe.execute()) == "wait"
    assert calls([r]) == {"eval": 4, "evalsha": 1000}


def test_pipelines_taking_turns_each_carry_their_bodies(r: redis.Redis) -> None:
    # Calls alternate between two pipelines: each stack still carries the body on its own
    # first call, whichever pipeline queued last.
    r.rpush("emq:{mail}:wait", "1", "2")
    first, second = r.pipeline(transaction=False), r.pipeline(transaction=False)
    reset_stats([r])
    queued = [
        (pipe, g.get_job_state_pipeline(pipe, queue="mail", job_id=str(n % 3 + 1)))
        for n in range(10)
        for pipe in (first, second)
    ]
    r.script_flush()  # nothing sent yet: each pipeline's EVAL must carry the body itself
    replies = {id(pipe): pipe.execute() for pipe in (first, second)}
    assert [p.result(replies[id(pipe)]) for pipe, p in queued] == [
        ["wait", "wait", "unknown"][n % 3] for n in range(10) for _ in (first, second)
    ]
    assert calls([r]) == {"eval": 2, "evalsha": 18}
    # After pipe.execute() (redis-py's own), the pipeline's new stack carries the body again.
    r.script_flush()
    again = g.get_job_state_pipeline(first, queue="mail", job_id="2")
    assert again.result(first.execute()) == "wait"
    # The pipeline queued on last, once gone, leaves nothing behind that holds its stack.
    last = g.get_job_state_pipeline(second, queue="mail", job_id="1")
    assert pipelines._last is not None
    assert pipelines._last[1].stack is second.command_stack
    gone = weakref.ref(second)
    del second, queued, replies, last
    gc.collect()
    assert gone() is None
    assert pipelines._last is None


def test_execute_returns_or_raises_the_replies_as_redis_py_does(r: redis.Redis) -> None:
    r.set("text", "not a list")

    def queued() -> tuple[redis.client.Pipeline, Any]:
        pipe = r.pipeline(transaction=False)
        pipe.lpush("text", "x")
        return pipe, g.get_counts_pipeline(pipe, queue="mail")

    pipe, counts = queued()
    with pytest.raises(redis.exceptions.ResponseError) as theirs:
        pipe.execute()
    pipe, counts = queued()
    with pytest.raises(redis.exceptions.ResponseError) as ours:
        g.execute(pipe)
    assert str(ours.value) == str(theirs.value)
    assert str(ours.value).startswith("Command # 1 (LPUSH text x) of pipeline caused error:")
    pipe, counts = queued()
    replies = g.execute(pipe, raise_on_error=False)
    assert isinstance(replies[0], redis.exceptions.ResponseError)
    assert counts.result(replies) == (0,) * 8


def test_execute_refuses_what_is_not_its_kind_of_pipeline(
    r: redis.Redis, redis_server: RedisServer
) -> None:
    with pytest.raises(ArgumentError, match=r"execute takes a .*got Redis$"):
        g.execute(r)  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=r"got Pipeline \(sync pipelines: execute\)"):
        asyncio.run(g.execute_async(r.pipeline()))  # type: ignore[arg-type]

    async def with_an_asyncio_pipeline() -> None:
        async with redis.asyncio.Redis(host="127.0.0.1", port=redis_server.port) as client:
            g.execute(client.pipeline())  # type: ignore[arg-type]

    with pytest.raises(ArgumentError, match=r"got Pipeline \(asyncio pipelines: execute_async\)"):
        asyncio.run(with_an_asyncio_pipeline())


# -- cluster pipelines ------------------------------------------------------------------


def test_cluster_pipelines_run_after_a_flush_of_every_primary(
    rc: redis.cluster.RedisCluster, redis_cluster: RedisCluster
) -> None:
    queues = queues_on_every_primary(rc, per_primary=2, prefix="c")
    for queue in queues:
        rc.rpush(f"emq:{{{queue}}}:wait", "3")
    primaries = redis_cluster.primary_clients()
    g.load_all(rc)
    for primary in primaries:
        primary.script_flush()
    reset_stats(primaries)

    pipe = rc.pipeline()  # type: ignore[no-untyped-call]
    pending = [
        g.get_job_state_pipeline(pipe, queue=q, job_id=j) for q in queues for j in ("3", "4")
    ]
    replies = g.execute(pipe)
    assert [p.result(replies) for p in pending] == ["wait", "unknown"] * len(queues)
    # The first call of each slot carried the body, to the node that ran both.
    assert calls(primaries) == {"eval": 6, "evalsha": 6}

    # MULTI/EXEC on one queue's slot, after WATCH + multi().
    queue = "mail"
    for primary in primaries:
        primary.script_flush()
    with rc.pipeline(transaction=True) as tx:  # type: ignore[no-untyped-call]
        tx.watch(counter(queue))
        tx.multi()
        adds, pickups = queue_transaction(tx, queue, "x")
        replies = g.execute(tx)
    assert transaction_outcome(queue, "x", adds, pickups, replies) == [f"{queue}/xa", f"{queue}/xb"]
    assert rc.get(counter(queue)) == b"1"

    async def in_async() -> list[str]:
        # No load_all_async first: the pipeline carries the bodies itself.
        for primary in primaries:
            primary.script_flush()
        node = rc.get_default_node()  # type: ignore[no-untyped-call]
        client = redis.asyncio.cluster.RedisCluster(host=node.host, port=node.port)
        try:
            async with client.pipeline() as apipe:
                waiting = [
                    g.get_job_state_pipeline(apipe, queue=q, job_id=j)
                    for q in queues
                    for j in ("3", "3")
                ]
                results = await g.execute_async(apipe)
            return [p.result(results) for p in waiting]
        finally:
            await client.aclose()

    reset_stats(primaries)
    assert asyncio.run(in_async()) == ["wait"] * 2 * len(queues)
    assert calls(primaries) == {"eval": 6, "evalsha": 6}
    for primary in primaries:
        primary.close()


def test_a_cluster_pipeline_after_watch_needs_multi(rc: redis.cluster.RedisCluster) -> None:
    with rc.pipeline(transaction=True) as tx:  # type: ignore[no-untyped-call]
        tx.watch(counter("mail"))
        with pytest.raises(ArgumentError, match=r"call pipe.multi\(\) before queueing"):
            g.get_job_state_pipeline(tx, queue="mail", job_id="1")
        tx.multi()
        state = g.get_job_state_pipeline(tx, queue="mail", job_id="1")
        assert state.result(g.execute(tx)) == "unknown"
