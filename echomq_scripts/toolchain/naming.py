"""Script and header names as Python names."""

from __future__ import annotations

import keyword
import re


def snake_case(name: str) -> str:
    """`moveToActive` -> `move_to_active`; `getJobIDs` -> `get_job_ids`; `HTTPServer` ->
    `http_server`."""
    # A run of capitals is one word, but its last capital starts the next word when a
    # lowercase letter follows it ("HTTPServer"), unless that lowercase is a plural "s" at the
    # end of the run ("IDs").
    words = re.findall(
        r"[A-Z]+(?:s(?![a-z]))?(?=[A-Z][a-z]|\d|\b|_|$)|[A-Z]?[a-z]+|[A-Z]+|\d+", name
    )
    return "_".join(word.lower() for word in words)


def pascal_case(name: str) -> str:
    """`moveToActive` -> `MoveToActive`."""
    return name[:1].upper() + name[1:]


def identifier(name: str, reserved: frozenset[str] = frozenset()) -> str:
    """A header name usable as a Python parameter or field: keywords and reserved names get `_`."""
    if keyword.iskeyword(name) or name in reserved:
        return name + "_"
    return name
