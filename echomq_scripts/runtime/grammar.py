"""The header's type grammar, once: what each type is in Python, how a value of it is sent and how
a reply of it is read; argument types (`int(1..)`, `enum(pause|resume)`, `id?`) and return shapes
(`tuple[string, hash] | nil`) parsed into values.

The header parser (toolchain/header.py) reads types through this module, the generator
(toolchain/codegen.py) writes annotations and encoder calls from it, and the runtime decodes
replies with it, so a type added to `TYPES` is added everywhere at once.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from . import arguments, replies


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


# -- return shapes --------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """A parsed return shape: a reply type of `TYPES` (`name`), `list[item]`
    (`container="list"`, one item), `tuple[a, b, ...]` (`container="tuple"`), or the union of
    `items` (`container="|"`)."""

    name: str = ""
    container: str = ""
    items: tuple[Shape, ...] = ()

    @property
    def spelling(self) -> str:
        """The shape as a header spells it, normalised: parse_shape(s.spelling) == s."""
        if self.container:
            return self._joined([item.spelling for item in self.items])
        return self.name

    @property
    def annotation(self) -> str:
        """The Python type of a reply of this shape."""
        if self.container:
            return self._joined([item.annotation for item in self.items])
        return TYPES[self.name].annotation

    def _joined(self, parts: list[str]) -> str:
        """A container's parts, as Python and the header both write them."""
        if self.container == "|":
            return " | ".join(parts)
        return f"{self.container}[{', '.join(parts)}]"

    def decoder(self) -> Callable[[object], object]:
        """A function from a redis-py reply to the Python value of this shape; it raises
        TypeError or ValueError for a reply that does not fit."""
        if self.container == "|":
            alternatives = [(item.decoder(), item.name == "nil") for item in self.items]
            return replies.union(alternatives, self.spelling)
        if self.container == "list":
            return replies.list_of(self.items[0].decoder())
        if self.container == "tuple":
            return replies.tuple_of([item.decoder() for item in self.items])
        decoder = TYPES[self.name].decoder
        assert decoder is not None  # the parser accepts reply types only
        return decoder


# How deep lists and tuples may nest in a return shape. Redis never sees the header, so nothing
# outside bounds it; the reader and every walk of a `Shape` (spelling, annotation, decoder)
# recurse once per level, and no reply worth declaring comes near this.
MAX_SHAPE_DEPTH = 32

_SHAPE_TOKEN = re.compile(r"[A-Za-z_]+|[\[\],|]|\S+?(?=[\s\[\],|]|$)")


def read_shape(text: str) -> tuple[Shape, str]:
    """The return shape at the start of `text`, and the rest of it (a header's description);
    ValueError says what is wrong with the shape.

    `shape := term ('|' term)*`, where a term is a reply type, `list[shape]` or
    `tuple[shape, ...]`.
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
            f"expected a type ({', '.join(REPLY_TYPES)}, list[...], tuple[...]), found"
            f" '{word or 'end of line'}'"
        )
