"""The add scripts (addStandardJob-6, addDelayedJob-5, addPrioritizedJob-6) and addFlow-10's nodes:
where each puts its job, ids, deduplication, parents, refused options.

Each scenario runs through the `Queue` harness, on a single server and on a cluster; what the
harness checks after every step, and what the markers in these tests mean:
tests/support/queue_harness.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from echomq_scripts import generated as g
from echomq_scripts.generated import errors
from echomq_scripts.runtime import LuaError
from tests.support.invariants import (
    NOW,
    add_delayed,
    add_flow,
    add_prioritized,
    add_standard,
    text,
)
from tests.support.queue_harness import Queue, run_to


def test_a_standard_job_goes_to_wait_with_its_fields_and_a_waiting_event(q: Queue) -> None:
    job_id = q.add("a", name="email", data={"to": "x"}, opts={"attempts": 2})
    assert q.check() == {"a": "wait"}
    assert q.job("a") == {
        "name": "email",
        "data": '{"to":"x"}',
        "opts": '{"attempts":2}',  # as the wrapper sends it: compact JSON
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
    q.add_flow(q.node("P", q.node("c")))
    assert q.check() == {"P": "waiting-children", "c": "wait"}
    assert q.scores("waiting-children") == {"P": NOW}
    assert q.events() == [
        {"event": "waiting-children", "jobId": "P"},
        {"event": "waiting", "jobId": "c", "name": "job"},
    ]


def root_of(q: Queue, **node: Any) -> tuple[str, int]:
    """A flow of a parent (`node`) and one child: the parent's id and whether it was added."""
    ids = add_flow(q.r, q.name, q.node(node.pop("job_id", ""), q.node(), **node))
    return ids.job_id, ids.added


def leaf_of(q: Queue, **node: Any) -> tuple[str, int]:
    """A flow of one job (`node`): its id and whether it was added."""
    ids = add_flow(q.r, q.name, q.node(**node))
    return ids.job_id, ids.added


@pytest.mark.parametrize("kind", ["standard", "delayed", "prioritized", "flow"])
def test_an_existing_custom_id_adds_nothing_and_answers_it_with_0(q: Queue, kind: str) -> None:
    q.add("x", name="first", data={"n": 1})
    before_job, before_events = q.job("x"), q.events()
    adders = {
        "standard": lambda: add_standard(q.r, q.name, job_id="x", name="second"),
        "delayed": lambda: add_delayed(q.r, q.name, job_id="x", name="second"),
        "prioritized": lambda: add_prioritized(q.r, q.name, job_id="x", name="second"),
        "flow": lambda: leaf_of(q, job_id="x"),
    }
    assert adders[kind]() == ("x", 0)
    assert q.check() == {"x": "wait"}
    assert q.job("x") == before_job
    # The one write: a `duplicated` event, as BullMQ appends for an id it already has.
    assert q.events() == [*before_events, {"event": "duplicated", "jobId": "x"}]


def test_generated_ids_count_up_across_every_add_script(q: Queue) -> None:
    assert q.add() == "1"
    assert q.add_delayed() == "2"
    assert q.add_prioritized() == "3"
    assert root_of(q) == ("4", 1)  # and its child, "5"
    assert q.add() == "6"
    assert q.check() == {
        "1": "wait",
        "2": "delayed",
        "3": "prioritized",
        "4": "waiting-children",
        "5": "wait",
        "6": "wait",
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
    assert root_of(q, dedup_id="mail-42") == ("h", 0)  # and its child is not added
    assert q.check() == {"h": "wait"}
    deduplicated = {"event": "deduplicated", "jobId": "h", "deduplicationId": "mail-42"}
    assert q.events()[1:] == [
        {**deduplicated, "deduplicatedJobId": "other"},
        *[{**deduplicated, "deduplicatedJobId": ""}] * 4,
    ]


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
    shapes: dict[str, dict[str, Any]] = {
        "standard": {},
        "delayed": {"delay": 1000},
        "prioritized": {"priority": 1},
        "parent": {},
    }
    children = [q.node()] if kind == "parent" else []
    with pytest.raises(errors.ParentJobNotExist) as failure:
        q.add_flow(q.node(job_id, *children, dedup_id="d", **shapes[kind]), parent_id="nope")
    assert failure.value.code == -5
    assert q.check() == {}
    assert q.r.exists(q.key("de:d"), q.key("nope:dependencies"), q.key("c"), q.key("id")) == 0
    assert q.events() == []


def test_a_child_names_its_parent_and_the_parent_counts_it(q: Queue) -> None:
    q.add_flow(q.node("P", q.node("c1"), q.node("c2", delay=1000)))
    assert q.job("c1")["parentKey"] == q.key("P")
    deps = {text(m) for m in q.r.smembers(q.key("P:dependencies"))}
    assert deps == {q.key("c1"), q.key("c2")}
    assert q.check() == {"P": "waiting-children", "c1": "wait", "c2": "delayed"}


@pytest.mark.parametrize("priority", ["0", "-1", "2097152", "1.5", "high"])
def test_a_priority_out_of_range_is_refused_before_any_write(q: Queue, priority: str) -> None:
    # Regression (c0b1651): priority 0 wrote the hash, then failed, leaving the job in no state.
    # Sent as another runtime would: the wrapper refuses these before sending (test_arguments).
    args = ["p", "job", "{}", "{}", str(NOW), "d", priority]
    with pytest.raises(LuaError, match="priority must be an integer from 1 to 2097151"):
        q.raw("addPrioritizedJob", g.add_prioritized_job_keys(q.name), args)
    assert q.check() == {}
    assert q.r.exists(q.key("p"), q.key("de:d"), q.key("id"), q.key("pc")) == 0
    assert q.events() == []
    q.add_prioritized("top", priority=2_097_151)
    q.add_prioritized("first", priority=1)
    assert [q.take_id(), q.take_id()] == ["first", "top"]


@pytest.mark.parametrize("opts", ["not json", "3", "null", "true", '"text"', "[1]"])
@pytest.mark.parametrize("kind", ["standard", "delayed", "prioritized", "flow"])
def test_options_that_are_not_a_json_object_are_refused_before_any_write(
    q: Queue, kind: str, opts: str
) -> None:
    # Regression (c0b1651): such options were stored, and moveToFinished-14 then failed on them
    # after taking the job out of active, leaving it in no state.
    job = ["", "job", "{}", opts, str(NOW), "d"]
    calls = {
        "standard": ("addStandardJob", g.add_standard_job_keys(q.name), job),
        "delayed": ("addDelayedJob", g.add_delayed_job_keys(q.name), [*job, "1000"]),
        "prioritized": ("addPrioritizedJob", g.add_prioritized_job_keys(q.name), [*job, "1"]),
        # A parent whose child has the options: the parent is not written either.
        "flow": (
            "addFlow",
            g.add_flow_keys(q.name),
            [
                str(NOW),
                "",
                "",
                "P",
                "{}",
                "{}",
                "",
                "0",
                "0",
                "1",
                "",
                "c",
                "{}",
                opts,
                "d",
                "0",
                "0",
                "0",
            ],
        ),
    }
    name, keys, args = calls[kind]
    with pytest.raises(LuaError, match="opts must be a JSON object"):
        q.raw(name, keys, args)
    assert q.check() == {}
    assert q.r.exists(q.key("id"), q.key("de:d")) == 0
