"""The test harness itself: what happens when redis-server is missing or a cluster is slow, in CI
and elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.environment import REPO, in_ci, redis_binary, start_cluster
from tests.support.redis_server import RedisUnavailable

A_REDIS_TEST = "tests/test_redis.py::test_extend_lock_extends_only_for_the_holder"


def run_pytest(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "CI"}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", A_REDIS_TEST],
        cwd=REPO,
        env={**base, **env},
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    ("value", "counts"),
    [
        *((v, True) for v in ("1", "true", "True", "TRUE", "yes", "Yes", "on", "ON", " true\n")),
        *((v, False) for v in ("", "0", "false", "False", "no", "off", "2", "truthy")),
    ],
)
def test_which_values_of_ci_count(value: str, counts: bool) -> None:
    assert in_ci({"CI": value}) is counts


def test_no_ci_variable_is_not_ci() -> None:
    assert in_ci({"PATH": "/usr/bin"}) is False


@pytest.mark.parametrize(
    ("ci", "binary"),
    [("true", "/nonexistent/redis-server"), ("true", "true"), ("1", "true"), ("Yes", "true")],
)
def test_missing_or_unusable_redis_fails_the_run_in_ci(ci: str, binary: str) -> None:
    done = run_pytest({"CI": ci, "REDIS_SERVER": binary})
    assert done.returncode == 1
    assert "CI needs redis-server" in done.stdout
    assert "1 error" in done.stdout


@pytest.mark.parametrize("ci", [None, "", "0", "false", "No"])
def test_missing_redis_skips_outside_ci(ci: str | None) -> None:
    done = run_pytest(
        {"REDIS_SERVER": "/nonexistent/redis-server", **({} if ci is None else {"CI": ci})}
    )
    assert done.returncode == 0
    assert "1 skipped" in done.stdout


def start_unready_cluster() -> None:
    """`start_cluster` with no time to get ready; a skip here fails the calling test."""
    try:
        # No time to agree: the cluster is created, then found not ready.
        start_cluster(timeout=0).stop()
    except pytest.skip.Exception as skipped:
        pytest.fail(f"a cluster slow to start was skipped: {skipped}")


def test_a_cluster_slow_to_start_fails_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a missing redis-server may skip: a cluster that is not ready in time is a failure."""
    monkeypatch.delenv("CI", raising=False)
    redis_binary()  # a machine without redis-server skips here, and only here
    with pytest.raises(RedisUnavailable, match="did not reach cluster_state:ok within 0 s"):
        start_unready_cluster()
