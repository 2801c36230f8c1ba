"""The include rules: nesting, each file once, dependency order, placement, line maps."""

from __future__ import annotations

from pathlib import Path

from echomq_scripts.toolchain.resolve import resolve
from echomq_scripts.toolchain.sources import SourceTree


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_nested_includes_are_emitted_once_in_dependency_order(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "main-0.lua": '-- top\n--- @include "includes/a"\nlocal x = 1\n'
            '--- @include "includes/b.lua"\nreturn a() + b() + x\n',
            "includes/a.lua": '--- @include "c"\nlocal function a() return c() end\n',
            "includes/b.lua": '--- @include "c"\nlocal function b() return c() end\n',
            "includes/c.lua": "local function c() return 1 end\n",
        },
    )
    tree = SourceTree(tmp_path)
    (entry,) = tree.find_scripts()
    resolved, problems = resolve(tree, entry)
    assert problems == []
    assert resolved is not None
    assert resolved.text == (
        "-- top\n"
        "local function c() return 1 end\n"
        "local function a() return c() end\n"
        "local function b() return c() end\n"
        "local x = 1\n"
        "return a() + b() + x\n"
    )
    assert [f.path for f in resolved.files] == [
        "main-0.lua",
        "includes/c.lua",
        "includes/a.lua",
        "includes/b.lua",
    ]
    assert [resolved.origin(row) for row in range(6)] == [
        ("main-0.lua", 1),
        ("includes/c.lua", 1),
        ("includes/a.lua", 2),
        ("includes/b.lua", 2),
        ("main-0.lua", 3),
        ("main-0.lua", 5),
    ]


def test_a_script_without_includes_is_its_own_text(tmp_path: Path) -> None:
    write(tmp_path, {"plain-1.lua": 'return redis.call("GET", KEYS[1])\n'})
    tree = SourceTree(tmp_path)
    resolved, _ = resolve(tree, tree.find_scripts()[0])
    assert resolved is not None
    assert resolved.text == (tmp_path / "plain-1.lua").read_text()


def test_crlf_sources_resolve_to_lf(tmp_path: Path) -> None:
    (tmp_path / "crlf-0.lua").write_bytes(b"local x = 1\r\nreturn x\r\n")
    tree = SourceTree(tmp_path)
    resolved, _ = resolve(tree, tree.find_scripts()[0])
    assert resolved is not None
    assert resolved.text == "local x = 1\nreturn x\n"


def test_include_inside_root_through_dotdot_is_allowed(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "main-0.lua": '--- @include "includes/deep/one"\nreturn one()\n',
            "includes/deep/one.lua": (
                '--- @include "../two"\nlocal function one() return two() end\n'
            ),
            "includes/two.lua": "local function two() return 2 end\n",
        },
    )
    tree = SourceTree(tmp_path)
    resolved, problems = resolve(tree, tree.find_scripts()[0])
    assert problems == []
    assert resolved is not None
    assert [f.path for f in resolved.files][1:] == ["includes/two.lua", "includes/deep/one.lua"]


def test_an_unreadable_include_is_reported_where_it_is_included(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"main-0.lua": '--- @include "includes/locked"\nreturn 1\n', "includes/locked.lua": ""},
    )
    # The snapshot records a file it could not read as None (see snapshot.take_snapshot).
    tree = SourceTree(
        tmp_path,
        {"main-0.lua": (tmp_path / "main-0.lua").read_bytes(), "includes/locked.lua": None},
    )
    resolved, problems = resolve(tree, tree.find_scripts()[0])
    assert resolved is None
    assert problems == []
    assert [d.format_text() for d in tree.diagnostics] == [
        "includes/locked.lua:1:1: error: cannot read the file [read-error]"
    ]


def test_an_include_linked_to_nothing_is_reported_as_unreadable(tmp_path: Path) -> None:
    write(tmp_path, {"main-0.lua": '--- @include "includes/gone"\nreturn 1\n'})
    (tmp_path / "includes").mkdir()
    (tmp_path / "includes" / "gone.lua").symlink_to("removed.lua")
    tree = SourceTree(tmp_path)
    resolved, problems = resolve(tree, tree.find_scripts()[0])
    assert resolved is None
    assert problems == []
    assert [d.format_text() for d in tree.diagnostics] == [
        "includes/gone.lua:1:1: error: cannot read the file: it is a broken symbolic link"
        " [read-error]"
    ]
