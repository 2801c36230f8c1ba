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

import re
from dataclasses import dataclass

from .codes import ERROR_CODES
from .diagnostics import Diagnostic, Severity
from .resolve import DIRECTIVE_START

ARG_TYPES = ("string", "int", "number", "bool", "json", "msgpack", "bytes", "id", "enum")
# What each type travels as: a job id and an enum value are text (the manifest's `type`).
WIRE_TYPES = {**{kind: kind for kind in ARG_TYPES}, "id": "string", "enum": "string"}
STRING_FORMS = ("non-empty", "json-object")
_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?"
_RANGE = re.compile(rf"(?P<low>{_NUMBER})?\.\.(?P<below><)?(?P<high>{_NUMBER})?")
_ENUM_VALUE = re.compile(r"[A-Za-z0-9_.-]+")
_SCALAR_SHAPES = ("int", "string", "nil", "status", "hash")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_TAG = re.compile(r"@(?P<tag>[a-z]+)(?P<rest>\.\.\.)?(?=\s|$)")


@dataclass(frozen=True)
class ArgType:
    """What an argument may hold, as its header spells it: `int(1..)`, `number(0..<1)`,
    `enum(completed|failed)`, `id?`, `string(non-empty)`. The scripts refuse what falls
    outside it, and the generated wrappers refuse the same before sending anything."""

    kind: str  # one of ARG_TYPES
    low: float | None = None
    high: float | None = None
    below: bool = False  # the upper bound itself is excluded: number(0..<1)
    values: tuple[str, ...] = ()  # an enum's values, in the header's order
    optional: bool = False  # id?: "" stands for no id
    form: str = ""  # a string's form: one of STRING_FORMS, or "" for any text

    @property
    def wire(self) -> str:
        """The type a runtime encodes the value as (the manifest's `type`)."""
        return WIRE_TYPES[self.kind]

    @property
    def spelling(self) -> str:
        """The type as a header spells it: parse_arg_type(t.spelling) == t."""
        if self.kind == "id":
            return "id?" if self.optional else "id"
        if self.kind == "enum":
            return f"enum({'|'.join(self.values)})"
        if self.form:
            return f"{self.kind}({self.form})"
        if self.low is None and self.high is None:
            return self.kind
        low, high = (
            "" if bound is None else str(int(bound)) if bound.is_integer() else repr(bound)
            for bound in (self.low, self.high)
        )
        return f"{self.kind}({low}..{'<' if self.below else ''}{high})"


STRING = ArgType("string")


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
    returns: str = ""
    returns_description: str = ""
    codes: tuple[int, ...] = ()


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


class _HeaderReader:
    def __init__(self, path: str) -> None:
        self.path = path
        self.diagnostics: list[Diagnostic] = []

    def error(self, line: int, col: int, message: str) -> None:
        self.diagnostics.append(
            Diagnostic(self.path, line, col, Severity.ERROR, "header-syntax", message)
        )

    def read(self, found: list[tuple[int, str]]) -> tuple[Header | None, list[Diagnostic]]:
        prose: list[str] = []
        keys: list[Slot] = []
        args: list[Slot] = []
        rest_keys: Slot | None = None
        rest_args: Slot | None = None
        returns = ("", "")
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
                if variadic:
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
        match = re.fullmatch(rf"({_NAME})\s+(\S+)(?:\s+(.*))?", rest)
        if match is None:
            self.error(line, col, "expected '@arg <name> <type> <description>'")
            return None
        try:
            arg = parse_arg_type(match[2])
        except ValueError as exc:
            self.error(line, rest_col + match.start(2), str(exc))
            return None
        return Slot(match[1], match[3] or "", line, arg=arg)

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

    def read_shape(self, line: int, col: int, rest: str) -> tuple[str, str] | None:
        tokens = re.findall(r"[A-Za-z_]+|[\[\],|]|\S+?(?=[\s\[\],|]|$)", rest)
        parser = _ShapeParser(tokens)
        try:
            shape = parser.union()
        except ValueError as exc:
            self.error(line, col, f"bad return shape: {exc}")
            return None
        # What the shape did not consume is the description; find it by position in `rest`.
        consumed = parser.pos
        position = 0
        for token in tokens[:consumed]:
            position = rest.index(token, position) + len(token)
        return shape, rest[position:].strip()

    def check_unique(self, slots: list[Slot], what: str) -> None:
        seen: set[str] = set()
        for slot in slots:
            if slot.name in seen:
                self.error(slot.line, 1, f"{what} name '{slot.name}' is declared twice")
            seen.add(slot.name)


def parse_arg_type(text: str) -> ArgType:
    """An argument type as a header spells it (docs/authoring.md, `@arg`); ValueError says
    what is wrong with it."""
    match = re.fullmatch(r"(?P<kind>[a-z]+)(?P<optional>\?)?(?:\((?P<inner>[^()]*)\))?", text)
    if match is None or match["kind"] not in ARG_TYPES:
        raise ValueError(f"unknown argument type '{text}' (one of: {', '.join(ARG_TYPES)})")
    kind, inner = match["kind"], match["inner"]
    if match["optional"] and kind != "id":
        raise ValueError(f"'{text}': only id takes '?' (an id, or \"\" for none)")
    if kind == "id":
        if inner is not None:
            raise ValueError(f"'{text}': id takes no (...)")
        return ArgType("id", optional=bool(match["optional"]))
    if kind == "enum":
        values = tuple(inner.split("|")) if inner else ()
        if not values or not all(_ENUM_VALUE.fullmatch(v) for v in values):
            raise ValueError(
                f"'{text}': expected enum(<value>|<value>...), e.g. enum(pause|resume)"
            )
        if len(set(values)) != len(values):
            raise ValueError(f"'{text}': a value is listed twice")
        return ArgType("enum", values=values)
    if inner is None:
        return ArgType(kind)
    if kind == "string":
        if inner not in STRING_FORMS:
            raise ValueError(f"'{text}': a string's form is one of: {', '.join(STRING_FORMS)}")
        return ArgType("string", form=inner)
    if kind not in ("int", "number"):
        raise ValueError(f"'{text}': {kind} takes no (...)")
    bounds = _RANGE.fullmatch(inner)
    if bounds is None or (bounds["low"] is None and bounds["high"] is None):
        raise ValueError(
            f"'{text}': expected a range such as {kind}(1..), {kind}(0..10) or (0..<1)"
        )
    low = float(bounds["low"]) if bounds["low"] is not None else None
    high = float(bounds["high"]) if bounds["high"] is not None else None
    below = bool(bounds["below"])
    if below and high is None:
        raise ValueError(f"'{text}': '..<' needs an upper bound")
    if kind == "int" and any(b is not None and b % 1 for b in (low, high)):
        raise ValueError(f"'{text}': an int's bounds are integers")
    if low is not None and high is not None and (high < low or (below and high == low)):
        raise ValueError(f"'{text}': the range is empty")
    return ArgType(kind, low=low, high=high, below=below)


class _ShapeParser:
    """Return shapes: `shape := term ('|' term)*`, where a term is one of
    `int string nil status hash list[shape] tuple[shape, ...]`."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str) -> None:
        if self.peek() != expected:
            raise ValueError(f"expected '{expected}', found '{self.peek() or 'end of line'}'")
        self.pos += 1

    def union(self) -> str:
        terms = [self.term()]
        while self.peek() == "|":
            self.pos += 1
            terms.append(self.term())
        return " | ".join(terms)

    def term(self) -> str:
        word = self.peek()
        if word in _SCALAR_SHAPES:
            self.pos += 1
            return word
        if word in ("list", "tuple"):
            self.pos += 1
            self.take("[")
            items = [self.union()]
            while word == "tuple" and self.peek() == ",":
                self.pos += 1
                items.append(self.union())
            self.take("]")
            return f"{word}[{', '.join(items)}]"
        raise ValueError(
            f"expected a type (int, string, nil, status, hash, list[...], tuple[...]), found"
            f" '{word or 'end of line'}'"
        )
