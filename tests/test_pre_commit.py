"""The pre-commit hook (.pre-commit-hooks.yaml): its manifest, and its entry run on a project."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tests.support.environment import REPO

HEADER = "--- Touches a key.\n--- @key it  the key\n--- @return int  1\n"
SCRIPT = HEADER + "return redis.call('SET', KEYS[1], 1) and 1\n"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=60)


def hooks() -> list[dict[str, object]]:
    loaded = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert isinstance(loaded, list)
    return loaded


def test_the_pre_commit_hook_is_well_formed() -> None:
    """The fields pre-commit requires of a hook (id, name, entry, language), and the ones that
    make it check the whole tree once when any Lua file changed, with the toolchain installed."""
    (hook,) = hooks()
    assert hook == {
        "id": "echomq-scripts-check",
        "name": "echomq-scripts check",
        "description": hook["description"],
        "entry": "echomq-scripts check",
        "language": "python",
        "additional_dependencies": [".[build]"],
        "files": r"\.lua$",
        "pass_filenames": False,
        "require_serial": True,
    }
    files = re.compile(str(hook["files"]))
    assert files.search("lua_src/includes/digitsArg.lua")
    assert not files.search("echomq_scripts/cli.py")
    assert not files.search("notes.lua.txt")
    # The README shows a configuration that uses this hook.
    assert "- id: echomq-scripts-check" in (REPO / "README.md").read_text()


def test_the_pre_commit_hook_entry_checks_a_project(tmp_path: Path) -> None:
    """The hook's entry, run as pre-commit runs it (no file names appended), from a project's
    root: exit 0 on clean scripts, 1 with the findings on stdout."""
    (hook,) = hooks()
    command, *args = shlex.split(str(hook["entry"]))
    executable = shutil.which(command, path=os.path.dirname(sys.executable))
    assert executable is not None
    (tmp_path / "lua_src").mkdir()
    (tmp_path / "lua_src" / "touch-1.lua").write_text(SCRIPT)
    # The console script of this environment (PYTHONPATH, if set, names the checkout).
    clean = run(executable, *args, "--no-cache", cwd=tmp_path)
    assert (clean.returncode, clean.stdout) == (0, "No findings in 1 script.\n")
    (tmp_path / "lua_src" / "touch-1.lua").write_text(HEADER + "return 1\n")
    failed = run(executable, *args, "--no-cache", cwd=tmp_path)
    assert (failed.returncode, failed.stdout) == (
        1,
        "lua_src/touch-1.lua:2:10: error: key 1 'it' is never read; remove it or mark it"
        " (unused) [key-unused]\n"
        "Found 1 error in 1 file.\n",
    )
