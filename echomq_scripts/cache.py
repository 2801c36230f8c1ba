"""The analysis cache: `Facts` stored by the hash of the analyser and the script text.

A rebuild whose scripts did not change loads every result from here and never starts Lua or
tree-sitter. The key covers the analyser's source files and the installed parser packages, so
editing the analyser or upgrading a parser never serves a stale result. Entries are small JSON
files; a damaged or unreadable entry counts as a miss, and a cache that cannot be written only
costs speed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from pathlib import Path

from .analyse import Facts

# The modules whose code decides what `Facts` holds, and the packages they parse with.
_ANALYSER_MODULES = ("analyse.py", "syntax.py", "redis_lua.py")
_PARSER_PACKAGES = ("tree_sitter", "tree_sitter_lua", "lupa")


def default_cache_dir() -> Path:
    """`$ECHOMQ_SCRIPTS_CACHE_DIR`, else `$XDG_CACHE_HOME/echomq-scripts`, else ~/.cache/..."""
    explicit = os.environ.get("ECHOMQ_SCRIPTS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "echomq-scripts"


def _analyser_fingerprint() -> bytes:
    digest = hashlib.sha256()
    here = Path(__file__).parent
    for name in _ANALYSER_MODULES:
        digest.update((here / name).read_bytes())
    # An upgraded parser is a new file on disk: its location, size and time stand in for its
    # version, found without importing it (importing is what the cache exists to avoid).
    for package in _PARSER_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            stat = os.stat(spec.origin)
            digest.update(f"{spec.origin}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.digest()


class AnalysisCache:
    """Facts by content; `directory=None` disables caching."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._fingerprint = _analyser_fingerprint() if directory is not None else b""

    def _path(self, text: str) -> Path | None:
        if self.directory is None:
            return None
        key = hashlib.sha256(self._fingerprint + text.encode("utf-8")).hexdigest()
        return self.directory / f"{key}.json"

    def get(self, text: str) -> Facts | None:
        path = self._path(text)
        if path is None:
            return None
        try:
            return Facts.from_json(json.loads(path.read_bytes()))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, text: str, facts: Facts) -> None:
        path = self._path(text)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Written whole and renamed, so a concurrent build never reads half an entry.
            fd, temp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(facts.to_json(), handle)
            os.replace(temp, path)
        except OSError:
            pass
