"""Deep and long code: the analyser follows what Redis's Lua 5.1 compiles, at any length.

Lua 5.1 compiles left-associative chains (`1 + 1 + ...`, `a and b and ...`, `f()()...`,
`o:m():m()...`, `t.a.b...`, `t[1][1]...`) in a loop, so Redis accepts them at any length, while
tree-sitter nests them one node per link. Everything Lua does nest (blocks, parentheses,
function bodies, the right-associative `..` and `^`) it bounds at 200 levels (LUAI_MAXCCALLS) and
refuses past that, which the tool reports as a `syntax` finding. Each test runs under Python's
default recursion limit, and checks against real Lua (and Redis, when there is one) that what
the tool accepts is accepted there too.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import redis
from lupa import lua51

from echomq_scripts.toolchain.analyse import analyse
from echomq_scripts.toolchain.diagnostics import format_text
from echomq_scripts.toolchain.header import parse_header
from tests.support.projects import run_build

HEADER = "--- A long expression.\n--- @return int  anything\n"  # then one line of code


def _lua_compiles(body: bytes) -> bool:
    """Whether Lua 5.1 compiles `body` as Redis does (loaded from C, not through a Lua call)."""
    runtime = lua51.LuaRuntime(encoding=None, register_eval=False, register_builtins=False)
    try:
        runtime.compile(body, name=b"@user_script")
    except lua51.LuaSyntaxError:
        return False
    return True


def _build(tmp_path: Path, name: str, code: str) -> tuple[str, bytes | None]:
    """The findings of building `lua_src/<name>` holding `code`, and its built bytes (None when
    the build failed). The bytes are checked against the manifest's SHA1."""
    src = tmp_path / "lua_src"
    src.mkdir(parents=True)
    (src / name).write_text(code, encoding="utf-8")
    result = run_build(src, tmp_path / "build")
    findings = format_text(result.diagnostics).replace(f"{tmp_path.as_posix()}/", "")
    if not result.files:
        return findings, None
    [entry] = json.loads(result.files["manifest.json"])["scripts"]
    body = result.files[entry["file"]]
    assert hashlib.sha1(body).hexdigest() == entry["sha1"]
    return findings, body


def _redis_accepts(server: redis.Redis | None, body: bytes) -> None:
    assert _lua_compiles(body)
    if server is not None:
        assert server.script_load(body) == hashlib.sha1(body).hexdigest()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> redis.Redis | None:
    """The tests' private Redis when there is one, else None (lupa alone then checks): `r`
    skips without a redis-server, but fails in CI, where there must be one."""
    try:
        client: redis.Redis = request.getfixturevalue("r")
    except pytest.skip.Exception:
        return None
    return client


LONG_CHAINS = {
    "plus": "return " + " + ".join(["1"] * 5000) + "\n",
    "and": "return " + " and ".join(["1"] * 5000) + "\n",
    "or": "return " + " or ".join(["1"] * 5000) + "\n",
    "mixed": "return 1" + " + 2 * 3 == 4 or 5 - 6" * 2000 + "\n",
    "calls": "local function f() return f end\nreturn f" + "()" * 3000 + " and 1\n",
    "methods": "local o = {}\nfunction o:m() return self end\nreturn o"
    + ":m()" * 3000
    + " and 1\n",
    "fields": "local a = {}\nreturn a" + ".b" * 3000 + " and 1\n",
    "indexes": "local t = {}\nreturn t" + "[1]" * 3000 + " and 1\n",
    "keys": "--- @key k  a key\nreturn KEYS" + "[1]" * 3000 + " and 1\n",
}


@pytest.mark.parametrize("shape", sorted(LONG_CHAINS))
def test_long_chains_are_analysed_and_built(
    shape: str, tmp_path: Path, server: redis.Redis | None
) -> None:
    code = HEADER + LONG_CHAINS[shape]
    assert sys.getrecursionlimit() == 1000  # Python's default: nothing here raised it
    findings, body = _build(tmp_path, "long-1.lua" if shape == "keys" else "long-0.lua", code)
    assert findings == ""
    assert body == code.encode()
    _redis_accepts(server, code.encode())


@contextmanager
def _recursion_budget(frames: int) -> Iterator[None]:
    """Python's recursion limit set to `frames` above the current depth, for the block."""
    depth = 0
    frame = sys._getframe()
    while frame.f_back is not None:
        depth, frame = depth + 1, frame.f_back
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def test_the_walk_does_not_recurse_along_a_chain() -> None:
    """The analysis of a 100,000-term chain needs no more Python frames than that of one term:
    the walk keeps its own stack."""
    analyse("return 1 + 1")  # imports the parser and Lua outside the budget
    with _recursion_budget(60):
        facts = analyse("return " + " + ".join(["KEYS[1 + 1]"] * 100_000))
    assert facts.syntax is None
    assert facts.keys.literal == [(2, 0, 7 + 14 * i) for i in range(100_000)]


# What Lua nests, it bounds: one level more than Redis accepts is a `syntax` finding, and the
# deepest Redis accepts is analysed and built. The depths are Redis 7.0's (LUAI_MAXCCALLS 200,
# less the levels the chunk itself takes).
NESTED: dict[str, tuple[int, Callable[[int], str]]] = {
    "concat": (199, lambda n: "return " + " .. ".join(["'a'"] * n)),
    "power": (199, lambda n: "return 2" + " ^ 2" * (n - 1)),
    "parentheses": (198, lambda n: "return " + "(" * n + "1" + ")" * n),
    "blocks": (199, lambda n: "do " * n + "end " * n + "return 1"),
    "functions": (99, lambda n: "local f = " + "function() return " * n + "1" + " end" * n),
    "tables": (199, lambda n: "return " + "{" * n + "}" * n),
}


@pytest.mark.parametrize("shape", sorted(NESTED))
def test_nesting_as_deep_as_redis_accepts_is_built_and_one_more_is_a_syntax_finding(
    shape: str, tmp_path: Path, server: redis.Redis | None
) -> None:
    deepest, make = NESTED[shape]
    code = HEADER + make(deepest) + "\n"
    findings, body = _build(tmp_path / "ok", "deep-0.lua", code)
    findings = findings.replace("ok/", "")
    if shape == "functions":
        # `f` itself is never read: that is the only finding.
        assert (
            findings == "lua_src/deep-0.lua:3:7: warning: local 'f' is never read [unused-local]\n"
        )
    else:
        assert findings == ""
    assert body == code.encode()
    _redis_accepts(server, code.encode())

    code = HEADER + make(deepest + 1) + "\n"
    findings, body = _build(tmp_path / "refused", "deep-0.lua", code)
    findings = findings.replace("refused/", "")
    assert findings == (
        "lua_src/deep-0.lua:3:1: error: chunk has too many syntax levels [syntax]\n"
    )
    assert body is None
    assert not _lua_compiles(code.encode())
    if server is not None:
        with pytest.raises(redis.ResponseError, match="too many syntax levels"):
            server.script_load(code)


def test_a_concat_chain_of_5000_is_a_syntax_finding_as_in_redis(
    tmp_path: Path, server: redis.Redis | None
) -> None:
    code = HEADER + "return " + " .. ".join(["'a'"] * 5000) + "\n"
    findings, body = _build(tmp_path, "concat-0.lua", code)
    assert (
        findings == "lua_src/concat-0.lua:3:1: error: chunk has too many syntax levels [syntax]\n"
    )
    assert body is None
    assert not _lua_compiles(code.encode())
    if server is not None:
        with pytest.raises(redis.ResponseError, match="too many syntax levels"):
            server.script_load(code)


def test_a_large_file_is_analysed() -> None:
    """100,000 lines of ordinary code: every KEYS read is seen, nothing recurses per line."""
    # A function may hold 200 locals (Lua 5.1's limit): one per block.
    lines = ["do", "local v = redis.call('GET', KEYS[1]) .. ARGV[1]"]
    lines += ["if v then redis.call('SET', KEYS[2], v) end", "end"]
    lines *= 25_000
    facts = analyse("\n".join(lines) + "\nreturn 1\n")
    assert facts.syntax is None
    assert len(facts.keys.literal) == 50_000
    assert len(facts.key_args) == 50_000
    assert not facts.findings


@pytest.mark.parametrize(
    ("depth", "finding"),
    [
        (32, ""),
        (
            33,
            "a-0.lua:2:5: error: bad return shape: lists and tuples nest more than 32 deep"
            " [header-syntax]\n",
        ),
        (
            600,
            "a-0.lua:2:5: error: bad return shape: lists and tuples nest more than 32 deep"
            " [header-syntax]\n",
        ),
    ],
)
def test_return_shapes_nest_at_most_32_deep(depth: int, finding: str) -> None:
    shape = "list[" * depth + "int" + "]" * depth
    lines = ("--- A deep reply.", f"--- @return {shape}  the reply", "return {}")
    header, problems = parse_header("a-0.lua", lines)
    assert format_text(problems) == finding
    assert (header is None) == bool(finding)
    if header is not None:
        assert header.returns is not None
        assert header.returns.spelling == shape
