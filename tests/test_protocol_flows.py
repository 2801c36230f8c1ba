"""Flows: parents and children to any depth, the four failure policies and none, by
moveToFinished-14 and by stalled recovery, moveToWaitingChildren-7, the flow reads and edits, and
the codes -4, -5, -7 and -9 raised as their exceptions (docs/protocol.md, "Flows")."""

from __future__ import annotations

from typing import Any

import pytest

from echomq_scripts import generated as g
from echomq_scripts.flows import FlowJob, add_flow
from echomq_scripts.generated import errors
from echomq_scripts.runtime import ArgumentError, LuaError
from tests.support.invariants import NOW
from tests.support.queue_harness import Queue

POLICIES = [
    "failParentOnFailure",
    "ignoreDependencyOnFailure",
    "removeDependencyOnFailure",
    "continueParentOnFailure",
    None,
]


def counts(q: Queue, job_id: str) -> dict[str, int]:
    processed, unprocessed, ignored, failed = g.get_dependency_counts(
        q.r, queue=q.name, job_id=job_id
    )
    return {
        "processed": processed,
        "unprocessed": unprocessed,
        "ignored": ignored,
        "failed": failed,
    }


def dependencies(q: Queue, job_id: str) -> tuple[Any, ...]:
    return g.get_dependencies(q.r, queue=q.name, job_id=job_id)


def take(q: Queue, job_id: str) -> None:
    """Pick up the next job, which the scenario knows is `job_id`."""
    assert q.take_id() == job_id


def run_all(q: Queue, now: int = NOW) -> list[str]:
    """Pick up and complete every ready job, each with the value "v-<id>"; the ids completed, in
    order. A job with children still pending (-4) is handed over until they are done, as a worker
    does."""
    done = []
    while job_id := q.take_id(now=now):
        try:
            q.complete(job_id, f'"v-{job_id}"', now=now)
            done.append(job_id)
        except errors.JobPendingChildren:
            moved = g.move_to_waiting_children(
                q.r, queue=q.name, job_id=job_id, token=q.token_of(job_id), now=now, child_id=""
            )
            assert moved == 1
    return done


def test_a_depth_3_flow_completes_with_every_result_readable(q: Queue) -> None:
    flow = FlowJob(
        "root",
        q.name,
        job_id="root",
        children=[
            FlowJob(
                "mid",
                q.name,
                job_id="left",
                priority=3,
                children=[
                    FlowJob("leaf", q.name, job_id="a", delay=500),
                    FlowJob("leaf", q.name, job_id="b", priority=2),
                ],
            ),
            FlowJob("mid", q.name, job_id="right", children=[FlowJob("leaf", q.name, job_id="c")]),
            FlowJob("leaf", q.name, job_id="d"),
        ],
    )
    ids = add_flow(q.r, flow, now=NOW)
    assert (ids.job_id, ids.added) == ("root", 1)
    assert [child.job_id for child in ids.children] == ["left", "right", "d"]
    assert q.check() == {
        "root": "waiting-children",
        "left": "waiting-children",
        "right": "waiting-children",
        "a": "delayed",
        "b": "prioritized",
        "c": "wait",
        "d": "wait",
    }
    assert counts(q, "root") == {"processed": 0, "unprocessed": 3, "ignored": 0, "failed": 0}
    # c and d first (wait before prioritized), then b; right is released by c and waits.
    assert run_all(q) == ["c", "d", "right", "b"]
    assert q.check()["left"] == "waiting-children"  # a is not due yet
    later = NOW + 500
    # a is promoted and runs; left, released with its priority, goes to prioritized, then root.
    assert run_all(q, later) == ["a", "left", "root"]
    assert set(q.check().values()) == {"completed"}
    key = q.key
    assert dependencies(q, "left") == (
        {key("a"): '"v-a"', key("b"): '"v-b"'},
        [],
        {},
        [],
    )
    assert dependencies(q, "root")[0] == {
        key("left"): '"v-left"',
        key("right"): '"v-right"',
        key("d"): '"v-d"',
    }
    assert counts(q, "root") == {"processed": 3, "unprocessed": 0, "ignored": 0, "failed": 0}
    released = [e for e in q.events() if e.get("prev") == "waiting-children"]
    assert [e["jobId"] for e in released] == ["right", "left", "root"]


def fail_for_good(q: Queue, job_id: str, path: str) -> None:
    """The job is picked up and fails for good: by moveToFinished-14, or as a worker that died
    twice (a stalled check with max_stalled 0 fails it at its first stall)."""
    take(q, job_id)
    if path == "finish":
        assert q.fail(job_id, "it broke")[0] == "failed"
        return
    q.stalled_check(max_stalled=0)  # marks it
    q.expire_lock(job_id)
    assert q.stalled_check(max_stalled=0) == ([], [job_id])


@pytest.mark.parametrize("path", ["finish", "stalled"])
@pytest.mark.parametrize("policy", POLICIES)
def test_a_child_failing_for_good_acts_on_its_parent_by_its_policy(
    q: Queue, policy: str | None, path: str
) -> None:
    """root <- mid (which fails its own parent on failure) <- bad (the policy), good."""
    bad_opts = {policy: True} if policy else {}
    add_flow(
        q.r,
        FlowJob(
            "root",
            q.name,
            job_id="root",
            children=[
                FlowJob(
                    "mid",
                    q.name,
                    job_id="mid",
                    opts={"failParentOnFailure": True},
                    children=[
                        FlowJob("bad", q.name, job_id="bad", opts=bad_opts),
                        FlowJob("good", q.name, job_id="good", delay=10),
                    ],
                ),
            ],
        ),
        now=NOW,
    )
    fail_for_good(q, "bad", path)
    reason = "it broke" if path == "finish" else "job stalled more than allowable limit"
    states = q.check()
    after_failure = counts(q, "mid")
    # good is delayed, so it runs after the failure; then whatever became ready.
    run_all(q, NOW + 10)
    final = q.check()
    mid = dependencies(q, "mid")
    bad_key, good_key = q.key("bad"), q.key("good")
    if policy == "failParentOnFailure":
        assert states["mid"] == states["root"] == "failed"
        assert q.job("mid")["failedReason"] == f"child {bad_key} failed"
        assert q.job("root")["failedReason"] == f"child {q.key('mid')} failed"
        assert after_failure == {"processed": 0, "unprocessed": 1, "ignored": 0, "failed": 1}
        assert mid == ({good_key: '"v-good"'}, [], {}, [bad_key])
        assert final == {"root": "failed", "mid": "failed", "bad": "failed", "good": "completed"}
        assert q.metric("failed") == 3
    elif policy in ("ignoreDependencyOnFailure", "removeDependencyOnFailure"):
        assert states["mid"] == "waiting-children"  # good still pending
        ignored = {bad_key: reason} if policy == "ignoreDependencyOnFailure" else {}
        assert after_failure == {
            "processed": 0,
            "unprocessed": 1,
            "ignored": len(ignored),
            "failed": 0,
        }
        assert mid == ({good_key: '"v-good"'}, [], ignored, [])
        assert final == {
            "root": "completed",
            "mid": "completed",
            "bad": "failed",
            "good": "completed",
        }
    elif policy == "continueParentOnFailure":
        assert states["mid"] == "wait"  # at once, with good still pending
        assert after_failure == {"processed": 0, "unprocessed": 1, "ignored": 1, "failed": 0}
        assert mid == ({good_key: '"v-good"'}, [], {bad_key: reason}, [])
        assert final == {
            "root": "completed",
            "mid": "completed",
            "bad": "failed",
            "good": "completed",
        }
    else:
        # No policy: recorded as unsuccessful; the parent waits for good and then still waits.
        assert after_failure == {"processed": 0, "unprocessed": 1, "ignored": 0, "failed": 1}
        assert mid == ({good_key: '"v-good"'}, [], {}, [bad_key])
        assert final == {
            "root": "waiting-children",
            "mid": "waiting-children",
            "bad": "failed",
            "good": "completed",
        }
        # Breaking the failed child's tie lets the parent go on.
        assert g.remove_child_dependency(q.r, queue=q.name, job_id="bad") == 1
        assert q.check()["mid"] == "wait"
        assert "parentKey" not in q.job("bad")


def test_continue_parent_on_failure_runs_the_parent_before_the_rest(q: Queue) -> None:
    """The parent moves on at once: completing it while a child is pending is -4, and once that
    child completes (the parent active, so not released again) the parent completes."""
    add_flow(
        q.r,
        FlowJob(
            "p",
            q.name,
            job_id="p",
            children=[
                FlowJob("bad", q.name, job_id="bad", opts={"continueParentOnFailure": True}),
                FlowJob("slow", q.name, job_id="slow", delay=50),
            ],
        ),
        now=NOW,
    )
    fail_for_good(q, "bad", "finish")
    take(q, "p")
    before = q.check()
    with pytest.raises(errors.JobPendingChildren) as refused:
        q.complete("p")
    assert refused.value.code == -4
    assert q.check() == before  # nothing changed: p still active, with its lock
    assert q.lock("p") is not None
    assert q.take_id(now=NOW + 50) == "slow"
    q.complete("slow", now=NOW + 50)
    assert q.check()["p"] == "active"
    assert q.complete("p")[0] == "completed"


def test_an_active_job_adds_children_and_waits_for_them(q: Queue) -> None:
    q.add("p")
    take(q, "p")
    token = q.token_of("p")

    def wait(child_id: str = "", with_token: str = token) -> int:
        try:
            return g.move_to_waiting_children(
                q.r, queue=q.name, job_id="p", token=with_token, now=NOW + 1, child_id=child_id
            )
        finally:
            q.check()

    assert wait() == 0  # nothing pending: p stays active, with its lock
    assert q.lock("p") == token
    q.add("c1", parent_id="p")
    q.add("c2", parent_id="p")
    with pytest.raises(errors.JobLockMismatch):
        wait(with_token="someone-else")
    assert wait("ghost") == 0  # not one of its pending children
    assert wait("c2") == 1
    assert q.check()["p"] == "waiting-children"
    assert q.lock("p") is None
    assert q.scores("waiting-children") == {"p": NOW + 1}
    assert q.last_event() == {"event": "waiting-children", "jobId": "p", "prev": "active"}
    assert wait("c2") == 1  # re-sent after it landed: the same answer, nothing moved again
    assert q.last_event()["event"] == "waiting-children"
    assert run_all(q) == ["c1", "c2", "p"]
    assert dependencies(q, "p")[0] == {q.key("c1"): '"v-c1"', q.key("c2"): '"v-c2"'}


def test_failed_children_make_completing_or_waiting_minus_9(q: Queue) -> None:
    q.add("p")
    take(q, "p")
    q.add("c", parent_id="p")
    fail_for_good(q, "c", "finish")
    before = q.check()
    assert before["p"] == "active"
    with pytest.raises(errors.JobHasFailedChildren) as refused:
        q.complete("p")
    assert refused.value.code == -9
    with pytest.raises(errors.JobHasFailedChildren):
        g.move_to_waiting_children(
            q.r, queue=q.name, job_id="p", token=q.token_of("p"), now=NOW, child_id=""
        )
    assert q.check() == before
    assert q.fail("p", "children failed")[0] == "failed"  # a worker fails such a parent


def test_a_missing_parent_is_minus_5_before_any_write(q: Queue) -> None:
    with pytest.raises(errors.ParentJobNotExist) as refused:
        q.add("c", parent_id="ghost")
    assert refused.value.code == -5
    assert q.r.get(q.key("id")) is None  # nothing written, not even a generated id
    q.add_parent("p")
    q.add("c", parent_id="p")
    # The parent removed while its child remains (as retention removes a finished parent).
    q.r.delete(q.key("p"), q.key("p:dependencies"))
    q.r.zrem(q.key("waiting-children"), "p")
    with pytest.raises(errors.ParentJobNotExist):
        g.remove_child_dependency(q.r, queue=q.name, job_id="c")
    with pytest.raises(errors.JobNotExist):
        g.remove_child_dependency(q.r, queue=q.name, job_id="ghost")


def test_a_custom_id_with_another_live_parent_is_minus_7_and_the_same_parent_a_duplicate(
    q: Queue,
) -> None:
    q.add_parent("p1")
    q.add_parent("p2")
    q.add("c", parent_id="p1")
    before = q.check()
    with pytest.raises(errors.ParentJobCannotBeReplaced) as refused:
        q.add("c", parent_id="p2")
    assert refused.value.code == -7
    assert q.check() == before
    assert counts(q, "p2")["unprocessed"] == 0
    assert g.add_standard_job(
        q.r,
        queue=q.name,
        job_id="c",
        name="again",
        data="{}",
        opts={},
        now=NOW,
        dedup_id="",
        parent_id="p1",
    ) == ("c", 0)
    assert q.last_event() == {"event": "duplicated", "jobId": "c"}
    assert counts(q, "p1")["unprocessed"] == 1


def test_an_existing_job_without_a_parent_joins_the_one_an_add_names(q: Queue) -> None:
    """As BullMQ's duplicated add does: pending while it runs, its value at once if it has
    completed, its failure by its policy if it failed."""
    q.add("done")
    take(q, "done")
    q.complete("done", '"kept"')
    q.add("broken", opts={"ignoreDependencyOnFailure": True})
    fail_for_good(q, "broken", "finish")
    q.add("running")
    take(q, "running")
    q.add_parent("p")
    for child in ("done", "broken", "running"):
        assert g.add_standard_job(
            q.r,
            queue=q.name,
            job_id=child,
            name="n",
            data="{}",
            opts={},
            now=NOW,
            dedup_id="",
            parent_id="p",
        ) == (child, 0)
        q.check()
    assert dependencies(q, "p") == (
        {q.key("done"): '"kept"'},
        [q.key("running")],
        {q.key("broken"): "it broke"},
        [],
    )
    q.complete("running")
    assert q.check()["p"] == "wait"
    # p named as a child of its own child: refused before any write.
    before = q.check()
    with pytest.raises(LuaError, match="cannot be a child of its own descendant"):
        g.add_standard_job(
            q.r,
            queue=q.name,
            job_id="p",
            name="n",
            data="{}",
            opts={},
            now=NOW,
            dedup_id="",
            parent_id="running",
        )
    assert q.check() == before


def test_removing_unprocessed_children_keeps_the_running_and_the_finished(q: Queue) -> None:
    add_flow(
        q.r,
        FlowJob(
            "p",
            q.name,
            job_id="p",
            children=[
                FlowJob("run", q.name, job_id="run"),
                FlowJob("done", q.name, job_id="done"),
                FlowJob("later", q.name, job_id="later", delay=1000),
                FlowJob(
                    "sub", q.name, job_id="sub", children=[FlowJob("deep", q.name, job_id="x")]
                ),
            ],
        ),
        now=NOW,
    )
    take(q, "run")
    take(q, "done")
    q.complete("done", '"d"')
    take(q, "x")  # a grandchild that runs: kept, its parent removed
    assert g.remove_unprocessed_children(q.r, queue=q.name, job_id="p") == ["later", "sub"]
    states = q.check()
    assert states == {"p": "waiting-children", "run": "active", "done": "completed", "x": "active"}
    removed = [e for e in q.events() if e["event"] == "removed"]
    assert removed == [
        {"event": "removed", "jobId": "later", "prev": "delayed"},
        {"event": "removed", "jobId": "sub", "prev": "waiting-children"},
    ]
    assert counts(q, "p") == {"processed": 1, "unprocessed": 1, "ignored": 0, "failed": 0}
    q.complete("run")
    assert q.check()["p"] == "wait"
    q.complete("x")  # its parent is gone: nothing is written for it
    assert q.r.exists(q.key("sub:processed")) == 0


def test_a_flow_across_queues_is_refused_before_anything_is_sent(q: Queue) -> None:
    flow = FlowJob("p", q.name, children=[FlowJob("c", "elsewhere")])
    with pytest.raises(ArgumentError, match="a flow lives in one queue"):
        add_flow(q.r, flow, now=NOW)
    assert q.check() == {}
    assert q.r.exists(q.key("id"), q.key("events")) == 0


def test_a_child_with_two_policies_is_refused(q: Queue) -> None:
    q.add_parent("p")
    with pytest.raises(LuaError, match="only one of failParentOnFailure"):
        q.add(
            "c",
            parent_id="p",
            opts={"failParentOnFailure": True, "removeDependencyOnFailure": True},
        )
    assert q.check() == {"p": "waiting-children"}


def test_a_parent_released_with_a_priority_goes_to_prioritized(q: Queue) -> None:
    q.add_parent("p", priority=7)
    q.add("c", parent_id="p")
    run_all(q)
    assert q.check() == {"p": "completed", "c": "completed"}
    q.add_parent("p2", priority=7)
    q.add("c2", parent_id="p2")
    take(q, "c2")
    q.complete("c2")
    assert q.check()["p2"] == "prioritized"
    assert q.job("p2")["priority"] == "7"
