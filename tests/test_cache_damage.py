"""The caches never crash a build and never change what it reports: a damaged analysis entry is a
miss, a source file of any name is digested, and a deleted or edited output is put back."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from echomq_scripts.toolchain.cli import cli
from tests.support.projects import copy_fixture


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The `locals` fixture (warnings, includes) as the working directory; the default cache
    directory (where builds record their command lines) is the test's own."""
    monkeypatch.delenv("ECHOMQ_SCRIPTS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = copy_fixture("locals", tmp_path)
    monkeypatch.chdir(root)
    return root


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


# -- analysis entries of the wrong shape ------------------------------------------------------

Damage = Callable[[dict[str, Any]], object]


def _set(field: str, value: object) -> Damage:
    return lambda entry: {**entry, field: value}


def _first_finding(field: str, value: object) -> Damage:
    def damage(entry: dict[str, Any]) -> object:
        findings = [{**entry["findings"][0], field: value}, *entry["findings"][1:]]
        return {**entry, "findings": findings}

    return damage


DAMAGES: dict[str, Damage] = {
    "syntax of one item": _set("syntax", [1]),
    "syntax a string": _set("syntax", "x"),
    "findings not a list": _set("findings", {"row": 0}),
    "finding row a string": _first_finding("row", "0"),
    "finding row negative": _first_finding("row", -1),
    "finding row past the script": _first_finding("row", 10**6),
    "finding code unregistered": _first_finding("code", "no-such-code"),
    "finding related_row a list": _first_finding("related_row", [1]),
    "finding top_level an int": _first_finding("top_level", 1),
    "finding field extra": _first_finding("extra", 1),
    "keys literal of two": _set("keys", {"literal": [[1, 0]], "dynamic": [], "whole": []}),
    "keys without whole": _set("keys", {"literal": [], "dynamic": []}),
    "argv a list": _set("argv", []),
    "returned code a bool": _set("returned_codes", [[True, 0, 0]]),
    "top_decls of strings": _set("top_decls", ["x"]),
    "top_statement_rows of floats": _set("top_statement_rows", [1.5]),
    "key_args of an unknown kind": _set("key_args", [[0, 0, "sideways"]]),
    "a field missing": lambda entry: {k: v for k, v in entry.items() if k != "key_args"},
    "a field extra": _set("more", 1),
    "not an object": lambda entry: [entry],
    "null": lambda entry: None,
}


@pytest.mark.parametrize("name", DAMAGES)
def test_a_damaged_analysis_entry_is_a_miss(project: Path, name: str) -> None:
    cold = invoke("check", "--no-cache")
    assert cold.exit_code == 0
    assert "[shadowed-local]" in cold.stdout
    cache = project.parent / "cache"
    assert invoke("check", "--cache-dir", str(cache)).stdout == cold.stdout
    entries = sorted(cache.glob("*.json"))
    assert len(entries) == 3  # one per script
    goods = [unseal(entry) for entry in entries]
    for entry, good in zip(entries, goods, strict=True):
        assert good["findings"]  # every script of the fixture has one to damage
        # Sealed with its own checksum: only the shape is wrong, which reading must notice.
        payload = json.dumps(DAMAGES[name](good)).encode()
        entry.write_bytes(hashlib.sha256(payload).digest() + payload)
    again = invoke("check", "--cache-dir", str(cache))
    assert (again.exit_code, again.exception) == (0, None)
    assert again.stdout == cold.stdout
    # Analysed afresh, and stored again as a cold build stores it.
    assert [unseal(entry) for entry in entries] == goods


def unseal(entry: Path) -> Any:
    """An analysis entry's JSON, after the sha256 of it that comes first."""
    data = entry.read_bytes()
    assert hashlib.sha256(data[32:]).digest() == data[:32]
    return json.loads(data[32:])


def test_an_entry_of_the_right_shape_with_a_byte_gone_is_a_miss(project: Path) -> None:
    """A message one byte short is valid JSON of the right shape: only the seal tells (the
    fuzz test found `user_script` read back as `ser_script`)."""
    cold = invoke("check", "--no-cache")
    cache = project.parent / "cache"
    assert invoke("check", "--cache-dir", str(cache)).stderr == cold.stderr
    for entry in cache.glob("*.json"):
        data = entry.read_bytes()
        entry.write_bytes(data.replace(b"local '", b"local ", 1))
    again = invoke("check", "--cache-dir", str(cache))
    assert (again.exit_code, again.stderr) == (0, cold.stderr)


# -- file names that are not UTF-8 ----------------------------------------------------------


def _create(path: bytes, data: bytes = b"") -> None:
    with open(path, "wb") as handle:
        handle.write(data)


def run_console(*args: str) -> subprocess.CompletedProcess[str]:
    """`echomq-scripts ...` as installed, through the console script's replay."""
    return subprocess.run(
        [sys.executable, "-m", "echomq_scripts", *args], capture_output=True, text=True
    )


def test_a_file_name_that_is_not_utf8_is_digested_and_ignored(project: Path) -> None:
    _create(os.fsencode(project / "lua_src") + b"/\xff.txt", b"notes\n")
    cache = str(project.parent / "cache")
    first = invoke("build", "--cache-dir", cache)
    assert (first.exit_code, first.exception) == (0, None)
    assert first.stdout.endswith("\nwrote build (3 scripts, 3 analysed, 0 from cache)\n")
    again = run_console("build", "--cache-dir", cache)
    assert (again.returncode, "Traceback" in again.stderr) == (0, False)
    assert again.stdout == first.stdout.replace(
        "wrote build (3 scripts, 3 analysed, 0 from cache)",
        "up to date: build (3 scripts, 0 analysed, 3 from cache)",
    )
    # The name is digested as the bytes it is: another one is another tree, stamped anew.
    os.rename(os.fsencode(project / "lua_src") + b"/\xff.txt", b"lua_src/\xfe.txt")
    moved = run_console("build", "--cache-dir", cache)
    assert (moved.returncode, moved.stdout) == (0, again.stdout)
    assert len(list((project.parent / "cache" / "builds").iterdir())) == 2


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_a_lua_file_whose_name_is_not_utf8_is_a_finding(project: Path, output_format: str) -> None:
    src = os.fsencode(project / "lua_src")
    _create(src + b"/\xfe-0.lua", b"return 1\n")
    _create(src + b"/includes/a\xfd.lua", b"return 1\n")
    for args in (["build", "--cache-dir", str(project.parent / "cache")], ["check", "--no-cache"]):
        result = invoke(*args, "--format", output_format)
        assert (result.exit_code, type(result.exception)) == (1, SystemExit)
        expected = [
            ("lua_src/\\xfe-0.lua", "file name '\\xfe-0.lua' is not valid UTF-8"),
            ("lua_src/includes/a\\xfd.lua", "file name 'a\\xfd.lua' is not valid UTF-8"),
        ]
        if output_format == "json":
            found = [(f["path"], f["message"]) for f in json.loads(result.stdout)]
            assert [f for f in found if "UTF-8" in f[1]] == expected
        else:
            for path, message in expected:
                assert f"{path}:1:1: error: {message} [bad-filename]\n" in result.stdout
    assert not (project / "build").exists()


# -- outputs deleted or edited since the last build -------------------------------------------


@pytest.mark.parametrize("cache", [["--cache-dir", "../cache"], ["--no-cache"]])
def test_a_deleted_or_edited_output_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache: list[str]
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    project = copy_fixture("runtime-error", tmp_path)
    monkeypatch.chdir(project)
    assert invoke("build", *cache).stdout.startswith("wrote build")
    package = project / "emq_runtime_error" / "generated"

    def files() -> dict[Path, bytes]:
        found = [*package.rglob("*"), *Path("build").rglob("*")]
        return {p: p.read_bytes() for p in found if p.is_file()}

    outputs = files()

    def rebuilt(build: Callable[[], str]) -> None:
        assert build().startswith("wrote build")
        assert files() == outputs

    def console() -> str:
        return run_console("build", *cache).stdout

    def full() -> str:
        return invoke("build", *cache).stdout

    for build in (console, full):
        (package / "errors.py").unlink()
        rebuilt(build)
        (package / "lua" / "fail-1.lua").unlink()
        rebuilt(build)
        edits = [package / "scripts" / "_fail.py", package / "__init__.py", package / "errors.py"]
        for edited in edits:
            edited.write_bytes(edited.read_bytes() + b"# edited by hand\n")
            rebuilt(build)
        (package / "extra.py").write_text("")
        rebuilt(build)
        Path("build/scripts/fail-1.lua").write_text("return 0\n")
        rebuilt(build)
        Path("build/maps/fail-1.json").unlink()
        rebuilt(build)
        assert build().startswith("up to date: build")
