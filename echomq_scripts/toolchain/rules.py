"""Which findings a run reports, and how severe each is: `--ignore`, the project's `ignore` and
`warn` settings, and `-- echomq: ignore[code]` comments in the sources.

The analysis cache holds what the code does (`Facts`), never findings, so these rules apply to
the findings of every run afresh: changing them never needs the cache cleared.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from .diagnostics import CODES, Diagnostic, Severity, escape_controls

# The findings after which a build would write broken output, or leave part of the tree out of
# it silently: a script that does not compile or cannot be read and resolved, a name that
# cannot be built or would break its wrappers, one script shadowing another. They can be
# neither ignored nor made warnings.
FIXED_CODES = frozenset(
    {
        "bad-filename",
        "duplicate-script",
        "keys-limit",
        "argv-limit",
        "encoding",
        "read-error",
        "include-syntax",
        "include-missing",
        "include-cycle",
        "include-escape",
        "header-syntax",
        "header-keys",
        "header-names",
        "syntax",
        "code-unknown",
    }
)

# `-- echomq:` anywhere on a line starts a directive; `ignore[...]` is the only one there is.
_DIRECTIVE = re.compile(r"--+[ \t]*echomq:")
_IGNORE = re.compile(r"[ \t]*ignore\[(?P<codes>[^\]\n]*)\]")


class RuleError(ValueError):
    """A code that does not exist, or that cannot be ignored or downgraded."""


@dataclass(frozen=True)
class Rules:
    """Codes to drop, and error codes to report as warnings (`ignore` wins over `warn`)."""

    ignore: frozenset[str] = frozenset()
    warn: frozenset[str] = frozenset()


def code_problem(code: str) -> str | None:
    """Why `code` may not be named in an ignore or warn list, or None when it may."""
    if code not in CODES:
        import difflib  # only for a mistake: every build imports this module

        close = difflib.get_close_matches(code.lower(), CODES, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else " (docs/checks.md lists them)"
        return f"unknown finding code '{escape_controls(code)}'{hint}"
    if code in FIXED_CODES:
        return (
            f"'{code}' cannot be ignored or made a warning: the build would write broken"
            " output or leave a file out (docs/checks.md#configuring-findings)"
        )
    return None


def checked_codes(codes: Iterable[str]) -> frozenset[str]:
    """`codes` as a set; RuleError naming the first that may not be ignored or downgraded.

    Each item may itself be a comma-separated list (`--ignore key-slot,key-unused`)."""
    found: set[str] = set()
    for item in codes:
        for code in (part.strip() for part in item.split(",")):
            problem = code_problem(code) if code else "empty finding code"
            if problem is not None:
                raise RuleError(problem)
            found.add(code)
    return frozenset(found)


def apply_rules(
    found: Iterable[Diagnostic], rules: Rules, files: Mapping[str, Sequence[str]]
) -> list[Diagnostic]:
    """The findings that remain, at their severity, and the findings about ignore comments.

    Args:
        found: the run's findings, with paths relative to the source root.
        rules: the command line's and the project's ignore and warn lists.
        files: the lines of every source file the run read, by root-relative path; a finding
            is silenced by an ignore comment on its own line of its own file.
    """
    silenced: dict[tuple[str, int], set[str]] = {}
    problems: list[Diagnostic] = []
    for path, lines in files.items():
        for number, line in enumerate(lines, start=1):
            if "echomq:" not in line:  # nearly every line: no regular expression for it
                continue
            codes, wrong = _read_comment(path, number, line)
            if codes:
                silenced.setdefault((path, number), set()).update(codes)
            problems += wrong
    kept: list[Diagnostic] = []
    for finding in [*found, *problems]:
        code = finding.code
        if code not in FIXED_CODES:
            if code in rules.ignore or code in silenced.get((finding.path, finding.line), ()):
                continue
            if code in rules.warn and finding.severity is Severity.ERROR:
                finding = replace(finding, severity=Severity.WARNING)
        kept.append(finding)
    return kept


def _read_comment(path: str, number: int, line: str) -> tuple[set[str], list[Diagnostic]]:
    """The codes an ignore comment on `line` names, and a finding for each it cannot take."""
    codes: set[str] = set()
    problems: list[Diagnostic] = []
    for directive in _DIRECTIVE.finditer(line):
        start = directive.end()
        match = _IGNORE.match(line, start)
        if match is None:
            problems.append(
                _problem(
                    path,
                    number,
                    directive.start(),
                    "malformed comment: expected '-- echomq: ignore[code, ...]'",
                )
            )
            continue
        offset = match.start("codes")
        for part in match["codes"].split(","):
            code = part.strip()
            column = offset + (len(part) - len(part.lstrip()))
            offset += len(part) + 1
            problem = code_problem(code) if code else "empty finding code"
            if problem is not None:
                problems.append(_problem(path, number, column, problem))
            else:
                codes.add(code)
    return codes, problems


def _problem(path: str, line: int, index: int, message: str) -> Diagnostic:
    return Diagnostic(path, line, index + 1, Severity.ERROR, "ignore-comment", message)
