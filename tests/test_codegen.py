"""The generator on awkward scripts: its output must pass ruff and mypy --strict, and work."""

from __future__ import annotations

import ast
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import get_args

import pytest
import redis
from click.testing import CliRunner, Result

from echomq_scripts.runtime import ArgumentError
from echomq_scripts.toolchain.cache import AnalysisCache
from echomq_scripts.toolchain.cli import cli
from echomq_scripts.toolchain.config import load_config
from echomq_scripts.toolchain.errors import ConfigError, OutputError
from echomq_scripts.toolchain.naming import (
    RESERVED,
    WRAPPER_BUILTINS,
    WRAPPER_LOCALS,
    module_names,
    snake_case,
    wrapper_globals,
)
from echomq_scripts.toolchain.pipeline import check
from tests.support.environment import REPO
from tests.support.projects import copy_fixture, run_build, run_cli_then


def module_bodies(generated: Path) -> list[ast.stmt]:
    """The top-level statements of every script's module of a generated package and of its
    records: what the scripts add (scripts/__init__.py only gathers them, by name)."""
    paths = sorted(p for p in (generated / "scripts").glob("*.py") if p.name != "__init__.py")
    paths += [path for path in [generated / "records.py"] if path.exists()]
    return [node for path in paths for node in ast.parse(path.read_text()).body]


def test_generated_code_passes_ruff_and_mypy_strict(edges: tuple[Path, ModuleType]) -> None:
    project, _ = edges
    package = project / "emq_edges"
    config = ["--config", str(REPO / "pyproject.toml")]
    for command in (
        [sys.executable, "-m", "ruff", "format", "--check", *config, str(package)],
        [sys.executable, "-m", "ruff", "check", *config, str(package)],
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(package)],
    ):
        done = subprocess.run(command, cwd=project, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def test_clashing_names_are_renamed_not_shadowed(
    edges: tuple[Path, ModuleType], r: redis.Redis
) -> None:
    _, module = edges
    # The script loadAll does not replace the module's own load_all.
    assert module.load_all_(r) == "OK"
    assert module.load_all(r) == [s.sha for s in module.SCRIPTS]
    keys = module.push_many_keys("mail", "s1", "r1")
    assert keys == module.PushManyKeys(count_="emq:{mail}:s1:count", first="emq:{mail}:r1")
    reply = module.push_many(
        r,
        queue="mail",
        extra_keys=["emq:{mail}:more"],
        script="s1",
        runtime_="r1",
        values=["a", "b"],
    )
    assert reply == (6, ["s1", "r1"])  # RPUSH answers each list's length: 1 + 2, twice
    assert r.lrange("emq:{mail}:more", 0, -1) == [b"a", b"b"]
    assert module.push_many(r, queue="mail", script="s1", runtime_="r1") is None
    # Without a header there is no declared shape: the reply comes as redis-py gives it.
    assert module.no_header(r, keys=module.NoHeaderKeys("emq:{mail}:s1:count")) == 1


def test_names_near_the_wrappers_own_still_send_the_callers_values(
    edges: tuple[Path, ModuleType], r: redis.Redis
) -> None:
    _, module = edges
    values = {"script_": "s1", "client_": "c1", "pipe_": "p1"}
    assert module.echo_names(r, queue="mail", **values) == ["s1", "c1", "p1"]
    assert r.hgetall("emq:{mail}:s1") == {b"script": b"s1", b"client": b"c1", b"pipe": b"p1"}
    keys = module.EchoNamesKeys(job="emq:{mail}:other")
    assert module.echo_names_keys("mail", "s1") == module.EchoNamesKeys(job="emq:{mail}:s1")
    assert module.echo_names(r, keys=keys, **values) == ["s1", "c1", "p1"]
    assert r.hget("emq:{mail}:other", "pipe") == b"p1"


def test_naming_knows_every_name_the_wrappers_code_uses(edges: tuple[Path, ModuleType]) -> None:
    """Besides their parameters, the wrappers' functions bind only WRAPPER_LOCALS and read only
    RESERVED names, WRAPPER_BUILTINS and their scripts' own module names: the names a header
    may not take. A template that uses another name must add it there."""
    project, _ = edges
    for root, package in ((project, project / "emq_edges"), (REPO, REPO / "echomq_scripts")):
        scripts = check(load_config(root / "lua_src"), AnalysisCache(None)).scripts
        own = {
            name for s in scripts for name in wrapper_globals(s.resolved.entry.name, s.interface)
        }
        for function in module_bodies(package / "generated"):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            every = function.args.args + function.args.kwonlyargs
            parameters = {a.arg for a in every}
            for node in ast.walk(function):
                if not isinstance(node, ast.Name) or node.id in parameters:
                    continue
                if isinstance(node.ctx, ast.Store):
                    assert node.id in WRAPPER_LOCALS, (function.name, node.id)
                else:
                    assert node.id in WRAPPER_LOCALS | RESERVED | WRAPPER_BUILTINS | own, (
                        function.name,
                        node.id,
                    )


def build_in(project: Path, script: str, text: str) -> Result:
    """`echomq-scripts build` of a project of one script, whose wrappers go to emq_names."""
    return build_tree(project, {script: text})


def build_tree(project: Path, scripts: dict[str, str]) -> Result:
    """`echomq-scripts build` of a project of these scripts, whose wrappers go to emq_names."""
    (project / "lua_src").mkdir()
    for script, text in scripts.items():
        (project / "lua_src" / script).write_text(text)
    (project / "emq_names").mkdir()
    (project / "emq_names" / "__init__.py").write_text("")
    (project / "pyproject.toml").write_text(
        '[tool.echomq-scripts]\npython-package = "emq_names/generated"\n'
    )
    previous = Path.cwd()
    os.chdir(project)
    try:
        return CliRunner().invoke(cli, ["build", "--no-cache"])
    finally:
        os.chdir(previous)


@pytest.mark.parametrize(
    ("script", "header", "finding"),
    [
        # The wrapper would send its own _script (the script's id) in the argument's place.
        (
            "echo-0.lua",
            "--- @arg _script  string  a value\n",
            "2:10: error: argument '_script' is a local of its wrapper's code: rename it",
        ),
        # client is renamed client_: two parameters of one name.
        (
            "echo-0.lua",
            "--- @arg client   string  a value\n--- @arg client_  string  another\n",
            "3:10: error: argument 'client_' and argument 'client' (line 2) would both be the"
            " parameter 'client_': rename one of them",
        ),
        # A key loses its leading underscore: two fields of one name.
        (
            "echo-2.lua",
            "--- @key job   the job\n--- @key _job  the job again\n",
            "3:10: error: key '_job' and key 'job' (line 2) would both be the field 'job':"
            " rename one of them",
        ),
        # Script `script`, argument `spec`: the alias ScriptSpec would replace the import.
        (
            "script-0.lua",
            "--- @arg spec  enum(a|b)  a value\n",
            "2:10: error: argument 'spec' would make 'ScriptSpec', a name the generated module"
            " imports or defines for itself: rename it",
        ),
    ],
    ids=["local", "renamed-parameter", "underscored-key", "imported-alias"],
)
def test_header_names_that_would_break_the_wrapper_are_refused(
    tmp_path: Path, script: str, header: str, finding: str
) -> None:
    reads = "".join(f"redis.call('GET', KEYS[{i}])\n" for i in range(1, int(script[-5]) + 1))
    values = " .. ".join(f"ARGV[{i}]" for i in range(1, header.count("@arg") + 1)) or "'x'"
    text = f"--- Echoes.\n{header}--- @return string  x\n{reads}return {values}\n"
    result = build_in(tmp_path, script, text)
    assert result.exit_code == 1
    assert (result.stdout, result.stderr) == (
        f"lua_src/{script}:{finding} [header-names]\nFound 1 error in 1 file.\n",
        "",
    )
    assert not (tmp_path / "emq_names" / "generated").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"values": "ab"}, "values must be a sequence"),
        ({"extra_keys": "k"}, "keys must be a sequence of str"),
        ({"extra_keys": ["emq:{other}:x"]}, "different Cluster slots"),
        ({"queue": "a<script>b"}, None),
    ],
)
def test_variable_lists_and_slots_are_checked(
    edges: tuple[Path, ModuleType], r: redis.Redis, change: dict[str, object], message: str | None
) -> None:
    _, module = edges
    arguments: dict[str, object] = {"queue": "mail", "script": "s", "runtime_": "r"}
    arguments.update(change)
    if message is None:
        # A queue name holding "<script>" is a name like any other, not a placeholder.
        module.push_many(r, **arguments)
        assert r.exists("emq:{a<script>b}:s:count") == 1
        return
    with pytest.raises(ArgumentError, match=message):
        module.push_many(r, **arguments)


def test_every_argument_type_is_checked_as_its_header_says(
    edges: tuple[Path, ModuleType], r: redis.Redis
) -> None:
    _, module = edges
    good: dict[str, object] = {
        "queue": "mail",
        "job_id": "7",
        "parent": "",
        "weight": 3,
        "ratio": 0.5,
        "note": "n",
        "mode": "add",
        "tags": ["alpha", "kilo"],
    }
    assert module.tag_all(r, **good) == 2
    assert module.tag_all_keys("mail", "7").job == "emq:{mail}:7:tags"
    bad: list[tuple[dict[str, object], str]] = [
        ({"job_id": "wait"}, "job id 'wait' is the name of one of the queue's own keys"),
        ({"parent": "7:lock"}, "job id '7:lock' contains"),
        ({"weight": 101}, "'weight' must be an int from 1 to 100"),
        ({"ratio": 0.75}, "'ratio' must be a number >= 0.25 and < 0.75"),
        ({"note": ""}, "'note' must be a non-empty str"),
        ({"mode": "merge"}, "'mode' must be one of 'add', 'replace'"),
        ({"tags": ["alpha", "zulu"]}, "'tags' must be one of 'alpha', 'bravo'"),
    ]
    for change, message in bad:
        with pytest.raises(ArgumentError, match=message):
            module.tag_all(r, **{**good, **change})
    with pytest.raises(ArgumentError, match="job id 'events'"):
        module.tag_all_keys("mail", "events")
    assert r.zcard("emq:{mail}:7:tags") == 2  # nothing refused reached Redis


@pytest.mark.parametrize(
    ("name", "python"),
    [
        ("moveToActive", "move_to_active"),
        ("getJobIDs", "get_job_ids"),
        ("HTTPServer", "http_server"),
        ("moveStalledJobsToWait", "move_stalled_jobs_to_wait"),
        ("obliterate", "obliterate"),
    ],
)
def test_snake_case(name: str, python: str) -> None:
    assert snake_case(name) == python


def test_a_src_layout_names_its_module(tmp_path: Path, r: redis.Redis) -> None:
    project = copy_fixture("codegen-edges", tmp_path)
    (project / "src").mkdir()
    (project / "emq_edges").rename(project / "src" / "emq_src_edges")
    (project / "pyproject.toml").write_text(
        "[tool.echomq-scripts]\n"
        'python-package = "src/emq_src_edges/generated"\n'
        'python-module = "emq_src_edges.generated"\n'
    )
    assert not run_build(project / "lua_src", project / "build").failed(strict=False)
    sys.path.insert(0, str(project / "src"))
    try:
        module = importlib.import_module("emq_src_edges.generated")
        assert module.load_all_(r) == "OK"
    finally:
        sys.path.remove(str(project / "src"))
        for name in [m for m in sys.modules if m.startswith("emq_src_edges")]:
            del sys.modules[name]


def test_a_foreign_package_directory_stops_the_build_before_anything_is_written(
    tmp_path: Path,
) -> None:
    project = copy_fixture("codegen-edges", tmp_path)
    mine = project / "emq_edges" / "generated"
    mine.mkdir()
    (mine / "__init__.py").write_text('"""Written by hand."""\n')
    with pytest.raises(OutputError, match="not a package generated by echomq-scripts"):
        run_build(project / "lua_src", project / "build")
    assert not (project / "build").exists()
    assert (mine / "__init__.py").read_text() == '"""Written by hand."""\n'


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ('python-module = "x.generated"', "python-module needs python-package beside it"),
        ('python-package = "lua_src/generated"', "lies inside --src or --out"),
        ('python-package = "../elsewhere"', "must be a package path"),
    ],
)
def test_bad_package_settings(tmp_path: Path, settings: str, message: str) -> None:
    project = copy_fixture("codegen-edges", tmp_path)
    (project / "pyproject.toml").write_text(f"[tool.echomq-scripts]\n{settings}\n")
    with pytest.raises(ConfigError, match=message):
        run_build(project / "lua_src", project / "build")
    assert not (project / "build").exists()


def test_a_current_package_is_not_rendered_again(tmp_path: Path) -> None:
    """The package records the digest of its inputs: an unchanged one needs no Jinja at all."""
    project = tmp_path / "repo"
    shutil.copytree(REPO / "lua_src", project / "lua_src")
    shutil.copytree(REPO / "echomq_scripts" / "generated", project / "echomq_scripts" / "generated")
    shutil.copy(REPO / "pyproject.toml", project)

    def build() -> str:
        """Whether a build that succeeds loaded Jinja2."""
        return run_cli_then(project, ["build", "--no-cache"], "'jinja2' in sys.modules")[-1]

    assert build() == "False"
    # A hand edit fails build --check, and build renders the package again to repair it: the
    # package's contents no longer match the digest of them that it records.
    scripts = project / "echomq_scripts" / "generated" / "scripts" / "_extend_lock.py"
    original = scripts.read_text()
    scripts.write_text(original + "# edited\n")
    checked = subprocess.run(
        [sys.executable, "-m", "echomq_scripts", "build", "--check", "--no-cache"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 1
    assert "generated/scripts/_extend_lock.py: out of date" in checked.stderr
    assert build() == "True"
    assert scripts.read_text() == original
    assert build() == "False"
    # A changed script changes the digest: the package is rendered and rewritten.
    script = project / "lua_src" / "extendLock-2.lua"
    script.write_text(script.read_text() + "-- changed\n")
    assert build() == "True"
    assert not scripts.read_text().endswith("# edited\n")


def script_text(summary: str, header: str = "") -> str:
    """A script of no keys that declares `header`'s arguments and reads them all."""
    values = " .. ".join(f"ARGV[{i}]" for i in range(1, header.count("@arg") + 1)) or "'x'"
    return f"--- {summary}.\n{header}--- @return string  x\nreturn {values}\n"


def test_generated_names_of_two_scripts_that_would_meet_are_refused(tmp_path: Path) -> None:
    pause = "--- @arg pause  enum(yes|no)  whether to pause\n"
    result = build_tree(
        tmp_path,
        {
            "foo-0.lua": script_text("Foo", pause),
            "fooPause-0.lua": script_text("Pauses"),  # its Script object: _FOO_PAUSE
            "FooBar-0.lua": script_text("One"),
            "fooBar-0.lua": script_text("Two"),  # both foo_bar, FooBarKeys, _FOO_BAR, ...
            "fooAsync-0.lua": script_text("Async"),  # foo_async: foo's asyncio wrapper
        },
    )
    assert (result.exit_code, result.stdout.splitlines()) == (
        1,
        [
            "lua_src/foo-0.lua:2:10: error: the values of argument 'pause' of script 'foo' and the"
            " Script object of script 'fooPause' (fooPause-0.lua) would both be '_FOO_PAUSE' in"
            " the generated Python: rename one of them [header-names]",
            "lua_src/fooAsync-0.lua:1:1: error: the wrapper of script 'fooAsync' and the asyncio"
            " wrapper of script 'foo' (foo-0.lua) would both be 'foo_async' in the generated"
            " Python: rename one of them [duplicate-script]",
            "lua_src/fooBar-0.lua:1:1: error: the wrapper of script 'fooBar' and the wrapper of"
            " script 'FooBar' (FooBar-0.lua) would both be 'foo_bar' in the generated Python:"
            " rename one of them [duplicate-script]",
            "Found 3 errors in 3 files.",
        ],
    )
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "emq_names" / "generated").exists()


def test_names_that_only_nearly_meet_make_a_package_that_imports_and_type_checks(
    tmp_path: Path,
) -> None:
    pause = "--- @arg pause  enum(yes|no)  whether to pause\n"
    result = build_tree(
        tmp_path,
        {
            "foo-0.lua": script_text("Foo", pause),  # _FOO_PAUSE, FooPause
            "fooPaused-0.lua": script_text("Pauses"),  # _FOO_PAUSED, FooPausedKeys
            "fooKeys-0.lua": script_text("Keys"),  # foo_keys: foo's keys are not templated
            "fooAsyncs-0.lua": script_text("Asyncs"),  # foo_asyncs
        },
    )
    assert (result.exit_code, result.stderr) == (0, "")
    package = tmp_path / "emq_names"
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(package)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("emq_names.generated")
        assert [s.spec.name for s in module.SCRIPTS] == ["foo", "fooAsyncs", "fooKeys", "fooPaused"]
        assert get_args(module.FooPause) == ("yes", "no")
        foo = importlib.import_module("emq_names.generated.scripts._foo")
        assert module.SCRIPTS[0] is foo._FOO  # not replaced by a clashing name
        assert module.foo_keys.__doc__.startswith("Keys.")
        assert module.foo_asyncs.__doc__.startswith("Asyncs.")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("emq_names")]:
            del sys.modules[name]


def test_module_names_lists_every_name_the_module_defines(edges: tuple[Path, ModuleType]) -> None:
    """naming.module_names, which the clash check compares across scripts, is every name a
    script adds to the generated package's modules (its own, the records, and the names
    scripts/__init__.py gathers): a template that defines another must add it there."""
    project, _ = edges
    shared: set[str] = set()
    for root, package in ((project, project / "emq_edges"), (REPO, REPO / "echomq_scripts")):
        scripts = check(load_config(root / "lua_src"), AnalysisCache(None)).scripts
        listed = [name for s in scripts for name in module_names(s.resolved.entry.name, s.header)]
        defined = set()
        for node in module_bodies(package / "generated"):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defined.add(node.name)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                defined |= {t.id for t in targets if isinstance(t, ast.Name)}
        # Only a record repeats: scripts whose replies spell it alike share its one class.
        repeated = {name for name in listed if listed.count(name) > 1}
        records = {
            record.name
            for s in scripts
            if s.header is not None and s.header.returns is not None
            for record in s.header.returns.records()
        }
        assert repeated <= records
        assert sorted(set(listed)) == sorted(defined - shared)


@pytest.mark.parametrize("count", [0, 2, 8, 12])
def test_the_records_set_is_laid_out_as_ruff_formats_it(count: int, tmp_path: Path) -> None:
    """The package's _RECORDS, one line, the set on its own line, or a name a line."""
    from echomq_scripts.toolchain.codegen import _records_lines

    names = [f"LongRecordName{i}" if count > 8 else f"Record{i}" for i in range(count)]
    lines = _records_lines(names)
    module = tmp_path / "records.py"
    module.write_text("\n".join(lines) + "\n")
    config = ["--config", str(REPO / "pyproject.toml")]
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", *config, str(module)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout
    namespace: dict[str, object] = {}
    exec(module.read_text(), namespace)
    assert namespace["_RECORDS"] == frozenset(names)
    assert len(lines) == {0: 1, 2: 1, 8: 3, 12: count + 4}[count]
