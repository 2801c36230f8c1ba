"""Whole lifecycles of a job, calls that bypass the wrappers, and queues side by side on every
primary of a cluster.

Each scenario runs through the `Queue` harness, on a single server and on a cluster; what the
harness checks after every step, and what the markers in these tests mean:
tests/support/queue_harness.py.
"""

from __future__ import annotations

import pytest
import redis
import redis.cluster

from echomq_scripts import generated as g
from echomq_scripts.runtime import LuaError
from tests.support.invariants import NOW
from tests.support.queue_harness import RETRY, Queue, run_to

# == whole lifecycles =======================================================================


def test_lifecycle_add_pick_heartbeat_complete(q: Queue) -> None:
    job_id = q.add(data={"n": 1})
    assert q.state(job_id) == "wait"
    assert q.take_id(lock_ms=1000) == job_id
    assert q.stalled_check() == ([], [])
    assert q.extend(job_id, duration=1000) == 1
    assert q.stalled_check() == ([], [])
    assert q.extend(job_id, duration=1000) == 1
    assert q.complete(job_id, '"ok"', now=NOW + 3000) == ("completed", "", {}, 0)
    assert q.check() == {job_id: "completed"}
    assert [e["event"] for e in q.events()] == ["waiting", "active", "completed"]


def test_lifecycle_fail_retry_then_complete(q: Queue) -> None:
    job_id = q.add(opts=RETRY)
    assert q.take_id() == job_id
    assert q.fail(job_id, now=NOW + 100)[0] == "delayed"
    assert q.take(now=NOW + 1099) == ("", {}, 0)  # not due yet
    assert q.check() == {job_id: "delayed"}
    assert q.take_id(now=NOW + 1100) == job_id  # promoted when due, then picked
    assert q.job(job_id)["processedOn"] == str(NOW + 1100)
    assert q.complete(job_id, now=NOW + 1200)[0] == "completed"
    assert q.check() == {job_id: "completed"}
    job = q.job(job_id)
    assert (job["atm"], job["returnvalue"], job["failedReason"]) == ("2", '"done"', "boom")
    assert [e["event"] for e in q.events()] == [
        "waiting",
        "active",
        "delayed",
        "waiting",
        "active",
        "completed",
    ]


def test_lifecycle_to_failed_after_the_last_attempt(q: Queue) -> None:
    job_id = q.add(opts={"attempts": 2, "backoff": {"delay": 1000}})
    assert q.take_id() == job_id
    assert q.fail(job_id, "one")[0] == "delayed"
    assert q.take_id(now=NOW + 1000) == job_id
    assert q.fail(job_id, "two", now=NOW + 1500)[0] == "failed"
    assert q.check() == {job_id: "failed"}
    job = q.job(job_id)
    assert (job["atm"], job["failedReason"], job["finishedOn"]) == ("2", "two", str(NOW + 1500))
    assert q.metric("failed") == 1
    assert q.take(now=NOW + 10_000) == ("", {}, 0)


# == callers that bypass the wrappers =========================================================


def test_a_bad_number_from_another_runtime_moves_nothing(q: Queue) -> None:
    """Scripts read their numbers before writing: a bad one fails the call and moves no job."""
    q.add("a")
    q.take_id()
    keys = g.move_to_delayed_keys(q.name, "a")
    with pytest.raises(LuaError, match="jitter must be a number"):
        q.raw("moveToDelayed", keys, ["a", q.token_of("a"), str(NOW), "1000", ""])
    assert q.check() == {"a": "active"}


@pytest.mark.parametrize("rule", [{"age": None, "count": 1.5}, {"count": "x"}, "soon"])
def test_a_malformed_retention_rule_keeps_the_job(q: Queue, rule: object) -> None:
    q.add("a", opts={"removeOnComplete": rule})
    assert run_to(q, "completed", "a", NOW) == "completed"
    assert q.check() == {"a": "completed"}


def test_queues_on_every_primary_side_by_side(rc: redis.cluster.RedisCluster) -> None:
    """Several queues at once on a cluster, each on its own slot, interleaved step by step."""
    names: dict[str, str] = {}
    number = 0
    while len(set(names.values())) < 3:
        name = f"side{number}"
        node = rc.get_node_from_key(f"emq:{{{name}}}:wait").name  # type: ignore[no-untyped-call]
        if node not in names.values():
            names[name] = node
        number += 1
    queues = [Queue(rc, name) for name in names]
    jobs = [queue.add(data={"queue": queue.name}) for queue in queues]
    taken = [queue.take_id() for queue in queues]
    assert taken == jobs
    for queue, job_id in zip(queues, jobs, strict=True):
        assert queue.extend(job_id, duration=1000) == 1
    for queue, job_id in zip(reversed(queues), reversed(jobs), strict=True):
        assert queue.complete(job_id)[0] == "completed"
    for queue, job_id in zip(queues, jobs, strict=True):
        assert queue.check() == {job_id: "completed"}
        assert queue.counts()["completed"] == 1
