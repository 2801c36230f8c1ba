"""pause-5: pausing and resuming with jobs in flight, and the work a resume wakes.

Each scenario runs through the `Queue` harness, on a single server and on a cluster; what the
harness checks after every step, and what the markers in these tests mean:
tests/support/queue_harness.py.
"""

from __future__ import annotations

import pytest

from echomq_scripts import generated as g
from echomq_scripts.runtime import LuaError
from tests.support.invariants import NOW
from tests.support.queue_harness import Queue


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
    with pytest.raises(LuaError, match="action must be 'pause' or 'resume', got 'stop'") as refused:
        q.raw("pause", g.pause_keys(q.name), ["stop"])
    assert refused.value.source == "includes/enumArg.lua"
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
