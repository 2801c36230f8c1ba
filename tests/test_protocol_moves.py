"""The scripts that move one job, or a batch, between states by hand: promote-8,
changePriority-6, changeDelay-4, retryJob-12, reprocessJob-8, moveJobFromActiveToWait-11 and
moveJobsToWait-8. Each scenario runs through the `Queue` harness, on a single server and on a
cluster (tests/support/queue_harness.py): every step ends with the one-state invariant."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import pytest

from echomq_scripts import generated as g
from echomq_scripts.generated import errors
from echomq_scripts.runtime import ArgumentError, LuaError
from tests.support.invariants import NOW
from tests.support.queue_harness import OTHER, Queue, checked

Outcome = Literal["completed", "failed"]
BulkState = Literal["completed", "failed", "delayed"]


def promote(q: Queue, job_id: str) -> int:
    return checked(q, lambda: g.promote(q.r, queue=q.name, job_id=job_id))


def change_priority(q: Queue, job_id: str, priority: int, lifo: bool = False) -> int:
    return checked(
        q,
        lambda: g.change_priority(q.r, queue=q.name, job_id=job_id, priority=priority, lifo=lifo),
    )


def change_delay(q: Queue, job_id: str, delay: int, now: int = NOW) -> int:
    return checked(
        q, lambda: g.change_delay(q.r, queue=q.name, job_id=job_id, delay=delay, now=now)
    )


def retry_job(q: Queue, job_id: str, token: str | None = None, now: int = NOW) -> str:
    return checked(
        q,
        lambda: g.retry_job(
            q.r,
            queue=q.name,
            job_id=job_id,
            token=token or q.token_of(job_id),
            now=now,
            reason="try again",
            stacktrace="Error: try again",
        ),
    )


def reprocess(q: Queue, job_id: str, outcome: Outcome, reset: bool = False) -> str:
    return checked(
        q,
        lambda: g.reprocess_job(
            q.r, queue=q.name, job_id=job_id, outcome=outcome, reset_attempts=reset
        ),
    )


def give_back(q: Queue, job_id: str, token: str | None = None) -> int:
    return checked(
        q,
        lambda: g.move_job_from_active_to_wait(
            q.r, queue=q.name, job_id=job_id, token=token or q.token_of(job_id)
        ),
    )


def move_back(q: Queue, state: BulkState, count: int, timestamp: int) -> int:
    return checked(
        q,
        lambda: g.move_jobs_to_wait(
            q.r, queue=q.name, state=state, count=count, timestamp=timestamp
        ),
    )


def finished(q: Queue, outcome: Outcome, *ids: str, now: int = NOW) -> None:
    """Add each job, pick it up and finish it with `outcome`, one a millisecond from `now`."""
    for at, job_id in enumerate(ids):
        q.add(job_id)
        assert q.take_id(now=now + at) == job_id
        q.finish(job_id, outcome=outcome, result='"r"', now=now + at)


# -- promote-8 --------------------------------------------------------------------------------


def test_promote_moves_a_delayed_job_where_pickup_would_and_wakes_a_worker(q: Queue) -> None:
    q.add("w")
    q.add_delayed("a", delay=60_000)
    q.r.delete(q.key("marker"))  # an idle worker took it
    assert promote(q, "a") == 0
    assert q.items("wait") == ["w", "a"]  # behind the jobs already waiting, as a due job goes
    assert q.job("a")["delay"] == "0"
    assert q.marker() == 0
    assert q.last_event() == {"event": "waiting", "jobId": "a", "prev": "delayed"}
    assert q.take_id() == "w"
    assert q.take_id() == "a"


def test_promote_honours_the_priority_and_the_pause(q: Queue) -> None:
    q.add_flow(q.node("p", priority=3, delay=60_000))  # a delayed leaf with a priority
    q.add_delayed("a", delay=60_000)
    q.pause()
    assert promote(q, "p") == 0
    assert promote(q, "a") == 0
    assert q.check() == {"p": "prioritized", "a": "paused"}
    assert [e["event"] for e in q.events()[-2:]] == ["waiting", "paused"]
    assert q.marker() is None  # paused: no worker is woken


def test_promote_codes(q: Queue) -> None:
    q.add("w")
    with pytest.raises(errors.JobNotExist):
        promote(q, "ghost")
    with pytest.raises(errors.JobNotInState):
        promote(q, "w")
    assert q.check() == {"w": "wait"}
    assert "delay" not in q.job("w")
    with pytest.raises(LuaError, match="contains"):
        q.raw("promote", list(g.promote_keys(q.name)), ["a:lock"])


# -- changePriority-6 -------------------------------------------------------------------------


def test_change_priority_moves_a_waiting_job_last_of_its_new_priority(q: Queue) -> None:
    q.add_prioritized("a", priority=2)
    q.add_prioritized("b", priority=2)
    q.add("w")
    assert change_priority(q, "w", 2) == 0
    assert change_priority(q, "a", 2) == 0  # the same priority again: last of it
    assert q.job("w")["priority"] == "2"
    assert list(q.scores("prioritized")) == ["b", "w", "a"]
    assert change_priority(q, "a", 1) == 0
    assert list(q.scores("prioritized")) == ["a", "b", "w"]


def test_change_priority_with_lifo_goes_first_of_its_priority(q: Queue) -> None:
    q.add_prioritized("a", priority=2)
    q.add_prioritized("b", priority=2)
    q.add_prioritized("c", priority=1)
    assert change_priority(q, "b", 2, lifo=True) == 0
    assert q.scores("prioritized")["b"] == 2 * 2**32  # within the score's form: counter 0
    assert [q.take_id() for _ in range(3)] == ["c", "b", "a"]


def test_priority_0_sends_a_job_to_wait_last_or_with_lifo_next(q: Queue) -> None:
    q.add("w")
    q.add_prioritized("a", priority=2)
    q.add_prioritized("b", priority=2)
    assert change_priority(q, "a", 0) == 0
    assert change_priority(q, "b", 0, lifo=True) == 0
    assert "priority" not in q.job("a")
    assert q.items("wait") == ["b", "w", "a"]
    q.pause()
    assert change_priority(q, "w", 0, lifo=True) == 0  # paused: the paused list's next
    assert q.items("paused") == ["w", "b", "a"]
    assert change_priority(q, "a", 4) == 0  # out of paused, into prioritized, no worker woken
    assert q.check() == {"w": "paused", "b": "paused", "a": "prioritized"}


def test_change_priority_of_a_job_not_waiting_changes_only_its_hash(q: Queue) -> None:
    q.add_delayed("d", delay=100)
    q.add("r")
    assert q.take_id() == "r"
    assert change_priority(q, "d", 3) == 0
    assert change_priority(q, "r", 3) == 0
    assert q.check() == {"d": "delayed", "r": "active"}
    assert q.take_id(now=NOW + 100, concurrency=1) == ""  # d promoted, by its new priority
    assert q.check()["d"] == "prioritized"


def test_change_priority_codes(q: Queue) -> None:
    with pytest.raises(errors.JobNotExist):
        change_priority(q, "ghost", 1)
    with pytest.raises(ArgumentError):
        change_priority(q, "ghost", 2097152)
    call_keys = list(g.change_priority_keys(q.name))
    with pytest.raises(LuaError, match="priority must be an integer from 0 to 2097151"):
        q.raw("changePriority", call_keys, ["a", "-1", "0"])


# -- changeDelay-4 ----------------------------------------------------------------------------


def test_change_delay_counts_the_new_delay_from_now(q: Queue) -> None:
    q.add_delayed("a", delay=100)
    q.r.delete(q.key("marker"))
    assert change_delay(q, "a", 5000, now=NOW + 50) == 0
    assert q.scores("delayed") == {"a": NOW + 50 + 5000}
    assert q.job("a")["delay"] == "5000"
    assert q.marker() == NOW + 5050
    assert q.last_event() == {
        "event": "delayed",
        "jobId": "a",
        "delay": "5000",
        "runAt": str(NOW + 5050),
    }
    assert q.take_id(now=NOW + 5049) == ""
    assert change_delay(q, "a", 0, now=NOW + 5049) == 0  # due now
    assert q.take_id(now=NOW + 5049) == "a"


def test_change_delay_codes_and_the_largest_run_at(q: Queue) -> None:
    q.add("w")
    q.add_delayed("a", delay=100)
    with pytest.raises(errors.JobNotExist):
        change_delay(q, "ghost", 1)
    with pytest.raises(errors.JobNotInState):
        change_delay(q, "w", 1)
    call_keys = list(g.change_delay_keys(q.name))
    with pytest.raises(LuaError, match="delay must end by 2"):
        q.raw("changeDelay", call_keys, ["a", str(2**53 - 1 - NOW + 1), str(NOW)])
    assert q.scores("delayed") == {"a": NOW + 100}
    assert change_delay(q, "a", 2**53 - 1 - NOW) == 0
    assert q.scores("delayed") == {"a": 2**53 - 1}


# -- retryJob-12 ------------------------------------------------------------------------------


def test_retry_job_sends_an_active_job_back_at_once(q: Queue) -> None:
    q.add("a")
    q.add("b")
    assert q.take_id() == "a"
    q.stalled_check()  # marks a
    assert retry_job(q, "a") == "wait"
    assert q.items("wait") == ["b", "a"]
    job = q.job("a")
    assert (job["atm"], job["failedReason"], job["stacktrace"]) == (
        "1",
        "try again",
        "Error: try again",
    )
    assert q.lock("a") is None
    assert q.stalled() == set()
    assert q.last_event() == {"event": "waiting", "jobId": "a", "prev": "active"}


def test_retry_job_promotes_due_delayed_jobs_first_and_honours_priority(q: Queue) -> None:
    q.add_prioritized("p", priority=2)
    q.add_delayed("d", delay=10)
    assert q.take_id() == "p"
    assert retry_job(q, "p", now=NOW + 10) == "prioritized"
    assert q.check() == {"p": "prioritized", "d": "wait"}
    assert [(e["event"], e["jobId"]) for e in q.events()[-2:]] == [
        ("waiting", "d"),
        ("waiting", "p"),
    ]
    q.pause()
    q.resume()
    assert q.take_id() == "d"
    q.pause()
    assert retry_job(q, "d") == "paused"
    assert q.last_event() == {"event": "paused", "jobId": "d", "prev": "active"}


@pytest.mark.parametrize("take_back", [retry_job, give_back], ids=["retryJob", "giveBack"])
def test_a_job_taken_back_answers_the_codes_in_the_transitions_order(
    q: Queue, take_back: Callable[..., object]
) -> None:
    """retryJob-12 and moveJobFromActiveToWait-11: -2, -6, -1, -3, and nothing moved."""
    q.add("a")
    q.add("w")
    with pytest.raises(errors.JobLockNotExist):
        take_back(q, "a", token="t")
    assert q.take_id() == "a"
    with pytest.raises(errors.JobLockMismatch):
        take_back(q, "a", token=OTHER)
    q.r.set(q.key("ghost:lock"), "t")
    with pytest.raises(errors.JobNotExist):
        take_back(q, "ghost", token="t")
    q.r.delete(q.key("ghost:lock"))
    q.r.set(q.key("w:lock"), "t")
    with pytest.raises(errors.JobNotInState):
        take_back(q, "w", token="t")
    q.r.delete(q.key("w:lock"))
    assert q.check() == {"a": "active", "w": "wait"}
    assert q.job("a")["atm"] == "0"
    assert q.lock("a") == q.token_of("a")


def test_retry_job_sent_again_answers_the_same_and_retries_once(q: Queue) -> None:
    q.add("a")
    assert q.take_id() == "a"
    token = q.token_of("a")
    assert retry_job(q, "a") == "wait"
    assert retry_job(q, "a", token=token) == "wait"
    assert q.job("a")["atm"] == "1"
    assert len([e for e in q.events() if e["event"] == "waiting"]) == 2  # the add's and one
    # The token's record answers only its own script: another transition is refused.
    with pytest.raises(errors.JobLockNotExist):
        give_back(q, "a", token=token)


# -- reprocessJob-8 ---------------------------------------------------------------------------


@pytest.mark.parametrize("outcome", ["completed", "failed"])
def test_reprocess_sends_a_finished_job_back_without_its_finish(q: Queue, outcome: Outcome) -> None:
    finished(q, outcome, "a")
    before = q.job("a")
    assert {"finishedOn", "processedOn"} <= set(before)
    assert reprocess(q, "a", outcome) == "wait"
    after = q.job("a")
    gone = {
        "finishedOn",
        "processedOn",
        "returnvalue" if outcome == "completed" else "failedReason",
    }
    assert after == {k: v for k, v in before.items() if k not in gone}
    assert after["atm"] == "1"
    assert q.last_event() == {"event": "waiting", "jobId": "a", "prev": outcome}
    assert q.marker() == 0
    assert q.take_id() == "a"


def test_reprocess_resets_attempts_on_request_and_honours_priority_and_pause(q: Queue) -> None:
    q.add_prioritized("p", priority=2)
    assert q.take_id() == "p"
    q.fail("p")
    finished(q, "failed", "w")
    q.pause()
    assert reprocess(q, "p", "failed", reset=True) == "prioritized"
    assert q.job("p")["atm"] == "0"
    assert reprocess(q, "w", "failed") == "paused"
    assert q.job("w")["atm"] == "1"
    assert q.last_event() == {"event": "paused", "jobId": "w", "prev": "failed"}
    assert q.marker() is None  # paused: no worker is woken


def test_reprocess_codes_and_keys(q: Queue) -> None:
    finished(q, "completed", "a")
    with pytest.raises(errors.JobNotExist):
        reprocess(q, "ghost", "completed")
    with pytest.raises(errors.JobNotInState):
        reprocess(q, "a", "failed")
    assert q.check() == {"a": "completed"}
    call_keys = list(g.reprocess_job_keys(q.name, outcome="completed"))
    call_keys[0] = q.key("wait")  # a runtime that names another set than the outcome's
    with pytest.raises(LuaError, match="is not the queue's completed key"):
        q.raw("reprocessJob", call_keys, ["a", "completed", "0"])
    assert q.check() == {"a": "completed"}


def test_a_reprocessed_child_holds_its_parent_again(q: Queue) -> None:
    q.add_flow(q.node("p", q.node("a"), q.node("b", opts={"ignoreDependencyOnFailure": True})))
    assert q.take_id() == "a"
    q.complete("a", '"va"')
    assert q.take_id() == "b"
    q.fail("b")
    assert q.check()["p"] == "wait"  # released: a completed, b's failure ignored
    assert reprocess(q, "a", "completed") == "wait"
    assert reprocess(q, "b", "failed") == "wait"
    assert g.get_dependency_counts(q.r, queue=q.name, job_id="p") == (0, 2, 0, 0)
    assert q.take_id() == "p"
    with pytest.raises(errors.JobPendingChildren):
        q.complete("p")


def test_a_failed_child_reprocessed_lets_a_held_parent_complete_later(q: Queue) -> None:
    q.add_flow(q.node("p", q.node("a")))
    assert q.take_id() == "a"
    q.fail("a")
    assert g.get_dependency_counts(q.r, queue=q.name, job_id="p") == (0, 0, 0, 1)
    assert reprocess(q, "a", "failed") == "wait"
    assert g.get_dependency_counts(q.r, queue=q.name, job_id="p") == (0, 1, 0, 0)
    assert q.take_id() == "a"
    q.complete("a")
    assert q.check() == {"p": "wait", "a": "completed"}


# -- moveJobFromActiveToWait-11 ---------------------------------------------------------------


def test_a_job_given_back_runs_next_with_its_attempts_unchanged(q: Queue) -> None:
    q.add("a")
    q.add("b")
    assert q.take_id() == "a"
    q.stalled_check()
    assert give_back(q, "a") == 0
    assert q.items("wait") == ["a", "b"]  # first in line again
    assert q.job("a")["atm"] == "0"
    assert q.lock("a") is None
    assert q.stalled() == set()
    assert q.last_event() == {"event": "waiting", "jobId": "a", "prev": "active"}
    assert q.take_id() == "a"


def test_a_job_given_back_after_a_rate_limit_answers_its_wait(q: Queue) -> None:
    """A worker whose job hit a rate limit sets the limiter (rateLimit-1) and gives the job
    back; with a stored limit the limiter counts, and holds only once it is full."""
    q.add("a")
    assert q.take_id() == "a"
    assert g.rate_limit(q.r, queue=q.name, duration=5000) == 1
    assert 0 < give_back(q, "a") <= 5000
    g.remove_rate_limit_key(q.r, queue=q.name)
    g.set_global_rate_limit(q.r, queue=q.name, max=2, duration=60_000)
    assert q.take_id() == "a"
    assert give_back(q, "a") == 0  # one pickup of two counted: no wait
    assert q.take_id() == "a"
    assert 0 < give_back(q, "a") <= 60_000  # two of two


def test_a_job_given_back_answers_the_limiters_wait(q: Queue) -> None:
    q.add_prioritized("p", priority=2)
    q.add_prioritized("o", priority=2)
    assert q.take_id(limit_max=1, limit_duration=60_000) == "p"
    token = q.token_of("p")
    wait = give_back(q, "p")
    assert 0 < wait <= 60_000
    assert list(q.scores("prioritized")) == ["p", "o"]  # first of its priority
    assert 0 < give_back(q, "p", token=token) <= wait  # re-sent: the limiter's wait now
    q.pause()
    assert q.take_id() == ""
    q.r.delete(q.key("limiter"))
    q.resume()
    assert q.take_id() == "p"
    q.pause()
    assert give_back(q, "p") == 0
    assert q.check()["p"] == "prioritized"
    q.resume()
    q.add("w")
    assert q.take_id() == "w"
    q.pause()
    assert give_back(q, "w") == 0
    assert q.last_event() == {"event": "paused", "jobId": "w", "prev": "active"}


# -- moveJobsToWait-8 -------------------------------------------------------------------------


def test_move_jobs_to_wait_moves_a_bounded_batch_oldest_first(q: Queue) -> None:
    finished(q, "failed", "a", "b", "c", "d")  # finished at NOW, NOW + 1, NOW + 2, NOW + 3
    assert move_back(q, "failed", 2, NOW + 2) == 1  # c is left
    assert q.check() == {"a": "wait", "b": "wait", "c": "failed", "d": "failed"}
    assert [e["jobId"] for e in q.events()[-2:]] == ["a", "b"]
    assert q.last_event() == {"event": "waiting", "jobId": "b", "prev": "failed"}
    assert "failedReason" not in q.job("a")
    assert move_back(q, "failed", 2, NOW + 2) == 0  # c only: none is left
    assert move_back(q, "failed", 5, NOW + 2) == 0  # nothing to move
    assert q.items("wait") == ["a", "b", "c"]
    assert q.check()["d"] == "failed"


def test_move_jobs_to_wait_takes_completed_jobs_and_keeps_priorities(q: Queue) -> None:
    q.add_prioritized("p", priority=2)
    assert q.take_id() == "p"
    q.complete("p")
    finished(q, "completed", "a", now=NOW + 1)
    assert move_back(q, "completed", 1, NOW + 10) == 1
    assert move_back(q, "completed", 1, NOW + 10) == 0
    assert q.check() == {"p": "prioritized", "a": "wait"}
    assert "returnvalue" not in q.job("a")


def test_move_jobs_to_wait_refuses_a_bad_state_another_set_and_a_bad_count(q: Queue) -> None:
    finished(q, "failed", "a")
    q.add_delayed("d", delay=0)
    call_keys = list(g.move_jobs_to_wait_keys(q.name, state="failed"))
    with pytest.raises(LuaError, match="count must be an integer from 1 to 1000"):
        q.raw("moveJobsToWait", call_keys, ["failed", "0", str(NOW)])
    with pytest.raises(
        LuaError, match="state must be 'completed', 'failed' or 'delayed', got 'wait'"
    ):
        q.raw("moveJobsToWait", call_keys, ["wait", "1", str(NOW)])
    with pytest.raises(ArgumentError, match="state"):
        g.move_jobs_to_wait(
            q.r,
            queue=q.name,
            state="wait",  # type: ignore[arg-type]
            count=1,
            timestamp=NOW,
        )
    call_keys[0] = q.key("completed")
    with pytest.raises(LuaError, match="is not the queue's failed key"):
        q.raw("moveJobsToWait", call_keys, ["failed", "1", str(NOW)])
    with pytest.raises(LuaError, match="is not the queue's delayed key"):
        q.raw("moveJobsToWait", call_keys, ["delayed", "1", str(NOW)])
    assert q.check() == {"a": "failed", "d": "delayed"}


def test_move_jobs_to_wait_promotes_due_delayed_jobs_in_batches_earliest_first(q: Queue) -> None:
    q.add("w")
    q.add_delayed("c", delay=300)
    q.add_delayed("a", delay=100)
    q.add_delayed("b2", delay=200)
    q.add_delayed("b1", delay=200)  # one run-at: by id, as ZRANGEBYSCORE gives them
    q.r.delete(q.key("marker"))  # an idle worker took it
    assert move_back(q, "delayed", 2, NOW + 200) == 1  # b2 is left
    assert q.items("wait") == ["w", "a", "b1"]  # behind the jobs already waiting
    assert [q.job(j)["delay"] for j in ("a", "b1", "b2", "c")] == ["0", "0", "200", "300"]
    assert q.events()[-2:] == [
        {"event": "waiting", "jobId": "a", "prev": "delayed"},
        {"event": "waiting", "jobId": "b1", "prev": "delayed"},
    ]
    assert q.marker() == 0
    assert move_back(q, "delayed", 2, NOW + 200) == 0  # b2 only: c is not due
    assert q.check() == {"w": "wait", "a": "wait", "b1": "wait", "b2": "wait", "c": "delayed"}
    assert q.scores("delayed") == {"c": NOW + 300}
    assert q.job("c")["delay"] == "300"
    events = len(q.events())
    assert move_back(q, "delayed", 2, NOW + 299) == 0  # nothing to move
    assert len(q.events()) == events


def test_move_jobs_to_wait_promotes_each_job_as_promote_does(q: Queue) -> None:
    q.add_delayed("x", delay=500, opts={"lifo": True})
    q.add_delayed("y", delay=500, opts={"lifo": True})
    assert promote(q, "x") == 0
    assert move_back(q, "delayed", 1, NOW + 500) == 0
    assert q.items("wait") == ["x", "y"]  # at the head, lifo or not, as pickup promotes
    assert q.job("x") == q.job("y")
    assert [{**e, "jobId": "-"} for e in q.events()[-2:]] == [
        {"event": "waiting", "jobId": "-", "prev": "delayed"}
    ] * 2


def test_move_jobs_to_wait_promotes_to_prioritized_and_to_paused(q: Queue) -> None:
    q.add_flow(q.node("p", priority=3, delay=60_000))  # a delayed leaf with a priority
    q.add_delayed("a", delay=60_000)
    q.pause()
    assert move_back(q, "delayed", 10, NOW + 60_000) == 0
    assert q.check() == {"p": "prioritized", "a": "paused"}
    assert q.job("p")["delay"] == q.job("a")["delay"] == "0"
    assert q.events()[-2:] == [
        {"event": "paused", "jobId": "a", "prev": "delayed"},
        {"event": "waiting", "jobId": "p", "prev": "delayed"},
    ]
    assert q.marker() is None  # paused: no worker is woken


def test_promote_jobs_calls_until_0_with_the_largest_timestamp(q: Queue) -> None:
    """BullMQ's Queue.promoteJobs: the delayed set, every job due, until the answer is 0."""
    for job_id, delay in [("e", 5), ("d", 4), ("c", 3), ("b", 2), ("a", 1)]:
        q.add_delayed(job_id, delay=delay * 60_000)
    calls = [move_back(q, "delayed", 2, 2**53 - 1)]
    while calls[-1]:
        calls.append(move_back(q, "delayed", 2, 2**53 - 1))
    assert calls == [1, 1, 0]
    assert q.scores("delayed") == {}
    assert q.items("wait") == ["a", "b", "c", "d", "e"]  # earliest run-at first
    assert q.take_id() == "a"


# -- opts.lifo --------------------------------------------------------------------------------


def test_a_lifo_add_runs_next_and_only_json_true_sets_it(q: Queue) -> None:
    q.add("a")
    q.add("b", opts={"lifo": True})
    q.add("c", opts={"lifo": "true"})  # not JSON true: last in line
    q.add_flow(q.node("f", opts={"lifo": True}))
    assert q.items("wait") == ["f", "b", "a", "c"]
    q.pause()
    q.add("p", opts={"lifo": True})
    assert q.items("paused") == ["p", "f", "b", "a", "c"]
    q.add_prioritized("r", priority=1, opts={"lifo": True})  # a priority orders it instead
    assert q.check()["r"] == "prioritized"


def test_a_lifo_job_promoted_from_delayed_goes_last_in_line(q: Queue) -> None:
    q.add_delayed("d", delay=10, opts={"lifo": True})
    q.add_delayed("e", delay=60_000, opts={"lifo": True})
    q.add("a")
    assert promote(q, "e") == 0
    assert q.take_id(now=NOW + 10, concurrency=1) == "a"
    assert q.items("wait") == ["e", "d"]  # promoted as any due job, as BullMQ promotes it


def test_a_lifo_job_run_again_goes_next(q: Queue) -> None:
    q.add("l", opts={"lifo": True})
    assert q.take_id() == "l"
    q.add("a")
    assert retry_job(q, "l") == "wait"
    assert q.items("wait") == ["l", "a"]
    assert q.take_id() == "l"
    q.complete("l")
    assert reprocess(q, "l", "completed") == "wait"
    assert q.items("wait") == ["l", "a"]
    assert q.take_id() == "l"
    q.fail("l")
    assert move_back(q, "failed", 10, NOW) == 0
    assert q.items("wait") == ["l", "a"]


def test_clocks_not_in_decimal_digits_are_refused_before_any_write(q: Queue) -> None:
    """retryJob-12's `now` and moveJobsToWait-8's `timestamp` go to Redis as they came."""
    finished(q, "failed", "f")
    q.add("a")
    assert q.take_id() == "a"
    with pytest.raises(LuaError, match="now must be an integer from 0 to 2\\^53 - 1 in decimal"):
        q.raw(
            "retryJob",
            list(g.retry_job_keys(q.name, "a")),
            ["a", q.token_of("a"), "5 ", "r", ""],
        )
    call_keys = list(g.move_jobs_to_wait_keys(q.name, state="failed"))
    with pytest.raises(LuaError, match="timestamp must be an integer from 0 to 2\\^53 - 1"):
        q.raw("moveJobsToWait", call_keys, ["failed", "5", "1e13"])
    assert q.check() == {"f": "failed", "a": "active"}
    assert q.lock("a") == q.token_of("a")
