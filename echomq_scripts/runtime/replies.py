"""Replies as Python values: one decoder per reply type of the header grammar (grammar.TYPES
names each type's), and the combinators that `grammar.Shape.decoder` builds a shape's decoder
from. Each raises TypeError or ValueError for a reply that does not fit.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Sequence


def text(value: object) -> str:
    """A reply's bytes (or anything else) as text; bytes that are not UTF-8 survive as
    surrogate escapes."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def as_int(reply: object) -> int:
    if type(reply) is int:  # what redis-py gives: the common case first
        return reply
    if isinstance(reply, bool) or not isinstance(reply, int):
        raise TypeError(f"expected an integer reply, got {reply!r:.60}")
    return reply


def as_str(reply: object) -> str:
    if isinstance(reply, bytes):
        return reply.decode("utf-8", "surrogateescape")
    if isinstance(reply, str):
        return reply
    raise TypeError(f"expected a string reply, got {reply!r:.60}")


def as_json(reply: object) -> object:
    """A string reply that holds JSON text, decoded (ValueError for text that is not JSON)."""
    return json.loads(as_str(reply))


def as_nil(reply: object) -> None:
    if reply is not None:
        raise TypeError(f"expected nil, got {reply!r:.60}")


def as_list(reply: object) -> list[object]:
    if not isinstance(reply, list):
        raise TypeError(f"expected an array reply, got {reply!r:.60}")
    return reply


def as_hash(reply: object) -> dict[str, str]:
    values = as_list(reply)
    if len(values) % 2:
        raise ValueError("a hash reply needs an even number of values")
    it = iter(values)
    return {text(k): text(v) for k, v in zip(it, it, strict=True)}


Decoder = Callable[[object], object]


def list_of(item: Decoder) -> Decoder:
    return lambda reply: [item(x) for x in as_list(reply)]


def tuple_of(items: Sequence[Decoder], record: type[tuple[object, ...]] = tuple) -> Decoder:
    """A tuple, or the `record` class (a NamedTuple, which adds no state to its tuple), of
    each value decoded by the decoder in its place."""
    count = len(items)
    decoders = tuple(items)
    new = tuple.__new__  # a NamedTuple's own __new__ only passes its fields on to this

    def as_tuple(reply: object) -> object:
        if type(reply) is not list:
            reply = as_list(reply)  # raises unless a list subclass
        if len(reply) != count:
            raise ValueError(f"expected {count} values, got {len(reply)}")
        # map() with operator.call runs each decoder on its value without a Python loop.
        return new(record, map(operator.call, decoders, reply))

    return as_tuple


def union(alternatives: Sequence[tuple[Decoder, bool]], spelling: str) -> Decoder:
    """The first alternative that fits; each is (its decoder, whether it is nil), and
    `spelling` is the union's, for the error."""
    has_nil = any(is_nil for _, is_nil in alternatives)
    others = [decoder for decoder, is_nil in alternatives if not is_nil]

    def first_fit(reply: object) -> object:
        if reply is None and has_nil:
            return None
        for decoder in others:
            try:
                return decoder(reply)
            except (TypeError, ValueError):
                continue
        raise TypeError(f"reply {reply!r:.60} does not fit {spelling}")

    return first_fit
