"""Where the tests run: the repository, its fixtures, and what a missing outside part means.

In CI (`in_ci`) a missing or too-old redis-server fails the tests that need it; elsewhere they
are skipped with the reason, so the pure build tests still run on a machine without Redis. A
server or cluster that exists but does not come up fails the test everywhere: only what is
missing may skip.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

import pytest

from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisUnavailable, find_binary

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


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
