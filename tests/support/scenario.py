"""The scenario that every runtime consuming the bundle runs (tests/node/consume.mjs,
tests/go/consume/main.go), run here by the Python wrappers, and a snapshot of a queue's keys
and values to compare the runtimes by, byte for byte."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from echomq_scripts import generated as g
from echomq_scripts.generated.errors import JobLockMismatch
from echomq_scripts.runtime.replies import text


def snapshot(r: redis.Redis, queue: str) -> dict[str, Any]:
    """Every key of `queue` with its value, the queue's name written as "Q": stream entries by
    their fields (their ids are the server's clock), and no TTLs."""
    found: dict[str, Any] = {}
    for raw in sorted(r.keys(f"emq:{{{queue}}}:*")):
        key = text(raw).replace(f"{{{queue}}}", "{Q}")
        kind = text(r.type(raw))
        if kind == "hash":
            value: Any = sorted(r.hgetall(raw).items())
        elif kind == "zset":
            value = r.zrange(raw, 0, -1, withscores=True)
        elif kind == "list":
            value = r.lrange(raw, 0, -1)
        elif kind == "set":
            value = sorted(r.smembers(raw))
        elif kind == "stream":
            value = [fields for _, fields in r.xrange(raw) or []]
        else:
            value = r.get(raw)
        found[key] = (kind, value)
    return found


def python_life(r: redis.Redis, queue: str) -> None:
    """The scenario every runtime's consumer of the bundle runs, through the generated
    wrappers: add, pickup, a heartbeat, a finish with another worker's token, the finish."""
    job_id, _ = g.add_standard_job(r, queue=queue, name="email", data={"to": "a@b.c"}, now=1000)
    g.move_to_active(r, queue=queue, token="worker:1", now=1001)
    g.extend_lock(r, queue=queue, job_id=job_id, token="worker:1", duration=30000)

    def finish(token: str, now: int, result: str) -> object:
        return g.move_to_finished(
            r, queue=queue, job_id=job_id, outcome="completed", token=token, now=now, result=result
        )

    with pytest.raises(JobLockMismatch):
        finish("worker:2", 1004, '"stolen"')
    finish("worker:1", 1005, '"sent"')
