"""BullMQ's published script tree (npm package `bullmq`, `dist/cjs/commands`), fetched once.

`npm pack` fetches the pinned version's tarball into a cache directory, where its sha256 is
checked; later runs need neither npm nor the network. The tests (test_foreign_tree.py) and the
benchmark (bench/run.py) use the same copy: pytest's cache directory, `.pytest_cache/d/`.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

VERSION = "6.7.0"
SHA256 = "1b9e166ff4c77ecbb75c15f0e2afc3bdce7aaf3789f4701b45ed0483dcbadb04"
CACHE_NAME = f"bullmq-{VERSION}"  # the directory's name under pytest's cache
COMMANDS = "package/dist/cjs/commands"
# BullMQ's own build of each script (its loader's output, one `<name>-<N>.js` module per script).
SCRIPTS = "package/dist/cjs/scripts"
# What BullMQ's scripts do that our checks refuse (docs/checks.md#configuring-findings).
# key-slot: job keys are built from a prefix in ARGV, not from KEYS. (The relay*-1 scripts take
# KEYS[1] only to route the call on a cluster: keys-arity warnings, which pass.)
IGNORED = ("key-slot",)


class PackageUnavailable(Exception):
    """The tarball is not cached and npm is not there to fetch it."""


class PackageDamaged(Exception):
    """The tarball fetched or cached is not the pinned one (it is removed)."""


def tarball(directory: Path) -> Path:
    """The pinned tarball in `directory`, fetched with `npm pack` unless it is there already."""
    path = directory / f"bullmq-{VERSION}.tgz"
    if not path.is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise PackageUnavailable("npm not found: install Node.js and npm (apt-get install npm)")
        directory.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "pack", f"bullmq@{VERSION}", "--pack-destination", str(directory)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0 or not path.is_file():
            raise PackageUnavailable(f"npm pack bullmq@{VERSION} failed: {done.stderr.strip()}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SHA256:
        path.unlink()  # fetched again next time
        raise PackageDamaged(f"{path.name}: sha256 {digest}, expected {SHA256}")
    return path


def unpack_commands(directory: Path, target: Path) -> Path:
    """`dist/cjs/commands` of the pinned package (cached in `directory`) unpacked under
    `target`, with `dist/cjs/scripts` beside it; the path of `commands`."""
    with tarfile.open(tarball(directory)) as archive:
        # Regular files and directories only, named inside the package: nothing a tarball could
        # use to write elsewhere (Python before 3.11.4 has no extraction filters to say so).
        members = [
            m
            for m in archive.getmembers()
            if m.name.startswith((f"{COMMANDS}/", f"{SCRIPTS}/"))
            and ".." not in m.name.split("/")
            and (m.isfile() or m.isdir())
        ]
        if hasattr(tarfile, "data_filter"):  # 3.11.4 and later; 3.14 warns without a filter
            archive.extractall(target, members=members, filter="data")
        else:
            archive.extractall(target, members=members)
    return target / COMMANDS


def loader_output(module: Path) -> str:
    """The resolved text of one script as BullMQ's loader built it: the `content` template
    literal of `dist/cjs/scripts/<name>-<N>.js`."""
    text = module.read_text(encoding="utf-8")
    start = text.index("const content = `") + len("const content = `")
    end = text.index("`;\n", start)

    def unescape(match: re.Match[str]) -> str:
        # A template literal without substitutions escapes only these three characters.
        if match[1] not in "\\`$":
            raise ValueError(f"{module.name}: unexpected escape {match[0]!r}")
        return match[1]

    return re.sub(r"\\(.)", unescape, text[start:end], flags=re.DOTALL)
