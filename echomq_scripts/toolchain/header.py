"""The machine-readable header at the top of a script (the format is in docs/authoring.md).

    --- Extends a job's lock while the caller still holds it.
    --- @key lock     the job's lock, emq:{q}:<id>:lock
    --- @key legacy   (unused) kept so the key order matches older runtimes
    --- @arg token    string  the token the lock was taken with
    --- @return int   1 when the lock was extended, 0 when it was not
    --- @error -2 JobLockNotExist

The header is the leading run of `---` lines, when at least one of them carries a tag; an
`--- @include` directive ends it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..runtime.codes import ERROR_CODES
from ..runtime.grammar import STRING, ArgType, Shape, parse_arg_type, parse_default, read_shape
from .diagnostics import Diagnostic, Severity
from .resolve import DIRECTIVE_START

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_TAG = re.compile(r"@(?P<tag>[a-z]+)(?P<rest>\.\.\.)?(?=\s|$)")
# `<name> <type> [= <default>] <description>`: a default is a role (`@now`), a JSON string
# (which may hold spaces) or any other run of non-blanks (a number, true, false, {}).
_ARG_LINE = re.compile(
    rf"(?P<name>{_NAME})\s+(?P<type>\S+)"
    r'(?:\s+=\s*(?P<default>"(?:[^"\\]|\\.)*"|\S+))?'
    r"(?:\s+(?P<description>.*))?"
)


@dataclass(frozen=True)
class Slot:
    """One declared KEYS or ARGV entry; `line` is where the header declares it."""

    name: str
    description: str
    line: int
    arg: ArgType = STRING  # for an argument: its type
    unused: bool = False
    # For a key: how its name is built, e.g. "emq:{q}:<job_id>:lock" ({q}: the queue's name,
    # <arg>: the value of that argument); "" when the header does not say.
    template: str = ""
    # For an argument: its default as JSON text (`= 0` gives "0"), "" for none; or the role a
    # runtime fills it by when the caller leaves it out (`= @now` gives "now"; grammar.ROLES).
    default: str = ""
    role: str = ""

    @property
    def type(self) -> str:
        return self.arg.kind


@dataclass(frozen=True)
class Header:
    summary: str
    description: str = ""
    keys: tuple[Slot, ...] = ()
    rest_keys: Slot | None = None  # `@key...`: KEYS past the fixed ones, indexed at run time
    args: tuple[Slot, ...] = ()
    rest_args: Slot | None = None
    returns: Shape | None = None  # every header that parses has one
    returns_description: str = ""
    codes: tuple[int, ...] = ()


def positional_header(num_keys: int, argc: int) -> Header:
    """What a script without a header declares: its keys and arguments named by position
    (key1.., arg1..), every argument a string, no summary and no return shape."""
    return Header(
        summary="",
        keys=tuple(Slot(f"key{i}", "", 0) for i in range(1, num_keys + 1)),
        args=tuple(Slot(f"arg{i}", "", 0) for i in range(1, argc + 1)),
    )


def header_lines(lines: tuple[str, ...]) -> list[tuple[int, str]]:
    """The header's lines as (1-based line number, text after '---'), in order."""
    out: list[tuple[int, str]] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped.startswith("---") or DIRECTIVE_START.match(stripped):
            break
        out.append((number, line[line.index("---") + 3 :]))
    return out


def parse_header(path: str, lines: tuple[str, ...]) -> tuple[Header | None, list[Diagnostic]]:
    """Read the header of the script at `path`; None when the script has none."""
    found = header_lines(lines)
    # A `---` block without a single tag is ordinary documentation, not a header.
    if not any(text.strip().startswith("@") for _, text in found):
        return None, []
    return _HeaderReader(path).read(found)


def _joined_continuations(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The header's lines with each tag line's continuations (the lines right after it indented
    by two spaces or more) joined to it; a tag keeps its own line number."""
    joined: list[tuple[int, str]] = []
    continues = False  # whether the line before was a tag line (or one of its continuations)
    for number, text in lines:
        body = text.strip()
        if continues and body and not body.startswith("@") and text.startswith("  "):
            joined[-1] = (joined[-1][0], f"{joined[-1][1].rstrip()} {body}")
            continue
        continues = body.startswith("@")
        joined.append((number, text))
    return joined


class _HeaderReader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.diagnostics: list[Diagnostic] = []

    def error(self, line: int, col: int, message: str) -> None:
        self.diagnostics.append(
            Diagnostic(self.path, line, col, Severity.ERROR, "header-syntax", message)
        )

    def read(self, lines: list[tuple[int, str]]) -> tuple[Header | None, list[Diagnostic]]:
        found = _joined_continuations(lines)
        prose: list[str] = []
        keys: list[Slot] = []
        args: list[Slot] = []
        rest_keys: Slot | None = None
        rest_args: Slot | None = None
        returns: tuple[Shape | None, str] = (None, "")
        saw_return = False
        codes: dict[int, int] = {}
        first_line = found[0][0]
        for number, text in found:
            col = 4 + len(text) - len(text.lstrip())
            body = text.strip()
            tag = _TAG.match(body)
            if tag is None:
                if body.startswith("@"):
                    self.error(number, col, f"unknown header tag '{body.split()[0]}'")
                else:
                    prose.append(body)
                continue
            name, variadic, rest = tag["tag"], bool(tag["rest"]), body[tag.end() :].strip()
            if name == "key":
                slot = self.read_key(number, col, rest)
                if slot is None:
                    continue
                if variadic:
                    rest_keys = self.single(number, col, "@key...", rest_keys, slot)
                elif rest_keys is not None:
                    self.error(number, col, "@key after @key...: the variable key list comes last")
                else:
                    keys.append(slot)
            elif name == "arg":
                after = body[tag.end() :]
                rest_col = col + tag.end() + len(after) - len(after.lstrip())
                slot = self.read_arg(number, col, rest, rest_col)
                if slot is None:
                    continue
                if variadic and (slot.default or slot.role):
                    self.error(number, col, "@arg... takes no default: its default is no values")
                elif variadic:
                    rest_args = self.single(number, col, "@arg...", rest_args, slot)
                elif rest_args is not None:
                    self.error(
                        number, col, "@arg after @arg...: the variable argument list comes last"
                    )
                else:
                    args.append(slot)
            elif name == "return" and not variadic:
                if saw_return:
                    self.error(number, col, "a second @return: a script has one return shape")
                    continue
                saw_return = True
                shape = self.read_shape(number, col, rest)
                if shape is not None:
                    returns = shape
            elif name == "error" and not variadic:
                code = self.read_code(number, col, rest)
                if code is not None:
                    if code in codes:
                        self.error(number, col, f"code {code} is listed twice")
                    codes[code] = number
            else:
                self.error(number, col, f"unknown header tag '@{name}{tag['rest'] or ''}'")
        self.check_unique(keys + ([rest_keys] if rest_keys else []), "key")
        self.check_unique(args + ([rest_args] if rest_args else []), "argument")
        self.check_templates(keys, {a.name: a.type for a in args})
        if rest_keys is not None and rest_keys.template:
            self.error(rest_keys.line, 1, "a variable key list (@key...) has no template")
        paragraphs = [p for p in prose if p]
        if not paragraphs:
            self.error(first_line, 1, "the header has no summary line")
        if not saw_return:
            self.error(first_line, 1, "the header has no @return line")
        if any(d.severity is Severity.ERROR for d in self.diagnostics):
            return None, self.diagnostics
        return (
            Header(
                summary=paragraphs[0],
                description=" ".join(paragraphs[1:]),
                keys=tuple(keys),
                rest_keys=rest_keys,
                args=tuple(args),
                rest_args=rest_args,
                returns=returns[0],
                returns_description=returns[1],
                codes=tuple(sorted(codes, reverse=True)),
            ),
            self.diagnostics,
        )

    def single(self, line: int, col: int, tag: str, old: Slot | None, new: Slot) -> Slot:
        if old is not None:
            self.error(line, col, f"a second {tag}: only one variable list is allowed")
        return new

    def read_key(self, line: int, col: int, rest: str) -> Slot | None:
        match = re.fullmatch(rf"({_NAME})(?:\s+(\(unused\)))?(?:\s+`([^`]*)`)?(?:\s+(.*))?", rest)
        if match is None:
            self.error(line, col, "expected '@key <name> [(unused)] [`template`] <description>'")
            return None
        return Slot(match[1], match[4] or "", line, unused=bool(match[2]), template=match[3] or "")

    def check_templates(self, keys: list[Slot], arg_types: dict[str, str]) -> None:
        templated = [k for k in keys if k.template]
        for key in templated:
            if key.template.count("{q}") != 1 or re.search(
                r"[{}]", key.template.replace("{q}", "")
            ):
                # Any other brace would move the key's hash tag off the queue's.
                self.error(
                    key.line,
                    1,
                    f"key '{key.name}': a template holds '{{q}}' once and no other brace",
                )
            for placeholder in re.findall(r"<([^>]*)>", key.template):
                if placeholder not in arg_types:
                    self.error(
                        key.line,
                        1,
                        f"key '{key.name}': <{placeholder}> in its template is not an argument",
                    )
                elif arg_types[placeholder] not in ("string", "id", "enum"):
                    self.error(
                        key.line,
                        1,
                        f"key '{key.name}': <{placeholder}> in its template must be a string, id"
                        f" or enum argument, not {arg_types[placeholder]}",
                    )
        if templated and len(templated) != len(keys):
            # A partial set could not build a script's whole key list from a queue name.
            untemplated = ", ".join(k.name for k in keys if not k.template)
            self.error(
                keys[0].line, 1, f"keys without a template beside keys with one: {untemplated}"
            )

    def read_arg(self, line: int, col: int, rest: str, rest_col: int) -> Slot | None:
        match = _ARG_LINE.fullmatch(rest)
        if match is None:
            self.error(line, col, "expected '@arg <name> <type> [= <default>] <description>'")
            return None
        try:
            arg = parse_arg_type(match["type"])
        except ValueError as exc:
            self.error(line, rest_col + match.start("type"), str(exc))
            return None
        default, role = "", ""
        if match["default"] is not None:
            try:
                value, role = parse_default(arg, match["default"])
            except ValueError as exc:
                self.error(line, rest_col + match.start("default"), f"bad default: {exc}")
                return None
            if not role:
                default = json.dumps(value, ensure_ascii=False)
        description = match["description"] or ""
        return Slot(match["name"], description, line, arg=arg, default=default, role=role)

    def read_code(self, line: int, col: int, rest: str) -> int | None:
        match = re.fullmatch(rf"(-?[0-9]+)(?:\s+({_NAME}))?", rest)
        if match is None:
            self.error(
                line, col, "expected '@error <code> [<Name>]', e.g. '@error -2 JobLockNotExist'"
            )
            return None
        code = int(match[1])
        if code not in ERROR_CODES:
            self.diagnostics.append(
                Diagnostic(
                    self.path,
                    line,
                    col,
                    Severity.ERROR,
                    "code-unknown",
                    f"code {code} is not in the protocol's closed table -1..-11",
                )
            )
            return None
        if match[2] and match[2] != ERROR_CODES[code]:
            self.error(line, col, f"code {code} is {ERROR_CODES[code]}, not {match[2]}")
            return None
        return code

    def read_shape(self, line: int, col: int, rest: str) -> tuple[Shape, str] | None:
        try:
            shape, description = read_shape(rest)
        except ValueError as exc:
            self.error(line, col, f"bad return shape: {exc}")
            return None
        records: dict[str, str] = {}
        for record in shape.records():
            if records.setdefault(record.name, record.spelling) != record.spelling:
                message = f"bad return shape: two different records named {record.name}"
                self.error(line, col, message)
                return None
        return shape, description

    def check_unique(self, slots: list[Slot], what: str) -> None:
        seen: set[str] = set()
        for slot in slots:
            if slot.name in seen:
                self.error(slot.line, 1, f"{what} name '{slot.name}' is declared twice")
            seen.add(slot.name)
