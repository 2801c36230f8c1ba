"""The checks that join a script's code facts with its header, its filename and its line map.

`analyse.py` says what the code does; this module says whether that agrees with what the script
declares, and places every finding in the source file and line it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..runtime.codes import ERROR_CODES
from .analyse import Facts, TableUse
from .diagnostics import Diagnostic, Severity, plural
from .header import Header, Slot
from .naming import header_clashes
from .resolve import ResolvedScript
from .sources import MAX_KEYS

ERROR = Severity.ERROR
WARNING = Severity.WARNING


@dataclass(frozen=True)
class CheckOptions:
    require_header: bool
    # How findings name the source root ("lua_src"), for places quoted inside messages.
    src_display: str = "."


class _Reporter:
    """Collects findings for one script, mapping resolved positions to source positions."""

    def __init__(self, script: ResolvedScript, options: CheckOptions) -> None:
        self.script = script
        self.options = options
        self.out: list[Diagnostic] = []

    def at(self, row: int, col: int, severity: Severity, code: str, message: str) -> None:
        index, line = self.script.origins[row]
        source = self.script.files[index]
        text = source.lines[line - 1].encode("utf-8")
        # tree-sitter counts bytes; people (and editors) count characters.
        char_col = len(text[:col].decode("utf-8", "ignore")) + 1
        self.out.append(Diagnostic(source.path, line, char_col, severity, code, message))

    def in_script(self, line: int, col: int, severity: Severity, code: str, message: str) -> None:
        self.out.append(Diagnostic(self.script.entry.path, line, col, severity, code, message))

    def place(self, row: int, relative_to: int | None = None) -> str:
        """`path:line` of a resolved row, or `line N` when it shares `relative_to`'s file."""
        path, line = self.script.origin(row)
        if relative_to is not None and self.script.origin(relative_to)[0] == path:
            return f"line {line}"
        return f"{self.options.src_display}/{path}:{line}"


def check_script(
    script: ResolvedScript,
    header: Header | None,
    facts: Facts,
    options: CheckOptions,
    header_unreadable: bool = False,
) -> list[Diagnostic]:
    """Every finding about one resolved script, in source coordinates.

    With `header_unreadable` (its problems are reported elsewhere) the code is checked on its
    own: judging it against a half-read header would only add noise.
    """
    report = _Reporter(script, options)
    if facts.syntax is not None:
        row, col, message = facts.syntax
        # Lua names other lines of the resolved script ("to close 'if' at line 12"): map them.
        message = re.sub(
            r"\bat line (\d+)",
            lambda m: "at " + report.place(int(m[1]) - 1, relative_to=row),
            message,
        )
        report.at(row, col, ERROR, "syntax", message)
        return report.out
    _code_findings(report, facts)
    if header_unreadable:
        pass
    elif header is None:
        report.in_script(
            1,
            1,
            ERROR if options.require_header else WARNING,
            "header-missing",
            "script has no header (see docs/authoring.md)"
            + (", so its keys are named by position" if script.entry.num_keys else ""),
        )
        _check_keys_without_header(report, facts.keys, script.entry.num_keys)
        _check_argv_without_header(report, facts.argv)
    else:
        _check_keys(report, header, facts.keys, script.entry.num_keys)
        _check_names(report, header)
        _check_argv(report, header, facts.argv)
        _check_codes(report, header, facts)
    _check_includes(report, facts)
    _check_key_slots(report, facts)
    return report.out


def _code_findings(report: _Reporter, facts: Facts) -> None:
    script_path = report.script.entry.path
    for finding in facts.findings:
        severity = WARNING if finding.code in ("unused-local", "shadowed-local") else ERROR
        # An include's top-level helpers are judged as a whole, by include-unused.
        in_include = report.script.origin(finding.row)[0] != script_path
        if finding.code == "unused-local" and finding.top_level and in_include:
            continue
        # A parameter or inner local of an include may hide a script's top-level local only
        # because the include was pasted below it: its author cannot know every includer's names.
        # Two top-level declarations of one name stay reported: the second replaces the first.
        if (
            finding.code == "shadowed-local"
            and finding.related_row is not None
            and not finding.top_level
            and in_include
            and report.script.origins_file(finding.row)
            != report.script.origins_file(finding.related_row)
        ):
            continue
        message = finding.message
        if finding.related_row is not None:
            message += f" at {report.place(finding.related_row)}"
        report.at(finding.row, finding.col, severity, finding.code, message)


def _slot_col(report: _Reporter, slot: Slot) -> int:
    line = report.script.files[0].lines[slot.line - 1]
    found = line.find(" " + slot.name)
    return found + 2 if found >= 0 else 1


def _reads_all(use: TableUse) -> bool:
    """Whether every entry counts as read: the table is read whole, by a computed index, or
    where the check cannot follow it."""
    return bool(use.whole or use.dynamic or use.escaped)


def _read_indexes(use: TableUse, count: int) -> set[int]:
    if _reads_all(use):
        return set(range(1, count + 1))
    return {index for index, _, _ in use.literal}


def _check_keys(report: _Reporter, header: Header, use: TableUse, num_keys: int) -> None:
    path = report.script.entry.path
    if len(header.keys) != num_keys:
        line = header.keys[0].line if header.keys else 1
        report.in_script(
            line,
            1,
            ERROR,
            "header-keys",
            f"the header declares {plural(len(header.keys), 'key')} but the filename '{path}'"
            f" says {num_keys}",
        )
    _check_key_indexes(report, use, num_keys, variadic=header.rest_keys is not None)
    read = _read_indexes(use, num_keys)
    for position, slot in enumerate(header.keys, start=1):
        col = _slot_col(report, slot)
        if slot.unused and position in read and not _reads_all(use):
            report.in_script(
                slot.line,
                col,
                ERROR,
                "key-marked-unused",
                f"key {position} '{slot.name}' is marked (unused) but the code reads"
                f" KEYS[{position}]",
            )
        elif not slot.unused and position not in read:
            report.in_script(
                slot.line,
                col,
                ERROR,
                "key-unused",
                f"key {position} '{slot.name}' is never read; remove it or mark it (unused)",
            )


def _check_key_indexes(report: _Reporter, use: TableUse, num_keys: int, variadic: bool) -> None:
    for index, row, col in use.literal:
        if not 1 <= index <= num_keys:
            report.at(
                row,
                col,
                ERROR,
                "keys-range",
                f"KEYS[{index}] is out of range: '{report.script.entry.path}' takes"
                f" {plural(num_keys, 'key')}",
            )
    if not variadic:
        for row, col in use.dynamic:
            report.at(
                row,
                col,
                ERROR,
                "keys-dynamic",
                "KEYS indexed by a value the check cannot work out: use KEYS[<integer>], or"
                " declare a variable key list with '@key...' in the header",
            )
        _check_escapes(report, use, "KEYS", "keys-escape", "a variable key list with '@key...'")


def _check_names(report: _Reporter, header: Header) -> None:
    # Each generated wrapper would be broken code, though the script itself is fine.
    for slot, message in header_clashes(report.script.entry.name, header):
        report.in_script(slot.line, _slot_col(report, slot), ERROR, "header-names", message)


def _check_keys_without_header(report: _Reporter, use: TableUse, num_keys: int) -> None:
    _check_key_indexes(report, use, num_keys, variadic=False)
    if _reads_all(use):
        return
    read = {index for index, _, _ in use.literal if 1 <= index <= num_keys}
    highest = max(read, default=0)
    if highest < num_keys:
        # A warning, as key-unused is here: the filename is the only declaration, and a caller
        # may pass a key only to route the call on a cluster (BullMQ's relay*-1 scripts).
        report.in_script(
            1,
            1,
            WARNING,
            "keys-arity",
            f"the filename declares {plural(num_keys, 'key')} but the code reads at most"
            f" {f'KEYS[{highest}]' if highest else 'none of them'}",
        )
    for position in range(1, highest):
        if position not in read:
            report.in_script(
                1, 1, WARNING, "key-unused", f"key {position} (KEYS[{position}]) is never read"
            )


# The most arguments a script without a header may read: its wrappers name one parameter per
# ARGV index up to the highest it reads (arg1, arg2, ...), so a typo such as ARGV[99999999999]
# would cost work and output in proportion to it. The same bound as the filename's KEYS count.
MAX_POSITIONAL_ARGS = MAX_KEYS


def _check_argv_without_header(report: _Reporter, use: TableUse) -> None:
    for index, row, col in use.literal:
        if index > MAX_POSITIONAL_ARGS:
            report.at(
                row,
                col,
                ERROR,
                "argv-limit",
                f"ARGV[{index}] is past the {MAX_POSITIONAL_ARGS} arguments a script without a"
                " header may read: declare a varying list with '@arg...' in a header",
            )


def _check_argv(report: _Reporter, header: Header, use: TableUse) -> None:
    count = len(header.args)
    for index, row, col in use.literal:
        if not 1 <= index <= count and header.rest_args is None:
            report.at(
                row,
                col,
                ERROR,
                "argv-undeclared",
                f"ARGV[{index}] is not declared: the header declares {plural(count, 'argument')}",
            )
    if header.rest_args is None:
        for row, col in use.dynamic:
            report.at(
                row,
                col,
                ERROR,
                "argv-dynamic",
                "ARGV indexed by a value the check cannot work out: use ARGV[<integer>], or"
                " declare a variable argument list with '@arg...' in the header",
            )
        _check_escapes(
            report, use, "ARGV", "argv-escape", "a variable argument list with '@arg...'"
        )
    read = _read_indexes(use, count)
    for position, slot in enumerate(header.args, start=1):
        if position not in read:
            report.in_script(
                slot.line,
                _slot_col(report, slot),
                ERROR,
                "argv-unused",
                f"argument {position} '{slot.name}' is never read (ARGV[{position}])",
            )


def _check_escapes(report: _Reporter, use: TableUse, table: str, code: str, rest: str) -> None:
    for row, col in use.escaped:
        report.at(
            row,
            col,
            ERROR,
            code,
            f"{table} is stored or passed where the check cannot follow it, so its reads there"
            f" go unchecked: index it here, pass it to a local function, or declare {rest}"
            " in the header",
        )


def _check_codes(report: _Reporter, header: Header, facts: Facts) -> None:
    for code, row, col in facts.returned_codes:
        if code not in ERROR_CODES:
            report.at(
                row,
                col,
                ERROR,
                "code-unknown",
                f"return {code}: not a code of the closed table -1..-11",
            )
        elif code not in header.codes:
            report.at(
                row,
                col,
                ERROR,
                "code-undeclared",
                f"return {code} ({ERROR_CODES[code]}) is not listed in the header;"
                f" add '--- @error {code} {ERROR_CODES[code]}'",
            )


def _check_key_slots(report: _Reporter, facts: Facts) -> None:
    for row, col, kind in facts.key_args:
        if kind == "argv":
            source = "is built from ARGV alone"
        elif kind == "literal":
            source = "is a literal"
        else:
            continue
        report.at(
            row,
            col,
            ERROR,
            "key-slot",
            f"this key {source}: on a Redis Cluster it may hash to another slot than the"
            " script's KEYS; pass it in KEYS, or build it from a KEYS value or its prefix",
        )


def _check_includes(report: _Reporter, facts: Facts) -> None:
    script = report.script
    for index, source in enumerate(script.files[1:], start=1):
        own_decls = [d for d in facts.top_decls if script.origins_file(d.row) == index]
        if own_decls:
            used = any(script.origins_file(row) != index for d in own_decls for row in d.read_rows)
        else:
            # A file that declares nothing may still run statements; that counts as use.
            used = any(script.origins_file(row) == index for row in facts.top_statement_rows)
        if not used:
            site = script.include_sites[source.path]
            report.out.append(
                Diagnostic(
                    site.path,
                    site.line,
                    site.col,
                    WARNING,
                    "include-unused",
                    f"nothing that '{source.path}' defines is used",
                )
            )
