"""Eight worker processes race over one queue, and every job completes exactly once.

A producer process adds the jobs while the workers run: plain, prioritized and delayed adds,
some jobs failing their first attempts and retried with a backoff and jitter, a few slow enough
to need heartbeats. Half the workers take their next job in the finishing call (fetch_next), two
run two slots each, and a stalled checker runs in its own process every 200 ms. Each worker
records what it completed (tests/support/workers.py). The run is over when the completed metric
counts every job; then each job must be completed exactly once by every count: the workers' records,
the completed set, the stream's `completed` events, the metric, and the one-state invariant.
A job a worker lost to stalled recovery (a late heartbeat) may run again, but complete only
once: the test says how many did.

`make test` runs the small size; `make soak` the full one (10,000 jobs).
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
import redis

from tests.support.redis_server import RedisServer
from tests.support.workers import (
    Fleet,
    WorkerConfig,
    check_completed_once,
    make_plan,
)

QUEUE = "races"
WORKERS = 8


@pytest.mark.parametrize(
    "jobs",
    [pytest.param(2_000, id="2000"), pytest.param(10_000, id="10000", marks=pytest.mark.soak)],
)
def test_every_job_completes_exactly_once_under_racing_workers(
    r: redis.Redis,
    redis_server: RedisServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    jobs: int,
) -> None:
    plan = make_plan(
        jobs, seed=jobs, delayed=0.2, prioritized=0.3, failing=0.15, slow=0.02, slow_ms=(250, 500)
    )
    started = time.monotonic()
    with Fleet(tmp_path, redis_server.port, QUEUE) as fleet:
        fleet.checker()
        for n in range(WORKERS):
            fleet.worker(
                WorkerConfig(
                    name=f"w{n}",
                    slots=2 if n >= WORKERS - 2 else 1,
                    lock_ms=2_000,
                    heartbeat_ms=200,
                    fetch_next=n % 2 == 0,
                )
            )
        fleet.producer(plan)
        fleet.wait_until_completed(jobs)
    elapsed = time.monotonic() - started

    _, summary = check_completed_once(r, fleet, plan)
    kinds = Counter(job.kind for job in plan)
    retries = sum(job.fails for job in plan)
    assert sum(summary.picks.values()) >= jobs + retries
    assert summary.beats > 0, "the slow jobs' heartbeats renewed no lock"
    per_worker = Counter(summary.completed_by.values())
    assert len(per_worker) == WORKERS, "a worker completed nothing"
    with capsys.disabled():
        print(
            f"\nraces: {jobs} jobs ({dict(kinds)}, {retries} failed attempts retried) by"
            f" {WORKERS} workers in {elapsed:.1f} s; completions per worker"
            f" {sorted(per_worker.values())}; {summary.beats} heartbeats;"
            f" {len(summary.recovered)} job(s) ran again after a stall, {summary.lost} lost"
            f" lock(s): {summary.recovered[:20]}"
        )
