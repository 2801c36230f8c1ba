"""The syntax verdict: compile a resolved script with a real Lua 5.1, as Redis does.

Redis embeds Lua 5.1 and compiles each script body with the chunk name `@user_script`. lupa's
`lua51` module links the same Lua version, so compiling here accepts and refuses exactly what
Redis accepts and refuses, with the same messages (`goto`, `//`, bitwise operators, 5.1's
ambiguous-call rule, a `break` outside a loop, too many locals, ...). Lua reports only a line;
the column is recovered from the token the message names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_MESSAGE = re.compile(r"^user_script:(?P<line>\d+): (?P<message>.*)$", re.DOTALL)
_NEAR = re.compile(r"near '(?P<token>.*)'$")

_runtime: Any = None


@dataclass(frozen=True)
class SyntaxProblem:
    row: int  # 0-based row of the resolved script
    col: int  # 0-based byte column
    message: str


def _loadstring() -> Any:
    # Imported on first use so that a build served from the cache never loads Lua at all.
    global _runtime
    if _runtime is None:
        from lupa import lua51

        _runtime = lua51.LuaRuntime(register_eval=False, register_builtins=False)
    return _runtime.globals().loadstring


def check_syntax(text: str) -> SyntaxProblem | None:
    """None when Lua 5.1 compiles `text`; otherwise where and why it does not."""
    result = _loadstring()(text.encode("utf-8"), "@user_script")
    if not isinstance(result, tuple):
        return None
    raw = result[1]
    message = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    match = _MESSAGE.match(message)
    if match is None:
        return SyntaxProblem(0, 0, message)
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the text's final newline does not start a line
    row = min(int(match["line"]), len(lines)) - 1
    detail = match["message"]
    return SyntaxProblem(row, _column(lines, row, detail), detail + _hint(lines[row], detail))


# Newer Lua syntax that 5.1 refuses with a message that does not say why.
_HINTS = (
    (re.compile(r"\bgoto\s+[A-Za-z_]"), "Lua 5.1 has no 'goto'"),
    (re.compile(r"//"), "Lua 5.1 has no '//' operator: use math.floor(a / b)"),
    (
        re.compile(r"[^~<>=]\s*(&|\||~[^=]|<<|>>)"),
        "Lua 5.1 has no bitwise operators: use bit.band, bit.bor, bit.bxor, bit.lshift, ...",
    ),
)


def _hint(line: str, message: str) -> str:
    if "expected near" not in message and "unexpected symbol" not in message:
        return ""
    code = line.split("--", 1)[0]
    for pattern, hint in _HINTS:
        if pattern.search(code):
            return f" ({hint})"
    return ""


def _column(lines: list[str], row: int, message: str) -> int:
    near = _NEAR.search(message)
    if near is None:
        return 0
    token = near["token"]
    line = lines[row].encode("utf-8")
    if token == "<eof>":
        return len(line)
    found = line.find(token.encode("utf-8"))
    return max(found, 0)
