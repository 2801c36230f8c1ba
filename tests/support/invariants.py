"""The protocol's one-state invariant, and helpers that add jobs with defaults.

A job is always in exactly one of the eight state keys of its queue (`emq:{q}:wait`, ...,
`emq:{q}:waiting-children`), exactly once, and every id held by those keys has a job hash
`emq:{q}:<id>`. `assert_one_state` checks both directions and answers each job's state, so a
test can compare it with what the scripts say. The add helpers run the generated wrappers with
defaults for what a test does not care about, and check the invariant after every add.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, TypedDict, Unpack

import redis
import redis.cluster

from echomq_scripts import flows
from echomq_scripts import generated as g
from echomq_scripts.flows import FlowIds, FlowJob
from echomq_scripts.runtime import keys

# The suites run on one server and on a cluster alike.
Client = redis.Redis | redis.cluster.RedisCluster

NOW = 1_700_000_000_000
"""The tests' clock, in milliseconds: the scripts take time from their arguments only."""

STATES = keys.STATES
"""The eight states, in the order getCounts-8 answers them."""
LIST_STATES = STATES[:3]
ZSET_STATES = STATES[3:]

# The queue's own keys under emq:{q}: none of them is a job hash.
QUEUE_KEYS = keys.RESERVED_IDS
HOSTILE_IDS = [*sorted(keys.RESERVED_IDS), "7:lock", "7:dependencies", "a{b", "x}"]
"""Ids that could name another key of a queue: the scripts and the wrappers refuse them all."""
QUEUE_KEY_PREFIXES = ("metrics:", "de:")
prefix = keys.prefix


def key(queue: str, name: str) -> str:
    """One of the queue's keys (`key("q", "wait")`) or a job's (`key("q", "7:lock")`)."""
    return prefix(queue) + name


def text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def job_ids(r: redis.Redis, queue: str, names: list[bytes | str]) -> set[str]:
    """The ids of every job hash among `names`, the queue's key names: each `emq:{q}:<id>` that
    is not a queue key nor a job's companion key (`:lock`, `:dependencies`, `:processed`)."""
    start = prefix(queue)
    candidates = []
    for raw in names:
        rest = text(raw)[len(start) :]
        if rest in QUEUE_KEYS or rest.startswith(QUEUE_KEY_PREFIXES) or ":" in rest:
            continue
        candidates.append(rest)
    if not candidates:
        return set()
    pipe = r.pipeline(transaction=False)
    for job_id in candidates:
        pipe.type(key(queue, job_id))
    types = [text(t) for t in pipe.execute()]
    wrong = {i: t for i, t in zip(candidates, types, strict=True) if t != "hash"}
    assert not wrong, f"job keys that are not hashes: {wrong}"
    return set(candidates)


def read_queue(r: Client, queue: str) -> tuple[dict[str, list[str]], set[str]]:
    """In one MULTI: every state key's members (each key checked to be of its state's type)
    and the ids of the queue's job hashes. On a cluster, all of it on the primary that owns the
    queue's slot (the hash tag puts every key of the queue there)."""
    server: redis.Redis
    if isinstance(r, redis.cluster.RedisCluster):
        node = r.get_node_from_key(prefix(queue) + "wait")  # type: ignore[no-untyped-call]
        server = node.redis_connection
    else:
        server = r
    pipe = server.pipeline(transaction=True)
    pipe.keys(re.sub(r"([*?[\]\\])", r"\\\1", prefix(queue)) + "*")
    for state in STATES:
        pipe.type(key(queue, state))
    for state in LIST_STATES:
        pipe.lrange(key(queue, state), 0, -1)
    for state in ZSET_STATES:
        pipe.zrange(key(queue, state), 0, -1)
    replies: list[Any] = pipe.execute()
    names, types, members = replies[0], replies[1 : len(STATES) + 1], replies[len(STATES) + 1 :]
    for state, kind in zip(STATES, (text(t) for t in types), strict=True):
        expected = "list" if state in LIST_STATES else "zset"
        assert kind in ("none", expected), f"{key(queue, state)} is a {kind}, not a {expected}"
    found = {state: [text(m) for m in ids] for state, ids in zip(STATES, members, strict=True)}
    return found, job_ids(server, queue, names)


def assert_one_state(r: Client, queue: str) -> dict[str, str]:
    """Assert the one-state invariant of `queue`; answer {job id: its state}."""
    members, hashes = read_queue(r, queue)
    found: dict[str, list[str]] = {}
    for state, ids in members.items():
        for job_id in ids:
            found.setdefault(job_id, []).append(state)
    repeated = {job_id: states for job_id, states in found.items() if len(states) != 1}
    assert not repeated, f"jobs not held exactly once by exactly one state: {repeated}"
    stateless = sorted(hashes - found.keys())
    assert not stateless, f"job hashes in no state: {stateless}"
    ghosts = {job_id: found[job_id][0] for job_id in sorted(found.keys() - hashes)}
    assert not ghosts, f"ids in a state without a job hash: {ghosts}"
    return {job_id: states[0] for job_id, states in found.items()}


# -- adding jobs with defaults, the invariant checked after each add ------------------------


class AddArguments(TypedDict, total=False):
    """The arguments every add script takes, each with a default in `_ADD_DEFAULTS`."""

    job_id: str
    name: str
    data: object
    opts: Mapping[str, object]
    now: int
    dedup_id: str


_ADD_DEFAULTS: AddArguments = {
    "job_id": "",
    "name": "job",
    "data": {},
    "opts": {},
    "now": NOW,
    "dedup_id": "",
}


def _add(
    add: Callable[..., tuple[str, int]],
    r: Client,
    queue: str,
    arguments: AddArguments,
    **extra: int,
) -> tuple[str, int]:
    """Run one add wrapper with the defaults for what `arguments` leaves out, then check the
    invariant, also when the add raised."""
    try:
        return add(r, queue=queue, **{**_ADD_DEFAULTS, **arguments}, **extra)
    finally:
        assert_one_state(r, queue)


def add_standard(r: Client, queue: str, **arguments: Unpack[AddArguments]) -> tuple[str, int]:
    """addStandardJob-6: to wait, or to paused while the queue is paused."""
    return _add(g.add_standard_job, r, queue, arguments)


def add_delayed(
    r: Client, queue: str, *, delay: int = 1000, **arguments: Unpack[AddArguments]
) -> tuple[str, int]:
    """addDelayedJob-5: to delayed, scored by now + delay."""
    return _add(g.add_delayed_job, r, queue, arguments, delay=delay)


def add_prioritized(
    r: Client, queue: str, *, priority: int = 1, **arguments: Unpack[AddArguments]
) -> tuple[str, int]:
    """addPrioritizedJob-6: to prioritized, lower priorities first."""
    return _add(g.add_prioritized_job, r, queue, arguments, priority=priority)


def add_flow(
    r: Client, queue: str, flow: FlowJob, *, parent_id: str = "", now: int = NOW
) -> FlowIds:
    """addFlow-10, through echomq_scripts.flows.add_flow: a tree of jobs, parents to
    waiting-children. The invariant is checked after it, also when it raised."""
    try:
        return flows.add_flow(r, flow, now=now, parent_id=parent_id)
    finally:
        assert_one_state(r, queue)
