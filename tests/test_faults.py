"""Faults in the middle of a run: a worker process killed while it holds jobs, and redis-server
killed and restarted from its append-only file. In both, no job is lost, none ends in two
states, and every job completes exactly once (tests/support/workers.py: `check_completed_once`).

`make test` runs the small sizes; `make soak` the full ones.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import redis

from echomq_scripts.runtime import keys
from tests.support.environment import redis_binary
from tests.support.invariants import assert_one_state, text
from tests.support.redis_server import RedisServer
from tests.support.workers import (
    Fleet,
    Started,
    WorkerConfig,
    check_completed_once,
    make_plan,
    metric,
)

QUEUE = "faults"
OUTAGE_S = 1.0


def held_by(client: redis.Redis, queue: str, worker: str) -> set[str]:
    """The active jobs whose lock holds a token of `worker` (tokens are `<worker>-<uuid>:<n>`)."""
    active = [text(job_id) for job_id in client.lrange(keys.active(queue), 0, -1)]
    pipe = client.pipeline(transaction=False)
    for job_id in active:
        pipe.get(keys.lock(queue, job_id))
    tokens = pipe.execute()
    return {
        job_id
        for job_id, token in zip(active, tokens, strict=True)
        if token is not None and text(token).startswith(f"{worker}-")
    }


@pytest.mark.parametrize(
    "jobs", [pytest.param(400, id="400"), pytest.param(4_000, id="4000", marks=pytest.mark.soak)]
)
def test_a_killed_workers_jobs_come_back_through_stalled_recovery(
    r: redis.Redis,
    redis_server: RedisServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    jobs: int,
) -> None:
    """The victim runs four slots with a 1 s lock and takes each next job in the finishing
    call, so it always holds several; it is SIGKILLed a quarter into the run. Its locks expire,
    the stalled checker puts its jobs back, and the seven other workers (5 s locks, heartbeats)
    complete them."""
    plan = make_plan(jobs, seed=jobs, delayed=0.1, prioritized=0.3, work_ms=(20, 60))
    with Fleet(tmp_path, redis_server.port, QUEUE) as fleet:
        fleet.checker()
        fleet.producer(plan)
        victim = fleet.worker(
            WorkerConfig(name="victim", slots=4, lock_ms=1_000, heartbeat_ms=200, fetch_next=True)
        )
        # The others start once the victim holds jobs, so that it has its share however slowly
        # the processes start.
        fleet.wait_until(lambda: len(held_by(r, QUEUE, "victim")) >= 3, "the victim at work")
        for n in range(7):
            fleet.worker(
                WorkerConfig(name=f"w{n}", lock_ms=5_000, heartbeat_ms=1_000, fetch_next=n % 2 == 0)
            )
        fleet.wait_until(
            lambda: metric(r, QUEUE) >= jobs // 4 and len(held_by(r, QUEUE, "victim")) >= 3,
            "the victim holding three jobs a quarter into the run",
        )
        fleet.kill(victim)
        # The locks outlive the victim by up to its lock duration: what it held when it died.
        held = held_by(r, QUEUE, "victim")
        assert len(held) >= 2, f"the victim held {held} when it was killed"
        fleet.wait_until_completed(jobs)

    _, summary = check_completed_once(r, fleet, plan)
    # Each job the victim held went through stalled recovery and another worker completed it.
    assert [job_id for job_id in held if summary.completed_by[job_id] == "victim"] == []
    assert held <= set(summary.recovered)
    done_by_victim = sum(1 for name in summary.completed_by.values() if name == "victim")
    with capsys.disabled():
        print(
            f"\nkilled worker: {jobs} jobs; the victim completed {done_by_victim} and held"
            f" {len(held)} when SIGKILLed: {sorted(held)}; {len(summary.recovered)} job(s) ran"
            f" twice (recovered as stalled): {summary.recovered[:20]};"
            f" {summary.lost} lost lock(s)"
        )


def acked(producer: Started) -> set[str]:
    """The jobs whose add Redis acknowledged to the producer."""
    return {record["job"] for record in producer.read() if record["e"] == "added"}


@pytest.mark.parametrize(
    "jobs", [pytest.param(600, id="600"), pytest.param(5_000, id="5000", marks=pytest.mark.soak)]
)
def test_acknowledged_jobs_survive_a_redis_crash_and_all_complete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], jobs: int
) -> None:
    """redis-server with an append-only file fsynced on every write is SIGKILLed while the
    producer adds (a pause after each add spreads the adds over the run) and the workers work,
    then restarted on the same port and directory. Every acknowledged add is there, in one
    state; the processes re-send their calls and the run completes every job once."""
    # Only a missing redis-server skips (or fails in CI); one that does not start fails.
    server = RedisServer(redis_binary(), aof=True).start()
    client = server.client()
    try:
        plan = make_plan(
            jobs, seed=jobs, delayed=0.2, prioritized=0.3, failing=0.15, work_ms=(0, 10)
        )
        with Fleet(tmp_path, server.port, QUEUE) as fleet:
            fleet.checker()
            for n in range(4):
                fleet.worker(
                    WorkerConfig(
                        name=f"w{n}", lock_ms=5_000, heartbeat_ms=1_000, fetch_next=n % 2 == 0
                    )
                )
            producer = fleet.producer(plan, pause_ms=2)
            fleet.wait_until(
                lambda: len(acked(producer)) >= jobs // 2 and metric(client, QUEUE) >= jobs // 5,
                "half the jobs added and a fifth completed",
            )
            server.kill()
            killed_at = time.monotonic()
            # Down long enough that calls in flight fail and redis-py's own retries run out for
            # some: the processes' loops then re-send them.
            time.sleep(OUTAGE_S)
            server.restart()
            down_ms = (time.monotonic() - killed_at) * 1000
            # Read after the restart: every add acknowledged before the kill is in the file.
            before = acked(producer)
            states = assert_one_state(client, QUEUE)
            assert sorted(before - states.keys()) == [], "acknowledged jobs lost in the crash"
            fleet.wait_until_completed(jobs)
        _, summary = check_completed_once(client, fleet, plan)
        outages = {
            name: record["outages"]
            for role in ("worker", "producer", "checker")
            for name, record in fleet.records(role)
            if record["e"] == "exit"
        }
        assert acked(producer) == {job.id for job in plan}
        with capsys.disabled():
            print(
                f"\nkilled redis: {jobs} jobs, {len(before)} acknowledged before the restart"
                f" ({down_ms:.0f} ms down), all there; outages met by process: {outages};"
                f" {len(summary.recovered)} job(s) recovered as stalled;"
                f" {summary.lost} lost lock(s)"
            )
    finally:
        client.close()
        server.stop()
