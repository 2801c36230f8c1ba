"""Named pipes where the tool reads a file: refused or skipped, never opened, so never waited on.

Each command runs in a fresh interpreter with a timeout, so a regression to reading a pipe fails
its test instead of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.projects import copy_fixture

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")


def run(project: Path, *args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`echomq-scripts ARGS` in `project`, its default cache at `cache` (else none at all)."""
    env = dict(os.environ)
    env.pop("ECHOMQ_SCRIPTS_CACHE_DIR", None)
    if cache is not None:
        env["ECHOMQ_SCRIPTS_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "echomq_scripts", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_named_pipe_as_pyproject_toml_is_refused(tmp_path: Path) -> None:
    project = copy_fixture("clean", tmp_path)
    os.mkfifo(project / "pyproject.toml")
    for command in ("build", "check"):
        done = run(project, command, "--no-cache")
        assert done.returncode == 2
        assert done.stderr.splitlines()[-1] == (
            f"Error: {project.resolve()}/pyproject.toml: cannot read: it is a named pipe, not a"
            " regular file"
        )
        assert "Traceback" not in done.stderr
    assert not (project / "build").exists()


def test_named_pipes_in_the_cache_are_misses(tmp_path: Path) -> None:
    project = copy_fixture("clean", tmp_path)
    cache = tmp_path / "cache"
    first = run(project, "build", cache=cache)
    assert first.returncode == 0
    assert first.stdout == "wrote build (1 script, 1 analysed, 0 from cache)\n"
    # Every entry (analysis, build stamp, command-line record) becomes a pipe of its name.
    entries = [path for path in cache.rglob("*") if path.is_file()]
    assert len(entries) >= 3
    for path in entries:
        path.unlink()
        os.mkfifo(path)
    again = run(project, "build", cache=cache)
    assert (again.returncode, again.stdout, again.stderr) == (
        0,
        "up to date: build (1 script, 1 analysed, 0 from cache)\n",
        "",
    )


def test_explain_refuses_a_named_pipe_for_a_line_map_and_skips_one_for_a_source(
    tmp_path: Path,
) -> None:
    project = copy_fixture("clean", tmp_path)
    assert run(project, "build", "--no-cache").returncode == 0
    source = project / "lua_src" / "touch-3.lua"
    source.unlink()
    os.mkfifo(source)
    # The map alone answers; the source line that follows it when it can be read is left out.
    done = run(project, "explain", "touch-3:1")
    assert (done.returncode, done.stdout, done.stderr) == (0, "lua_src/touch-3.lua:1\n", "")
    line_map = project / "build" / "maps" / "touch-3.json"
    line_map.unlink()
    os.mkfifo(line_map)
    done = run(project, "explain", "touch-3:1")
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "Error: build/maps/touch-3.json: it is a named pipe, not a regular file; refusing to read"
        " it\n",
    )
