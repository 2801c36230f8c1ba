"""The header's type grammar, once: what each type is in Python, how a value of it is sent and how
a reply of it is read; argument types (`int(1..)`, `enum(pause|resume)`, `id?`) and return shapes
(`tuple[string, hash] | nil`) parsed into values.

The header parser (toolchain/header.py) reads types through this module, the generator
(toolchain/codegen.py) writes annotations and encoder calls from it, and the runtime decodes
replies with it, so a type added to `TYPES` is added everywhere at once.
"""

from __future__ import annotations

import functools
import json
import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from . import arguments, replies
from .errors import ArgumentError


@dataclass(frozen=True)
class WireType:
    """One type of the header grammar."""

    annotation: str  # the Python type a wrapper takes or returns
    # What a runtime sends it as, the manifest's argument `type` (an id or an enum goes as text);
    # "" for a type that only a reply has.
    wire: str = ""
    encoder: Callable[..., bytes] | None = None  # an argument type's, in arguments.py
    decoder: Callable[[object], object] | None = None  # a reply type's, in replies.py
    # The forms that narrow an argument type, `string(non-empty)`, `json(object)`: each one's
    # annotation. The encoder takes the form as its `form` argument.
    forms: Mapping[str, str] = field(default_factory=dict)


TYPES: Mapping[str, WireType] = MappingProxyType(
    {
        "string": WireType(
            "str",
            "string",
            arguments.string_arg,
            replies.as_str,
            forms=dict.fromkeys(arguments.STRING_FORMS, "str"),
        ),
        "int": WireType("int", "int", arguments.int_arg, replies.as_int),
        "number": WireType("float", "number", arguments.number_arg),
        "bool": WireType("bool", "bool", arguments.bool_arg),
        "json": WireType(
            "object",
            "json",
            arguments.json_arg,
            replies.as_json,  # a reply of JSON text, decoded
            forms=dict.fromkeys(arguments.JSON_FORMS, "Mapping[str, object]"),  # collections.abc
        ),
        # The caller packs: the runtime depends on no msgpack library.
        "msgpack": WireType("bytes", "msgpack", arguments.bytes_arg),
        "bytes": WireType("bytes", "bytes", arguments.bytes_arg),
        "id": WireType("str", "string", arguments.id_arg),
        "enum": WireType("str", "string", arguments.enum_arg),  # wrappers: a Literal of its values
        "nil": WireType("None", decoder=replies.as_nil),
        "status": WireType("str", decoder=replies.as_str),
        "hash": WireType("dict[str, str]", decoder=replies.as_hash),
    }
)
ARG_TYPES = tuple(name for name, kind in TYPES.items() if kind.encoder is not None)
REPLY_TYPES = tuple(name for name, kind in TYPES.items() if kind.decoder is not None)

# -- argument types -------------------------------------------------------------------------

_NUMBER = r"-?[0-9]+(?:\.[0-9]+)?"
_RANGE = re.compile(rf"(?P<low>{_NUMBER})?\.\.(?P<below><)?(?P<high>{_NUMBER})?")
_ENUM_VALUE = re.compile(r"[A-Za-z0-9_.-]+")


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
    form: str = ""  # one of the type's forms (TYPES[kind].forms), or "" for none

    @property
    def wire(self) -> str:
        """The type a runtime encodes the value as (the manifest's `type`)."""
        return TYPES[self.kind].wire

    @property
    def annotation(self) -> str:
        """The Python type a wrapper takes for it (an enum's wrapper names a Literal instead)."""
        kind = TYPES[self.kind]
        return kind.forms[self.form] if self.form else kind.annotation

    @property
    def encoder(self) -> Callable[..., bytes]:
        encoder = TYPES[self.kind].encoder
        assert encoder is not None  # every kind parse_arg_type accepts has one
        return encoder

    def encode(self, script: str, name: str, value: object) -> bytes:
        """`value` checked and encoded as the generated wrappers do it (codegen.ArgView.encode
        writes the same call): ArgumentError when the type refuses it."""
        if self.form:
            return self.encoder(script, name, value, self.form)
        if self.kind == "enum":
            return self.encoder(script, name, value, self.values)
        if self.kind == "id":
            return self.encoder(script, name, value, optional=self.optional)
        bounds: dict[str, object] = {}
        if self.kind in ("int", "number"):
            number = int if self.kind == "int" else float
            if self.low is not None:
                bounds["low"] = number(self.low)
            if self.high is not None:
                bounds["high"] = number(self.high)
            if self.below:
                bounds["below"] = True
        return self.encoder(script, name, value, **bounds)

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
    forms = TYPES[kind].forms
    if forms:
        if inner not in forms:
            raise ValueError(f"'{text}': a {kind}'s form is one of: {', '.join(forms)}")
        return ArgType(kind, form=inner)
    if kind not in ("int", "number"):
        raise ValueError(f"'{text}': {kind} takes no (...)")
    return _ranged(text, kind, inner)


def _ranged(text: str, kind: str, inner: str) -> ArgType:
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


# -- defaults and roles ---------------------------------------------------------------------

# What a runtime fills in for an argument the caller leaves out, by role (`= @now`): the kinds
# of argument each may stand for, and what it is.
ROLES: Mapping[str, tuple[tuple[str, ...], str]] = MappingProxyType(
    {
        "now": (("int",), "the caller's clock, in milliseconds since the epoch"),
        "token": (("string",), "a new random lock token"),
    }
)
# The defaults a header may give: JSON's scalars, and an empty object or array for JSON.
_CONTAINER_DEFAULTS = ("{}", "[]")


def parse_default(arg: ArgType, text: str) -> tuple[object, str]:
    """An argument's `= <default>` as a header spells it: (the value, "") for a JSON literal
    the type accepts, or (None, role) for `@<role>`; ValueError says what is wrong."""
    if text.startswith("@"):
        role = text[1:]
        if role not in ROLES:
            raise ValueError(f"unknown role '{text}' (one of: @{', @'.join(ROLES)})")
        kinds, _ = ROLES[role]
        if arg.kind not in kinds:
            raise ValueError(f"'{text}' stands for {' or '.join(kinds)} arguments, not {arg.kind}")
        return None, role
    if text in _CONTAINER_DEFAULTS and arg.kind != "json":
        raise ValueError(f"'{text}' is a default for json arguments only")
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError(
            f"'{text}' is not a default: a JSON literal (0, 1.5, \"text\", true, false, {{}})"
            " or a role (@now, @token)"
        ) from None
    if isinstance(value, list | dict) and text not in _CONTAINER_DEFAULTS:
        raise ValueError(f"'{text}': a default object or array is empty ({{}} or [])")
    try:
        arg.encode("default", "default", value)
    except ArgumentError as exc:
        raise ValueError(str(exc).removeprefix("default: argument 'default' ")) from None
    return value, ""


# -- return shapes --------------------------------------------------------------------------


# A record's class by its name: a generated NamedTuple (a runtime without one decodes a record
# as a plain tuple).
Records = Mapping[str, type[tuple[object, ...]]]


@dataclass(frozen=True)
class Shape:
    """A parsed return shape: a reply type of `TYPES` (`name`), `list[item]`
    (`container="list"`, one item), `tuple[a, b, ...]` (`container="tuple"`), a named record
    `Name(field: a, ...)` (`container="record"`, `name` and `fields`, one per item), or the
    union of `items` (`container="|"`)."""

    name: str = ""
    container: str = ""
    items: tuple[Shape, ...] = ()
    fields: tuple[str, ...] = ()  # a record's field names, in order

    @property
    def spelling(self) -> str:
        """The shape as a header spells it, normalised: parse_shape(s.spelling) == s."""
        if self.container == "record":
            parts = [f"{f}: {i.spelling}" for f, i in zip(self.fields, self.items, strict=True)]
            return f"{self.name}({', '.join(parts)})"
        if self.container:
            return self._joined([item.spelling for item in self.items])
        return self.name

    @property
    def annotation(self) -> str:
        """The Python type of a reply of this shape (a record's: the class named for it)."""
        if self.container == "record":
            return self.name
        if self.container:
            return self._joined([item.annotation for item in self.items])
        return TYPES[self.name].annotation

    def _joined(self, parts: list[str]) -> str:
        """A container's parts, as Python and the header both write them."""
        if self.container == "|":
            return " | ".join(parts)
        return f"{self.container}[{', '.join(parts)}]"

    def records(self) -> list[Shape]:
        """The records in this shape, outermost first, each once per place it appears."""
        found = [self] if self.container == "record" else []
        for item in self.items:
            found += item.records()
        return found

    def decoder(self, records: Records | None = None) -> Callable[[object], object]:
        """A function from a redis-py reply to the Python value of this shape; it raises
        TypeError or ValueError for a reply that does not fit. A record is built with its
        constructor in `records`, else left a tuple."""
        if self.container == "|":
            alternatives = [(item.decoder(records), item.name == "nil") for item in self.items]
            return replies.union(alternatives, self.spelling)
        if self.container == "list":
            return replies.list_of(self.items[0].decoder(records))
        if self.container in ("tuple", "record"):
            items = [item.decoder(records) for item in self.items]
            build = (records or {}).get(self.name) if self.container == "record" else None
            return replies.tuple_of(items, build or tuple)
        decoder = TYPES[self.name].decoder
        assert decoder is not None  # the parser accepts reply types only
        return decoder


# How deep lists and tuples may nest in a return shape. Redis never sees the header, so nothing
# outside bounds it; the reader and every walk of a `Shape` (spelling, annotation, decoder)
# recurse once per level, and no reply worth declaring comes near this.
MAX_SHAPE_DEPTH = 32

_SHAPE_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[\[\],|():]|\S+?(?=[\s\[\],|():]|$)")
# A record is a tuple (a NamedTuple in Python), as a script's keys are: a field may not take
# the tuple's methods' names.
TUPLE_METHODS = frozenset({"count", "index"})
# A record's name: a Python class name, by the naming of the generated classes.
RECORD_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")


def read_shape(text: str) -> tuple[Shape, str]:
    """The return shape at the start of `text`, and the rest of it (a header's description);
    ValueError says what is wrong with the shape.

    `shape := term ('|' term)*`, where a term is a reply type, `list[shape]`,
    `tuple[shape, ...]` or a record, `Name(field: shape, ...)`.
    """
    tokens = _SHAPE_TOKEN.findall(text)
    reader = _ShapeReader(tokens)
    shape = reader.union()
    position = 0
    for token in tokens[: reader.pos]:
        position = text.index(token, position) + len(token)
    return shape, text[position:].strip()


@functools.cache
def parse_shape(text: str) -> Shape:
    """A whole return shape, as a manifest or a wrapper's spec holds it."""
    shape, rest = read_shape(text)
    if rest:
        raise ValueError(f"unexpected '{rest}' after the return shape")
    return shape


class _ShapeReader:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens = tokens
        self.pos = 0
        self.depth = 0  # the lists and tuples open at `pos`

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str) -> None:
        if self.peek() != expected:
            raise ValueError(f"expected '{expected}', found '{self.peek() or 'end of line'}'")
        self.pos += 1

    def union(self) -> Shape:
        terms = [self.term()]
        while self.peek() == "|":
            self.pos += 1
            terms.append(self.term())
        return terms[0] if len(terms) == 1 else Shape(container="|", items=tuple(terms))

    def term(self) -> Shape:
        word = self.peek()
        if word in REPLY_TYPES:
            self.pos += 1
            return Shape(word)
        if word is not None and RECORD_NAME.fullmatch(word) and self.next_is("("):
            return self.record(word)
        if word in ("list", "tuple"):
            if self.depth == MAX_SHAPE_DEPTH:
                raise ValueError(f"lists and tuples nest more than {MAX_SHAPE_DEPTH} deep")
            self.depth += 1
            self.pos += 1
            self.take("[")
            items = [self.union()]
            while word == "tuple" and self.peek() == ",":
                self.pos += 1
                items.append(self.union())
            self.take("]")
            self.depth -= 1
            return Shape(container=word, items=tuple(items))
        raise ValueError(
            f"expected a type ({', '.join(REPLY_TYPES)}, list[...], tuple[...], Name(...)),"
            f" found '{word or 'end of line'}'"
        )

    def next_is(self, token: str) -> bool:
        return self.pos + 1 < len(self.tokens) and self.tokens[self.pos + 1] == token

    def record(self, name: str) -> Shape:
        """`Name(field: shape, ...)`, the name already peeked."""
        if self.depth == MAX_SHAPE_DEPTH:
            raise ValueError(f"lists, tuples and records nest more than {MAX_SHAPE_DEPTH} deep")
        self.depth += 1
        self.pos += 2  # the name and '('
        fields: list[str] = []
        items: list[Shape] = []
        while True:
            field = self.peek() or "end of line"
            if not re.fullmatch(r"[a-z][a-z0-9_]*", field) or keyword.iskeyword(field):
                raise ValueError(f"'{field}' is not a field name of {name} (e.g. job_id)")
            if field in TUPLE_METHODS:
                raise ValueError(f"a field '{field}' of {name} would hide the tuple's own method")
            if field in fields:
                raise ValueError(f"{name} has two fields named '{field}'")
            self.pos += 1
            self.take(":")
            fields.append(field)
            items.append(self.union())
            if self.peek() != ",":
                break
            self.pos += 1
        self.take(")")
        self.depth -= 1
        return Shape(name=name, container="record", items=tuple(items), fields=tuple(fields))
