"""getCounts-8 and getJobState-8 against the keys, in every state.

Every scenario checks the one-state invariant (tests/support/invariants.py) after every step: the
`Queue` harness (tests/support/queue_harness.py) runs each wrapper and then the invariant, and also
checks that getCounts-8 and getJobState-8 tell the same story as the invariant's own reading of
the eight keys. The `q` fixture runs each scenario on a single server and on a Redis Cluster.

Tests marked "Regression (c0b1651)" state documented behaviour that commit c0b1651 broke and
21a7ef3 fixed; they fail on c0b1651. A script found to break its header or the protocol's
documents gets a test of the documented behaviour, marked xfail(strict=True) with the reason.
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
    q.add_parent("P")
    q.add("kid", parent_id="P")
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
