"""Adding a flow: a parent and its children, to any depth, with one call of addFlow-10.

A flow lives in one queue. Its jobs' keys share the queue's hash tag, so one script reaches them
all on one Redis Cluster slot, and a child names its parent by its place in the tree; a node that
names another queue than its parent's is refused here, before anything is sent. The script checks
the whole flow before it writes any of it, so a failure code (-5, -7) or a refused argument adds
nothing. A node's arguments are checked here as the generated wrappers check theirs, so a bad one
sends nothing.

A node with children goes to waiting-children; a leaf to delayed when it has a delay, else to
prioritized when it has a priority, else to wait. `parent_id` makes the root a child of a job that
exists: how a single job is added below a parent, and how an active job adds the children it then
waits for (moveToWaitingChildren-7).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from . import generated as g
from .runtime import ArgumentError, arguments
from .runtime.clients import AsyncClient, SyncClient

_SCRIPT = "addFlow-10"
_MAX_PRIORITY = 2097151


@dataclass(frozen=True)
class FlowJob:
    """One node of a flow: a job and the children it waits for."""

    name: str
    queue: str
    data: str = "{}"
    opts: Mapping[str, object] = field(default_factory=dict)
    job_id: str = ""  # a custom id, or "" for one the server numbers, as any add
    delay: int = 0  # a leaf's delay, in ms
    priority: int = 0  # a leaf's priority, or a parent's once its children are done
    dedup_id: str = ""
    children: Sequence[FlowJob] = ()


@dataclass(frozen=True)
class FlowIds:
    """The ids a flow's jobs got, in the shape of the flow.

    `added` is 0 for a job that existed or was deduplicated; `job_id` is "" for a node below a
    deduplicated one, which was not added either."""

    job_id: str
    added: int
    children: tuple[FlowIds, ...]


def add_flow(client: SyncClient, flow: FlowJob, *, now: int, parent_id: str = "") -> FlowIds:
    """Add `flow` with one addFlow-10 on `client` (a redis.Redis or a RedisCluster); with
    `parent_id`, its root becomes a child of that existing job of the flow's queue."""
    replies = g.add_flow(client, queue=flow.queue, now=now, parent_id=parent_id, node=_nodes(flow))
    return _ids(flow, iter(replies))


async def add_flow_async(
    client: AsyncClient, flow: FlowJob, *, now: int, parent_id: str = ""
) -> FlowIds:
    """`add_flow` on a redis.asyncio client (a Redis or a RedisCluster)."""
    replies = await g.add_flow_async(
        client, queue=flow.queue, now=now, parent_id=parent_id, node=_nodes(flow)
    )
    return _ids(flow, iter(replies))


def _nodes(flow: FlowJob) -> list[bytes]:
    """addFlow-10's node values: the tree in pre-order, 8 values a node."""
    return [value for node in _preorder(flow, flow.queue) for value in _encoded(node)]


def _preorder(node: FlowJob, queue: str) -> Iterator[FlowJob]:
    if node.queue != queue:
        raise ArgumentError(
            f"job {node.name!r} is in queue {node.queue!r} but its parent is in {queue!r}: a "
            "flow lives in one queue, whose keys share one hash tag"
        )
    if node.children and node.delay:
        raise ArgumentError(
            f"{_SCRIPT}: job {node.name!r} has children and a delay: a parent runs when its "
            "children are done"
        )
    yield node
    for child in node.children:
        yield from _preorder(child, queue)


def _encoded(node: FlowJob) -> tuple[bytes, ...]:
    """A node's 8 values, checked as addFlow-10 checks them."""
    return (
        arguments.id_arg(_SCRIPT, "job_id", node.job_id, optional=True),
        arguments.string_arg(_SCRIPT, "name", node.name),
        arguments.string_arg(_SCRIPT, "data", node.data),
        arguments.json_arg(_SCRIPT, "opts", node.opts, form="object"),
        arguments.string_arg(_SCRIPT, "dedup_id", node.dedup_id),
        arguments.int_arg(_SCRIPT, "delay", node.delay, low=0),
        arguments.int_arg(_SCRIPT, "priority", node.priority, low=0, high=_MAX_PRIORITY),
        str(len(node.children)).encode(),
    )


def _ids(node: FlowJob, replies: Iterator[tuple[str, int]]) -> FlowIds:
    job_id, added = next(replies)
    return FlowIds(job_id, added, tuple(_ids(child, replies) for child in node.children))
