"""moveStalledJobsToWait-8, stalled recovery: marking, moving back, failing a job that stalls too
often, heartbeats between the runs.

Each scenario runs through the `Queue` harness, on a single server and on a cluster; what the
harness checks after every step, and what the markers in these tests mean:
tests/support/queue_harness.py.
"""

from __future__ import annotations

import pytest

from echomq_scripts.generated import errors
from tests.support.invariants import NOW, add_standard
from tests.support.queue_harness import OTHER, Queue


def test_the_first_stalled_check_only_marks(q: Queue) -> None:
    q.add("a")
    q.add("b")
    q.take_id()
    q.take_id()
    q.expire_lock("a")  # even a lockless job is only marked by the first run
    assert q.stalled_check() == ([], [])
    assert q.stalled() == {"a", "b"}
    assert q.check() == {"a": "active", "b": "active"}


def test_a_lockless_marked_job_goes_back_to_the_front_of_wait(q: Queue) -> None:
    q.add("s")
    q.add("alive")
    q.take_id()
    q.take_id()
    q.add("w1")
    q.add("w2")
    q.stalled_check()
    q.expire_lock("s")
    q.r.delete(q.key("marker"))  # idle workers took it (BZPOPMIN): recovery must set it again
    assert q.stalled_check(now=NOW + 1) == (["s"], [])
    assert q.check() == {"s": "wait", "alive": "active", "w1": "wait", "w2": "wait"}
    assert q.items("wait") == ["s", "w1", "w2"]
    assert q.job("s")["stc"] == "1"
    assert q.stalled() == {"alive"}
    assert q.last_event() == {"event": "stalled", "jobId": "s"}
    assert q.marker() == 0
    # The stalled worker's late calls are refused; the next worker takes it first.
    stalled_token = q.token_of("s")
    with pytest.raises(errors.JobLockNotExist):
        q.complete("s")
    assert q.take_id(token=OTHER) == "s"
    with pytest.raises(errors.JobLockMismatch):
        q.complete("s", token=stalled_token)
    with pytest.raises(errors.JobLockMismatch):
        q.extend("s", token=stalled_token)
    assert q.complete("s", token=OTHER)[0] == "completed"


def test_a_job_stalling_past_max_stalled_fails(q: Queue) -> None:
    q.add("a")
    for stall in (1, 2):
        assert q.take_id() == "a"
        q.stalled_check()
        q.expire_lock("a")
        recovered, failed = q.stalled_check(max_stalled=1, now=NOW + stall)
        if stall == 1:
            assert (recovered, failed) == (["a"], [])
            assert q.check() == {"a": "wait"}
    assert (recovered, failed) == ([], ["a"])
    assert q.check() == {"a": "failed"}
    job = q.job("a")
    assert job["failedReason"] == "job stalled more than allowable limit"
    assert (job["finishedOn"], job["stc"]) == (str(NOW + 2), "2")
    assert q.scores("failed") == {"a": NOW + 2}
    assert q.last_event() == {
        "event": "failed",
        "jobId": "a",
        "prev": "active",
        "reason": "stalled",
    }


def test_max_stalled_0_fails_at_the_first_stall(q: Queue) -> None:
    q.add("a")
    q.take_id()
    q.stalled_check(max_stalled=0)
    q.expire_lock("a")
    assert q.stalled_check(max_stalled=0) == ([], ["a"])
    assert q.check() == {"a": "failed"}


def test_a_heartbeat_between_the_runs_keeps_the_job(q: Queue) -> None:
    q.add("a")
    q.add("b")
    q.take_id(lock_ms=1000)
    q.take_id(lock_ms=1000)
    q.stalled_check()
    assert q.extend("a") == 1
    assert q.stalled() == {"b"}
    # b had no heartbeat but its lock still lives: not stalled either.
    assert q.stalled_check() == ([], [])
    assert q.check() == {"a": "active", "b": "active"}
    assert q.stalled() == {"a", "b"}


def test_two_stalled_checks_in_a_row_do_not_move_a_job_twice(q: Queue) -> None:
    q.add("a")
    q.add("b")
    q.take_id()
    q.take_id()
    q.stalled_check()
    q.expire_lock("a")
    q.expire_lock("b")
    recovered, failed = q.stalled_check()
    assert (sorted(recovered), failed) == (["a", "b"], [])
    assert q.stalled_check() == ([], [])
    assert q.check() == {"a": "wait", "b": "wait"}
    assert (q.job("a")["stc"], q.job("b")["stc"]) == ("1", "1")
    assert [e["event"] for e in q.events()].count("stalled") == 2
    # A marked job that finished meanwhile is skipped, not moved.
    done = q.take_id()
    rest = ({"a", "b"} - {done}).pop()
    q.stalled_check()
    q.complete(done)
    q.r.sadd(q.key("stalled"), done)  # even if its mark were left behind
    q.check()
    assert q.stalled_check() == ([], [])
    assert q.check() == {done: "completed", rest: "wait"}


def test_a_stalled_job_of_a_paused_queue_goes_to_paused(q: Queue) -> None:
    q.add("a")
    q.take_id()
    q.stalled_check()
    q.pause()
    q.expire_lock("a")
    assert q.stalled_check() == (["a"], [])
    assert q.check() == {"a": "paused"}
    assert q.marker() is None


def test_a_job_failed_by_stalling_gets_the_failure_bookkeeping(q: Queue) -> None:
    # Regression (c0b1651): no metrics, no removeOnFail, and the dedup id held forever.
    q.add("a", dedup_id="d")
    q.add("b", opts={"removeOnFail": True})
    q.take_id()
    q.take_id()
    q.stalled_check(max_stalled=0)
    q.expire_lock("a")
    q.expire_lock("b")
    recovered, failed = q.stalled_check(max_stalled=0)
    assert (recovered, sorted(failed)) == ([], ["a", "b"])
    assert q.check() == {"a": "failed"}  # b removed by its removeOnFail
    assert q.metric("failed") == 2
    assert q.r.exists(q.key("de:d"), q.key("b")) == 0
    assert add_standard(q.r, q.name, job_id="c", dedup_id="d") == ("c", 1)
