"""getCounts-8 and getJobState-8 against the keys, in every state.

Each scenario runs through the `Queue` harness, on a single server and on a cluster; what the
harness checks after every step, and what the markers in these tests mean:
tests/support/queue_harness.py.
"""

from __future__ import annotations

from typing import Literal

from tests.support.invariants import STATES
from tests.support.queue_harness import Queue


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
    q.add_flow(q.node("P", q.node("kid")))
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
