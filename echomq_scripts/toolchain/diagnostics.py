"""Findings of the build: what they are, which codes exist, and how they are printed.

Every stage reports problems as `Diagnostic` values and keeps going, so one run shows every
problem at once; only the CLI decides what the findings mean for the exit code.
"""

from __future__ import annotations

import enum
import json
import unicodedata
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Final


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"


# Every finding code, with the one-line meaning that `docs/checks.md` expands on.
CODES: Final[dict[str, str]] = {
    "bad-filename": "a script file is not named <name>-<N>.lua, or a .lua file's name is not UTF-8",
    "duplicate-script": "two script files share one script name, or one Python name",
    "keys-limit": "a script file's name declares more KEYS than the limit of 1024",
    "argv-limit": "a script without a header reads ARGV past the limit of 1024",
    "encoding": "a source file is not valid UTF-8",
    "read-error": "a source file cannot be read",
    "include-syntax": "a line starting with '--- @include' is not a well-formed directive",
    "include-missing": "an included file does not exist",
    "include-cycle": "includes form a cycle",
    "include-escape": "an include path leaves the source root",
    "include-unused": "nothing outside an included file uses what it defines",
    "header-missing": "a script has no header comment",
    "header-syntax": "a header line cannot be read",
    "header-keys": "the header's key list does not match the filename's KEYS count",
    "header-names": "header names that would break the script's generated wrapper",
    "syntax": "Lua 5.1 (as embedded in Redis) refuses to compile the script",
    "keys-range": "a KEYS index is outside 1..N",
    "keys-arity": "the code reads fewer KEYS than the filename declares",
    "keys-dynamic": "KEYS is indexed by a value the check cannot work out before the script runs",
    "keys-escape": "KEYS is stored or passed where the check cannot follow it",
    "key-unused": "a declared key is never read",
    "key-marked-unused": "a key the header marks unused is read",
    "argv-undeclared": "an ARGV index is not declared in the header",
    "argv-unused": "a declared argument is never read",
    "argv-dynamic": "ARGV is indexed by a value the check cannot work out before the script runs",
    "argv-escape": "ARGV is stored or passed where the check cannot follow it",
    "global-assign": "a global variable is assigned (Redis refuses it at run time)",
    "global-function": "a global function is defined (Redis refuses it at run time)",
    "undefined-global": "a global that Redis's Lua does not provide is read",
    "undefined-field": "a field that a Redis library table does not have is read",
    "key-slot": "a key is built from ARGV alone or is a literal, so it may live on another slot",
    "code-undeclared": "a returned failure code is not listed in the header",
    "code-unknown": "a returned or declared failure code is not in the closed table -1..-11",
    "unused-local": "a local variable is never read",
    "shadowed-local": "a local variable hides another of the same name",
    "ignore-comment": "an '-- echomq: ignore[...]' comment is malformed or names a code it cannot",
}


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One finding, positioned in an original source file (1-based line and column)."""

    path: str
    line: int
    col: int
    severity: Severity
    code: str
    message: str

    def __post_init__(self) -> None:
        # A typo in a code would silently break `--format json` consumers and the docs.
        if self.code not in CODES:
            raise ValueError(f"unregistered diagnostic code {self.code!r}")

    def format_text(self) -> str:
        """The finding as one line of text, its names' control characters escaped."""
        return (
            f"{escape_controls(self.path)}:{self.line}:{self.col}: {self.severity}:"
            f" {escape_controls(self.message)} [{self.code}]"
        )


# Characters that would break a finding's line, or act on the terminal, if printed as they are:
# the controls (category Cc: C0, DEL, C1), the line and paragraph separators, and the lone
# surrogates in which Python keeps a file name's undecodable bytes.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Zl", "Zp", "Cs"})
_NAMED_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(char: str) -> str:
    if unicodedata.category(char) not in _ESCAPED_CATEGORIES:
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for the byte code - 0xDC00
        code -= 0xDC00
    return _NAMED_ESCAPES.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def escape_controls(text: str) -> str:
    """`text` with each control character as a backslash escape (`\\n`, `\\t`, `\\r`, `\\xNN`,
    `\\uNNNN`): the one rule for every name (and message) that a text finding shows."""
    if text.isprintable():
        return text  # nearly always: printable text has none of these characters
    return "".join(map(_escape, text))


def format_text(diagnostics: Iterable[Diagnostic], color: bool = False) -> str:
    """One line per finding; with `color`, its severity and code in ANSI colours."""
    if not color:
        return "".join(d.format_text() + "\n" for d in diagnostics)
    return "".join(_colored_line(d) + "\n" for d in diagnostics)


# The colours of a text finding on a terminal: the severity bold red or yellow, the code cyan.
_SEVERITY_STYLES = {Severity.ERROR: "\x1b[1;31m", Severity.WARNING: "\x1b[1;33m"}
_CODE_STYLE = "\x1b[36m"
_RESET = "\x1b[0m"


def _colored_line(d: Diagnostic) -> str:
    style = _SEVERITY_STYLES[d.severity]
    return (
        f"{escape_controls(d.path)}:{d.line}:{d.col}: {style}{d.severity}{_RESET}:"
        f" {escape_controls(d.message)} {_CODE_STYLE}[{d.code}]{_RESET}"
    )


def format_summary(diagnostics: list[Diagnostic]) -> str:
    """The line after the text findings, as ruff and mypy end theirs: `Found 1 error and 2
    warnings in 1 file.`; empty without findings."""
    if not diagnostics:
        return ""
    errors = sum(1 for d in diagnostics if d.severity is Severity.ERROR)
    counts = [
        plural(n, noun)
        for n, noun in ((errors, "error"), (len(diagnostics) - errors, "warning"))
        if n
    ]
    files = len({d.path for d in diagnostics})
    return f"Found {' and '.join(counts)} in {plural(files, 'file')}.\n"


def format_json(diagnostics: Iterable[Diagnostic]) -> str:
    rows = [{**asdict(d), "severity": str(d.severity)} for d in diagnostics]
    return json.dumps(rows, indent=2) + "\n"


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def format_github(diagnostics: Iterable[Diagnostic]) -> str:
    """One GitHub Actions workflow command per finding (`::error file=...,line=...,col=...,
    title=<code>::<message>`), which the runner shows as an annotation on the file's line.

    The values are escaped as the runner's parser (actions/toolkit, `command.ts`) takes them
    back: `%`, CR and LF as `%25`, `%0D` and `%0A`, and in a property also `:` and `,` as `%3A`
    and `%2C`. Any other character that the text format escapes (another control character, a
    line separator, a byte of a file name that is not UTF-8) is shown as the text format shows
    it, since the runner has no escape for it.
    """
    return "".join(
        f"::{d.severity} file={_github_property(d.path)},line={d.line},col={d.col},"
        f"title={_github_property(d.code)}::{_github_data(d.message)}\n"
        for d in diagnostics
    )


def _github_data(text: str) -> str:
    escaped = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return escape_controls(escaped)


def _github_property(text: str) -> str:
    return _github_data(text).replace(":", "%3A").replace(",", "%2C")


def has_failures(diagnostics: Iterable[Diagnostic], strict: bool) -> bool:
    """True when the findings fail the run: any error, or any warning under --strict."""
    return any(d.severity is Severity.ERROR or strict for d in diagnostics)
