"""Shared fixtures: a client of the session's private redis-server (started by the root
conftest.py, which the documentation's examples share), flushed before each test; a cluster when
a test asks for one; the test's temporary directory as the working directory (`in_tmp`). What a
missing server means: tests/support/environment.py."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import redis.cluster

from tests.support.invariants import Client
from tests.support.queue_harness import Queue
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer


@pytest.fixture
def in_tmp(tmp_path: Path) -> Iterator[Path]:
    """The test's temporary directory, as the working directory for the test's length: the
    CLI reads its settings and sources from there."""
    previous = Path.cwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(previous)


@pytest.fixture
def rc(redis_cluster: RedisCluster) -> Iterator[redis.cluster.RedisCluster]:
    """A cluster client, every primary emptied of keys and scripts before the test."""
    for primary in redis_cluster.primary_clients():
        primary.flushall()
        primary.script_flush()
        primary.close()
    client = redis_cluster.client()
    yield client
    client.close()


@pytest.fixture
def r(redis_server: RedisServer) -> Iterator[redis.Redis]:
    """A client of the session's server, emptied of keys and scripts before the test."""
    client = redis_server.client()
    client.flushall()
    client.script_flush()
    yield client
    client.close()


@pytest.fixture(params=["single", "cluster"])
def q(request: pytest.FixtureRequest) -> Queue:
    """A `Queue` (tests/support/queue_harness.py) on a single server, and the same scenario again
    on a Redis Cluster."""
    client: Client = request.getfixturevalue("r" if request.param == "single" else "rc")
    queue = Queue(client)
    queue.check()
    return queue
