"""The scripts that walk a whole state or queue, a bounded batch at a time: cleanJobsInSet-5,
obliterate-20, drain-5, removeOrphanedJobs-8, and the reads getRanges-8, getJobs-8, paginate-1
and getCountsPerPriority-3. Each call reads at most its batch, so a test on a small queue shows the
bound: a walk of n jobs takes ceil(n / batch) calls."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from echomq_scripts import generated as g
from echomq_scripts.generated import scripts
from echomq_scripts.runtime import ArgumentError, LuaError
from tests.support.invariants import NOW, STATES, text
from tests.support.queue_harness import Queue

# -- cleanJobsInSet-5 ------------------------------------------------------------------------


def clean(
    q: Queue, state: Any, *, grace: int = 0, limit: int = 100, cursor: int = 0, now: int = NOW
) -> tuple[int, list[str]]:
    try:
        return g.clean_jobs_in_set(
            q.r, queue=q.name, state=state, now=now, grace=grace, limit=limit, cursor=cursor
        )
    finally:
        q.check()


def clean_all(q: Queue, state: Any, *, limit: int, **kwargs: Any) -> tuple[int, list[str]]:
    """A whole walk: calls until the cursor comes back 0. (calls, ids removed)"""
    calls, cursor, removed = 0, 0, []
    while True:
        cursor, ids = clean(q, state, limit=limit, cursor=cursor, **kwargs)
        calls += 1
        removed += ids
        if cursor == 0:
            return calls, removed


def put(q: Queue, state: str, job_id: str, now: int = NOW) -> None:
    """A job added at `now` and brought to `state` (active: taken at `now`, its lock kept)."""
    if state in ("wait", "paused", "active"):
        q.add(job_id, now=now)
    elif state == "delayed":
        q.add_delayed(job_id, now=now)
    elif state == "prioritized":
        q.add_prioritized(job_id, now=now)
    elif state == "waiting-children":
        q.add_flow(q.node(job_id, q.node(f"{job_id}-kid", delay=10**9)), now=now)
    if state in ("active", "completed", "failed"):
        if state != "active":
            q.add(job_id, now=now)
        assert q.take_id(now=now) == job_id
        if state != "active":
            q.finish(job_id, outcome=state, result='"r"', now=now)  # type: ignore[arg-type]


def a_scheduler(q: Queue, scheduler_id: str = "s") -> str:
    """A job scheduler every second from NOW: its first iteration, due now, is in wait."""
    g.add_job_scheduler(
        q.r,
        queue=q.name,
        scheduler_id=scheduler_id,
        now=NOW,
        every=1000,
        pattern="",
        tz="",
        next_millis=0,
        limit=0,
        start_date=0,
        end_date=0,
        offset=0,
        name="n",
        data={},
        opts={},
        priority=0,
    )
    q.check()
    return f"repeat-{scheduler_id}-{NOW}"


@pytest.mark.parametrize("state", STATES)
def test_clean_removes_the_jobs_older_than_the_grace_and_keeps_the_others(
    q: Queue, state: str
) -> None:
    if state == "paused":
        q.pause()
    put(q, state, "old", now=NOW)
    put(q, state, "young", now=NOW + 5000)
    if state == "active":
        q.expire_lock("old")
        q.expire_lock("young")
    assert q.check()["old"] == state
    before = len(q.events())
    assert clean(q, state, grace=3000, now=NOW + 6000) == (0, ["old"])
    states = q.check()
    assert "old" not in states
    assert states["young"] == state
    assert q.r.exists(q.key("old"), q.key("old:lock"), q.key("old:dependencies")) == 0
    assert q.events()[before:] == [
        {"event": "removed", "jobId": "old", "prev": state},
        {"event": "cleaned", "jobId": "", "count": "1"},
    ]


def test_clean_keeps_an_active_job_whose_lock_is_held(q: Queue) -> None:
    put(q, "active", "held")
    put(q, "active", "lost")
    q.expire_lock("lost")
    q.stalled_check()  # marks both in the stalled set
    assert clean(q, "active") == (0, ["lost"])
    assert q.check() == {"held": "active"}
    assert q.stalled() == {"held"}


def test_clean_keeps_a_job_schedulers_current_iteration(q: Queue) -> None:
    iteration = a_scheduler(q)
    q.add("plain")
    assert clean(q, "wait") == (0, ["plain"])
    assert q.check() == {iteration: "wait"}


def test_clean_releases_the_dedup_id_and_lets_the_parent_go_on(q: Queue) -> None:
    q.add_flow(q.node("p", q.node("kid", dedup_id="d")))
    assert q.r.get(q.key("de:d")) == b"kid"
    assert clean(q, "wait") == (0, ["kid"])
    assert q.r.exists(q.key("de:d")) == 0
    assert q.check() == {"p": "wait"}
    assert q.events()[-2:] == [
        {"event": "waiting", "jobId": "p", "prev": "waiting-children"},
        {"event": "cleaned", "jobId": "", "count": "1"},
    ]


@pytest.mark.parametrize("state", ["wait", "delayed", "completed"])
@pytest.mark.parametrize(("jobs", "limit"), [(25, 10), (20, 10), (3, 10)])
def test_a_clean_walk_takes_ceil_n_over_limit_calls(
    q: Queue, state: str, jobs: int, limit: int
) -> None:
    for i in range(jobs):
        put(q, state, f"j{i}")
    calls, removed = clean_all(q, state, limit=limit)
    assert calls == math.ceil(jobs / limit)
    assert sorted(removed) == sorted(f"j{i}" for i in range(jobs))
    assert q.check() == {}


def test_a_clean_walk_steps_over_the_jobs_it_keeps(q: Queue) -> None:
    """Young jobs stay where they are; the cursor moves past them, so every call reads new
    entries, and the oldest (nearest the tail, where workers take from) go first."""
    for i in range(5):
        put(q, "wait", f"old{i}", now=NOW)
        put(q, "wait", f"new{i}", now=NOW + 5000)
    cursor, first = clean(q, "wait", grace=1000, now=NOW + 5000, limit=4)
    assert first == ["old0", "old1"]
    assert cursor == 2 + 1  # two entries kept before the next call's place
    cursor, second = clean(q, "wait", grace=1000, now=NOW + 5000, limit=4, cursor=cursor)
    assert second == ["old2", "old3"]
    assert cursor == 4 + 1
    assert clean(q, "wait", grace=1000, now=NOW + 5000, limit=4, cursor=cursor) == (0, ["old4"])
    assert q.items("wait") == [f"new{i}" for i in range(5)]


def test_clean_refuses_keys_that_are_not_the_queues_and_bad_arguments(q: Queue) -> None:
    put(q, "wait", "j")
    ours = scripts.clean_jobs_in_set_keys(q.name, "wait")
    for keys in (ours._replace(stalled=q.key("wait")), ours._replace(set=q.key("failed"))):
        with pytest.raises(LuaError, match="is not the queue's"):
            g.clean_jobs_in_set(q.r, keys=keys, state="wait", now=NOW, grace=0, limit=10, cursor=0)
    for limit in (0, 10_001):
        with pytest.raises(ArgumentError):
            clean(q, "wait", limit=limit)
    with pytest.raises(LuaError, match="limit must be an integer from 1 to 10000"):
        q.raw("cleanJobsInSet", ours, ["wait", str(NOW), "0", "0", "0"])
    assert q.check() == {"j": "wait"}


# -- obliterate-20 ---------------------------------------------------------------------------


def obliterate(q: Queue, *, count: int = 100, force: bool = False) -> int:
    try:
        return g.obliterate(q.r, queue=q.name, count=count, force=force)
    finally:
        q.check()


def keys_left(q: Queue) -> list[str]:
    """The queue's keys but the token records, which live out their TTL."""
    # SCAN, which the cluster client sends to every node (KEYS goes to one of them).
    found = q.r.scan_iter(match=re.sub(r"([*?[\]\\])", r"\\\1", q.key("")) + "*")
    return sorted(text(k) for k in found if not text(k).startswith(q.key("token:")))


def a_queue_of_every_kind(q: Queue) -> None:
    """Jobs in all eight states, a scheduler, a dedup id, the counters and metrics."""
    q.add_flow(q.node("p", q.node("kid", dedup_id="d"), q.node("other", delay=10**9)))
    q.add("a")
    q.add_prioritized("b", priority=3)
    q.add_delayed("c")
    for job_id, outcome in (("kid", "completed"), ("a", "failed")):
        assert q.take_id() == job_id
        q.finish(job_id, outcome=outcome, result='"r"')  # type: ignore[arg-type]
    assert q.take_id() == "b"
    q.add_prioritized("e", priority=5)
    a_scheduler(q)
    q.stalled_check()
    q.add("w")
    q.pause()


def test_obliterate_is_refused_unless_paused_and_with_active_jobs_unless_forced(q: Queue) -> None:
    a_queue_of_every_kind(q)
    q.resume()
    before = q.check()
    assert obliterate(q) == 2
    assert q.check() == before
    q.pause()
    before = q.check()
    assert obliterate(q) == 3
    assert q.check() == before
    assert obliterate(q, force=True) == 0
    assert q.check() == {}
    assert keys_left(q) == []


def test_obliterate_takes_everything_of_the_queue(q: Queue) -> None:
    a_queue_of_every_kind(q)
    states = q.check()
    assert set(states.values()) == set(STATES) - {"wait"}
    q.expire_lock("b")  # and then no job is active with a lock: force is still needed
    assert obliterate(q) == 3
    assert obliterate(q, force=True) == 0
    # Nothing of the queue is left: jobs, locks, companion keys, dedup ids, schedulers, the
    # counters, metrics, events, meta (so it is no longer paused) and the marker. Only the
    # token records remain, each until its TTL (obliterate cannot find them).
    assert keys_left(q) == []
    assert obliterate(q) == 2  # a queue that is gone is not paused


@pytest.mark.parametrize(("jobs", "count"), [(25, 10), (20, 10), (7, 10)])
def test_an_obliterate_walk_takes_ceil_n_over_count_calls(q: Queue, jobs: int, count: int) -> None:
    for i in range(jobs):
        q.add(f"j{i}", dedup_id=f"d{i}")
    q.pause()
    replies: list[int] = []
    while not replies or replies[-1] == 1:
        replies.append(obliterate(q, count=count))
        left = len(q.check())
        assert left == max(jobs - count * len(replies), 0)
    assert replies == [1] * (math.ceil(jobs / count) - 1) + [0]


def test_obliterate_refuses_keys_that_are_not_the_queues(q: Queue) -> None:
    q.pause()
    ours = scripts.obliterate_keys(q.name)
    with pytest.raises(LuaError, match="is not the queue's limiter key"):
        g.obliterate(q.r, keys=ours._replace(limiter=q.key("lim")), count=1, force=False)
    with pytest.raises(ArgumentError):
        obliterate(q, count=0)
    assert q.r.hexists(q.key("meta"), "paused")


# -- drain-5 ---------------------------------------------------------------------------------


def drain(q: Queue, *, delayed: bool = False, count: int = 100) -> int:
    try:
        return g.drain(q.r, queue=q.name, delayed=delayed, count=count)
    finally:
        q.check()


@pytest.mark.parametrize("delayed", [False, True])
def test_drain_empties_the_waiting_keys_with_the_jobs_data(q: Queue, delayed: bool) -> None:
    q.add("w", dedup_id="d")
    q.add_prioritized("p", priority=2)
    q.add_delayed("later")
    q.add("run")
    assert q.take_id() == "w"  # the oldest: w runs, and stays
    q.pause()
    q.add("held")
    q.add("done")
    before = len(q.events())
    assert drain(q, delayed=delayed) == (5 if delayed else 4)
    kept = {"w": "active"} if delayed else {"w": "active", "later": "delayed"}
    assert q.check() == kept
    assert q.r.exists(q.key("p"), q.key("held"), q.key("run"), q.key("done")) == 0
    assert q.r.get(q.key("de:d")) == b"w"  # the active holder keeps its dedup id
    assert q.events()[before:] == []  # as BullMQ's drain, no events


def test_drain_keeps_a_job_schedulers_current_iteration(q: Queue) -> None:
    q.add("a")
    iteration = a_scheduler(q)
    q.add("b")
    assert drain(q, count=1) == 1
    assert drain(q, count=1) == 1
    assert drain(q, count=1) == 0
    assert q.check() == {iteration: "wait"}


def test_drain_releases_a_parent_and_then_drains_it(q: Queue) -> None:
    """BullMQ deletes a parent whose last pending child a drain removes; here the parent is
    released, as removeJob-13 releases it, into wait, and the drain takes it from there."""
    q.add_flow(q.node("p", q.node("kid", dedup_id="d")))
    q.add_flow(q.node("keeps", q.node("slow", delay=10**9), q.node("fast")))
    assert drain(q) == 3  # kid, then p, released; fast goes and keeps waits for slow
    assert q.check() == {"keeps": "waiting-children", "slow": "delayed"}
    assert q.r.exists(q.key("de:d")) == 0
    assert {"event": "waiting", "jobId": "p", "prev": "waiting-children"} in q.events()


@pytest.mark.parametrize(("jobs", "count"), [(25, 10), (20, 10), (3, 10)])
def test_a_drain_answers_count_until_the_keys_are_empty(q: Queue, jobs: int, count: int) -> None:
    for i in range(jobs):
        [q.add, q.add_prioritized, q.add_delayed][i % 3](f"j{i}")
    replies = [drain(q, delayed=True, count=count)]
    while replies[-1] == count:
        replies.append(drain(q, delayed=True, count=count))
    assert sum(replies) == jobs
    # A call that removes fewer than count found the keys empty: one more call when n is a
    # multiple of count.
    assert len(replies) == jobs // count + 1
    assert q.check() == {}


def test_drain_refuses_keys_that_are_not_the_queues(q: Queue) -> None:
    q.add("j")
    ours = scripts.drain_keys(q.name)
    with pytest.raises(LuaError, match="is not the queue's repeat key"):
        g.drain(q.r, keys=ours._replace(schedulers=q.key("wait")), delayed=False, count=1)
    assert q.check() == {"j": "wait"}


# -- getRanges-8, getJobs-8 and getCountsPerPriority-3 --------------------------------------


def test_get_ranges_and_get_jobs_list_jobs_in_the_order_they_run_or_by_score(q: Queue) -> None:
    for job_id in ("w1", "w2", "w3"):
        q.add(job_id)
    q.add_delayed("late", delay=5000)
    q.add_delayed("soon", delay=10)
    q.add_prioritized("p3", priority=3)
    q.add_prioritized("p1", priority=1)

    def ranges(start: int, end: int, asc: bool, *states: Any) -> list[list[str]]:
        return g.get_ranges(q.r, queue=q.name, start=start, end=end, asc=asc, state=states)

    assert ranges(0, -1, True, "wait", "delayed", "prioritized") == [
        ["w1", "w2", "w3"],  # the next job to run first
        ["soon", "late"],
        ["p1", "p3"],
    ]
    assert ranges(0, -1, False, "wait", "delayed") == [["w3", "w2", "w1"], ["late", "soon"]]
    assert ranges(1, 1, True, "wait", "wait") == [["w2"], ["w2"]]
    assert ranges(1, -1, False, "wait") == [["w2", "w1"]]
    assert ranges(5, 9, True, "wait", "completed") == [[], []]
    assert ranges(0, 0, True) == []
    jobs = g.get_jobs(q.r, queue=q.name, start=0, end=1, asc=True, state=["wait", "prioritized"])
    assert jobs == [[(j, q.job(j)) for j in ("w1", "w2")], [(j, q.job(j)) for j in ("p1", "p3")]]
    assert jobs[1][0][1]["priority"] == "1"
    assert q.take_id() == "w1"  # what asc named first is what a worker takes
    with pytest.raises(ArgumentError):
        ranges(0, -2, True, "wait")
    with pytest.raises(LuaError, match="state must be 'wait', 'paused'"):
        q.raw("getRanges", scripts.get_ranges_keys(q.name), ["0", "-1", "1", "waiting"])


def test_get_counts_per_priority_counts_each_priority_and_0_for_the_plain_jobs(q: Queue) -> None:
    q.add("a")
    q.add_prioritized("b", priority=2)
    q.add_prioritized("c", priority=2)
    q.add_prioritized("d", priority=2097151)
    q.add_prioritized("e", priority=1)

    def counts(*priorities: int) -> list[int]:
        return g.get_counts_per_priority(q.r, queue=q.name, priority=priorities)

    assert counts(0, 1, 2, 3, 2097151) == [1, 1, 2, 0, 1]
    q.pause()
    q.add("f")
    assert counts(0, 2) == [2, 2]  # plain jobs wait in paused while the queue is paused
    assert counts() == []
    with pytest.raises(ArgumentError):
        counts(2097152)


# -- removeOrphanedJobs-8 --------------------------------------------------------------------


def remove_orphans(q: Queue, *, count: int = 100) -> tuple[int, list[str]]:
    """A whole SCAN walk: (calls, ids removed)."""
    calls, cursor, removed = 0, "0", []
    while True:
        cursor, ids = g.remove_orphaned_jobs(q.r, queue=q.name, cursor=cursor, count=count)
        calls += 1
        removed += ids
        if cursor == "0":
            q.check()
            return calls, removed


def test_remove_orphaned_jobs_takes_jobs_no_state_holds_and_nothing_else(q: Queue) -> None:
    a_queue_of_every_kind(q)
    q.resume()
    before = q.check()
    kept_keys = keys_left(q)
    assert remove_orphans(q)[1] == []
    assert keys_left(q) == kept_keys
    # A crash took two ids out of their state keys; a lock outlived its job.
    q.add("lost", dedup_id="dl")
    q.r.lrem(q.key("wait"), 0, "lost")
    q.r.zrem(q.key("prioritized"), "e")
    q.r.set(q.key("gone:lock"), "w")
    calls, removed = remove_orphans(q, count=3)
    assert sorted(removed) == ["e", "gone", "lost"]
    assert calls > 1
    assert q.check() == {k: v for k, v in before.items() if k != "e"}
    # e was the only prioritized job: its state key went with it.
    assert set(kept_keys) - set(keys_left(q)) == {q.key("e"), q.key("prioritized")}
    assert set(keys_left(q)) <= set(kept_keys)
    assert q.r.exists(q.key("de:dl")) == 0


def test_remove_orphaned_jobs_matches_the_queue_name_as_text(q: Queue) -> None:
    """A glob character in a queue name matches itself only: the queue "p*" walks its own keys,
    not those of "proto"."""
    q.add("j")
    q.r.lrem(q.key("wait"), 0, "j")
    star = Queue(q.r, "p*")
    assert remove_orphans(star)[1] == []
    assert remove_orphans(q)[1] == ["j"]


def test_remove_orphaned_jobs_refuses_a_cursor_that_is_not_digits(q: Queue) -> None:
    keys = scripts.remove_orphaned_jobs_keys(q.name)
    with pytest.raises(LuaError, match="cursor must be decimal digits"):
        q.raw("removeOrphanedJobs", keys, ["-1", "10"])
    with pytest.raises(ArgumentError):
        g.remove_orphaned_jobs(q.r, queue=q.name, cursor="", count=10)


# -- paginate-1 ------------------------------------------------------------------------------


def test_paginate_walks_a_parents_records_a_page_at_a_time(q: Queue) -> None:
    kids = [q.node(f"k{i}") for i in range(300)]  # past the size Redis keeps in one listpack
    q.add_flow(q.node("p", *kids))
    for _ in range(3):
        job_id = q.take_id()
        q.complete(job_id, value=f'"{job_id}"')
    pages, cursor, members = 0, "0", set()
    while True:
        cursor, size, page = g.paginate(
            q.r, queue=q.name, job_id="p", part="dependencies", cursor=cursor, count=50
        )
        pages += 1
        assert size == 297
        assert len(page) < 150  # a page is about `count` entries, never the whole set
        members |= set(page)
        if cursor == "0":
            break
    assert pages > 2
    assert members == {q.key(f"k{i}") for i in range(3, 300)}
    cursor, size, page = g.paginate(
        q.r, queue=q.name, job_id="p", part="processed", cursor="0", count=10
    )
    assert (cursor, size) == ("0", 3)  # a small hash comes whole
    assert dict(zip(page[::2], page[1::2], strict=True)) == {
        q.key(f"k{i}"): f'"k{i}"' for i in range(3)
    }
    assert g.paginate(q.r, queue=q.name, job_id="none", part="failed", cursor="0", count=10) == (
        "0",
        0,
        [],
    )


def test_paginate_refuses_a_key_of_another_record(q: Queue) -> None:
    keys = scripts.paginate_keys(q.name, "p", "processed")
    with pytest.raises(LuaError, match="is not job 'p''s failed"):
        g.paginate(q.r, keys=keys, job_id="p", part="failed", cursor="0", count=10)
    with pytest.raises(LuaError, match="cursor must be decimal digits"):
        g.paginate(q.r, keys=keys, job_id="p", part="processed", cursor="x", count=10)
