"""The model-based test: random sequences of every script against a real Redis, beside the plain
Python model in tests/support/protocol_model.py.

Each rule runs one script through its generated wrapper (or, for a hostile id, as another
runtime would send it) and the same step on the model, and compares the replies. After every
step the whole queue is compared with the model: each job in exactly one state key and where the
model says, in the order the model says; every job's hash fields, lock, dependencies and
processed values; the token records, the deduplication keys, the counters, the metrics and the
event stream entry by entry; the marker never later than due work; and no key the model does not
explain (a job's hash, lock, dependencies or processed values without the job is an orphan).

`make test` runs about three minutes of examples (EMQ_MODEL_EXAMPLES, default 500 sequences of
up to 60 steps, some 25,000 steps: with 58 scripts a step checks more keys, and 1,000 sequences
took `make test` past ten minutes); `make soak` runs the test marked soak, at least 100,000
steps. A script that changes, and every new one, joins the model and these rules in the same
change.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from functools import partial
from typing import Any, Literal, get_args

import hypothesis.strategies as st
import pytest
import redis
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from echomq_scripts import generated as g
from echomq_scripts.flows import FlowIds, FlowJob, add_flow
from echomq_scripts.runtime import ArgumentError, LuaError, ScriptFailed, keys
from tests.support.invariants import HOSTILE_IDS, NOW, assert_one_state, text
from tests.support.protocol_model import (
    POLICIES,
    CycleRefused,
    Event,
    FlowRefused,
    Job,
    QueueModel,
)

QUEUE = "model"
LOCK_MS = 60_000
LIMIT_MS = 60_000  # the rate limiter's window: longer than a sequence runs
CUSTOM_IDS = ["a", "b", "c", "7", "8"]  # numbers too: generated ids must skip them
DEDUP_IDS = ["d1", "d2"]
OUTCOMES: tuple[Literal["completed", "failed"], ...] = ("completed", "failed")
# getDependencies-4's four parts, in the order it answers them, by the record paginate-1 reads.
FLOW_PARTS: tuple[g.PaginatePart, ...] = ("processed", "dependencies", "failed", "unsuccessful")
BULK_STATES: tuple[Literal["completed", "failed", "delayed"], ...] = (*OUTCOMES, "delayed")
SCHEDULER_IDS = ["s1", "s2"]
RETENTION_RULES: list[object] = [
    None,
    False,
    True,
    0,
    1,
    2,
    -1,
    {"count": 1},
    {"age": 0},
    {"age": 3600, "count": 2},
    {"count": -1},
    {"count": "1"},
    {"age": "0"},
    {"age": 0, "limit": 1},
    {"count": 0, "limit": 2},
    {"age": 0, "count": 1, "limit": "2"},
]


@st.composite
def job_options(draw: st.DrawFn) -> dict[str, Any]:
    """Options as a runtime would store them; retries and retention rules are common, so that
    sequences reach them."""
    opts: dict[str, Any] = {}
    # Numbers as a runtime may send them: the scripts read them with tonumber, strings too.
    attempts = draw(st.sampled_from([None, 1, 2, 3, 3, "2", 2.5]))
    if attempts is not None:
        opts["attempts"] = attempts
    # Every backoff form: a plain number (fixed), no type (exponential), each type, a jitter.
    delay = draw(st.sampled_from([None, None, 0, 10, 1000, "10", 10.5]))
    if delay is not None:
        backoff: Any = draw(
            st.sampled_from(
                [
                    {"delay": delay},
                    {"type": "exponential", "delay": delay, "jitter": 0.5},
                    {"type": "fixed", "delay": delay},
                    {"type": "fixed", "delay": delay, "jitter": 1},
                    {"type": "custom"},
                    delay,
                ]
            )
        )
        opts["backoff"] = backoff
    for option in ("removeOnComplete", "removeOnFail"):
        rule = draw(st.sampled_from([*RETENTION_RULES, None, None]))
        if rule is not None:
            opts[option] = rule
    lifo = draw(st.sampled_from([None, None, None, True, False]))
    if lifo is not None:
        opts["lifo"] = lifo
    # A child's policy for its parent, or none (BullMQ's default); false reads as none.
    policy = draw(st.sampled_from([None, None, *POLICIES]))
    if policy is not None:
        opts[policy] = True
    elif draw(st.booleans()):
        opts[draw(st.sampled_from(POLICIES))] = False
    return opts


jitters = st.sampled_from([0.0, 0.5, 0.0007, 0.999])
# A dedup TTL long enough never to run out in a run: a rule makes one run out instead.
DEDUP_TTL = 600_000


@st.composite
def dedup_settings(draw: st.DrawFn, in_flow: bool = False) -> dict[str, Any]:
    """opts.deduplication, or nothing: a TTL or none, extend, and outside a flow replace and
    keepLastIfActive."""
    if draw(st.booleans(), label="dedup defaults"):
        return {}
    settings: dict[str, Any] = {}
    if draw(st.booleans(), label="ttl"):
        settings["ttl"] = DEDUP_TTL
    names = ["extend"] if in_flow else ["extend", "replace", "keepLastIfActive"]
    for name in names:
        if draw(st.booleans(), label=name):
            settings[name] = True
    return {"deduplication": settings}


@st.composite
def flow_nodes(draw: st.DrawFn, leaf: bool = False, depth: int = 0) -> FlowJob:
    """A flow's node: a custom id or none, options with a policy often, a deduplication id
    sometimes; a leaf with a delay or a priority or neither; a parent (up to three levels) with
    one to three children and sometimes the priority it runs with once released."""
    children: list[FlowJob] = []
    if not leaf and depth < 2 and draw(st.booleans(), label="parent"):
        size = draw(st.integers(1, 3), label="children")
        children = [draw(flow_nodes(depth=depth + 1)) for _ in range(size)]
    shape = draw(st.sampled_from(["ready", "ready", "delayed", "prioritized"]), label="shape")
    dedup_id = draw(st.one_of(st.just(""), st.just(""), st.just(""), st.sampled_from(DEDUP_IDS)))
    opts = draw(job_options())
    if dedup_id:
        opts.update(draw(dedup_settings(in_flow=True)))
    return FlowJob(
        name=f"f{depth}",
        queue=QUEUE,
        opts=opts,
        job_id=draw(st.one_of(st.just(""), st.just(""), st.sampled_from(CUSTOM_IDS))),
        delay=draw(st.sampled_from([5, 100])) if shape == "delayed" and not children else 0,
        priority=draw(st.integers(1, 4)) if shape == "prioritized" else 0,
        dedup_id=dedup_id,
        children=children,
    )


def flows() -> st.SearchStrategy[FlowJob]:
    return flow_nodes()


def flattened(ids: FlowIds) -> list[tuple[str, int]]:
    """A flow's ids in the order addFlow-10 answers them."""
    return [(ids.job_id, ids.added), *(pair for child in ids.children for pair in flattened(child))]


def call(action: Callable[[], Any]) -> Any:
    """A wrapper's reply, or the failure code it raised as its class."""
    try:
        return action()
    except ScriptFailed as failed:
        return failed.code


class QueueMachine(RuleBasedStateMachine):
    """One queue, driven by hypothesis, checked against the model after every step."""

    r: redis.Redis  # set by the test before the machine runs
    steps = 0  # every step of every sequence run, over all the machine's runs

    def __init__(self) -> None:
        super().__init__()
        self.model = QueueModel(QUEUE)
        self.now = NOW
        self.pickups = 0
        # The last transition, for a re-send at once: (what to call again, its reply).
        self.last: tuple[Callable[[], Any], Any] | None = None
        # Every transition, for a re-send later: (the call, the model's same call, its kind).
        self.sent: list[tuple[Callable[[], Any], Callable[[], Any], str]] = []

    @initialize()
    def empty_queue(self) -> None:
        self.r.flushall()
        # Every event stays, so the stream can be compared entry by entry.
        self.r.hset(keys.meta(QUEUE), "max-events", 10_000_000)

    # -- helpers ----------------------------------------------------------------------------

    def new_token(self) -> str:
        self.pickups += 1
        return f"w:{self.pickups}"  # a ':' in a token is fine: tokens are not ids

    def remember(
        self, again: Callable[[], Any], reply: Any, model: Callable[[], Any], kind: str
    ) -> None:
        self.last = (again, reply)
        self.sent.append((again, model, kind))

    def compare(self, kind: str, got: Any, want: Any) -> None:
        """A reply against the model's: a pickup's hash is read from Redis."""
        if kind == "pickup":
            self.compare_pickup(got[:3], want)  # got[3], its token, the call's own
        elif kind == "finish" and not isinstance(want, int):
            assert got[0] == want[0]
            self.compare_pickup(got[1:], want[1:])
        else:
            assert got == want

    def compare_pickup(self, got: tuple[str, dict[str, str], int], want: tuple[Any, ...]) -> None:
        job_id, fields, limited = got
        if want[2] == -1:  # the limiter's time to live, which the server's clock sets
            assert job_id == ""
            assert 0 < limited <= LIMIT_MS
            return
        assert (job_id, limited) == (want[0], want[2])
        if job_id:
            assert fields == self.job_hash(job_id)
        else:
            assert fields == {}

    def job_hash(self, job_id: str) -> dict[str, str]:
        return {text(k): text(v) for k, v in self.r.hgetall(keys.job(QUEUE, job_id)).items()}

    def active_jobs(self) -> list[str]:
        return sorted(self.model.active)

    def token_for(self, job_id: str, own_token: bool) -> str:
        """The token that holds the job's lock, or with `own_token` False (or no holder) a new
        one: a call from a worker that does not hold the job."""
        holder = self.model.jobs[job_id].lock
        return holder if own_token and holder is not None else self.new_token()

    def held(self) -> list[str]:
        return sorted(j for j in self.model.active if self.model.jobs[j].lock is not None)

    # -- adds -------------------------------------------------------------------------------

    @rule(
        kind=st.sampled_from(["standard", "delayed", "prioritized"]),
        custom=st.one_of(st.just(""), st.sampled_from(CUSTOM_IDS)),
        opts=job_options(),
        dedup=st.one_of(st.just(""), st.sampled_from(DEDUP_IDS)),
        settings=dedup_settings(),
        delay=st.sampled_from([0, 5, 100, 5000]),
        priority=st.integers(1, 4),
    )
    def add(
        self,
        kind: str,
        custom: str,
        opts: dict[str, Any],
        dedup: str,
        settings: dict[str, Any],
        delay: int,
        priority: int,
    ) -> None:
        if dedup:
            opts = {**opts, **settings}
        common: dict[str, Any] = {
            "job_id": custom,
            "name": f"n{kind[0]}",
            "now": self.now,
            "dedup_id": dedup,
            "opts": opts,
        }
        adders: dict[str, tuple[Callable[..., Any], Callable[..., Any], dict[str, int]]] = {
            "standard": (g.add_standard_job, self.model.add_standard, {}),
            "delayed": (g.add_delayed_job, self.model.add_delayed, {"delay": delay}),
            "prioritized": (
                g.add_prioritized_job,
                self.model.add_prioritized,
                {"priority": priority},
            ),
        }
        wrapper, model, extra = adders[kind]
        self.last = None
        want = model(**common, **extra)
        assert wrapper(self.r, queue=QUEUE, data={}, **common, **extra) == want

    def parent_to_name(self, data: st.DataObject) -> str:
        """The existing job a flow's root goes below, or "", or a missing one. A parent in any
        state: a waiting parent most of all, so that flows complete, and an active one, whose
        worker adds children as it runs."""
        which = data.draw(
            st.sampled_from(["", "", "ghost", "waiting", "waiting", "active", "any"]), label="pool"
        )
        if which in ("", "ghost"):
            return which
        pools = {
            "waiting": sorted(self.model.waiting_children),
            "active": self.active_jobs(),
            "any": sorted(self.model.jobs),
        }
        pool = pools[which] or pools["any"]
        return data.draw(st.sampled_from(pool)) if pool else ""

    @rule(data=st.data(), root=flows(), below=st.booleans())
    def add_a_flow(self, data: st.DataObject, root: FlowJob, below: bool) -> None:
        """addFlow-10: a tree of up to three levels, below an existing job or not."""
        self.send_flow(root, self.parent_to_name(data) if below else "")

    @rule(data=st.data(), leaf=flow_nodes(leaf=True))
    def add_a_child(self, data: st.DataObject, leaf: FlowJob) -> None:
        """A flow's next child: one job below an existing one (a waiting parent most of all)."""
        self.send_flow(leaf, self.parent_to_name(data))

    def send_flow(self, root: FlowJob, parent_id: str) -> None:
        self.last = None

        def send() -> Any:
            ids = add_flow(self.r, root, now=self.now, parent_id=parent_id)
            return flattened(ids)

        try:
            want = self.model.add_flow(root, parent_id, self.now)
        except CycleRefused:
            # An existing job named as a child of its own descendant: refused before any write.
            with pytest.raises(LuaError, match="its own descendant"):
                send()
            return
        except FlowRefused as refused:
            with pytest.raises(LuaError, match=re.escape(str(refused))):
                send()
            return
        assert call(send) == want

    def add_with_a_hostile_id(self, hostile: str, as_parent: bool, kind: str) -> None:
        """Refused by the wrapper before sending, and by the script as another runtime sends it,
        before any write: the invariant below finds nothing changed. A hostile parent id is
        addFlow's."""
        node = ["", "n", "{}", "{}", "", "0", "0", "0"]
        call_keys: tuple[str, ...]
        if as_parent:
            with pytest.raises(ArgumentError, match="job id"):
                add_flow(self.r, FlowJob("n", QUEUE), now=self.now, parent_id=hostile)
            kind, call_keys = "addFlow", tuple(g.add_flow_keys(QUEUE))
            args = [str(self.now), hostile, *node]
        else:
            with pytest.raises(ArgumentError, match="job id"):
                g.add_standard_job(
                    self.r,
                    queue=QUEUE,
                    job_id=hostile,
                    name="n",
                    data={},
                    opts={},
                    now=self.now,
                    dedup_id="",
                )
            extra = {"addStandardJob": [], "addDelayedJob": ["10"], "addPrioritizedJob": ["1"]}[
                kind
            ]
            keys_of = {
                "addStandardJob": g.add_standard_job_keys,
                "addDelayedJob": g.add_delayed_job_keys,
                "addPrioritizedJob": g.add_prioritized_job_keys,
            }[kind]
            call_keys = tuple(keys_of(QUEUE))
            args = [hostile, "n", "{}", "{}", str(self.now), "", *extra]
        script = next(s for s in g.SCRIPTS if s.spec.name == kind)
        with pytest.raises(LuaError, match=f"{'parent' if as_parent else 'job'} id"):
            script.result(script.run(self.r, call_keys, args))
        self.last = None

    # -- the worker's scripts ---------------------------------------------------------------

    @rule(concurrency=st.sampled_from([0, 0, 1, 3]), limit_max=st.sampled_from([0, 0, 0, 2]))
    def pickup(self, concurrency: int, limit_max: int = 0) -> None:
        token, now = self.new_token(), self.now

        def again() -> Any:
            return g.move_to_active(
                self.r,
                queue=QUEUE,
                token=token,
                lock_duration=LOCK_MS,
                now=now,
                limit_max=limit_max,
                limit_duration=LIMIT_MS,
                concurrency=concurrency,
            )

        def model() -> Any:
            return self.model.move_to_active(token, now, concurrency, limit_max)

        got = again()
        assert got.token == token  # every pickup's reply names its token
        self.compare_pickup(got[:3], model())
        self.remember(again, got, model, "pickup")

    @rule(
        action=st.sampled_from(
            ["concurrency", "rate limit", "rate limit", "dynamic", "end window", "read"]
        ),
        number=st.sampled_from([0, 1, 2]),
    )
    def limits(self, action: str, number: int) -> None:
        """The queue's own limits, set, read and ended, as a runtime's queue object would."""
        r, m = self.r, self.model
        if action == "concurrency":
            assert g.set_global_concurrency(r, queue=QUEUE, concurrency=number) == 1
            m.set_global_concurrency(number)
        elif action == "rate limit":
            assert g.set_global_rate_limit(r, queue=QUEUE, max=number, duration=LIMIT_MS) == 1
            m.set_global_rate_limit(number, LIMIT_MS)
        elif action == "dynamic":
            assert g.rate_limit(r, queue=QUEUE, duration=LIMIT_MS) == m.rate_limit()
        elif action == "end window":
            assert g.remove_rate_limit_key(r, queue=QUEUE) == m.remove_rate_limit_key()
        assert g.get_global_concurrency(r, queue=QUEUE) == m.queue_concurrency
        assert g.get_global_rate_limit(r, queue=QUEUE) == (m.queue_max, m.queue_duration)
        assert g.is_maxed(r, queue=QUEUE) == m.is_maxed()
        ttl = g.get_rate_limit_ttl(r, queue=QUEUE, max_jobs=number)
        if m.get_rate_limit_ttl(number) == -1:
            assert 0 < ttl <= LIMIT_MS
        else:
            assert ttl == 0
        self.last = None

    def an_idle_worker_wakes(self) -> None:
        """What BZPOPMIN does to the marker: an idle worker takes it, then picks up."""
        self.r.zpopmin(keys.marker(QUEUE))
        self.model.marker_taken = True
        self.pickup(0)

    @precondition(lambda self: self.model.active)
    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        job_id = data.draw(st.sampled_from(self.active_jobs()))
        token = self.model.jobs[job_id].lock or "w:gone"
        got = call(
            lambda: g.extend_lock(self.r, queue=QUEUE, token=token, duration=LOCK_MS, job_id=job_id)
        )
        assert got == self.model.extend_lock(job_id, token)
        self.last = None

    @precondition(lambda self: self.model.active)
    @rule(data=st.data(), release=st.booleans())
    def heartbeat_many_or_release(self, data: st.DataObject, release: bool) -> None:
        """extendLocks-1 for some jobs (active ones most of all, with their tokens or not), or
        releaseLock-1 for an active job, by its token or another."""
        if release:
            job_id = data.draw(st.sampled_from(self.active_jobs()))
            holder = self.model.jobs[job_id].lock
            own = holder is not None and data.draw(st.sampled_from([True, True, False]))
            token = holder if own and holder is not None else "w:other"
            released = g.release_lock(self.r, queue=QUEUE, job_id=job_id, token=token)
            assert released == self.model.release_lock(job_id, token)
        else:
            pool = [*self.active_jobs(), *self.active_jobs(), *sorted(self.model.jobs), "ghost"]
            chosen = data.draw(st.lists(st.sampled_from(pool), max_size=4), label="jobs")
            pairs = []
            for job_id in chosen:
                found = self.model.jobs.get(job_id)
                holder = found.lock if found is not None else None
                own = holder is not None and data.draw(st.sampled_from([True, True, False]))
                pairs.append((job_id, holder if own and holder is not None else "w:other"))
            got = g.extend_locks(
                self.r,
                queue=QUEUE,
                duration=LOCK_MS,
                jobs=[value for pair in pairs for value in pair],
            )
            assert got == self.model.extend_locks(pairs)
        self.last = None

    @precondition(lambda self: self.model.active)
    @rule(data=st.data(), fetch_next=st.booleans(), own_token=st.sampled_from([True] * 5 + [False]))
    def complete(self, data: st.DataObject, fetch_next: bool, own_token: bool) -> None:
        self.finish(data, "completed", fetch_next, 0.0, own_token)

    @precondition(lambda self: self.model.active)
    @rule(
        data=st.data(),
        fetch_next=st.booleans(),
        jitter=jitters,
        own_token=st.sampled_from([True] * 5 + [False]),
    )
    def fail(self, data: st.DataObject, fetch_next: bool, jitter: float, own_token: bool) -> None:
        self.finish(data, "failed", fetch_next, jitter, own_token)

    def finish(
        self,
        data: st.DataObject,
        outcome: Literal["completed", "failed"],
        fetch_next: bool,
        jitter: float,
        own_token: bool,
    ) -> None:
        job_id = data.draw(st.sampled_from(self.active_jobs()))
        token = self.token_for(job_id, own_token)
        now = self.now
        # A worker with a metrics series, or without; a custom backoff's delay, computed.
        max_metrics = data.draw(st.sampled_from([0, 0, 3]))
        custom_delay = data.draw(st.sampled_from([0, 40]))

        def again() -> Any:
            return call(
                lambda: g.move_to_finished(
                    self.r,
                    queue=QUEUE,
                    job_id=job_id,
                    token=token,
                    now=now,
                    outcome=outcome,
                    result=json.dumps(f"r-{job_id}-{now}"),
                    stacktrace=f"at {job_id}",
                    jitter=jitter,
                    fetch_next=fetch_next,
                    lock_duration=LOCK_MS,
                    limit_max=0,
                    limit_duration=0,
                    concurrency=0,
                    max_metrics=max_metrics,
                    backoff_delay=custom_delay,
                )
            )

        def model() -> Any:
            result = json.dumps(f"r-{job_id}-{now}")
            return self.model.move_to_finished(
                job_id,
                token,
                now,
                outcome,
                result,
                jitter,
                fetch_next,
                max_metrics=max_metrics,
                custom_delay=custom_delay,
                stacktrace=f"at {job_id}",
            )

        got = again()
        self.compare("finish", got, model())
        self.remember(again, got, model, "finish")

    @precondition(lambda self: self.model.active)
    @rule(data=st.data(), base=st.sampled_from([0, 7, 250]), jitter=jitters)
    def retry(self, data: st.DataObject, base: int, jitter: float) -> None:
        job_id = data.draw(st.sampled_from(self.active_jobs()))
        token = self.model.jobs[job_id].lock or self.new_token()
        now = self.now

        def again() -> Any:
            return call(
                lambda: g.move_to_delayed(
                    self.r,
                    queue=QUEUE,
                    job_id=job_id,
                    token=token,
                    now=now,
                    base=base,
                    jitter=jitter,
                )
            )

        def model() -> Any:
            return self.model.move_to_delayed(job_id, token, now, base, jitter)

        got = again()
        assert got == model()
        self.remember(again, got, model, "retry")

    @precondition(lambda self: self.model.active)
    @rule(data=st.data(), own_token=st.sampled_from([True] * 5 + [False]), one=st.booleans())
    def wait_for_children(self, data: st.DataObject, own_token: bool, one: bool) -> None:
        """An active job adds a child (most of the time) and hands itself over until its
        children are done (moveToWaitingChildren-7)."""
        job_id = data.draw(st.sampled_from(self.active_jobs()))
        if data.draw(st.sampled_from([True, True, False]), label="adds children first"):
            self.send_flow(data.draw(flows()), job_id)
        token = self.token_for(job_id, own_token)
        pending = sorted(self.model.jobs[job_id].pending)
        child = data.draw(st.sampled_from(pending)) if one and pending else ""
        now = self.now

        def again() -> Any:
            return call(
                lambda: g.move_to_waiting_children(
                    self.r, queue=QUEUE, job_id=job_id, token=token, now=now, child_id=child
                )
            )

        def model() -> Any:
            return self.model.move_to_waiting_children(job_id, token, now, child)

        got = again()
        assert got == model()
        self.remember(again, got, model, "plain")

    @precondition(lambda self: self.model.active)
    @rule(
        data=st.data(),
        how=st.sampled_from(["retryJob", "moveJobFromActiveToWait"]),
        own_token=st.sampled_from([True] * 5 + [False]),
    )
    def give_a_job_back(self, data: st.DataObject, how: str, own_token: bool) -> None:
        """A worker sends its job back to run again: retryJob-12 (a failure retried at once) or
        moveJobFromActiveToWait-11 (given back unrun, first in line)."""
        job_id = data.draw(st.sampled_from(self.active_jobs()))
        token = self.token_for(job_id, own_token)
        now = self.now

        def again() -> Any:
            if how == "retryJob":
                return call(
                    lambda: g.retry_job(
                        self.r,
                        queue=QUEUE,
                        job_id=job_id,
                        token=token,
                        now=now,
                        reason=f"again-{now}",
                        stacktrace=f"at-{now}",
                    )
                )
            got = call(
                lambda: g.move_job_from_active_to_wait(
                    self.r, queue=QUEUE, job_id=job_id, token=token
                )
            )
            if got > 0:  # the limiter's time to live, which the server's clock sets
                assert got <= LIMIT_MS
                return "limited"
            return got

        def model() -> Any:
            if how == "retryJob":
                return self.model.retry_job(job_id, token, now, f"again-{now}", f"at-{now}")
            return self.model.move_job_from_active_to_wait(job_id, token)

        got = again()
        assert got == model()
        self.remember(again, got, model, "plain")

    @precondition(lambda self: self.model.jobs)
    @rule(
        data=st.data(),
        what=st.sampled_from(
            ["promote", "changePriority", "changeDelay", "reprocessJob", "moveJobsToWait"]
        ),
    )
    def move_by_hand(self, data: st.DataObject, what: str) -> None:
        """One job, or a batch, moved by hand: promote-8, changePriority-6, changeDelay-4,
        reprocessJob-8 or moveJobsToWait-8, mostly on jobs in the state each takes."""
        model = self.model
        got: Any
        want: Any
        if what == "moveJobsToWait":
            # A set that holds jobs, mostly; a count of 1 often, so that some are left. The
            # timestamp: half the time one of the set's own times (a finish, a run-at) but the
            # latest, so that the jobs up to it are due and the later ones not; else before
            # now, now (every finish is by then), after it by about the delays jobs get, or the
            # largest, with which BullMQ's promoteJobs takes them all.
            sets = {"completed": model.completed, "failed": model.failed, "delayed": model.delayed}
            held = [s for s in BULK_STATES if sets[s]]
            mostly = bool(held) and data.draw(st.integers(0, 4)) > 0
            state = data.draw(st.sampled_from(held if mostly else BULK_STATES))
            count = data.draw(st.sampled_from([1, 1, 2, 5]))
            now = self.now
            own = sorted(set(sets[state].values()))
            times = own[:-1] or own
            if not times or data.draw(st.booleans()):
                times = [now - 1000, now, now + 5, now + 100, now + 5000, 2**53 - 1]
            timestamp = data.draw(st.sampled_from(times))
            got = g.move_jobs_to_wait(
                self.r, queue=QUEUE, state=state, count=count, timestamp=timestamp
            )
            assert got == model.move_jobs_to_wait(state, count, timestamp)
            self.last = None
            return
        takes = {
            "promote": sorted(model.delayed),
            "changePriority": sorted([*model.wait, *model.paused_list, *model.prioritized]),
            "changeDelay": sorted(model.delayed),
            "reprocessJob": sorted([*model.completed, *model.failed]),
        }[what]
        mostly = bool(takes) and data.draw(st.integers(0, 4)) > 0
        job_id = data.draw(st.sampled_from(takes if mostly else [*sorted(model.jobs), "ghost"]))
        if what == "promote":
            got = call(lambda: g.promote(self.r, queue=QUEUE, job_id=job_id))
            want = model.promote(job_id)
        elif what == "changePriority":
            priority = data.draw(st.sampled_from([0, 0, 1, 2, 4]))
            lifo = data.draw(st.booleans())
            got = call(
                lambda: g.change_priority(
                    self.r, queue=QUEUE, job_id=job_id, priority=priority, lifo=lifo
                )
            )
            want = model.change_priority(job_id, priority, lifo)
        elif what == "changeDelay":
            delay = data.draw(st.sampled_from([0, 5, 100, 5000]))
            got = call(
                lambda: g.change_delay(
                    self.r, queue=QUEUE, job_id=job_id, delay=delay, now=self.now
                )
            )
            want = model.change_delay(job_id, delay, self.now)
        else:
            found = model.jobs.get(job_id)
            # The set it is in, mostly; a job in neither, or the other set, answers -3.
            finished = found is not None and found.state == "completed"
            if data.draw(st.integers(0, 4)) == 0:
                finished = not finished
            outcome = OUTCOMES[0] if finished else OUTCOMES[1]
            reset = data.draw(st.booleans())
            got = call(
                lambda: g.reprocess_job(
                    self.r, queue=QUEUE, job_id=job_id, outcome=outcome, reset_attempts=reset
                )
            )
            want = model.reprocess_job(job_id, outcome, reset)
        assert got == want
        self.last = None

    @precondition(lambda self: self.model.jobs)
    @rule(data=st.data())
    def read_a_flow(self, data: st.DataObject) -> None:
        """getDependencyCounts-4 and getDependencies-4 of a parent (or any job, or none), with a
        count that often leaves a record larger than it, then paginate-1 through each record."""
        parents = sorted(j for j, job in self.model.jobs.items() if job.deps)
        job_id = data.draw(st.sampled_from(parents or sorted(self.model.jobs)))
        if data.draw(st.integers(0, 9)) == 0:
            job_id = "ghost"
        got = call(lambda: g.get_dependency_counts(self.r, queue=QUEUE, job_id=job_id))
        assert got == self.model.get_dependency_counts(job_id)
        # 1 and 2: a record of more entries may come as a page; 10,000: every record comes whole.
        count = data.draw(st.sampled_from([1, 2, 10_000]), label="count")
        read = call(lambda: g.get_dependencies(self.r, queue=QUEUE, job_id=job_id, count=count))
        want = self.model.get_dependencies(job_id, count)
        if isinstance(want, int):
            assert read == want
        else:
            assert isinstance(read, tuple), read
            *parts, cursors = read
            answers = zip(FLOW_PARTS, parts, cursors, want.records, want.paged, strict=True)
            for part, got, cursor, whole, paged in answers:
                if cursor == "0":
                    assert got == whole
                else:
                    assert paged, f"{part}: a page of a record of at most {count}"
                    self.check_first_page(job_id, part, got, cursor, count)
        for part in get_args(g.PaginatePart):
            by = data.draw(st.sampled_from([1, 2, 10]))
            assert self.page_on(job_id, part, "0", by) == self.model.record(job_id, part)
        self.last = None

    def check_first_page(
        self, job_id: str, part: g.PaginatePart, page: Any, cursor: str, count: int
    ) -> None:
        """getDependencies-4's page of a record larger than `count`: entries of the record (with
        its values, where the page carries them), and paginate-1 from the cursor answered reads
        the rest of it. Redis may answer a scan page of no entries with a cursor to go on from,
        so the page is not asked to hold any: only that the walk it starts covers the record."""
        record = self.model.record(job_id, part)
        # processed and failed are hashes; dependencies and unsuccessful come as keys only.
        entries = page if isinstance(page, dict) else dict.fromkeys(page, "")
        assert entries.keys() <= record.keys()
        if isinstance(page, dict):
            assert page.items() <= record.items()
        rest = self.page_on(job_id, part, cursor, count)
        assert rest.items() <= record.items()
        assert entries.keys() | rest.keys() == record.keys()

    @rule(
        data=st.data(),
        start=st.sampled_from([0, 0, 1, 3]),
        length=st.sampled_from([0, 1, 2, 5, None]),
        asc=st.booleans(),
    )
    def read_the_states(
        self, data: st.DataObject, start: int, length: int | None, asc: bool
    ) -> None:
        """getRanges-8 and getJobs-8 of some states, a range of places (to the end, or a few),
        and getCountsPerPriority-3 of some priorities."""
        every: tuple[g.GetRangesState, ...] = get_args(g.GetRangesState)
        states = data.draw(st.lists(st.sampled_from(every), max_size=4))
        end = -1 if length is None else start + length - 1
        got = g.get_ranges(self.r, queue=QUEUE, start=start, end=end, asc=asc, state=states)
        assert got == self.model.get_ranges(start, end, asc, states)
        jobs = g.get_jobs(self.r, queue=QUEUE, start=start, end=end, asc=asc, state=states)
        assert [[job_id for job_id, _ in found] for found in jobs] == got
        assert all(fields == self.job_hash(j) for found in jobs for j, fields in found)
        priorities = data.draw(st.lists(st.integers(0, 5), max_size=4))
        counted = g.get_counts_per_priority(self.r, queue=QUEUE, priority=priorities)
        assert counted == self.model.get_counts_per_priority(priorities)
        self.last = None

    def page_on(self, job_id: str, part: g.PaginatePart, cursor: str, count: int) -> dict[str, str]:
        """paginate-1 from `cursor` ("0": the start) to the end: the entries its pages hold, in
        the form of the model's `record`. Every page says the record's size, which is checked."""
        found = dict[str, str]()
        want_size = len(self.model.record(job_id, part))
        while True:
            cursor, size, page = g.paginate(
                self.r, queue=QUEUE, job_id=job_id, part=part, cursor=cursor, count=count
            )
            assert size == want_size
            if part == "dependencies":
                found.update(dict.fromkeys(page, ""))
            else:
                found.update(zip(page[::2], page[1::2], strict=True))
            if cursor == "0":
                return found

    @precondition(lambda self: self.model.jobs)
    @rule(
        data=st.data(),
        what=st.sampled_from(["data", "progress", "log", "log", "stacktrace"]),
        keep_logs=st.sampled_from([0, 0, 1, 2]),
    )
    def a_job_s_own_data(self, data: st.DataObject, what: str, keep_logs: int) -> None:
        """updateData-1, updateProgress-3, addLog-2 or saveStacktrace-1 on any job, or none;
        then the reads of one job: getJobLogs-1, isFinished-3 and isJobInList-1."""
        job_id = data.draw(st.sampled_from([*sorted(self.model.jobs), "ghost"]))
        step = data.draw(st.integers(0, 99), label="value")
        if what == "data":
            new_data = {"v": step}
            got = call(lambda: g.update_data(self.r, queue=QUEUE, job_id=job_id, data=new_data))
            # The job keeps the JSON text the wrapper sent: compact, as the model writes it.
            assert got == self.model.update_data(
                job_id, json.dumps(new_data, separators=(",", ":"))
            )
        elif what == "progress":
            progress = data.draw(st.sampled_from([0, 50, 100, {"step": 2}, "half"]))
            got = call(
                lambda: g.update_progress(self.r, queue=QUEUE, job_id=job_id, progress=progress)
            )
            sent = json.dumps(progress, separators=(",", ":"))
            assert got == self.model.update_progress(job_id, sent)
        elif what == "log":
            line = f"line {step}"
            got = call(
                lambda: g.add_log(
                    self.r, queue=QUEUE, job_id=job_id, line=line, keep_logs=keep_logs
                )
            )
            assert got == self.model.add_log(job_id, line, keep_logs)
        else:
            trace, reason = json.dumps([f"at {step}"]), f"saved {step}"
            got = call(
                lambda: g.save_stacktrace(
                    self.r, queue=QUEUE, job_id=job_id, stacktrace=trace, failed_reason=reason
                )
            )
            assert got == self.model.save_stacktrace(job_id, trace, reason)
        start, count = data.draw(st.integers(0, 3)), data.draw(st.integers(1, 3))
        for asc in (True, False):
            read = g.get_job_logs(
                self.r, queue=QUEUE, job_id=job_id, start=start, count=count, asc=asc
            )
            assert read == self.model.get_job_logs(job_id, start, count, asc)
        for value in (False, True):
            finished = call(
                partial(g.is_finished, self.r, queue=QUEUE, job_id=job_id, return_value=value)
            )
            assert finished == self.model.is_finished(job_id, value)
        for state in ("wait", "paused", "active"):
            found = g.is_job_in_list(self.r, queue=QUEUE, state=state, job_id=job_id)
            assert found == self.model.is_job_in_list(state, job_id)
        self.last = None

    # -- removing, and deduplication ids by hand --------------------------------------------

    @precondition(lambda self: self.model.jobs)
    @rule(data=st.data(), children=st.booleans(), limit=st.sampled_from([1, 2, 3, 10_000]))
    def remove_a_job(self, data: st.DataObject, children: bool, limit: int) -> None:
        """removeJob-13 on any job (a held one is refused, a pending iteration is -8), or none:
        one call, which with a small limit takes part of a tree (the next may go on)."""
        parents = sorted(j for j, job in self.model.jobs.items() if job.deps)
        job_id = data.draw(st.sampled_from([*parents, *sorted(self.model.jobs), "ghost"]))
        got = call(
            lambda: g.remove_job(
                self.r, queue=QUEUE, job_id=job_id, remove_children=children, limit=limit
            )
        )
        assert got == self.model.remove_job(job_id, children, limit)
        self.last = None

    @precondition(lambda self: self.model.jobs)
    @rule(
        data=st.data(),
        grace=st.sampled_from([0, 100, 6000, 60_000]),
        limit=st.sampled_from([1, 2, 3, 10]),
        cursor=st.sampled_from([0, 0, 0, 1, 2, 4]),
    )
    def clean_a_state(self, data: st.DataObject, grace: int, limit: int, cursor: int) -> None:
        """cleanJobsInSet-5: one call, from the start or from a cursor a walk may have left, on
        a state that holds jobs more often than not."""
        every: tuple[g.CleanJobsInSetState, ...] = get_args(g.CleanJobsInSetState)
        held = [s for s in every if any(j.state == s for j in self.model.jobs.values())]
        state = data.draw(st.sampled_from(held + held + list(every)))
        got = g.clean_jobs_in_set(
            self.r, queue=QUEUE, state=state, now=self.now, grace=grace, limit=limit, cursor=cursor
        )
        assert got == self.model.clean_jobs_in_set(state, self.now, grace, limit, cursor)
        self.last = None

    @rule(count=st.sampled_from([1, 2, 5, 100]), force=st.booleans())
    def obliterate(self, count: int, force: bool) -> None:
        """obliterate-20, called again while it answers 1 (more is left), the queue compared
        after each call. Refused unless the queue is paused (so mostly refused: only a pause
        makes it run), and with active jobs unless forced."""
        while True:
            got = g.obliterate(self.r, queue=QUEUE, count=count, force=force)
            assert got == self.model.obliterate(count, force)
            if got != 1:
                break
            check_queue(self.r, self.model, self.now)
        self.last = None

    @rule(delayed=st.booleans(), count=st.sampled_from([1, 2, 5, 100]))
    def drain(self, delayed: bool, count: int) -> None:
        """drain-5: one call (a bounded batch), delayed jobs too or not."""
        got = g.drain(self.r, queue=QUEUE, delayed=delayed, count=count)
        assert got == self.model.drain(delayed, count)
        self.last = None

    @rule(data=st.data(), count=st.sampled_from([1, 10, 1000]))
    def remove_orphans(self, data: st.DataObject, count: int) -> None:
        """removeOrphanedJobs-8, a whole SCAN walk: it finds nothing on a sound queue, and the
        job a crash took out of its state key (one outside any flow and not active, so that
        nothing else names it) when there is one."""
        loose = sorted(
            j.id
            for j in self.model.jobs.values()
            if not (j.parent or j.pending or j.processed or j.unsuccessful or j.ignored)
            and j.state != "active"
        )
        orphan = None
        if data.draw(st.booleans(), label="a crash") and loose:
            orphan = data.draw(st.sampled_from(loose))
            state = self.model.jobs[orphan].state
            if state in ("wait", "paused"):
                self.r.lrem(keys.state(QUEUE, state), 0, orphan)
            else:
                self.r.zrem(keys.state(QUEUE, state), orphan)
            self.model.orphan(orphan)
        cursor, removed = "0", []
        while True:
            cursor, ids = g.remove_orphaned_jobs(self.r, queue=QUEUE, cursor=cursor, count=count)
            removed += ids
            if cursor == "0":
                break
        assert removed == ([orphan] if orphan is not None else [])
        self.last = None

    @precondition(lambda self: self.model.dedup)
    @rule(data=st.data())
    def release_a_dedup_id(self, data: st.DataObject) -> None:
        """getDeduplicationJobId-1, then removeDeduplicationKey-2 for its holder or another."""
        dedup_id = data.draw(st.sampled_from(sorted(self.model.dedup)))
        holder = g.get_deduplication_job_id(self.r, queue=QUEUE, dedup_id=dedup_id)
        assert holder == self.model.dedup[dedup_id]
        job_id = holder if data.draw(st.booleans()) else "other"
        got = g.remove_deduplication_key(self.r, queue=QUEUE, dedup_id=dedup_id, job_id=job_id)
        assert got == self.model.remove_deduplication_key(dedup_id, job_id)
        self.last = None

    # -- job schedulers ---------------------------------------------------------------------

    @rule(
        scheduler_id=st.sampled_from(SCHEDULER_IDS),
        every=st.sampled_from([0, 5, 100, 100, 5000]),
        ahead=st.sampled_from([1, 5, 100, 6000]),
        limit=st.sampled_from([0, 0, 1, 3]),
        start=st.sampled_from([0, 0, 5, 1000]),
        end=st.sampled_from([0, 0, 100, 20_000]),
        offset=st.sampled_from([0, 0, 3]),
        data=st.sampled_from(["{}", '{"v":2}']),
        priority=st.sampled_from([0, 0, 2]),
        opts=st.sampled_from([{}, {"attempts": 2}, {"removeOnComplete": True}, {"lifo": True}]),
    )
    def upsert_a_scheduler(
        self,
        scheduler_id: str,
        every: int,
        ahead: int,
        limit: int,
        start: int,
        end: int,
        offset: int,
        data: str,
        priority: int,
        opts: dict[str, Any],
    ) -> None:
        """addJobScheduler-10: every N ms, or a pattern whose next run the caller gives."""
        now = self.now
        settings = {
            "name": f"sched-{scheduler_id}",
            "data": data,
            "opts": json.dumps(opts, separators=(",", ":")),
            "priority": str(priority),
            "every": str(every),
            "pattern": "" if every else "*/5 * * * *",
            "tz": "" if every else "UTC",
            "limit": str(limit),
            "startDate": str(now + start if start else 0),
            "endDate": str(now + end if end else 0),
        }
        offset = offset if every > offset else 0
        next_millis = 0 if every else now + ahead
        got = call(
            lambda: g.add_job_scheduler(
                self.r,
                queue=QUEUE,
                scheduler_id=scheduler_id,
                now=now,
                every=every,
                pattern=settings["pattern"],
                tz=settings["tz"],
                next_millis=next_millis,
                limit=limit,
                start_date=int(settings["startDate"]),
                end_date=int(settings["endDate"]),
                offset=offset,
                name=settings["name"],
                data=json.loads(data),  # the model keeps the text the wrapper sends for it
                opts=opts,
                priority=priority,
            )
        )
        assert got == self.model.add_job_scheduler(scheduler_id, now, settings, next_millis, offset)
        self.last = None

    @precondition(lambda self: self.model.active)
    @rule(data=st.data(), ahead=st.sampled_from([1, 100, 6000]))
    def schedule_the_next_iteration(self, data: st.DataObject, ahead: int) -> None:
        """updateJobScheduler-10 for an active job, as the worker that picked it up calls it (an
        iteration most of the time, current or not)."""
        iterations = [j for j in self.active_jobs() if self.model.jobs[j].scheduler]
        job_id = data.draw(st.sampled_from(iterations or self.active_jobs()))
        scheduler_id = self.model.jobs[job_id].scheduler or data.draw(
            st.sampled_from(SCHEDULER_IDS)
        )
        scheduler = self.model.schedulers.get(scheduler_id)
        next_millis = 0
        if scheduler is not None and scheduler.settings["pattern"]:
            next_millis = max(scheduler.next, self.now) + ahead
        got = g.update_job_scheduler(
            self.r,
            queue=QUEUE,
            scheduler_id=scheduler_id,
            job_id=job_id,
            now=self.now,
            next_millis=next_millis,
        )
        assert got == self.model.update_job_scheduler(scheduler_id, job_id, self.now, next_millis)
        self.last = None

    @precondition(lambda self: self.model.schedulers)
    @rule(data=st.data(), remove=st.sampled_from([False, False, True]))
    def read_or_remove_a_scheduler(self, data: st.DataObject, remove: bool) -> None:
        """getJobScheduler-2 and getJobSchedulers-1, or removeJobScheduler-8."""
        scheduler_id = data.draw(st.sampled_from(SCHEDULER_IDS))
        if remove:
            got = g.remove_job_scheduler(self.r, queue=QUEUE, scheduler_id=scheduler_id)
            assert got == self.model.remove_job_scheduler(scheduler_id)
        else:
            read = g.get_job_scheduler(self.r, queue=QUEUE, scheduler_id=scheduler_id)
            assert read == self.model.get_job_scheduler(scheduler_id)
            count, page = g.get_job_schedulers(self.r, queue=QUEUE, start=0, count=10, asc=True)
            assert count == len(self.model.schedulers)
            by_next = sorted(
                self.model.schedulers, key=lambda s: (self.model.schedulers[s].next, s)
            )
            assert page == [self.model.get_job_scheduler(s) for s in by_next]
        self.last = None

    @precondition(lambda self: any(j.parent or j.deps for j in self.model.jobs.values()))
    @rule(
        data=st.data(),
        what=st.sampled_from(["dependency"] * 3 + ["unprocessed"]),
        limit=st.sampled_from([1, 2, 10_000]),
    )
    def edit_a_flow(self, data: st.DataObject, what: str, limit: int) -> None:
        """removeChildDependency-2 on a child, or removeUnprocessedChildren-10 on a parent: one
        rule, drawn less often than the worker's steps, so that most flows run to their end."""
        if what == "dependency":
            children = sorted(j for j, job in self.model.jobs.items() if job.parent)
            if children:
                job_id = data.draw(st.sampled_from(children))
                got = call(lambda: g.remove_child_dependency(self.r, queue=QUEUE, job_id=job_id))
                assert got == self.model.remove_child_dependency(job_id)
        else:
            parents = sorted(j for j, job in self.model.jobs.items() if job.deps)
            if parents:
                job_id = data.draw(st.sampled_from(parents))
                got = call(
                    lambda: g.remove_unprocessed_children(
                        self.r, queue=QUEUE, job_id=job_id, limit=limit
                    )
                )
                assert got == self.model.remove_unprocessed_children(job_id, limit)
        self.last = None

    @precondition(lambda self: self.last is not None)
    @rule()
    def the_last_call_sent_again(self) -> None:
        """A client that lost the reply sends the same call again: the same answer, no change
        (the invariant compares the queue with the model, which did not move)."""
        assert self.last is not None
        again, first = self.last
        got = again()
        if isinstance(first, g.Pickup) and first.limit_delay > 0:
            # A pickup the limiter refused: refused again, with what its window has left now.
            assert (got.job_id, got.fields, got.token) == (first.job_id, first.fields, first.token)
            assert 0 < got.limit_delay <= first.limit_delay
        elif isinstance(first, g.Finished) and first.limit_delay > 0:
            # A finish whose fetch the limiter held back: the record keeps no wait (protocol.md,
            # re-sent calls), so the re-send answers 0 and the next pickup the wait.
            assert got == (*first[:3], 0)
        else:
            assert got == first

    @precondition(lambda self: self.sent)
    @rule(data=st.data())
    def an_earlier_call_sent_again(self, data: st.DataObject) -> None:
        """A call re-sent late, after other steps: what the model says of the same call now (a
        landed finish answers from its records; a pickup whose token holds no job any more is a
        new pickup)."""
        again, model, kind = data.draw(st.sampled_from(self.sent))
        got = again()
        self.compare(kind, got, model())
        self.last = None

    def a_lock_expires(self, job_id: str) -> None:
        """The lock's PX runs out (no heartbeat came): the token's record ends with it."""
        token = self.model.jobs[job_id].lock
        assert token is not None
        self.r.delete(keys.lock(QUEUE, job_id))
        record = self.r.get(keys.prefix(QUEUE) + "token:" + token)
        if record is not None and text(record).split(":")[0] == job_id:
            self.r.delete(keys.prefix(QUEUE) + "token:" + token)
        self.model.lose_lock(job_id)
        self.last = None

    def a_dedup_ttl_runs_out(self, dedup_id: str) -> None:
        """The PX of a deduplication key runs out: Redis drops the key."""
        self.r.delete(keys.dedup(QUEUE, dedup_id))
        del self.model.dedup[dedup_id]
        self.model.dedup_ttl.discard(dedup_id)
        self.last = None

    # -- queue-wide scripts -----------------------------------------------------------------

    def stalled_check(self, max_stalled: int) -> None:
        before = self.r.xlen(keys.events(QUEUE))
        recovered, failed = g.move_stalled_jobs_to_wait(
            self.r, queue=QUEUE, max_stalled=max_stalled, now=self.now
        )
        # Redis walks the stalled set in its own order; its events tell the model which.
        entries: list[Any] = self.r.xrange(keys.events(QUEUE), "-", "+") or []
        order = [text(fields[b"jobId"]) for _, fields in entries[before:]]
        assert (recovered, failed) == self.model.move_stalled_jobs_to_wait(
            max_stalled, self.now, order
        )
        self.last = None

    def pause(self, action: Literal["pause", "resume"]) -> None:
        assert g.pause(self.r, queue=QUEUE, action=action) == self.model.pause(action)
        self.last = None

    @rule(
        what=st.sampled_from(
            [
                *["time"] * 3,
                *["stalled"] * 2,
                "pause",
                "resume",
                "resume",
                "idle",
                "hostile",
                "expire",
                "window",
                "ttl",
            ]
        ),
        data=st.data(),
    )
    def meanwhile(self, what: str, data: st.DataObject) -> None:
        """What else happens to a queue, one rule so that the worker's steps stay the most
        common: time passes, a stalled check runs, the queue is paused or resumed, an idle
        worker wakes, a runtime sends a hostile id, a lock expires, the rate limiter's window
        passes, a deduplication id's TTL runs out."""
        if what == "time":
            self.now += data.draw(st.sampled_from([1, 5, 100, 1000, 6000]))
            self.last = None
        elif what == "stalled":
            self.stalled_check(data.draw(st.integers(0, 2)))
        elif what in ("pause", "resume"):
            self.pause("pause" if what == "pause" else "resume")
        elif what == "idle":
            self.an_idle_worker_wakes()
        elif what == "expire":
            if self.held():
                self.a_lock_expires(data.draw(st.sampled_from(self.held())))
        elif what == "window":
            self.r.delete(keys.limiter(QUEUE))  # what its PEXPIRE does when the window ends
            self.model.limiter = 0
            self.last = None
        elif what == "ttl":
            if self.model.dedup_ttl:
                self.a_dedup_ttl_runs_out(data.draw(st.sampled_from(sorted(self.model.dedup_ttl))))
        else:
            self.add_with_a_hostile_id(
                data.draw(st.sampled_from(HOSTILE_IDS)),
                data.draw(st.booleans()),
                data.draw(
                    st.sampled_from(["addStandardJob", "addDelayedJob", "addPrioritizedJob"])
                ),
            )

    # -- after every step -------------------------------------------------------------------

    @invariant()
    def the_queue_is_what_the_model_says(self) -> None:
        type(self).steps += 1
        check_queue(self.r, self.model, self.now)


def check_queue(r: redis.Redis, model: QueueModel, now: int) -> None:
    """Every key of the queue against the model (see the module's docstring)."""
    assert assert_one_state(r, QUEUE) == {
        j: s for j, s in model.states().items() if s != "delayed (in flight)"
    }
    prefix = keys.prefix(QUEUE)
    job_ids = sorted(model.jobs)
    pipe = r.pipeline(transaction=True)
    pipe.keys(prefix.replace("{", "\\{").replace("}", "\\}") + "*")
    for state in ("wait", "paused", "active"):
        pipe.lrange(keys.state(QUEUE, state), 0, -1)
    for state in ("delayed", "prioritized", "completed", "failed", "waiting-children"):
        pipe.zrange(keys.state(QUEUE, state), 0, -1, withscores=True)
    pipe.smembers(keys.stalled(QUEUE))
    pipe.mget(keys.id_counter(QUEUE), keys.priority_counter(QUEUE))
    for outcome in ("completed", "failed"):
        pipe.hgetall(keys.metrics(QUEUE, outcome))
        pipe.lrange(keys.metrics_data(QUEUE, outcome), 0, -1)
    pipe.xrange(keys.events(QUEUE))
    pipe.zrange(keys.marker(QUEUE), 0, -1, withscores=True)
    pipe.hget(keys.meta(QUEUE), "paused")
    pipe.hmget(keys.meta(QUEUE), "concurrency", "max", "duration")
    pipe.get(keys.limiter(QUEUE))
    pipe.zrange(keys.schedulers(QUEUE), 0, -1, withscores=True)
    for scheduler_id in model.schedulers:
        pipe.hgetall(keys.scheduler(QUEUE, scheduler_id))
    for job_id in job_ids:
        pipe.hgetall(keys.job(QUEUE, job_id))
        pipe.get(keys.lock(QUEUE, job_id))
        pipe.smembers(keys.dependencies(QUEUE, job_id))
        pipe.hgetall(keys.processed(QUEUE, job_id))
        pipe.hgetall(keys.ignored(QUEUE, job_id))
        pipe.zrange(keys.unsuccessful(QUEUE, job_id), 0, -1, withscores=True)
        pipe.lrange(keys.logs(QUEUE, job_id), 0, -1)
    replies = iter(pipe.execute())
    names = {text(n)[len(prefix) :] for n in next(replies)}
    wait, paused, active = ([text(v) for v in next(replies)] for _ in range(3))
    assert (wait, paused, active) == (model.wait, model.paused_list, model.active)
    delayed, prioritized, completed, failed, waiting = (
        {text(m): s for m, s in next(replies)} for _ in range(5)
    )
    assert delayed == model.delayed
    assert list(prioritized) == model.prioritized_order()
    assert prioritized == {j: p * 2**32 + c for j, (p, c) in model.prioritized.items()}, (
        "priority scores"
    )
    assert (completed, failed, waiting) == (model.completed, model.failed, model.waiting_children)
    assert {text(m) for m in next(replies)} == model.stalled
    assert model.stalled <= set(model.active), "the stalled set holds active jobs only"
    id_counter, pc = next(replies)
    assert int(id_counter or 0) == model.id_counter
    assert int(pc or 0) == model.pc
    for outcome in ("completed", "failed"):
        counted = {text(k): int(v) for k, v in next(replies).items()}
        series = [int(v) for v in next(replies)]
        metrics = model.metrics[outcome]
        want = {"count": metrics.count} if metrics.count else {}
        if metrics.prev_ts is not None:
            want |= {"prevTS": metrics.prev_ts, "prevCount": metrics.prev_count}
        assert (counted, series) == (want, metrics.data), f"the metrics of {outcome}"
    events: list[Event] = []
    for _, fields in next(replies):
        flat = [text(x) for pair in fields.items() for x in pair]
        assert flat[0::2][:2] == ["event", "jobId"]
        events.append((flat[1], flat[3], *flat[4:]))
    assert events == model.events
    check_marker(dict(next(replies)), model)
    assert (next(replies) is not None) == model.paused
    limits = [int(v) if v is not None else 0 for v in next(replies)]
    assert limits == [model.queue_concurrency, model.queue_max, model.queue_duration]
    assert int(next(replies) or 0) == model.limiter, "the rate limiter's count"
    assert {text(m): int(score) for m, score in next(replies)} == {
        s: scheduler.next for s, scheduler in model.schedulers.items()
    }
    for scheduler_id, scheduler in model.schedulers.items():
        stored = {text(k): text(v) for k, v in next(replies).items()}
        assert stored == scheduler.fields(), f"scheduler {scheduler_id}"
    for job_id in job_ids:
        check_job(model.jobs[job_id], *(next(replies) for _ in range(7)))
    check_no_orphans(r, names, model)


def check_job(
    job: Job,
    fields: dict[bytes, bytes],
    lock: bytes | None,
    deps: Any,
    done: Any,
    ignored: Any,
    unsuccessful: Any,
    logs: list[bytes],
) -> None:
    stored = {text(k): text(v) for k, v in fields.items()}
    want = {
        "name": job.name,
        "data": job.data,
        "opts": json.dumps(job.opts, separators=(",", ":")),  # as the wrapper sent it
        "timestamp": str(job.timestamp),
        "atm": str(job.atm),
        "stc": str(job.stc),
    }
    optional = {
        "delay": job.delay,
        "priority": job.priority or None,
        "parentKey": keys.job(QUEUE, job.parent) if job.parent else None,
        "deid": job.dedup,
        "processedOn": job.processed_on,
        "finishedOn": job.finished_on,
        "returnvalue": job.returnvalue,
        "failedReason": job.failed_reason,
        "stacktrace": job.stacktrace,
        "progress": job.progress,
        "deps": "1" if job.deps else None,
        "rjk": job.scheduler,
    }
    want.update({k: str(v) for k, v in optional.items() if v is not None})
    assert stored == want, f"job {job.id}"
    assert (text(lock) if lock is not None else None) == job.lock, f"the lock of {job.id}"
    assert {text(m) for m in deps} == {keys.job(QUEUE, c) for c in job.pending}
    assert {text(k): text(v) for k, v in done.items()} == {
        keys.job(QUEUE, c): v for c, v in job.processed.items()
    }
    assert {text(k): text(v) for k, v in ignored.items()} == {
        keys.job(QUEUE, c): v for c, v in job.ignored.items()
    }
    assert {text(m): s for m, s in unsuccessful} == {
        keys.job(QUEUE, c): t for c, t in job.unsuccessful.items()
    }
    assert [text(line) for line in logs] == job.logs, f"the logs of {job.id}"


def check_marker(marker: dict[bytes, float], model: QueueModel) -> None:
    """Idle workers sleep on the marker: it may be early (a worker wakes for nothing) but never
    missing or late while work is due or delayed, unless an idle worker took it and a limit held
    its pickup back (QueueModel.marker_taken)."""
    if model.paused or model.marker_taken:
        return
    score = marker.get(b"next")
    if model.wait or model.prioritized:
        assert score == 0, f"ready work and a marker of {score}"
    elif model.delayed:
        due = min(model.delayed.values())
        assert score is not None, f"delayed work due at {due} and no marker"
        assert score <= due, f"delayed work due at {due} and a marker of {score}"


def check_no_orphans(r: redis.Redis, names: set[str], model: QueueModel) -> None:
    # The queue's own names; "metrics", "de" and "token" start families of keys instead.
    queue_keys = keys.RESERVED_IDS - {"metrics", "de", "token"}
    queue_keys |= {f"metrics:{o}{data}" for o in ("completed", "failed") for data in ("", ":data")}
    jobs = model.jobs
    tokens: dict[str, str] = {}
    for name in names:
        if name in queue_keys:
            continue
        if name.startswith("de:"):
            assert model.dedup.get(name[3:]) is not None, f"a dedup key without its job: {name}"
            continue
        if name.startswith("dn:"):
            assert name[3:] in model.dedup_next, f"a kept add the model does not have: {name}"
            continue
        if name.startswith("repeat:"):
            assert name[7:] in model.schedulers, f"a scheduler the model does not have: {name}"
            continue
        if name.startswith("token:"):
            tokens[name[6:]] = name
            continue
        job_id, _, part = name.partition(":")
        assert job_id in jobs, f"an orphan key: {name}"
        if part == "lock":
            assert jobs[job_id].lock is not None, f"a lock of a job nobody holds: {name}"
        elif part == "dependencies":
            assert jobs[job_id].pending, f"dependencies of a job that has none pending: {name}"
        elif part == "processed":
            assert jobs[job_id].processed, name
        elif part == "failed":
            assert jobs[job_id].ignored, name
        elif part == "unsuccessful":
            assert jobs[job_id].unsuccessful, name
        elif part == "logs":
            assert jobs[job_id].logs, f"logs of a job that has none: {name}"
        else:
            assert part == "", f"a key the protocol does not have: {name}"
    pipe = r.pipeline(transaction=False)
    for name in tokens.values():
        pipe.get(keys.prefix(QUEUE) + name)
        pipe.pttl(keys.prefix(QUEUE) + name)
    replies = iter(pipe.execute())
    found = {}
    for token in tokens:
        record, ttl = text(next(replies)), next(replies)
        assert ttl > 0, f"the record of token {token} never expires"
        found[token] = record
    # Records the model dropped may live on in Redis until their TTL (a job the token held was
    # retried and picked by another token): the model's own must all be there and right.
    for token, (held, finished, answer) in model.tokens.items():
        assert found.get(token) == (f"{held}:{finished}:{answer}" if finished else held), token
    pipe = r.pipeline(transaction=False)
    for dedup_id in model.dedup:
        pipe.get(keys.dedup(QUEUE, dedup_id))
        pipe.pttl(keys.dedup(QUEUE, dedup_id))
    for dedup_id in model.dedup_next:
        pipe.hgetall(keys.dedup_next(QUEUE, dedup_id))
    replies = iter(pipe.execute())
    for dedup_id, holder in model.dedup.items():
        stored, ttl = next(replies), next(replies)
        assert stored is not None, f"dedup id {dedup_id} not held"
        assert text(stored) == holder, f"dedup id {dedup_id}"
        assert (ttl > 0) == (dedup_id in model.dedup_ttl), f"the TTL of dedup id {dedup_id}: {ttl}"
    for dedup_id, kept in model.dedup_next.items():
        fields = {text(k): text(v) for k, v in next(replies).items()}
        want = {
            "name": kept.name,
            "data": "{}",
            "opts": json.dumps(kept.opts, separators=(",", ":")),
            "jid": kept.job_id,
        }
        if kept.delay is not None:
            want["delay"] = str(kept.delay)
        if kept.priority:
            want["priority"] = str(kept.priority)
        assert fields == want, f"the add kept for dedup id {dedup_id}"


def examples() -> int:
    return int(os.environ.get("EMQ_MODEL_EXAMPLES", "500"))


def run_machine(r: redis.Redis, max_examples: int, steps: int) -> int:
    """Run the machine's sequences on `r`; how many steps they took."""

    class Machine(QueueMachine):
        pass

    Machine.r = r
    run_state_machine_as_test(
        Machine,
        settings=settings(
            max_examples=max_examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            print_blob=True,
        ),
    )
    return Machine.steps


def test_the_scripts_do_what_the_model_says(r: redis.Redis) -> None:
    assert run_machine(r, examples(), 60) > examples()  # sequences of more than one step


@pytest.mark.soak
def test_the_scripts_do_what_the_model_says_at_length(r: redis.Redis) -> None:
    """At least 100,000 steps, in runs of 1,000 sequences of up to 80 steps (each run
    explores anew: hypothesis keeps no database here)."""
    steps = 0
    while steps < 100_000:
        steps += run_machine(r, 1_000, 80)
