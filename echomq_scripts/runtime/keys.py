"""The protocol's keys (L1): one function per key of a queue, as every runtime builds them.

Every key of queue `q` starts with the hash tag `emq:{q}`, so a whole queue lives on one Redis
Cluster slot. A queue name that would break the tag, and a job id that could name another key of
the queue, are refused here with `KeyNameError` before any key is built.

The scripts' headers carry the same layout as key templates (`emq:{q}:wait`); the tests check
that the two agree. Like the runtime, this module imports only the standard library.
"""

from __future__ import annotations

import re
from typing import Final

STATES: Final = (
    "wait",
    "paused",
    "active",
    "delayed",
    "prioritized",
    "completed",
    "failed",
    "waiting-children",
)

# The queue's own key names: a job id equal to one of them would make `emq:{q}:<id>` (the job
# hash) the same key as that one. "metrics", "de", "dn", "token" and "repeat" start families of
# keys (`metrics:<outcome>`, `de:<dedup id>`, `dn:<dedup id>`, `token:<token>`,
# `repeat:<scheduler id>`), and "repeat" is also the scheduler set itself. The add scripts refuse
# the same ids (lua_src/includes/checkJobId.lua; the tests hold the two lists together).
RESERVED_IDS: Final = frozenset(
    {*STATES, "stalled", "events", "meta", "id", "limiter", "pc", "marker", "metrics", "de"}
    | {"dn", "token", "repeat"}
)


class KeyNameError(ValueError):
    """A queue name or a job id that cannot be part of a key."""


def _check_text(what: str, value: object) -> str:
    """A non-empty str that UTF-8 can encode: key names go to Redis as UTF-8 bytes."""
    if not isinstance(value, str) or not value:
        raise KeyNameError(f"a {what} must be a non-empty str, got {value!r:.60}")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise KeyNameError(
                f"{what} {value!r:.60} is not text UTF-8 can encode (a lone surrogate)"
            ) from None
    return value


def check_key_part(value: str, what: str) -> str:
    """`value` itself, when it can be part of a key name: non-empty UTF-8 text without '{' or
    '}', which could move the key's hash tag off the queue's."""
    _check_text(what, value)
    if "{" in value or "}" in value:
        raise KeyNameError(f"{what} {value!r} contains '{{' or '}}': it would break the tag")
    return value


def check_queue(queue: str) -> str:
    """`queue` itself, when it can name a queue (`check_key_part`)."""
    return check_key_part(queue, "queue name")


def check_job_id(job_id: str, what: str = "job id") -> str:
    """`job_id` itself, when it can name a job without colliding with another key: non-empty
    UTF-8 text without '{', '}' or ':', and not one of RESERVED_IDS."""
    # Every wrapper call with a job id runs this: a non-empty ASCII str, the common id, needs
    # none of _check_text's further checks and spares its call.
    if type(job_id) is not str or not job_id or not job_id.isascii():
        _check_text(what, job_id)
    if "{" in job_id or "}" in job_id or ":" in job_id:
        raise KeyNameError(
            f"{what} {job_id!r} contains '{{', '}}' or ':', which would make its keys another's"
        )
    if job_id in RESERVED_IDS:
        raise KeyNameError(f"{what} {job_id!r} is the name of one of the queue's own keys")
    return job_id


def prefix(queue: str) -> str:
    """`emq:{q}:`, the start of every key of the queue."""
    return f"emq:{{{check_queue(queue)}}}:"


def wait(queue: str) -> str:
    """LIST of jobs ready to run, oldest at the right end."""
    return prefix(queue) + "wait"


def paused(queue: str) -> str:
    """LIST of jobs ready to run while the queue is paused."""
    return prefix(queue) + "paused"


def active(queue: str) -> str:
    """LIST of jobs a worker holds the lock of."""
    return prefix(queue) + "active"


def delayed(queue: str) -> str:
    """ZSET of jobs waiting for a time, scored by run-at (ms)."""
    return prefix(queue) + "delayed"


def prioritized(queue: str) -> str:
    """ZSET of ready jobs with a priority, scored by priority * 2^32 + arrival."""
    return prefix(queue) + "prioritized"


def completed(queue: str) -> str:
    """ZSET of completed jobs, scored by finished-at (ms)."""
    return prefix(queue) + "completed"


def failed(queue: str) -> str:
    """ZSET of failed jobs, scored by finished-at (ms)."""
    return prefix(queue) + "failed"


def waiting_children(queue: str) -> str:
    """ZSET of parent jobs waiting for their children, scored by added-at (ms)."""
    return prefix(queue) + "waiting-children"


def state(queue: str, name: str) -> str:
    """The key of the state called `name` (one of STATES)."""
    if name not in STATES:
        raise KeyNameError(f"no state {name!r}; the states are {', '.join(STATES)}")
    return prefix(queue) + name


def stalled(queue: str) -> str:
    """SET of active jobs marked by the stalled check; not a state."""
    return prefix(queue) + "stalled"


def events(queue: str) -> str:
    """STREAM of the queue's events."""
    return prefix(queue) + "events"


def meta(queue: str) -> str:
    """HASH of the queue's settings ("paused", "max-events")."""
    return prefix(queue) + "meta"


def id_counter(queue: str) -> str:
    """STRING counter of generated job ids."""
    return prefix(queue) + "id"


def limiter(queue: str) -> str:
    """STRING counter of the rate limiter's current window."""
    return prefix(queue) + "limiter"


def priority_counter(queue: str) -> str:
    """STRING counter that orders jobs of one priority."""
    return prefix(queue) + "pc"


def marker(queue: str) -> str:
    """ZSET with the member "next", scored by when work is due; idle workers block on it."""
    return prefix(queue) + "marker"


def metrics(queue: str, outcome: str) -> str:
    """HASH of the metrics of the queue's completed or failed jobs: "count", and the per-minute
    series' "prevTS" and "prevCount"."""
    if outcome not in ("completed", "failed"):
        raise KeyNameError(f"metrics are kept for 'completed' and 'failed', not {outcome!r}")
    return prefix(queue) + "metrics:" + outcome


def metrics_data(queue: str, outcome: str) -> str:
    """LIST of the per-minute counts of completed or failed jobs, newest minute first."""
    return metrics(queue, outcome) + ":data"


def job(queue: str, job_id: str) -> str:
    """HASH of one job's fields."""
    return prefix(queue) + check_job_id(job_id)


def lock(queue: str, job_id: str) -> str:
    """STRING holding the token of the worker that has the job."""
    return job(queue, job_id) + ":lock"


def logs(queue: str, job_id: str) -> str:
    """LIST of a job's log lines, oldest first (addLog-2); deleted with the job."""
    return job(queue, job_id) + ":logs"


def dependencies(queue: str, job_id: str) -> str:
    """SET of a parent's pending children, by job key."""
    return job(queue, job_id) + ":dependencies"


def processed(queue: str, job_id: str) -> str:
    """HASH of a parent's completed children: job key -> return value."""
    return job(queue, job_id) + ":processed"


def ignored(queue: str, job_id: str) -> str:
    """HASH of a parent's children whose failure it ignored (ignoreDependencyOnFailure,
    continueParentOnFailure): job key -> failure reason. Its name, ":failed", is BullMQ's."""
    return job(queue, job_id) + ":failed"


def unsuccessful(queue: str, job_id: str) -> str:
    """ZSET of a parent's children that failed under failParentOnFailure or no policy, by job
    key, scored by when they failed: completing the parent answers -9 while it holds one."""
    return job(queue, job_id) + ":unsuccessful"


def _check_dedup_id(dedup_id: str) -> str:
    if not isinstance(dedup_id, str) or not dedup_id or re.search(r"[{}]", dedup_id):
        raise KeyNameError(
            f"a deduplication id must be a non-empty str without braces: {dedup_id!r:.60}"
        )
    return dedup_id


def dedup(queue: str, dedup_id: str) -> str:
    """STRING holding the id of the job that holds a deduplication id (with a TTL when the add
    gave one)."""
    return prefix(queue) + "de:" + _check_dedup_id(dedup_id)


def dedup_next(queue: str, dedup_id: str) -> str:
    """HASH of the add kept while the holder of a deduplication id was active (keepLastIfActive):
    its name, data, opts, custom id ("jid") and delay or priority; added when the holder
    finishes."""
    return prefix(queue) + "dn:" + _check_dedup_id(dedup_id)


def schedulers(queue: str) -> str:
    """ZSET of the queue's job schedulers, by id, scored by their next run (ms)."""
    return prefix(queue) + "repeat"


def scheduler(queue: str, scheduler_id: str) -> str:
    """HASH of a job scheduler's settings, its offset and its iteration count ("ic")."""
    return prefix(queue) + "repeat:" + check_job_id(scheduler_id, "scheduler id")
