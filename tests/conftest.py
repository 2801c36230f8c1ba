"""Shared fixtures: a client of the session's private redis-server (started by the root
conftest.py, which the documentation's examples share), flushed before each test; a cluster when
a test asks for one; the test's temporary directory as the working directory (`in_tmp`); the
codegen-edges project built, its generated package imported (`edges`). What a missing server
means: tests/support/environment.py."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import redis
import redis.cluster

from tests.support.invariants import Client
from tests.support.projects import copy_fixture, run_build
from tests.support.queue_harness import Queue
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer


@pytest.fixture(scope="module")
def edges(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, ModuleType]]:
    """The codegen-edges fixture project, built, and its generated package imported: names near
    the generated code's own, defaults and roles of every kind, records shared and nested."""
    project = copy_fixture("codegen-edges", tmp_path_factory.mktemp("edges"))
    result = run_build(project / "lua_src", project / "build")
    # noHeader-1 has no header (a warning): its wrapper must still be valid, typed code.
    assert [d.code for d in result.diagnostics] == ["header-missing"]
    sys.path.insert(0, str(project))
    try:
        yield project, importlib.import_module("emq_edges.generated")
    finally:
        sys.path.remove(str(project))
        for name in [m for m in sys.modules if m.startswith("emq_edges")]:
            del sys.modules[name]


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
