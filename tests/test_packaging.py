"""What the project publishes beside its code: the sdist, which installs and runs its tests, and
its metadata (licence, links) as a package index shows it."""

from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

from echomq_scripts import __version__
from tests.support.environment import REPO

SCRIPT = (
    "--- Touches a key.\n--- @key it  the key\n--- @return int  1\n"
    + "return redis.call('SET', KEYS[1], 1) and 1\n"
)


def run(
    *args: str | Path, cwd: Path | None = None, isolated: bool = True
) -> subprocess.CompletedProcess[str]:
    """`args` run in `cwd`; `isolated`, without a PYTHONPATH that would import the repository's
    package (give a `cwd` outside the repository too: `python -c` imports from it)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" or not isolated}
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def sdist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist that `python -m build --sdist` makes of this repository, with the build backend
    of this environment (the `dev` extra has it): no package index needed. It is made from a
    copy, since setuptools writes its egg-info into the tree it packs."""
    tree = tmp_path_factory.mktemp("tree") / "echomq-scripts"
    machine_only = (
        "build",
        ".venv",
        ".git",
        "node_modules",
        "*.egg-info",
        "__pycache__",
        ".*_cache",
    )
    shutil.copytree(REPO, tree, symlinks=True, ignore=shutil.ignore_patterns(*machine_only))
    out = tmp_path_factory.mktemp("dist")
    done = run(sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", out, tree)
    assert done.returncode == 0, done.stdout + done.stderr
    (found,) = out.glob("*.tar.gz")
    assert found.name == f"echomq_scripts-{__version__}.tar.gz"
    return found


def test_the_sdist_holds_the_package_data_the_licence_the_docs_and_the_tests(
    sdist: Path,
) -> None:
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    lua = {p.relative_to(REPO).as_posix() for p in (REPO / "lua_src").rglob("*.lua")}
    generated = {
        p.relative_to(REPO).as_posix() for p in (REPO / "echomq_scripts/generated/lua").iterdir()
    }
    expected = {
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "Makefile",
        ".pre-commit-hooks.yaml",
        "echomq_scripts/py.typed",
        "echomq_scripts/toolchain/manifest.schema.json",
        "echomq_scripts/toolchain/templates/scripts.py.j2",
        "echomq_scripts/toolchain/templates/script.py.j2",
        "echomq_scripts/toolchain/templates/records.py.j2",
        "docs/checks.md",
        "tests/conftest.py",
        "tests/support/golden.py",
        "tests/fixtures/projects/locals/expected.txt",
        "tools/setup.sh",
    }
    assert expected | lua | generated <= names
    # Nothing of a developer's machine: no bytecode, no linked node packages.
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not [n for n in names if n.startswith("tests/node/node_modules")]


def test_the_sdist_installs_into_a_fresh_environment_and_builds(
    sdist: Path, tmp_path: Path
) -> None:
    """pip builds a wheel of the sdist and installs it in a new virtual environment, where
    the console script answers and builds a project. The new environment takes its dependencies
    (redis-py, the `build` extra's, and the build backend) from this one's site-packages through
    a .pth file, so nothing comes from the package index."""
    fresh = tmp_path / "venv"
    assert run(sys.executable, "-m", "venv", "--without-pip", fresh).returncode == 0
    python = fresh / "bin" / "python"
    site = run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    assert site.returncode == 0, site.stderr
    # A path added by a .pth file is not a site directory: this one's editable install of the
    # project (a .pth file of its own) is not read there.
    Path(site.stdout.strip(), "dependencies.pth").write_text(sysconfig.get_paths()["purelib"])
    installed = run(
        sys.executable,
        "-m",
        "pip",
        "--python",
        python,
        "install",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        sdist,
        cwd=tmp_path,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    where = run(python, "-c", "import echomq_scripts; print(echomq_scripts.__file__)", cwd=tmp_path)
    assert Path(where.stdout.strip()).is_relative_to(fresh)

    console = fresh / "bin" / "echomq-scripts"
    version = run(console, "--version")
    assert (version.returncode, version.stdout) == (0, f"echomq-scripts, version {__version__}\n")
    project = tmp_path / "project"
    (project / "lua_src").mkdir(parents=True)
    (project / "lua_src" / "touch-1.lua").write_text(SCRIPT)
    built = run(console, "build", "--no-cache", cwd=project)
    assert (built.returncode, built.stdout, built.stderr) == (
        0,
        "wrote build (1 script, 1 analysed, 0 from cache)\n",
        "",
    )
    assert (project / "build" / "scripts" / "touch-1.lua").read_text() == SCRIPT

    # The metadata a package index shows: the licence, its file, and the project's links.
    meta = run(
        python,
        "-c",
        "from importlib.metadata import distribution as d; print(d('echomq-scripts')"
        ".read_text('METADATA'))",
        cwd=tmp_path,
    )
    metadata = email.message_from_string(meta.stdout)
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE"]
    assert {url.split(",")[0] for url in metadata.get_all("Project-URL") or []} == {
        "Homepage",
        "Documentation",
        "Issues",
    }


def test_the_tests_run_from_the_unpacked_sdist(sdist: Path, tmp_path: Path) -> None:
    """The sdist carries its tests with their fixtures: the golden findings pass from it. An
    sdist holds no symbolic links (setuptools copies what a link names), so the two fixtures
    made of links are left out here."""
    with tarfile.open(sdist) as tar:
        tar.extractall(tmp_path, filter="data")
    (unpacked,) = tmp_path.iterdir()
    done = run(
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/test_findings.py::test_project_findings_match_golden",
        "-k",
        "not links and not includes",
        cwd=unpacked,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"\b\d+ passed\b", done.stdout)


def test_the_licence_is_mit_for_the_authors_and_pyproject_names_it() -> None:
    licence = (REPO / "LICENSE").read_text()
    assert licence.startswith("MIT License\n\nCopyright (c) 2026 the echomq-scripts authors\n")
    pyproject = (REPO / "pyproject.toml").read_text()
    assert 'license = "MIT"\nlicense-files = ["LICENSE"]\n' in pyproject


def test_readme_links_work_on_a_package_index() -> None:
    """A package index shows README.md without the repository around it: every link is
    absolute, and the ones into the repository use the project's URL."""
    readme = (REPO / "README.md").read_text()
    targets = re.findall(r"\]\(([^)]+)\)", readme)
    assert targets
    assert [t for t in targets if not t.startswith("https://")] == []
    homepage = re.search(r'^Homepage = "([^"]+)"$', (REPO / "pyproject.toml").read_text(), re.M)
    assert homepage is not None
    for target in targets:
        if target.startswith(homepage[1]):
            path = target.removeprefix(f"{homepage[1]}/blob/main/").split("#")[0]
            assert (REPO / path).is_file(), target
