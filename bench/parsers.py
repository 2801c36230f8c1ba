"""Parser comparison: the same resolved scripts through luaparser, tree-sitter and lupa's Lua 5.1.

How to read the numbers: each parser gets the whole set of scripts per run, in this process, with
its input prepared beforehand (text for luaparser, bytes for the others); `first` is the first
pass after importing the parser (it holds one-time set-up, large for luaparser's ANTLR tables),
`median` the median of the runs after it. `x tree-sitter` divides by tree-sitter's median, the
parser the build uses for analysis. lupa only compiles (`loadstring`): it gives the syntax verdict
and no tree, so it has no node counts. The node columns count identifier nodes (luaparser `Name`,
tree-sitter `identifier`) and how many of them carry a source position: the analysis reports
findings by line and column, so a node without one cannot be reported where it is.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import tree_sitter


@dataclass(frozen=True)
class Script:
    name: str
    text: str


@dataclass
class ParserResult:
    name: str
    import_ms: float
    first_ms: float
    runs_ms: list[float] = field(default_factory=list)
    failures: int = 0  # scripts the parser refused (all of them are valid Lua 5.1)
    names: int | None = None  # identifier nodes
    positioned: int | None = None  # identifier nodes that carry a line (and column)
    error: str = ""  # why the parser could not be run at all

    @property
    def median_ms(self) -> float:
        return statistics.median(self.runs_ms) if self.runs_ms else float("nan")


def load_scripts(dirs: Sequence[Path], sample: int) -> list[Script]:
    """Every script of the first directory, then about `sample` spread over the others."""
    first, *rest = dirs
    scripts = [Script(p.name, p.read_text("utf-8")) for p in sorted(first.glob("*.lua"))]
    others = sorted(p for d in rest for p in d.glob("*.lua"))
    step = max(1, len(others) // sample) if sample > 0 else len(others) + 1
    scripts += [Script(p.name, p.read_text("utf-8")) for p in others[::step][:sample]]
    return scripts


def _time_all(parse: Callable[[Any], object], inputs: Sequence[Any]) -> tuple[float, int]:
    """Milliseconds to parse every input, and how many raised."""
    failures = 0
    start = time.perf_counter()
    for item in inputs:
        try:
            parse(item)
        except Exception:
            failures += 1
    return (time.perf_counter() - start) * 1000, failures


def _run(
    result: ParserResult, parse: Callable[[Any], object], inputs: Sequence[Any], runs: int
) -> None:
    result.first_ms, result.failures = _time_all(parse, inputs)
    result.runs_ms = [_time_all(parse, inputs)[0] for _ in range(runs)]


def _timed_import(name: str) -> tuple[Any, float]:
    start = time.perf_counter()
    module = importlib.import_module(name)
    return module, (time.perf_counter() - start) * 1000


# -- tree-sitter ------------------------------------------------------------------------------


def _ts_identifiers(tree: tree_sitter.Tree) -> Iterator[tree_sitter.Node]:
    cursor = tree.walk()
    while True:
        node = cursor.node
        if node is not None and node.type == "identifier":
            yield node
        if cursor.goto_first_child() or cursor.goto_next_sibling():
            continue
        while True:
            if not cursor.goto_parent():
                return
            if cursor.goto_next_sibling():
                break


def bench_tree_sitter(scripts: Sequence[Script], runs: int) -> ParserResult:
    ts, core_ms = _timed_import("tree_sitter")
    lua, lua_ms = _timed_import("tree_sitter_lua")
    parser = ts.Parser(ts.Language(lua.language()))
    result = ParserResult("tree-sitter (tree_sitter_lua)", core_ms + lua_ms, 0)
    inputs = [s.text.encode("utf-8") for s in scripts]
    _run(result, parser.parse, inputs, runs)
    names = [n for data in inputs for n in _ts_identifiers(parser.parse(data))]
    result.names = len(names)
    # Every tree-sitter node has start and end points; only a node that error recovery
    # invented (is_missing) has no real place in the text.
    result.positioned = sum(1 for n in names if not n.is_missing)
    return result


# -- luaparser --------------------------------------------------------------------------------


def bench_luaparser(scripts: Sequence[Script], runs: int) -> ParserResult:
    try:
        ast, import_ms = _timed_import("luaparser.ast")
        astnodes = importlib.import_module("luaparser.astnodes")
    except ImportError as exc:
        result = ParserResult(
            "luaparser", 0, 0, error=f"not installed ({exc}); pip install -e '.[bench]'"
        )
        return result
    result = ParserResult("luaparser (luaparser.ast.parse)", import_ms, 0)
    inputs = [s.text for s in scripts]
    _run(result, ast.parse, inputs, runs)
    names = positioned = 0
    for text in inputs:
        try:
            tree = ast.parse(text)
        except Exception:
            continue
        for node in ast.walk(tree):
            if isinstance(node, astnodes.Name):
                names += 1
                positioned += node.line is not None
    result.names, result.positioned = names, positioned
    return result


# -- lupa -------------------------------------------------------------------------------------


def bench_lupa(scripts: Sequence[Script], runs: int) -> ParserResult:
    lua51, import_ms = _timed_import("lupa.lua51")
    runtime = lua51.LuaRuntime(register_eval=False, register_builtins=False)
    loadstring = runtime.globals().loadstring

    def compile_only(data: bytes) -> object:
        compiled = loadstring(data, "@user_script")
        if isinstance(compiled, tuple):  # (nil, message): Lua refused it
            raise SyntaxError(str(compiled[1]))
        return compiled

    result = ParserResult("lupa lua51 loadstring (compile only)", import_ms, 0)
    _run(result, compile_only, [s.text.encode("utf-8") for s in scripts], runs)
    return result


def compare(scripts: Sequence[Script], runs: int) -> list[ParserResult]:
    """All three parsers on `scripts`; tree-sitter first, as the reference of the ratios."""
    return [
        bench_tree_sitter(scripts, runs),
        bench_luaparser(scripts, runs),
        bench_lupa(scripts, runs),
    ]
