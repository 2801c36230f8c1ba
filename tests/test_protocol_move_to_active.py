"""moveToActive-11, the pickup: which job comes first, delayed promotion, the limiter, the
concurrency cap, the lock and the marker.

Each scenario runs through the `Queue` harness, on a single server and on a cluster; what the
harness checks after every step, and what the markers in these tests mean:
tests/support/queue_harness.py.
"""

from __future__ import annotations

from typing import Any

from tests.support.invariants import NOW
from tests.support.queue_harness import Queue


def test_pickup_takes_wait_first_in_fifo_order_then_prioritized(q: Queue) -> None:
    q.add_prioritized("p", priority=1)
    q.add("w1")
    q.add("w2")
    assert [q.take_id() for _ in range(4)] == ["w1", "w2", "p", ""]
    assert q.check() == {"w1": "active", "w2": "active", "p": "active"}


def test_pickup_takes_the_lowest_priority_first_fifo_within_one(q: Queue) -> None:
    for job_id, priority in [("a5", 5), ("b1", 1), ("c5", 5), ("d1", 1), ("e3", 3)]:
        q.add_prioritized(job_id, priority=priority)
    assert [q.take_id() for _ in range(5)] == ["b1", "d1", "e3", "a5", "c5"]


def test_pickup_promotes_due_delayed_jobs_and_leaves_the_rest(q: Queue) -> None:
    # A prioritized job retried with a backoff: delayed, due at NOW + 1000, priority kept.
    q.add_prioritized("prio", priority=2, opts={"attempts": 2, "backoff": {"delay": 1000}})
    assert q.take_id() == "prio"
    assert q.fail("prio")[0] == "delayed"
    q.add_delayed("late", delay=5000)
    q.add_delayed("soon", delay=1000)
    q.add_delayed("soon2", delay=2000)
    assert q.take(now=NOW + 999) == ("", {}, 0)
    assert q.check() == {
        "late": "delayed",
        "soon": "delayed",
        "soon2": "delayed",
        "prio": "delayed",
    }
    # Due at exactly its run-at: promoted; wait keeps the due order; a priority goes to
    # prioritized, behind wait.
    assert q.take_id(now=NOW + 2000) == "soon"
    assert q.check() == {
        "late": "delayed",
        "soon": "active",
        "soon2": "wait",
        "prio": "prioritized",
    }
    promoted = [e for e in q.events() if e.get("prev") == "delayed"]
    assert {e["jobId"] for e in promoted} == {"soon", "soon2", "prio"}
    assert all(e["event"] == "waiting" for e in promoted)
    assert q.take_id(now=NOW + 2000) == "soon2"
    assert q.take_id(now=NOW + 2000) == "prio"
    assert q.take_id(now=NOW + 2000) == ""
    assert q.scores("delayed") == {"late": NOW + 5000}


def test_the_rate_limiter_allows_limit_max_jobs_per_window(q: Queue) -> None:
    for job_id in "abc":
        q.add(job_id)
    limit: dict[str, Any] = {"limit_max": 2, "limit_duration": 1000}
    assert q.take_id(**limit) == "a"
    assert q.take_id(**limit) == "b"
    assert q.r.get(q.key("limiter")) == b"2"
    assert 0 < q.r.pttl(q.key("limiter")) <= 1000
    job_id, fields, limited_for = q.take(**limit)
    assert (job_id, fields) == ("", {})
    assert 0 < limited_for <= 1000
    assert q.check() == {"a": "active", "b": "active", "c": "wait"}
    q.r.delete(q.key("limiter"))  # the window passes
    q.check()
    assert q.take_id(**limit) == "c"


def test_the_concurrency_cap_counts_the_active_jobs(q: Queue) -> None:
    for job_id in "abc":
        q.add(job_id)
    assert q.take_id(concurrency=2) == "a"
    assert q.take_id(concurrency=2) == "b"
    assert q.take(concurrency=2) == ("", {}, 0)
    assert q.check() == {"a": "active", "b": "active", "c": "wait"}
    q.complete("a")
    assert q.take_id(concurrency=2) == "c"


def test_a_paused_queue_gives_nothing(q: Queue) -> None:
    q.add("w")
    q.add_prioritized("p")
    q.pause()
    assert q.take() == ("", {}, 0)
    assert q.check() == {"w": "paused", "p": "prioritized"}


def test_pickup_locks_the_job_for_the_token_and_answers_its_fields(q: Queue) -> None:
    q.add("a", name="n", data={"x": 1})
    job_id, fields, limited_for = q.take(token="t-1", now=NOW + 7, lock_ms=5000)
    assert (job_id, limited_for) == ("a", 0)
    assert fields == q.job("a")
    assert fields["processedOn"] == str(NOW + 7)
    assert (fields["name"], fields["data"], fields["timestamp"]) == ("n", '{"x":1}', str(NOW))
    assert q.lock("a") == "t-1"
    assert 0 < q.pttl("a") <= 5000
    # The token's record names the job, and lives as long as the lock.
    assert q.r.get(q.key("token:t-1")) == b"a"
    assert 0 < q.r.pttl(q.key("token:t-1")) <= 5000
    assert q.stalled() == set()
    assert q.last_event() == {"event": "active", "jobId": "a", "prev": "waiting"}
    assert q.take() == ("", {}, 0)


def test_pickup_sets_the_marker_to_the_next_due_work(q: Queue) -> None:
    q.add("a")
    q.add_delayed("d", delay=3000)
    assert q.marker() == 0  # a is due now
    assert q.take_id() == "a"
    # A marker at 0 stays after a pickup: at worst one idle worker wakes for nothing, and its
    # pickup, which finds nothing, sets the marker right.
    assert q.marker() == 0
    assert q.take_id() == ""
    assert q.marker() == NOW + 3000  # only d is left
    assert q.take_id(now=NOW + 3000) == "d"  # promoted, which set the marker to 0
    assert q.take_id(now=NOW + 3000) == ""
    assert q.marker() is None  # nothing left
    assert q.check() == {"a": "active", "d": "active"}
