"""The include rules: nesting, each file once, pasted in place, line maps."""

from __future__ import annotations

import os
from pathlib import Path

import redis
from click.testing import CliRunner

from echomq_scripts.toolchain.cli import cli
from echomq_scripts.toolchain.diagnostics import Diagnostic
from echomq_scripts.toolchain.pipeline import include_syntax
from echomq_scripts.toolchain.resolve import IncludeSite, resolve
from echomq_scripts.toolchain.sources import SourceTree
from tests.support.environment import REPO
from tests.support.golden import check_output


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_each_include_is_pasted_in_place_once_at_its_first_directive(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "main-0.lua": '-- top\n--- @include "includes/a"\nlocal x = 1\n'
            '--- @include "includes/b.lua"\n--- @include "includes/c"\nreturn a() + b() + x\n',
            "includes/a.lua": '--- @include "c"\nlocal function a() return c() end\n',
            "includes/b.lua": "local y = 2\n--- @include \"d\"\n  --- @include './c.lua'\n"
            "local function b() return c() + d() end\n",
            "includes/c.lua": "local function c() return 1 end\n",
            "includes/d.lua": "local function d() return y end\n",
        },
    )
    tree = SourceTree(tmp_path)
    (entry,) = tree.find_scripts()
    resolved, problems = resolve(tree, entry)
    assert problems == []
    assert resolved is not None
    # c is pasted inside a, where the first directive that reaches it stands; b's and the
    # script's own directives for it are dropped. d is pasted where b's directive stood, after
    # b's `local y`, which it reads.
    assert resolved.text == (
        "-- top\n"
        "local function c() return 1 end\n"
        "local function a() return c() end\n"
        "local x = 1\n"
        "local y = 2\n"
        "local function d() return y end\n"
        "local function b() return c() + d() end\n"
        "return a() + b() + x\n"
    )
    assert [f.path for f in resolved.files] == [
        "main-0.lua",
        "includes/a.lua",
        "includes/c.lua",
        "includes/b.lua",
        "includes/d.lua",
    ]
    assert [resolved.origin(row) for row in range(8)] == [
        ("main-0.lua", 1),
        ("includes/c.lua", 1),
        ("includes/a.lua", 2),
        ("main-0.lua", 3),
        ("includes/b.lua", 1),
        ("includes/d.lua", 1),
        ("includes/b.lua", 4),
        ("main-0.lua", 6),
    ]
    assert resolved.include_sites == {
        "includes/a.lua": IncludeSite("main-0.lua", 2, 14),
        "includes/c.lua": IncludeSite("includes/a.lua", 1, 14),
        "includes/b.lua": IncludeSite("main-0.lua", 4, 14),
        "includes/d.lua": IncludeSite("includes/b.lua", 2, 14),
    }


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
    assert [f.path for f in resolved.files][1:] == ["includes/deep/one.lua", "includes/two.lua"]


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


def check(project: Path) -> tuple[int, list[str]]:
    """Exit code and finding lines of `check` in `project` (a traceback has none)."""
    code, output = check_output(project)
    return code, [line for line in output.splitlines() if line.endswith("]")]


def test_an_include_through_a_loop_of_links_is_a_finding_on_its_directive(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / "lua_src",
        {
            "own-0.lua": '--- @include "includes/loop"\nreturn 1\n',
            "dir-0.lua": 'return 1\n--- @include "includes/cycle/x"\n',
        },
    )
    includes = tmp_path / "lua_src" / "includes"
    includes.mkdir()
    (includes / "loop.lua").symlink_to("loop.lua")  # a link to itself
    (includes / "cycle").symlink_to("cycle")  # a directory link to itself
    (tmp_path / "lua_src" / "self-0.lua").symlink_to("self-0.lua")  # a script that is one
    assert check(tmp_path) == (
        1,
        [
            "lua_src/dir-0.lua:2:14: error: included file 'includes/cycle/x.lua' cannot be"
            " reached: its path runs into a loop of symbolic links, or too long a chain of them"
            " [include-missing]",
            "lua_src/own-0.lua:1:14: error: included file 'includes/loop.lua' cannot be"
            " reached: its path runs into a loop of symbolic links, or too long a chain of them"
            " [include-missing]",
            "lua_src/self-0.lua:1:1: error: cannot read the file: it is a loop of symbolic links,"
            " or too long a chain of them [read-error]",
        ],
    )


def test_an_include_path_too_long_for_the_file_system_is_a_finding(tmp_path: Path) -> None:
    long = "a" * 256  # one byte more than a file name may have (ENAMETOOLONG)
    write(tmp_path / "lua_src", {"long-0.lua": f'--- @include "includes/{long}"\nreturn 1\n'})
    (tmp_path / "lua_src" / "includes").mkdir()
    assert check(tmp_path) == (
        1,
        [
            f"lua_src/long-0.lua:1:14: error: included file 'includes/{long}.lua' cannot exist:"
            " its path is longer than the file system allows [include-missing]"
        ],
    )


def chain(root: Path, depth: int) -> None:
    """A script including a1, which includes a2, ... which includes a<depth>: each adds a field
    to one table, as a local each would pass Lua's limit of 200 locals."""
    files = {"deep-0.lua": '--- @include "includes/a1"\nreturn t.f1()\n'}
    for i in range(1, depth):
        files[f"includes/a{i}.lua"] = (
            f'--- @include "a{i + 1}"\nt.f{i} = function() return t.f{i + 1}() end\n'
        )
    files[f"includes/a{depth}.lua"] = f"local t = {{}}\nt.f{depth} = function() return 1 end\n"
    write(root, files)


def test_a_chain_of_ten_thousand_includes_resolves(tmp_path: Path) -> None:
    chain(tmp_path, 10_000)
    tree = SourceTree(tmp_path)
    resolved, problems = resolve(tree, tree.find_scripts()[0])
    assert problems == []
    assert resolved is not None
    assert resolved.text.splitlines()[:2] == [
        "local t = {}",
        "t.f10000 = function() return 1 end",
    ]
    assert resolved.origin(2) == ("includes/a9999.lua", 2)
    assert resolved.include_sites["includes/a10000.lua"] == IncludeSite("includes/a9999.lua", 1, 14)


def test_a_chain_of_a_thousand_includes_checks_clean(tmp_path: Path) -> None:
    chain(tmp_path / "lua_src", 1000)
    assert check(tmp_path) == (
        0,
        [
            "lua_src/deep-0.lua:1:1: warning: script has no header (see docs/authoring.md)"
            " [header-missing]"
        ],
    )


def test_an_include_a_thousand_directories_deep_is_found(tmp_path: Path) -> None:
    # Made and removed a level at a time: a path this long passes the limit on a path's length,
    # and shutil.rmtree (as pytest's clean-up) recurses once per level as os.walk did.
    depth = 1100
    here = tmp_path / "lua_src" / "includes"
    here.mkdir(parents=True)
    previous = Path.cwd()
    os.chdir(here)
    for _ in range(depth):
        os.mkdir("d")
        os.chdir("d")
    Path("x.lua").write_text("local function x() return 1 end\n")
    os.chdir(previous)
    deep = "/".join(["d"] * depth)
    write(tmp_path / "lua_src", {"far-0.lua": f'--- @include "includes/{deep}/x"\nreturn x()\n'})
    try:
        assert check(tmp_path) == (
            0,
            [
                "lua_src/far-0.lua:1:1: warning: script has no header (see docs/authoring.md)"
                " [header-missing]"
            ],
        )
    finally:
        os.chdir(here)
        for _ in range(depth):
            os.chdir("d")
        os.remove("x.lua")
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d")
        os.chdir(previous)


def test_an_include_that_does_not_compile_is_reported_once_at_its_own_line(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / "lua_src",
        {
            "se-1.lua": '--- @include "includes/broken"\nreturn redis.call("GET", KEYS[1])\n',
            "other-0.lua": (
                '--- @include "includes/broken"\n--- @include "includes/open"\nreturn 2\n'
            ),
            "includes/broken.lua": "local function broken()\n  return 1\nend\nlocal y = (\n",
            "includes/open.lua": "local function open(x)\n  if x then\n    return 1\nend\n",
        },
    )
    # Lua alone would name the includer's next line (`se-1.lua:2:1: unexpected symbol near
    # 'return'`), and its "at line" the resolved script's line.
    assert check(tmp_path) == (
        1,
        [
            "lua_src/includes/broken.lua:4:12: error: unexpected symbol near '<eof>' [syntax]",
            "lua_src/includes/open.lua:4:4: error: 'end' expected (to close 'function' at line 1)"
            " near '<eof>' [syntax]",
        ],
    )


def test_an_include_that_compiles_alone_but_not_in_its_script_is_mapped(tmp_path: Path) -> None:
    write(
        tmp_path / "lua_src",
        {
            "early-0.lua": '--- @include "includes/returns"\nreturn 2\n',
            "includes/returns.lua": "local function one()\n  return 1\nend\nreturn one()\n",
        },
    )
    # A `return` must end its block: fine at the end of the include, not before the script.
    assert check(tmp_path) == (
        1,
        ["lua_src/early-0.lua:2:1: error: '<eof>' expected near 'return' [syntax]"],
    )


def test_every_include_of_this_repository_compiles_alone() -> None:
    tree = SourceTree(REPO / "lua_src")
    includes = sorted(name for name in tree.snapshot if name.startswith("includes/"))
    assert len(includes) > 50
    verdicts: dict[str, Diagnostic | None] = {}
    for name in includes:
        source = tree.read(name)
        assert source is not None
        assert include_syntax(source, verdicts) is None, name


def test_a_chain_of_links_longer_than_the_system_follows_is_a_finding(tmp_path: Path) -> None:
    # The system follows 40 links and then fails (ELOOP); os.path.realpath, asked first, would
    # recurse once per link and raise RecursionError.
    includes = tmp_path / "lua_src" / "includes"
    includes.mkdir(parents=True)
    (includes / "l1100.lua").write_text("local function x() return 1 end\n")
    for i in range(1099, 0, -1):
        (includes / f"l{i}.lua").symlink_to(f"l{i + 1}.lua")
    write(tmp_path / "lua_src", {"chain-0.lua": '--- @include "includes/l1"\nreturn x()\n'})
    (tmp_path / "lua_src" / "linked-0.lua").symlink_to("includes/l1.lua")
    assert check(tmp_path) == (
        1,
        [
            "lua_src/chain-0.lua:1:14: error: included file 'includes/l1.lua' cannot be reached:"
            " its path runs into a loop of symbolic links, or too long a chain of them"
            " [include-missing]",
            "lua_src/linked-0.lua:1:1: error: cannot read the file: it is a loop of symbolic"
            " links, or too long a chain of them [read-error]",
        ],
    )


def test_an_include_reads_a_local_its_includer_declares_before_the_directive(
    tmp_path: Path, r: redis.Redis
) -> None:
    # BullMQ's includes/removeJobWithChildren.lua does this with `local rcall = redis.call`.
    write(
        tmp_path / "lua_src",
        {
            "add-1.lua": '--- @include "includes/outer"\nreturn outer(KEYS[1])\n',
            "includes/outer.lua": "local rcall = redis.call\n"
            '--- @include "inner"\n'
            "local function outer(key)\n  return inner(key, 41)\nend\n",
            "includes/inner.lua": "local function inner(key, n)\n"
            '  return rcall("INCRBY", key, n)\nend\n',
        },
    )
    assert check(tmp_path) == (
        0,
        [
            "lua_src/add-1.lua:1:1: warning: script has no header (see docs/authoring.md),"
            " so its keys are named by position [header-missing]"
        ],
    )
    out = tmp_path / "build"
    result = CliRunner().invoke(
        cli, ["build", "--src", str(tmp_path / "lua_src"), "--out", str(out), "--no-cache"]
    )
    assert result.exit_code == 0, result.output
    script = (out / "scripts" / "add-1.lua").read_text(encoding="utf-8")
    assert script.splitlines()[:3] == [
        "local rcall = redis.call",
        "local function inner(key, n)",
        '  return rcall("INCRBY", key, n)',
    ]
    r.set("n", 1)
    assert r.eval(script, 1, "n") == 42
    assert r.get("n") == b"42"
