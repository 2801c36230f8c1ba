"""The manifest and the line maps: what a build publishes about its scripts, as JSON.

Both are pure functions of the sources, serialised with sorted keys and no timestamps or
absolute paths, so two machines building the same sources write the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any, Final

from .. import __version__
from ..runtime.codes import ERROR_CODES
from .analyse import Facts
from .header import Header, Slot, positional_header
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
    def interface(self) -> Header:
        """The header; for a script without one, what its code declares: its keys, and as many
        arguments as the highest ARGV index it reads, named by position."""
        if self.header is not None:
            return self.header
        argc = max((index for index, _, _ in self.facts.argv.literal), default=0)
        return positional_header(self.resolved.entry.num_keys, argc)

    @property
    def script_file(self) -> str:
        return f"scripts/{self.script_id}.lua"

    @property
    def map_file(self) -> str:
        return f"maps/{self.script_id}.json"


def to_json_bytes(value: Any, indent: int | None = 2) -> bytes:
    """`value` as JSON with sorted keys, not escaped to ASCII: indented by `indent` spaces, or
    compact when it is None; the bytes `json.dumps` gives."""
    if indent:
        text = _indented(value, " " * indent)
    else:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return (text + "\n").encode("utf-8")


def _indented(value: Any, step: str) -> str:
    """`json.dumps(value, indent=len(step), sort_keys=True, ensure_ascii=False)`, made here.

    With an indent, the standard library encodes in pure Python, a generator per container:
    for a manifest of 60 scripts that is a tenth of a cold build. This walks the containers
    and leaves the strings to the C escaper; anything but str keys, strings, ints, bools and
    None (never in a manifest) goes back to `json.dumps`.
    """
    parts: list[str] = []
    append = parts.append

    def encode(value: Any, pad: str) -> None:
        if isinstance(value, str):
            append(encode_basestring(value))
        elif value is None or value is True or value is False:
            append("null" if value is None else "true" if value else "false")
        elif type(value) is int:
            append(int.__repr__(value))
        elif isinstance(value, dict) and value:
            inner = ",\n" + pad + step
            keys = sorted(value)
            append("{\n" + pad + step)
            for index, key in enumerate(keys):
                if index:
                    append(inner)
                append(encode_basestring(key) + ": ")
                encode(value[key], pad + step)
            append("\n" + pad + "}")
        elif isinstance(value, (list, tuple)) and value:
            inner = ",\n" + pad + step
            append("[\n" + pad + step)
            for index, item in enumerate(value):
                if index:
                    append(inner)
                encode(item, pad + step)
            append("\n" + pad + "]")
        else:  # empty containers, floats
            append(json.dumps(value))

    try:
        encode(value, "")
    except TypeError:  # a key that is not a string (sorted() of mixed types raises too)
        return json.dumps(value, indent=len(step), sort_keys=True, ensure_ascii=False)
    return "".join(parts)


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
        entry["spelling"] = slot.arg.spelling  # with its range, values or form
        if slot.default:
            entry["default"] = json.loads(slot.default)
        if slot.role:
            entry["role"] = slot.role
    else:
        entry["unused"] = slot.unused
        entry["template"] = slot.template
    return entry


def _interface(script: ScriptBuild) -> dict[str, Any]:
    """The part of a script's entry that its header (or, without one, its code) declares."""
    header = script.interface
    return {
        "header": script.header is not None,
        "summary": header.summary,
        "description": header.description,
        "keys": [_slot(s, False) for s in header.keys],
        "variadicKeys": _slot(header.rest_keys, False) if header.rest_keys else None,
        "argv": [_slot(s, True) for s in header.args],
        "variadicArgv": _slot(header.rest_args, True) if header.rest_args else None,
        "returns": (
            {"shape": header.returns.spelling, "description": header.returns_description}
            if header.returns is not None
            else None
        ),
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
