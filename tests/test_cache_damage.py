"""The caches never crash a build and never change what it reports: a damaged analysis entry is a
miss, a source file of any name is digested, and a deleted or edited output is put back."""

from __future__ import annotations

import json
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
    assert "[shadowed-local]" in cold.stderr
    cache = project.parent / "cache"
    assert invoke("check", "--cache-dir", str(cache)).stderr == cold.stderr
    entries = sorted(cache.glob("*.json"))
    assert len(entries) == 3  # one per script
    goods = [json.loads(entry.read_bytes()) for entry in entries]
    for entry, good in zip(entries, goods, strict=True):
        assert good["findings"]  # every script of the fixture has one to damage
        entry.write_text(json.dumps(DAMAGES[name](good)))
    again = invoke("check", "--cache-dir", str(cache))
    assert (again.exit_code, again.exception) == (0, None)
    assert again.stderr == cold.stderr
    # Analysed afresh, and stored again as a cold build stores it.
    assert [json.loads(entry.read_bytes()) for entry in entries] == goods
