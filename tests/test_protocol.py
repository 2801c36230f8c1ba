"""The protocol's scripts driven through their generated wrappers, state by state.

Every scenario checks the one-state invariant (tests/support/invariants.py) after every step: the
`Queue` harness (tests/support/queue_harness.py) runs each wrapper and then the invariant, and also
checks that getCounts-8 and getJobState-8 tell the same story as the invariant's own reading of
the eight keys. The `q` fixture runs each scenario on a single server and on a Redis Cluster.

Tests marked "Regression (c0b1651)" state documented behaviour that commit c0b1651 broke and
21a7ef3 fixed; they fail on c0b1651. A script found to break its header or the protocol's
documents gets a test of the documented behaviour, marked xfail(strict=True) with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

import pytest
import redis
import redis.cluster

from echomq_scripts import generated as g
from echomq_scripts.generated import errors
from echomq_scripts.runtime import LuaError
from tests.support.invariants import (
    NOW,
    STATES,
    add_delayed,
    add_parent,
    add_prioritized,
    add_standard,
    text,
)
from tests.support.queue_harness import LOCK_MS, OTHER, RETRY, TOKEN, Queue, run_to

# == adding =================================================================================


def test_a_standard_job_goes_to_wait_with_its_fields_and_a_waiting_event(q: Queue) -> None:
    job_id = q.add("a", name="email", data='{"to":"x"}', opts={"attempts": 2})
    assert q.check() == {"a": "wait"}
    assert q.job("a") == {
        "name": "email",
        "data": '{"to":"x"}',
        "opts": '{"attempts": 2}',
        "timestamp": str(NOW),
        "atm": "0",
        "stc": "0",
    }
    assert job_id == "a"
    assert q.events() == [{"event": "waiting", "jobId": "a", "name": "email"}]
    assert q.marker() == 0


def test_a_standard_job_goes_to_paused_while_the_queue_is_paused(q: Queue) -> None:
    assert q.pause() == 1
    q.add("a")
    assert q.check() == {"a": "paused"}
    assert q.last_event() == {"event": "paused", "jobId": "a", "name": "job"}


def test_a_delayed_job_is_scored_by_its_run_at_with_a_delayed_event(q: Queue) -> None:
    q.add_delayed("d", delay=5000)
    assert q.check() == {"d": "delayed"}
    assert q.scores("delayed") == {"d": NOW + 5000}
    assert q.job("d")["delay"] == "5000"
    assert q.events() == [
        {"event": "delayed", "jobId": "d", "delay": "5000", "runAt": str(NOW + 5000)}
    ]
    assert q.marker() == NOW + 5000


def test_a_prioritized_job_goes_to_prioritized_with_a_prioritized_event(q: Queue) -> None:
    q.add_prioritized("p", priority=7)
    assert q.check() == {"p": "prioritized"}
    assert q.job("p")["priority"] == "7"
    assert q.events() == [{"event": "prioritized", "jobId": "p", "priority": "7"}]
    # Added while paused, a prioritized job still waits in prioritized: the pause is kept by
    # pickup, which takes nothing from a paused queue.
    q.pause()
    q.add_prioritized("p2", priority=1)
    assert q.check() == {"p": "prioritized", "p2": "prioritized"}


def test_a_parent_job_goes_to_waiting_children_with_its_event(q: Queue) -> None:
    q.add_parent("P")
    assert q.check() == {"P": "waiting-children"}
    assert q.scores("waiting-children") == {"P": NOW}
    assert q.events() == [{"event": "waiting-children", "jobId": "P"}]


@pytest.mark.parametrize("kind", ["standard", "delayed", "prioritized", "parent"])
def test_an_existing_custom_id_adds_nothing_and_answers_it_with_0(q: Queue, kind: str) -> None:
    q.add("x", name="first", data='{"n":1}')
    before_job, before_events = q.job("x"), q.events()
    adders = {
        "standard": lambda: add_standard(q.r, q.name, job_id="x", name="second"),
        "delayed": lambda: add_delayed(q.r, q.name, job_id="x", name="second"),
        "prioritized": lambda: add_prioritized(q.r, q.name, job_id="x", name="second"),
        "parent": lambda: add_parent(q.r, q.name, job_id="x", name="second"),
    }
    assert adders[kind]() == ("x", 0)
    assert q.check() == {"x": "wait"}
    assert q.job("x") == before_job
    assert q.events() == before_events


def test_generated_ids_count_up_across_every_add_script(q: Queue) -> None:
    assert q.add() == "1"
    assert q.add_delayed() == "2"
    assert q.add_prioritized() == "3"
    assert q.add_parent() == "4"
    assert q.add() == "5"
    assert q.check() == {
        "1": "wait",
        "2": "delayed",
        "3": "prioritized",
        "4": "waiting-children",
        "5": "wait",
    }


def test_a_generated_id_never_takes_an_existing_custom_id(q: Queue) -> None:
    # Regression (c0b1651): the second generated id overwrote job '2' and pushed it to wait twice.
    assert q.add() == "1"
    q.add("2", name="custom")
    q.add("3", name="custom")
    assert q.add(name="generated") == "4"
    assert (q.job("2")["name"], q.job("3")["name"]) == ("custom", "custom")
    assert q.items("wait") == ["1", "2", "3", "4"]


def test_a_held_dedup_id_answers_its_holder_whatever_the_add_script(q: Queue) -> None:
    holder = q.add("h", dedup_id="mail-42")
    assert q.r.get(q.key("de:mail-42")) == b"h"
    assert q.job(holder)["deid"] == "mail-42"
    assert add_standard(q.r, q.name, job_id="other", dedup_id="mail-42") == ("h", 0)
    assert add_standard(q.r, q.name, dedup_id="mail-42") == ("h", 0)
    assert add_delayed(q.r, q.name, dedup_id="mail-42") == ("h", 0)
    assert add_prioritized(q.r, q.name, dedup_id="mail-42") == ("h", 0)
    assert add_parent(q.r, q.name, dedup_id="mail-42") == ("h", 0)
    assert q.check() == {"h": "wait"}
    assert len(q.events()) == 1


@pytest.mark.parametrize("outcome", ["completed", "failed"])
def test_a_dedup_id_is_released_when_its_job_finishes_not_when_it_retries(
    q: Queue, outcome: str
) -> None:
    q.add("h", dedup_id="d", opts={"attempts": 2, "backoff": {"delay": 10}})
    assert run_to(q, "failed", "h", NOW) == "delayed"
    assert add_standard(q.r, q.name, dedup_id="d") == ("h", 0)  # still held while retrying
    assert run_to(q, outcome, "h", NOW + 10) == outcome
    assert q.r.exists(q.key("de:d")) == 0
    assert add_standard(q.r, q.name, job_id="n", dedup_id="d") == ("n", 1)
    assert q.r.get(q.key("de:d")) == b"n"
    assert q.check() == {"h": outcome, "n": "wait"}


@pytest.mark.parametrize("kind", ["standard", "delayed", "prioritized", "parent"])
@pytest.mark.parametrize("job_id", ["c", ""])
def test_a_missing_parent_raises_and_adds_nothing(q: Queue, kind: str, job_id: str) -> None:
    adders = {
        "standard": add_standard,
        "delayed": add_delayed,
        "prioritized": add_prioritized,
        "parent": add_parent,
    }
    with pytest.raises(errors.ParentJobNotExist) as failure:
        adders[kind](q.r, q.name, job_id=job_id, parent_id="nope", dedup_id="d")
    assert failure.value.code == -5
    assert q.check() == {}
    assert q.r.exists(q.key("de:d"), q.key("nope:dependencies"), q.key("c")) == 0
    assert q.events() == []


def test_a_child_names_its_parent_and_the_parent_counts_it(q: Queue) -> None:
    q.add_parent("P")
    q.add("c1", parent_id="P")
    q.add_delayed("c2", parent_id="P")
    assert q.job("c1")["parentKey"] == q.key("P")
    deps = {text(m) for m in q.r.smembers(q.key("P:dependencies"))}
    assert deps == {q.key("c1"), q.key("c2")}
    assert q.check() == {"P": "waiting-children", "c1": "wait", "c2": "delayed"}


@pytest.mark.parametrize("priority", ["0", "-1", "2097152", "1.5", "high"])
def test_a_priority_out_of_range_is_refused_before_any_write(q: Queue, priority: str) -> None:
    # Regression (c0b1651): priority 0 wrote the hash, then failed, leaving the job in no state.
    # Sent as another runtime would: the wrapper refuses these before sending (test_arguments).
    args = ["p", "job", "{}", "{}", str(NOW), "d", "", priority]
    with pytest.raises(LuaError, match="priority must be an integer from 1 to 2097151"):
        q.raw("addPrioritizedJob", g.add_prioritized_job_keys(q.name), args)
    assert q.check() == {}
    assert q.r.exists(q.key("p"), q.key("de:d"), q.key("id"), q.key("pc")) == 0
    assert q.events() == []
    q.add_prioritized("top", priority=2_097_151)
    q.add_prioritized("first", priority=1)
    assert [q.take_id(), q.take_id()] == ["first", "top"]


@pytest.mark.parametrize("opts", ["not json", "3", "null", "true", '"text"', "[1]"])
@pytest.mark.parametrize("kind", ["standard", "delayed", "prioritized", "parent"])
def test_options_that_are_not_a_json_object_are_refused_before_any_write(
    q: Queue, kind: str, opts: str
) -> None:
    # Regression (c0b1651): such options were stored, and moveToFinished-14 then failed on them
    # after taking the job out of active, leaving it in no state.
    calls = {
        "standard": ("addStandardJob", g.add_standard_job_keys(q.name), []),
        "delayed": ("addDelayedJob", g.add_delayed_job_keys(q.name), ["1000"]),
        "prioritized": ("addPrioritizedJob", g.add_prioritized_job_keys(q.name), ["1"]),
        "parent": ("addParentJob", g.add_parent_job_keys(q.name), []),
    }
    name, keys, extra = calls[kind]
    with pytest.raises(LuaError, match="opts must be a JSON object"):
        q.raw(name, keys, ["", "job", "{}", opts, str(NOW), "d", "", *extra])
    assert q.check() == {}
    assert q.r.exists(q.key("id"), q.key("de:d")) == 0


# == moveToActive ===========================================================================


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
    q.add("a", name="n", data='{"x":1}')
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


# == extendLock =============================================================================


def test_extend_lock_codes_and_heartbeat(q: Queue) -> None:
    q.add("a")
    with pytest.raises(errors.JobLockNotExist):
        q.extend("a")
    q.take_id(token="t-1", lock_ms=1000)
    with pytest.raises(errors.JobLockMismatch):
        q.extend("a", token=OTHER)
    assert q.lock("a") == "t-1"
    assert q.stalled_check() == ([], [])
    assert q.stalled() == {"a"}
    assert q.extend("a", duration=60_000) == 1
    assert 1000 < q.pttl("a") <= 60_000
    # The token's record lives on with the lock.
    assert 1000 < q.r.pttl(q.key("token:t-1")) <= 60_000
    assert q.stalled() == set()
    assert q.check() == {"a": "active"}


# == moveToFinished =========================================================================


def test_move_to_finished_checks_the_lock_before_anything_else(q: Queue) -> None:
    q.add("w")
    # A waiting job with no lock: -2, not -3.
    with pytest.raises(errors.JobLockNotExist):
        q.complete("w")
    # A lock held by another token: -6, even for a job that does not exist.
    q.r.set(q.key("ghost:lock"), OTHER)
    q.check()
    with pytest.raises(errors.JobLockMismatch):
        q.complete("ghost")
    # The lock matches but the job hash is gone (removed while active): -1.
    q.r.set(q.key("ghost:lock"), TOKEN)
    q.check()
    with pytest.raises(errors.JobNotExist):
        q.complete("ghost")
    with pytest.raises(errors.JobNotExist):
        q.fail("ghost")
    # The lock matches, the job exists, but it is not active: -3.
    q.r.set(q.key("w:lock"), TOKEN)
    q.check()
    with pytest.raises(errors.JobNotInState):
        q.complete("w")
    assert q.check() == {"w": "wait"}
    assert q.lock("w") == TOKEN
    assert q.metric("completed") == 0


def test_an_unknown_outcome_is_refused_and_changes_nothing(q: Queue) -> None:
    q.add("a")
    q.take_id()
    token = q.token_of("a")
    args = ["a", token, str(NOW), "done", "1", "", "0", "0", str(LOCK_MS), "0", "0", "0"]
    keys = g.move_to_finished_keys(q.name, "completed")
    with pytest.raises(redis.ResponseError, match="outcome must be 'completed' or 'failed'"):
        q.raw("moveToFinished", keys, args)
    assert q.check() == {"a": "active"}
    assert q.lock("a") == token


def test_completion_stores_the_value_scores_by_now_and_counts(q: Queue) -> None:
    q.add("a")
    q.add("b")
    q.take_id()
    assert q.stalled_check() == ([], [])  # marks a
    assert q.complete("a", '{"sum":3}', now=NOW + 50) == ("completed", "", {}, 0)
    assert q.check() == {"a": "completed", "b": "wait"}
    job = q.job("a")
    assert (job["returnvalue"], job["finishedOn"], job["atm"]) == ('{"sum":3}', str(NOW + 50), "1")
    assert "failedReason" not in job
    assert q.scores("completed") == {"a": NOW + 50}
    assert q.lock("a") is None
    assert q.stalled() == set()
    assert q.metric("completed") == 1
    assert q.last_event() == {"event": "completed", "jobId": "a", "prev": "active"}
    run_to(q, "completed", "b", NOW + 60)
    assert q.metric("completed") == 2
    assert q.metric("failed") == 0


def test_a_failure_with_attempts_left_is_retried_with_exponential_backoff(q: Queue) -> None:
    q.add("a", opts=RETRY)
    assert q.take_id() == "a"
    assert q.fail("a", "first", now=NOW + 10) == ("delayed", "", {}, 0)
    assert q.check() == {"a": "delayed"}
    job = q.job("a")
    assert (job["failedReason"], job["stacktrace"]) == ("first", "Error: boom\n  at work")
    assert (job["atm"], job["delay"]) == ("1", "1000")
    assert "finishedOn" not in job
    assert q.scores("delayed") == {"a": NOW + 10 + 1000}
    assert q.lock("a") is None
    assert q.metric("failed") == 0
    assert q.last_event() == {"event": "delayed", "jobId": "a", "delay": "1000", "prev": "active"}
    # Second attempt: 1000 * 2^1, plus half of it as jitter.
    assert q.take_id(now=NOW + 1010) == "a"
    assert q.fail("a", "second", now=NOW + 2000, jitter=0.5) == ("delayed", "", {}, 0)
    assert q.job("a")["delay"] == "3000"
    assert q.scores("delayed") == {"a": NOW + 2000 + 3000}
    # The third failure is the last attempt: terminal.
    assert q.take_id(now=NOW + 5000) == "a"
    assert q.fail("a", "third", now=NOW + 6000) == ("failed", "", {}, 0)
    assert q.check() == {"a": "failed"}
    assert q.job("a")["atm"] == "3"
    assert q.metric("failed") == 1


def test_a_terminal_failure_stores_the_reason_and_trace(q: Queue) -> None:
    q.add("a")
    q.take_id()
    reply = q.fail("a", "it broke", now=NOW + 5, stacktrace="Traceback ...")
    assert reply == ("failed", "", {}, 0)
    assert q.check() == {"a": "failed"}
    job = q.job("a")
    assert (job["failedReason"], job["stacktrace"]) == ("it broke", "Traceback ...")
    assert (job["finishedOn"], job["atm"]) == (str(NOW + 5), "1")
    assert "returnvalue" not in job
    assert q.scores("failed") == {"a": NOW + 5}
    assert q.metric("failed") == 1
    assert q.metric("completed") == 0
    assert q.lock("a") is None
    assert q.last_event() == {"event": "failed", "jobId": "a", "prev": "active"}


RULES = [("completed", "removeOnComplete"), ("failed", "removeOnFail")]


@pytest.mark.parametrize(("outcome", "option"), RULES)
def test_retention_true_removes_the_finished_job(q: Queue, outcome: str, option: str) -> None:
    q.add("keep")
    q.add("gone", opts={option: True})
    run_to(q, outcome, "keep", NOW + 1)
    assert run_to(q, outcome, "gone", NOW + 2) == outcome
    assert q.check() == {"keep": outcome}
    assert q.r.exists(q.key("gone"), q.key("gone:lock")) == 0
    assert q.metric(outcome) == 2
    assert q.last_event()["event"] == outcome


@pytest.mark.parametrize(("outcome", "option"), RULES)
def test_retention_n_keeps_the_newest_n(q: Queue, outcome: str, option: str) -> None:
    for job_id in ("j1", "j2", "j3", "j4"):
        q.add(job_id, opts={option: 2})
    run_to(q, outcome, "j1", NOW + 1)
    run_to(q, outcome, "j2", NOW + 2)
    assert q.check() == {"j1": outcome, "j2": outcome, "j3": "wait", "j4": "wait"}
    run_to(q, outcome, "j3", NOW + 3)
    assert q.check() == {"j2": outcome, "j3": outcome, "j4": "wait"}
    run_to(q, outcome, "j4", NOW + 4)
    assert q.check() == {"j3": outcome, "j4": outcome}
    assert q.r.exists(q.key("j1"), q.key("j2")) == 0


@pytest.mark.parametrize(("outcome", "option"), RULES)
def test_retention_age_and_count(q: Queue, outcome: str, option: str) -> None:
    rule = {option: {"age": 10, "count": 3}}
    for job_id in ("j1", "j2", "j3", "j4", "j5", "j6"):
        q.add(job_id, opts=rule)
    run_to(q, outcome, "j1", NOW)
    run_to(q, outcome, "j2", NOW + 1000)
    assert set(q.scores(outcome)) == {"j1", "j2"}
    # 20 s later, both are older than 10 s: dropped by age.
    run_to(q, outcome, "j3", NOW + 20_000)
    assert q.scores(outcome) == {"j3": NOW + 20_000}
    # Within the age, the count keeps the newest 3.
    run_to(q, outcome, "j4", NOW + 20_001)
    run_to(q, outcome, "j5", NOW + 20_002)
    run_to(q, outcome, "j6", NOW + 20_003)
    assert q.check() == {"j4": outcome, "j5": outcome, "j6": outcome}
    assert q.r.exists(q.key("j1"), q.key("j2"), q.key("j3")) == 0


@pytest.mark.parametrize(("outcome", "option"), RULES)
def test_retention_age_alone(q: Queue, outcome: str, option: str) -> None:
    for job_id in ("j1", "j2", "j3"):
        q.add(job_id, opts={option: {"age": 5}})
    run_to(q, outcome, "j1", NOW)
    run_to(q, outcome, "j2", NOW + 3000)
    run_to(q, outcome, "j3", NOW + 6000)  # cut-off NOW + 1000: j1 goes
    assert q.check() == {"j2": outcome, "j3": outcome}


@pytest.mark.parametrize(
    "opts",
    [
        {"removeOnFail": True},
        {"removeOnComplete": False, "removeOnFail": 0},
        {"removeOnComplete": None, "removeOnFail": True},
    ],
)
def test_remove_on_fail_does_not_apply_to_completed_jobs(
    q: Queue, opts: Mapping[str, object]
) -> None:
    # Regression (c0b1651): `outcome == "completed" and opts.removeOnComplete or opts.removeOnFail`
    # gave removeOnFail to a completion without removeOnComplete.
    q.add("a", opts=opts)
    assert run_to(q, "completed", "a", NOW) == "completed"
    assert q.check() == {"a": "completed"}
    assert q.job("a")["returnvalue"] == '"done"'


@pytest.mark.parametrize(("outcome", "option"), RULES)
def test_a_null_retention_rule_keeps_the_job(q: Queue, outcome: str, option: str) -> None:
    # Regression (c0b1651): a null rule raised a Lua error after the job had finished.
    q.add("a", opts={option: None})
    assert run_to(q, outcome, "a", NOW) == outcome
    assert q.check() == {"a": outcome}
    assert q.metric(outcome) == 1


@pytest.mark.parametrize("stored", ["not json", "3", "null"])
@pytest.mark.parametrize("outcome", ["completed", "failed"])
def test_stored_options_that_are_not_an_object_read_as_none(
    q: Queue, stored: str, outcome: str
) -> None:
    # A hash written before the add scripts refused such options (or by another runtime).
    q.add("a")
    q.r.hset(q.key("a"), "opts", stored)
    q.check()
    assert run_to(q, outcome, "a", NOW) == outcome  # attempts 1: no retry, no retention
    assert q.check() == {"a": outcome}


def test_the_last_child_completing_moves_its_parent_to_wait(q: Queue) -> None:
    q.add_parent("P")
    q.add("c1", parent_id="P")
    q.add("c2", parent_id="P")
    run_to(q, "completed", "c1", NOW + 1, value='"one"')
    assert q.check() == {"P": "waiting-children", "c1": "completed", "c2": "wait"}
    assert q.hash("P:processed") == {q.key("c1"): '"one"'}
    deps = {text(m) for m in q.r.smembers(q.key("P:dependencies"))}
    assert deps == {q.key("c2")}
    # The last one: the parent is ready, and fetch_next picks it up in the same call.
    assert q.take_id(now=NOW + 2) == "c2"
    state, next_id, fields, _ = q.complete("c2", '"two"', now=NOW + 2, fetch_next=True)
    assert (state, next_id) == ("completed", "P")
    assert fields["processedOn"] == str(NOW + 2)
    assert q.check() == {"P": "active", "c1": "completed", "c2": "completed"}
    assert q.hash("P:processed") == {q.key("c1"): '"one"', q.key("c2"): '"two"'}
    assert q.r.exists(q.key("P:dependencies")) == 0
    waiting = [e for e in q.events() if e["jobId"] == "P" and e["event"] == "waiting"]
    assert waiting == [{"event": "waiting", "jobId": "P", "prev": "waiting-children"}]
    q.complete("P", now=NOW + 3)
    assert q.check() == {"P": "completed", "c1": "completed", "c2": "completed"}


def test_a_failed_or_retried_child_does_not_release_its_parent(q: Queue) -> None:
    q.add_parent("P")
    q.add("c1", parent_id="P", opts={"attempts": 2, "backoff": {"delay": 1000}})
    q.add("c2", parent_id="P")
    assert run_to(q, "failed", "c1", NOW) == "delayed"
    assert run_to(q, "failed", "c2", NOW) == "failed"
    assert q.check() == {"P": "waiting-children", "c1": "delayed", "c2": "failed"}
    assert q.r.exists(q.key("P:processed")) == 0
    assert run_to(q, "completed", "c1", NOW + 1000) == "completed"
    assert q.check() == {"P": "waiting-children", "c1": "completed", "c2": "failed"}


def test_nested_parents_release_bottom_up_and_removed_children_still_count(q: Queue) -> None:
    q.add_parent("top")
    q.add_parent("mid", parent_id="top")
    q.add("leaf", parent_id="mid", opts={"removeOnComplete": True})
    q.add("side", parent_id="top")
    run_to(q, "completed", "leaf", NOW + 1, value='"L"')
    # The leaf is gone (its removeOnComplete), its value stays with its parent.
    assert q.check() == {"top": "waiting-children", "mid": "wait", "side": "wait"}
    assert q.hash("mid:processed") == {q.key("leaf"): '"L"'}
    run_to(q, "completed", "side", NOW + 2)
    assert q.check() == {"top": "waiting-children", "mid": "wait", "side": "completed"}
    run_to(q, "completed", "mid", NOW + 3, value='"M"')
    assert q.check() == {"top": "wait", "mid": "completed", "side": "completed"}
    assert q.hash("top:processed") == {q.key("side"): '"done"', q.key("mid"): '"M"'}


def test_a_parent_released_while_paused_goes_to_paused(q: Queue) -> None:
    q.add_parent("P")
    q.add("c", parent_id="P")
    q.take_id()
    q.pause()
    q.complete("c")
    assert q.check() == {"P": "paused", "c": "completed"}
    q.resume()
    assert q.check() == {"P": "wait", "c": "completed"}


def test_events_stay_within_max_events_and_one_stream_node(q: Queue) -> None:
    setting = q.r.config_get("stream-node-max-entries")["stream-node-max-entries"]
    node = int(str(setting))
    q.set_meta("max-events", "5")
    pipe = q.r.pipeline(transaction=False)
    for _ in range(2 * node + 10):  # a stream that has run for a while
        pipe.xadd(q.key("events"), {"event": "earlier", "jobId": "-"})
    pipe.execute()
    for index in range(3):
        q.add(f"j{index}")
    # Approximate trimming drops whole nodes: at least max-events stay, less than a node more.
    assert 5 <= len(q.events()) < 5 + node
    run_to(q, "completed", "j0", NOW)
    q.take_id()
    q.complete("j1", now=NOW + 1, fetch_next=True)
    events = q.events()
    assert 5 <= len(events) < 5 + node + 1
    assert [(e["event"], e["jobId"]) for e in events[-2:]] == [
        ("completed", "j1"),
        ("active", "j2"),
    ]
    # A pickup's `active` event is appended untrimmed: the stream grows by one per pickup until
    # the next trimming append.
    for index in range(3, 3 + node):
        q.add(f"j{index}")
    before = len(q.events())
    picked = [q.take_id() for _ in range(node)]
    assert len(q.events()) == before + node
    assert [e["jobId"] for e in q.events()[-node:]] == picked
    q.complete(picked[0])
    assert 5 <= len(q.events()) < 5 + node


def test_fetch_next_picks_the_next_job_in_the_same_call(q: Queue) -> None:
    q.add("a")
    q.add("b", opts=RETRY)
    q.add_prioritized("p", priority=3)
    q.take_id(token="t-1")
    state, next_id, fields, limited = q.complete("a", now=NOW + 9, fetch_next=True, lock_ms=4000)
    assert (state, next_id, limited) == ("completed", "b", 0)
    assert fields == q.job("b")
    assert fields["processedOn"] == str(NOW + 9)
    # The token goes on to the next job; its record says which, and which job came before.
    assert q.lock("b") == "t-1"
    assert q.r.get(q.key("token:t-1")) == b"b:a:completed"
    assert 0 < q.pttl("b") <= 4000
    assert q.check() == {"a": "completed", "b": "active", "p": "prioritized"}
    # A retry still fetches the next one.
    assert q.fail("b", fetch_next=True)[:2] == ("delayed", "p")
    assert q.complete("p", fetch_next=True) == ("completed", "", {}, 0)
    assert q.check() == {"a": "completed", "b": "delayed", "p": "completed"}


def test_fetch_next_respects_the_limiter_the_cap_and_the_pause(q: Queue) -> None:
    for job_id in "abcd":
        q.add(job_id)
    limit: dict[str, Any] = {"limit_max": 1, "limit_duration": 1000}
    assert q.take_id(**limit) == "a"
    state, next_id, fields, limited_for = q.complete("a", fetch_next=True, **limit)
    assert (state, next_id, fields) == ("completed", "", {})
    assert 0 < limited_for <= 1000
    assert q.take_id() == "b"
    assert q.take_id() == "c"
    assert q.complete("b", fetch_next=True, concurrency=1) == ("completed", "", {}, 0)
    q.pause()
    assert q.complete("c", fetch_next=True) == ("completed", "", {}, 0)
    assert q.check() == {"a": "completed", "b": "completed", "c": "completed", "d": "paused"}


# == moveToDelayed ==========================================================================


def test_move_to_delayed_backs_off_exponentially_and_releases_the_lock(q: Queue) -> None:
    q.add("a")
    q.take_id()
    q.stalled_check()  # marks a
    assert q.retry("a", base=500, now=NOW + 1) == 500
    assert q.check() == {"a": "delayed"}
    assert q.scores("delayed") == {"a": NOW + 1 + 500}
    assert (q.job("a")["atm"], q.job("a")["delay"]) == ("1", "500")
    assert q.lock("a") is None
    assert q.stalled() == set()
    assert q.last_event() == {"event": "delayed", "jobId": "a", "delay": "500", "prev": "active"}
    assert q.take_id(now=NOW + 501) == "a"
    assert q.retry("a", base=500, jitter=0.25, now=NOW + 600) == 1250
    assert q.scores("delayed") == {"a": NOW + 600 + 1250}
    assert q.take_id(now=NOW + 1850) == "a"
    assert q.retry("a", base=500, jitter=0.999, now=NOW + 2000) == 3998
    assert q.job("a")["atm"] == "3"


def test_backoff_rounds_a_fraction_of_a_millisecond_down_and_wakes_a_worker(q: Queue) -> None:
    q.add("a", opts={"attempts": 3, "backoff": {"delay": 1000}})
    q.take_id()
    q.r.delete(q.key("marker"))  # idle workers took it: the retry must set it to its run-at
    # 1000 * (1 + 0.0007) = 1000.7 ms: the delay is 1000, not 1001.
    assert q.fail("a", jitter=0.0007, now=NOW)[0] == "delayed"
    assert q.job("a")["delay"] == "1000"
    assert q.scores("delayed") == {"a": NOW + 1000}
    assert q.marker() == NOW + 1000
    assert q.take_id(now=NOW + 1000) == "a"
    q.r.delete(q.key("marker"))
    # The second attempt: 333 * 2^1 = 666, plus 666 * 0.0015 = 0.999 ms, is 666.
    assert q.retry("a", base=333, jitter=0.0015, now=NOW + 2000) == 666
    assert q.scores("delayed") == {"a": NOW + 2000 + 666}
    assert q.marker() == NOW + 2000 + 666


def test_move_to_delayed_codes(q: Queue) -> None:
    q.add("w")
    with pytest.raises(errors.JobLockNotExist):
        q.retry("w", base=1)
    q.add("a")
    assert q.take_id() == "w"
    with pytest.raises(errors.JobLockMismatch):
        q.retry("w", base=1, token=OTHER)
    q.r.set(q.key("ghost:lock"), TOKEN)
    q.check()
    with pytest.raises(errors.JobNotExist):
        q.retry("ghost", base=1)
    q.r.set(q.key("a:lock"), TOKEN)
    q.check()
    with pytest.raises(errors.JobNotInState):
        q.retry("a", base=1)
    assert q.check() == {"w": "active", "a": "wait"}
    assert q.job("w")["atm"] == "0"
    assert q.lock("w") == q.token_of("w")


# == moveStalledJobsToWait ==================================================================


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


# == pause-5 ================================================================================


def test_pause_and_resume_with_jobs_in_flight(q: Queue) -> None:
    for job_id in ("x", "a", "b", "c"):
        q.add(job_id)
    assert q.take_id() == "x"
    assert q.pause() == 1
    assert q.check() == {"x": "active", "a": "paused", "b": "paused", "c": "paused"}
    assert q.items("paused") == ["a", "b", "c"]
    assert q.hash("meta") == {"paused": "1"}
    assert q.marker() is None
    assert q.last_event() == {"event": "paused", "jobId": ""}
    # The active job finishes as usual; adds go to paused, behind the others.
    assert q.extend("x") == 1
    assert q.complete("x") == ("completed", "", {}, 0)
    q.add("d")
    assert q.items("paused") == ["a", "b", "c", "d"]
    assert q.take() == ("", {}, 0)
    assert q.resume() == 1
    assert q.check() == {"x": "completed", "a": "wait", "b": "wait", "c": "wait", "d": "wait"}
    assert q.items("wait") == ["a", "b", "c", "d"]
    assert "paused" not in q.hash("meta")
    assert q.marker() == 0
    assert q.last_event() == {"event": "resumed", "jobId": ""}
    assert [q.take_id() for _ in range(5)] == ["a", "b", "c", "d", ""]


def test_pausing_twice_or_resuming_a_running_queue_changes_nothing(q: Queue) -> None:
    q.add("a")
    assert q.resume() == 0
    assert q.pause() == 1
    events = q.events()
    assert q.pause() == 0
    assert q.events() == events
    assert q.check() == {"a": "paused"}
    assert q.resume() == 1
    assert q.resume() == 0
    assert q.check() == {"a": "wait"}


def test_an_unknown_pause_action_is_refused(q: Queue) -> None:
    q.add("a")
    with pytest.raises(redis.ResponseError, match="action must be 'pause' or 'resume'"):
        q.raw("pause", g.pause_keys(q.name), ["stop"])
    assert q.check() == {"a": "wait"}
    assert q.hash("meta") == {}


def test_delayed_jobs_promoted_while_paused_go_to_paused(q: Queue) -> None:
    q.add_delayed("d", delay=100)
    q.pause()
    assert q.take(now=NOW + 100) == ("", {}, 0)
    assert q.check() == {"d": "paused"}
    assert q.last_event() == {"event": "paused", "jobId": "d", "prev": "delayed"}
    q.resume()
    assert q.take_id(now=NOW + 100) == "d"


@pytest.mark.parametrize("kind", ["prioritized", "delayed"])
def test_resume_wakes_the_workers_for_every_kind_of_pending_work(q: Queue, kind: str) -> None:
    # Regression (c0b1651): the marker, deleted by the pause, came back only when wait had jobs.
    if kind == "prioritized":
        q.add_prioritized("p")
    else:
        q.add_delayed("d", delay=5000)
    q.pause()
    assert q.marker() is None
    q.resume()
    # Idle workers block on the marker: it must be there, due no later than the work.
    marker = q.marker()
    assert marker is not None
    assert marker <= (0 if kind == "prioritized" else NOW + 5000)


# == getCounts-8 and getJobState-8 ==========================================================


def test_counts_and_states_agree_with_the_keys_in_every_state(q: Queue) -> None:
    q.add("act")
    q.add("done")
    q.add("bad")
    for job_id in ("act", "done", "bad"):
        assert q.take_id() == job_id
    q.complete("done")
    q.fail("bad")
    q.add("w")
    q.add("c")  # its parent is added later, so it stays plain
    q.add_delayed("d")
    q.add_prioritized("p")
    q.add_parent("P")
    q.add("kid", parent_id="P")
    running = {
        "act": "active",
        "done": "completed",
        "bad": "failed",
        "w": "wait",
        "c": "wait",
        "kid": "wait",
        "d": "delayed",
        "p": "prioritized",
        "P": "waiting-children",
    }
    # wait and paused never hold jobs at once: the pause moves the one into the other.
    steps: list[tuple[Literal["pause", "resume"], dict[str, str]]] = [
        ("pause", {**running, "w": "paused", "c": "paused", "kid": "paused"}),
        ("resume", running),
    ]
    for action, expected in steps:
        q.pause(action)
        states = q.check()
        assert states == expected
        assert {job_id: q.state(job_id) for job_id in states} == expected
        assert q.counts() == {
            state: sum(1 for s in expected.values() if s == state) for state in STATES
        }
        assert set(expected.values()) == set(STATES) - {"wait" if action == "pause" else "paused"}
    assert q.state("nope") == "unknown"
    assert q.counts()["wait"] == 3


# == whole lifecycles =======================================================================


def test_lifecycle_add_pick_heartbeat_complete(q: Queue) -> None:
    job_id = q.add(data='{"n":1}')
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
    q.add("a", opts=json.dumps({"removeOnComplete": rule}))
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
    jobs = [queue.add(data=f'{{"queue":"{queue.name}"}}') for queue in queues]
    taken = [queue.take_id() for queue in queues]
    assert taken == jobs
    for queue, job_id in zip(queues, jobs, strict=True):
        assert queue.extend(job_id, duration=1000) == 1
    for queue, job_id in zip(reversed(queues), reversed(jobs), strict=True):
        assert queue.complete(job_id)[0] == "completed"
    for queue, job_id in zip(queues, jobs, strict=True):
        assert queue.check() == {job_id: "completed"}
        assert queue.counts()["completed"] == 1
