"""The two caches of the build, both kept outside git (see `default_cache_dir`).

Analysis cache: `Facts` stored by the hash of the analyser and the script text, so a script that
did not change is never parsed again. The key covers the analyser's source files and the
installed parser packages: editing the analyser or upgrading a parser never serves a stale
result.

Build stamps: after a successful `build`, a stamp records a digest of every input (each file
under the source directory, every pyproject.toml the settings may come from, the command's
settings, the tool's own code) and the sha256 of every file written. A later `build` with the
same digest, whose output directory still holds exactly those files, replays the stamped
findings and stops without loading the checker, the parsers or the emitter. Anything else (a
changed byte anywhere, an edited or extra output file, a damaged stamp) takes the full path,
which stamps again.

Damaged or unreadable entries, and entries that are not regular files, count as misses, and a
cache that cannot be written only costs speed. This module is on the no-op rebuild's hot path, so
it imports only light modules: os.path rather than pathlib, and stamps in `marshal`'s format
rather than JSON, which together spare that path the imports of pathlib, json and re (about half
of what it imported).
"""

from __future__ import annotations

import marshal
import os
import sys

from .errors import ConfigError
from .fileindex import FileIndex, load_entries, seal_hash, sha256
from .snapshot import Snapshot, read_regular, read_tree

# Not typing.TYPE_CHECKING: importing typing would cost the no-op rebuild about 5 ms, and the
# annotations below are only strings (from __future__ import annotations). mypy reads a
# variable of this name as typing's.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .analyse import Facts
    from .snapshot import StrPath

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# The modules whose code decides what `Facts` holds.
_ANALYSER_MODULES = ("analyse.py", "syntax.py", "lines.py", "redis_lua.py")
# 2: sha256 of the payload, then the payload in marshal's format (1 was JSON); 3: findings in
# every output format, and invocations that record --quiet and --color; 4: sealed by BLAKE2b
# (fileindex.seal_hash), the digest over each file's SHA-256.
_STAMP_FORMAT = 4
# What a stamp keeps of the findings: each --format's output, the text coloured too, and the
# text format's summary line.
FINDING_FORMATS = ("text", "color", "summary", "json", "github")


def default_cache_dir() -> str:
    """`$ECHOMQ_SCRIPTS_CACHE_DIR`, else `$XDG_CACHE_HOME/echomq-scripts`, else ~/.cache/..."""
    explicit = os.environ.get("ECHOMQ_SCRIPTS_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home == "~":  # no HOME and no password entry: never a folder named "~" here
            raise ConfigError(
                "no home directory for the cache: set ECHOMQ_SCRIPTS_CACHE_DIR, or pass"
                " --cache-dir or --no-cache"
            )
        base = os.path.join(home, ".cache")
    return os.path.join(base, "echomq-scripts")


def _read(path: str) -> bytes:
    # Anything but a regular file (a named pipe in the cache, or as pyproject.toml, would block
    # the read forever) is refused unopened: NotRegularFile, an OSError, which every reader here
    # takes for a miss.
    return read_regular(path, path)


# Per process: the tool's code and the installed parsers do not change while it runs, and a
# build that does work asks twice (before it, and again before it stamps).
_fingerprints: dict[tuple[str, ...] | None, bytes] = {}


def tool_fingerprint(
    modules: tuple[str, ...] | None = None, index: FileIndex | None = None
) -> bytes:
    """A digest of the toolchain's code and templates and the runtime's code (or of `modules`
    only), and of the installed parsers; the files' hashes taken from `index` where it knows
    them."""
    known = _fingerprints.get(modules)
    if known is None:
        known = _fingerprints[modules] = _fingerprint(modules, index)
    return known


def _file_sha256(path: str, index: FileIndex | None) -> str:
    """The hex SHA-256 of the regular file at `path`; OSError when there is none."""
    if index is None:
        return sha256(_read(path)).hexdigest()  # type: ignore[no-any-return]
    found = index.source_hash(path, path)
    if found is None:
        raise OSError(f"{path}: not a regular file that can be read")
    return found


def _fingerprint(modules: tuple[str, ...] | None, index: FileIndex | None = None) -> bytes:
    digest = seal_hash()
    # The build reads the runtime's grammar and code table too: its modules count as the tool's.
    everything = [
        f"{folder}/{name}" if folder != "." else name
        for folder, suffix in (
            (".", ".py"),
            (".", ".json"),  # manifest.schema.json, copied into every build
            ("templates", ".j2"),
            ("../runtime", ".py"),
            ("..", "__init__.py"),  # the version, which the manifest and the package record
        )
        for name in os.listdir(os.path.join(_PACKAGE_DIR, folder))
        if name.endswith(suffix)
    ]
    names = modules or tuple(sorted(everything))
    for name in names:
        file_hash = _file_sha256(os.path.join(_PACKAGE_DIR, name), index)
        digest.update(f"{name}\0{file_hash}\0".encode())
    # An upgraded parser is a new file on disk: the location, size and time of its __init__.py
    # stand in for its version, found without importing it (which the caches exist to avoid).
    for package in ("tree_sitter", "tree_sitter_lua", "lupa"):
        for entry in sys.path:
            init = os.path.join(entry or ".", package, "__init__.py")
            if os.path.isfile(init):
                stat = os.stat(init)
                digest.update(f"{init}:{stat.st_size}:{stat.st_mtime_ns}".encode())
                break
    result: bytes = digest.digest()
    return result


def _write_atomically(path: str, data: bytes) -> None:
    # Written whole and renamed, so a concurrent build never reads half an entry.
    temp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(temp, "wb") as handle:
            handle.write(data)
        os.replace(temp, path)
    except OSError:
        try:  # noqa: SIM105 - contextlib would be one more import on the no-op rebuild's path
            os.unlink(temp)
        except OSError:
            pass


class AnalysisCache:
    """Facts by content; `directory=None` disables caching."""

    def __init__(self, directory: StrPath | None) -> None:
        self.directory = None if directory is None else os.fspath(directory)
        self._fingerprint = tool_fingerprint(_ANALYSER_MODULES) if directory is not None else b""

    def _path(self, text: str) -> str | None:
        if self.directory is None:
            return None
        import hashlib  # the build's path: OpenSSL's SHA-256 is the faster on long texts

        key = hashlib.sha256(self._fingerprint + text.encode("utf-8")).hexdigest()
        return os.path.join(self.directory, f"{key}.json")

    def get(self, text: str) -> Facts | None:
        import hashlib
        import json

        from .analyse import Facts

        path = self._path(text)
        if path is None:
            return None
        # Resolved text ends every line with '\n': a row of the script is below this count.
        rows = text.count("\n") + (not text.endswith("\n"))
        try:
            # The entry's sha256 first: a damaged entry can be valid JSON of the right shape (a
            # byte gone from a message) and would change the findings. from_json then checks
            # every field: an intact entry of the wrong shape is a miss too.
            data = _read(path)
            checksum, payload = data[:32], data[32:]
            if hashlib.sha256(payload).digest() != checksum:
                return None
            return Facts.from_json(json.loads(payload), rows)
        except (OSError, ValueError, RecursionError):
            return None

    def put(self, text: str, facts: Facts) -> None:
        import hashlib
        import json

        path = self._path(text)
        if path is not None:
            payload = json.dumps(facts.to_json()).encode("utf-8")
            _write_atomically(path, hashlib.sha256(payload).digest() + payload)


def build_digest(snapshot: Snapshot, src: StrPath, out: StrPath, settings: str) -> str:
    """The digest of everything a build of the `snapshot` of `src` into `out` depends on."""
    hashes = {
        name: None if data is None else sha256(data).hexdigest() for name, data in snapshot.items()
    }
    return digest_of(hashes, src, out, settings)


def digest_of(
    hashes: dict[str, str | None],
    src: StrPath,
    out: StrPath,
    settings: str,
    index: FileIndex | None = None,
) -> str:
    """`build_digest` of a snapshot whose files have the SHA-256 `hashes` (None for a name kept
    without bytes), without their bytes: the replay reads only what `index` cannot vouch for."""
    digest = seal_hash(tool_fingerprint(index=index))

    def add(part: bytes) -> None:
        # Length-prefixed, so no two different sequences of parts digest alike.
        digest.update(len(part).to_bytes(8, "big") + part)

    # os.path.realpath is what Path.resolve() uses: the same text for the same directory.
    real_src = os.path.realpath(src)
    for setting in (real_src, os.path.realpath(out), settings):
        add(setting.encode("utf-8", "surrogateescape"))  # a path need not be UTF-8
    # The settings file is the first of these that config.py takes: every candidate counts.
    for candidate in settings_candidates(real_src):
        add(candidate.encode("utf-8", "surrogateescape"))
        try:
            add(b"=" + _file_sha256(candidate, index).encode())
        except OSError:
            # Absent, or there and unusable (a directory, a named pipe, unreadable), which
            # config.py refuses: two different marks, so the replay never answers for a tree
            # whose build would now fail. exists(), as config.find_settings asks it.
            add(b"!" if os.path.exists(candidate) else b"\xff")
    # Each file by the SHA-256 of its bytes, so the replay can take a hash its index holds.
    for name, file_hash in hashes.items():
        add(os.fsencode(name))  # the name's bytes, which need not be UTF-8 either
        add(b"\xff" if file_hash is None else b"=" + file_hash.encode())
    return digest.hexdigest()  # type: ignore[no-any-return]


def settings_candidates(real_src: str) -> list[str]:
    """Every `pyproject.toml` that config.py's walks (up from the source directory, and up from
    the working directory) may read."""
    found: list[str] = []
    for start in (real_src, os.getcwd()):
        directory = start
        while True:
            found.append(os.path.join(directory, "pyproject.toml"))
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return found


def inside(path: StrPath, tree: StrPath) -> bool:
    """Whether `path` lies in `tree` once both are resolved."""
    real, real_tree = os.path.realpath(path), os.path.realpath(tree)
    return real == real_tree or real.startswith(os.path.join(real_tree, ""))


def _stamp_path(cache_dir: StrPath, digest: str) -> str:
    return os.path.join(cache_dir, "builds", f"{digest}.stamp")


def _read_sealed(path: str) -> object:
    """What `_write_sealed` wrote at `path`; ValueError when it is damaged."""
    # The payload's own checksum (BLAKE2b) comes first: marshal is not made to read damaged
    # data (a few wrong bytes can make it allocate gigabytes), so only an intact payload
    # reaches it.
    data = _read(path)
    checksum, payload = data[:32], data[32:]
    if len(checksum) != 32 or seal_hash(payload).digest() != checksum:
        raise ValueError("damaged")
    return marshal.loads(payload)


def _write_sealed(path: str, value: dict[str, Any]) -> None:
    _write_sealed_bytes(path, marshal.dumps(value))


def _write_sealed_bytes(path: str, payload: bytes) -> None:
    _write_atomically(path, seal_hash(payload).digest() + payload)


def replay_build(
    cache_dir: StrPath, digest: str, index: FileIndex | None = None
) -> dict[str, Any] | None:
    """The stamp of an identical earlier build, if every directory it wrote still holds
    exactly the files it wrote there (the build directory, and any generated package); the
    files' hashes taken from `index` where it knows them."""
    try:
        stamp = _read_sealed(_stamp_path(cache_dir, digest))
        if not isinstance(stamp, dict) or not _stamp_shape(stamp):
            return None
        directories: dict[str, dict[str, str]] = stamp["outputs"]
        for directory, expected in directories.items():
            if index is not None:
                present = index.output_hashes(directory) if os.path.isdir(directory) else {}
                if present != expected:
                    return None
                continue
            tree = read_tree(directory) if os.path.isdir(directory) else {}
            if tree.keys() != expected.keys():
                return None
            for name, data in tree.items():
                if sha256(data).hexdigest() != expected[name]:
                    return None
    except (OSError, ValueError, EOFError, KeyError, TypeError, AttributeError, MemoryError):
        return None
    return dict(stamp)


def _stamp_shape(stamp: dict[Any, Any]) -> bool:
    """Whether a loaded stamp has the fields, of the types, that a replay prints and checks."""
    if stamp.get("format") != _STAMP_FORMAT:
        return False
    findings, outputs = stamp.get("findings"), stamp.get("outputs")
    return (
        isinstance(stamp.get("scripts"), int)
        and isinstance(findings, dict)
        and all(isinstance(findings.get(k), str) for k in FINDING_FORMATS)
        and isinstance(outputs, dict)
        and all(
            isinstance(d, str)
            and isinstance(f, dict)
            and all(isinstance(n, str) and isinstance(h, str) for n, h in f.items())
            for d, f in outputs.items()
        )
    )


def stamp_build(
    cache_dir: StrPath,
    digest: str,
    outputs: dict[StrPath, dict[str, bytes]],
    report: dict[str, Any],
) -> None:
    """Record a successful build of the inputs `digest` names: the files it left in each
    directory, and what it reported."""
    recorded = {
        os.path.realpath(directory): {n: sha256(d).hexdigest() for n, d in files.items()}
        for directory, files in outputs.items()
    }
    stamp = {"format": _STAMP_FORMAT, "outputs": recorded, **report}
    _write_sealed(_stamp_path(cache_dir, digest), stamp)


# Invocations: a build that stamps records its command line (the working directory and the raw
# arguments) in the default cache directory, where the console script finds it without parsing
# anything: an identical command line names the same sources, output, cache and settings.
_INVOCATION_FIELDS = (
    "src",
    "out",
    "out_text",
    "cache",
    "settings",
    "output_format",
    "quiet",  # "1" for --quiet, else ""
    "color",  # --color as given: auto, always or never
)


def _invocation_path(cwd: str, argv: list[str]) -> str:
    key = seal_hash("\0".join([cwd, *argv]).encode("utf-8", "surrogateescape"))
    return os.path.join(default_cache_dir(), "invocations", f"{key.hexdigest()}.stamp")


def record_invocation(cwd: str, argv: list[str], record: dict[str, str]) -> None:
    """Record what the command line `argv`, run in `cwd`, built. Nothing is recorded without a
    default cache directory (no home), or where it lies in the build's sources or output: the
    command line is then always parsed."""
    try:
        path = _invocation_path(cwd, argv)
    except ConfigError:
        return
    if inside(path, record["src"]) or inside(path, record["out"]):
        return
    _write_sealed(path, {"format": _STAMP_FORMAT, "argv": [cwd, *argv], **record})


def recorded_invocation(cwd: str, argv: list[str]) -> dict[str, str] | None:
    """What `record_invocation` recorded for exactly this command line, if anything."""
    try:
        record = _read_sealed(_invocation_path(cwd, argv))
    except (ConfigError, OSError, ValueError, EOFError, TypeError, MemoryError):
        return None
    if (
        not isinstance(record, dict)
        or record.get("format") != _STAMP_FORMAT
        or record.get("argv") != [cwd, *argv]  # a hash collision is not the same command line
        or not all(isinstance(record.get(name), str) for name in _INVOCATION_FIELDS)
    ):
        return None
    return {name: record[name] for name in _INVOCATION_FIELDS}


# The file index of a command line: beside its record, `<key>.index`, written by the console
# script's replay (fileindex.py). Only a cache of hashes: a damaged one is read as empty.


def load_index(cwd: str, argv: list[str]) -> FileIndex:
    """The file index the replay of this command line left, or an empty one."""
    try:
        path = _invocation_path(cwd, argv)[: -len(".stamp")] + ".index"
        data = _read(path)
        checksum, payload = data[:32], data[32:]
        if len(checksum) != 32 or seal_hash(payload).digest() != checksum:
            return FileIndex()
        return FileIndex(load_entries(payload))
    except (ConfigError, OSError, ValueError, EOFError, TypeError, MemoryError):
        return FileIndex()


def save_index(
    cwd: str, argv: list[str], index: FileIndex, trees: tuple[str, ...], complete: bool
) -> None:
    """Write `index` for this command line when it learnt or dropped an entry (the entries of
    files it did not look at are dropped only when the run was `complete`); never into one of
    `trees` (the sources and the outputs), as `record_invocation` never writes there."""
    if not index.stale(complete):
        return
    try:
        path = _invocation_path(cwd, argv)[: -len(".stamp")] + ".index"
    except ConfigError:
        return
    if any(inside(path, tree) for tree in trees):
        return
    _write_sealed_bytes(path, index.dumps(complete))
