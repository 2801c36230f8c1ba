"""Script and header names as Python names."""

from __future__ import annotations

import keyword
import re


def snake_case(name: str) -> str:
    """`moveToActive` -> `move_to_active`; `getJobIDs` -> `get_job_ids`."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", spaced)
    return spaced.lower()


def pascal_case(name: str) -> str:
    """`moveToActive` -> `MoveToActive`."""
    return name[:1].upper() + name[1:]


def identifier(name: str, reserved: frozenset[str] = frozenset()) -> str:
    """A header name usable as a Python parameter or field: keywords and reserved names get `_`."""
    if keyword.iskeyword(name) or name in reserved:
        return name + "_"
    return name
