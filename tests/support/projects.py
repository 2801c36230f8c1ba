"""Fixture projects copied to a temporary directory, built in-process or by the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from echomq_scripts.toolchain.cache import AnalysisCache
from echomq_scripts.toolchain.config import load_config
from echomq_scripts.toolchain.pipeline import BuildResult, build
from tests.support.environment import FIXTURES, REPO


def copy_fixture(name: str, destination: Path) -> Path:
    """Copy tests/fixtures/projects/<name> to `destination` and return the copy's path."""
    target = destination / name
    shutil.copytree(FIXTURES / "projects" / name, target, symlinks=True)
    return target


def run_build(src: Path, out: Path, cache_dir: Path | None = None) -> BuildResult:
    return build(load_config(src), AnalysisCache(cache_dir), out)


def lua_src_bundle(out: Path) -> Path:
    """Build lua_src/ into `out`; the bundle it published there, as other runtimes take it."""
    run_build(REPO / "lua_src", out)
    (bundle,) = out.glob("*.tar.gz")
    return bundle


def consumed(command: Sequence[str], out: Path) -> dict[str, Any]:
    """Run another runtime's consumer of the bundle that `out` holds; its JSON report, once it
    says it loaded every script of the manifest with no SHA1 mismatch."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    manifest = json.loads((out / "manifest.json").read_bytes())
    assert report["scripts"] == len(manifest["scripts"])
    assert report["sha1Mismatches"] == []
    return report


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
