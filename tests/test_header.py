"""The header format: every tag read into its fields, and return shapes in canonical form."""

from __future__ import annotations

import tomllib

import pytest

from echomq_scripts import __version__
from echomq_scripts.runtime.grammar import ArgType
from echomq_scripts.toolchain.header import Slot, parse_header
from tests.support.environment import REPO


def lines(text: str) -> tuple[str, ...]:
    return tuple(text.split("\n"))


def test_full_header_is_read_into_fields() -> None:
    header, problems = parse_header(
        "x-3.lua",
        lines(
            "--- Moves a job.\n"
            "--- It takes the lock first.\n"
            "---\n"
            "--- @key wait    the wait list\n"
            "--- @key old     (unused) kept for order\n"
            "--- @key active  the active list\n"
            "--- @key... extra  more lists\n"
            "--- @arg token  string  the token\n"
            "--- @arg ttl    int\n"
            "--- @arg... ids  string  job ids\n"
            "--- @return tuple[string,hash]|nil   the job, or nil\n"
            "--- @error -6 JobLockMismatch\n"
            "--- @error -2\n"
            '--- @include "includes/x"\n'
            "--- not header any more\n"
        ),
    )
    assert problems == []
    assert header is not None
    assert header.summary == "Moves a job."
    assert header.description == "It takes the lock first."
    assert header.keys == (
        Slot("wait", "the wait list", 4),
        Slot("old", "kept for order", 5, unused=True),
        Slot("active", "the active list", 6),
    )
    assert header.rest_keys == Slot("extra", "more lists", 7)
    assert header.args == (Slot("token", "the token", 8), Slot("ttl", "", 9, arg=ArgType("int")))
    assert header.rest_args == Slot("ids", "job ids", 10)
    assert header.returns is not None
    assert header.returns.spelling == "tuple[string, hash] | nil"
    assert header.returns_description == "the job, or nil"
    assert header.codes == (-2, -6)


@pytest.mark.parametrize(
    ("written", "canonical", "description"),
    [
        ("int", "int", ""),
        ("int 1 when done", "int", "1 when done"),
        ("list[ string ]  names", "list[string]", "names"),
        ("nil|status", "nil | status", ""),
        ("tuple[int, list[hash]] | nil x", "tuple[int, list[hash]] | nil", "x"),
    ],
)
def test_return_shapes(written: str, canonical: str, description: str) -> None:
    header, problems = parse_header("x-0.lua", lines(f"--- S.\n--- @return {written}\nreturn 1"))
    assert problems == []
    assert header is not None
    assert header.returns is not None
    assert (header.returns.spelling, header.returns_description) == (canonical, description)


def test_a_comment_block_without_tags_is_not_a_header() -> None:
    assert parse_header("x-0.lua", lines("--- Just prose.\n--- More prose.\nreturn 1")) == (
        None,
        [],
    )


def test_package_version_matches_pyproject() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["version"] == __version__


def test_a_tag_line_continues_on_deeper_indented_lines() -> None:
    source = (
        "--- Moves a job.\n"
        "--- @arg token  string  the token\n"
        "---     the worker took the lock with\n"
        "--- @return tuple[string, int]  where it went,\n"
        "---   then its attempts\n"
        "--- A line of prose after it.\n"
        "---    not a continuation: prose stops them\n"
        "return 1"
    )
    header, problems = parse_header("x-0.lua", lines(source))
    assert problems == []
    assert header is not None
    assert header.args == (Slot("token", "the token the worker took the lock with", 2),)
    assert header.returns is not None
    assert header.returns.spelling == "tuple[string, int]"
    assert header.returns_description == "where it went, then its attempts"
    assert header.description == "A line of prose after it. not a continuation: prose stops them"


def test_a_continued_line_keeps_its_own_line_for_errors() -> None:
    source = "--- S.\n--- @return int\n--- @arg n  seconds  a count\n---   of things\nreturn 1"
    _, problems = parse_header("x-0.lua", lines(source))
    assert [(p.line, p.col) for p in problems] == [(3, 13)]
    assert "unknown argument type 'seconds'" in problems[0].message
