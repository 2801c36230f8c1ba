"""Reading line maps back: from a line of a resolved script to its source file and line.

Used by `echomq-scripts explain` and by anything that reports a Redis error. It needs nothing
but the standard library, so a runtime can load it without the build's dependencies.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

# Redis 7 ends a script error with "script: <sha>, on @user_script:<line>."; older servers
# (and errors raised with a table) put "user_script:<line>:" in front of the message.
_REDIS7_LINE = re.compile(r"on @user_script:(\d+)\.")
_OLDER_LINE = re.compile(r"@?user_script:(\d+):")


def path_problem(relative: str) -> str | None:
    """Why the path `relative` may lead outside the directory it is relative to, judged by its
    text alone (symlinks are the reader's to check); None when it cannot.

    A release names its files relative to its own top: never absolute, never up with "..".
    """
    if not relative:
        return "is empty"
    if "\0" in relative:
        return "holds a NUL"
    if PurePosixPath(relative).is_absolute() or PureWindowsPath(relative).anchor:
        return "is absolute"
    if ".." in relative.replace("\\", "/").split("/"):
        return "goes up with '..'"
    return None


def _is_int(value: object) -> bool:
    return type(value) is int  # not bool, which JSON's true would give


@dataclass(frozen=True)
class LineMap:
    """For each line of one resolved script, the source file and line it was copied from."""

    script: str
    sources: tuple[str, ...]
    lines: tuple[tuple[int, int], ...]

    @classmethod
    def from_json(cls, data: object) -> LineMap:
        """The line map `data` (parsed JSON) holds, checked whole: ValueError says what is wrong.

        Every source is a relative path that does not go up, and every line's source index
        points into `sources`, so `origin` cannot fail on any line.
        """
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if not _is_int(data.get("format")) or data["format"] != 1:
            raise ValueError(f"format is {data.get('format')!r}, not 1")
        script, sources, lines = data.get("script"), data.get("sources"), data.get("lines")
        if not isinstance(script, str):
            raise ValueError("script is not a string")
        if not isinstance(sources, list) or not sources:
            raise ValueError("sources is not a list of paths")
        for number, source in enumerate(sources):
            problem = path_problem(source) if isinstance(source, str) else "is not a string"
            if problem is not None:
                raise ValueError(f"sources[{number}] {source!r} {problem}")
        if not isinstance(lines, list):
            raise ValueError("lines is not a list")
        for number, entry in enumerate(lines):
            if not (isinstance(entry, list) and len(entry) == 2 and all(map(_is_int, entry))):
                raise ValueError(f"lines[{number}] is not a pair of integers")
            if not 0 <= entry[0] < len(sources) or entry[1] < 1:
                raise ValueError(
                    f"lines[{number}] is {entry}: a source index from 0 to {len(sources) - 1}"
                    " and a line from 1 were expected"
                )
        return cls(script, tuple(sources), tuple((index, line) for index, line in lines))

    @classmethod
    def load(cls, path: Path) -> LineMap:
        """The line map in the file at `path`; OSError or ValueError when it cannot be used."""
        return cls.parse(path.read_bytes())

    @classmethod
    def parse(cls, data: bytes) -> LineMap:
        """The line map whose JSON text is `data`; ValueError when it cannot be used."""
        try:
            value = json.loads(data)
        except RecursionError:  # json gives up on deep nesting this way, not with ValueError
            raise ValueError("nested too deeply") from None
        return cls.from_json(value)

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
