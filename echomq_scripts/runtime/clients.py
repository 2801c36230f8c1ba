"""The redis-py clients and pipelines a wrapper takes, and the checks that refuse any other.

A check runs on every call, so each remembers the classes (subclasses included) it has found
acceptable: a call then looks in a set rather than walking the class hierarchy.
"""

from __future__ import annotations

from typing import get_args

import redis
import redis.asyncio
import redis.asyncio.client
import redis.asyncio.cluster
import redis.client
import redis.cluster

from .errors import ArgumentError

SyncClient = redis.Redis | redis.cluster.RedisCluster
AsyncClient = redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster
PipelineClient = (
    redis.client.Pipeline
    | redis.asyncio.client.Pipeline
    | redis.cluster.ClusterPipeline
    | redis.asyncio.cluster.ClusterPipeline
)
SyncPipeline = redis.client.Pipeline | redis.cluster.ClusterPipeline
AsyncPipeline = redis.asyncio.client.Pipeline | redis.asyncio.cluster.ClusterPipeline
PLAIN_PIPELINES = (redis.client.Pipeline, redis.asyncio.client.Pipeline)
PIPELINES = get_args(PipelineClient)
_SYNC_CLIENTS = get_args(SyncClient)
_ASYNC_CLIENTS = get_args(AsyncClient)
_SYNC_PIPELINES = get_args(SyncPipeline)
_ASYNC_PIPELINES = get_args(AsyncPipeline)
CHECKED_SYNC: set[type] = set()
CHECKED_ASYNC: set[type] = set()
CHECKED_PLAIN_PIPELINES: set[type] = set()


def check_client(script: str, client: object, asyncio: bool) -> None:
    """`client` is a redis-py client (not a pipeline) of the kind the wrapper form takes."""
    checked = CHECKED_ASYNC if asyncio else CHECKED_SYNC
    if type(client) in checked:
        return
    kinds = _ASYNC_CLIENTS if asyncio else _SYNC_CLIENTS
    if isinstance(client, PIPELINES) or not isinstance(client, kinds):
        if asyncio:
            raise ArgumentError(
                f"{script}: the _async wrapper takes a redis.asyncio client, got"
                f" {type(client).__name__}"
            )
        raise ArgumentError(
            f"{script}: takes a redis.Redis or RedisCluster, got {type(client).__name__}"
            " (pipelines: the _pipeline wrapper; asyncio: _async)"
        )
    checked.add(type(client))


def check_pipeline(function: str, pipe: object, asyncio: bool) -> None:
    """`pipe` is a redis-py pipeline of the kind `function` (execute, execute_async) takes."""
    kinds = _ASYNC_PIPELINES if asyncio else _SYNC_PIPELINES
    if not isinstance(pipe, kinds):
        other = "sync pipelines: execute" if asyncio else "asyncio pipelines: execute_async"
        hint = f" ({other})" if isinstance(pipe, PIPELINES) else ""
        names = " or ".join(f"{kind.__module__}.{kind.__name__}" for kind in kinds)
        raise ArgumentError(f"{function} takes a {names}, got {type(pipe).__name__}{hint}")
