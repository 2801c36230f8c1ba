"""moveToDelayed-8, a retry after a backoff: its delay, its rounding, its codes.

Each scenario runs through the `Queue` harness, on a single server and on a cluster; what the
harness checks after every step, and what the markers in these tests mean:
tests/support/queue_harness.py.
"""

from __future__ import annotations

import pytest

from echomq_scripts.generated import errors
from tests.support.invariants import NOW
from tests.support.queue_harness import OTHER, TOKEN, Queue


def test_move_to_delayed_backs_off_exponentially_and_releases_the_lock(q: Queue) -> None:
    q.add("a")
    q.take_id()
    q.stalled_check()  # marks a
    assert q.retry("a", base=500, now=NOW + 1) == 500
    assert q.check() == {"a": "delayed"}
    assert q.scores("delayed") == {"a": NOW + 1 + 500}
    assert (q.job("a")["atm"], q.job("a")["delay"]) == ("1", "500")
    assert q.lock("a") is None
    assert q.stalled() == set()
    assert q.last_event() == {"event": "delayed", "jobId": "a", "delay": "500", "prev": "active"}
    assert q.take_id(now=NOW + 501) == "a"
    assert q.retry("a", base=500, jitter=0.25, now=NOW + 600) == 1250
    assert q.scores("delayed") == {"a": NOW + 600 + 1250}
    assert q.take_id(now=NOW + 1850) == "a"
    assert q.retry("a", base=500, jitter=0.999, now=NOW + 2000) == 3998
    assert q.job("a")["atm"] == "3"


def test_backoff_rounds_a_fraction_of_a_millisecond_down_and_wakes_a_worker(q: Queue) -> None:
    q.add("a", opts={"attempts": 3, "backoff": {"delay": 1000}})
    q.take_id()
    q.r.delete(q.key("marker"))  # idle workers took it: the retry must set it to its run-at
    # 1000 * (1 + 0.0007) = 1000.7 ms: the delay is 1000, not 1001.
    assert q.fail("a", jitter=0.0007, now=NOW)[0] == "delayed"
    assert q.job("a")["delay"] == "1000"
    assert q.scores("delayed") == {"a": NOW + 1000}
    assert q.marker() == NOW + 1000
    assert q.take_id(now=NOW + 1000) == "a"
    q.r.delete(q.key("marker"))
    # The second attempt: 333 * 2^1 = 666, plus 666 * 0.0015 = 0.999 ms, is 666.
    assert q.retry("a", base=333, jitter=0.0015, now=NOW + 2000) == 666
    assert q.scores("delayed") == {"a": NOW + 2000 + 666}
    assert q.marker() == NOW + 2000 + 666


def test_move_to_delayed_codes(q: Queue) -> None:
    q.add("w")
    with pytest.raises(errors.JobLockNotExist):
        q.retry("w", base=1)
    q.add("a")
    assert q.take_id() == "w"
    with pytest.raises(errors.JobLockMismatch):
        q.retry("w", base=1, token=OTHER)
    q.r.set(q.key("ghost:lock"), TOKEN)
    q.check()
    with pytest.raises(errors.JobNotExist):
        q.retry("ghost", base=1)
    q.r.set(q.key("a:lock"), TOKEN)
    q.check()
    with pytest.raises(errors.JobNotInState):
        q.retry("a", base=1)
    assert q.check() == {"w": "active", "a": "wait"}
    assert q.job("w")["atm"] == "0"
    assert q.lock("w") == q.token_of("w")
