"""removeJob-13: a job removed in any state, its parent released, its children with it on request,
a held job refused, a scheduler's pending iteration -8 (tests/test_protocol_schedulers.py)."""

from __future__ import annotations

import pytest

from echomq_scripts import generated as g
from echomq_scripts.generated import errors
from echomq_scripts.runtime import LuaError
from tests.support.invariants import NOW, text
from tests.support.queue_harness import Queue


def remove(q: Queue, job_id: str, children: bool = False, limit: int = 10_000) -> int:
    try:
        return g.remove_job(q.r, queue=q.name, job_id=job_id, remove_children=children, limit=limit)
    finally:
        q.check()


@pytest.mark.parametrize(
    "state", ["wait", "paused", "delayed", "prioritized", "completed", "failed", "waiting-children"]
)
def test_a_job_is_removed_from_any_state_it_is_in(q: Queue, state: str) -> None:
    if state == "paused":
        q.pause()
    if state == "delayed":
        q.add_delayed("j", dedup_id="d")
    elif state == "prioritized":
        q.add_prioritized("j", dedup_id="d")
    elif state == "waiting-children":
        q.add_flow(q.node("j", q.node("kid"), dedup_id="d"))
    else:
        q.add("j", dedup_id="d")
    if state in ("completed", "failed"):
        assert q.take_id() == "j"
        q.finish("j", outcome=state, result='"r"')  # type: ignore[arg-type]
        q.r.set(q.key("de:d"), "j")  # still held, as a TTL would hold it
    assert q.check()["j"] == state
    assert remove(q, "j") == 1
    assert "j" not in q.check()
    assert q.r.exists(q.key("j"), q.key("j:dependencies"), q.key("de:d")) == 0
    assert q.events()[-1] == {"event": "removed", "jobId": "j", "prev": state}


def test_a_held_job_or_a_held_descendant_is_refused(q: Queue) -> None:
    q.add_flow(q.node("p", q.node("kid")))
    assert q.take_id() == "kid"
    assert remove(q, "kid") == 0
    assert remove(q, "p", children=True) == 0
    assert q.check() == {"p": "waiting-children", "kid": "active"}
    # Without its children, the parent goes alone: the held child runs on, parentless.
    assert remove(q, "p") == 1
    assert q.check() == {"kid": "active"}


def test_removing_a_pending_or_failed_child_lets_its_parent_go_on(q: Queue) -> None:
    q.add_flow(q.node("p", q.node("a"), q.node("b")))
    assert remove(q, "a") == 1
    assert q.check()["p"] == "waiting-children"
    # b fails with no policy: it holds p in :unsuccessful; removing it lets p go on.
    assert q.take_id() == "b"
    q.fail("b")
    assert q.check()["p"] == "waiting-children"
    assert remove(q, "b") == 1
    assert q.check() == {"p": "wait"}
    assert q.events()[-1] == {"event": "waiting", "jobId": "p", "prev": "waiting-children"}


def test_remove_children_takes_the_whole_tree_finished_or_not(q: Queue) -> None:
    q.add_flow(
        q.node("root", q.node("mid", q.node("leaf1"), q.node("leaf2", delay=100)), q.node("done"))
    )
    assert q.take_id() == "leaf1"
    q.complete("leaf1")
    assert q.take_id() == "done"
    q.complete("done")
    assert q.check() == {
        "root": "waiting-children",
        "mid": "waiting-children",
        "leaf1": "completed",
        "leaf2": "delayed",
        "done": "completed",
    }
    assert remove(q, "mid", children=True) == 1
    # mid was root's last pending child: root goes on.
    assert q.check() == {"root": "wait", "done": "completed"}
    removed = [e["jobId"] for e in q.events() if e["event"] == "removed"]
    assert removed == ["leaf1", "leaf2", "mid"]  # each job after its children
    assert remove(q, "root", children=True) == 1
    assert q.check() == {}


def test_a_missing_job_is_minus_1(q: Queue) -> None:
    with pytest.raises(errors.JobNotExist):
        remove(q, "ghost")
    assert q.events() == []


def test_removing_a_job_that_holds_a_kept_add_drops_it(q: Queue) -> None:
    keep = {"deduplication": {"keepLastIfActive": True}}
    q.add("a", dedup_id="d", opts=keep)
    q.add("b")
    assert q.take_id() == "a"
    q.r.delete(q.key("a:lock"))  # as if its lock ran out
    g.add_standard_job(
        q.r, queue=q.name, job_id="c", name="n", data={}, opts=keep, now=NOW, dedup_id="d"
    )
    assert q.r.exists(q.key("dn:d")) == 1
    assert remove(q, "a") == 1
    assert q.r.exists(q.key("dn:d"), q.key("de:d")) == 0
    assert q.check() == {"b": "wait"}


@pytest.mark.parametrize(
    ("job_id", "key", "message"),
    [
        ("repeat:s", "repeat:s", "contains '\\{', '\\}' or ':'"),
        ("meta", "meta", "is the name of one of the queue's own keys"),
        ("b", "a", "is not the key of job 'b'"),
    ],
)
def test_a_hostile_id_or_a_key_of_another_job_is_refused_before_any_write(
    q: Queue, job_id: str, key: str, message: str
) -> None:
    """Sent as another runtime might: nothing the script would delete by the id or the key."""
    q.add("a")
    q.add("b")
    q.pause()
    before = q.check()
    call_keys = [*g.remove_job_keys(q.name, "a")[:12], q.key(key)]
    with pytest.raises(LuaError, match=message):
        q.raw("removeJob", call_keys, [job_id, "0", "100"])
    assert q.check() == before
    assert q.r.hget(q.key("meta"), "paused") is not None


def test_keys_built_under_a_jobs_name_are_refused(q: Queue) -> None:
    """Every key built on `emq:{q}:P:` instead of the queue's prefix, and the id `processed`:
    the script would delete P's record of its children. Refused, nothing deleted."""
    q.add_flow(q.node("P", q.node("kid")))
    assert q.take_id() == "kid"
    q.complete("kid")
    before = q.check()
    names = [k.removeprefix(q.key("")) for k in g.remove_job_keys(q.name, "x")[:12]]
    crafted = [q.key(f"P:{name}") for name in names] + [q.key("P:processed")]
    with pytest.raises(LuaError, match="is not the queue's wait key"):
        q.raw("removeJob", crafted, ["processed", "0", "100"])
    assert q.check() == before
    assert q.r.exists(q.key("P:processed")) == 1


# -- a tree removed in bounded calls ---------------------------------------------------------


def test_a_tree_larger_than_the_limit_goes_in_calls_each_after_its_children(q: Queue) -> None:
    """A limit of 3 on a tree of 9: every call removes at most 3, each job after its children,
    what a call leaves is still a tree (a parent whose children went stays where it was, not
    released), and the last call removes the job and lets its own parent go on."""
    q.add_flow(
        q.node(
            "top",
            q.node(
                "root",
                q.node("c"),
                q.node("a", q.node("a1"), q.node("a2")),
                q.node("b", q.node("b1"), q.node("b2")),
            ),
        )
    )
    assert q.take_id() == "c"
    q.complete("c")  # a finished child goes with the tree too
    answers: list[int] = []
    removed: list[str] = []
    while not answers or answers[-1] == 2:
        before = len(q.events())
        answers.append(remove(q, "root", children=True, limit=3))
        batch = [e["jobId"] for e in q.events()[before:] if e["event"] == "removed"]
        assert 0 < len(batch) <= 3
        removed += batch
        if answers[-1] == 2:
            assert q.check()["root"] == "waiting-children"
            assert q.check()["top"] == "waiting-children"  # its child is still there
    assert answers == [2, 2, 1]
    assert removed == ["a1", "a2", "a", "b1", "b2", "b", "c", "root"]
    assert q.check() == {"top": "wait"}
    assert q.r.exists(q.key("top:dependencies")) == 0


def test_a_chain_deeper_than_the_limit_is_cut_and_removed(q: Queue) -> None:
    """A chain of 12 with a limit of 2: the walk cannot reach the bottom, so a call that can take
    nothing moves the first job past its reach under the top, and the chain still goes, in a
    bounded number of calls, with every state a tree between them."""
    chain = q.node("c12")
    for depth in range(11, -1, -1):
        chain = q.node(f"c{depth}", chain)
    q.add_flow(chain)
    calls = 0
    while remove(q, "c0", children=True, limit=2) == 2:
        calls += 1
        assert calls < 40
        for job_id in q.check():
            if job_id != "c0":
                # Every job left hangs from a job left, which names it pending.
                parent = text(q.r.hget(q.key(job_id), "parentKey") or b"")
                assert q.r.sismember(f"{parent}:dependencies", q.key(job_id))
    assert q.check() == {}
    assert sorted(e["jobId"] for e in q.events() if e["event"] == "removed") == sorted(
        f"c{d}" for d in range(13)
    )


def test_a_held_descendant_refuses_the_call_that_reaches_it(q: Queue) -> None:
    """What earlier calls removed stays removed; the call that reaches the held job writes
    nothing; once the worker lets go, the walk goes on."""
    q.add_flow(q.node("p", q.node("z"), q.node("a"), q.node("b")))
    assert q.take_id() == "z"
    assert remove(q, "p", children=True, limit=1) == 2  # a
    assert remove(q, "p", children=True, limit=1) == 2  # b
    before = (q.check(), q.events())
    assert remove(q, "p", children=True, limit=1) == 0  # z is held
    assert (q.check(), q.events()) == before
    q.complete("z")
    assert remove(q, "p", children=True, limit=1) == 2  # z
    assert remove(q, "p", children=True, limit=1) == 1
    assert q.check() == {}


def test_records_of_gone_children_do_not_hold_a_removal_back(q: Queue) -> None:
    """A parent whose completed children its retention removed keeps their values in
    :processed: a walk drops such entries as it meets them, even many more than its limit."""
    q.add_flow(
        q.node("p", *(q.node(f"k{i:02}", opts={"removeOnComplete": True}) for i in range(40)))
    )
    for _ in range(40):
        q.complete(q.take_id())
    assert q.r.hlen(q.key("p:processed")) == 40
    assert q.check() == {"p": "wait"}
    calls = 0
    while remove(q, "p", children=True, limit=5) == 2:
        calls += 1
        assert calls < 20
    assert q.check() == {}
    assert q.r.exists(q.key("p:processed")) == 0


def test_a_limit_out_of_range_is_refused(q: Queue) -> None:
    q.add("a")
    for limit in ("0", "10001", "x"):
        with pytest.raises(LuaError, match="limit must be an integer from 1 to 10000"):
            q.raw("removeJob", g.remove_job_keys(q.name, "a"), ["a", "1", limit])
    assert q.check() == {"a": "wait"}


def test_a_job_key_of_another_queue_is_refused(q: Queue) -> None:
    """The queue's keys with job a's key under another prefix (the same slot): refused."""
    q.add("a")
    before = q.check()
    call_keys = [*g.remove_job_keys(q.name, "a")[:12], f"other:{{{q.name}}}:a"]
    with pytest.raises(LuaError, match="is not the key of job 'a'"):
        q.raw("removeJob", call_keys, ["a", "1", "10"])
    call_keys = [*g.remove_unprocessed_children_keys(q.name, "a")[:9], f"other:{{{q.name}}}:a"]
    with pytest.raises(LuaError, match="is not the key of job 'a'"):
        q.raw("removeUnprocessedChildren", call_keys, ["a", "10"])
    with pytest.raises(LuaError, match="limit must be an integer from 1 to 10000"):
        q.raw(
            "removeUnprocessedChildren", g.remove_unprocessed_children_keys(q.name, "a"), ["a", "0"]
        )
    assert q.check() == before
