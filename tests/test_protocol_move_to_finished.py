"""moveToFinished-14: the lock check, completion, failure and retry, retention, parents released by
their children, the event stream, fetch-next.

Each scenario runs through the `Queue` harness, on a single server and on a cluster; what the
harness checks after every step, and what the markers in these tests mean:
tests/support/queue_harness.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import redis

from echomq_scripts import generated as g
from echomq_scripts.generated import errors
from echomq_scripts.runtime import LuaError
from tests.support.invariants import NOW, text
from tests.support.queue_harness import LOCK_MS, OTHER, RETRY, TOKEN, Queue, run_to


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
    with pytest.raises(
        LuaError, match="outcome must be 'completed' or 'failed', got 'done'"
    ) as refused:
        q.raw("moveToFinished", keys, args)
    assert refused.value.source == "includes/enumArg.lua"
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
    # Second attempt: 1000 * 2^1. The draw counts only for a backoff with a jitter.
    assert q.take_id(now=NOW + 1010) == "a"
    assert q.fail("a", "second", now=NOW + 2000, jitter=0.5) == ("delayed", "", {}, 0)
    assert q.job("a")["delay"] == "2000"
    assert q.scores("delayed") == {"a": NOW + 2000 + 2000}
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
    q.add_flow(q.node("P", q.node("c1"), q.node("c2")))
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
    q.add_flow(
        q.node("P", q.node("c1", opts={"attempts": 2, "backoff": {"delay": 1000}}), q.node("c2"))
    )
    assert run_to(q, "failed", "c1", NOW) == "delayed"
    assert run_to(q, "failed", "c2", NOW) == "failed"
    assert q.check() == {"P": "waiting-children", "c1": "delayed", "c2": "failed"}
    assert q.r.exists(q.key("P:processed")) == 0
    assert run_to(q, "completed", "c1", NOW + 1000) == "completed"
    assert q.check() == {"P": "waiting-children", "c1": "completed", "c2": "failed"}


def test_nested_parents_release_bottom_up_and_removed_children_still_count(q: Queue) -> None:
    q.add_flow(
        q.node(
            "top", q.node("mid", q.node("leaf", opts={"removeOnComplete": True})), q.node("side")
        )
    )
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
    q.add_flow(q.node("P", q.node("c")))
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


def retried_delays(q: Queue, backoff: object, jitter: float = 0.0, custom: int = 0) -> list[int]:
    """The delays of three retries of one job with this backoff option."""
    q.add("b", opts={"attempts": 4, "backoff": backoff})
    delays = []
    now = NOW
    for _ in range(3):
        assert q.take_id(now=now) == "b"
        went = q.fail("b", now=now, jitter=jitter, backoff_delay=custom)
        delays.append(int(q.job("b")["delay"]))
        if delays[-1]:
            assert went[0] == "delayed"
            assert q.scores("delayed") == {"b": now + delays[-1]}
        else:  # no delay: ready again at once
            assert went[0] == "waiting"
            assert q.items("wait") == ["b"]
        now += delays[-1]
    return delays


@pytest.mark.parametrize(
    ("backoff", "jitter", "delays"),
    [
        ({"type": "exponential", "delay": 100}, 0.9, [100, 200, 400]),
        ({"delay": 100}, 0.0, [100, 200, 400]),  # no type: exponential
        ({"type": "fixed", "delay": 100}, 0.9, [100, 100, 100]),
        (250, 0.5, [250, 250, 250]),  # a plain number: fixed
        # A jitter draws from [d * (1 - jitter), d]: here d * 0.5 + d * 0.5 * 0.5.
        ({"type": "fixed", "delay": 100, "jitter": 0.5}, 0.5, [75, 75, 75]),
        ({"type": "exponential", "delay": 100, "jitter": 1}, 0.25, [25, 50, 100]),
        ("soon", 0.0, [0, 0, 0]),  # not a backoff: no delay
    ],
)
def test_each_backoff_type_gives_its_delays(
    q: Queue, backoff: object, jitter: float, delays: list[int]
) -> None:
    assert retried_delays(q, backoff, jitter) == delays


def test_a_backoff_of_another_type_takes_the_delay_the_caller_computed(q: Queue) -> None:
    assert retried_delays(q, {"type": "myStrategy", "delay": 5}, 0.5, custom=1234) == [1234] * 3


def test_every_finish_is_counted_and_a_series_is_kept_per_minute(q: Queue) -> None:
    minute = 60_000
    start = (NOW // minute + 1) * minute  # the start of a minute
    # Two jobs finish in the first minute, none in the second and third, one in the fourth.
    for n, at in enumerate([start + 5, start + 59_999, start + 3 * minute + 1, start + 4 * minute]):
        job_id = f"m{n}"
        q.add(job_id, now=at)
        assert q.take_id(now=at) == job_id
        q.complete(job_id, now=at, max_metrics=3)
    count, last, then, points, total = g.get_metrics(
        q.r, queue=q.name, outcome="completed", start=0, stop=-1
    )
    # The first minute's two, its two quiet minutes, the fourth minute's one; the last job's
    # minute is not over. Three points are kept, newest first: the first minute's fell off.
    assert (count, last, then) == (4, start + 4 * minute, 3)
    assert (points, total) == ([1, 0, 0], 3)
    assert g.get_metrics(q.r, queue=q.name, outcome="completed", start=1, stop=1)[3] == [0]
    assert g.get_metrics(q.r, queue=q.name, outcome="failed", start=0, stop=-1) == (0, 0, 0, [], 0)


def test_without_a_series_only_the_count_goes_up(q: Queue) -> None:
    q.add("a")
    assert q.take_id() == "a"
    q.fail("a")
    assert q.hash("metrics:failed") == {"count": "1"}
    assert not q.r.exists(q.key("metrics:failed:data"))


def test_get_metrics_refuses_keys_of_another_series(r: redis.Redis) -> None:
    keys = list(g.get_metrics_keys("q", "completed"))
    with pytest.raises(LuaError, match="is not the queue's metrics:failed key"):
        g.get_metrics(r, keys=g.GetMetricsKeys(*keys), outcome="failed", start=0, stop=-1)


def test_a_retention_limit_bounds_the_jobs_one_finish_removes(q: Queue) -> None:
    def completed() -> list[str]:
        scores = q.scores("completed")
        return sorted(scores, key=lambda j: scores[j])

    # Five completed jobs kept, then a rule that keeps none, at most two removed a finish.
    for n in range(5):
        q.add(f"old{n}")
        run_to(q, "completed", f"old{n}", NOW + n)
    rule = {"count": 0, "limit": 2}
    for n, left in enumerate([4, 3, 2]):
        q.add(f"new{n}", opts={"removeOnComplete": rule})
        run_to(q, "completed", f"new{n}", NOW + 10 + n)
        # Two of the oldest go a finish, not the whole excess.
        assert len(completed()) == left
    assert completed() == ["new1", "new2"]
    # By age, oldest first, within the same limit: the two new ones go, the aged ones stay.
    for n in range(3):
        q.add(f"aged{n}")
        run_to(q, "completed", f"aged{n}", NOW + 20 + n)
    q.add("last", opts={"removeOnComplete": {"age": 0, "limit": 2}})
    run_to(q, "completed", "last", NOW + 100)
    assert completed() == ["aged0", "aged1", "aged2", "last"]


def test_a_retry_without_a_delay_is_ready_again_at_once(q: Queue) -> None:
    q.add("a", opts={"attempts": 2})
    q.add_prioritized("p", opts={"attempts": 2}, priority=3)
    q.add("b")
    assert q.take_id() == "a"
    # Retried with no backoff: back to wait, behind what was waiting, not through delayed.
    assert q.fail("a", fetch_next=True)[:2] == ("waiting", "b")
    assert q.check() == {"a": "wait", "b": "active", "p": "prioritized"}
    assert q.items("wait") == ["a"]
    assert q.last_event() == {"event": "waiting", "jobId": "a", "prev": "active"}
    assert q.job("a")["atm"] == "1"
    assert q.marker() == 0
    # A job with a priority goes back to prioritized; on a paused queue a job goes to paused.
    assert q.take_id() == "a"
    assert q.take_id() == "p"
    assert q.fail("p")[0] == "waiting"
    assert q.state("p") == "prioritized"
    q.pause()
    assert q.fail("a", reason="again")[0] == "failed"  # its last attempt
    q.add("c", opts={"attempts": 2})
    q.resume()
    assert q.take_id() == "c"
    q.pause()
    assert q.fail("c")[0] == "waiting"
    assert q.state("c") == "paused"
    assert q.last_event() == {"event": "paused", "jobId": "c", "prev": "active"}
    # Re-sent, the finish answers the same and changes nothing.
    assert q.fail("c", token=q.token_of("c"))[0] == "waiting"
    assert q.state("c") == "paused"
