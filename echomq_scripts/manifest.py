"""The manifest and the line maps: what a build publishes about its scripts, as JSON.

Both are pure functions of the sources, serialised with sorted keys and no timestamps or
absolute paths, so two machines building the same sources write the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

from . import __version__
from .analyse import Facts
from .codes import ERROR_CODES
from .header import Header, Slot
from .resolve import ResolvedScript

MANIFEST_FORMAT: Final = 1
LINE_MAP_FORMAT: Final = 1


@dataclass(frozen=True)
class ScriptBuild:
    """One script after every stage: its resolved text, its header and its code facts."""

    resolved: ResolvedScript
    header: Header | None
    facts: Facts

    @property
    def script_id(self) -> str:
        return self.resolved.entry.script_id

    @property
    def body(self) -> bytes:
        return self.resolved.text.encode("utf-8")

    @property
    def script_file(self) -> str:
        return f"scripts/{self.script_id}.lua"

    @property
    def map_file(self) -> str:
        return f"maps/{self.script_id}.json"


def to_json_bytes(value: Any, indent: int | None = 2) -> bytes:
    separators = None if indent else (",", ":")
    text = json.dumps(
        value, indent=indent, sort_keys=True, ensure_ascii=False, separators=separators
    )
    return (text + "\n").encode("utf-8")


def line_map(script: ScriptBuild) -> dict[str, Any]:
    """For line i (1-based) of the resolved script, `lines[i-1]` is [source index, source line]."""
    resolved = script.resolved
    return {
        "format": LINE_MAP_FORMAT,
        "script": script.script_file,
        "sources": [f.path for f in resolved.files],
        "lines": [list(pair) for pair in resolved.origins],
    }


def _slot(slot: Slot, with_type: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": slot.name, "description": slot.description}
    if with_type:
        entry["type"] = slot.arg.wire
    else:
        entry["unused"] = slot.unused
        entry["template"] = slot.template
    return entry


def _interface(script: ScriptBuild) -> dict[str, Any]:
    """The part of a script's entry that its header (or, without one, its code) declares."""
    header = script.header
    num_keys = script.resolved.entry.num_keys
    if header is None:
        # Without a header, keys are named by position and arguments by the highest index read.
        argc = max((index for index, _, _ in script.facts.argv.literal), default=0)
        return {
            "header": False,
            "summary": "",
            "description": "",
            "keys": [_slot(Slot(f"key{i}", "", 0), False) for i in range(1, num_keys + 1)],
            "variadicKeys": None,
            "argv": [_slot(Slot(f"arg{i}", "", 0), True) for i in range(1, argc + 1)],
            "variadicArgv": None,
            "returns": None,
            "codes": [],
        }
    return {
        "header": True,
        "summary": header.summary,
        "description": header.description,
        "keys": [_slot(s, False) for s in header.keys],
        "variadicKeys": _slot(header.rest_keys, False) if header.rest_keys else None,
        "argv": [_slot(s, True) for s in header.args],
        "variadicArgv": _slot(header.rest_args, True) if header.rest_args else None,
        "returns": {"shape": header.returns, "description": header.returns_description},
        "codes": list(header.codes),
    }


def manifest(scripts: list[ScriptBuild], version: str) -> dict[str, Any]:
    entries = []
    for script in sorted(scripts, key=lambda s: s.resolved.entry.name):
        body = script.body
        entries.append(
            {
                "name": script.resolved.entry.name,
                "numKeys": script.resolved.entry.num_keys,
                "file": script.script_file,
                "lineMap": script.map_file,
                # SCRIPT LOAD answers with the sha1 of the exact body bytes.
                "sha1": hashlib.sha1(body).hexdigest(),
                "bytes": len(body),
                "lines": len(script.resolved.origins),
                "sources": [{"path": f.path, "sha256": f.sha256} for f in script.resolved.files],
                **_interface(script),
            }
        )
    return {
        "format": MANIFEST_FORMAT,
        "version": version,
        "generator": f"echomq-scripts {__version__}",
        "codes": [
            {"code": code, "name": name} for code, name in sorted(ERROR_CODES.items(), reverse=True)
        ],
        "scripts": entries,
    }
