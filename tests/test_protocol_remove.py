"""removeJob-13: a job removed in any state, its parent released, its children with it on request,
a held job refused, a scheduler's pending iteration -8 (tests/test_protocol_schedulers.py)."""

from __future__ import annotations

import pytest

from echomq_scripts import generated as g
from echomq_scripts.generated import errors
from echomq_scripts.runtime import LuaError
from tests.support.invariants import NOW
from tests.support.queue_harness import Queue


def remove(q: Queue, job_id: str, children: bool = False) -> int:
    try:
        return g.remove_job(q.r, queue=q.name, job_id=job_id, remove_children=children)
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
    assert removed == ["mid", "leaf1", "leaf2"]
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
        q.r, queue=q.name, job_id="c", name="n", data="{}", opts=keep, now=NOW, dedup_id="d"
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
        q.raw("removeJob", call_keys, [job_id, "0"])
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
        q.raw("removeJob", crafted, ["processed", "0"])
    assert q.check() == before
    assert q.r.exists(q.key("P:processed")) == 1
