"""Adding a flow: a parent and its children, to any depth, in one MULTI/EXEC of the add scripts.

A flow lives in one queue. Its jobs' keys share the queue's hash tag, so one MULTI reaches them
all on one Redis Cluster slot, and a child names its parent by id alone (`parent_id`); a node that
names another queue than its parent's is refused here, before anything is sent. The parent goes
first, then its children: a node with children is added by addParentJob-4 (to waiting-children),
a leaf by the add script its options pick (delayed, prioritized, else standard). Each node that
has children needs its id before the MULTI runs, as its children send it; one without a custom
id gets a random one (uuid4, hex). A leaf without one is numbered by the server, as any add.

The generated wrappers check every argument of every node before the first is queued, so a bad
one sends nothing; a failure code inside the MULTI (-7 for a custom id that another parent holds)
is raised after it, with the jobs before it added.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from . import generated as g
from .runtime import ArgumentError, Pending, execute
from .runtime.clients import SyncClient, SyncPipeline


@dataclass(frozen=True)
class FlowJob:
    """One node of a flow: a job and the children it waits for."""

    name: str
    queue: str
    data: str = "{}"
    opts: Mapping[str, object] = field(default_factory=dict)
    job_id: str = ""  # a custom id, or "" for one chosen as the module says
    delay: int = 0  # a leaf's delay, in ms
    priority: int = 0  # a leaf's priority, or a parent's once its children are done
    dedup_id: str = ""
    children: Sequence[FlowJob] = ()


@dataclass(frozen=True)
class FlowIds:
    """The ids a flow's jobs got, in the shape of the flow: `added` is 0 for a job that existed."""

    job_id: str
    added: int
    children: tuple[FlowIds, ...]


def add_flow(client: SyncClient, flow: FlowJob, *, now: int) -> FlowIds:
    """Add `flow` in one MULTI/EXEC on `client` (a redis.Redis or a RedisCluster)."""
    pipe: SyncPipeline = client.pipeline(transaction=True)
    queued = _queue_node(pipe, flow, "", flow.queue, now)
    replies = execute(pipe, raise_on_error=False)
    return _ids(queued, replies)


_Queued = tuple[Pending[tuple[str, int]], list["_Queued"]]


class _AddArguments(TypedDict):
    """What every add wrapper takes besides its own arguments."""

    queue: str
    name: str
    data: str
    opts: Mapping[str, object]
    now: int
    dedup_id: str
    parent_id: str


def _queue_node(pipe: SyncPipeline, node: FlowJob, parent_id: str, queue: str, now: int) -> _Queued:
    if node.queue != queue:
        raise ArgumentError(
            f"job {node.name!r} is in queue {node.queue!r} but its parent is in {queue!r}: a "
            "flow lives in one queue, whose keys share one hash tag"
        )
    common: _AddArguments = {
        "queue": queue,
        "name": node.name,
        "data": node.data,
        "opts": node.opts,
        "now": now,
        "dedup_id": node.dedup_id,
        "parent_id": parent_id,
    }
    if node.children:
        job_id = node.job_id or uuid.uuid4().hex
        pending = g.add_parent_job_pipeline(pipe, job_id=job_id, priority=node.priority, **common)
        # Each wrapper checks its arguments as it queues its call: a bad child is refused
        # before the MULTI is sent.
        return pending, [_queue_node(pipe, child, job_id, queue, now) for child in node.children]
    if node.delay:
        return g.add_delayed_job_pipeline(pipe, job_id=node.job_id, delay=node.delay, **common), []
    if node.priority:
        return g.add_prioritized_job_pipeline(
            pipe, job_id=node.job_id, priority=node.priority, **common
        ), []
    return g.add_standard_job_pipeline(pipe, job_id=node.job_id, **common), []


def _ids(queued: _Queued, replies: Sequence[object]) -> FlowIds:
    pending, children = queued
    job_id, added = pending.result(replies)
    return FlowIds(job_id, added, tuple(_ids(child, replies) for child in children))
