"""Shared fixtures: one private redis-server per test session, flushed before each test.

In CI (`in_ci`) a missing or too-old redis-server fails the tests that need it; elsewhere they
are skipped with the reason, so the pure build tests still run on a machine without Redis. A
server or cluster that exists but does not come up fails the test everywhere: only what is
missing may skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import NoReturn

import pytest
import redis
import redis.cluster

from echomq_scripts.cache import AnalysisCache
from echomq_scripts.config import load_config
from echomq_scripts.pipeline import BuildResult, build
from tests.invariants import Client
from tests.queue_harness import Queue
from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer, RedisUnavailable, find_binary

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


# The values of CI that mean "this is CI", compared in lower case: CI services set `true`, and
# people write `1`, `yes` or `on` as often.
_CI_VALUES = frozenset({"1", "true", "yes", "on"})


def in_ci(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the tests run in CI: `CI` is 1, true, yes or on, in any case."""
    return environ.get("CI", "").strip().lower() in _CI_VALUES


def unavailable(needed: str, problem: str) -> NoReturn:
    """A test's outside part is missing: that fails the run in CI, and skips the test elsewhere."""
    if in_ci():
        pytest.fail(f"CI needs {needed}: {problem}")
    pytest.skip(problem)


def redis_binary() -> str:
    """The redis-server to run; a missing or too-old one is `unavailable`."""
    try:
        return find_binary()
    except RedisUnavailable as exc:
        unavailable("redis-server", str(exc))


def start_cluster(timeout: float = RedisCluster.ready_timeout) -> RedisCluster:
    """Three primaries with a replica each. Only a missing redis-server skips (`redis_binary`);
    a cluster that fails to start, or is not ready within `timeout` seconds, raises."""
    return RedisCluster(redis_binary(), replicas=1, ready_timeout=timeout).start()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    # A server that exists but does not start raises, which fails the tests that need it.
    server = RedisServer(redis_binary()).start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisCluster]:
    """The session's cluster, started once when a test asks for it."""
    cluster = start_cluster()
    yield cluster
    cluster.stop()


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


def copy_fixture(name: str, destination: Path) -> Path:
    """Copy tests/fixtures/projects/<name> to `destination` and return the copy's path."""
    target = destination / name
    shutil.copytree(FIXTURES / "projects" / name, target, symlinks=True)
    return target


def run_build(src: Path, out: Path, cache_dir: Path | None = None) -> BuildResult:
    return build(load_config(src), AnalysisCache(cache_dir), out)


def run_cli_then(project: Path, args: Sequence[str], then: str) -> list[str]:
    """Run `echomq-scripts ARGS` in `project` in a fresh interpreter, then print the Python
    expression `then` in that interpreter (what the command imported, say). The command must
    exit with status 0: its exit status is the interpreter's. The lines printed."""
    probe = (
        "import sys\n"
        "from echomq_scripts.cli import main\n"
        "status = 0\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    status = exc.code\n"
        f"print({then})\n"
        "sys.exit(status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=project, capture_output=True, text=True
    )
    assert done.returncode == 0, f"echomq-scripts {' '.join(args)}: {done.stdout}{done.stderr}"
    return done.stdout.splitlines()


@pytest.fixture(params=["single", "cluster"])
def q(request: pytest.FixtureRequest) -> Queue:
    """A `Queue` (tests/queue_harness.py) on a single server, and the same scenario again on a
    Redis Cluster."""
    client: Client = request.getfixturevalue("r" if request.param == "single" else "rc")
    queue = Queue(client)
    queue.check()
    return queue
