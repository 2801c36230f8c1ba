"""The walks over a whole state or queue on a large queue: the longest single call.

How to read the numbers: a queue of `--walk-jobs` jobs (200,000 by default) is filled through
the generated pipeline wrappers, untimed; then one walk runs to its end, call after call, each
call timed alone (wall time in this process, from before the wrapper is called to after it
returns, so it holds the round trip too). `longest ms` is the slowest call of the walk: what a
walk makes every other client of the server wait at most, against Redis's 5 s
`busy-reply-threshold`. `redis us/job` is the server's own time inside EVALSHA for the whole
walk (`INFO commandstats`), per job removed. Each walk runs on a fresh queue. The tree walks
remove a flow of about as many jobs: one parent over `jobs / 1000` parents of 1,000 children
each, so that a record is far larger than a call can read.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import redis

from echomq_scripts.flows import FlowJob, add_flow
from echomq_scripts.generated import scripts as emq

QUEUE = "walk"
FILL_BATCH = 1000


@dataclass(frozen=True)
class WalkRow:
    walk: str  # the script and its batch
    jobs: int
    calls: int
    longest_ms: float
    median_ms: float
    total_s: float
    redis_usec_per_job: float


def _fill(client: redis.Redis, jobs: int, now: int) -> None:
    """`jobs` jobs in wait, added through the pipeline wrapper in batches (not timed)."""
    for first in range(0, jobs, FILL_BATCH):
        pipe = client.pipeline(transaction=False)
        for i in range(first, min(first + FILL_BATCH, jobs)):
            emq.add_standard_job_pipeline(
                pipe,
                queue=QUEUE,
                job_id="",
                name="job",
                data={"n": i},
                opts={},
                now=now,
                dedup_id="",
            )
        pipe.execute()


def _fill_tree(client: redis.Redis, jobs: int, now: int) -> int:
    """A flow under job "root": `jobs / 1000` parents of 1,000 pending children each, a parent
    added a call (not timed). Returns how many jobs it holds."""
    mids = max(jobs // 1000, 1)
    for i in range(mids):
        mid = FlowJob("mid", QUEUE, children=[FlowJob("leaf", QUEUE) for _ in range(1000)])
        if i == 0:
            add_flow(client, FlowJob("root", QUEUE, job_id="root", children=[mid]), now=now)
        else:
            add_flow(client, mid, now=now, parent_id="root")
    return 1 + mids * 1001


def _walk(
    client: redis.Redis, name: str, jobs: int, step: Callable[[], bool], kept: int = 0
) -> WalkRow:
    """Calls `step` until it says the walk is over, timing each call; `kept` jobs are left
    waiting (a parent whose children went)."""
    client.config_resetstat()
    times: list[float] = []
    more = True
    while more:
        start = time.perf_counter()
        more = step()
        times.append(time.perf_counter() - start)
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    if stats.get("calls") != len(times):
        raise RuntimeError(
            f"{name}: the server counted {stats.get('calls')} calls, not {len(times)}"
        )
    left = client.llen(f"emq:{{{QUEUE}}}:wait") + client.llen(f"emq:{{{QUEUE}}}:paused")
    if left != kept:
        raise RuntimeError(f"{name}: {left} jobs left waiting after the walk, not {kept}")
    return WalkRow(
        name,
        jobs,
        len(times),
        max(times) * 1000,
        statistics.median(times) * 1000,
        sum(times),
        stats["usec"] / jobs,
    )


def walks(port: int, jobs: int, batch: int, progress: Callable[[str], None]) -> list[WalkRow]:
    """cleanJobsInSet-5 on wait, then obliterate-20, each on `jobs` jobs, `batch` a call; then
    removeUnprocessedChildren-10 and removeJob-13 on a flow of about as many."""
    client = redis.Redis(host="127.0.0.1", port=port)
    now = round(time.time() * 1000)
    rows = []
    try:
        client.flushall()
        progress(f"walks: filling a queue of {jobs} jobs")
        _fill(client, jobs, now)
        cursor = 0

        def clean() -> bool:
            nonlocal cursor
            cursor, _ = emq.clean_jobs_in_set(
                client, queue=QUEUE, state="wait", now=now, grace=0, limit=batch, cursor=cursor
            )
            return cursor != 0

        progress("walks: cleanJobsInSet-5")
        rows.append(_walk(client, f"cleanJobsInSet-5, wait, limit {batch}", jobs, clean))
        client.flushall()
        progress(f"walks: filling a queue of {jobs} jobs")
        _fill(client, jobs, now)
        emq.pause(client, queue=QUEUE, action="pause")
        progress("walks: obliterate-20")
        rows.append(
            _walk(
                client,
                f"obliterate-20, count {batch}",
                jobs,
                lambda: emq.obliterate(client, queue=QUEUE, count=batch, force=False) == 1,
            )
        )
        client.flushall()
        progress("walks: filling a flow")
        tree = _fill_tree(client, jobs, now)
        progress("walks: removeUnprocessedChildren-10")
        rows.append(
            _walk(
                client,
                f"removeUnprocessedChildren-10, limit {batch}",
                tree - 1,
                lambda: (
                    emq.remove_unprocessed_children(
                        client, queue=QUEUE, job_id="root", limit=batch
                    )[0]
                    == 1
                ),
                kept=1,  # the parent, released
            )
        )
        client.flushall()
        progress("walks: filling a flow")
        _fill_tree(client, jobs, now)
        progress("walks: removeJob-13")
        rows.append(
            _walk(
                client,
                f"removeJob-13 with its children, limit {batch}",
                tree,
                lambda: (
                    emq.remove_job(
                        client, queue=QUEUE, job_id="root", remove_children=True, limit=batch
                    )
                    == 2
                ),
            )
        )
        if client.exists(f"emq:{{{QUEUE}}}:root"):
            raise RuntimeError("removeJob-13: the flow's parent is left after the walk")
        client.flushall()
    finally:
        client.close()
    return rows
