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
from jinja2.bccache import bc_magic

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


def cached_build(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    """A project with a generated package, built once with a cache: the project, the cache, and
    the cache's entries (analysis, build stamp, command-line record, compiled templates)."""
    project = copy_fixture("clean", tmp_path)
    (project / "pyproject.toml").write_text(
        '[tool.echomq-scripts]\npython-package = "clean_pkg/generated"\n'
    )
    cache = tmp_path / "cache"
    first = run(project, "build", cache=cache)
    assert (first.returncode, first.stdout) == (
        0,
        "wrote build (1 script, 1 analysed, 0 from cache)\n",
    )
    entries = sorted(path for path in cache.rglob("*") if path.is_file())
    folders = {path.relative_to(cache).parts[0] for path in entries}
    assert folders >= {"builds", "invocations", "templates"}
    return project, cache, entries


def test_named_pipes_in_the_cache_are_misses(tmp_path: Path) -> None:
    project, cache, entries = cached_build(tmp_path)
    for path in entries:
        path.unlink()
        os.mkfifo(path)  # the same name, so the build looks for it
    # So that the package is rendered again, which reads the compiled templates.
    (project / "clean_pkg" / "generated" / "scripts" / "__init__.py").unlink()
    again = run(project, "build", cache=cache)
    assert (again.returncode, again.stdout, again.stderr) == (
        0,
        "wrote build (1 script, 1 analysed, 0 from cache)\n",
        "",
    )


def test_damaged_compiled_templates_are_misses(tmp_path: Path) -> None:
    project, cache, entries = cached_build(tmp_path)
    for path in entries:
        if path.parent.name == "templates":
            # Jinja's header, so the entry is read on, then what no unpickling survives.
            path.write_bytes(bc_magic + b"\x80\x04\x95garbage" + bytes(range(256)))
        else:
            path.unlink()  # so that the build renders the package again
    (project / "clean_pkg" / "generated" / "scripts" / "__init__.py").unlink()
    again = run(project, "build", cache=cache)
    assert (again.returncode, again.stdout, again.stderr) == (
        0,
        "wrote build (1 script, 1 analysed, 0 from cache)\n",
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


@pytest.mark.parametrize("kind", ["directory", "named pipe"])
def test_an_unusable_settings_file_above_a_recorded_build_is_not_replayed(
    tmp_path: Path, kind: str
) -> None:
    """A `pyproject.toml` that appears in a parent directory as a directory or a pipe is refused
    by a build (config.py); the console script must not answer for the recorded build, which had
    no such file, with "up to date"."""
    project = copy_fixture("clean", tmp_path)  # no settings file of its own: the walk goes up
    cache = tmp_path / "cache"
    first = run(project, "build", cache=cache)
    assert (first.returncode, first.stdout) == (
        0,
        "wrote build (1 script, 1 analysed, 0 from cache)\n",
    )
    above = project.parent / "pyproject.toml"
    if kind == "directory":
        above.mkdir()
    else:
        os.mkfifo(above)
    again = run(project, "build", cache=cache)
    assert (again.returncode, again.stdout, again.stderr) == (
        2,
        "",
        f"Error: {above.resolve()}: cannot read: it is a {kind}, not a regular file\n",
    )
