"""Flows: parents and children to any depth, the four failure policies and none, by
moveToFinished-14 and by stalled recovery, moveToWaitingChildren-7, the flow reads and edits, and
the codes -4, -5, -7 and -9 raised as their exceptions (docs/protocol.md, "Flows")."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster

from echomq_scripts import generated as g
from echomq_scripts.flows import FlowIds, FlowJob, add_flow, add_flow_async
from echomq_scripts.generated import errors
from echomq_scripts.runtime import ArgumentError, LuaError
from tests.support.invariants import NOW, text
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
    """getDependencies-4 of a parent whose records are all small: each comes whole, cursor 0."""
    *records, cursors = g.get_dependencies(q.r, queue=q.name, job_id=job_id, count=10_000)
    assert cursors == ["0"] * 4
    return tuple(records)


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
    # Added by the worker below its own job: one flow whose root's parent is p.
    q.add_flow(q.node("c1"), parent_id="p")
    q.add_child("p", "c2")
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
    q.add_child("p", "c")
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
        q.add_flow(q.node("", q.node()), parent_id="ghost")
    assert refused.value.code == -5
    assert q.r.get(q.key("id")) is None  # nothing written, not even a generated id
    q.add_flow(q.node("p", q.node("c")))
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
    q.add_flow(q.node("p1", q.node("c")))
    q.add_flow(q.node("p2", q.node("other")))
    before = q.check()
    with pytest.raises(errors.ParentJobCannotBeReplaced) as refused:
        q.add_child("p2", "c")
    assert refused.value.code == -7
    assert q.check() == before
    assert counts(q, "p2")["unprocessed"] == 1
    # The same flow again: every job a duplicate, nothing else written.
    events = len(q.events())
    again = q.add_flow(q.node("p1", q.node("c")))
    assert (again.job_id, again.added, again.children[0].job_id, again.children[0].added) == (
        "p1",
        0,
        "c",
        0,
    )
    assert q.events()[events:] == [
        {"event": "duplicated", "jobId": "p1"},
        {"event": "duplicated", "jobId": "c"},
    ]
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
    ids = q.add_flow(q.node("p", q.node("done"), q.node("broken"), q.node("running")))
    assert [(child.job_id, child.added) for child in ids.children] == [
        ("done", 0),
        ("broken", 0),
        ("running", 0),
    ]
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
        q.add_flow(q.node("p"), parent_id="running")
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
    assert g.remove_unprocessed_children(q.r, queue=q.name, job_id="p", limit=100) == (
        0,
        ["later", "sub"],
    )
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


def test_unprocessed_children_go_in_bounded_calls_and_the_parent_at_the_end(q: Queue) -> None:
    """A limit of 2: each call removes at most 2, each child after its own; the parent stays in
    waiting-children between calls, and the call that ends the walk releases it."""
    q.add_flow(
        q.node(
            "p",
            q.node("a", q.node("a1", delay=1000)),
            q.node("b", delay=1000),
            q.node("c", delay=1000),
        )
    )
    replies: list[tuple[int, list[str]]] = []
    while not replies or replies[-1][0] == 1:
        replies.append(g.remove_unprocessed_children(q.r, queue=q.name, job_id="p", limit=2))
        if replies[-1][0] == 1:
            assert q.check()["p"] == "waiting-children"
    assert replies == [(1, ["a1", "a"]), (0, ["b", "c"])]
    assert q.check() == {"p": "wait"}


def test_unprocessed_children_held_beyond_the_limit_end_the_walk(q: Queue) -> None:
    """Two held children and a limit of 1: the call reaches only held ones, so it answers that
    the walk can do no more (a larger limit reaches further) instead of 1 for ever."""
    q.add_flow(q.node("p", q.node("a"), q.node("b"), q.node("c")))
    take(q, "a")
    take(q, "b")
    assert g.remove_unprocessed_children(q.r, queue=q.name, job_id="p", limit=1) == (0, [])
    assert g.remove_unprocessed_children(q.r, queue=q.name, job_id="p", limit=3) == (0, ["c"])
    assert q.check() == {"p": "waiting-children", "a": "active", "b": "active"}


# -- getDependencies-4, a record at a time -----------------------------------------------------

# getDependencies-4's parts in the order it answers them, by the record paginate-1 reads.
PARTS: tuple[g.PaginatePart, ...] = ("processed", "dependencies", "failed", "unsuccessful")


def parent_of_every_kind(q: Queue, each: int, *, pending: bool, long_ids: bool) -> list[Any]:
    """Parent p with `each` children of each kind, and what getDependencies-4 answers for it
    whole: completed ones with the value '"v-<id>"', pending ones (when `pending`, delayed past
    the test), ones failed under ignoreDependencyOnFailure with the reason "r-<id>", and ones
    failed with no policy, a millisecond apart so that their failure times order them. Long ids
    make every record a hash table: Redis keeps a small record whose entries are all 64 bytes or
    shorter as a listpack, which a scan reads whole in one page whatever its COUNT."""
    kinds = ["done", "ignored", "failed", *(["pending"] if pending else [])]
    pad = "x" * 60 if long_ids else ""
    children = [
        q.node(
            f"{kind}{pad}-{i:02}",
            opts={"ignoreDependencyOnFailure": True} if kind == "ignored" else {},
            delay=60_000 if kind == "pending" else 0,
        )
        for kind in kinds
        for i in reversed(range(each))  # so that failure order is not byte order
    ]
    q.add_flow(q.node("p", *children))
    now, failed = NOW, []
    while job_id := q.take_id(now=now):
        now += 1
        if job_id.startswith("done"):
            q.complete(job_id, f'"v-{job_id}"', now=now)
        else:
            q.fail(job_id, f"r-{job_id}", now=now)
            if job_id.startswith("failed"):
                failed.append(q.key(job_id))
    ids = {kind: [c.job_id for c in children if c.job_id.startswith(kind)] for kind in kinds}
    return [
        {q.key(c): f'"v-{c}"' for c in ids["done"]},
        sorted(q.key(c) for c in ids.get("pending", [])),
        {q.key(c): f"r-{c}" for c in ids["ignored"]},
        failed,
    ]


def encoding(q: Queue, part: str) -> str:
    """How Redis keeps p's record `part`, which decides how a scan pages it."""
    return text(q.r.object("encoding", q.key(f"p:{part}")))


def page_on(q: Queue, part: g.PaginatePart, cursor: str, count: int) -> list[Any]:
    """paginate-1 of p's record `part` from `cursor` to the end: its entries in the form
    getDependencies-4 answers a page of them, (key, value) from a hash and keys from the set and
    the sorted set."""
    found: list[Any] = []
    while cursor != "0":
        cursor, _size, page = g.paginate(
            q.r, queue=q.name, job_id="p", part=part, cursor=cursor, count=count
        )
        if part in ("processed", "failed"):
            found += zip(page[::2], page[1::2], strict=True)
        elif part == "unsuccessful":
            found += page[::2]  # without the scores
        else:
            found += page
    return found


def test_records_larger_than_count_come_as_a_page_and_a_cursor_paginate_goes_on_from(
    q: Queue,
) -> None:
    """20 children of each kind: at count 20 or more each record comes whole with cursor 0; below
    it, each comes as a page and a cursor, and paginate-1 from there reads the rest, every entry
    exactly once: nothing writes between the calls, so no record's table is resized under the
    walk, which is what makes a scan answer an entry twice."""
    whole = parent_of_every_kind(q, 20, pending=True, long_ids=True)
    assert [len(record) for record in whole] == [20] * 4
    assert [encoding(q, part) for part in PARTS] == [*["hashtable"] * 3, "skiplist"]
    for count in (20, 10_000):
        assert g.get_dependencies(q.r, queue=q.name, job_id="p", count=count) == (
            *whole,
            ["0"] * 4,
        )
    *pages, cursors = g.get_dependencies(q.r, queue=q.name, job_id="p", count=2)
    for part, page, cursor, record in zip(PARTS, pages, cursors, whole, strict=True):
        # 20 entries in a table of 32 buckets, of which a scan of COUNT 2 looks at up to 21: it
        # stops before the end. The page may hold none (its buckets may all be empty: Redis
        # promises no page size), so what counts is that page and rest make the record.
        assert cursor != "0", part
        first: list[Any] = list(page.items()) if isinstance(page, dict) else list(page)
        every = first + page_on(q, part, cursor, 2)
        entries = list(record.items()) if isinstance(record, dict) else record
        assert sorted(every) == sorted(entries), part


def test_a_record_larger_than_count_that_a_scan_reads_at_once_comes_whole(q: Queue) -> None:
    """Three children of each finished kind with short ids: three records larger than count 1
    that Redis keeps as listpacks, which a scan reads in one page. Each comes whole, with cursor
    0: the failed ones oldest first, as a whole record comes."""
    whole = parent_of_every_kind(q, 3, pending=False, long_ids=False)
    assert [encoding(q, part) for part in ("processed", "failed", "unsuccessful")] == [
        "listpack"
    ] * 3
    assert whole[3] == [q.key(f"failed-{i:02}") for i in (2, 1, 0)]
    assert g.get_dependencies(q.r, queue=q.name, job_id="p", count=1) == (*whole, ["0"] * 4)


def test_get_dependencies_refuses_a_count_out_of_1_to_10000(q: Queue) -> None:
    q.add_flow(q.node("p", q.node("c")))
    call_keys = g.get_dependencies_keys(q.name, "p")
    for count in ("0", "10001", "1.5", "x", ""):
        refusal = f"count must be an integer from 1 to 10000, got '{count}'"
        with pytest.raises(LuaError, match=re.escape(refusal)):
            q.raw("getDependencies", call_keys, ["p", count])
        # The arguments are read first: a job that is not there gets the same refusal.
        with pytest.raises(LuaError, match="count must be an integer from 1 to 10000"):
            q.raw("getDependencies", g.get_dependencies_keys(q.name, "none"), ["none", count])
    for bad in (0, 10_001):
        with pytest.raises(ArgumentError, match="count"):
            g.get_dependencies(q.r, queue=q.name, job_id="p", count=bad)
    with pytest.raises(errors.JobNotExist):
        g.get_dependencies(q.r, queue=q.name, job_id="none", count=1)
    assert q.raw("getDependencies", call_keys, ["p", "1"]) == ({}, [q.key("c")], {}, [], ["0"] * 4)


def test_a_flow_across_queues_is_refused_before_anything_is_sent(q: Queue) -> None:
    flow = FlowJob("p", q.name, children=[FlowJob("c", "elsewhere")])
    with pytest.raises(ArgumentError, match="a flow lives in one queue"):
        add_flow(q.r, flow, now=NOW)
    assert q.check() == {}
    assert q.r.exists(q.key("id"), q.key("events")) == 0


def test_a_child_with_two_policies_is_refused(q: Queue) -> None:
    both = {"failParentOnFailure": True, "removeDependencyOnFailure": True}
    with pytest.raises(LuaError, match="only one of failParentOnFailure"):
        q.add_flow(q.node("p", q.node("fine"), q.node("c", opts=both)))
    assert q.check() == {}


def test_a_parent_released_with_a_priority_goes_to_prioritized(q: Queue) -> None:
    q.add_flow(q.node("p", q.node("c"), priority=7))
    run_all(q)
    assert q.check() == {"p": "completed", "c": "completed"}
    q.add_flow(q.node("p2", q.node("c2"), priority=7))
    take(q, "c2")
    q.complete("c2")
    assert q.check()["p2"] == "prioritized"
    assert q.job("p2")["priority"] == "7"


def test_a_flow_that_meets_minus_7_late_writes_none_of_it(q: Queue) -> None:
    """addFlow-10 checks every node before its first write: a -7 at the last node leaves the
    jobs before it unwritten, with no generated id taken."""
    q.add_flow(q.node("owner", q.node("taken")))
    before = q.check()
    events = q.events()
    flow = q.node("", q.node("fresh", q.node()), q.node("taken"))
    with pytest.raises(errors.ParentJobCannotBeReplaced):
        q.add_flow(flow)
    assert q.check() == before
    assert q.events() == events
    assert q.r.exists(q.key("id"), q.key("fresh")) == 0


def test_a_held_dedup_id_adds_nothing_at_its_node_or_below(q: Queue) -> None:
    holder = q.add(dedup_id="once")
    ids = q.add_flow(
        q.node(
            "p",
            q.node("", q.node("kid"), dedup_id="once"),
            q.node("c1", dedup_id="twice"),
            q.node("c2", dedup_id="twice"),
        )
    )
    deduplicated, first, second = ids.children
    assert (deduplicated.job_id, deduplicated.added) == (holder, 0)
    assert (deduplicated.children[0].job_id, deduplicated.children[0].added) == ("", 0)
    # Two nodes of one flow with one deduplication id: the first holds it.
    assert (first.job_id, first.added, second.job_id, second.added) == ("c1", 1, "c1", 0)
    assert q.check() == {holder: "wait", "p": "waiting-children", "c1": "wait"}
    assert dependencies(q, "p")[1] == [q.key("c1")]


def test_a_node_that_meets_an_existing_custom_id_takes_no_dedup_id(q: Queue) -> None:
    """As a single add: a custom id that exists adds nothing, so the dedup id it names stays free
    for the next node of the flow."""
    q.add("a")
    ids = q.add_flow(q.node("p", q.node("a", dedup_id="d"), q.node("", dedup_id="d")))
    existing, fresh = ids.children
    assert (existing.job_id, existing.added) == ("a", 0)
    assert fresh.added == 1
    holder = q.r.get(q.key("de:d"))
    assert holder is not None
    assert text(holder) == fresh.job_id
    assert q.check()[fresh.job_id] == "wait"


def test_a_parent_whose_children_were_all_done_or_deduplicated_goes_on_at_once(
    q: Queue,
) -> None:
    q.add("done")
    take(q, "done")
    q.complete("done", '"d"')
    q.add(dedup_id="held")
    q.add_flow(q.node("p", q.node("done"), q.node("", dedup_id="held")))
    assert q.check()["p"] == "wait"
    assert dependencies(q, "p")[0] == {q.key("done"): '"d"'}
    released = [e for e in q.events() if e["jobId"] == "p"]
    assert [e["event"] for e in released] == ["waiting-children", "waiting"]


def test_a_generated_id_never_takes_a_custom_id_later_in_the_flow(q: Queue) -> None:
    ids = q.add_flow(q.node("", q.node(), q.node("2", name="custom")))
    assert [ids.job_id, *(child.job_id for child in ids.children)] == ["1", "3", "2"]
    assert q.job("2")["name"] == "custom"
    assert dependencies(q, "1")[1] == sorted([q.key("2"), q.key("3")])


def test_a_delayed_leaf_keeps_its_priority_for_when_it_is_due(q: Queue) -> None:
    q.add_flow(q.node("p", q.node("late", delay=100, priority=9), q.node("first", priority=1)))
    assert q.check()["late"] == "delayed"
    # Due, late goes to prioritized behind first; without its priority it would go to wait,
    # which is taken before prioritized.
    assert [q.take_id(now=NOW + 100), q.take_id(now=NOW + 100)] == ["first", "late"]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ([], "a flow is one or more nodes of 8 values each"),
        (["", "n", "{}", "{}", "", "0", "0"], "a flow is one or more nodes of 8 values each"),
        (
            ["", "n", "{}", "{}", "", "0", "0", "2", "", "n", "{}", "{}", "", "0", "0", "0"],
            "the children counts describe more nodes than the 2 sent",
        ),
        (
            ["", "n", "{}", "{}", "", "0", "0", "0", "", "n", "{}", "{}", "", "0", "0", "0"],
            "node 2 is past the end of the tree",
        ),
        (
            ["x", "n", "{}", "{}", "", "0", "0", "1", "x", "n", "{}", "{}", "", "0", "0", "0"],
            "job id 'x' is in the flow twice",
        ),
        (
            ["", "n", "{}", "{}", "", "5", "0", "1", "", "n", "{}", "{}", "", "0", "0", "0"],
            "node 1 has children and a delay",
        ),
        (["", "n", "{}", "{}", "", "0", "-1", "0"], "node 1's priority must be an integer"),
    ],
)
def test_a_malformed_flow_sent_by_another_runtime_is_refused_before_any_write(
    q: Queue, values: list[str], message: str
) -> None:
    with pytest.raises(LuaError, match=message):
        q.raw("addFlow", g.add_flow_keys(q.name), [str(NOW), "", *values])
    assert q.check() == {}
    assert q.r.exists(q.key("id"), q.key("events")) == 0


def test_the_same_id_twice_or_a_delayed_parent_is_refused_before_anything_is_sent(
    q: Queue,
) -> None:
    with pytest.raises(ArgumentError, match="children and a delay"):
        add_flow(q.r, q.node("p", q.node(), delay=5), now=NOW)
    assert q.check() == {}


def test_add_flow_async_adds_the_same_flow_on_redis_asyncio(q: Queue) -> None:
    """flows.add_flow_async: the flow the sync helper adds, on the redis.asyncio client of the same
    server or cluster, with its -7 raised as the same exception."""

    async def add_both() -> tuple[FlowIds, type[Exception] | None]:
        client: redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster
        if isinstance(q.r, redis.Redis):
            client = redis.asyncio.Redis(port=q.r.connection_pool.connection_kwargs["port"])
        else:
            node = q.r.get_default_node()  # type: ignore[no-untyped-call]
            client = redis.asyncio.cluster.RedisCluster(host=node.host, port=node.port)
        try:
            ids = await add_flow_async(client, q.node("p", q.node("c"), q.node()), now=NOW)
            try:
                await add_flow_async(client, q.node("", q.node("c")), now=NOW)
            except errors.ParentJobCannotBeReplaced as refused:
                return ids, type(refused)
            return ids, None
        finally:
            await client.aclose()

    ids, refused = asyncio.run(add_both())
    assert [ids.job_id, *(child.job_id for child in ids.children)] == ["p", "c", "1"]
    assert refused is errors.ParentJobCannotBeReplaced
    assert q.check() == {"p": "waiting-children", "c": "wait", "1": "wait"}
    assert dependencies(q, "p")[1] == sorted([q.key("c"), q.key("1")])


def test_a_failed_joiner_removed_by_another_joiners_parent_still_acts_by_its_policy(
    q: Queue,
) -> None:
    """Two failed jobs join one flow. The first fails its new parent P, whose removeOnFail keeps
    no failed job: P's retention removes the second joiner before its turn. The second still acts
    on its parent Q by its policy, as read before the writes: Q records it and goes on."""
    q.add("J1", opts={"failParentOnFailure": True})
    q.add("J2", opts={"ignoreDependencyOnFailure": True})
    fail_for_good(q, "J1", "finish")
    fail_for_good(q, "J2", "finish")
    keep_none = {"removeOnFail": 0, "ignoreDependencyOnFailure": True}
    ids = q.add_flow(q.node("Q", q.node("P", q.node("J1"), opts=keep_none), q.node("J2")))
    assert [ids.added, *(child.added for child in ids.children)] == [1, 1, 0]
    assert q.check() == {"Q": "wait"}  # P, J1 and J2 removed by P's retention
    assert dependencies(q, "Q") == (
        {},
        [],
        {q.key("P"): f"child {q.key('J1')} failed", q.key("J2"): "it broke"},
        [],
    )


def parent_removed_child_kept(q: Queue) -> None:
    """P fails through its child D and its removeOnFail removes it; its other child C, waiting,
    keeps P as its parentKey."""
    q.add_flow(
        q.node(
            "P",
            q.node("D", opts={"failParentOnFailure": True}),
            q.node("C"),
            opts={"removeOnFail": True},
        )
    )
    fail_for_good(q, "D", "finish")
    assert q.check() == {"C": "wait", "D": "failed"}
    assert q.job("C")["parentKey"] == q.key("P")


def test_a_parent_made_again_takes_back_the_child_its_removal_left(q: Queue) -> None:
    """P fails through D and its removeOnFail removes it; C keeps P as its parentKey. A flow that
    makes P again with C below it: C joins it (a parent that is gone counts as none) and P waits
    for it, as BullMQ re-attaches a child whose parentKey is the one named."""
    parent_removed_child_kept(q)
    ids = q.add_flow(q.node("P", q.node("C")))
    assert (ids.added, ids.children[0].added) == (1, 0)
    assert q.check() == {"C": "wait", "D": "failed", "P": "waiting-children"}
    assert dependencies(q, "P")[1] == [q.key("C")]
    take(q, "C")
    q.complete("C", '"c"')
    assert q.check()["P"] == "wait"


def test_a_job_cannot_become_its_own_ancestor_through_a_parent_made_again(q: Queue) -> None:
    """C's parentKey names P, which retention removed. A flow that makes P again below C, with C
    as P's child: C would wait for P, which waits for C. Refused before any write."""
    parent_removed_child_kept(q)
    before = q.check()
    with pytest.raises(LuaError, match="'C' cannot be a child of its own descendant"):
        q.add_flow(q.node("P", q.node("C")), parent_id="C")
    assert q.check() == before
    assert not q.r.exists(q.key("P"))


def test_a_loop_of_parent_keys_a_removal_left_does_not_refuse_a_job_outside_it(q: Queue) -> None:
    """P made again below C, whose parentKey names the P that was removed, leaves a loop of
    parentKeys (C -> P -> C) in which nothing waits for itself. A job that joins below P is not
    part of that loop: it joins."""
    parent_removed_child_kept(q)
    q.add_flow(q.node("P"), parent_id="C")
    assert (q.job("P")["parentKey"], q.job("C")["parentKey"]) == (q.key("C"), q.key("P"))
    q.add("J")
    ids = q.add_flow(q.node("X", q.node("J")), parent_id="P")
    assert (ids.added, ids.children[0].added) == (1, 0)
    assert q.job("J")["parentKey"] == q.key("X")
    assert dependencies(q, "X")[1] == [q.key("J")]


def test_a_delay_past_2_to_the_53_ms_is_refused_before_any_write(q: Queue) -> None:
    """A run-at over 2^53 - 1 is no longer exact as a Lua number or a sorted set's score: the
    script refuses it (addDelayedJob-5, a node of addFlow-10), and add_flow before sending."""
    late = 2**53 - NOW
    with pytest.raises(LuaError, match="delay must end by 2\\^53 - 1 ms"):
        q.raw(
            "addDelayedJob",
            g.add_delayed_job_keys(q.name),
            ["", "n", "{}", "{}", str(NOW), "", str(late)],
        )
    node = ["", "n", "{}", "{}", "", str(late), "0", "0"]
    with pytest.raises(LuaError, match="node 1's delay must end by 2\\^53 - 1 ms"):
        q.raw("addFlow", g.add_flow_keys(q.name), [str(NOW), "", *node])
    with pytest.raises(ArgumentError, match="due after 2\\^53 - 1 ms"):
        add_flow(q.r, q.node(delay=late), now=NOW)
    assert q.check() == {}
    assert q.r.exists(q.key("id"), q.key("events")) == 0
    # The last millisecond that is exact is taken.
    assert q.add_delayed("edge", delay=late - 1) == "edge"
    assert q.r.zscore(q.key("delayed"), "edge") == 2**53 - 1


def test_a_flow_deeper_than_pythons_stack_is_added(q: Queue) -> None:
    """flows.add_flow walks the tree with a loop, as the script does: a chain of 3,000 jobs."""
    chain = q.node("leaf")
    for depth in range(3000):
        chain = q.node(f"n{depth}", chain)
    ids = q.add_flow(chain)
    assert ids.job_id == "n2999"
    states = q.check()
    assert len(states) == 3001
    assert states["leaf"] == "wait"
    assert states["n0"] == "waiting-children"


def test_a_parent_failed_by_its_child_is_recorded_above_by_its_own_reason(q: Queue) -> None:
    """kid fails mid (failParentOnFailure); mid's own policy ignores its failure in root, which
    records mid's reason, the one that names kid, not kid's."""
    q.add_flow(
        q.node(
            "root",
            q.node(
                "mid",
                q.node("kid", opts={"failParentOnFailure": True}),
                opts={"ignoreDependencyOnFailure": True},
            ),
        )
    )
    fail_for_good(q, "kid", "finish")
    assert q.check() == {"root": "wait", "mid": "failed", "kid": "failed"}
    assert dependencies(q, "root")[2] == {q.key("mid"): f"child {q.key('kid')} failed"}
