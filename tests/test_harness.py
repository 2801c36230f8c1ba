"""The test harness itself: what happens when redis-server is missing, in CI and elsewhere."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

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


@pytest.mark.parametrize("binary", ["/nonexistent/redis-server", "true"])
def test_missing_or_unusable_redis_fails_the_run_in_ci(binary: str) -> None:
    done = run_pytest({"CI": "true", "REDIS_SERVER": binary})
    assert done.returncode == 1
    assert "CI needs redis-server" in done.stdout
    assert "1 error" in done.stdout


def test_missing_redis_skips_outside_ci() -> None:
    done = run_pytest({"REDIS_SERVER": "/nonexistent/redis-server"})
    assert done.returncode == 0
    assert "1 skipped" in done.stdout
