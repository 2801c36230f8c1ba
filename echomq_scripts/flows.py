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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from . import generated as g
from .runtime import ArgumentError, arguments
from .runtime.clients import AsyncClient, SyncClient

_SCRIPT = "addFlow-10"
MAX_PRIORITY = 2097151  # a priority's highest value, as the add scripts' headers say
_MAX_RUN_AT = 2**53 - 1  # the largest integer a Lua number and a sorted set's score hold exactly


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


def flow_values(flow: FlowJob, now: int) -> list[bytes]:
    """addFlow-10's `node` values for `flow`, checked as the script checks them."""
    return _node_values(_preorder(flow), now)


def add_flow(client: SyncClient, flow: FlowJob, *, now: int, parent_id: str = "") -> FlowIds:
    """Add `flow` with one addFlow-10 on `client` (a redis.Redis or a RedisCluster); with
    `parent_id`, its root becomes a child of that existing job of the flow's queue."""
    nodes = _preorder(flow)
    values = _node_values(nodes, now)
    replies = g.add_flow(client, queue=flow.queue, now=now, parent_id=parent_id, node=values)
    return _ids(nodes, replies)


async def add_flow_async(
    client: AsyncClient, flow: FlowJob, *, now: int, parent_id: str = ""
) -> FlowIds:
    """`add_flow` on a redis.asyncio client (a Redis or a RedisCluster)."""
    nodes = _preorder(flow)
    values = _node_values(nodes, now)
    replies = await g.add_flow_async(
        client, queue=flow.queue, now=now, parent_id=parent_id, node=values
    )
    return _ids(nodes, replies)


# A node in pre-order, with the index of the node above it (None for the root).
_Placed = tuple[FlowJob, int | None]


def _preorder(root: FlowJob) -> list[_Placed]:
    """The flow's nodes in the order addFlow-10 takes them, refusing a node in another queue or a
    parent with a delay. A loop, not a recursion: a flow may be deeper than Python's stack."""
    nodes: list[_Placed] = []
    stack: list[_Placed] = [(root, None)]
    while stack:
        node, above = stack.pop()
        if node.queue != root.queue:
            raise ArgumentError(
                f"job {node.name!r} is in queue {node.queue!r} but its parent is in "
                f"{root.queue!r}: a flow lives in one queue, whose keys share one hash tag"
            )
        if node.children and node.delay:
            raise ArgumentError(
                f"{_SCRIPT}: job {node.name!r} has children and a delay: a parent runs when its "
                "children are done"
            )
        index = len(nodes)
        nodes.append((node, above))
        stack.extend((child, index) for child in reversed(node.children))
    return nodes


def _node_values(nodes: Sequence[_Placed], now: int) -> list[bytes]:
    """addFlow-10's node values, 8 a node, each checked as the script checks it."""
    arguments.int_arg(_SCRIPT, "now", now, low=0)
    values: list[bytes] = []
    for node, _ in nodes:
        delay = arguments.int_arg(_SCRIPT, "delay", node.delay, low=0)
        if node.delay and now + node.delay > _MAX_RUN_AT:
            raise ArgumentError(
                f"{_SCRIPT}: job {node.name!r} would be due after 2^53 - 1 ms (now {now} + delay "
                f"{node.delay}), past what a sorted set's score holds exactly"
            )
        values += (
            arguments.id_arg(_SCRIPT, "job_id", node.job_id, optional=True),
            arguments.string_arg(_SCRIPT, "name", node.name),
            arguments.string_arg(_SCRIPT, "data", node.data),
            arguments.json_arg(_SCRIPT, "opts", node.opts, form="object"),
            arguments.string_arg(_SCRIPT, "dedup_id", node.dedup_id),
            delay,
            arguments.int_arg(_SCRIPT, "priority", node.priority, low=0, high=MAX_PRIORITY),
            str(len(node.children)).encode(),
        )
    return values


def _ids(nodes: Sequence[_Placed], replies: Sequence[tuple[str, int]]) -> FlowIds:
    """The replies, one a node in pre-order, in the shape of the flow: built from the last node
    back, as a node's children all come after it."""
    children: list[list[FlowIds]] = [[] for _ in nodes]
    built: dict[int, FlowIds] = {}
    for index in reversed(range(len(nodes))):
        job_id, added = replies[index]
        built[index] = FlowIds(job_id, added, tuple(reversed(children[index])))
        above = nodes[index][1]
        if above is not None:
            children[above].append(built[index])
    return built[0]  # the root
