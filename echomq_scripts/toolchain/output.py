"""Writing a build: the output files in memory, the bundle, and the atomic swap into place.

Nothing touches the output directory until every file exists in memory. Then the new tree is
written beside the old one and renamed into place, so a reader sees the old build or the new
one, never a mix, and a build that fails before the swap leaves the old one as it was.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import OutputError
from .manifest import ScriptBuild, line_map, manifest, to_json_bytes
from .snapshot import NotRegularFile, read_tree

# Fixed metadata for every bundle entry: the bundle's bytes depend on its contents only.
_BUNDLE_MTIME = 315532800  # 1980-01-01T00:00:00Z


def bundle_name(version: str) -> str:
    return f"echomq-scripts-{version}.tar.gz"


def output_files(scripts: list[ScriptBuild], version: str) -> dict[str, bytes]:
    """Every file of the build directory, by its '/'-separated path inside it."""
    files: dict[str, bytes] = {
        "manifest.json": to_json_bytes(manifest(scripts, version)),
        # The contract travels with the data: consumers validate manifest.json against it.
        "manifest.schema.json": (Path(__file__).parent / "manifest.schema.json").read_bytes(),
    }
    for script in scripts:
        files[script.script_file] = script.body
        files[script.map_file] = to_json_bytes(line_map(script), indent=None)
    files[bundle_name(version)] = bundle(files, prefix=f"echomq-scripts-{version}")
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
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=9) as gz:
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
    if not out.exists():
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


def write_output(
    out: Path, files: dict[str, bytes], ownership: Ownership = BUILD_DIRECTORY
) -> bool:
    """Make `out` hold exactly `files`; False when it already did (nothing is written)."""
    # Through a link, the build replaces the directory the link names, and the link stays.
    out = out.resolve()
    if current_files(out, ownership) == files:
        return False
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.new-", dir=parent))
    except OSError as exc:
        raise OutputError(f"{out}: cannot create the output directory: {exc}") from None
    try:
        for name, data in files.items():
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        os.chmod(staging, 0o755)
        _swap_into_place(staging, out)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise OutputError(f"{out}: cannot write the build: {exc}") from None
    return True


def _swap_into_place(staging: Path, out: Path) -> None:
    if not out.exists():
        os.rename(staging, out)
        return
    if _exchange(staging, out):
        # One system call swapped the two trees: no moment without a build.
        shutil.rmtree(staging, ignore_errors=True)
        return
    retired = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    retired.rmdir()
    os.rename(out, retired)
    try:
        os.rename(staging, out)
    except OSError:
        os.rename(retired, out)  # put the previous build back before reporting
        raise
    shutil.rmtree(retired, ignore_errors=True)


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
