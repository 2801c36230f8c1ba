"""A plain Python model of one EchoMQ queue: what docs/protocol.md says every script does.

The model-based test (tests/test_model.py) runs each script against a real Redis and the same
step against this model, then compares every reply and the whole queue. The model knows nothing
of Lua or Redis: lists are Python lists with the head (Redis's left end) at index 0, sorted sets
are dicts of scores, and each method follows the steps of one script in docs/protocol.md. A
script that changes is changed here in the same commit, and a new script gets its method here.

Time is the model's own clock in milliseconds (the scripts take `now` from their arguments).
Lock lifetimes are the server's: the model never lets a lock expire by itself; a test step that
wants one gone deletes the lock and its token's record together, as their shared expiry would.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from echomq_scripts.flows import FlowJob
from echomq_scripts.runtime import keys

Event = tuple[str, ...]
"""An event as the stream holds it: event, jobId, then field and value pairs, all text."""


def lua_number(value: object) -> float | None:
    """Lua's tonumber on an option the scripts read: a number, or a string that holds one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def keep_rule(rule: object) -> tuple[bool, int | None, float | None, int]:
    """A retention rule read as the scripts read it (includes/applyRetention.lua): (remove the job
    itself, keep the newest N or None, drop older than `age` seconds or None, remove at most this
    many)."""
    if rule is True:
        return True, None, None, 1
    if not isinstance(rule, int | float | dict) or isinstance(rule, bool):
        return False, None, None, 0
    count: object = rule if isinstance(rule, int | float) else None
    age: object = None
    most: object = None
    if isinstance(rule, dict):
        count, age, most = rule.get("count"), rule.get("age"), rule.get("limit")
    keep, seconds, limit = lua_number(count), lua_number(age), lua_number(most)
    return (
        False,
        math.floor(keep) if keep is not None and keep >= 0 else None,
        seconds if seconds is not None and seconds >= 0 else None,
        math.floor(limit) if limit is not None and limit >= 1 else 1000,
    )


def backoff_delay(backoff: object, attempt: int, draw: float, custom: int) -> int:
    """includes/backoffDelay.lua: the retry delay by a job's `backoff` option."""
    if isinstance(backoff, int | float) and not isinstance(backoff, bool):
        return max(math.floor(backoff), 0)
    if not isinstance(backoff, dict):
        return 0
    kind = backoff.get("type")
    delay = lua_number(backoff.get("delay")) or 0
    if kind in ("exponential", None):
        delay = delay * 2 ** (attempt - 1)
    elif kind != "fixed":
        return custom
    share = lua_number(backoff.get("jitter")) or 0
    if share > 0:
        share = min(share, 1)
        delay = delay * (1 - share) + delay * share * draw
    return max(math.floor(delay), 0)


@dataclass
class Metrics:
    """One outcome's metrics hash and its per-minute series (includes/countFinished.lua)."""

    count: int = 0
    prev_ts: int | None = None
    prev_count: int = 0
    data: list[int] = field(default_factory=list)  # newest minute first

    def count_finished(self, keep: int, now: int) -> None:
        self.count += 1
        if keep == 0:
            return
        if self.prev_ts is None:
            self.prev_ts, self.prev_count = now, self.count - 1
            return
        minutes = now // 60000 - self.prev_ts // 60000
        if minutes <= 0:
            return
        points = [self.count - 1 - self.prev_count] + [0] * (min(minutes, keep) - 1)
        self.data = (points[::-1] + self.data)[:keep]
        self.prev_ts, self.prev_count = now, self.count - 1


@dataclass
class Job:
    """One job hash and where it is."""

    id: str
    name: str
    opts: dict[str, Any]
    timestamp: int
    state: str = ""
    atm: int = 0
    stc: int = 0
    delay: int | None = None  # the hash's "delay" field
    priority: int = 0
    parent: str | None = None  # the parent's id
    dedup: str | None = None
    processed_on: int | None = None
    finished_on: int | None = None
    returnvalue: str | None = None
    failed_reason: str | None = None
    stacktrace: str | None = None
    progress: str | None = None  # the JSON text updateProgress-3 stored
    logs: list[str] = field(default_factory=list)  # `:logs`, oldest first
    deps: bool = False  # the hash's "deps": a child was ever added to it
    scheduler: str | None = None  # "rjk": the job scheduler whose iteration it is
    data: str = "{}"  # what the test sends; a scheduler's iterations take its template's
    lock: str | None = None  # the token that holds the job's lock
    pending: set[str] = field(default_factory=set)  # a parent's pending children, by id
    processed: dict[str, str] = field(default_factory=dict)  # child id -> its return value
    ignored: dict[str, str] = field(default_factory=dict)  # :failed, child id -> its reason
    unsuccessful: dict[str, int] = field(default_factory=dict)  # child id -> when it failed

    @property
    def lifo(self) -> bool:
        """includes/lifoOption.lua: opts.lifo is JSON true."""
        return self.opts.get("lifo") is True


POLICIES = (
    "failParentOnFailure",
    "ignoreDependencyOnFailure",
    "removeDependencyOnFailure",
    "continueParentOnFailure",
)
"""A child's policy for its parent when it fails for good: an option set to JSON true."""


@dataclass(frozen=True)
class DedupOptions:
    """opts.deduplication as includes/checkJobArgs.lua reads it."""

    ttl: int | None = None
    extend: bool = False
    replace: bool = False
    keep_last_if_active: bool = False


def dedup_options(opts: Mapping[str, Any]) -> DedupOptions | None:
    """The deduplication options of valid `opts` (the model sends no others)."""
    found = opts.get("deduplication")
    if not isinstance(found, dict):
        return None
    return DedupOptions(
        ttl=found.get("ttl") or None,
        extend=found.get("extend") is True,
        replace=found.get("replace") is True,
        keep_last_if_active=found.get("keepLastIfActive") is True,
    )


@dataclass(frozen=True)
class KeptAdd:
    """An add deduplicated while its holder was active, with keepLastIfActive: `dn:<dedup id>`."""

    name: str
    opts: dict[str, Any]
    job_id: str  # its custom id, or ""
    delay: int | None  # addDelayedJob's delay (0 too), None from the other add scripts
    priority: int


@dataclass(frozen=True)
class DependenciesRead:
    """getDependencies-4 of a parent as the model knows it: its four records whole, as the script
    answers a whole record (processed, unprocessed sorted, ignored, failed oldest first), and
    which of them hold more than `count` entries. The script may answer such a record by the
    first page of its scan instead, which the server picks: a test checks that page against the
    whole record."""

    records: tuple[dict[str, str], list[str], dict[str, str], list[str]]
    paged: tuple[bool, bool, bool, bool]


@dataclass
class Scheduler:
    """A job scheduler: `emq:{q}:repeat:<id>` and its score in `emq:{q}:repeat`."""

    settings: dict[str, str]  # name, data, opts, priority, every, pattern, tz, limit, dates
    offset: int
    iterations: int  # "ic"
    next: int  # the score: the current iteration's run, or the last one's once it has ended

    def fields(self) -> dict[str, str]:
        """The hash: the settings stored, a non-zero offset and the iterations."""
        offset = {"offset": str(self.offset)} if self.offset else {}
        return {**stored_settings(self.settings), **offset, "ic": str(self.iterations)}

    def setting(self, name: str) -> str:
        return self.settings.get(name, SETTING_DEFAULTS.get(name, ""))


SETTING_DEFAULTS = {
    "data": "{}",
    "opts": "{}",
    "priority": "0",
    "every": "0",
    "pattern": "",
    "tz": "",
    "limit": "0",
    "startDate": "0",
    "endDate": "0",
}
"""A scheduler's settings that stand for none: addJobScheduler-10 does not store them."""


def stored_settings(settings: dict[str, str]) -> dict[str, str]:
    """The settings addJobScheduler-10 stores: those not at their default."""
    return {k: v for k, v in settings.items() if SETTING_DEFAULTS.get(k) != v}


def iteration_id(scheduler_id: str, run_at: int) -> str:
    """includes/schedulerJobId.lua."""
    return f"repeat-{scheduler_id}-{run_at}"


def every_next_run(
    previous: int | None, every: int, now: int, offset: int, start: int
) -> tuple[int, int]:
    """includes/everyNextRun.lua."""
    if previous is not None:
        run_at = previous + every
        if run_at < now:
            run_at = now // every * every + offset
            if run_at <= now:
                run_at += every
    elif start > 0:
        run_at = max(start, now)
    elif offset > 0:
        run_at = now // every * every + offset
        if run_at <= now:
            run_at += every
    else:
        run_at = now
    if offset == 0:
        offset = run_at - run_at // every * every
    return run_at, offset


class CycleRefused(Exception):
    """An add that would make a job its own ancestor: the script's Lua error."""


class FlowRefused(Exception):
    """A flow addFlow-10 refuses with a Lua error before any write; the message is the error's."""


@dataclass
class FlowNode:
    """A flow's node as addFlow-10 reads it: the job, the index of the node above it, and what
    the script finds out about it before and as it writes."""

    job: FlowJob
    above: int | None
    skipped: str = ""  # "above" or "deduplicated"
    exists: bool = False
    joins: bool = False  # an existing job without a live parent, which joins the one named
    stored_parent: str | None = None
    # What a joiner had finished with, read before the writes: ("completed", its value) or
    # ("failed", its reason, its options); None while it has not finished.
    finished: tuple[str, str, dict[str, Any]] | None = None
    id: str = ""  # once written


def _preorder(
    job: FlowJob, above: int | None, into: list[FlowNode] | None = None
) -> list[FlowNode]:
    nodes = [] if into is None else into
    index = len(nodes)
    nodes.append(FlowNode(job, above))
    for child in job.children:
        _preorder(child, index, nodes)
    return nodes


@dataclass
class QueueModel:
    """One queue, as the eight state keys and the queue-wide keys hold it."""

    name: str
    jobs: dict[str, Job] = field(default_factory=dict)
    wait: list[str] = field(default_factory=list)
    paused_list: list[str] = field(default_factory=list)
    active: list[str] = field(default_factory=list)
    delayed: dict[str, int] = field(default_factory=dict)  # run-at
    prioritized: dict[str, tuple[int, int]] = field(default_factory=dict)  # (priority, counter)
    completed: dict[str, int] = field(default_factory=dict)  # finished-at
    failed: dict[str, int] = field(default_factory=dict)
    waiting_children: dict[str, int] = field(default_factory=dict)  # added-at
    stalled: set[str] = field(default_factory=set)
    paused: bool = False
    limiter: int = 0  # pickups in the rate limiter's window (its key's count)
    # The queue's own limits, in its meta hash (setGlobalConcurrency-1, setGlobalRateLimit-1).
    queue_concurrency: int = 0
    queue_max: int = 0
    queue_duration: int = 0
    # An idle worker took the marker (BZPOPMIN) and its pickup was held back by a limit before
    # it got to take a job, which refreshes the marker: until a pickup gets that far, or a
    # resume, the marker may be missing while work waits (docs/protocol.md, the marker).
    marker_taken: bool = False
    id_counter: int = 0
    pc: int = 0
    dedup: dict[str, str] = field(default_factory=dict)  # dedup id -> the job holding it
    dedup_ttl: set[str] = field(default_factory=set)  # the dedup ids whose key has a TTL
    dedup_next: dict[str, KeptAdd] = field(default_factory=dict)
    schedulers: dict[str, Scheduler] = field(default_factory=dict)
    # A token's record: (the job it holds or held last, the job it finished, that finish's answer)
    tokens: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    metrics: dict[str, Metrics] = field(
        default_factory=lambda: {"completed": Metrics(), "failed": Metrics()}
    )

    # -- reading --------------------------------------------------------------------------

    def states(self) -> dict[str, str]:
        return {job.id: job.state for job in self.jobs.values()}

    def counts(self) -> list[int]:
        return [
            len(self.wait),
            len(self.paused_list),
            len(self.active),
            len(self.delayed),
            len(self.prioritized),
            len(self.completed),
            len(self.failed),
            len(self.waiting_children),
        ]

    def prioritized_order(self) -> list[str]:
        """Lowest score first; jobs of one score (first of their priority, with no counter) in
        the byte order of their ids, as Redis orders them."""
        return sorted(self.prioritized, key=lambda j: (self.prioritized[j], j.encode()))

    def held_job(self, token: str) -> str | None:
        held = self.tokens.get(token, ("",))[0]
        if held in self.jobs and self.jobs[held].lock == token:
            return held
        return None

    # -- shared steps ---------------------------------------------------------------------

    def _emit(self, event: str, job_id: str, *fields: object) -> None:
        self.events.append((event, job_id, *(str(f) for f in fields)))

    def _set_state(self, job_id: str, state: str) -> None:
        self.jobs[job_id].state = state

    def _push_ready(self, job_id: str) -> str:
        """includes/pushReady.lua: the head of wait, or of paused while paused."""
        if self.paused:
            self.paused_list.insert(0, job_id)
            self._set_state(job_id, "paused")
            return "paused"
        self.wait.insert(0, job_id)
        self._set_state(job_id, "wait")
        return "wait"

    def _push_prioritized(self, job_id: str, priority: int) -> str:
        self.pc += 1
        self.prioritized[job_id] = (priority, self.pc % 2**32)
        self._set_state(job_id, "prioritized")
        return "prioritized"

    def _push_next(self, job_id: str) -> str:
        """includes/pushNext.lua: the tail of wait, or of paused while paused."""
        state = "paused" if self.paused else "wait"
        (self.paused_list if self.paused else self.wait).append(job_id)
        self._set_state(job_id, state)
        return state

    def _push_prioritized_first(self, job_id: str, priority: int) -> str:
        """includes/pushPrioritizedFirst.lua: the score of its priority with no counter."""
        self.prioritized[job_id] = (priority, 0)
        self._set_state(job_id, "prioritized")
        return "prioritized"

    def _enqueue_ready_job(self, job_id: str, lifo: bool = False) -> str:
        priority = self.jobs[job_id].priority
        if priority > 0:
            return self._push_prioritized(job_id, priority)
        return self._push_next(job_id) if lifo else self._push_ready(job_id)

    def _enqueue_new_job(self, job_id: str, delay: int, run_at: int | None) -> None:
        """includes/enqueueNewJob.lua: a new job to delayed when it has a run-at, else to
        prioritized with its priority, else to wait (paused), with the add's event."""
        job = self.jobs[job_id]
        if run_at is not None:
            self.delayed[job_id] = run_at
            job.state = "delayed"
            self._emit("delayed", job_id, "delay", delay, "runAt", run_at)
        elif job.priority:
            self._push_prioritized(job_id, job.priority)
            self._emit("prioritized", job_id, "priority", job.priority)
        else:
            state = self._push_next(job_id) if job.lifo else self._push_ready(job_id)
            self._emit("paused" if state == "paused" else "waiting", job_id, "name", job.name)

    def _new_id(self) -> str:
        while True:
            self.id_counter += 1
            if str(self.id_counter) not in self.jobs:
                return str(self.id_counter)

    # -- the add scripts ------------------------------------------------------------------

    def _add(
        self,
        job_id: str,
        name: str,
        opts: dict[str, Any],
        now: int,
        dedup_id: str,
        delay: int | None = None,
        priority: int = 0,
    ) -> tuple[str, bool]:
        """includes/addJob.lua and deduplicate.lua: the new job's id and True, or a holder's id
        and False. `delay` and `priority` are the add script's own fields, kept with a deferred
        add."""
        options = dedup_options(opts)
        exists = bool(job_id) and job_id in self.jobs
        ttl = options.ttl if options else None
        keep_last = options is not None and options.keep_last_if_active
        with_ttl = ttl is not None and not keep_last
        replaced = None
        if dedup_id and dedup_id in self.dedup:
            holder = self.dedup[dedup_id]
            found = self.jobs.get(holder)
            holds = found is not None and found.dedup == dedup_id  # a TTL outlives its job
            if (
                holds
                and options is not None
                and options.replace
                and not exists
                and holder in self.delayed
                and self.jobs[holder].parent is None
            ):
                del self.delayed[holder]
                del self.jobs[holder]
                self.dedup_next.pop(dedup_id, None)
                self._emit("removed", holder, "prev", "delayed")
                replaced = holder
                if ttl is not None and not options.extend and not keep_last:
                    with_ttl = dedup_id in self.dedup_ttl  # KEEPTTL
            else:
                if holds and keep_last and holder in self.active:
                    self.dedup_next[dedup_id] = KeptAdd(name, opts, job_id, delay, priority)
                    self.dedup_ttl.discard(dedup_id)
                elif (
                    ttl is not None
                    and options is not None
                    and options.extend
                    and dedup_id in self.dedup_ttl
                ):
                    pass  # the TTL starts again: the model keeps no time
                self._emit(
                    "deduplicated",
                    holder,
                    "deduplicationId",
                    dedup_id,
                    "deduplicatedJobId",
                    job_id,
                )
                return holder, False
        if exists:
            self._emit("duplicated", job_id)
            return job_id, False
        new = self._create(job_id, name, opts, now, dedup_id, with_ttl=with_ttl)
        if replaced is not None:
            self._emit(
                "deduplicated", new, "deduplicationId", dedup_id, "deduplicatedJobId", replaced
            )
        return new, True

    def _create(
        self,
        job_id: str,
        name: str,
        opts: dict[str, Any],
        now: int,
        dedup_id: str,
        reserved: frozenset[str] = frozenset(),
        with_ttl: bool = False,
    ) -> str:
        """createJob: a generated id skips the ids taken, and `reserved` (a flow's custom ids);
        the dedup id is taken with a TTL or without."""
        while not job_id:
            candidate = self._new_id()
            job_id = "" if candidate in reserved else candidate
        job = Job(job_id, name, opts, now)
        if dedup_id:
            self.dedup[dedup_id] = job_id
            job.dedup = dedup_id
            if with_ttl:
                self.dedup_ttl.add(dedup_id)
            else:
                self.dedup_ttl.discard(dedup_id)
        self.jobs[job_id] = job
        return job_id

    def add_flow(self, root: FlowJob, parent_id: str, now: int) -> list[tuple[str, int]] | int:
        """addFlow-10: every node checked, then written; the joiners last, then the new parents
        none of whose children is pending."""
        nodes = _preorder(root, None)
        customs = [node.job.job_id for node in nodes if node.job.job_id]
        for at, job_id in enumerate(customs):
            if job_id in customs[:at]:
                raise FlowRefused(f"job id '{job_id}' is in the flow twice")
        if parent_id and parent_id not in self.jobs:
            return -5
        taken: set[str] = set()
        for node in nodes:
            above = nodes[node.above] if node.above is not None else None
            dedup_id = node.job.dedup_id
            if above is not None and above.skipped:
                node.skipped = "above"
            elif dedup_id and (dedup_id in taken or dedup_id in self.dedup):
                node.skipped = "deduplicated"
            else:
                existing = self.jobs.get(node.job.job_id) if node.job.job_id else None
                if existing is None:
                    if dedup_id:
                        taken.add(dedup_id)  # by a new job only
                    continue
                node.exists, node.stored_parent = True, existing.parent
                named = (above.job.job_id or None) if above is not None else (parent_id or None)
                if above is not None or parent_id:
                    # A parent that is gone (removed by retention) counts as none.
                    if existing.scheduler is not None:
                        return -8
                    if existing.parent is None or existing.parent not in self.jobs:
                        node.joins = True
                        if existing.state == "completed":
                            node.finished = ("completed", existing.returnvalue or "", {})
                        elif existing.state == "failed":
                            reason = existing.failed_reason or ""
                            node.finished = ("failed", reason, dict(existing.opts))
                    elif existing.parent != named:
                        return -7
        by_id = {node.job.job_id: i for i, node in enumerate(nodes) if node.job.job_id}
        for node in nodes:
            if node.joins:
                self._refuse_cycle(nodes, node, by_id, parent_id)
        replies: list[tuple[str, int]] = []
        joiners: list[tuple[FlowNode, str]] = []
        parents: list[str] = []
        reserved = frozenset(customs)
        for node in nodes:
            job = node.job
            above = nodes[node.above] if node.above is not None else None
            parent = above.id if above is not None else parent_id
            if node.skipped == "above":
                replies.append(("", 0))
                continue
            if node.skipped:
                holder = self.dedup[job.dedup_id]
                options = dedup_options(job.opts)
                self._emit(
                    "deduplicated",
                    holder,
                    "deduplicationId",
                    job.dedup_id,
                    "deduplicatedJobId",
                    job.job_id,
                )
                replies.append((holder, 0))
                continue
            if node.exists:
                node.id = job.job_id
                self._emit("duplicated", job.job_id)
                if node.joins:
                    self.jobs[job.job_id].parent = parent
                    self.jobs[parent].pending.add(job.job_id)
                    self.jobs[parent].deps = True
                    joiners.append((node, parent))
                replies.append((job.job_id, 0))
                continue
            options = dedup_options(job.opts)
            node.id = self._create(
                job.job_id,
                job.name,
                dict(job.opts),
                now,
                job.dedup_id,
                reserved,
                with_ttl=options is not None and options.ttl is not None,
            )
            new = self.jobs[node.id]
            new.delay = job.delay or None
            new.priority = job.priority
            if parent:
                new.parent = parent
                self.jobs[parent].pending.add(node.id)
                self.jobs[parent].deps = True
            if job.children:
                self.waiting_children[node.id] = now
                new.state = "waiting-children"
                self._emit("waiting-children", node.id)
                parents.append(node.id)
            else:
                run_at = now + job.delay if job.delay else None
                self._enqueue_new_job(node.id, job.delay, run_at)
            replies.append((node.id, 1))
        for joiner, parent in joiners:
            self._join_parent(joiner, parent, now)
        for new_parent in parents:
            self._release(new_parent, when_done=True)
        return replies

    def _refuse_cycle(
        self, nodes: list[FlowNode], node: FlowNode, by_id: dict[str, int], parent_id: str
    ) -> None:
        """An existing job that joins may not be above its new parent: its ancestors as they
        will be once the flow is in. A loop that does not pass through it is not its own."""

        def after(i: int) -> tuple[int | None, str | None]:
            at = nodes[i]
            if at.exists and not at.joins:
                return None, at.stored_parent
            if at.above is not None:
                return at.above, None
            return None, parent_id or None

        index, ancestor = after(nodes.index(node))
        seen: set[str] = set()
        while index is not None or ancestor is not None:
            if index is not None:
                index, ancestor = after(index)
                continue
            assert ancestor is not None
            if ancestor == node.job.job_id:
                raise CycleRefused(node.job.job_id)
            if ancestor in seen:
                break
            seen.add(ancestor)
            at = by_id.get(ancestor)
            if at is not None and not nodes[at].skipped:
                index, ancestor = after(at)
            else:
                found = self.jobs.get(ancestor)
                ancestor = found.parent if found is not None else None

    def _join_parent(self, node: FlowNode, parent_id: str, now: int) -> None:
        """includes/joinParent.lua: a job that existed joins its parent by what it had finished
        with before the flow's writes, whether or not a parent's retention removed it since."""
        if node.finished is None:
            return
        how, result, opts = node.finished
        job_id = node.job.job_id
        parent = self.jobs.get(parent_id)
        if how == "completed":
            if parent is not None and job_id in parent.pending:
                parent.pending.discard(job_id)
                parent.processed[job_id] = result
                self._release(parent_id, when_done=True)
        else:
            self._child_failed(job_id, parent_id, opts, result, now)

    def add_standard(self, **a: Any) -> tuple[str, int]:
        job_id, new = self._add(**a)
        if new:
            self._enqueue_new_job(job_id, 0, None)  # no priority: to wait, or paused
        return job_id, int(new)

    def add_delayed(self, delay: int, **a: Any) -> tuple[str, int]:
        job_id, new = self._add(**a, delay=delay)
        if new:
            job = self.jobs[job_id]
            job.delay = delay
            self.delayed[job_id] = a["now"] + delay
            job.state = "delayed"
            self._emit("delayed", job_id, "delay", delay, "runAt", a["now"] + delay)
        return job_id, int(new)

    def add_prioritized(self, priority: int, **a: Any) -> tuple[str, int]:
        job_id, new = self._add(**a, priority=priority)
        if new:
            self.jobs[job_id].priority = priority
            self._push_prioritized(job_id, priority)
            self._emit("prioritized", job_id, "priority", priority)
        return job_id, int(new)

    # -- pickup ---------------------------------------------------------------------------

    def _promote_due(self, now: int) -> None:
        due = sorted((run_at, job_id) for job_id, run_at in self.delayed.items() if run_at <= now)
        for _, job_id in due[:1000]:
            del self.delayed[job_id]
            state = self._enqueue_ready_job(job_id)
            self._emit("paused" if state == "paused" else "waiting", job_id, "prev", "delayed")

    def _pickup(
        self,
        token: str,
        now: int,
        concurrency: int,
        finished: tuple[str, str] = ("", ""),
        limit_max: int = 0,
    ) -> tuple[str, dict[str, str] | None, int]:
        """includes/pickup.lua: the job taken (its hash is read from Redis by the test,
        None here) or "". A limited-for of -1 stands for the limiter's time to live, which the
        server's clock sets."""
        self._promote_due(now)
        if self.paused:
            return "", {}, 0
        if self.queue_max > 0:
            limit_max = self.queue_max
        if self.queue_concurrency > 0 and (
            concurrency == 0 or self.queue_concurrency < concurrency
        ):
            concurrency = self.queue_concurrency
        if limit_max > 0 and self.limiter >= limit_max:
            return "", {}, -1
        if concurrency > 0 and len(self.active) >= concurrency:
            return "", {}, 0
        self.marker_taken = False
        if self.wait:
            job_id = self.wait.pop()
        elif self.prioritized:
            job_id = self.prioritized_order()[0]
            del self.prioritized[job_id]
        else:
            return "", {}, 0
        self.active.insert(0, job_id)
        if limit_max > 0:
            self.limiter += 1
        job = self.jobs[job_id]
        job.state, job.lock, job.processed_on = "active", token, now
        self.tokens[token] = (job_id, *finished)
        self._emit("active", job_id, "prev", "waiting")
        return job_id, None, 0

    def move_to_active(
        self, token: str, now: int, concurrency: int = 0, limit_max: int = 0
    ) -> tuple[str, dict[str, str] | None, int]:
        """moveToActive-11: the job the token holds (a re-sent pickup), or a new pickup."""
        held = self.held_job(token)
        if held is not None:
            return held, None, 0
        return self._pickup(token, now, concurrency, limit_max=limit_max)

    # -- the queue's limits ---------------------------------------------------------------

    def set_global_concurrency(self, concurrency: int) -> int:
        self.queue_concurrency = concurrency
        return 1

    def set_global_rate_limit(self, limit_max: int, duration: int) -> int:
        self.queue_max, self.queue_duration = limit_max, duration if limit_max else 0
        return 1

    def is_maxed(self) -> int:
        return int(0 < self.queue_concurrency <= len(self.active))

    def get_rate_limit_ttl(self, max_jobs: int) -> int:
        """getRateLimitTtl-2; -1 stands for the limiter's time to live, as in a pickup."""
        max_jobs = max_jobs or self.queue_max
        if (max_jobs > 0 and self.limiter < max_jobs) or self.limiter == 0:
            return 0
        return -1

    def rate_limit(self) -> int:
        self.limiter = 2**53 - 1
        return 1

    def remove_rate_limit_key(self) -> int:
        running, self.limiter = self.limiter > 0, 0
        return int(running)

    # -- the lock holder's scripts --------------------------------------------------------

    def _lock_code(self, job_id: str, token: str) -> int:
        job = self.jobs.get(job_id)
        holder = job.lock if job is not None else None
        if holder is None:
            return -2
        return 0 if holder == token else -6

    def _landed(self, job_id: str, token: str) -> str | None:
        """includes/landedFinish.lua: the token's record of its last finish."""
        _, finished, answer = self.tokens.get(token, ("", "", ""))
        return answer if finished == job_id else None

    def _record_finish(self, token: str, job_id: str, answer: str) -> None:
        if token in self.tokens:  # SET ... KEEPTTL XX: only a record that is still there
            self.tokens[token] = ("", job_id, answer)

    def extend_lock(self, job_id: str, token: str) -> int:
        code = self._lock_code(job_id, token)
        if code:
            return code
        self.stalled.discard(job_id)
        return 1

    def _take_off_active(self, job_id: str) -> None:
        index = len(self.active) - 1 - self.active[::-1].index(job_id)
        del self.active[index]
        self.stalled.discard(job_id)
        self.jobs[job_id].lock = None

    def _retention(self, finished: dict[str, int], job_id: str, rule: object, now: int) -> bool:
        own, keep, age, limit = keep_rule(rule)
        drop: list[str] = [job_id] if own else []

        def oldest() -> list[str]:
            return sorted(finished, key=lambda j: (finished[j], j.encode()))

        if age is not None:
            drop += [j for j in oldest() if finished[j] <= now - age * 1000][:limit]
        if keep is not None and limit > len(drop):
            left = [j for j in oldest() if j not in drop]
            drop += left[: min(len(left) - keep, limit - len(drop))] if len(left) > keep else []
        for gone in drop:
            del finished[gone]
            del self.jobs[gone]
        return job_id in drop

    def job_key(self, job_id: str) -> str:
        """A child as a parent's keys name it: its job key (the protocol's key names)."""
        return keys.job(self.name, job_id)

    def _release(self, parent_id: str, when_done: bool) -> None:
        """includes/releaseParent.lua."""
        parent = self.jobs.get(parent_id)
        if when_done and parent is not None and (parent.pending or parent.unsuccessful):
            return
        if parent_id not in self.waiting_children:
            return
        del self.waiting_children[parent_id]
        self._enqueue_ready_job(parent_id)
        self._emit("waiting", parent_id, "prev", "waiting-children")

    def _child_completed(self, child_id: str, parent_id: str, value: str) -> None:
        parent = self.jobs.get(parent_id)
        if parent is None or child_id not in parent.pending:
            return
        parent.pending.discard(child_id)
        parent.processed[child_id] = value
        self._release(parent_id, when_done=True)

    def _child_failed(
        self, child_id: str, parent_id: str | None, opts: dict[str, Any], reason: str, now: int
    ) -> None:
        """includes/childFailed.lua: the policy of the child's options, up the tree."""
        while parent_id is not None:
            parent = self.jobs.get(parent_id)
            if parent is None or child_id not in parent.pending:
                return
            parent.pending.discard(child_id)
            if opts.get("ignoreDependencyOnFailure") is True or (
                opts.get("continueParentOnFailure") is True
            ):
                parent.ignored[child_id] = reason
                self._release(parent_id, opts.get("continueParentOnFailure") is not True)
                return
            if opts.get("removeDependencyOnFailure") is True:
                self._release(parent_id, when_done=True)
                return
            parent.unsuccessful[child_id] = now
            fails_parent = opts.get("failParentOnFailure") is True
            if not fails_parent or parent_id not in self.waiting_children:
                return
            del self.waiting_children[parent_id]
            parent.failed_reason = f"child {self.job_key(child_id)} failed"
            parent.finished_on = now
            self.failed[parent_id] = now
            parent.state = "failed"
            self.metrics["failed"].count_finished(0, now)
            self._emit("failed", parent_id, "prev", "waiting-children")
            self._finish_dedup(parent, now)
            self._retention(self.failed, parent_id, parent.opts.get("removeOnFail"), now)
            child_id, parent_id, opts = parent_id, parent.parent, parent.opts
            reason = parent.failed_reason  # what the parent's own parent records of it

    def _release_dedup(self, job: Job) -> None:
        """includes/releaseDedupId.lua: a job removed lets its dedup id go, TTL or not, with the
        add kept for when it finished."""
        if job.dedup is not None and self.dedup.get(job.dedup) == job.id:
            del self.dedup[job.dedup]
            self.dedup_ttl.discard(job.dedup)
            self.dedup_next.pop(job.dedup, None)

    def _finish_dedup(self, job: Job, now: int) -> None:
        """includes/finishDedupId.lua: a job that finishes adds the add kept while it was active,
        or lets its dedup id go unless a TTL runs on it."""
        dedup_id = job.dedup
        if dedup_id is None or self.dedup.get(dedup_id) != job.id:
            return
        kept = self.dedup_next.pop(dedup_id, None)
        if kept is not None and kept.job_id and kept.job_id in self.jobs:
            self._emit("duplicated", kept.job_id)
        elif kept is not None:
            new_id = self._create(kept.job_id, kept.name, kept.opts, now, dedup_id)
            new = self.jobs[new_id]
            new.delay = kept.delay
            new.priority = kept.priority
            delay = kept.delay or 0
            run_at = min(now + delay, 2**53 - 1) if kept.delay is not None else None
            self._enqueue_new_job(new_id, delay, run_at)
            return
        if dedup_id not in self.dedup_ttl:
            del self.dedup[dedup_id]

    def move_to_finished(
        self,
        job_id: str,
        token: str,
        now: int,
        outcome: str,
        result: str,
        jitter: float,
        fetch_next: bool,
        concurrency: int = 0,
        max_metrics: int = 0,
        custom_delay: int = 0,
        stacktrace: str = "",
    ) -> tuple[str, str, dict[str, str] | None, int] | int:
        code = self._lock_code(job_id, token)
        if code:
            went = self._landed(job_id, token)
            if went not in ("completed", "failed", "delayed", "waiting"):
                return code
            held = self.held_job(token) if fetch_next else None
            return (went, held, None, 0) if held is not None else (went, "", {}, 0)
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        if outcome == "completed" and job.deps and job.pending:
            return -4
        if outcome == "completed" and job.deps and job.unsuccessful:
            return -9
        if job_id not in self.active:
            return -3
        self._take_off_active(job_id)
        job.atm += 1
        attempts = lua_number(job.opts.get("attempts")) or 1
        retry_at = None
        if outcome == "failed" and job.atm < attempts:
            job.delay = backoff_delay(job.opts.get("backoff"), job.atm, jitter, custom_delay)
            job.failed_reason, job.stacktrace = result, stacktrace
            if job.delay > 0:
                went, retry_at = "delayed", now + job.delay
            else:
                went = "waiting"
            job.state = "delayed (in flight)"  # in no state until the end of the call
        else:
            went = outcome
            job.finished_on = now
            if outcome == "completed":
                job.returnvalue = result
                finished = self.completed
            else:
                job.failed_reason, job.stacktrace = result, stacktrace
                finished = self.failed
            finished[job_id] = now
            job.state = outcome
            self.metrics[outcome].count_finished(max_metrics, now)
            self._emit(outcome, job_id, "prev", "active")
            self._finish_dedup(job, now)
            rule = job.opts.get("removeOnComplete" if outcome == "completed" else "removeOnFail")
            self._retention(finished, job_id, rule, now)
            if job.parent is not None and outcome == "completed":
                self._child_completed(job_id, job.parent, result)
            elif job.parent is not None:
                self._child_failed(job_id, job.parent, job.opts, result, now)
        picked: tuple[str, dict[str, str] | None, int] = ("", {}, 0)
        if fetch_next:
            picked = self._pickup(token, now, concurrency, (job_id, went))
        if not picked[0]:
            self._record_finish(token, job_id, went)
        if retry_at is not None:
            self.delayed[job_id] = retry_at
            job.state = "delayed"
            self._emit("delayed", job_id, "delay", job.delay, "prev", "active")
        elif went == "waiting":
            state = self._enqueue_ready_job(job_id)
            self._emit("paused" if state == "paused" else "waiting", job_id, "prev", "active")
        return (went, *picked)

    def move_to_delayed(self, job_id: str, token: str, now: int, base: int, jitter: float) -> int:
        code = self._lock_code(job_id, token)
        job = self.jobs.get(job_id)
        if code:
            answer = self._landed(job_id, token)
            return int(answer) if answer is not None and answer.isdigit() else code
        if job is None:
            return -1
        if job_id not in self.active:
            return -3
        self._take_off_active(job_id)
        job.atm += 1
        d = base * 2 ** (job.atm - 1)
        job.delay = math.floor(d + d * jitter)
        self._record_finish(token, job_id, str(job.delay))
        self.delayed[job_id] = now + job.delay
        job.state = "delayed"
        self._emit("delayed", job_id, "delay", job.delay, "prev", "active")
        return job.delay

    def move_to_waiting_children(self, job_id: str, token: str, now: int, child_id: str) -> int:
        code = self._lock_code(job_id, token)
        if code:
            return 1 if self._landed(job_id, token) == "waiting-children" else code
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        if job.unsuccessful:
            return -9
        if not (child_id in job.pending if child_id else job.pending):
            return 0
        if job_id not in self.active:
            return -3
        self._take_off_active(job_id)
        self.waiting_children[job_id] = now
        job.state = "waiting-children"
        self._record_finish(token, job_id, "waiting-children")
        self._emit("waiting-children", job_id, "prev", "active")
        return 1

    def release_lock(self, job_id: str, token: str) -> int:
        """releaseLock-1: the lock and, when it names the job, the token's record go, as when
        the lock runs out."""
        if self._lock_code(job_id, token):
            return 0
        self.lose_lock(job_id)
        return 1

    def extend_locks(self, jobs: list[tuple[str, str]]) -> list[tuple[str, int]]:
        """extendLocks-1: each pair (job id, token) as extend_lock; the ones refused, with
        their codes."""
        refused = []
        for job_id, token in jobs:
            code = self.extend_lock(job_id, token)
            if code < 0:
                refused.append((job_id, code))
        return refused

    # -- one job's data -------------------------------------------------------------------

    def update_data(self, job_id: str, data: str) -> int:
        """updateData-1."""
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        job.data = data
        return 1

    def update_progress(self, job_id: str, progress: str) -> int:
        """updateProgress-3."""
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        job.progress = progress
        self._emit("progress", job_id, "data", progress)
        return 1

    def add_log(self, job_id: str, line: str, keep_logs: int) -> int:
        """addLog-2: the newest `keep_logs` lines kept when it is above 0."""
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        job.logs.append(line)
        if keep_logs > 0:
            job.logs = job.logs[-keep_logs:]
        return len(job.logs)

    def get_job_logs(self, job_id: str, start: int, count: int, asc: bool) -> tuple[int, list[str]]:
        """getJobLogs-1: newest first when not `asc`, the places counted from the newest."""
        job = self.jobs.get(job_id)
        lines = job.logs if job is not None else []
        ordered = lines if asc else lines[::-1]
        return len(lines), ordered[start : start + count]

    def save_stacktrace(self, job_id: str, stacktrace: str, failed_reason: str) -> int:
        """saveStacktrace-1."""
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        job.stacktrace, job.failed_reason = stacktrace, failed_reason
        return 1

    def is_finished(self, job_id: str, return_value: bool) -> int | tuple[int, str]:
        """isFinished-3."""
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        finished, value = 0, ""
        if job.state == "completed":
            finished, value = 1, job.returnvalue or ""
        elif job.state == "failed":
            finished, value = 2, job.failed_reason or ""
        return (finished, value) if return_value else finished

    def is_job_in_list(self, state: str, job_id: str) -> int:
        """isJobInList-1."""
        lists = {"wait": self.wait, "paused": self.paused_list, "active": self.active}
        return int(job_id in lists[state])

    # -- moving one job, or a batch, by hand -----------------------------------------------

    def _promote(self, job_id: str) -> None:
        """includes/promoteJob.lua: a delayed job moved as pickup moves a due one, its delay 0."""
        del self.delayed[job_id]
        state = self._enqueue_ready_job(job_id)
        self.jobs[job_id].delay = 0
        self._emit("paused" if state == "paused" else "waiting", job_id, "prev", "delayed")

    def promote(self, job_id: str) -> int:
        """promote-8."""
        if job_id not in self.jobs:
            return -1
        if job_id not in self.delayed:
            return -3
        self._promote(job_id)
        return 0

    def change_priority(self, job_id: str, priority: int, lifo: bool) -> int:
        """changePriority-6."""
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        job.priority = priority
        if job_id in self.prioritized:
            del self.prioritized[job_id]
        elif job_id in self.wait:
            self.wait.remove(job_id)
        elif job_id in self.paused_list:
            self.paused_list.remove(job_id)
        else:
            return 0
        if priority == 0:
            (self._push_next if lifo else self._push_ready)(job_id)
        elif lifo:
            self._push_prioritized_first(job_id, priority)
        else:
            self._push_prioritized(job_id, priority)
        return 0

    def change_delay(self, job_id: str, delay: int, now: int) -> int:
        """changeDelay-4."""
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        if job_id not in self.delayed:
            return -3
        job.delay = delay
        self.delayed[job_id] = now + delay
        self._emit("delayed", job_id, "delay", delay, "runAt", now + delay)
        return 0

    def _take_back(self, job_id: str, token: str, answers: tuple[str, ...]) -> int | str:
        """includes/takeActiveJob.lua, after a re-sent call's answer from the token's record
        (one of `answers`): 0 when the job left active, else the answer or the code."""
        code = self._lock_code(job_id, token)
        if code:
            went = self._landed(job_id, token)
            return went if went in answers else code
        if job_id not in self.jobs:
            return -1
        if job_id not in self.active:
            return -3
        self._take_off_active(job_id)
        return 0

    def retry_job(
        self, job_id: str, token: str, now: int, reason: str, stacktrace: str
    ) -> int | str:
        """retryJob-12."""
        taken = self._take_back(job_id, token, ("wait", "paused", "prioritized"))
        if taken != 0:
            return taken
        job = self.jobs[job_id]
        job.atm += 1
        job.failed_reason, job.stacktrace = reason, stacktrace
        self._promote_due(now)
        went = self._enqueue_ready_job(job_id, job.lifo)
        self._record_finish(token, job_id, went)
        self._emit("paused" if went == "paused" else "waiting", job_id, "prev", "active")
        return went

    def move_job_from_active_to_wait(self, job_id: str, token: str) -> int | str:
        """moveJobFromActiveToWait-11: "limited" stands for the limiter's time to live, which
        the server's clock sets."""
        taken = self._take_back(job_id, token, ("returned",))
        if isinstance(taken, int) and taken < 0:
            return taken
        if taken == 0:
            job = self.jobs[job_id]
            if job.priority > 0:
                went = self._push_prioritized_first(job_id, job.priority)
            else:
                went = self._push_next(job_id)
            self._record_finish(token, job_id, "returned")
            self._emit("paused" if went == "paused" else "waiting", job_id, "prev", "active")
        return "limited" if self.get_rate_limit_ttl(0) == -1 else 0

    def _reprocess(self, job_id: str, outcome: str, reset_attempts: bool) -> str:
        """includes/reprocessJob.lua."""
        job = self.jobs[job_id]
        del (self.completed if outcome == "completed" else self.failed)[job_id]
        job.finished_on = job.processed_on = None
        if outcome == "completed":
            job.returnvalue = None
        else:
            job.failed_reason = None
        if reset_attempts:
            job.atm = 0
        parent = self.jobs.get(job.parent) if job.parent is not None else None
        if parent is not None:
            if outcome == "completed":
                recorded = parent.processed.pop(job_id, None) is not None
            else:
                recorded = (
                    parent.unsuccessful.pop(job_id, None) is not None
                    or parent.ignored.pop(job_id, None) is not None
                )
            if recorded:
                parent.pending.add(job_id)
        state = self._enqueue_ready_job(job_id, job.lifo)
        self._emit("paused" if state == "paused" else "waiting", job_id, "prev", outcome)
        return state

    def reprocess_job(self, job_id: str, outcome: str, reset_attempts: bool) -> int | str:
        """reprocessJob-8."""
        if job_id not in self.jobs:
            return -1
        if job_id not in (self.completed if outcome == "completed" else self.failed):
            return -3
        return self._reprocess(job_id, outcome, reset_attempts)

    def move_jobs_to_wait(self, state: str, count: int, timestamp: int) -> int:
        """moveJobsToWait-8: the set's jobs scored at `timestamp` or before (a finish, a
        run-at), by score and then id, as ZRANGEBYSCORE gives them."""
        source = self._scored_of(state)
        due = sorted(
            (j for j in source if source[j] <= timestamp),
            key=lambda j: (source[j], j.encode()),
        )
        for job_id in due[:count]:
            if state == "delayed":
                self._promote(job_id)
            else:
                self._reprocess(job_id, state, False)
        return 1 if len(due) > count else 0

    # -- flows ----------------------------------------------------------------------------

    def get_dependency_counts(self, job_id: str) -> tuple[int, int, int, int] | int:
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        return len(job.processed), len(job.pending), len(job.ignored), len(job.unsuccessful)

    def get_dependencies(self, job_id: str, count: int) -> DependenciesRead | int:
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        failed = sorted(job.unsuccessful, key=lambda c: (job.unsuccessful[c], self.job_key(c)))
        records = (
            {self.job_key(c): v for c, v in job.processed.items()},
            sorted(self.job_key(c) for c in job.pending),
            {self.job_key(c): v for c, v in job.ignored.items()},
            [self.job_key(c) for c in failed],
        )
        return DependenciesRead(
            records,
            (
                len(job.processed) > count,
                len(job.pending) > count,
                len(job.ignored) > count,
                len(job.unsuccessful) > count,
            ),
        )

    def remove_child_dependency(self, job_id: str) -> int:
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        if job.parent is None:
            return 0
        parent = self.jobs.get(job.parent)
        if parent is None:
            return -5
        if job_id in parent.pending:
            parent.pending.discard(job_id)
        elif job_id in parent.unsuccessful:
            del parent.unsuccessful[job_id]
        else:
            return 0
        job.parent = None
        self._release(parent.id, when_done=True)
        return 1

    def remove_unprocessed_children(self, job_id: str, limit: int) -> tuple[int, list[str]] | int:
        """removeUnprocessedChildren-10."""
        if job_id not in self.jobs:
            return -1

        def verdict(child_id: str) -> str | int:
            return "keep" if self.jobs[child_id].lock is not None else "take"

        walked = self._tree_batch(job_id, ("pending",), limit, False, verdict)
        assert not isinstance(walked, int)
        batch, over, moved = walked
        for child_id in batch:
            child = self.jobs[child_id]
            self._remove_from_state(child_id)
            self._release_dedup(child)
            del self.jobs[child_id]
            self._emit("removed", child_id, "prev", child.state)
        if over or not (batch or moved):
            self._release(job_id, when_done=True)
            return 0, batch
        return 1, batch

    def _tree_batch(
        self,
        top_id: str,
        parts: tuple[str, ...],
        limit: int,
        take_top: bool,
        verdict: Callable[[str], str | int],
    ) -> tuple[list[str], bool, bool] | int:
        """includes/treeBatch.lua: one call's share of a removal from the bottom up. `parts` are
        the Job's records the walk follows ("pending", "processed", "ignored", "unsuccessful").
        Returns the jobs taken (each after its children), whether the walk is over, and whether
        a child was moved under the top; or the code a verdict ended the call with."""

        def children(node_id: str, room: int) -> tuple[list[str], bool]:
            node = self.jobs[node_id]
            kids: list[str] = []
            for part in parts:
                record: Any = getattr(node, part)
                # A record of more than 32 entries would be sampled: the model's trees stay small.
                assert len(record) <= max(room, 32), (node_id, part, len(record))
                for kid in sorted(record):
                    found = self.jobs.get(kid)
                    if found is not None and found.parent == node_id:
                        kids.append(kid)
                    elif isinstance(record, set):
                        record.discard(kid)  # a record of a gone child is dropped as met
                    else:
                        del record[kid]
            kids.sort(key=lambda c: self.job_key(c).encode())
            return kids[:room], len(kids) <= room

        @dataclass
        class Frame:
            id: str
            kids: list[str] | None = None
            whole: bool = True
            keep: bool = False
            at: int = 0
            done: bool = True

        top = Frame(top_id)
        frames, batch = [top], list[str]()
        visits, stuck, over = 0, None, False
        while frames:
            frame = frames[-1]
            if frame.kids is None:
                visits += 1
                ruling = "take" if frame is top else verdict(frame.id)
                if isinstance(ruling, int):
                    return ruling
                frame.keep = ruling == "keep"
                frame.kids = []
                if not frame.keep:
                    frame.kids, frame.whole = children(frame.id, limit + 1 - visits)
            if frame.at < len(frame.kids) and visits <= limit:
                frames.append(Frame(frame.kids[frame.at]))
                frame.at += 1
                continue
            frames.pop()
            complete = frame.done and frame.whole and frame.at == len(frame.kids)
            if not complete and stuck is None and frame is not top:
                stuck = frame
            if complete and not frame.keep and (frame is not top or take_top):
                if len(batch) < limit:
                    batch.append(frame.id)
                else:
                    complete = False
            if frame is top:
                over = complete
            elif not complete:
                frames[-1].done = False
        # includes/treeBatch.lua takes each job it takes below the top out of its parent's
        # record itself; the parent goes later, or in a later call.
        for taken in batch:
            if taken != top_id:
                above = self.jobs[self.jobs[taken].parent or ""]
                for part in parts:
                    record = getattr(above, part)
                    if isinstance(record, set):
                        record.discard(taken)
                    else:
                        record.pop(taken, None)
        if batch or stuck is None:
            return batch, over, False
        assert stuck.kids is not None
        if stuck.at < len(stuck.kids):
            moving: str | None = stuck.kids[stuck.at]
        else:
            moving = next(iter(children(stuck.id, 1)[0]), None)
        if moving is not None:  # under the top, with its entry's value
            for part in parts:
                record = getattr(self.jobs[stuck.id], part)
                if moving in record:
                    to = getattr(self.jobs[top_id], part)
                    if isinstance(record, set):
                        record.discard(moving)
                        to.add(moving)
                    else:
                        to[moving] = record.pop(moving)
            self.jobs[moving].parent = top_id
        return batch, over, True

    def _remove_from_state(self, job_id: str) -> None:
        for listed in (self.wait, self.paused_list, self.active):
            while job_id in listed:
                listed.remove(job_id)
        # A pending child has not finished: the script does not look in completed or failed.
        assert self.jobs[job_id].state not in ("completed", "failed"), job_id
        for scored in (self.delayed, self.prioritized, self.waiting_children):
            scored.pop(job_id, None)
        self.stalled.discard(job_id)

    # -- removing -------------------------------------------------------------------------

    def remove_job(self, job_id: str, children: bool, limit: int) -> int:
        """removeJob-13."""
        job = self.jobs.get(job_id)
        if job is None:
            return -1

        def refused(found: Job) -> int | None:
            owner = self.schedulers.get(found.scheduler or "")
            if (
                owner is not None
                and iteration_id(found.scheduler or "", owner.next) == found.id
                and found.state not in ("completed", "failed")
            ):
                return -8
            return 0 if found.lock is not None else None

        code = refused(job)
        if code is not None:
            return code
        parts = ("pending", "processed", "ignored", "unsuccessful") if children else ()

        def verdict(at: str) -> str | int:
            code = refused(self.jobs[at])
            return "take" if code is None else code

        walked = self._tree_batch(job_id, parts, limit, True, verdict)
        if isinstance(walked, int):
            return walked
        for at in walked[0]:
            gone = self.jobs.pop(at)
            prev = "unknown"
            for listed in (self.wait, self.paused_list, self.active):
                if at in listed:
                    prev = gone.state
                    while at in listed:
                        listed.remove(at)
            for scored in (
                self.delayed,
                self.prioritized,
                self.completed,
                self.failed,
                self.waiting_children,
            ):
                if scored.pop(at, None) is not None:
                    prev = gone.state
            self.stalled.discard(at)
            self._release_dedup(gone)
            self._emit("removed", at, "prev", prev)
            if at == job_id:
                self._leave_parent(job)
                return 1
        return 2

    def remove_deduplication_key(self, dedup_id: str, job_id: str) -> int:
        """removeDeduplicationKey-2."""
        if self.dedup.get(dedup_id) != job_id:
            return 0
        del self.dedup[dedup_id]
        self.dedup_ttl.discard(dedup_id)
        self.dedup_next.pop(dedup_id, None)
        return 1

    # -- job schedulers -------------------------------------------------------------------

    def _add_iteration(self, scheduler_id: str, scheduler: Scheduler, run_at: int, now: int) -> str:
        """includes/addSchedulerJob.lua."""
        settings = scheduler.settings
        job_id = iteration_id(scheduler_id, run_at)
        opts: dict[str, Any] = json.loads(settings["opts"])
        job = Job(
            job_id, settings["name"], opts, now, scheduler=scheduler_id, data=settings["data"]
        )
        self.jobs[job_id] = job
        delay = max(run_at - now, 0)
        job.delay = delay or None
        job.priority = int(settings["priority"])
        self._enqueue_new_job(job_id, delay, run_at if delay > 0 else None)
        return job_id

    def _pending_iteration(self, scheduler_id: str, job_id: str) -> str | None:
        """includes/pendingIteration.lua: the state of the scheduler's iteration not run yet."""
        job = self.jobs.get(job_id)
        if job is None or job.scheduler != scheduler_id or job.processed_on is not None:
            return None
        if job_id in self.delayed:
            return "delayed"
        if job_id in self.prioritized:
            return "prioritized"
        if job_id in self.wait:
            return "wait"
        if job_id in self.paused_list:
            return "paused"
        return None

    def _drop_iteration(self, job_id: str, state: str) -> None:
        for listed in (self.wait, self.paused_list):
            while job_id in listed:
                listed.remove(job_id)
        self.delayed.pop(job_id, None)
        self.prioritized.pop(job_id, None)
        del self.jobs[job_id]  # an iteration has no parent: it joins no flow
        self._emit("removed", job_id, "prev", state)

    def _leave_parent(self, job: Job) -> None:
        """includes/leaveParent.lua."""
        parent = self.jobs.get(job.parent) if job.parent is not None else None
        if parent is not None and (job.id in parent.pending or job.id in parent.unsuccessful):
            parent.pending.discard(job.id)
            parent.unsuccessful.pop(job.id, None)
            self._release(parent.id, when_done=True)

    def add_job_scheduler(
        self,
        scheduler_id: str,
        now: int,
        settings: dict[str, str],
        next_millis: int,
        offset: int,
    ) -> tuple[str, int] | int:
        """addJobScheduler-10: `settings` as the script stores them (every field a string)."""
        every, limit = int(settings["every"]), int(settings["limit"])
        start, end = int(settings["startDate"]), int(settings["endDate"])
        stored = self.schedulers.get(scheduler_id)
        current_id, pending = None, None
        if stored is not None:
            current_id = iteration_id(scheduler_id, stored.next)
            same = stored_settings(stored.settings) == stored_settings(settings)
            same = same and offset in (0, stored.offset)
            current = self.jobs.get(current_id)
            live = (
                current is not None
                and current.scheduler == scheduler_id
                and current.state not in ("completed", "failed")
            )
            if same and live:
                return current_id, stored.next
            pending = self._pending_iteration(scheduler_id, current_id)
        run_at = next_millis
        if every > 0:
            if (
                stored is not None
                and int(stored.setting("every")) == every
                and int(stored.setting("startDate")) == start
                and offset in (0, stored.offset)
            ):
                offset = stored.offset
                if pending:
                    run_at = stored.next
                else:
                    run_at, _ = every_next_run(stored.next, every, now, offset, 0)
            else:
                run_at, offset = every_next_run(None, every, now, offset, start)
        iterations = stored.iterations if stored is not None else 0
        if pending:
            iterations -= 1
        ended = (limit > 0 and iterations >= limit) or (end > 0 and run_at > end)

        scanned = 0
        while not ended:
            found = iteration_id(scheduler_id, run_at)
            if (pending and found == current_id) or found not in self.jobs:
                break
            if every == 0:
                return -10
            if scanned == 32:
                return -11
            run_at, scanned = run_at + every, scanned + 1
            ended = end > 0 and run_at > end
        if pending and current_id is not None:
            self._drop_iteration(current_id, pending)
        scheduler = Scheduler(dict(settings), offset, iterations, run_at)
        job_id = ""
        if not ended:
            job_id = self._add_iteration(scheduler_id, scheduler, run_at, now)
            scheduler.iterations += 1
        elif stored is not None:
            scheduler.next = stored.next
        self.schedulers[scheduler_id] = scheduler
        return job_id, scheduler.next

    def update_job_scheduler(
        self, scheduler_id: str, job_id: str, now: int, next_millis: int
    ) -> str:
        """updateJobScheduler-10."""
        scheduler = self.schedulers.get(scheduler_id)
        if scheduler is None or iteration_id(scheduler_id, scheduler.next) != job_id:
            return ""
        job = self.jobs.get(job_id)
        if job is None or job.scheduler != scheduler_id:
            return ""
        if self._pending_iteration(scheduler_id, job_id):
            return ""
        every = int(scheduler.setting("every"))
        limit, end = int(scheduler.setting("limit")), int(scheduler.setting("endDate"))
        run_at = next_millis
        if every > 0:
            run_at, _ = every_next_run(scheduler.next, every, now, scheduler.offset, 0)
        if (limit > 0 and scheduler.iterations >= limit) or (end > 0 and run_at > end):
            return ""
        next_id = iteration_id(scheduler_id, run_at)
        if next_id in self.jobs:
            self._emit("duplicated", next_id)
            return ""
        self._add_iteration(scheduler_id, scheduler, run_at, now)
        scheduler.iterations += 1
        scheduler.next = run_at
        return next_id

    def remove_job_scheduler(self, scheduler_id: str) -> int:
        """removeJobScheduler-8."""
        scheduler = self.schedulers.pop(scheduler_id, None)
        if scheduler is None:
            return 0
        job_id = iteration_id(scheduler_id, scheduler.next)
        pending = self._pending_iteration(scheduler_id, job_id)
        if pending:
            self._drop_iteration(job_id, pending)
        return 1

    def get_job_scheduler(self, scheduler_id: str) -> dict[str, str]:
        """getJobScheduler-2."""
        scheduler = self.schedulers.get(scheduler_id)
        if scheduler is None:
            return {}
        return {**scheduler.fields(), "id": scheduler_id, "next": str(scheduler.next)}

    # -- queue-wide scripts ---------------------------------------------------------------

    def move_stalled_jobs_to_wait(
        self, max_stalled: int, now: int, order: list[str]
    ) -> tuple[list[str], list[str]]:
        """The stalled check. Redis walks the stalled set in its own order: `order` is the
        order the script reported (recovered and failed ids together), which the model checks
        against the set it expects, and then follows."""
        stalled = [j for j in order if j in self.stalled]
        expected = {j for j in self.stalled if self.jobs[j].lock is None and j in self.active}
        assert set(stalled) == expected, f"stalled jobs {sorted(order)} != {sorted(expected)}"
        recovered, failed = [], []
        for job_id in stalled:
            job = self.jobs[job_id]
            self.active.remove(job_id)
            job.stc += 1
            if job.stc > max_stalled:
                job.failed_reason, job.finished_on = "job stalled more than allowable limit", now
                self.failed[job_id] = now
                job.state = "failed"
                self.metrics["failed"].count_finished(0, now)
                self._emit("failed", job_id, "prev", "active", "reason", "stalled")
                self._finish_dedup(job, now)
                failed.append(job_id)
                self._retention(self.failed, job_id, job.opts.get("removeOnFail"), now)
                self._child_failed(job_id, job.parent, job.opts, job.failed_reason, now)
            else:
                if self.paused:
                    self.paused_list.append(job_id)
                    job.state = "paused"
                else:
                    self.wait.append(job_id)
                    job.state = "wait"
                self._emit("stalled", job_id)
                recovered.append(job_id)
        self.stalled = set(self.active)
        return recovered, failed

    def pause(self, action: str) -> int:
        pausing = action == "pause"
        if self.paused == pausing:
            return 0
        if pausing:
            self.paused_list = self.wait + self.paused_list
            self.wait = []
            for job_id in self.paused_list:
                self.jobs[job_id].state = "paused"
        else:
            self.wait = self.paused_list + self.wait
            self.paused_list = []
            for job_id in self.wait:
                self.jobs[job_id].state = "wait"
        self.paused = pausing
        self.marker_taken = False
        self._emit("paused" if pausing else "resumed", "")
        return 1

    # -- the walks over a whole state or queue ---------------------------------------------

    def _list_of(self, state: str) -> list[str]:
        return {"wait": self.wait, "paused": self.paused_list, "active": self.active}[state]

    def _scored_of(self, state: str) -> dict[str, Any]:
        scored: dict[str, dict[str, Any]] = {
            "delayed": self.delayed,
            "prioritized": self.prioritized,
            "completed": self.completed,
            "failed": self.failed,
            "waiting-children": self.waiting_children,
        }
        return scored[state]

    def _by_rank(self, state: str) -> list[str]:
        """A sorted set's members in Redis's order: by score, then by the member's bytes."""
        if state == "prioritized":
            return self.prioritized_order()
        scored = self._scored_of(state)
        return sorted(scored, key=lambda j: (scored[j], j.encode()))

    def _scheduler_iteration(self, job: Job) -> bool:
        """includes/schedulerIteration.lua."""
        owner = self.schedulers.get(job.scheduler or "")
        return owner is not None and iteration_id(job.scheduler or "", owner.next) == job.id

    def _old_enough(self, job: Job, state: str, cutoff: int) -> bool:
        """cleanJobsInSet-5's test of a job read from a list or by rank."""
        if self._scheduler_iteration(job) or (state == "active" and job.lock is not None):
            return False
        times = {
            "delayed": (job.processed_on, job.timestamp),
            "prioritized": (job.timestamp,),
        }.get(state, (job.finished_on, job.processed_on, job.timestamp))
        first = next((t for t in times if t is not None), None)
        return first is None or first <= cutoff

    def clean_jobs_in_set(
        self, state: str, now: int, grace: int, limit: int, cursor: int
    ) -> tuple[int, list[str]]:
        """cleanJobsInSet-5."""
        cutoff = now - grace
        place = cursor - 1 if cursor > 0 else 0
        if state in ("completed", "failed", "waiting-children"):
            scored = self._scored_of(state)
            in_range = [j for j in self._by_rank(state) if scored[j] <= cutoff]
            window = in_range[place : place + limit]
            removed = list(window)
            more = place + len(window) < len(in_range)
        elif state in ("wait", "paused", "active"):
            listed = self._list_of(state)
            end = max(len(listed) - place, 0)
            window = listed[max(end - limit, 0) : end]
            more = place + len(window) < len(listed)
            removed = [j for j in reversed(window) if self._old_enough(self.jobs[j], state, cutoff)]
        else:
            ranked = self._by_rank(state)
            window = ranked[place : place + limit]
            more = place + len(window) < len(ranked)
            removed = [j for j in window if self._old_enough(self.jobs[j], state, cutoff)]
        gone = [self._erase(job_id, state) for job_id in removed]
        for job in gone:
            self._emit("removed", job.id, "prev", state)
        for job in gone:
            self._leave_parent(job)
        self._emit("cleaned", "", "count", len(removed))
        return (place + len(window) - len(removed) + 1 if more else 0), removed

    def obliterate(self, count: int, force: bool) -> int:
        """obliterate-20."""
        if not self.paused:
            return 2
        if self.active and not force:
            return 3
        budget = count
        for state in keys.STATES:
            if state in ("wait", "paused", "active"):
                taken = self._list_of(state)[:budget]
            else:
                taken = self._by_rank(state)[:budget]
            for job_id in taken:
                self._erase(job_id, state)
            budget -= len(taken)
        by_next = sorted(self.schedulers, key=lambda s: (self.schedulers[s].next, s.encode()))
        for scheduler_id in by_next[:budget]:
            del self.schedulers[scheduler_id]
        if self.jobs or self.schedulers:
            return 1
        self.events, self.paused, self.limiter, self.id_counter, self.pc = [], False, 0, 0, 0
        self.metrics = {"completed": Metrics(), "failed": Metrics()}
        # The queue's own limits were in its meta hash; the marker went too.
        self.queue_concurrency = self.queue_max = self.queue_duration = 0
        self.marker_taken = False
        return 0

    def drain(self, delayed: bool, count: int) -> int:
        """drain-5."""
        budget, removed = count, 0
        states = ["wait", "paused", *(["delayed"] if delayed else []), "prioritized"]
        while True:
            drained = 0
            for state in states:
                listed = self._list_of(state) if state in ("wait", "paused") else None
                ordered = list(listed) if listed is not None else self._by_rank(state)
                taken = [j for j in ordered if not self._scheduler_iteration(self.jobs[j])]
                gone = [self._erase(j, state) for j in taken[:budget]]
                for job in gone:
                    self._leave_parent(job)
                budget -= len(gone)
                drained += len(gone)
            removed += drained
            if drained == 0 or budget == 0:
                return removed

    def get_ranges(self, start: int, end: int, asc: bool, states: Sequence[str]) -> list[list[str]]:
        """getRanges-8."""
        ranges = []
        for state in states:
            if state in ("wait", "paused", "active"):
                ordered = list(reversed(self._list_of(state)))  # the tail, taken first, first
            else:
                ordered = self._by_rank(state)
            ordered = ordered if asc else ordered[::-1]
            ranges.append(ordered[start : None if end == -1 else end + 1])
        return ranges

    def get_counts_per_priority(self, priorities: list[int]) -> list[int]:
        """getCountsPerPriority-3."""
        return [
            len(self.wait) + len(self.paused_list)
            if p == 0
            else sum(1 for priority, _ in self.prioritized.values() if priority == p)
            for p in priorities
        ]

    def orphan(self, job_id: str) -> None:
        """A crash left the job's hash with no state holding its id: only removeOrphanedJobs-8
        finds it, and removes it with its data (includes/eraseJob.lua)."""
        self._erase(job_id, self.jobs[job_id].state)

    def record(self, job_id: str, part: str) -> dict[str, str]:
        """What paginate-1's pages of a parent's record add up to, as pairs: a pending child's
        key to "" (a set has members only), a child's key to its value, reason or failure time.
        A job that is gone has no records."""
        job = self.jobs.get(job_id)
        if job is None:
            return {}
        records: dict[str, Mapping[str, object]] = {
            "dependencies": dict.fromkeys(job.pending, ""),
            "processed": job.processed,
            "failed": job.ignored,
            "unsuccessful": job.unsuccessful,
        }
        return {self.job_key(c): str(v) for c, v in records[part].items()}

    def _erase(self, job_id: str, state: str) -> Job:
        """A job a walk takes out of `state`, with its data (includes/eraseJob.lua)."""
        if state in ("wait", "paused", "active"):
            self._list_of(state).remove(job_id)
        else:
            del self._scored_of(state)[job_id]
        self.stalled.discard(job_id)
        job = self.jobs.pop(job_id)
        self._release_dedup(job)
        return job

    # -- what a test does by hand ---------------------------------------------------------

    def lose_lock(self, job_id: str) -> None:
        """The lock expired: its token's record, set with it and for as long, goes too."""
        job = self.jobs[job_id]
        token = job.lock
        job.lock = None
        if token is not None and self.tokens.get(token, ("",))[0] == job_id:
            del self.tokens[token]
