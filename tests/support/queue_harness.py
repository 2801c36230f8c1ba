"""The harness the protocol's tests drive a queue with: `Queue` runs each script through its
generated wrapper and then checks the one-state invariant (tests/support/invariants.py), and that
getCounts-8 and getJobState-8 tell the same story as the invariant's own reading of the eight
keys. Time comes in arguments only, so nothing sleeps: a lock's expiry is its key's deletion, the
rate limiter's window passing is its counter's. The `q` fixture (tests/conftest.py) gives a
`Queue` on a single server and on a Redis Cluster.

The protocol's scenarios (tests/test_protocol_*.py, one file per transition) run through it.
Those marked "Regression (c0b1651)" state documented behaviour that commit c0b1651 broke and
21a7ef3 fixed; they fail on c0b1651. A script found to break its header or the protocol's
documents gets a test of the documented behaviour, marked xfail(strict=True) with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar, cast

from echomq_scripts import generated as g
from echomq_scripts.flows import FlowIds, FlowJob
from tests.support.invariants import (
    NOW,
    STATES,
    Client,
    add_delayed,
    add_flow,
    add_prioritized,
    add_standard,
    assert_one_state,
    key,
    text,
)

TOKEN = "worker-a"
"""A token for locks a test sets by hand; pickups draw their own (`Queue.take`)."""
OTHER = "worker-b"
"""Another worker's token."""
LOCK_MS = 30_000
RETRY = {"attempts": 3, "backoff": {"delay": 1000}}


T = TypeVar("T")


def checked(q: Queue, step: Callable[[], T]) -> T:
    """A step, then the harness's invariant, also when the step raised."""
    try:
        return step()
    finally:
        q.check()


class Queue:
    """One queue driven through the wrappers; every step ends with `check()`."""

    def __init__(self, r: Client, name: str = "proto") -> None:
        self.r = r
        self.name = name
        # A token names one pickup: each take draws a new one, and the finishing calls default
        # to the token that took their job.
        self.pickups = 0
        self.tokens: dict[str, str] = {}

    def token_of(self, job_id: str) -> str:
        """The token the harness's last pickup of `job_id` used (TOKEN for a hand-set lock)."""
        return self.tokens.get(job_id, TOKEN)

    def new_token(self) -> str:
        self.pickups += 1
        return f"{self.name}-pickup-{self.pickups}"

    # -- the invariant and the two read scripts -------------------------------------------

    def check(self) -> dict[str, str]:
        """The one-state invariant, then getCounts-8 and getJobState-8 against it."""
        states = assert_one_state(self.r, self.name)
        # Both read scripts in one round trip: their pipeline wrappers.
        pipe = self.r.pipeline(transaction=False)
        counting = g.get_counts_pipeline(pipe, queue=self.name)
        asking = {
            job_id: g.get_job_state_pipeline(pipe, queue=self.name, job_id=job_id)
            for job_id in states
        }
        replies = pipe.execute()
        counts = counting.result(replies)
        expected = tuple(sum(1 for s in states.values() if s == state) for state in STATES)
        assert counts == expected, f"getCounts {counts} != the keys' {expected}"
        assert counts._fields == tuple(state.replace("-", "_") for state in STATES)
        told = {job_id: pending.result(replies) for job_id, pending in asking.items()}
        assert told == states, f"getJobState says {told}, the keys say {states}"
        return states

    def state(self, job_id: str) -> str:
        return g.get_job_state(self.r, queue=self.name, job_id=job_id)

    def counts(self) -> dict[str, int]:
        return dict(zip(STATES, g.get_counts(self.r, queue=self.name), strict=True))

    # -- adding (the invariants module's helpers check after each add) ----------------------

    def add(self, job_id: str = "", **kwargs: Any) -> str:
        new_id, added = add_standard(self.r, self.name, job_id=job_id, **kwargs)
        assert added == 1
        self.check()
        return new_id

    def add_delayed(self, job_id: str = "", *, delay: int = 1000, **kwargs: Any) -> str:
        new_id, added = add_delayed(self.r, self.name, job_id=job_id, delay=delay, **kwargs)
        assert added == 1
        self.check()
        return new_id

    def add_prioritized(self, job_id: str = "", *, priority: int = 1, **kwargs: Any) -> str:
        new_id, added = add_prioritized(
            self.r, self.name, job_id=job_id, priority=priority, **kwargs
        )
        assert added == 1
        self.check()
        return new_id

    def add_flow(self, flow: FlowJob, *, parent_id: str = "", now: int = NOW) -> FlowIds:
        ids = add_flow(self.r, self.name, flow, parent_id=parent_id, now=now)
        self.check()
        return ids

    def node(self, job_id: str = "", *children: FlowJob, **kwargs: Any) -> FlowJob:
        """A flow's node in this queue, named as the add helpers name jobs: "parent" when it has
        `children`, else "job"."""
        kwargs.setdefault("name", "parent" if children else "job")
        return FlowJob(queue=self.name, job_id=job_id, children=children, **kwargs)

    def add_child(self, parent_id: str, job_id: str = "", **kwargs: Any) -> str:
        """One job added below an existing one: a flow of one node, below `parent_id`."""
        ids = self.add_flow(self.node(job_id, **kwargs), parent_id=parent_id)
        assert ids.added == 1
        return ids.job_id

    # -- the worker's scripts ---------------------------------------------------------------

    def take(
        self,
        *,
        token: str | None = None,
        now: int = NOW,
        lock_ms: int = LOCK_MS,
        limit_max: int = 0,
        limit_duration: int = 0,
        concurrency: int = 0,
    ) -> tuple[str, dict[str, str], int]:
        """moveToActive-11, with a new token unless one is given."""
        token = token or self.new_token()
        try:
            taken = g.move_to_active(
                self.r,
                queue=self.name,
                token=token,
                lock_duration=lock_ms,
                now=now,
                limit_max=limit_max,
                limit_duration=limit_duration,
                concurrency=concurrency,
            )
        finally:
            self.check()
        assert taken.token == token  # the reply names the token the pickup holds
        if taken.job_id:
            self.tokens[taken.job_id] = token
        return taken.job_id, taken.fields, taken.limit_delay

    def take_id(self, **kwargs: Any) -> str:
        """moveToActive-11, answering the picked job's id ("" for none)."""
        job_id, _fields, _limited = self.take(**kwargs)
        return job_id

    def finish(
        self,
        job_id: str,
        *,
        outcome: Literal["completed", "failed"],
        result: str,
        stacktrace: str = "",
        token: str | None = None,
        now: int = NOW,
        jitter: float = 0.0,
        fetch_next: bool = False,
        lock_ms: int = LOCK_MS,
        limit_max: int = 0,
        limit_duration: int = 0,
        concurrency: int = 0,
        max_metrics: int = 0,
        backoff_delay: int = 0,
    ) -> tuple[str, str, dict[str, str], int]:
        """moveToFinished-14, with the token that took the job unless one is given; a job it
        fetches keeps that token."""
        token = token or self.token_of(job_id)
        try:
            finished = g.move_to_finished(
                self.r,
                queue=self.name,
                job_id=job_id,
                token=token,
                now=now,
                outcome=outcome,
                result=result,
                stacktrace=stacktrace,
                jitter=jitter,
                fetch_next=fetch_next,
                lock_duration=lock_ms,
                limit_max=limit_max,
                limit_duration=limit_duration,
                concurrency=concurrency,
                max_metrics=max_metrics,
                backoff_delay=backoff_delay,
            )
        finally:
            self.check()
        if finished[1]:
            self.tokens[finished[1]] = token
        return finished

    def complete(
        self, job_id: str, value: str = '"done"', **kwargs: Any
    ) -> tuple[str, str, dict[str, str], int]:
        return self.finish(job_id, outcome="completed", result=value, **kwargs)

    def fail(
        self, job_id: str, reason: str = "boom", **kwargs: Any
    ) -> tuple[str, str, dict[str, str], int]:
        kwargs.setdefault("stacktrace", "Error: boom\n  at work")
        return self.finish(job_id, outcome="failed", result=reason, **kwargs)

    def retry(
        self,
        job_id: str,
        *,
        base: int,
        jitter: float = 0.0,
        token: str | None = None,
        now: int = NOW,
    ) -> int:
        """moveToDelayed-8."""
        try:
            return g.move_to_delayed(
                self.r,
                queue=self.name,
                job_id=job_id,
                token=token or self.token_of(job_id),
                now=now,
                base=base,
                jitter=jitter,
            )
        finally:
            self.check()

    def extend(self, job_id: str, *, token: str | None = None, duration: int = LOCK_MS) -> int:
        """extendLock-2."""
        try:
            return g.extend_lock(
                self.r,
                queue=self.name,
                token=token or self.token_of(job_id),
                duration=duration,
                job_id=job_id,
            )
        finally:
            self.check()

    def stalled_check(self, *, max_stalled: int = 1, now: int = NOW) -> tuple[list[str], list[str]]:
        """moveStalledJobsToWait-8."""
        try:
            return g.move_stalled_jobs_to_wait(
                self.r, queue=self.name, max_stalled=max_stalled, now=now
            )
        finally:
            self.check()

    def pause(self, action: Literal["pause", "resume"] = "pause") -> int:
        """pause-5."""
        try:
            return g.pause(self.r, queue=self.name, action=action)
        finally:
            self.check()

    def resume(self) -> int:
        return self.pause("resume")

    def raw(self, script: str, keys: Sequence[str], args: Sequence[str]) -> Any:
        """A script sent as another runtime sends it: the text arguments as they are, with no
        wrapper's checks. The decoded reply, or the script's error."""
        found = next(s for s in g.SCRIPTS if s.spec.name == script)
        try:
            return found.result(found.run(self.r, keys, args))
        finally:
            self.check()

    # -- direct changes a test makes, each followed by the invariant ------------------------

    def expire_lock(self, job_id: str) -> None:
        """What the lock's PX does when no heartbeat comes; the token's record, set with the
        lock and for as long, ends with it."""
        token = self.r.get(self.key(f"{job_id}:lock"))
        assert token is not None
        self.r.delete(self.key(f"{job_id}:lock"))
        record = self.r.get(self.key(f"token:{text(token)}"))
        if record is not None and text(record).split(":")[0] == job_id:
            self.r.delete(self.key(f"token:{text(token)}"))
        self.check()

    def set_meta(self, field: str, value: str) -> None:
        self.r.hset(self.key("meta"), field, value)
        self.check()

    # -- reading ----------------------------------------------------------------------------

    def key(self, name: str) -> str:
        return key(self.name, name)

    def job(self, job_id: str) -> dict[str, str]:
        return {text(k): text(v) for k, v in self.r.hgetall(self.key(job_id)).items()}

    def hash(self, name: str) -> dict[str, str]:
        return {text(k): text(v) for k, v in self.r.hgetall(self.key(name)).items()}

    def items(self, state: str) -> list[str]:
        """A list state's ids in the order workers take them (the right end first)."""
        return [text(v) for v in reversed(self.r.lrange(self.key(state), 0, -1))]

    def scores(self, state: str) -> dict[str, float]:
        pairs = cast(
            list[tuple[bytes, float]], self.r.zrange(self.key(state), 0, -1, withscores=True)
        )
        return {text(member): score for member, score in pairs}

    def lock(self, job_id: str) -> str | None:
        holder = self.r.get(self.key(f"{job_id}:lock"))
        return None if holder is None else text(holder)

    def pttl(self, job_id: str) -> int:
        return self.r.pttl(self.key(f"{job_id}:lock"))

    def stalled(self) -> set[str]:
        return {text(v) for v in self.r.smembers(self.key("stalled"))}

    def metric(self, outcome: str) -> int:
        value = self.r.hget(self.key(f"metrics:{outcome}"), "count")
        return 0 if value is None else int(value)

    def events(self) -> list[dict[str, str]]:
        entries = self.r.xrange(self.key("events")) or []
        return [{text(k): text(v) for k, v in (fields or {}).items()} for _, fields in entries]

    def last_event(self) -> dict[str, str]:
        return self.events()[-1]

    def marker(self) -> float | None:
        return self.r.zscore(self.key("marker"), "next")


def run_to(q: Queue, outcome: str, job_id: str, now: int, **kwargs: Any) -> str:
    """Take the next job (which must be `job_id`) and finish it at `now`; where it went."""
    assert q.take_id(now=now) == job_id
    if outcome == "completed":
        return q.complete(job_id, now=now, **kwargs)[0]
    return q.fail(job_id, now=now, **kwargs)[0]
