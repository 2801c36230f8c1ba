"""The fuzz test (issue 16): whatever tree and output path `build` and `check` are given, they
never crash, never hang, print findings of one shape, and never touch anything after a failure.

Each example is a whole project in a temporary directory (`lua_src/` scripts and includes, maybe a
header, maybe a `pyproject.toml`, maybe a previous build in `--out`), drawn from one class:

- `random-bytes`: scripts and includes of random bytes.
- `mutated-real`: this repository's own scripts and includes, bytes and lines deleted, inserted,
  swapped, truncated and duplicated.
- `broken-includes`: missing, cyclic, escaping (`../`, absolute), through links out of the tree,
  dangling and looping, over-long path components, malformed directives.
- `broken-headers`: `@key`, `@arg`, `@return`, `@error` lines of wrong and colliding names, wrong
  types, deeply nested `list[`.
- `include-graphs`: include chains up to `scale.depth` deep, and wide random graphs, some cyclic.
- `large-files`: many lines, long lines, long expression and call chains, deep nesting.
- `encodings`: non-UTF-8 bytes, CRLF and lone CR line ends, a BOM, NUL bytes.
- `line-ends`: a tree, and the same tree with CRLF, CR or LFCR line ends: the same findings at
  the same lines and columns, and the same build, byte for byte.
- `symlinks`: scripts and include directories linked out of the tree, dangling links, loops.
- `odd-names`: spaces, newlines, non-UTF-8 bytes, over-long names, bad key counts.
- `output-paths`: `--out` at a regular file, under one, at a socket, a device, a dangling link, a
  link loop, the sources themselves, a foreign directory, an over-long or odd name; a generated
  package that cannot be written.
- `pyproject`: broken and odd project settings.
- `special-files`: named pipes as scripts, includes, `pyproject.toml` and `--out`: these can hang,
  so they run in a subprocess with a timeout; every other class runs in-process.
- `releases`: `build --previous` given a manifest, a bundle or a build directory of any shape:
  damaged, cut short, nested deep, a member that is a link, a pipe or longer than the bundle.
- `explain`: `explain SCRIPT:LINE` with odd locations, on a crafted or damaged line map.
- `cache-damage`: a build with a cache through the console script (which replays a recorded
  build), then one file of the cache or of the output damaged or deleted, and the same build
  again: the findings and the exit code are those of the first build, and the output is whole.

For every example: the exit code is 0, 1 or 2 and no exception escapes (no traceback); every
finding line is `<src>/<file>:<line>:<col>: <severity>: <message> [<code>]` and `--format json`
prints a list of such findings; a run that fails, and every `check`, leaves the whole temporary
tree (sources, previous output, generated package) byte- and mode-identical; a build that passes
changes nothing but its output and generated package, and building the same tree again elsewhere
gives the same bytes.

`make test` runs EMQ_FUZZ_EXAMPLES examples per class (default 40, a quarter of that for the
named pipes, each a subprocess; about a minute in all); `make soak` runs the test marked soak,
EMQ_FUZZ_SOAK_EXAMPLES per class (default 1,000) at larger sizes (include chains 1,500 deep,
expression chains of 6,000 terms, files of 200,000 lines). Hypothesis keeps no database here:
each run explores anew, and a failure prints the example and a `@reproduce_failure` blob. The
crashes this test has found are kept as small regression tests in tests/test_fuzz_found.py.
"""

from __future__ import annotations

import atexit
import gzip
import io
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import click
import hypothesis.strategies as st
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings

from echomq_scripts.toolchain import entry
from echomq_scripts.toolchain.cli import cli
from echomq_scripts.toolchain.diagnostics import CODES
from tests.support.environment import REPO

# -- sizes -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scale:
    """How big the generated inputs get: `make test` keeps them small, `make soak` does not."""

    examples: int
    depth: int  # the longest include chain
    width: int  # the most includes in one graph
    terms: int  # the longest expression or call chain
    lines: int  # the most lines of a large file
    line_bytes: int  # the longest line of a large file
    nesting: int  # the deepest `list[` in a header


BOUNDED = Scale(
    examples=int(os.environ.get("EMQ_FUZZ_EXAMPLES", "40")),
    depth=300,
    width=60,
    terms=1500,
    lines=20_000,
    line_bytes=200_000,
    nesting=700,
)
SOAK = Scale(
    examples=int(os.environ.get("EMQ_FUZZ_SOAK_EXAMPLES", "1000")),
    depth=1500,
    width=400,
    terms=6000,
    lines=200_000,
    line_bytes=4_000_000,
    nesting=2000,
)

# A hang is a failure too; a subprocess run longer than this is one.
TIMEOUT = 15

# -- projects ----------------------------------------------------------------------------------

# A tree entry: ("file", bytes), ("link", target), ("fifo", b""), ("dir", b"").
# Paths and link targets are bytes (a name need not be UTF-8); ROOT in a target is replaced by
# the example's temporary directory, so a link can lead anywhere in it, e.g. out of lua_src.
Entry = tuple[str, bytes]
ROOT = b"@ROOT@"

OUT_KINDS = (
    "previous",  # a previous build, copied from the good build
    "fresh",  # nothing there yet
    "fresh-deep",  # nothing there, nor its parents
    "file",  # a regular file
    "under-file",  # a path below a regular file
    "socket",  # a Unix socket
    "device",  # a character device (a copy of /dev/null), when the machine lets us make one
    "dangling-link",  # a link to nothing
    "link-to-build",  # a link to a previous build outside the project
    "link-loop",  # a link to itself
    "src",  # the source directory
    "project",  # the project directory, sources and all
    "foreign",  # a directory of files the build did not write
    "long",  # a name over 255 bytes
    "odd",  # a name with a space, a newline and a byte that is not UTF-8
    "read-only-parent",  # inside a directory of mode 0555 (no obstacle to root)
)
HANGING_OUT_KINDS = ("fifo", "fifo-in-previous")  # a named pipe at --out, or in the build


@dataclass(frozen=True)
class Project:
    """One example: the tree under the project directory, and the command line to run on it."""

    files: dict[bytes, Entry]
    command: tuple[str, ...] = ("build",)  # ("build",), ("check",) or ("build", "--check")
    output_format: str = "text"
    strict: str | None = None  # "--strict", "--no-strict" or None
    out: str = "previous"
    cache: bool = False  # --cache-dir (outside the project) instead of --no-cache
    line_end: bytes | None = None  # line-ends: the line end the tree is built with again
    previous: bytes | None = None  # releases: `--previous`, a path in the temporary directory
    line_map: bytes | None = None  # explain: the bytes put in place of the script's line map
    # cache-damage: whether in the output (else the cache), which file, where, what bytes
    damage: tuple[bool, int, int, bytes] | None = None

    @property
    def hangs(self) -> bool:
        """Whether running it could hang: then it runs in a subprocess with a timeout."""
        return self.out in HANGING_OUT_KINDS or any(
            kind == "fifo" for kind, _ in self.files.values()
        )


# The good project every previous build is built from.
GOOD_SCRIPT = b"""--- Reads a field of a job's hash.
--- @key job  the job hash
--- @arg field  string  the field
--- @return string  the field's value
--- @include "includes/get"
return get(KEYS[1], ARGV[1])
"""
GOOD_INCLUDE = b"""local function get(key, name)
  return redis.call("HGET", key, name)
end
"""
GOOD_FILES: dict[bytes, Entry] = {
    b"lua_src/getField-1.lua": ("file", GOOD_SCRIPT),
    b"lua_src/includes/get.lua": ("file", GOOD_INCLUDE),
}

REAL_SCRIPTS = sorted((REPO / "lua_src").glob("*.lua"))
REAL_INCLUDES = {
    path.name.encode(): path.read_bytes()
    for path in sorted((REPO / "lua_src/includes").glob("*.lua"))
}

# -- strategies: pieces ------------------------------------------------------------------------

IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True)
SCRIPT_NAME = st.builds(lambda name, keys: f"{name}-{keys}.lua".encode(), IDENT, st.integers(0, 20))
# Tokens and bytes that lexers, header parsers and line splitters trip over.
NASTY = [
    b"\x00",
    b"\xff",
    b"\xe9",
    b"\xc0\xaf",  # an overlong encoding
    b"\xed\xa0\x80",  # an encoded surrogate
    b"\xef\xbb\xbf",  # a BOM
    b"\r",
    b"\r\n",
    b"\n\r",
    b"\xe2\x80\xa8",  # LINE SEPARATOR
    b"\t",
    b"\\",
    b'"',
    b"'",
    b"[[",
    b"]]",
    b"--[[",
    b"--[==[",
    b"(",
    b")",
    b"{",
    b"}",
    b"end",
    b"function",
    b"local",
    b"return",
    b"KEYS[",
    b"KEYS[0]",
    b"KEYS[999]",
    b"KEYS[1.5]",
    b"KEYS[-1]",
    b"ARGV[99999999999999999999]",
    b"unpack(KEYS)",
    b"...",
    b"--- @include ",
    b'--- @include "includes/',
    b"--- @key ",
    b"--- @arg ",
    b"--- @return ",
    b"--- @error -",
    b"-- echomq: ignore[",
    b"\n--- ",
    b"1e309",
    b"0x",
    b"#",
    b"%",
    b"..",
    b"\xc2\x85",  # NEL
]
nasty = st.sampled_from(NASTY)
fragment = st.one_of(nasty, st.binary(max_size=8))


@st.composite
def mutated(draw: st.DrawFn, data: bytes, most: int = 6) -> bytes:
    """`data` with a few byte- and line-level edits."""
    for _ in range(draw(st.integers(1, most))):
        n = len(data)
        op = draw(
            st.sampled_from(
                [
                    "delete",
                    "insert",
                    "swap",
                    "truncate",
                    "duplicate",
                    "delete-line",
                    "duplicate-line",
                    "swap-lines",
                    "replace-line",
                ]
            )
        )
        at = draw(st.integers(0, n))
        if op == "delete":
            data = data[:at] + data[at + draw(st.integers(1, 64)) :]
        elif op == "insert":
            data = data[:at] + draw(fragment) + data[at:]
        elif op == "swap" and n >= 2:
            i, j = sorted((draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))))
            data = data[:i] + data[j : j + 1] + data[i + 1 : j] + data[i : i + 1] + data[j + 1 :]
        elif op == "truncate":
            data = data[:at]
        elif op == "duplicate":
            data = data + data[at:]
        else:
            lines = data.split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            j = draw(st.integers(0, len(lines) - 1))
            if op == "delete-line":
                del lines[i]
            elif op == "duplicate-line":
                lines.insert(j, lines[i])
            elif op == "swap-lines":
                lines[i], lines[j] = lines[j], lines[i]
            else:
                lines[i] = b"".join(draw(st.lists(fragment, max_size=6)))
            data = b"\n".join(lines)
    return data


@st.composite
def options(draw: st.DrawFn, project: Project) -> Project:
    """The command line to run on a tree: command, format, strictness, cache."""
    return replace(
        project,
        command=draw(st.sampled_from([("build",), ("build",), ("check",), ("build", "--check")])),
        output_format=draw(st.sampled_from(["text", "json"])),
        strict=draw(st.sampled_from([None, None, "--strict", "--no-strict"])),
        cache=draw(st.booleans()),
    )


def script(body: bytes, header: bytes = b"") -> bytes:
    return header + body


def files(**named: bytes) -> dict[bytes, Entry]:
    return {name.encode(): ("file", data) for name, data in named.items()}


# -- strategies: classes -----------------------------------------------------------------------

Strategy = Callable[[Scale], st.SearchStrategy[Project]]


@st.composite
def random_bytes(draw: st.DrawFn, scale: Scale) -> Project:
    tree: dict[bytes, Entry] = {}
    for name in draw(st.lists(SCRIPT_NAME, min_size=1, max_size=3, unique=True)):
        tree[b"lua_src/" + name] = ("file", draw(st.binary(max_size=400)))
    for i in range(draw(st.integers(0, 2))):
        tree[b"lua_src/includes/r%d.lua" % i] = ("file", draw(st.binary(max_size=200)))
    return draw(options(Project(tree)))


@st.composite
def mutated_real(draw: st.DrawFn, scale: Scale) -> Project:
    tree: dict[bytes, Entry] = {
        b"lua_src/includes/" + name: ("file", data) for name, data in REAL_INCLUDES.items()
    }
    for path in draw(st.lists(st.sampled_from(REAL_SCRIPTS), min_size=1, max_size=2, unique=True)):
        data = path.read_bytes()
        if draw(st.integers(0, 4)):
            data = draw(mutated(data))
        tree[b"lua_src/" + path.name.encode()] = ("file", data)
    for name in draw(st.lists(st.sampled_from(sorted(REAL_INCLUDES)), max_size=3, unique=True)):
        tree[b"lua_src/includes/" + name] = ("file", draw(mutated(REAL_INCLUDES[name])))
    return draw(options(Project(tree)))


INCLUDE_TARGETS = [
    b"includes/missing",
    b"includes/self",  # includes itself
    b"includes/a",  # a includes b includes a
    b"../outside/secret",
    b"includes/../../outside/secret",
    b"/etc/hostname",
    ROOT + b"/outside/secret",
    b"includes/out-link",  # a link out of the tree
    b"includes/dangling",
    b"includes/loop",  # a link to itself
    b"includes/dir",  # a directory
    b"includes/" + b"x" * 300,  # a component over 255 bytes
    b"includes/" + b"y" * 250 + b"/" + b"z" * 250,
    b"includes\\get",
    b"C:/get",
    b"",
    b".",
    b"includes/",
    b"includes/get.lua.lua",
    b"includes/./get",
    b"includes//get",
    b"includes/get\x00",
    b"includes/\xff",
    b"includes/get",  # the good one, perhaps twice
    b"includes/syntax",  # a syntax error inside an include
]
DIRECTIVE_FORMS = [
    b'--- @include "%s"',
    b"--- @include '%s'",
    b"---@include %s",
    b'--- @include "%s',
    b'--- @include "%s" trailing',
    b'  --- @include "%s"',
    b'--- @include  "%s"  ',
    b'--- @includes "%s"',
    b'-- @include "%s"',
    b'--- @include "%s"\r',
]


@st.composite
def broken_includes(draw: st.DrawFn, scale: Scale) -> Project:
    tree = dict(GOOD_FILES)
    tree[b"outside/secret.lua"] = ("file", b"local function secret() return 1 end\n")
    tree[b"lua_src/includes/self.lua"] = ("file", b'--- @include "self"\nlocal s = 1\n')
    tree[b"lua_src/includes/a.lua"] = ("file", b'--- @include "b"\nlocal function a() end\n')
    tree[b"lua_src/includes/b.lua"] = ("file", b'--- @include "a"\nlocal function b() end\n')
    tree[b"lua_src/includes/out-link.lua"] = ("link", ROOT + b"/outside/secret.lua")
    tree[b"lua_src/includes/dangling.lua"] = ("link", ROOT + b"/nowhere.lua")
    tree[b"lua_src/includes/loop.lua"] = ("link", b"loop.lua")
    tree[b"lua_src/includes/dir.lua"] = ("dir", b"")
    tree[b"lua_src/includes/syntax.lua"] = ("file", b"local function s() end\nlocal y = (\n")
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        target = draw(st.sampled_from(INCLUDE_TARGETS))
        if draw(st.booleans()):
            target += b".lua"
        lines.append(draw(st.sampled_from(DIRECTIVE_FORMS)) % target)
    body = b"\n".join(lines) + b"\nreturn redis.call('GET', KEYS[1])\n"
    where = draw(st.sampled_from([b"lua_src/inc-1.lua", b"lua_src/includes/get.lua"]))
    if where == b"lua_src/inc-1.lua":
        tree[where] = ("file", body)
    else:  # the broken directives in an include of the good script
        tree[where] = ("file", b"\n".join(lines) + b"\n" + GOOD_INCLUDE)
    return draw(options(Project(tree)))


HEADER_NAMES = [
    b"job",
    b"_job",
    b"job_",
    b"client",
    b"client_",
    b"_script",
    b"script",
    b"keys",
    b"args",
    b"self",
    b"end",
    b"and",
    b"None",
    b"True",
    b"class",
    b"1job",
    b"j\xc3\xa9",
    b"job-id",
    b"",
    b"a" * 300,
]
ARG_TYPES = [
    b"string",
    b"int",
    b"number",
    b"bool",
    b"json",
    b"msgpack",
    b"bytes",
    b"id",
    b"int(1..)",
    b"int(..0)",
    b"int(5..1)",
    b"string(non-empty)",
    b"enum(a|b)",
    b"enum()",
    b"seconds",
    b"int(",
    b"",
]
RETURN_TYPES = [
    b"int",
    b"string",
    b"hash",
    b"nil",
    b"tuple[int, string]",
    b"tuple[]",
    b"list[int]",
    b"list[",
    b"list[int",
    b"int]",
    b"map[string, int]",
    b"tuple[int,, int]",
    b"unknown",
    b"",
]


@st.composite
def header_type(draw: st.DrawFn, scale: Scale) -> bytes:
    kind = draw(st.integers(0, 3))
    if kind == 0:
        depth = draw(st.integers(1, scale.nesting))
        inner = draw(st.sampled_from([b"int", b"string", b""]))
        closing = depth if draw(st.booleans()) else draw(st.integers(0, depth))
        return b"list[" * depth + inner + b"]" * closing
    if kind == 1:
        return draw(st.sampled_from(RETURN_TYPES))
    return draw(st.sampled_from(RETURN_TYPES + ARG_TYPES))


@st.composite
def header_line(draw: st.DrawFn, scale: Scale) -> bytes:
    tag = draw(
        st.sampled_from(
            [b"@key", b"@key...", b"@arg", b"@arg...", b"@return", b"@error", b"@unknown", b"@"]
        )
    )
    name = draw(st.sampled_from(HEADER_NAMES) | IDENT.map(str.encode))
    if tag.startswith(b"@key"):
        rest = name + b"  " + draw(st.sampled_from([b"the key", b"(unused) kept", b""]))
    elif tag.startswith(b"@arg"):
        rest = name + b" " + draw(st.sampled_from(ARG_TYPES)) + b" desc"
    elif tag == b"@return":
        rest = draw(header_type(scale)) + b"  desc"
    elif tag == b"@error":
        code = draw(st.sampled_from([b"-1", b"-6", b"-11", b"-12", b"-0", b"1", b"x", b""]))
        rest = (
            code + b" " + draw(st.sampled_from([b"JobNotExist", b"JobLockMismatch", b"Nope", b""]))
        )
    else:
        rest = name
    prefix = draw(st.sampled_from([b"--- ", b"---", b"---  ", b" --- ", b"--- -"]))
    return prefix + tag + b" " + rest


@st.composite
def broken_headers(draw: st.DrawFn, scale: Scale) -> Project:
    keys = draw(st.integers(0, 3))
    lines = [draw(st.sampled_from([b"--- Does a thing.", b"---", b"", b"--- \xff"]))]
    lines += draw(st.lists(header_line(scale), max_size=8))
    if draw(st.booleans()):
        lines = draw(st.permutations(lines))
    reads = b"".join(b"local k%d = KEYS[%d]\n" % (i, i) for i in range(1, keys + 1))
    args = b"".join(
        b"local a%d = ARGV[%d]\n" % (i, i) for i in range(1, draw(st.integers(0, 3)) + 1)
    )
    body = (
        reads + args + draw(st.sampled_from([b"return 1\n", b"return -6\n", b"return {1, 'a'}\n"]))
    )
    tree = {b"lua_src/hdr-%d.lua" % keys: ("file", b"\n".join(lines) + b"\n" + body)}
    if draw(st.booleans()):
        tree[b"pyproject.toml"] = ("file", b"[tool.echomq-scripts]\nrequire-header = true\n")
    project = draw(options(Project(tree)))
    if draw(st.booleans()):  # the wrappers are where colliding names break
        project = with_package(project)
    return project


def with_package(project: Project) -> Project:
    tree = dict(project.files)
    old = tree.get(b"pyproject.toml", ("file", b"[tool.echomq-scripts]\n"))[1]
    if b"[tool.echomq-scripts]" not in old:
        old += b"\n[tool.echomq-scripts]\n"
    tree[b"pyproject.toml"] = ("file", old + b'python-package = "gen/pkg"\n')
    return replace(project, files=tree)


@st.composite
def include_graphs(draw: st.DrawFn, scale: Scale) -> Project:
    shape = draw(st.sampled_from(["chain", "wide", "random"]))
    if shape == "chain":
        n = draw(st.integers(1, scale.depth))
        edges = {i: [i + 1] for i in range(n - 1)}
    elif shape == "wide":
        n = draw(st.integers(1, scale.width))
        edges = {0: list(range(1, n))}
    else:
        n = draw(st.integers(1, scale.width))
        edges = {
            i: draw(st.lists(st.integers(i + 1, n - 1), max_size=4, unique=True))
            if i < n - 1
            else []
            for i in range(n)
        }
    cyclic = draw(st.integers(0, 3)) == 0
    if cyclic:
        edges.setdefault(n - 1, []).append(draw(st.integers(0, n - 1)))
    layout = draw(st.sampled_from(["flat", "nested"]))
    tree: dict[bytes, Entry] = {}

    def path(i: int) -> bytes:
        # nested: each include one directory deeper, named relative to the includer
        return b"i%d.lua" % i if layout == "flat" else b"d/" * min(i, 40) + b"i%d.lua" % i

    def name_from(i: int, j: int) -> bytes:
        if layout == "flat":
            return b"i%d" % j
        return b"../" * min(i, 40) + path(j)[:-4]

    # Each include a local function, which Lua allows 200 of in a script, or a block, which
    # lets a graph of any size build.
    functions = draw(st.booleans())
    for i in range(n):
        directives = b"".join(b'--- @include "%s"\n' % name_from(i, j) for j in edges.get(i, []))
        calls = b"".join(b"  f%d()\n" % j for j in edges.get(i, []))
        body = b"local function f%d()\n%s  return %d\nend\n" % (i, calls, i)
        if not functions:
            body = b"do\n  redis.call('PING', %d)\nend\n" % i
        tree[b"lua_src/includes/" + path(i)] = ("file", directives + body)
    roots = [0] if draw(st.booleans()) else list(range(min(n, 8)))
    head = b"".join(b'--- @include "includes/%s"\n' % path(r)[:-4] for r in roots)
    tree[b"lua_src/graph-0.lua"] = (
        "file",
        head + (b"return f0()\n" if functions else b"return 1\n"),
    )
    return draw(options(Project(tree)))


@st.composite
def large_files(draw: st.DrawFn, scale: Scale) -> Project:
    kind = draw(
        st.sampled_from(
            [
                "lines",
                "long-line",
                "sum",
                "concat",
                "calls",
                "methods",
                "fields",
                "parens",
                "tables",
                "blocks",
                "locals",
                "functions",
                "index",
                "unary",
            ]
        )
    )
    n = draw(st.integers(1, scale.terms))
    if kind == "lines":
        count = draw(st.integers(1, scale.lines))
        body = b"local x = 1\n" + b"x = x + 1\n" * count + b"return x\n"
    elif kind == "long-line":
        size = draw(st.integers(1, scale.line_bytes))
        body = b'local s = "' + b"a" * size + b'"\nreturn #s\n'
    elif kind == "sum":
        body = b"return " + b" + ".join([b"1"] * n) + b"\n"
    elif kind == "concat":
        body = b"return " + b" .. ".join([b"'a'"] * n) + b"\n"
    elif kind == "calls":
        body = b"local function f() return f end\nreturn f" + b"()" * n + b" and 1\n"
    elif kind == "methods":
        body = (
            b"local o = {}\nfunction o:m() return self end\nlocal r = o" + b":m()" * n + b"\n"
            b"return 1\n"
        )
    elif kind == "fields":
        body = b"local t = {}\nreturn t" + b".a" * n + b"\n"
    elif kind == "parens":
        body = b"return " + b"(" * n + b"1" + b")" * n + b"\n"
    elif kind == "tables":
        body = b"return #" + b"{" * n + b"}" * n + b"\n"
    elif kind == "blocks":
        body = b"do " * n + b"local x = 1 " + b"end " * n + b"\nreturn 1\n"
    elif kind == "locals":
        body = b"".join(b"local v%d = %d\n" % (i, i) for i in range(n)) + b"return v0\n"
    elif kind == "index":
        body = b"local t = {}\nreturn t" + b"[1]" * n + b"\n"
    elif kind == "unary":
        body = b"return " + draw(st.sampled_from([b"not ", b"- ", b"#"])) * n + b"1\n"
    else:
        body = b"return " + b"(function() return " * n + b"1" + b" end)()" * n + b"\n"
    keys = b"local k = KEYS[1]\n" if draw(st.booleans()) else b""
    name = b"lua_src/big-%d.lua" % (1 if keys else 0)
    return draw(options(Project({name: ("file", keys + body)})))


@st.composite
def encodings(draw: st.DrawFn, scale: Scale) -> Project:
    """Good and real scripts with their line ends, BOMs, NULs and bytes changed."""
    real = draw(st.sampled_from(REAL_SCRIPTS))
    tree: dict[bytes, Entry] = {
        b"lua_src/includes/" + name: ("file", data) for name, data in REAL_INCLUDES.items()
    }
    tree.update(GOOD_FILES)
    tree[b"lua_src/" + real.name.encode()] = ("file", real.read_bytes())
    targets = draw(st.lists(st.sampled_from(sorted(tree)), min_size=1, max_size=3, unique=True))
    for target in targets:
        data = tree[target][1]
        for change in draw(st.lists(st.sampled_from(ENCODING_CHANGES), min_size=1, max_size=3)):
            data = change(data, draw(st.integers(0, max(len(data) - 1, 0))))
        tree[target] = ("file", data)
    return draw(options(Project(tree)))


@st.composite
def line_ends(draw: st.DrawFn, scale: Scale) -> Project:
    """A tree with LF line ends, built again with CRLF, CR or LFCR ones (`check_line_ends`)."""
    base = draw(st.sampled_from([mutated_real, broken_headers, encodings, large_files]))
    project = draw(base(scale))
    # Only LF to begin with: a CR already there would pair with a converted LF differently.
    tree = {
        name: (kind, data.replace(b"\r", b"") if kind == "file" else data)
        for name, (kind, data) in project.files.items()
    }
    end = draw(st.sampled_from([b"\r\n", b"\r", b"\n\r"]))
    return replace(project, files=tree, line_end=end, cache=False)


ENCODING_CHANGES: list[Callable[[bytes, int], bytes]] = [
    lambda data, at: data.replace(b"\n", b"\r\n"),
    lambda data, at: data.replace(b"\n", b"\r"),
    lambda data, at: data.replace(b"\n", b"\n\r"),
    lambda data, at: data[:at] + data[at:].replace(b"\n", b"\r", 1),
    lambda data, at: b"\xef\xbb\xbf" + data,
    lambda data, at: data[:at] + b"\xef\xbb\xbf" + data[at:],
    lambda data, at: data[:at] + b"\x00" + data[at:],
    lambda data, at: data[:at] + b"\xff\xfe" + data[at:],
    lambda data, at: data[:at] + b"\xe9" + data[at:],
    lambda data, at: data[:at] + b"\xed\xa0\x80" + data[at:],
    lambda data, at: data[:at] + b"\xe2\x80\xa8" + data[at:],
    lambda data, at: data.decode("utf-8", "replace").encode("utf-16"),
    lambda data, at: data.decode("utf-8", "replace").encode("latin-1", "replace"),
]


@st.composite
def symlinks(draw: st.DrawFn, scale: Scale) -> Project:
    tree = dict(GOOD_FILES)
    tree[b"outside/ext-1.lua"] = ("file", b"return redis.call('GET', KEYS[1])\n")
    tree[b"outside/incs/get.lua"] = ("file", GOOD_INCLUDE)
    choices: dict[bytes, Entry] = {
        b"lua_src/out-1.lua": ("link", ROOT + b"/outside/ext-1.lua"),
        b"lua_src/rel-1.lua": ("link", b"../../outside/ext-1.lua"),
        b"lua_src/dangling-1.lua": ("link", b"nowhere-1.lua"),
        b"lua_src/self-1.lua": ("link", b"self-1.lua"),
        b"lua_src/ping-1.lua": ("link", b"pong-1.lua"),
        b"lua_src/pong-1.lua": ("link", b"ping-1.lua"),
        b"lua_src/alias-1.lua": ("link", b"getField-1.lua"),
        b"lua_src/inner-1.lua": ("link", b"includes/get.lua"),
        b"lua_src/dir-1.lua": ("link", b"includes"),
        b"lua_src/includes": ("link", ROOT + b"/outside/incs"),
        b"lua_src/includes/up": ("link", b".."),
        b"lua_src/includes/root": ("link", b"/"),
        b"lua_src/includes/x/y": ("link", b"../../includes"),
        b"lua_src/sub": ("link", b"includes"),
        b"lua_src/includes/get.lua": ("link", ROOT + b"/outside/incs/get.lua"),
        b"lua_src/includes/nowhere.lua": ("link", b"gone/gone.lua"),
        b"pyproject.toml": ("link", ROOT + b"/nowhere.toml"),
    }
    for name in draw(
        st.lists(st.sampled_from(sorted(choices)), min_size=1, max_size=5, unique=True)
    ):
        if name == b"lua_src/includes":
            tree = {k: v for k, v in tree.items() if not k.startswith(b"lua_src/includes/")}
        tree[name] = choices[name]
    if draw(st.booleans()):
        target = draw(
            st.sampled_from([b"includes/up/includes/get", b"sub/get", b"includes/x/y/get"])
        )
        tree[b"lua_src/via-1.lua"] = (
            "file",
            b'--- @include "%s"\nreturn get(KEYS[1], 1)\n' % target,
        )
    return draw(options(Project(tree)))


NAME_PARTS = [
    b"a",
    b"job",
    b" ",
    b"\n",
    b"\t",
    b"\r",
    b"\xff",
    b"\xe9",
    b"\\",
    b"'",
    b'"',
    b"-",
    b"_",
    b".",
    b"\xc3\xa9",
    b"\xe2\x80\xa8",
    b"$",
    b"*",
    b"?",
    b"[",
    b"%",
    b":",
    b"1",
]


@st.composite
def odd_names(draw: st.DrawFn, scale: Scale) -> Project:
    tree = dict(GOOD_FILES)
    body = b"return redis.call('GET', KEYS[1])\n"
    for _ in range(draw(st.integers(1, 3))):
        stem = b"".join(draw(st.lists(st.sampled_from(NAME_PARTS), min_size=1, max_size=8)))
        kind = draw(st.integers(0, 5))
        if kind == 0:
            name = stem + b"-1.lua"
        elif kind == 1:
            name = b"x" * draw(st.integers(240, 300)) + b"-1.lua"
        elif kind == 2:
            name = (
                b"n-"
                + draw(
                    st.sampled_from(
                        [
                            b"01",
                            b"-1",
                            b"1.5",
                            b"99999999999",
                            b"1025",
                            b"1024",
                            b"",
                            b"x",
                            b"1" * 30,
                            b"\xd9\xa3",
                            b"\xc2\xb2",
                        ]
                    )
                )
                + b".lua"
            )
        elif kind == 3:
            name = draw(
                st.sampled_from(
                    [
                        b".hidden-1.lua",
                        b"-1.lua",
                        b"a-1.LUA",
                        b"a-1.lua.bak",
                        b"a-1.lua ",
                        b" a-1.lua",
                        b"a-1",
                        b"a--1.lua",
                    ]
                )
            )
        elif kind == 4:
            name = b"includes/" + stem + b".lua"
        else:
            name = stem + b"/" + b"x-1.lua"  # a directory of an odd name
        tree[b"lua_src/" + name] = ("file", body)
    if draw(st.booleans()):
        tree[b"lua_src/dir-1.lua"] = ("dir", b"")
    return draw(options(Project(tree)))


@st.composite
def output_paths(draw: st.DrawFn, scale: Scale) -> Project:
    tree = dict(GOOD_FILES)
    if draw(st.booleans()):  # a tree that fails, or one that passes
        tree[b"lua_src/bad-1.lua"] = ("file", b"return KEYS[2]\n")
    project = draw(options(Project(tree, out=draw(st.sampled_from(OUT_KINDS)))))
    if draw(st.integers(0, 2)) == 0:
        project = with_package(project)
        if draw(st.booleans()):
            # The package cannot be written (its parent is a file): the build's other output
            # must not be swapped in either.
            project = replace(project, files={**project.files, b"gen": ("file", b"x")})
    return project


PYPROJECTS = [
    b"",
    b"[tool.echomq-scripts]\n",
    b"[tool.echomq-scripts]\nstrict = true\n",
    b"[tool.echomq-scripts]\nstrict = 1\n",
    b"[tool.echomq-scripts]\nrequire-header = true\n",
    b"[tool.echomq-scripts]\nunknown = 1\n",
    b"[tool.echomq-scripts]\nversion = '../../x'\n",
    b"[tool.echomq-scripts]\nversion = 1\n",
    b"[tool.echomq-scripts]\nversion = '" + b"9" * 300 + b"'\n",
    b"[tool.echomq-scripts]\npython-package = '/etc'\n",
    b"[tool.echomq-scripts]\npython-package = 'a/../b'\n",
    b"[tool.echomq-scripts]\npython-module = 'x'\n",
    b"[tool.echomq-scripts]\npython-package = 'lua_src'\n",
    b"[tool.echomq-scripts]\npython-package = 'pkg'\npython-module = '1x'\n",
    b"[tool]\necho = 1\n",
    b"tool = 1\n",
    b"[tool.echomq-scripts\n",
    b"[project]\nversion = '1.0'\n",
    b"[project]\nversion = '\xff'\n",
    b"[project]\nversion = []\n",
    b"project = 5\n",
    b"\xff\xfe[tool]\n",
    b"\x00",
    b"[tool.echomq-scripts]\n" + b"a = [" * 2000 + b"]" * 2000 + b"\n",
    b"x = " + b"[" * 5000 + b"]" * 5000 + b"\n",
]


@st.composite
def pyprojects(draw: st.DrawFn, scale: Scale) -> Project:
    tree = dict(GOOD_FILES)
    kind = draw(st.integers(0, 3))
    if kind == 0:
        tree[b"pyproject.toml"] = ("file", draw(st.sampled_from(PYPROJECTS)))
    elif kind == 1:
        tree[b"pyproject.toml"] = ("file", draw(mutated(draw(st.sampled_from(PYPROJECTS[1:14])))))
    elif kind == 2:
        tree[b"pyproject.toml"] = draw(
            st.sampled_from([("dir", b""), ("link", b"pyproject.toml"), ("link", b"/etc/hostname")])
        )
    else:
        tree[b"pyproject.toml"] = ("file", (REPO / "pyproject.toml").read_bytes())
    return draw(options(Project(tree)))


@st.composite
def special_files(draw: st.DrawFn, scale: Scale) -> Project:
    """Named pipes where files are read: these run in a subprocess, as they might hang."""
    tree = dict(GOOD_FILES)
    places = [
        b"lua_src/pipe-1.lua",
        b"lua_src/includes/get.lua",
        b"lua_src/includes/other.lua",
        b"lua_src/notes.txt",
        b"pyproject.toml",
    ]
    for name in draw(st.lists(st.sampled_from(places), max_size=3, unique=True)):
        tree[name] = ("fifo", b"")
    out = draw(st.sampled_from(["previous", *HANGING_OUT_KINDS]))
    return draw(options(Project(tree, out=out)))


@st.composite
def cache_damage(draw: st.DrawFn, scale: Scale) -> Project:
    base = draw(st.sampled_from([mutated_real, broken_headers, random_bytes, output_paths]))
    project = draw(base(scale))
    damage = (
        draw(st.booleans()),
        draw(st.integers(0, 1000)),
        draw(st.integers(0, 100_000)),
        draw(
            st.sampled_from([b"", b"\x00", b"{", b"[1]", b'"syntax":[1]', b"\xff", b"null", b"}"])
        ),
    )
    return replace(project, cache=True, damage=damage, out="previous")


def tar_gz(members: list[tuple[str, str, bytes]]) -> bytes:
    """A gzipped tar of (name, type, data) members: a file, a symlink or hardlink to `data`, a
    directory, a named pipe, or a file whose header claims more bytes than follow."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            if kind in ("symlink", "hardlink"):
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = data.decode("utf-8", "replace")
                tar.addfile(info)
            elif kind in ("dir", "fifo"):
                info.type = tarfile.DIRTYPE if kind == "dir" else tarfile.FIFOTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    packed = raw.getvalue()
    if any(kind == "lying" for _, kind, _ in members):
        packed = packed.replace(b"%011o" % 3, b"%011o" % 10**9, 1)  # the size field of "abc"
    return gzip.compress(packed, mtime=0)


JSON_SHAPES = [
    b"",
    b"null",
    b"[]",
    b"[{}]",
    b"{}",
    b'{"format": 1, "scripts": [1]}',
    b'{"format": 1, "scripts": 5}',
    b'{"format": 1, "version": "0.0.0", "scripts": [{}]}',
    b'{"format": 1, "version": 1, "scripts": []}',
    b'{"format": "1"}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 50_000 + b"1" + b"}" * 50_000,
    b"\xff\xfe{}",
    b'{"format": 1, "version": "0.0.0", "scripts": []}\x00',
    b"1e99999",
    rb'"\ud800"',  # a lone surrogate, escaped in JSON
]


@st.composite
def releases(draw: st.DrawFn, scale: Scale) -> Project:
    """`build --previous` given a manifest, a bundle or a build directory, of any shape."""
    good = good_build()
    manifest = (good / "manifest.json").read_bytes()
    bundle = (good / "echomq-scripts-0.0.0.tar.gz").read_bytes()
    kind = draw(st.sampled_from(["manifest", "bundle", "crafted-bundle", "directory"]))
    tree = dict(GOOD_FILES)
    if kind == "manifest":
        data = draw(st.sampled_from(JSON_SHAPES) | mutated(manifest) | st.just(manifest))
        tree[b"outside/manifest.json"] = ("file", data)
        previous = b"outside/manifest.json"
    elif kind == "bundle":
        data = draw(mutated(bundle) | st.sampled_from([bundle[:10], bundle[: len(bundle) // 2]]))
        tree[b"outside/release.tar.gz"] = ("file", data)
        previous = b"outside/release.tar.gz"
    elif kind == "crafted-bundle":
        name = draw(st.sampled_from(["echomq-scripts-0.0.0/manifest.json", "manifest.json"]))
        member = draw(st.sampled_from(["file", "symlink", "hardlink", "dir", "fifo", "lying"]))
        data = manifest if member == "file" else b"abc" if member == "lying" else b"/etc/passwd"
        extra = draw(st.lists(st.sampled_from(JSON_SHAPES[:8]), max_size=2))
        members = [(name, member, data)]
        members += [(f"echomq-scripts-0.0.0/x{i}.json", "file", e) for i, e in enumerate(extra)]
        tree[b"outside/release.tar.gz"] = ("file", tar_gz(members))
        previous = b"outside/release.tar.gz"
    else:
        inner = draw(
            st.sampled_from(
                [("file", manifest), ("fifo", b""), ("dir", b""), ("link", b"/etc/hostname")]
            )
        )
        tree[b"outside/prev/manifest.json"] = inner
        previous = b"outside/prev"
    project = draw(options(Project(tree, previous=previous)))
    return replace(project, command=("build",))


LOCATIONS = [
    "getField-1:1",
    "getField-1:2",
    "getField-1:0",
    "getField-1:99999999999999999999999999",
    "getField-1:" + "9" * 5000,
    "getField-1:\u00b2",
    "getField-1:\u0663",
    "getField-1:-1",
    "getField-1:",
    ":1",
    "getField-1",
    "../../../etc/passwd:1",
    "/etc/passwd:1",
    "getField-1.lua:1",
    "lua_src/getField-1.lua:1",
    "get\nField-1:1",
    "\udcff:1",
    "nope-1:1",
]


@st.composite
def explain_maps(draw: st.DrawFn, scale: Scale) -> Project:
    """`explain SCRIPT:LINE` on a build whose line map may be crafted or damaged."""
    good_map = (good_build() / "maps" / "getField-1.json").read_bytes()
    crafted = [
        b'{"format":1,"sources":["/etc/passwd"],"lines":[[0,1]]}',
        b'{"format":1,"sources":["../../x.lua"],"lines":[[0,1]]}',
        b'{"format":1,"sources":["getField-1.lua"],"lines":[[5,1]]}',
        b'{"format":1,"sources":["getField-1.lua"],"lines":[[0,-1]]}',
        b'{"format":1,"sources":["getField-1.lua"],"lines":[[0,99999999999999999999]]}',
        rb'{"format":1,"sources":["a\u0000b"],"lines":[[0,1]]}',
        b'{"format":1,"sources":[1],"lines":[[0,1]]}',
        b'{"format":1,"sources":["getField-1.lua"],"lines":[[0]]}',
    ]
    line_map = draw(
        st.none() | st.sampled_from(crafted + JSON_SHAPES) | mutated(good_map) | st.just(good_map)
    )
    location = draw(st.sampled_from(LOCATIONS) | st.text(max_size=12))
    return Project(dict(GOOD_FILES), command=("explain", location), line_map=line_map)


CLASSES: dict[str, Strategy] = {
    "random-bytes": random_bytes,
    "mutated-real": mutated_real,
    "broken-includes": broken_includes,
    "broken-headers": broken_headers,
    "include-graphs": include_graphs,
    "large-files": large_files,
    "encodings": encodings,
    "line-ends": line_ends,
    "symlinks": symlinks,
    "odd-names": odd_names,
    "output-paths": output_paths,
    "pyproject": pyprojects,
    "special-files": special_files,
    "cache-damage": cache_damage,
    "releases": releases,
    "explain": explain_maps,
}

# -- running -----------------------------------------------------------------------------------


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str
    crash: str  # what escaped, if anything: a traceback or the hang


@click.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def console_command(args: tuple[str, ...]) -> None:
    """The console script (entry.py: a recorded build answered before click loads), in-process."""
    saved = sys.argv
    sys.argv = ["echomq-scripts", *args]
    try:
        entry.main()
    finally:
        sys.argv = saved


def run_in_process(args: list[str], cwd: Path, console: bool = False) -> Run:
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(console_command if console else cli, args)
    finally:
        os.chdir(previous)
    crash = ""
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        assert result.exc_info is not None
        crash = short("".join(traceback.format_exception(*result.exc_info)))
    return Run(result.exit_code, result.stdout, result.stderr, crash)


def run_subprocess(args: list[str], cwd: Path, env_root: Path) -> Run:
    env = dict(os.environ, XDG_CACHE_HOME=str(env_root / "xdg"))
    env.pop("ECHOMQ_SCRIPTS_CACHE_DIR", None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "echomq_scripts", *args],
            cwd=cwd,
            capture_output=True,
            timeout=TIMEOUT,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return Run(-1, "", "", f"hung: no exit within {TIMEOUT} s")
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    return Run(done.returncode, out, err, short(err) if "Traceback" in err else "")


def short(traceback: str) -> str:
    """A traceback's head and tail: a RecursionError's thousand frames say nothing more."""
    lines = traceback.splitlines()
    if len(lines) <= 40:
        return traceback
    return "\n".join([*lines[:6], f"... {len(lines) - 36} lines ...", *lines[-30:]])


def materialise(root: Path, tree: dict[bytes, Entry]) -> None:
    """Make the entries under `root`; one the file system refuses (a name too long, a parent
    that is a file) is left out, as the fuzzed tree could not exist."""
    base = os.fsencode(root)
    for name, (kind, payload) in sorted(tree.items(), key=lambda item: item[0].count(b"/")):
        path = os.path.join(base, name)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if kind == "file":
                with open(path, "wb") as handle:
                    handle.write(payload.replace(ROOT, base))
            elif kind == "link":
                os.symlink(payload.replace(ROOT, base), path)
            elif kind == "fifo":
                os.mkfifo(path)
            else:
                os.makedirs(path, exist_ok=True)
        except (OSError, ValueError):
            continue


def snapshot(root: Path, skip: tuple[bytes, ...] = ()) -> dict[bytes, tuple[int, bytes]]:
    """Every entry under `root`, links and special files unfollowed: (mode, bytes or target)."""
    base = os.fsencode(root)
    found: dict[bytes, tuple[int, bytes]] = {}
    for parent, subdirs, names in os.walk(base):
        subdirs[:] = [d for d in subdirs if os.path.join(parent, d) not in skip]
        for name in [*subdirs, *names, b""]:
            path = os.path.join(parent, name) if name else parent
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode):
                with open(path, "rb") as handle:
                    data = handle.read()
            elif stat.S_ISLNK(info.st_mode):
                data = os.readlink(path)
            else:
                data = b""
            found[os.path.relpath(path, base)] = (info.st_mode, data)
    return found


GOOD_BUILD: list[Path] = []


def good_build() -> Path:
    """A build of the good project, made once: every previous output is a copy of it."""
    if not GOOD_BUILD:
        root = Path(tempfile.mkdtemp(prefix="emq-fuzz-good-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        materialise(root, GOOD_FILES)
        run = run_in_process(["build", "--no-cache", "--out", "build"], root)
        assert (run.exit_code, run.crash) == (0, ""), run.stderr
        GOOD_BUILD.append(root / "build")
    return GOOD_BUILD[0]


def make_out(kind: str, work: Path, project_dir: Path) -> Path:
    """The --out path of `kind`, with whatever lies there before the run."""
    out = project_dir / "build"
    if kind in ("previous", "fifo-in-previous"):
        shutil.copytree(good_build(), out, symlinks=True)
        if kind == "fifo-in-previous":
            os.mkfifo(out / "scripts" / "pipe.lua")
    elif kind == "fresh-deep":
        out = project_dir / "a" / "b" / "build"
    elif kind == "file":
        out.write_bytes(b"not a build\n")
    elif kind == "under-file":
        (project_dir / "afile").write_bytes(b"x")
        out = project_dir / "afile" / "build"
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(out))
    elif kind == "device":
        try:
            os.mknod(out, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except (OSError, AttributeError):
            out.write_bytes(b"")  # not allowed here: a file stands in
    elif kind == "dangling-link":
        out.symlink_to(project_dir / "nowhere")
    elif kind == "link-to-build":
        shutil.copytree(good_build(), work / "elsewhere", symlinks=True)
        out.symlink_to(work / "elsewhere")
    elif kind == "link-loop":
        out.symlink_to(out)
    elif kind == "src":
        out = project_dir / "lua_src"
    elif kind == "project":
        out = project_dir
    elif kind == "foreign":
        out.mkdir()
        (out / "notes.txt").write_bytes(b"mine\n")
    elif kind == "long":
        out = project_dir / ("b" * 300)
    elif kind == "odd":
        out = project_dir / os.fsdecode(b"bu ild\n\xff")
    elif kind == "read-only-parent":
        (project_dir / "ro").mkdir(mode=0o555)
        out = project_dir / "ro" / "build"
    elif kind == "fifo":
        os.mkfifo(out)
    return out


FINDING = r"^{src}/.+:[1-9][0-9]*:[1-9][0-9]*: (error|warning): .+ \[[a-z-]+\]$"
LOOSE_FINDING = re.compile(r":[0-9]+:[0-9]+: (error|warning): ")
# The summary line (docs/checks.md, "Output formats"): a count of zero is left out.
SUMMARY = re.compile(
    r"^Found (?:(?P<errors>\d+) errors?)?(?: and )?(?:(?P<warnings>\d+) warnings?)?"
    r" in \d+ files?\.$|^No findings in \d+ scripts?\.$"
)


def check_findings(run: Run, project: Project, src: str) -> list[str]:
    """The findings the run printed, each of the documented shape; returns them (as text)."""
    finding = re.compile(FINDING.format(src=re.escape(src)))
    if project.output_format == "json" and run.stdout.strip():
        rows = json.loads(run.stdout)
        assert isinstance(rows, list), run.stdout
        for row in rows:
            assert isinstance(row, dict), row
            assert set(row) >= {"path", "line", "col", "severity", "code", "message"}, row
            for number in ("line", "col"):
                assert isinstance(row[number], int), row
                assert row[number] >= 1, row
            assert row["severity"] in ("error", "warning"), row
            assert row["code"] in CODES, row
            assert isinstance(row["path"], str), row
            assert row["path"].startswith(src + "/"), row
            assert isinstance(row["message"], str), row
            assert row["message"], row
        return [json.dumps(row, sort_keys=True) for row in rows]
    lines = [*run.stdout.splitlines(), *run.stderr.splitlines()]
    found = [line for line in lines if finding.match(line)]
    # A line that looks like a finding and is not one of the right shape: a split or a stray.
    for line in lines:
        assert finding.match(line) or not LOOSE_FINDING.search(line), f"malformed finding {line!r}"
    summaries = [counted for line in lines if (counted := SUMMARY.match(line))]
    if found:  # the summary counts every finding line: none was split or lost
        assert len(summaries) == 1, run.stdout
        counted = summaries[0]
        total = int(counted["errors"] or 0) + int(counted["warnings"] or 0)
        assert total == len(found), run.stdout
    else:
        assert all(not counted.group(0).startswith("Found") for counted in summaries), run.stdout
    if project.output_format == "json":
        # No JSON at all: the run stopped before its findings, and said why.
        assert run.exit_code != 0, run.stdout
        assert "Error:" in run.stderr, run.stderr
    elif run.exit_code == 1 and not found:
        assert "Error:" in run.stderr or "out of date" in run.stderr, run.stderr
    return found


def damage_files(cache_dir: Path, out: Path, damage: tuple[bool, int, int, bytes]) -> None:
    """Splice `damage`'s bytes into one file of the cache or of the output; in the output, an
    empty splice deletes the file."""
    in_out, which, at, data = damage
    top = out if in_out else cache_dir
    # Not the output's manifest.json: without it, the directory is rightly no longer a build.
    entries = sorted(
        p
        for p in top.rglob("*")
        if p.is_file() and not p.is_symlink() and (p.name != "manifest.json" or not in_out)
    )
    if not entries:
        return
    target = entries[which % len(entries)]
    if in_out and not data:
        target.unlink()
        return
    old = target.read_bytes()
    at %= len(old) + 1
    target.write_bytes(old[:at] + data + old[at + len(data) + 1 :])


def command_line(
    project: Project, src: Path, out: Path, cache: Path, work: Path | None = None
) -> list[str]:
    args = [*project.command, "--src", str(src)]
    if project.command[0] in ("build", "explain"):
        args += ["--out", str(out)]
    if project.command[0] == "explain":
        return args
    if project.previous is not None and work is not None:
        args += ["--previous", os.fsdecode(os.path.join(os.fsencode(work), project.previous))]
    args += ["--format", project.output_format]
    if project.strict:
        args.append(project.strict)
    args += ["--cache-dir", str(cache)] if project.cache else ["--no-cache"]
    return args


def changed(
    before: dict[bytes, tuple[int, bytes]], after: dict[bytes, tuple[int, bytes]]
) -> set[bytes]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def python_package(project_dir: Path) -> str | None:
    """The python-package the project's settings name, where a build may write too."""
    try:
        data = tomllib.loads((project_dir / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    package: object = data
    for key in ("tool", "echomq-scripts", "python-package"):
        package = package.get(key) if isinstance(package, dict) else None
    return package if isinstance(package, str) else None


def check_line_ends(project: Project, work: Path) -> None:
    """The tree with LF line ends and the same tree with `project.line_end`: the same findings
    at the same lines and columns, and the same build, byte for byte (Lua reads each line end
    as LF, and so does the tool)."""
    assert project.line_end is not None
    # The Lua files only: TOML's line ends are LF or CRLF, so a lone CR makes pyproject.toml
    # another file (a settings error), not the same one.
    converted = {
        name: (
            kind,
            data.replace(b"\n", project.line_end)
            if kind == "file" and name.endswith(b".lua")
            else data,
        )
        for name, (kind, data) in project.files.items()
    }
    runs = []
    for side, tree in (("lf", project.files), ("other", converted)):
        root = work / side
        root.mkdir()
        materialise(root, tree)
        (root / "lua_src").mkdir(exist_ok=True)
        args = [*project.command, "--src", "lua_src", "--format", "json", "--no-cache"]
        if project.command[0] == "build":
            args += ["--out", "build"]
        run = run_in_process(args, root)
        context = f"{side}: {args}\nstdout:\n{run.stdout}\nstderr:\n{run.stderr}"
        assert run.crash == "", f"{context}\n{run.crash}"
        assert run.exit_code in (0, 1, 2), context
        check_findings(run, replace(project, output_format="json"), "lua_src")
        built = snapshot(root / "build") if (root / "build").is_dir() else {}
        runs.append((run.exit_code, run.stdout, run.stderr.replace(str(root), "ROOT"), built))
    assert runs[0] == runs[1], f"line ends {project.line_end!r} changed the result:\n{runs}"


def check_example(project: Project, work: Path) -> None:
    """Run the project's command line on its tree and check every property."""
    if project.line_end is not None:
        check_line_ends(project, work)
        return
    project_dir = work / "project"
    project_dir.mkdir()
    materialise(
        work,
        {
            b"project/" + k if not k.startswith(b"outside/") else k: v
            for k, v in project.files.items()
        },
    )
    src = project_dir / "lua_src"
    src.mkdir(exist_ok=True)
    out = make_out(project.out, work, project_dir)
    cache = work / "cache"
    if project.line_map is not None:
        (out / "maps" / "getField-1.json").write_bytes(project.line_map)
    args = command_line(project, src, out, cache, work)

    def run() -> Run:
        if project.hangs:
            return run_subprocess(args, project_dir, work)
        # The cache's examples go through the console script, which replays recorded builds.
        return run_in_process(args, project_dir, console=project.damage is not None)

    skip = (os.fsencode(cache), os.fsencode(work / "xdg"))
    if project.damage is not None:
        first = run()
        assert first.crash == "", first.crash
        first_findings = check_findings(first, project, str(src))
        damage_files(cache, Path(os.path.realpath(out)), project.damage)
    before = snapshot(work, skip)
    out_real = os.fsencode(os.path.realpath(out))
    result = run()
    after = snapshot(work, skip)
    context = f"{args}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.crash == "", f"{context}\n{result.crash}"
    assert result.exit_code in (0, 1, 2), context
    assert "Traceback" not in result.stdout + result.stderr, context
    findings = check_findings(result, project, str(src))
    if project.damage is not None:
        # A damaged cache entry is a miss: the same findings and exit code as before.
        assert findings == first_findings, context
        assert result.exit_code == first.exit_code, context
    diff = changed(before, after)
    if result.exit_code != 0 or project.command[0] != "build" or "--check" in project.command:
        assert not diff, (
            f"a run that {'failed' if result.exit_code else 'checked'} changed "
            f"{sorted(diff)}\n{context}"
        )
        return
    base = os.fsencode(work)
    allowed = [out_real]
    package = python_package(project_dir)
    if package is not None:
        allowed.append(os.fsencode(os.path.realpath(project_dir / package)))
    for name in diff:
        full = os.path.join(base, name)
        ok = any(
            full == a or full.startswith(a + b"/") or a.startswith(full + b"/") for a in allowed
        )
        assert ok, f"a build changed {name!r}, outside its output\n{context}"
    assert os.path.isfile(os.path.join(out_real, b"manifest.json")), context
    # The same tree built again elsewhere: the same bytes.
    again = work / "again"
    repeat = replace(project, cache=False)
    rerun = (
        run_in_process(command_line(repeat, src, again, cache), project_dir)
        if not project.hangs
        else run_subprocess(command_line(repeat, src, again, cache), project_dir, work)
    )
    assert (rerun.exit_code, rerun.crash) == (0, ""), rerun.stderr
    assert snapshot(again) == snapshot(Path(os.fsdecode(out_real))), f"not reproducible\n{context}"


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No run reads or writes the machine's own cache directory."""
    monkeypatch.delenv("ECHOMQ_SCRIPTS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def fuzz(name: str, scale: Scale) -> None:
    @settings(
        max_examples=scale.examples,
        deadline=None,
        database=None,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
        # A hang costs a timeout per run: shrinking one would take many. The explain phase
        # (which lines only failing examples ran) traces every run again: too slow here.
        phases=[
            p
            for p in Phase
            if p is not Phase.explain and (p is not Phase.shrink or name != "special-files")
        ],
    )
    @given(CLASSES[name](scale))
    def examples(project: Project) -> None:
        work = Path(tempfile.mkdtemp(prefix="emq-fuzz-"))
        try:
            check_example(project, work)
        finally:
            for parent, subdirs, _ in os.walk(work):  # a read-only directory, for rmtree
                for name in subdirs:
                    if not os.path.islink(os.path.join(parent, name)):
                        os.chmod(os.path.join(parent, name), 0o755)
            shutil.rmtree(work, ignore_errors=True)

    examples()


@pytest.mark.usefixtures("environment")
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_fuzz(name: str) -> None:
    fuzz(
        name,
        replace(
            BOUNDED, examples=max(1, BOUNDED.examples // (4 if name == "special-files" else 1))
        ),
    )


@pytest.mark.soak
@pytest.mark.usefixtures("environment")
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_fuzz_at_length(name: str) -> None:
    fuzz(name, SOAK)
