"""Running `echomq-scripts check` on a fixture project the way the golden files record it."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from echomq_scripts.toolchain.cli import cli

PROJECTS = Path(__file__).resolve().parents[1] / "fixtures" / "projects"


def project_names() -> list[str]:
    return sorted(p.name for p in PROJECTS.iterdir() if p.is_dir())


def check_output(project: Path) -> tuple[int, str]:
    """Exit code and stdout of `check --src lua_src --no-cache`, run from inside `project`.

    The findings and the summary line are on stdout; stderr, kept for a run that cannot go on,
    must be empty."""
    previous = Path.cwd()
    os.chdir(project)
    try:
        result = CliRunner().invoke(cli, ["check", "--src", "lua_src", "--no-cache"])
    finally:
        os.chdir(previous)
    assert result.stderr == ""
    return result.exit_code, result.stdout
