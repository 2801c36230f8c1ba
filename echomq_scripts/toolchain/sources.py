"""The source tree: which files are scripts, and reading any source file once.

A script is `<src>/<name>-<N>.lua`, N being its KEYS count; every other `.lua` file (normally
under `includes/`) is only ever pulled in by an `--- @include` directive.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from .diagnostics import Diagnostic, Severity, escape_controls
from .lines import line_number, normalise_line_ends, split_lines
from .snapshot import Snapshot, file_kind, take_snapshot

SCRIPT_NAME = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)-(?P<keys>0|[1-9][0-9]*)\.lua$")
# The most KEYS a script's file name may declare. Each fixed key is a header line and a field of
# the wrappers' keys class, and the build names every one (manifest, wrappers): our largest
# script takes 20, BullMQ's take fewer, and a longer or varying list is a `@key...` list. The
# limit is 50 times that, and keeps a typo such as `-99999999999` from costing the build work
# (and output) in proportion to the number.
MAX_KEYS = 1024


@dataclass(frozen=True)
class SourceFile:
    """One source file's text, split into lines, and the sha256 of that text with each line end
    (`lines.py`) as LF."""

    path: str  # relative to the source root, with '/' separators
    lines: tuple[str, ...]
    sha256: str


@dataclass(frozen=True)
class ScriptEntry:
    """A script found in the source root, before its includes are resolved."""

    name: str  # "extendLock"
    num_keys: int  # 2
    path: str  # "extendLock-2.lua"

    @property
    def script_id(self) -> str:
        """The name with its arity, as the protocol and the output files spell it."""
        return f"{self.name}-{self.num_keys}"


class SourceTree:
    """The files under one source root, read once (`snapshot.py`) and decoded on first use."""

    def __init__(self, root: Path, snapshot: Snapshot | None = None) -> None:
        self.root = root
        self._real_root = Path(os.path.realpath(root))
        self.snapshot = take_snapshot(root) if snapshot is None else snapshot
        self._files: dict[str, SourceFile | None] = {}
        self.diagnostics: list[Diagnostic] = []

    def find_scripts(self) -> list[ScriptEntry]:
        """Every script directly in the root, sorted by file name; misnamed files are reported."""
        entries: list[ScriptEntry] = []
        seen: dict[str, str] = {}
        undecodable = self._undecodable_names()
        top_level = sorted(
            n for n in self.snapshot if "/" not in n and n.endswith(".lua") and n not in undecodable
        )
        for path in map(Path, top_level):
            match = SCRIPT_NAME.match(path.name)
            if match is None:
                self.diagnostics.append(
                    Diagnostic(
                        path.name,
                        1,
                        1,
                        Severity.ERROR,
                        "bad-filename",
                        f"script file '{path.name}' is not named <name>-<N>.lua, where N is its"
                        " number of KEYS (shared code belongs in includes/)",
                    )
                )
                continue
            name = match["name"]
            if name in seen:
                self.diagnostics.append(
                    Diagnostic(
                        path.name,
                        1,
                        1,
                        Severity.ERROR,
                        "duplicate-script",
                        f"script '{name}' is also defined by '{seen[name]}'",
                    )
                )
                continue
            seen[name] = path.name
            num_keys = int(match["keys"])
            if num_keys > MAX_KEYS:
                self.diagnostics.append(
                    Diagnostic(
                        path.name,
                        1,
                        1,
                        Severity.ERROR,
                        "keys-limit",
                        f"the filename declares {num_keys} keys, more than the {MAX_KEYS} a"
                        " script may take: declare a longer or varying list of keys with"
                        " '@key...' in the header",
                    )
                )
                continue
            entries.append(ScriptEntry(name, num_keys, path.name))
        return entries

    def _undecodable_names(self) -> set[str]:
        """The `.lua` files whose names are not UTF-8, each reported: no script or include can
        be named by them."""
        found = set()
        for rel in self.snapshot:
            if not rel.endswith(".lua") or rel.isascii():
                continue
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:  # os.walk kept the undecodable bytes as surrogates
                found.add(rel)
                # JSON cannot hold the undecodable bytes either: both formats show them escaped.
                shown = escape_controls(rel)
                name = shown.rsplit("/", 1)[-1]
                self.diagnostics.append(
                    Diagnostic(
                        shown,
                        1,
                        1,
                        Severity.ERROR,
                        "bad-filename",
                        f"file name '{name}' is not valid UTF-8",
                    )
                )
        return found

    def _unreadable(self, rel: str) -> str:
        """Why the snapshot holds no bytes for `rel`, as far as the file system still tells."""
        path = self.root / rel
        if path.is_symlink() and not self.contains(path):
            # Following it could read anything on the machine (see snapshot.py).
            return "cannot read the file: it is a symbolic link to outside the source root"
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return (
                    "cannot read the file: it is a loop of symbolic links, or too long a chain"
                    " of them"
                )
            if path.is_symlink() and exc.errno == errno.ENOENT:
                return "cannot read the file: it is a broken symbolic link"
            return "cannot read the file"
        if stat.S_ISREG(mode):
            return "cannot read the file"
        return f"cannot read the file: it is {file_kind(mode)}, not a regular file"

    def contains(self, path: Path) -> bool:
        """True when `path`, with symlinks followed, lies inside the source root."""
        try:
            os.stat(path)
        except OSError as exc:
            # Links the system will not follow (a loop, or a chain of more than 40) lead
            # nowhere, so not out of the root; and os.path.realpath recurses once per link.
            if exc.errno == errno.ELOOP:
                return True
        # os.path.realpath, not Path.resolve, which raises RuntimeError on a loop of links.
        return Path(os.path.realpath(path)).is_relative_to(self._real_root)

    def has(self, rel: str) -> bool:
        """True when the snapshot holds the file at root-relative `rel`."""
        return rel in self.snapshot

    def read(self, rel: str) -> SourceFile | None:
        """The file at root-relative `rel`, or None (with a diagnostic) when it is unusable."""
        if rel not in self._files:
            self._files[rel] = self._load(rel)
        return self._files[rel]

    def _load(self, rel: str) -> SourceFile | None:
        data = self.snapshot.get(rel)
        if data is None:
            self.diagnostics.append(
                Diagnostic(rel, 1, 1, Severity.ERROR, "read-error", self._unreadable(rel))
            )
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = line_number(data, exc.start)
            self.diagnostics.append(
                Diagnostic(
                    rel, line, 1, Severity.ERROR, "encoding", f"not valid UTF-8: {exc.reason}"
                )
            )
            return None
        # Scripts are sent with '\n' line ends whatever the checkout did to them, so a Windows
        # clone builds the same bytes (and the same sha1) as a Linux one. Every line end Lua
        # counts becomes one '\n', so a line of the file is a line of the resolved script.
        text = normalise_line_ends(text)
        lines = split_lines(text)
        # The digest is of the normalised text for the same reason: the manifest must not change
        # with the checkout's line-end setting.
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        return SourceFile(rel, tuple(lines), digest)
