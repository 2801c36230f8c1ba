"""Comparing two releases of the script library: what changed, and the version bump it needs.

A script's signature is everything a runtime relies on to call it: its KEYS (count, names, key
templates, which are unused), its ARGV (names, types, defaults and roles, and variable lists),
its return shape and its failure codes. Removing a script or changing a signature breaks
callers (major); adding a script breaks nobody (minor); a body that changes under an unchanged
signature is a fix (patch).
"""

from __future__ import annotations

import functools
import json
import re
import reprlib
import tarfile
import zlib
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..runtime.linemap import path_problem
from .errors import EchoMQScriptsError
from .npm import PACKAGE
from .snapshot import NotRegularFile, read_regular

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

BUMPS = ("none", "patch", "minor", "major")


class ReleaseError(EchoMQScriptsError):
    """A manifest or bundle that cannot be read, or a version that is too small."""


# The bounds on what diff, verify and build --previous read of a release, so that a crafted one
# cannot take the memory of the machine that checks it (docs/bundle.md, "Reading a release"). A
# real manifest is tens of kilobytes, a script a few; a bundle holds two files per script, and two.
MAX_FILE_BYTES = 16 * 1024 * 1024
MAX_BUNDLE_MEMBERS = 10_000


def read_file(path: Path) -> bytes:
    """The bytes of the regular file `path`, refused past MAX_FILE_BYTES; anything else (a named
    pipe would block the read) is refused unopened, as the build refuses it."""
    try:
        data = read_regular(str(path), str(path), MAX_FILE_BYTES + 1)
    except NotRegularFile as exc:
        raise ReleaseError(
            f"{path}: it is {exc.kind}, not a regular file; refusing to read it"
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise ReleaseError(f"{path}: larger than {MAX_FILE_BYTES} bytes; refusing to read it")
    return data


def _member_kind(member: tarfile.TarInfo) -> str | None:
    """What `member` is when it is not a regular file or a directory; else None."""
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hard link"
    if not (member.isreg() or member.isdir()):
        return "special file"
    return None


def bundle_files(path: Path, names: Collection[str]) -> dict[str, bytes]:
    """The files of the bundle `path` named in `names`, by their path inside its top directory.

    Every member is looked at, so that a bundle cut short or holding a link is refused whichever
    file is asked for; only the named ones are read, each up to MAX_FILE_BYTES.
    """
    found: dict[str, bytes] = {}
    try:
        with tarfile.open(path) as tar:
            for count, member in enumerate(tar, start=1):
                if count > MAX_BUNDLE_MEMBERS:
                    raise ReleaseError(
                        f"{path}: more than {MAX_BUNDLE_MEMBERS} members; not an echomq-scripts"
                        " bundle"
                    )
                kind = _member_kind(member)
                if kind is not None:
                    raise ReleaseError(
                        f"{path}: member {member.name!r} is a {kind}; a release holds regular"
                        " files only"
                    )
                name = member.name.partition("/")[2]
                if name not in names or member.isdir():
                    continue
                if member.size > MAX_FILE_BYTES:
                    raise ReleaseError(
                        f"{path}: member {member.name!r} is larger than {MAX_FILE_BYTES} bytes;"
                        " refusing to read it"
                    )
                extracted = tar.extractfile(member)
                if extracted is not None:
                    found[name] = extracted.read()
    # A bundle cut short ends in EOFError (which click would report as "Aborted!"), bad
    # compressed data in zlib.error.
    except (OSError, EOFError, zlib.error, tarfile.TarError) as exc:
        problem = f"cannot read the bundle (damaged or cut short?): {exc}"
        raise ReleaseError(f"{path}: {problem}") from None
    return found


@functools.cache
def _manifest_validator() -> Draft202012Validator:
    # Imported here: only diff, verify and build --previous read a manifest back.
    import jsonschema

    schema = json.loads((Path(__file__).parent / "manifest.schema.json").read_bytes())
    return jsonschema.Draft202012Validator(schema)


def _json_path(parts: Iterable[str | int]) -> str:
    """`scripts[0].keys[1].name` for the parts ("scripts", 0, "keys", 1, "name")."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def check_manifest(data: bytes, where: Path) -> dict[str, Any]:
    """The manifest in `data`, read from `where`, refused unless it fits manifest.schema.json.

    Every reader of a manifest (diff, verify, build --previous) goes through here, so that what
    comes after may rely on its shape. The error names the JSON path and the problem in one line.
    """
    from jsonschema.exceptions import best_match

    try:
        manifest = json.loads(data)
        error = (
            best_match(_manifest_validator().iter_errors(manifest))
            if isinstance(manifest, dict) and manifest.get("format") == 1
            else None
        )
        message = "" if error is None else error.message
        if error is not None and len(message) > 200:  # a long value, shown short: "[[[...]]]"
            message = message.replace(repr(error.instance), reprlib.repr(error.instance))
    except RecursionError:  # JSON nested thousands deep: no manifest is
        raise ReleaseError(f"{where}: not a manifest: its JSON is nested too deeply") from None
    except ValueError as exc:
        raise ReleaseError(f"{where}: cannot read a manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != 1:
        raise ReleaseError(f"{where}: not a format 1 echomq-scripts manifest")
    if error is not None:
        at = _json_path(error.absolute_path)
        message = message if len(message) <= 200 else message[:197] + "..."
        raise ReleaseError(f"{where}: {at + ': ' if at else ''}{message}")
    return manifest


def load_manifest(path: Path) -> dict[str, Any]:
    """The manifest of a build directory, a manifest.json, or a bundle (.tar.gz), checked
    against the schema."""
    if path.is_dir():
        path = path / "manifest.json"
    if path.name.endswith((".tar.gz", ".tgz")):
        data = bundle_files(path, {"manifest.json"}).get("manifest.json")
        if data is None:
            raise ReleaseError(f"{path}: the bundle has no manifest.json")
    else:
        try:
            data = read_file(path)
        except OSError as exc:
            raise ReleaseError(f"{path}: cannot read a manifest: {exc}") from None
    return check_manifest(data, path)


def inside(root: Path, relative: str, what: str, *, on_disk: bool = True) -> Path:
    """`root / relative`, refused unless `relative` stays inside `root`.

    A release names its files relative to its own top: never absolute, never up with "..", and
    (`on_disk`) not out of it through a symlink either. `what` names the path in the message.
    """
    reason = path_problem(relative)
    if reason is None and on_disk:
        try:
            if not (root / relative).resolve().is_relative_to(root.resolve()):
                reason = "leads outside it through a symlink"
        except (OSError, RuntimeError):  # a symlink loop: RuntimeError before Python 3.13
            reason = "cannot be resolved"
    if reason is not None:
        raise ReleaseError(f"{root}: {what} {relative!r} {reason}; refusing to read it")
    return root / relative


def signature(script: dict[str, Any]) -> dict[str, Any]:
    """The parts of a manifest entry that a caller depends on (descriptions left out)."""

    def slots(items: list[dict[str, Any]], fields: tuple[str, ...]) -> list[dict[str, Any]]:
        return [{f: item.get(f) for f in fields} for item in items]

    # A default or a role, added, changed or gone, is a new signature: a caller that leaves the
    # argument out relies on it.
    key_fields, arg_fields = ("name", "unused", "template"), ("name", "type", "default", "role")
    rest_keys, rest_argv = script.get("variadicKeys"), script.get("variadicArgv")
    return {
        "numKeys": script.get("numKeys"),
        "keys": slots(script.get("keys", []), key_fields),
        "variadicKeys": slots([rest_keys], key_fields) if rest_keys else None,
        "argv": slots(script.get("argv", []), arg_fields),
        "variadicArgv": slots([rest_argv], arg_fields) if rest_argv else None,
        "returns": (script.get("returns") or {}).get("shape"),
        "codes": sorted(script.get("codes", [])),
    }


@dataclass
class ReleaseDiff:
    """Scripts by name: added, removed, changed in body only, changed in signature; and the two
    releases' versions, old and new, as their manifests give them."""

    old_version: str | None = None
    new_version: str | None = None
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    body_changed: list[str] = field(default_factory=list)
    signature_changed: list[str] = field(default_factory=list)

    @property
    def bump(self) -> str:
        """The smallest semantic-version bump that fits the changes."""
        if self.removed or self.signature_changed:
            return "major"
        if self.added:
            return "minor"
        return "patch" if self.body_changed else "none"

    def to_json(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "removed": self.removed,
            "bodyChanged": self.body_changed,
            "signatureChanged": self.signature_changed,
            "bump": self.bump,
            "oldVersion": self.old_version,
            "newVersion": self.new_version,
            # The npm package is made from the same manifest, with its version: its bump is this.
            "npmPackage": {
                "name": PACKAGE,
                "bump": self.bump,
                "oldVersion": self.old_version,
                "newVersion": self.new_version,
            },
        }


def diff(old: dict[str, Any], new: dict[str, Any]) -> ReleaseDiff:
    """What changed from the `old` manifest to the `new` one."""
    before = {s["name"]: s for s in old["scripts"]}
    after = {s["name"]: s for s in new["scripts"]}
    result = ReleaseDiff(
        old_version=old.get("version"),
        new_version=new.get("version"),
        added=sorted(set(after) - set(before)),
        removed=sorted(set(before) - set(after)),
    )
    for name in sorted(set(before) & set(after)):
        if signature(before[name]) != signature(after[name]):
            result.signature_changed.append(name)
        elif before[name].get("sha1") != after[name].get("sha1"):
            result.body_changed.append(name)
    return result


def parse_version(version: str) -> tuple[int, int, int]:
    """MAJOR.MINOR.PATCH of a version (anything after the patch number is ignored)."""
    match = re.match(r"^(\d+)\.(\d+)\.(\d+)", version)
    if match is None:
        raise ReleaseError(f"version {version!r} is not MAJOR.MINOR.PATCH")
    return int(match[1]), int(match[2]), int(match[3])


def check_version(old_version: str, new_version: str, bump: str) -> str | None:
    """None when `new_version` is at least `old_version` with `bump` applied; else why not."""
    old, new = parse_version(old_version), parse_version(new_version)
    needed = {
        "none": old,
        "patch": (old[0], old[1], old[2] + 1),
        "minor": (old[0], old[1] + 1, 0),
        "major": (old[0] + 1, 0, 0),
    }[bump]
    if bump == "none" and new < old:
        return f"version {new_version} is smaller than the previous release's {old_version}"
    if new < needed:
        wanted = ".".join(map(str, needed))
        return (
            f"version {new_version} is too small: the changes need a {bump} bump, {wanted} or more"
        )
    return None
