"""What the fuzz test (tests/test_fuzz.py) found, each crash as one small example.

Some were fixed with their test; the rest by the parts of issue 16 that own the code, under the
test's strict xfail mark until then.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path

import pytest
from click.testing import CliRunner

from echomq_scripts.toolchain.cli import cli
from tests.support.environment import REPO

GOOD = (
    "--- Reads a field of a job's hash.\n"
    "--- @key job  the job hash\n"
    "--- @arg field  string  the field\n"
    "--- @return string  the field's value\n"
    "return redis.call('HGET', KEYS[1], ARGV[1])\n"
)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def run(project: Path, *args: str) -> tuple[int, str]:
    """`echomq-scripts ARGS` in-process in `project`: the exit code and what it printed; an
    exception other than the exit fails the test with its traceback."""
    previous = Path.cwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(cli, list(args))
    finally:
        os.chdir(previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        assert result.exc_info is not None
        lines = traceback.format_exception(*result.exc_info)
        pytest.fail("".join([*lines[:3], "...\n", *lines[-3:]]))
    assert result.exit_code in (0, 1, 2)
    return result.exit_code, result.stdout + result.stderr


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ECHOMQ_SCRIPTS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "project"
    write(root, {"lua_src/getField-1.lua": GOOD})
    return root


# -- fixed ---------------------------------------------------------------------------------------


def test_out_a_link_to_itself_is_one_error(project: Path) -> None:
    """`--out` a symbolic link to itself: Path.resolve() raised RuntimeError in pipeline.build."""
    (project / "build").symlink_to("build")
    code, output = run(project, "build", "--no-cache")
    assert code == 1
    assert "--out build: cannot follow its symbolic links" in output
    assert os.readlink(project / "build") == "build"


def test_python_package_through_a_link_loop_is_one_error(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.echomq-scripts]\npython-package = "gen"\n')
    (project / "gen").symlink_to("gen")
    code, output = run(project, "build", "--no-cache")
    assert code == 1
    assert "python-package" in output
    assert "cannot follow its symbolic links" in output
    assert not (project / "build").exists()


def test_out_with_a_name_over_255_bytes_is_one_error(project: Path) -> None:
    """`--out` named by a component over 255 bytes: OSError from Path.exists in output.py."""
    code, output = run(project, "build", "--no-cache", "--out", "b" * 300)
    assert code == 1
    assert "cannot be an output directory: File name too long" in output


def test_out_with_a_name_that_is_not_utf8_is_escaped_in_the_summary(project: Path) -> None:
    """`--out $'bu ild\\n\\xff'`: printing the summary line raised UnicodeEncodeError on a
    strict UTF-8 stdout, after the build was written, with exit 1."""
    out = os.fsdecode(b"bu ild\n\xff")
    code, output = run(project, "build", "--no-cache", "--out", out)
    assert (code, output) == (0, "wrote bu ild\\n\\xff (1 script, 1 analysed, 0 from cache)\n")
    env = dict(os.environ, PYTHONIOENCODING="utf-8:strict", XDG_CACHE_HOME=str(project / "x"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    done = subprocess.run(
        [sys.executable, "-m", "echomq_scripts", "build", "--out", out],
        cwd=project,
        capture_output=True,
        env=env,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == b"up to date: bu ild\\n\\xff (1 script, 1 analysed, 0 from cache)\n"


def test_a_failed_build_removes_the_parents_it_made_for_out(project: Path) -> None:
    """`--out a/b/build` with a python-package that cannot be written: the build failed, and
    left the directories a/ and a/b/ that it had made for the output."""
    (project / "pyproject.toml").write_text('[tool.echomq-scripts]\npython-package = "gen/pkg"\n')
    (project / "gen").write_text("a file, so gen/pkg cannot be made\n")
    code, output = run(project, "build", "--no-cache", "--out", "a/b/build")
    assert code == 1
    assert "gen/pkg: cannot create the output directory" in output
    assert not (project / "a").exists()
    (project / "gen").unlink()
    code, _ = run(project, "build", "--no-cache", "--out", "a/b/build")
    assert code == 0
    assert (project / "a" / "b" / "build" / "manifest.json").is_file()


# -- fixed elsewhere in issue 16 -----------------------------------------------------------------


def test_a_script_linked_to_itself(project: Path) -> None:
    (project / "lua_src" / "self-1.lua").symlink_to("self-1.lua")
    assert run(project, "build", "--no-cache") == (
        1,
        "lua_src/self-1.lua:1:1: error: cannot read the file: it is a loop of symbolic links, or"
        " too long a chain of them [read-error]\nFound 1 error in 1 file.\n",
    )


def test_an_include_linked_to_itself(project: Path) -> None:
    write(project, {"lua_src/inc-1.lua": '--- @include "includes/loop"\nreturn KEYS[1]\n'})
    (project / "lua_src" / "includes").mkdir()
    (project / "lua_src" / "includes" / "loop.lua").symlink_to("loop.lua")
    assert run(project, "check", "--no-cache") == (
        1,
        "lua_src/inc-1.lua:1:14: error: included file 'includes/loop.lua' cannot be reached: its"
        " path runs into a loop of symbolic links, or too long a chain of them [include-missing]"
        "\nFound 1 error in 1 file.\n",
    )


CHAINS = {
    "calls": "local function f() return f end\nreturn f" + "()" * 1000 + " and 1\n",
    "methods": "local o = {}\nfunction o:m() return self end\nlocal r = o" + ":m()" * 1000,
    "sum": "return " + " + ".join(["1"] * 1000) + "\n",
    "fields": "local t = {}\nreturn t" + ".a" * 1000 + "\n",
    "index": "local t = {}\nreturn t" + "[1]" * 1000 + "\n",
    "header": "--- Does.\n--- @return " + "list[" * 1000 + "int" + "]" * 1000 + "\nreturn {}\n",
}


@pytest.mark.parametrize("kind", sorted(CHAINS))
def test_a_long_chain(project: Path, kind: str) -> None:
    """Each chain is what Lua compiles, so what is left is the findings any script gets; the
    return shape past its documented depth is a header finding."""
    write(project, {"lua_src/chain-0.lua": CHAINS[kind]})
    no_header = "lua_src/chain-0.lua:1:1: warning: script has no header (see docs/authoring.md)"
    no_header += " [header-missing]\n"
    expected = {
        "header": (
            1,
            "lua_src/chain-0.lua:2:5: error: bad return shape: lists and tuples nest more than 32"
            " deep [header-syntax]\nFound 1 error in 1 file.\n",
        ),
        "methods": (
            0,
            no_header + "lua_src/chain-0.lua:3:7: warning: local 'r' is never read"
            " [unused-local]\nFound 2 warnings in 1 file.\n",
        ),
    }
    assert run(project, "check", "--no-cache") == expected.get(
        kind, (0, no_header + "Found 1 warning in 1 file.\n")
    )


def test_a_named_pipe_as_pyproject_does_not_hang_a_cached_build(project: Path) -> None:
    os.mkfifo(project / "pyproject.toml")
    env = dict(os.environ, XDG_CACHE_HOME=str(project.parent / "xdg"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "echomq_scripts", "build"]
    command += ["--cache-dir", str(project.parent / "cache")]
    try:
        done = subprocess.run(command, cwd=project, capture_output=True, timeout=15, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("hung")
    assert done.returncode in (0, 1, 2)
    assert b"Traceback" not in done.stderr


def test_an_include_path_component_over_255_bytes(project: Path) -> None:
    write(project, {"lua_src/inc-1.lua": f'--- @include "includes/{"x" * 300}"\nreturn KEYS[1]\n'})
    (project / "lua_src" / "includes").mkdir()  # else "includes" is missing, not too long
    assert run(project, "check", "--no-cache") == (
        1,
        f"lua_src/inc-1.lua:1:14: error: included file 'includes/{'x' * 300}.lua' cannot exist:"
        " its path is longer than the file system allows [include-missing]"
        "\nFound 1 error in 1 file.\n",
    )


def test_an_include_path_holding_a_nul(project: Path) -> None:
    write(project, {"lua_src/inc-1.lua": '--- @include "includes/a\0b"\nreturn KEYS[1]\n'})
    assert run(project, "check", "--no-cache") == (
        1,
        "lua_src/inc-1.lua:1:14: error: include path 'includes/a\\x00b' holds a NUL character,"
        " which no file name can [include-missing]\nFound 1 error in 1 file.\n",
    )


def test_a_deeply_nested_pyproject(project: Path) -> None:
    (project / "pyproject.toml").write_text("x = " + "[" * 1000 + "]" * 1000 + "\n")
    assert run(project, "check", "--no-cache") == (
        2,
        f"Error: {project}/pyproject.toml: cannot read: its values nest too deeply\n",
    )


def test_a_damaged_template_cache_is_a_miss(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.echomq-scripts]\npython-package = "gen"\n')
    cache = str(project.parent / "cache")
    assert run(project, "build", "--cache-dir", cache)[0] == 0
    compiled = sorted((project.parent / "cache" / "templates").iterdir())
    assert compiled
    for path in compiled:
        data = path.read_bytes()
        path.write_bytes(data[:15] + data[16:])  # one byte gone, as the fuzz test had it
    with (project / "lua_src" / "getField-1.lua").open("a") as script:
        script.write("-- changed, so the wrappers are generated again\n")
    assert run(project, "build", "--cache-dir", cache)[0] == 0
