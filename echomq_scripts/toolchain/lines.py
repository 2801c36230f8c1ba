"""Line ends as Lua 5.1's lexer counts them: the one rule for every line number the tool shows.

Lua's `inclinenumber` (llex.c) ends a line at `\\n` or `\\r`, and takes a following `\\r` or `\\n`
that differs from the first as part of the same line end: `\\n`, `\\r`, `\\r\\n` and `\\n\\r` are
each one. Redis reports its errors on Lua's lines, so the tool counts them the same way.
"""

from __future__ import annotations

import re

# Longest first: "\r\n" is one line end, not "\r" then "\n".
_LINE_END = re.compile(r"\r\n|\n\r|\r|\n")


def normalise_line_ends(text: str) -> str:
    """`text` with each of its line ends written as `\\n`.

    Lua 5.1 reads the result exactly as it reads `text`: a line end inside a long string or
    after a backslash escape is read as `\\n` whatever its bytes, and one inside a short string
    is an error either way.
    """
    return _LINE_END.sub("\n", text)


def split_lines(text: str) -> list[str]:
    """The lines of `text`, without their ends; a final line end does not start a line."""
    lines = normalise_line_ends(text).split("\n")
    if lines[-1] == "":
        lines.pop()  # so the empty text has no lines
    return lines


def line_number(data: bytes, offset: int) -> int:
    """The 1-based line of the byte at `offset` in `data`."""
    # latin-1 maps each byte to one character, so offsets and line ends stay where they were.
    return len(_LINE_END.findall(data[:offset].decode("latin-1"))) + 1
