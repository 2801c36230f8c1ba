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

from .lines import split_lines

_MESSAGE = re.compile(rb"^user_script:(?P<line>\d+): (?P<message>.*)$", re.DOTALL)
_NEAR = re.compile(rb"near '(?P<token>.*)'$", re.DOTALL)

_runtime: Any = None


@dataclass(frozen=True)
class SyntaxProblem:
    row: int  # 0-based row of the resolved script
    col: int  # 0-based byte column
    message: str


def _compile() -> Any:
    # Imported on first use so that a build served from the cache never loads Lua at all.
    global _runtime
    if _runtime is None:
        from lupa import lua51

        # encoding=None: Lua's messages may quote a lone byte of a multi-byte character.
        _runtime = lua51.LuaRuntime(encoding=None, register_eval=False, register_builtins=False)
    return _runtime.compile


def check_syntax(text: str) -> SyntaxProblem | None:
    """None when Lua 5.1 compiles `text`; otherwise where and why it does not."""
    from lupa.lua51 import LuaSyntaxError

    source = text.encode("utf-8")
    # `compile` loads the chunk straight from C, as Redis does, not through a Lua call of
    # `loadstring`: that call would take one of the 200 nesting levels Lua 5.1 allows
    # (LUAI_MAXCCALLS), and refuse a script nested exactly as deep as Redis still accepts.
    try:
        _compile()(source, name=b"@user_script")
    except LuaSyntaxError as refused:
        message = bytes(refused.args[0])
    else:
        return None
    match = _MESSAGE.match(message)
    if match is None:
        return SyntaxProblem(0, 0, message.decode("utf-8", "backslashreplace"))
    # Lua's line numbers, on the lines as Lua counts them; the empty text has one empty line.
    lines = [line.encode("utf-8") for line in split_lines(text)] or [b""]
    row = min(int(match["line"]), len(lines)) - 1
    detail = match["message"]
    near = _NEAR.search(detail)
    token = near["token"] if near else None
    col = _column(lines[row], token)
    shown = detail.decode("utf-8", "backslashreplace")
    return SyntaxProblem(row, col, shown + _hint(lines[row].decode("utf-8", "replace"), token))


# Newer Lua syntax that 5.1 refuses with a message that does not say why.
_HINTS = (
    (re.compile(r"\bgoto\s+[A-Za-z_]"), "Lua 5.1 has no 'goto'"),
    (re.compile(r"//"), "Lua 5.1 has no '//' operator: use math.floor(a / b)"),
    (
        re.compile(r"[^~<>=]\s*(&|\||~[^=]|<<|>>)"),
        "Lua 5.1 has no bitwise operators: use bit.band, bit.bor, bit.bxor, bit.lshift, ...",
    ),
)


def _hint(line: str, token: bytes | None) -> str:
    if token is None:
        return ""
    if any(byte >= 0x80 for byte in token):
        return (
            " (outside strings and comments Lua 5.1 reads only ASCII: no curly quotes or accents)"
        )
    code = line.split("--", 1)[0]
    for pattern, hint in _HINTS:
        if pattern.search(code):
            return f" ({hint})"
    return ""


def _column(line: bytes, token: bytes | None) -> int:
    if token is None:
        return 0
    if token == b"<eof>":
        return len(line)
    return max(line.find(token), 0)
