"""The scripts that read or change one job's data and lock without moving it: updateData-1,
updateProgress-3, addLog-2 and getJobLogs-1, saveStacktrace-1, isFinished-3, isJobInList-1,
releaseLock-1 and extendLocks-1.

Each scenario runs through the `Queue` harness, on a single server and on a cluster; what the
harness checks after every step: tests/support/queue_harness.py.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import pytest

from echomq_scripts import generated as g
from echomq_scripts.generated import errors
from echomq_scripts.runtime import LuaError, keys
from tests.support.invariants import text
from tests.support.queue_harness import OTHER, Queue, checked


def logs(q: Queue, job_id: str) -> list[str]:
    return [text(line) for line in q.r.lrange(keys.logs(q.name, job_id), 0, -1)]


def test_update_data_replaces_only_the_data(q: Queue) -> None:
    q.add("a", data={"v": 1})
    before = q.job("a")
    events = len(q.events())
    assert checked(q, lambda: g.update_data(q.r, queue=q.name, job_id="a", data={"v": 2})) == 1
    assert q.job("a") == {**before, "data": '{"v":2}'}
    assert len(q.events()) == events  # no event
    with pytest.raises(errors.JobNotExist):
        checked(q, lambda: g.update_data(q.r, queue=q.name, job_id="gone", data={}))
    assert not q.r.exists(q.key("gone"))


def test_update_progress_stores_the_json_and_tells_the_listeners(q: Queue) -> None:
    q.add("a")
    assert q.take_id() == "a"
    for progress, sent in ((42, "42"), ({"step": 2, "of": 3}, '{"step":2,"of":3}')):
        update = partial(g.update_progress, q.r, queue=q.name, job_id="a", progress=progress)
        assert checked(q, update) == 1
        assert q.job("a")["progress"] == sent
        assert q.last_event() == {"event": "progress", "jobId": "a", "data": sent}
    assert q.check() == {"a": "active"}  # it moves nothing
    events = len(q.events())
    with pytest.raises(errors.JobNotExist):
        checked(q, lambda: g.update_progress(q.r, queue=q.name, job_id="gone", progress=1))
    assert len(q.events()) == events


def test_add_log_keeps_the_newest_lines_and_pages_both_ways(q: Queue) -> None:
    q.add("a")

    def add_log(line: str, keep: int = 0) -> int:
        return checked(
            q, lambda: g.add_log(q.r, queue=q.name, job_id="a", line=line, keep_logs=keep)
        )

    assert [add_log(f"l{i}") for i in range(1, 5)] == [1, 2, 3, 4]
    assert add_log("l5", keep=3) == 3  # the oldest two go
    assert logs(q, "a") == ["l3", "l4", "l5"]
    assert add_log("l6", keep=10) == 4  # a cap above the count trims nothing

    def page(start: int, count: int, asc: bool) -> tuple[int, list[str]]:
        return g.get_job_logs(q.r, queue=q.name, job_id="a", start=start, count=count, asc=asc)

    assert page(0, 10, True) == (4, ["l3", "l4", "l5", "l6"])
    assert page(1, 2, True) == (4, ["l4", "l5"])
    assert page(0, 2, False) == (4, ["l6", "l5"])  # newest first
    assert page(1, 2, False) == (4, ["l5", "l4"])
    assert page(3, 5, False) == (4, ["l3"])
    assert page(4, 1, True) == (4, [])
    assert g.get_job_logs(q.r, queue=q.name, job_id="none", start=0, count=5, asc=True) == (0, [])
    with pytest.raises(errors.JobNotExist):
        checked(q, lambda: g.add_log(q.r, queue=q.name, job_id="gone", line="x", keep_logs=0))
    assert not q.r.exists(keys.logs(q.name, "gone"))


def test_logs_go_with_their_job(q: Queue) -> None:
    q.add("kept")
    q.add("done", opts={"removeOnComplete": True})
    for job_id in ("kept", "done"):
        g.add_log(q.r, queue=q.name, job_id=job_id, line="hello", keep_logs=0)
    assert q.take_id() == "kept"
    assert q.take_id() == "done"
    q.complete("done")  # retention removes it, and its logs
    assert not q.r.exists(q.key("done"), keys.logs(q.name, "done"))
    q.complete("kept")
    assert logs(q, "kept") == ["hello"]
    assert checked(
        q, lambda: g.remove_job(q.r, queue=q.name, job_id="kept", remove_children=False, limit=100)
    )
    assert not q.r.exists(keys.logs(q.name, "kept"))


def test_save_stacktrace_sets_the_trace_and_the_reason(q: Queue) -> None:
    q.add("a")
    saved = checked(
        q,
        lambda: g.save_stacktrace(
            q.r, queue=q.name, job_id="a", stacktrace='["Error: x"]', failed_reason="x"
        ),
    )
    assert saved == 1
    job = q.job("a")
    assert (job["stacktrace"], job["failedReason"]) == ('["Error: x"]', "x")
    assert q.check() == {"a": "wait"}
    with pytest.raises(errors.JobNotExist):
        checked(
            q,
            lambda: g.save_stacktrace(
                q.r, queue=q.name, job_id="gone", stacktrace="", failed_reason=""
            ),
        )
    assert not q.r.exists(q.key("gone"))


def test_is_finished_by_state_with_and_without_the_value(q: Queue) -> None:
    def finished(job_id: str, value: bool) -> int | tuple[int, str]:
        return g.is_finished(q.r, queue=q.name, job_id=job_id, return_value=value)

    q.add("ok")
    q.add("bad")
    q.add("waits")
    assert q.take_id() == "ok"
    assert q.take_id() == "bad"
    assert (finished("ok", False), finished("ok", True)) == (0, (0, ""))  # active
    q.complete("ok", '"yes"')
    q.fail("bad", "no")
    assert (finished("ok", False), finished("ok", True)) == (1, (1, '"yes"'))
    assert (finished("bad", False), finished("bad", True)) == (2, (2, "no"))
    assert (finished("waits", False), finished("waits", True)) == (0, (0, ""))
    for value in (False, True):
        with pytest.raises(errors.JobNotExist):
            finished("gone", value)


def test_is_job_in_list_asks_one_list(q: Queue) -> None:
    q.add("w")
    q.add("a")
    q.add("later")
    assert q.take_id() == "w"  # the oldest: "a" and "later" stay in wait

    def found(state: str, job_id: str) -> int:
        return g.is_job_in_list(q.r, queue=q.name, state=state, job_id=job_id)  # type: ignore[arg-type]

    assert [found(s, "w") for s in ("wait", "paused", "active")] == [0, 0, 1]
    assert [found(s, "a") for s in ("wait", "paused", "active")] == [1, 0, 0]
    q.pause()
    assert [found(s, "a") for s in ("wait", "paused", "active")] == [0, 1, 0]
    assert found("wait", "gone") == 0


def test_release_lock_leaves_the_job_to_the_stalled_check(q: Queue) -> None:
    q.add("a")
    assert q.take_id(token="t-1") == "a"
    token_key = q.key("token:t-1")

    def release(token: str, job_id: str = "a") -> int:
        return checked(q, lambda: g.release_lock(q.r, queue=q.name, job_id=job_id, token=token))

    assert release(OTHER) == 0  # another token: nothing changes
    assert (q.lock("a"), q.r.get(token_key)) == ("t-1", b"a")
    assert release("t-1") == 1
    assert (q.lock("a"), q.r.exists(token_key)) == (None, 0)  # the record goes with the lock
    assert q.check() == {"a": "active"}
    assert release("t-1") == 0  # already gone
    assert release("t-1", "gone") == 0
    # Held by no worker, the job is found by the stalled check's second run.
    assert q.stalled_check() == ([], [])
    assert q.stalled_check() == (["a"], [])
    assert q.check() == {"a": "wait"}


def test_release_lock_keeps_a_record_that_names_another_job(q: Queue) -> None:
    """A record the token's later pickup wrote is not this lock's: it stays."""
    q.add("a")
    assert q.take_id(token="t-1") == "a"
    q.r.set(q.key("a:lock"), "t-1")  # the lock, and a record about another job
    q.r.set(q.key("token:t-1"), "b:a:completed", px=60_000)
    assert g.release_lock(q.r, queue=q.name, job_id="a", token="t-1") == 1
    assert q.r.get(q.key("token:t-1")) == b"b:a:completed"
    q.check()


def test_extend_locks_extends_each_held_lock_and_answers_the_others(q: Queue) -> None:
    for job_id in ("a", "b", "c"):
        q.add(job_id)
        assert q.take_id(token=f"t-{job_id}", lock_ms=1000) == job_id
    q.expire_lock("c")
    assert q.stalled_check() == ([], [])
    assert q.stalled() == {"a", "b", "c"}
    jobs = ["a", "t-a", "b", OTHER, "c", "t-c", "gone", "t-x"]
    refused = checked(q, lambda: g.extend_locks(q.r, queue=q.name, duration=60_000, jobs=jobs))
    assert refused == [("b", -6), ("c", -2), ("gone", -2)]
    assert 1000 < q.pttl("a") <= 60_000
    assert 1000 < q.r.pttl(q.key("token:t-a")) <= 60_000  # its record lives on with it
    assert q.pttl("b") <= 1000  # not extended
    assert q.stalled() == {"b", "c"}  # only the extended job's mark is cleared
    assert checked(q, lambda: g.extend_locks(q.r, queue=q.name, duration=5000, jobs=[])) == []


def test_extend_locks_refuses_bad_pairs_before_it_extends_any(q: Queue) -> None:
    q.add("a")
    assert q.take_id(token="t-a", lock_ms=1000) == "a"
    q.stalled_check()
    stalled_key = g.extend_locks_keys(q.name).stalled
    for args, message in (
        (["60000", "a", "t-a", "b"], "pairs of a job id and a token"),
        (["60000", "a", "t-a", "x:lock", "t-x"], "contains"),
        (["60000", "a", "t-a", "wait", "t-x"], "one of the queue's own keys"),
        (["60000", "a", "t-a", "b", ""], "token must not be empty"),
        (["1e3", "a", "t-a"], "duration must be an integer"),
    ):
        with pytest.raises(LuaError, match=message):
            q.raw("extendLocks", [stalled_key], args)
        assert q.pttl("a") <= 1000
        assert q.stalled() == {"a"}
    with pytest.raises(LuaError, match="is not the queue's stalled key"):
        q.raw("extendLocks", [q.key("wait")], ["60000", "a", "t-a"])


@pytest.mark.parametrize(
    ("script", "keys_of", "args"),
    [
        ("updateData", lambda q: [q.key("b")], ["a", "{}"]),
        ("updateProgress", lambda q: [q.key("b"), q.key("events"), q.key("meta")], ["a", "1"]),
        ("updateProgress", lambda q: [q.key("a"), q.key("wait"), q.key("meta")], ["a", "1"]),
        ("addLog", lambda q: [q.key("a"), q.key("b:logs")], ["a", "x", "0"]),
        ("saveStacktrace", lambda q: [q.key("b")], ["a", "", ""]),
        ("releaseLock", lambda q: [q.key("b:lock")], ["a", "t-a"]),
        ("releaseLock", lambda q: [q.key("wait:lock")], ["wait", "t-a"]),
        ("getJobLogs", lambda q: [q.key("b:logs")], ["a", "0", "1", "1"]),
        ("isFinished", lambda q: [q.key("completed"), q.key("failed"), q.key("b")], ["a", "0"]),
    ],
)
def test_keys_built_for_another_job_are_refused(
    q: Queue, script: str, keys_of: Callable[[Queue], list[str]], args: list[str]
) -> None:
    """A runtime that builds the keys itself must build them for the job it names: the script
    refuses another's before it writes anything."""
    q.add("a")
    q.add("b")
    assert q.take_id(token="t-a") == "a"
    before = {job_id: q.job(job_id) for job_id in ("a", "b")}
    events = len(q.events())
    with pytest.raises(LuaError, match=r"key|job id"):
        q.raw(script, keys_of(q), args)
    assert {job_id: q.job(job_id) for job_id in ("a", "b")} == before
    assert (q.lock("a"), len(q.events())) == ("t-a", events)
    assert not q.r.exists(q.key("a:logs"), q.key("b:logs"))
