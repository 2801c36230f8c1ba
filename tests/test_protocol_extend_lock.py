"""extendLock-2, the heartbeat: its codes, and the lock and stalled mark it renews.

Every scenario checks the one-state invariant (tests/support/invariants.py) after every step: the
`Queue` harness (tests/support/queue_harness.py) runs each wrapper and then the invariant, and also
checks that getCounts-8 and getJobState-8 tell the same story as the invariant's own reading of
the eight keys. The `q` fixture runs each scenario on a single server and on a Redis Cluster.

Tests marked "Regression (c0b1651)" state documented behaviour that commit c0b1651 broke and
21a7ef3 fixed; they fail on c0b1651. A script found to break its header or the protocol's
documents gets a test of the documented behaviour, marked xfail(strict=True) with the reason.
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
