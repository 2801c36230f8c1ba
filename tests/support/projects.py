"""Fixture projects copied to a temporary directory, built in-process or by the CLI."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from echomq_scripts.toolchain.cache import AnalysisCache
from echomq_scripts.toolchain.config import load_config
from echomq_scripts.toolchain.pipeline import BuildResult, build
from tests.support.environment import FIXTURES


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
        "from echomq_scripts.toolchain.cli import main\n"
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
