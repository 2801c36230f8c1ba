"""extendLock-2, the heartbeat: its codes, and the lock and stalled mark it renews.

Each scenario runs through the `Queue` harness, on a single server and on a cluster; what the
harness checks after every step, and what the markers in these tests mean:
tests/support/queue_harness.py.
"""

from __future__ import annotations

import pytest

from echomq_scripts.generated import errors
from tests.support.queue_harness import OTHER, Queue


def test_extend_lock_codes_and_heartbeat(q: Queue) -> None:
    q.add("a")
    with pytest.raises(errors.JobLockNotExist):
        q.extend("a")
    q.take_id(token="t-1", lock_ms=1000)
    with pytest.raises(errors.JobLockMismatch):
        q.extend("a", token=OTHER)
    assert q.lock("a") == "t-1"
    assert q.stalled_check() == ([], [])
    assert q.stalled() == {"a"}
    assert q.extend("a", duration=60_000) == 1
    assert 1000 < q.pttl("a") <= 60_000
    # The token's record lives on with the lock.
    assert 1000 < q.r.pttl(q.key("token:t-1")) <= 60_000
    assert q.stalled() == set()
    assert q.check() == {"a": "active"}
