"""Comparing two releases of the script library: what changed, and the version bump it needs.

A script's signature is everything a runtime relies on to call it: its KEYS (count, names, key
templates, which are unused), its ARGV (names and types, and variable lists), its return shape
and its failure codes. Removing a script or changing a signature breaks callers (major); adding a
script breaks nobody (minor); a body that changes under an unchanged signature is a fix (patch).
"""

from __future__ import annotations

import json
import re
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runtime.linemap import path_problem
from .errors import EchoMQScriptsError

BUMPS = ("none", "patch", "minor", "major")


class ReleaseError(EchoMQScriptsError):
    """A manifest or bundle that cannot be read, or a version that is too small."""


def load_manifest(path: Path) -> dict[str, Any]:
    """The manifest of a build directory, a manifest.json, or a bundle (.tar.gz)."""
    try:
        if path.is_dir():
            path = path / "manifest.json"
        if path.name.endswith((".tar.gz", ".tgz")):
            with tarfile.open(path) as tar:
                member = next(
                    (m for m in tar.getmembers() if m.name.endswith("/manifest.json")), None
                )
                extracted = tar.extractfile(member) if member is not None else None
                if extracted is None:
                    raise ReleaseError(f"{path}: the bundle has no manifest.json")
                data = json.loads(extracted.read())
        else:
            data = json.loads(path.read_bytes())
    except (OSError, ValueError, tarfile.TarError) as exc:
        raise ReleaseError(f"{path}: cannot read a manifest: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != 1 or "scripts" not in data:
        raise ReleaseError(f"{path}: not a format 1 echomq-scripts manifest")
    return data


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

    key_fields, arg_fields = ("name", "unused", "template"), ("name", "type")
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
    """Scripts by name: added, removed, changed in body only, changed in signature."""

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
        }


def diff(old: dict[str, Any], new: dict[str, Any]) -> ReleaseDiff:
    """What changed from the `old` manifest to the `new` one."""
    before = {s["name"]: s for s in old["scripts"]}
    after = {s["name"]: s for s in new["scripts"]}
    result = ReleaseDiff(
        added=sorted(set(after) - set(before)), removed=sorted(set(before) - set(after))
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
