"""The package's two halves: the runtime (what a service imports) needs nothing but the standard
library and redis-py, and installs without the toolchain; docs/design.md's module tables
describe the tree as it is."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import echomq_scripts.runtime
from echomq_scripts.toolchain.entry import TOOLCHAIN_PACKAGES
from tests.support.environment import REPO
from tests.support.redis_server import RedisServer

PACKAGE = REPO / "echomq_scripts"


def imported_modules(path: Path, package: str) -> list[tuple[int, str]]:
    """Every module `path` (a module of `package`) imports, relative imports resolved to
    absolute names, with the line of each; a `from` import gives each name it imports."""
    tree = ast.parse(path.read_text("utf-8"), str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join([*base, *([node.module] if node.module else [])])
            else:
                name = node.module or ""
            # Each name imported from it: `from echomq_scripts import runtime` is the runtime.
            found += [(node.lineno, f"{name}.{alias.name}") for alias in node.names]
    return found


def outside_the_runtime(module: str) -> bool:
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top == "redis" or top == "__future__":
        return False
    return not (module == "echomq_scripts.runtime" or module.startswith("echomq_scripts.runtime."))


@pytest.mark.parametrize(
    ("folder", "package"),
    [("runtime", "echomq_scripts.runtime"), ("generated", "echomq_scripts.generated")],
)
def test_the_runtime_imports_only_the_standard_library_redis_py_and_itself(
    folder: str, package: str
) -> None:
    strays = [
        f"{path.relative_to(REPO)}:{line}: imports {module}"
        for path in sorted((PACKAGE / folder).glob("*.py"))
        for line, module in imported_modules(path, package)
        # A generated package imports its own modules too: `from . import errors`.
        if outside_the_runtime(module) and not (module + ".").startswith(package + ".")
    ]
    assert strays == []


def test_the_console_script_knows_the_build_extra_by_its_modules() -> None:
    """What entry.py names when a toolchain package is missing is what `build` installs."""
    import tomllib

    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~ ;\[]", spec, maxsplit=1)[0] for spec in extra["build"]}
    assert {name.replace("-", "_") for name in names} == set(TOOLCHAIN_PACKAGES)


def test_the_import_check_sees_a_stray_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import os\nfrom ..toolchain import header\nfrom . import grammar\n")
    found = imported_modules(module, "echomq_scripts.runtime")
    assert [m for _, m in found if outside_the_runtime(m)] == ["echomq_scripts.toolchain.header"]


def test_the_runtime_exports_exactly_what_it_names() -> None:
    exported = echomq_scripts.runtime.__all__
    assert sorted(exported) == sorted(set(exported))
    assert all(getattr(echomq_scripts.runtime, name) is not None for name in exported)
    # The names mypy sees (the TYPE_CHECKING imports) are the names exported at run time.
    tree = ast.parse((PACKAGE / "runtime" / "__init__.py").read_text("utf-8"))
    imported = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names
    }
    assert imported == set(exported)
    with pytest.raises(AttributeError, match="no attribute 'decode'"):
        echomq_scripts.runtime.decode  # noqa: B018 - gone: nothing called it


def test_the_toolchain_reads_the_grammar_without_importing_redis_py() -> None:
    script = (
        "import sys\n"
        "from echomq_scripts.runtime import codes, grammar, keys\n"
        "assert grammar.parse_shape('tuple[string, hash] | nil').annotation\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'redis'))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr


def documented_modules() -> set[str]:
    """The first column of docs/design.md's module tables (section "Modules")."""
    text = (REPO / "docs" / "design.md").read_text("utf-8")
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    section = section.split("\nThe tests are", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE))


def modules_in_the_tree() -> set[str]:
    found = {"generated/", "toolchain/templates/"}
    for folder in ("", "runtime/", "toolchain/"):
        found |= {folder + p.name for p in (PACKAGE / folder).glob("*.py")}
    return found


def test_the_design_document_lists_every_module_and_no_other() -> None:
    assert documented_modules() == modules_in_the_tree()


# -- a service's install: the runtime alone -------------------------------------------------


@pytest.fixture(scope="module")
def runtime_only_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtualenv holding this project without the `build` extra, and redis-py."""
    where = tmp_path_factory.mktemp("runtime-only")
    wheels = where / "wheels"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(REPO)],
        check=True,
        capture_output=True,
    )
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    import redis

    (wheel,) = wheels.glob("echomq_scripts-*.whl")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", str(wheel), f"redis=={redis.__version__}"],
        check=True,
        capture_output=True,
    )
    return venv


# Run in the runtime-only venv: argv is the server's port, then the toolchain's packages.
RUNTIME_ONLY_PICKUP = """
import importlib.util, json, sys
import redis
from echomq_scripts import generated as emq
from echomq_scripts.runtime import keys

missing = [name for name in sys.argv[2:] if importlib.util.find_spec(name) is None]
client = redis.Redis(host="127.0.0.1", port=int(sys.argv[1]))
job_id, added = emq.add_standard_job(
    client, queue="mail", job_id="", name="send", data={}, opts={}, now=1000,
    dedup_id="",
)
taken, fields, _, _ = emq.move_to_active(
    client, queue="mail", token="t1", lock_duration=30000, now=1001, limit_max=0,
    limit_duration=0, concurrency=0,
)
lock = client.get(keys.lock("mail", taken))
print(json.dumps({"missing": missing, "added": [job_id, added], "taken": taken,
                  "name": fields.get("name"), "lock": lock.decode()}))
"""


def test_a_runtime_only_install_runs_a_pickup_on_a_real_redis(
    runtime_only_venv: Path, redis_server: RedisServer
) -> None:
    import json

    python = runtime_only_venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [python, "-c", RUNTIME_ONLY_PICKUP, str(redis_server.port), *TOOLCHAIN_PACKAGES],
        capture_output=True,
        text=True,
        cwd=runtime_only_venv,  # not the repository, whose echomq_scripts would shadow the install
        env=env,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["missing"] == list(TOOLCHAIN_PACKAGES)
    assert report["added"] == [report["taken"], 1]
    assert (report["name"], report["lock"]) == ("send", "t1")


def test_build_without_the_toolchain_says_what_to_install(runtime_only_venv: Path) -> None:
    done = subprocess.run(
        [runtime_only_venv / "bin" / "echomq-scripts", "build"],
        capture_output=True,
        text=True,
        cwd=runtime_only_venv,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert "pip install 'echomq-scripts[build]'" in lines[0]
    assert "Traceback" not in done.stderr


# -- the README's service -------------------------------------------------------------------


def readme_service_examples() -> list[str]:
    """The Python blocks of the README's Queue and Worker section: a service's whole code,
    given the server's `port`, as the docs tests run it."""
    text = (REPO / "README.md").read_text("utf-8")
    section = text.split("## A service: Queue and Worker", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert len(blocks) == 2  # sync and asyncio
    return blocks


@pytest.mark.parametrize("index", [0, 1], ids=["sync", "asyncio"])
def test_the_readme_service_type_checks_strictly(index: int, tmp_path: Path) -> None:
    example = tmp_path / "service.py"
    example.write_text("port = 6379\n" + readme_service_examples()[index])
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(example)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stdout


def test_a_runtime_only_install_runs_the_readme_service(
    runtime_only_venv: Path, redis_server: RedisServer
) -> None:
    """The README's two services, in the runtime-only venv: both run their thousand jobs, and
    neither imports a package of the toolchain."""
    python = runtime_only_venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    check = f"\nimport sys\nprint(sorted(set({list(TOOLCHAIN_PACKAGES)!r}) & set(sys.modules)))\n"
    # What each example prints first: the sync one its counts, the asyncio one its count.
    shown = ["Counts(wait=0, paused=0, active=0, delayed=0, prioritized=0, completed=1000,", "1000"]
    for example, first in zip(readme_service_examples(), shown, strict=True):
        done = subprocess.run(
            [python, "-c", f"port = {redis_server.port}\n{example}{check}"],
            capture_output=True,
            text=True,
            cwd=runtime_only_venv,  # not the repository, whose echomq_scripts would shadow it
            env=env,
        )
        assert done.returncode == 0, done.stderr
        printed, *_, imported = done.stdout.splitlines()
        assert imported == "[]"
        assert printed.startswith(first)
