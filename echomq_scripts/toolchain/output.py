"""Writing a build: the output files in memory, the bundle, and the atomic swap into place.

Nothing touches an output directory until every file exists in memory. Then each new tree (the
build, and the generated package) is written beside its directory, and only when all are
written are they renamed into place, so a reader sees the old build or the new one, never a mix,
and a build that fails anywhere leaves every output as it was.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import stat
import sys
import tarfile
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from .errors import OutputError
from .manifest import ScriptBuild, line_map, manifest, to_json_bytes
from .npm import npm_files, npm_name, npm_tarball
from .snapshot import NotRegularFile, read_tree

# Fixed metadata for every bundle entry: the bundle's bytes depend on its contents only.
_BUNDLE_MTIME = 315532800  # 1980-01-01T00:00:00Z


def bundle_name(version: str) -> str:
    return f"echomq-scripts-{version}.tar.gz"


def output_files(scripts: list[ScriptBuild], version: str) -> dict[str, bytes]:
    """Every file of the build directory, by its '/'-separated path inside it."""
    document = manifest(scripts, version)
    files: dict[str, bytes] = {
        "manifest.json": to_json_bytes(document),
        # The contract travels with the data: consumers validate manifest.json against it.
        "manifest.schema.json": (Path(__file__).parent / "manifest.schema.json").read_bytes(),
    }
    for script in scripts:
        files[script.script_file] = script.body
        files[script.map_file] = to_json_bytes(line_map(script), indent=None)
    # The npm package, made from the same manifest and bodies, goes beside the bundle, not in it.
    package = npm_tarball(npm_files(document, files))
    files[bundle_name(version)] = bundle(files, prefix=f"echomq-scripts-{version}")
    files[npm_name(version)] = package
    return files


def bundle(files: dict[str, bytes], prefix: str) -> bytes:
    """A tar.gz of `files` under `prefix/`: sorted entries, fixed times, no owners."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(f"{prefix}/{name}")
            info.size = len(files[name])
            info.mtime = _BUNDLE_MTIME
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(files[name]))
    packed = io.BytesIO()
    # gzip's own header carries a time and a file name: pin the first, leave out the second.
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=6) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


# Whether a directory's files are ones we wrote, and how to say what we expected there.
Ownership = tuple[Callable[[dict[str, bytes]], bool], str]


def is_build_directory(found: dict[str, bytes]) -> bool:
    """True for a build directory: its manifest.json names echomq-scripts as its generator."""
    try:
        data = json.loads(found.get("manifest.json") or b"")
    except ValueError:
        return False
    generator = data.get("generator") if isinstance(data, dict) else None
    return isinstance(generator, str) and generator.startswith("echomq-scripts ")


BUILD_DIRECTORY: Ownership = (
    is_build_directory,
    "an echomq-scripts build (it has no manifest.json written by echomq-scripts)",
)


def current_files(out: Path, ownership: Ownership) -> dict[str, bytes] | None:
    """The files now in `out`, or None when it does not exist; refuses a directory not ours."""
    try:
        exists = out.exists()
    except OSError as exc:  # a name too long, say: no build is there, and none can be written
        raise OutputError(f"{out}: cannot be an output directory: {exc.strerror}") from None
    if not exists:
        return None
    if not out.is_dir():
        raise OutputError(f"{out}: exists and is not a directory")
    try:
        found = read_tree(out)
    except NotRegularFile as exc:
        # The build writes only regular files, so this is not a build; reading it could hang.
        raise OutputError(f"{out}: refusing to read {exc}") from None
    except OSError as exc:
        raise OutputError(f"{out}: cannot read its files: {exc}") from None
    is_ours, expected = ownership
    if found and not is_ours(found):
        # Replacing it would delete files we did not write.
        raise OutputError(f"{out}: refusing to replace a directory that is not {expected}")
    return found


# Every file and directory of an output is written with these modes, whatever the umask: the
# build is published, and its modes are part of what two machines must agree on.
FILE_MODE = 0o644
DIRECTORY_MODE = 0o755

# One output directory and the files it is to hold, with the guard that says it is ours.
Target = tuple[Path, dict[str, bytes], Ownership]


def write_outputs(targets: Sequence[Target]) -> list[bool]:
    """Make each target directory hold exactly its files: all of them or, on failure, none.

    Every new tree is written beside its directory before any is swapped into place, and when a
    swap fails the ones before it are swapped back, so an error leaves every directory as it was.
    For each target, False when it already held its files with the right modes (nothing is
    written).
    """
    swaps: list[_Swap] = []
    changed: list[bool] = []
    try:
        for out, files, ownership in targets:
            # Through a link, the build replaces the directory the link names; the link stays.
            out = out.resolve()
            current = current_files(out, ownership) == files and has_output_modes(out)
            changed.append(not current)
            if not current:
                swaps.append(_Swap(out, files))
        for done, swap in enumerate(swaps):
            try:
                swap.swap()
            except OSError as exc:
                for earlier in reversed(swaps[:done]):
                    earlier.undo()
                raise OutputError(f"{swap.out}: cannot write the build: {exc}") from None
    finally:
        for swap in swaps:
            swap.discard()
    return changed


def has_output_modes(out: Path) -> bool:
    """Whether every directory and file under `out` has the output's mode (links aside)."""
    for parent, subdirs, names in os.walk(out):
        # As read_tree: bytecode that Python writes into a generated package is not ours.
        subdirs[:] = [d for d in subdirs if d != "__pycache__"]
        for name, mode in [("", DIRECTORY_MODE)] + [
            (n, FILE_MODE) for n in names if not n.endswith(".pyc")
        ]:
            info = os.lstat(os.path.join(parent, name))
            if not stat.S_ISLNK(info.st_mode) and stat.S_IMODE(info.st_mode) != mode:
                return False
    return True


class _Swap:
    """One output directory's new tree, written beside it, and the swap that puts it in place."""

    def __init__(self, out: Path, files: dict[str, bytes]) -> None:
        self.out = out
        self.exchanged = False  # the new tree and the previous one traded places in one call
        self.retired: Path | None = None  # where the previous tree went, when renamed aside
        self.swapped = False
        self.keep_leftovers = False  # set when a previous tree could not be put back
        # The output's missing parents, nearest first: made now, and removed again unless the
        # new tree is swapped in, so that a build that fails leaves no trace.
        self.made_parents: list[Path] = []
        parent = out.parent
        try:
            self.made_parents = [p for p in (parent, *parent.parents) if not p.exists()]
            parent.mkdir(parents=True, exist_ok=True)
            self.staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=parent))
        except OSError as exc:
            self._remove_made_parents()
            raise OutputError(f"{out}: cannot create the output directory: {exc}") from None
        try:
            _write_tree(self.staging, files)
        except OSError as exc:
            shutil.rmtree(self.staging, ignore_errors=True)
            self._remove_made_parents()
            raise OutputError(f"{out}: cannot write the build: {exc}") from None

    def swap(self) -> None:
        """Put the new tree at the output's path; the previous one is kept aside until
        `discard`. On failure the previous tree is back in place before the error propagates."""
        if not self.out.exists():
            os.rename(self.staging, self.out)
        elif _exchange(self.staging, self.out):
            # One system call swapped the two trees: no moment without a build.
            self.exchanged = True
        else:
            retired = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.old-", dir=self.out.parent))
            retired.rmdir()
            os.rename(self.out, retired)
            try:
                os.rename(self.staging, self.out)
            except OSError:
                os.rename(retired, self.out)  # put the previous build back before reporting
                raise
            self.retired = retired
        self.swapped = True

    def undo(self) -> None:
        """Put the previous tree back in place of the new one, which goes back to staging."""
        try:
            if self.exchanged:
                if not _exchange(self.staging, self.out):
                    raise OSError("cannot exchange the directories back")
            elif self.retired is not None:
                os.rename(self.out, self.staging)
                os.rename(self.retired, self.out)
                self.retired = None
            else:
                os.rename(self.out, self.staging)
        except OSError:
            # The previous tree lies beside the output still: keep it for the user to restore.
            self.keep_leftovers = True
            return
        self.swapped = self.exchanged = False

    def discard(self) -> None:
        """Remove what lies beside the output: the unused new tree, or the replaced old one."""
        if self.keep_leftovers:
            return
        shutil.rmtree(self.staging, ignore_errors=True)
        if self.retired is not None:
            shutil.rmtree(self.retired, ignore_errors=True)
        if not self.swapped:
            self._remove_made_parents()

    def _remove_made_parents(self) -> None:
        for directory in self.made_parents:
            try:
                directory.rmdir()  # only when empty: never what something else put there
            except OSError:
                return


def _write_tree(root: Path, files: dict[str, bytes]) -> None:
    """Write `files` under the existing directory `root`, with the output's modes."""
    # os.path, not pathlib: a build writes a file a script and a line map each, and pathlib's
    # objects cost about as much as the writes.
    top = os.fspath(root)
    os.chmod(top, DIRECTORY_MODE)
    made = {""}  # the directories made, relative to root
    for name, data in files.items():
        parts = name.split("/")[:-1]
        for end in range(1, len(parts) + 1):
            directory = "/".join(parts[:end])
            if directory not in made:
                path = os.path.join(top, directory)
                try:
                    os.mkdir(path)
                except FileExistsError:
                    if not os.path.isdir(path):
                        raise
                os.chmod(path, DIRECTORY_MODE)
                made.add(directory)
        target = os.path.join(top, name)
        with open(target, "wb") as stream:
            stream.write(data)
        os.chmod(target, FILE_MODE)


_RENAME_EXCHANGE = 2  # from <linux/fs.h>
_AT_FDCWD = -100


def _exchange(first: Path, second: Path) -> bool:
    """Swap two directories atomically with Linux's renameat2; False where it is unavailable."""
    if sys.platform != "linux":
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    result = renameat2(
        _AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE
    )
    return bool(result == 0)
