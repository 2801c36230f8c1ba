"""Include resolution: a script and its `--- @include` files become one script, plus a line map.

Each included file is pasted in place, as BullMQ's loader does: once per script, where the first
directive that reaches it stands (depth-first, in text order), its own directives replaced in
turn by their files. A later directive for a file already pasted is dropped, as is every
directive line. Lines are copied unchanged, so a column in the resolved script is the column in
its source file, and every resolved line maps to one line of one file.
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .diagnostics import Diagnostic, Severity
from .sources import ScriptEntry, SourceFile, SourceTree

# A line that means to be a directive; _DIRECTIVE is the form it must then have.
DIRECTIVE_START = re.compile(r"^\s*---\s*@include\b")
_DIRECTIVE = re.compile(r"""^\s*---\s*@include\s+(?P<quote>["'])(?P<path>[^"']+)(?P=quote)\s*$""")


@dataclass(frozen=True)
class IncludeSite:
    """The directive through which a file was first included."""

    path: str  # the file holding the directive
    line: int
    col: int


@dataclass(frozen=True)
class ResolvedScript:
    """A whole script as Redis receives it, and where each of its lines came from."""

    entry: ScriptEntry
    text: str
    files: tuple[SourceFile, ...]  # the script itself first, then its includes in order of use
    origins: tuple[tuple[int, int], ...]  # per resolved line: (index into files, source line)
    include_sites: dict[str, IncludeSite]

    def origins_file(self, row: int) -> int:
        """Index into `files` of the file that the resolved script's 0-based `row` came from."""
        return self.origins[row][0]

    def origin(self, row: int) -> tuple[str, int]:
        """Source file and 1-based line of the resolved script's 0-based `row`."""
        index, line = self.origins[row]
        return self.files[index].path, line


@dataclass(frozen=True)
class _Directive:
    line_index: int  # 0-based line in its file
    target: str  # root-relative path of the included file
    col: int


@dataclass
class _Frame:
    """A file being pasted: what of it is still to come."""

    rel: str
    index: int  # into _Resolver.files
    line_count: int
    directives: Iterator[_Directive]
    next_line: int = 0  # 0-based, the first line not yet laid out


class _Resolver:
    def __init__(self, tree: SourceTree) -> None:
        self.tree = tree
        self.diagnostics: list[Diagnostic] = []
        self.files: list[SourceFile] = []  # the script, then its includes as pasted
        self.unreadable = False  # an include could not be read (the tree reported it)
        self.layout: list[tuple[int, int]] = []  # per resolved line: (index into files, line)
        self.sites: dict[str, IncludeSite] = {}

    def error(self, path: str, line: int, col: int, code: str, message: str) -> None:
        self.diagnostics.append(Diagnostic(path, line, col, Severity.ERROR, code, message))

    def lay_out(self, root: str) -> None:
        """Lay out `root` with its includes pasted in place, recording each file's first
        include site: walk the directives depth-first in text order; the lines of a file up to
        a directive are laid out before the file that directive names, and the rest after it.

        The walk keeps its own stack rather than recursing: an include chain is as deep as the
        tree makes it, and Python's recursion limit must not decide which trees build.
        """
        on_chain: set[str] = set()  # the files of `stack`, for a constant-time cycle test
        stack: list[_Frame] = []

        def enter(rel: str) -> None:
            source = self.tree.read(rel)
            if source is None:
                self.unreadable = True
                return
            frame = _Frame(
                rel, len(self.files), len(source.lines), iter(self.read_directives(source))
            )
            self.files.append(source)
            on_chain.add(rel)
            stack.append(frame)

        def copy(frame: _Frame, end: int) -> None:
            self.layout += [(frame.index, line + 1) for line in range(frame.next_line, end)]

        enter(root)
        while stack:
            frame = stack[-1]
            directive = next(frame.directives, None)
            if directive is None:
                copy(frame, frame.line_count)
                stack.pop()
                on_chain.discard(frame.rel)
                continue
            copy(frame, directive.line_index)
            frame.next_line = directive.line_index + 1  # the directive line is dropped
            target = directive.target
            line = directive.line_index + 1
            if target in on_chain:
                chain = [f.rel for f in stack]
                cycle = " -> ".join([*chain[chain.index(target) :], target])
                self.error(
                    frame.rel, line, directive.col, "include-cycle", f"include cycle: {cycle}"
                )
                continue
            if target in self.sites:
                continue  # pasted already, at its first directive
            self.sites[target] = IncludeSite(frame.rel, line, directive.col)
            enter(target)

    def read_directives(self, source: SourceFile) -> list[_Directive]:
        found: list[_Directive] = []
        for index, line in enumerate(source.lines):
            if not DIRECTIVE_START.match(line):
                continue
            match = _DIRECTIVE.match(line)
            if match is None:
                self.error(
                    source.path,
                    index + 1,
                    line.index("@") + 1,
                    "include-syntax",
                    "malformed include: expected '--- @include \"path\"'",
                )
                continue
            col = match.start("quote") + 1
            target = self.target_of(source.path, index + 1, col, match["path"])
            if target is not None:
                found.append(_Directive(index, target, col))
        return found

    def target_of(self, including: str, line: int, col: int, raw: str) -> str | None:
        """The root-relative file a directive names, or None (reported) when it cannot be used."""
        name = raw if raw.endswith(".lua") else raw + ".lua"
        if "\0" in name:  # no file name holds one, and os.stat would raise ValueError
            self.error(
                including,
                line,
                col,
                "include-missing",
                f"include path '{raw}' holds a NUL character, which no file name can",
            )
            return None
        if posixpath.isabs(name) or re.match(r"^[A-Za-z]:[\\/]", name) or "\\" in name:
            self.error(
                including,
                line,
                col,
                "include-escape",
                f"include path '{raw}' must be relative to the including file, with '/' separators",
            )
            return None
        target = posixpath.normpath(posixpath.join(posixpath.dirname(including), name))
        if target == ".." or target.startswith("../"):
            self.error(
                including,
                line,
                col,
                "include-escape",
                f"include path '{raw}' leaves the source root",
            )
            return None
        if self.tree.snapshot.get(target) is not None:
            return target  # read in full, so a regular file inside the root
        path = self.tree.root / target
        try:
            os.stat(path)
        except OSError as exc:
            problem = _unreachable(path, exc)
            if problem is not None:
                code, why = problem
                message = f"included file '{target}' {why}"
                if code == "include-missing" and why == "not found":
                    message += f" (from '{raw}')"
                self.error(including, line, col, code, message)
                return None
        # A link to nothing or a named pipe is there, and reported when it is read.
        if not self.tree.contains(path):
            self.error(
                including,
                line,
                col,
                "include-escape",
                f"included file '{target}' is a link to outside the source root",
            )
            return None
        if not self.tree.has(target):
            # It appeared after the snapshot was taken, or lies in a directory the snapshot
            # reached by another path: the build works on the snapshot.
            self.error(
                including, line, col, "include-missing", f"included file '{target}' not found"
            )
            return None
        return target


def _unreachable(path: Path, error: OSError) -> tuple[str, str] | None:
    """Code and reason when `path`, which os.stat refused with `error`, names no file the
    build can use; None for a link to nothing, which is there and reported when it is read."""
    if error.errno == errno.ENOENT and path.is_symlink():
        return None
    if error.errno in (errno.ENOENT, errno.ENOTDIR):
        return "include-missing", "not found"
    if error.errno == errno.ELOOP:
        return "include-missing", (
            "cannot be reached: its path runs into a loop of symbolic links, or too long a"
            " chain of them"
        )
    if error.errno == errno.ENAMETOOLONG:
        return "include-missing", "cannot exist: its path is longer than the file system allows"
    return "read-error", f"cannot be read: {error.strerror or error}"


def resolve(tree: SourceTree, entry: ScriptEntry) -> tuple[ResolvedScript | None, list[Diagnostic]]:
    """Inline every include of `entry`; None when an include cannot be resolved."""
    resolver = _Resolver(tree)
    resolver.lay_out(entry.path)
    if not resolver.files or resolver.unreadable or resolver.diagnostics:
        return None, resolver.diagnostics
    sources = tuple(resolver.files)
    origins = tuple(resolver.layout)
    # Every line ends with '\n': joined once rather than one concatenation per line.
    lines = [source.lines for source in sources]
    text = "\n".join([lines[i][line - 1] for i, line in origins]) + ("\n" if origins else "")
    return ResolvedScript(entry, text, sources, origins, resolver.sites), resolver.diagnostics
