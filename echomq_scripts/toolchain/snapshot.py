"""One read of a source tree: every file's bytes, taken once and used by every later stage.

The build's up-to-date check hashes this snapshot and the build itself reads only from it, so
the digest a build is stamped with always describes the bytes it was built from, even when files
change while it runs. Links are followed only where they stay inside the tree: following a link
out of it could read anything on the machine. Such a link, a link to nothing and a named pipe are
kept by name without bytes, so that a script they stand for is reported, not silently missing.

This module is on the no-op rebuild's hot path: it imports nothing heavy (os.path, not pathlib,
whose imports alone would cost that path a tenth of its time).
"""

from __future__ import annotations

import os
import stat

# Not typing.TYPE_CHECKING, and collections.abc only for mypy: on the replay's path, importing
# collections.abc (and collections with it) would cost a few milliseconds (see cache.py).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

# Path (relative, '/'-separated) -> bytes, or None when the file could not be read.
Snapshot = dict[str, bytes | None]

# What the functions here take for a path: a str or a pathlib.Path alike.
StrPath = str | os.PathLike[str]


# Flags that make opening a file never wait: a named pipe opened to read blocks until a writer
# comes, forever in a build. (Not on Windows, which has no such files, but does have text mode.)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def file_kind(mode: int) -> str:
    """What a file of `mode` (from os.stat) is, in words: "a named pipe"."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((kind for test, kind in _KINDS if test(mode)), "a special file")


class NotRegularFile(OSError):
    """A path names something other than a regular file, which the build never opens."""

    def __init__(self, name: str, mode: int) -> None:
        super().__init__(name)
        self.name = name
        self.kind = file_kind(mode)

    def __str__(self) -> str:
        return f"'{self.name}': it is {self.kind}, not a regular file"


def read_regular(path: str, name: str, most: int = -1) -> bytes:
    """The bytes of the regular file at `path` (links followed), at most `most` of them (-1: all);
    `NotRegularFile`, reported as `name`, for anything else, which is not opened at all. Other
    errors propagate as OSError."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise NotRegularFile(name, mode)
    # Something else may take the file's place between the stat and the open: the open does
    # not wait, and the open file is checked again.
    with open(os.open(path, _OPEN_FLAGS), "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(name, mode)
        return handle.read(most)


def walk(top: str, followlinks: bool = False) -> Iterator[tuple[str, list[str], list[str]]]:
    """os.walk, top-down, errors ignored, the caller's changes to the directory names heeded,
    but with a stack of its own: Python 3.11's os.walk recurses once per directory level, so a
    tree nested a thousand directories deep would stop the build with RecursionError."""
    for directory, subdirs, names, _links in _walk(top, followlinks):
        yield directory, subdirs, names


def _walk(top: str, followlinks: bool) -> Iterator[tuple[str, list[str], list[str], set[str]]]:
    """`walk`, each directory also with the set of its names that are symbolic links, as the
    directory listing says (no system call per name where the file system tells the type)."""
    pending = [top]
    while pending:
        directory = pending.pop()
        subdirs: list[str] = []
        names: list[str] = []
        links: set[str] = set()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    try:
                        if entry.is_symlink():
                            links.add(entry.name)
                        is_dir = entry.is_dir()  # a link to a directory counts, as in os.walk
                    except OSError:
                        is_dir = False
                    (subdirs if is_dir else names).append(entry.name)
        except OSError:
            continue
        yield directory, subdirs, names, links
        base = _joinable(directory)
        for name in reversed(subdirs):
            if followlinks or name not in links:
                pending.append(base + name)


def _joinable(directory: str) -> str:
    """`directory` ready to have a name appended: os.path.join(directory, ""), which the walks
    use instead of one os.path.join a name (a third of a no-op rebuild's Python time)."""
    return directory if directory.endswith(os.sep) else directory + os.sep


def _relative(path: str, prefix: str) -> str:
    """`path`, which os.walk made under the tree whose os.path.join(root, "") is `prefix`,
    relative to that root and '/'-separated."""
    return path[len(prefix) :].replace(os.sep, "/")


def take_snapshot(root: StrPath) -> Snapshot:
    """Every name under `root`, in sorted order: a regular file whose real location is inside
    `root` with its bytes, anything else (a link out of the tree or to nothing, a named pipe, a
    file that cannot be read) with None, which the stage that wants the file reports."""
    files: Snapshot = {}
    for rel, path in tree_entries(root):
        # A name that cannot be read is kept all the same: a script missing from the build
        # must be reported, not silently left out (and its coming or going must change the
        # build's digest).
        data = None
        if path is not None:
            try:
                data = read_regular(path, rel)
            except OSError:
                data = None
        files[rel] = data
    return files


def tree_entries(root: StrPath) -> Iterator[tuple[str, str | None]]:
    """What `take_snapshot` keeps, without reading it: each name under `root` in its order, with
    the path to read for it, or None where the snapshot keeps no bytes (a link out of the tree,
    a link the system will not follow). The replay's file index walks the tree with this."""
    root = os.fspath(root)
    prefix = os.path.join(root, "")
    real_root = os.path.realpath(root)
    inside = real_root.rstrip(os.sep) + os.sep
    seen: set[str] = set()
    # The real path of a directory still to be walked, where its parent's gives it: asking
    # realpath would look up every level again, which costs a tree nested a thousand deep
    # minutes.
    known: dict[str, str] = {}
    for directory, subdirs, names, links in _walk(root, followlinks=True):
        real = known.pop(directory, None) or os.path.realpath(directory)
        if real in seen or not (real == real_root or real.startswith(inside)):
            subdirs.clear()
            continue
        seen.add(real)
        subdirs.sort()
        base, real_base = _joinable(directory), _joinable(real)
        rel_base = _relative(base, prefix)
        for name in subdirs:
            if name not in links:
                known[base + name] = real_base + name
        for name in sorted(names):
            path = base + name
            rel = rel_base + name
            readable: str | None = None
            try:
                if name in links:
                    # Links the system will not follow (a loop, or a chain of more than 40:
                    # ELOOP) never reach realpath, which recurses once per link.
                    os.stat(path)
                    real_path = os.path.realpath(path)
                else:
                    real_path = real_base + name
                if real_path.startswith(inside):
                    readable = path
            except OSError:
                readable = None
            yield rel, readable


def read_tree(directory: StrPath) -> dict[str, bytes]:
    """Every entry under `directory` that is not a directory, links unfollowed (a link reads as
    empty), by '/'-separated relative path, bytecode caches left out. Read errors propagate
    as OSError; an entry that is not a regular file (a named pipe, a socket) as its subclass
    `NotRegularFile`, without being opened."""
    found: dict[str, bytes] = {}
    for rel, path in output_entries(directory):
        if os.path.islink(path):
            found[rel] = b""
        else:
            # A named pipe here (never one of ours) would hang the read: NotRegularFile.
            found[rel] = read_regular(path, rel)
    return found


def output_entries(directory: StrPath) -> Iterator[tuple[str, str]]:
    """The names `read_tree` reads, in its order, each with its path, without reading them."""
    directory = os.fspath(directory)
    prefix = os.path.join(directory, "")
    for parent, subdirs, names, links in _walk(directory, followlinks=False):
        # Python writes bytecode into a generated package as soon as it is imported: that is
        # the interpreter's, not the build's, and neither a difference nor ours to delete.
        subdirs[:] = sorted(d for d in subdirs if d != "__pycache__")
        names = [n for n in names if not n.endswith(".pyc")]
        # os.walk lists links to directories among the subdirectories; they are entries here.
        entries = sorted(names) + [d for d in subdirs if d in links]
        base = _joinable(parent)
        rel_base = _relative(base, prefix)
        for name in entries:
            yield rel_base + name, base + name
