"""The analysis cache: `Facts` stored by the hash of the analyser's own code and the script text.

A rebuild whose scripts did not change loads every result from here and never starts Lua or
tree-sitter. The key covers the analyser's source files, so editing the analyser (even without
a version bump) never serves a stale result. Entries are small JSON files; a damaged or
unreadable entry counts as a miss, and a cache that cannot be written only costs speed.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from .analyse import Facts

# The modules whose code decides what `Facts` holds.
_ANALYSER_MODULES = ("analyse.py", "syntax.py", "redis_lua.py")


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
