"""Reading line maps back: from a line of a resolved script to its source file and line.

Used by `echomq-scripts explain` and by anything that reports a Redis error. It needs nothing
but the standard library, so a runtime can load it without the build's dependencies.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Redis 7 ends a script error with "script: <sha>, on @user_script:<line>."; older servers
# (and errors raised with a table) put "user_script:<line>:" in front of the message.
_REDIS7_LINE = re.compile(r"on @user_script:(\d+)\.")
_OLDER_LINE = re.compile(r"@?user_script:(\d+):")


@dataclass(frozen=True)
class LineMap:
    """For each line of one resolved script, the source file and line it was copied from."""

    script: str
    sources: tuple[str, ...]
    lines: tuple[tuple[int, int], ...]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LineMap:
        return cls(
            script=str(data["script"]),
            sources=tuple(str(s) for s in data["sources"]),
            lines=tuple((int(i), int(n)) for i, n in data["lines"]),
        )

    @classmethod
    def load(cls, path: Path) -> LineMap:
        return cls.from_json(json.loads(path.read_bytes()))

    def origin(self, line: int) -> tuple[str, int] | None:
        """Source path and line of the resolved script's 1-based `line`, if it has one."""
        if not 1 <= line <= len(self.lines):
            return None
        index, source_line = self.lines[line - 1]
        return self.sources[index], source_line


def error_line(message: str) -> int | None:
    """The resolved script's line that a Redis script error names, in either Redis format."""
    match = _REDIS7_LINE.search(message) or _OLDER_LINE.search(message)
    return int(match[1]) if match else None
