"""The replay's file index: the SHA-256 of each file it read before, by the file's stat, so
that a file whose stat has not changed is not read again (git's index does the same).

An entry is the file's (size, mtime, ctime, inode, device, mode) and the SHA-256 of its bytes.
A file whose stat equals its entry's is taken to hold the bytes the entry hashed: any write
changes its ctime (and usually its mtime and size), and ctime cannot be set by hand, so an edit
with the size and the mtime put back (`touch -d`) is still seen. The one write a stat cannot
show is one within the same tick of the file system's clock as the stat that was recorded
("racily clean" in git's words). So an entry is kept only for a file whose mtime and ctime are
both older than `RACY_NS` before the index's run began, and every stat is taken before the
file's bytes are read: a file written later has a later ctime, and so another stat. A younger
file is hashed on every run until it is old enough.

Anything the index cannot vouch for is read and hashed, as without it: a file that is new, gone
or changed, a link repointed (the stat is the target's), a named pipe (never opened). Listing
the directories is never skipped, so a file added or removed is always seen. A damaged or
missing index only costs the reads. Light imports: it is on the replay's path.
"""

from __future__ import annotations

import marshal
import os
import stat
import time

from .snapshot import NotRegularFile, StrPath, output_entries, read_regular, tree_entries

TYPE_CHECKING = False  # not typing's: see cache.py
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Signature = tuple[int, int, int, int, int, int]

# How much older than the run a file's mtime and ctime must be for its entry to be kept: far
# more than a tick of any clock that stamps files (Linux's coarse clock: a few ms; FAT: 2 s).
RACY_NS = 2_000_000_000

# The index's own format: (format, {key: ((size, mtime, ctime, inode, device, mode), sha256)}).
_INDEX_FORMAT = 1


def _light_hash(modules: tuple[str, ...], name: str) -> Callable[..., Any]:
    """The hash constructor `name` that is cheapest to import: hashlib's when hashlib is loaded
    already, else the builtin module's (a fraction of a millisecond, against about 3 ms for
    hashlib and OpenSSL, half of what the replay costs beyond the interpreter). Both give the
    same digests."""
    import sys

    loaded = sys.modules.get("hashlib")
    if loaded is not None:
        return getattr(loaded, name)  # type: ignore[no-any-return]
    for module in modules:
        try:
            return getattr(__import__(module), name)  # type: ignore[no-any-return]
        except ImportError:
            pass
    import hashlib

    return getattr(hashlib, name)  # type: ignore[no-any-return]


_sha256: Callable[..., Any] | None = None


def sha256(data: bytes = b"") -> Any:
    """A SHA-256 hash object: each file's hash in the digest, the stamp and this index. Loaded
    on first use: a no-op rebuild whose index vouches for every file hashes no file."""
    global _sha256
    if _sha256 is None:
        # The builtin module's name before Python 3.12, and after.
        _sha256 = _light_hash(("_sha256", "_sha2"), "sha256")
    return _sha256(data)


_blake2b = _light_hash(("_blake2",), "blake2b")


def seal_hash(data: bytes = b"") -> Any:
    """A 32-byte BLAKE2b hash object: the checksum of the stamps, the records and this index,
    the build's digest and a record's name. Three times as fast as SHA-256 from the builtin
    modules, and the replay hashes the whole stamp and index on every run."""
    return _blake2b(data, digest_size=32)


# sha256(b"").hexdigest(): a link among the outputs reads as empty (snapshot.read_tree).
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def _signature(st: os.stat_result) -> Signature:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, st.st_mode)


class FileIndex:
    """SHA-256 of files by their stat, for one command line's replay. `entries` maps a key
    ("s" or "o", then the path) to (signature, hex digest); `now_ns` is when the run began (a
    test may set it)."""

    def __init__(self, entries: dict[str, Any] | None = None, now_ns: int | None = None) -> None:
        self.entries: dict[str, Any] = {} if entries is None else entries
        self.now_ns = time.time_ns() if now_ns is None else now_ns
        self.used: set[str] = set()
        self.changed = False
        self.read = 0  # how many files were read this run (for the tests)

    def _known(self, key: str, st: os.stat_result) -> str | None:
        # Once a file and a few hundred a run: the signature is built here, not in a call.
        self.used.add(key)
        entry = self.entries.get(key)
        if entry is not None and entry[0] == (
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_ino,
            st.st_dev,
            st.st_mode,
        ):
            return entry[1]  # type: ignore[no-any-return]
        return None

    def _learn(self, key: str, st: os.stat_result, digest: str) -> None:
        self.read += 1
        settled = max(st.st_mtime_ns, st.st_ctime_ns) + RACY_NS <= self.now_ns
        entry = (_signature(st), digest) if settled else None
        if self.entries.get(key) != entry:
            self.changed = True
            if entry is None:
                del self.entries[key]
            else:
                self.entries[key] = entry

    def source_hash(self, path: str, name: str) -> str | None:
        """The hex SHA-256 of the regular file at `path` (links followed), or None when it is
        not one or cannot be read: what take_snapshot reads, or keeps as None."""
        try:
            st = os.stat(path)  # before the read: the bytes hashed are never older than it
            if not stat.S_ISREG(st.st_mode):
                return None
            key = "s" + path
            known = self._known(key, st)
            if known is not None:
                return known
            data = read_regular(path, name)
        except OSError:
            return None
        digest: str = sha256(data).hexdigest()
        self._learn(key, st, digest)
        return digest

    def output_hash(self, path: str, name: str) -> str:
        """The hex SHA-256 of what read_tree reads for `path` (a link is empty, never followed);
        OSError as read_tree raises it, NotRegularFile for a named pipe, unopened."""
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            return EMPTY_SHA256
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(name, st.st_mode)
        key = "o" + path
        known = self._known(key, st)
        if known is not None:
            return known
        digest: str = sha256(read_regular(path, name)).hexdigest()
        self._learn(key, st, digest)
        return digest

    def tree_hashes(self, root: StrPath) -> dict[str, str | None]:
        """take_snapshot's names under `root`, in its order, each with the hex SHA-256 of its
        bytes, or None where the snapshot holds None."""
        return {
            name: None if path is None else self.source_hash(path, name)
            for name, path in tree_entries(root)
        }

    def output_hashes(self, directory: str) -> dict[str, str] | None:
        """read_tree's names under `directory` with their hex SHA-256, or None when one of them
        is not a regular file or a link."""
        try:
            return {name: self.output_hash(path, name) for name, path in output_entries(directory)}
        except OSError:
            return None

    def dumps(self, prune: bool = True) -> bytes:
        """The entries in marshal's format (what `load_entries` reads back); with `prune`, only
        those used this run (a run that stopped early has not used every file's)."""
        kept = {k: v for k, v in self.entries.items() if k in self.used or not prune}
        return marshal.dumps((_INDEX_FORMAT, kept))

    def stale(self, prune: bool = True) -> bool:
        """Whether the stored index differs from what `dumps(prune)` would write now."""
        return self.changed or (prune and any(key not in self.used for key in self.entries))


def load_entries(payload: bytes) -> dict[str, Any]:
    """The entries of an index that `FileIndex.dumps` wrote; {} when the payload is another
    format's. The payload is sealed by its checksum (cache.py), so only this module wrote it:
    its entries are not checked one by one (a check that would cost the replay as much as all
    its stats), and a malformed one could only raise, which the console script takes for a
    miss."""
    loaded = marshal.loads(payload)
    if isinstance(loaded, tuple) and len(loaded) == 2 and loaded[0] == _INDEX_FORMAT:
        entries = loaded[1]
        if isinstance(entries, dict):
            return entries
    return {}
