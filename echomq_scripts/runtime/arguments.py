"""Arguments as Redis receives them: one encoder per argument type of the header grammar
(grammar.TYPES names each type's), and the checks of queue names and explicit keys. Standard
library only: the toolchain reads the grammar, and with it this module, without redis-py.

Every encoder takes the script's id and the argument's name, so a refusal says which call and
which argument; each raises `ArgumentError` before anything is sent.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

from .errors import ArgumentError
from .keys import KeyNameError, check_job_id, check_key_part, check_queue

# One function per header type: the generated wrapper calls the one its header names, so no
# call pays for choosing. Each returns the bytes Redis receives; redis-py sends bytes as they
# are, so a string is encoded once (here, where a lone surrogate can be refused by name).
# Strings always go out as UTF-8, the protocol's text encoding, whatever encoding= the client
# was created with.


def _refuse(script: str, name: str, expected: str, value: object) -> ArgumentError:
    if value is None:
        return ArgumentError(f"{script}: argument '{name}' is required, got None")
    return ArgumentError(
        f"{script}: argument '{name}' must be {expected}, got {type(value).__name__} {value!r:.60}"
    )


def string_arg(script: str, name: str, value: object, form: str = "") -> bytes:
    """Text; `form` (a header's `string(<form>)`) narrows it: "non-empty"."""
    if isinstance(value, str):
        try:
            encoded = value.encode("utf-8")
        except UnicodeEncodeError:
            expected = "a str that UTF-8 can encode (no lone surrogates)"
            raise _refuse(script, name, expected, value) from None
        if form and not STRING_FORMS[form][0](value):
            raise _refuse(script, name, STRING_FORMS[form][1], value)
        return encoded
    raise _refuse(script, name, "a str", value)


STRING_FORMS: Mapping[str, tuple[Callable[[str], bool], str]] = {
    "non-empty": (bool, "a non-empty str"),
}
# The integers a Lua number holds exactly: the scripts refuse any other (includes/intArg.lua).
MAX_INT = 2**53 - 1


def int_arg(
    script: str, name: str, value: object, low: int = -MAX_INT, high: int = MAX_INT
) -> bytes:
    """An integer from `low` to `high` (a header's `int(<low>..<high>)`)."""
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return b"%d" % value
    if low == -MAX_INT and high == MAX_INT:
        expected = "an int"
    elif high == MAX_INT:
        expected = f"an int >= {low}"
    else:
        expected = f"an int from {low} to {high}"
    raise _refuse(script, name, expected, value)


def number_arg(
    script: str,
    name: str,
    value: object,
    low: float | None = None,
    high: float | None = None,
    below: bool = False,
) -> bytes:
    """A finite int or float; with bounds (a header's `number(<low>..<high>)`), within them,
    the upper one excluded when `below` (`..<`)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _refuse(script, name, "an int or a float", value)
    if isinstance(value, float) and not math.isfinite(value):
        raise _refuse(script, name, "a finite number", value)
    if (low is not None and value < low) or (
        high is not None and (value >= high if below else value > high)
    ):
        bounds = [f">= {low:g}"] if low is not None else []
        bounds += [f"{'<' if below else '<='} {high:g}"] if high is not None else []
        raise _refuse(script, name, "a number " + " and ".join(bounds), value)
    if isinstance(value, int):
        return b"%d" % value
    return repr(float(value)).encode("ascii")


def enum_arg(script: str, name: str, value: object, values: tuple[str, ...]) -> bytes:
    """One of `values` (a header's `enum(<value>|...)`)."""
    if isinstance(value, str) and value in values:
        return value.encode("utf-8")
    raise _refuse(script, name, "one of " + ", ".join(repr(v) for v in values), value)


def id_arg(script: str, name: str, value: object, optional: bool = False) -> bytes:
    """A job id by the protocol's rule (keys.check_job_id); "" too when `optional` (`id?`)."""
    if optional and value == "":
        return b""
    try:
        return check_job_id(value).encode("utf-8")  # type: ignore[arg-type]
    except KeyNameError as exc:
        raise ArgumentError(f"{script}: argument '{name}': {exc}") from None


def bool_arg(script: str, name: str, value: object) -> bytes:
    if isinstance(value, bool):
        return b"1" if value else b"0"
    raise _refuse(script, name, "a bool", value)


def json_arg(script: str, name: str, value: object, form: str = "") -> bytes:
    """Any JSON value, None being null, as compact UTF-8 JSON (as JavaScript's JSON.stringify
    writes it); `form` "object" (a header's `json(object)`) asks for a mapping, sent as a JSON
    object."""
    if form:
        if type(value) is dict and not value:
            return b"{}"  # the common case of options: none
        if not isinstance(value, Mapping):
            raise _refuse(script, name, JSON_FORMS[form], value)
        value = dict(value)
    try:
        return _JSON.encode(value).encode("utf-8")
    except UnicodeEncodeError:  # a ValueError: caught first
        # A str holding a lone surrogate: UTF-8 cannot carry it, and the scripts' cjson would
        # refuse its escape.
        expected = "JSON whose strings UTF-8 can encode (no lone surrogates)"
        raise _refuse(script, name, expected, value) from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise ArgumentError(f"{script}: argument '{name}' is not JSON: {exc}") from None


# One encoder for every call: json.dumps with settings of its own would build one each time.
_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
JSON_FORMS: Mapping[str, str] = {"object": "a mapping (a JSON object)"}


def bytes_arg(script: str, name: str, value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    raise _refuse(script, name, "bytes", value)


# -- roles: what a wrapper fills in for an argument the caller leaves out (grammar.ROLES) ------


def now_ms() -> int:
    """The `@now` role: this machine's clock, in milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def new_token() -> str:
    """The `@token` role: a lock token no other pickup has, 128 random bits as hex."""
    return os.urandom(16).hex()


# The `{}` default of a `json(object)` argument: a mapping no caller can change.
EMPTY_OBJECT: Mapping[str, object] = MappingProxyType({})


def check_queue_name(script: str, queue: object) -> None:
    """A queue name by keys.check_queue's rule."""
    try:
        check_queue(queue)  # type: ignore[arg-type]
    except KeyNameError as exc:
        raise ArgumentError(f"{script}: {exc}") from None


def check_key_arg(script: str, name: str, value: object) -> None:
    """An argument that goes into a key: text that cannot break the hash tag
    (keys.check_key_part). A job id goes through id_arg, by the protocol's rule."""
    try:
        check_key_part(value, "value")  # type: ignore[arg-type]
    except KeyNameError as exc:
        raise ArgumentError(f"{script}: argument '{name}': {exc}") from None


def check_keys(script: str, keys: object, count: int | None) -> list[str | bytes]:
    """Explicit keys: a sequence of `count` (None: any number of) non-empty str or bytes."""
    if isinstance(keys, str | bytes) or not isinstance(keys, Sequence):
        raise ArgumentError(f"{script}: keys must be a sequence of str, got {keys!r:.60}")
    if count is not None and len(keys) != count:
        raise ArgumentError(f"{script}: takes {count} keys, got {len(keys)}")
    checked: list[str | bytes] = []
    for position, key in enumerate(keys, start=1):
        if not isinstance(key, str | bytes) or not key:
            raise ArgumentError(
                f"{script}: key {position} must be a non-empty str, got {key!r:.60}"
            )
        checked.append(key)
    return checked


def check_sequence(script: str, name: str, values: object) -> Sequence[object]:
    """A variable argument list: a sequence, not a str or bytes that would split into items."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise ArgumentError(f"{script}: {name} must be a sequence, got {values!r:.60}")
    return values
