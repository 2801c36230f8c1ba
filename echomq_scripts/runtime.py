"""The runtime that generated wrappers dispatch through: arguments, EVALSHA, replies, errors.

A wrapper (echomq_scripts/generated/) holds one `Script` and calls it with encoded keys and
arguments. `Script` sends EVALSHA, never the body on every call: on NOSCRIPT it sends the call
once more as EVAL with the body, which loads and runs the script in one command, so a SCRIPT
FLUSH (or a failover to a replica) never reaches the caller. On a pipeline (and in MULTI/EXEC)
the first call of a script in the pipeline's current command stack goes as EVAL with the body
and later ones as EVALSHA, so a MULTI/EXEC carries every body it needs; `execute(pipe)` reports
the calls of a plain pipeline that a flush between its commands kept from running.
A negative reply from the protocol's closed table becomes the exception class registered for it;
a Lua error becomes `LuaError`, naming the source file and line from the script's line map.

It imports redis-py and the standard library only: nothing of the build side.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar, get_args

import redis
import redis.asyncio
import redis.asyncio.client
import redis.asyncio.cluster
import redis.client
import redis.cluster
from redis.crc import key_slot

from .keys import KeyNameError, check_job_id, check_key_part, check_queue
from .linemap import LineMap, error_line
from .shapes import split_shape

T = TypeVar("T")

SyncClient = redis.Redis | redis.cluster.RedisCluster
AsyncClient = redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster
PipelineClient = (
    redis.client.Pipeline
    | redis.asyncio.client.Pipeline
    | redis.cluster.ClusterPipeline
    | redis.asyncio.cluster.ClusterPipeline
)
SyncPipeline = redis.client.Pipeline | redis.cluster.ClusterPipeline
AsyncPipeline = redis.asyncio.client.Pipeline | redis.asyncio.cluster.ClusterPipeline
_SYNC_CLIENTS = (redis.Redis, redis.cluster.RedisCluster)
_ASYNC_CLIENTS = (redis.asyncio.Redis, redis.asyncio.cluster.RedisCluster)
_CLUSTER_PIPELINES = (redis.cluster.ClusterPipeline, redis.asyncio.cluster.ClusterPipeline)
_PLAIN_PIPELINES = (redis.client.Pipeline, redis.asyncio.client.Pipeline)
_PIPELINES = (*_PLAIN_PIPELINES, *_CLUSTER_PIPELINES)
_SYNC_PIPELINES = get_args(SyncPipeline)
_ASYNC_PIPELINES = get_args(AsyncPipeline)
# Client classes (subclasses included) already found acceptable: a call checks a set, not the
# class hierarchy.
_CHECKED_SYNC: set[type] = set()
_CHECKED_ASYNC: set[type] = set()
_CHECKED_PLAIN_PIPELINES: set[type] = set()


class ScriptError(Exception):
    """Base of every error a wrapper raises."""


class ArgumentError(ScriptError, ValueError):
    """A wrapper was called with a bad argument; nothing was sent to Redis."""


class BodyMismatchError(ScriptError):
    """A packaged script body does not hash to the sha1 its build recorded."""


class ScriptFailed(ScriptError):
    """A script returned a failure code of the protocol's closed table -1..-11.

    A generated package's module `errors` defines one subclass per code; catch this class for
    all of them.
    """

    code: ClassVar[int] = 0

    def __init__(self, script: str, job_id: str | None = None) -> None:
        self.script = script
        self.job_id = job_id
        where = f" for job {job_id!r}" if job_id is not None else ""
        super().__init__(f"{script} returned {self.code} ({type(self).__name__}){where}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its fields, so it crosses process boundaries (pickle) intact.
        return (type(self), (self.script, self.job_id))


class LuaError(ScriptError):
    """Redis raised an error while running a script; `source` and `line` say where."""

    def __init__(self, script: str, source: str | None, line: int | None, message: str) -> None:
        self.script = script
        self.source = source
        self.line = line
        self.redis_message = message
        place = f" at {source}:{line}" if source is not None else ""
        super().__init__(f"{script}{place}: {message}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.script, self.source, self.line, self.redis_message))


class ReplyShapeError(ScriptError):
    """A script's reply does not have the shape its header declares."""


class NotLoadedError(ScriptError):
    """A pipelined call did not run: the server that got it lacked its script (NOSCRIPT)."""


class PipelineIncompleteError(ScriptError):
    """Some wrapper calls of a pipeline did not run; every other command of it did.

    A plain (non-transaction) pipeline carries each script's body once, in its first call of
    the script, and sends the later calls as EVALSHA. A SCRIPT FLUSH, or a failover to a
    replica, between that call and a later one on the server leaves the later ones answered
    NOSCRIPT: they did not run. `execute(pipe)` raises this error then, with `not_run`, the
    indexes into `replies` of the calls that did not run, `ran`, the indexes of every other
    command (each ran, and its reply, an error reply too, is its outcome), and `replies`, the
    list `pipe.execute(raise_on_error=False)` returned. A MULTI/EXEC never raises it.
    """

    def __init__(
        self, replies: Sequence[object], not_run: Sequence[int], scripts: Sequence[str]
    ) -> None:
        self.replies = list(replies)
        self.not_run = tuple(not_run)
        self.scripts = tuple(scripts)  # the script of each call in not_run, in that order
        skipped = set(self.not_run)
        self.ran = tuple(i for i in range(len(self.replies)) if i not in skipped)
        by_script: dict[str, list[int]] = {}
        for index, script in zip(self.not_run, self.scripts, strict=True):
            by_script.setdefault(script, []).append(index)
        calls = "; ".join(
            f"{script} at {', '.join(map(str, indexes))}" for script, indexes in by_script.items()
        )
        super().__init__(
            f"{len(self.not_run)} of the pipeline's {len(self.replies)} commands did not run"
            f" ({calls}): the server lost the script after the call that carried its body"
            f" (SCRIPT FLUSH or failover), and answered NOSCRIPT; the other {len(self.ran)}"
            " ran. Queue the calls that did not run again."
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.replies, self.not_run, self.scripts))


# -- arguments ----------------------------------------------------------------------------


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
    """Text; `form` (a header's `string(<form>)`) narrows it: "non-empty" or "json-object"."""
    if isinstance(value, str):
        try:
            encoded = value.encode("utf-8")
        except UnicodeEncodeError:
            expected = "a str that UTF-8 can encode (no lone surrogates)"
            raise _refuse(script, name, expected, value) from None
        if form and not _STRING_FORMS[form][0](value):
            raise _refuse(script, name, _STRING_FORMS[form][1], value)
        return encoded
    raise _refuse(script, name, "a str", value)


def _is_json_object(text: str) -> bool:
    """What the add scripts accept as options: JSON text that decodes to an object."""
    if text == "{}":
        return True  # the common case, without a parse
    try:
        value = json.loads(text)
        if "\\u" in text:
            # An escaped UTF-16 surrogate that is not half of a pair: Python's json reads it
            # (as a lone surrogate, which UTF-8 cannot encode), the scripts' cjson refuses it.
            json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (ValueError, RecursionError, UnicodeEncodeError):
        return False
    return isinstance(value, dict)


_STRING_FORMS: Mapping[str, tuple[Callable[[str], bool], str]] = {
    "non-empty": (bool, "a non-empty str"),
    "json-object": (_is_json_object, "a str holding a JSON object"),
}
# The integers a Lua number holds exactly: the scripts refuse any other (includes/numbers.lua).
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


def json_arg(script: str, name: str, value: object) -> bytes:
    """Any JSON value; None is null."""
    try:
        return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, UnicodeEncodeError) as exc:
        raise ArgumentError(f"{script}: argument '{name}' is not JSON: {exc}") from None


def bytes_arg(script: str, name: str, value: object) -> bytes:
    if isinstance(value, bytes):
        return value
    raise _refuse(script, name, "bytes", value)


msgpack_arg = bytes_arg  # the caller packs: the runtime depends on no msgpack library

ARG_ENCODERS: Mapping[str, Callable[[str, str, object], bytes]] = {
    "string": string_arg,
    "int": int_arg,
    "number": number_arg,
    "bool": bool_arg,
    "json": json_arg,
    "msgpack": msgpack_arg,
    "bytes": bytes_arg,
    "id": id_arg,
}


def encode_arg(script: str, name: str, kind: str, value: object) -> bytes:
    """One argument as Redis receives it, after checking it against the header's type."""
    return ARG_ENCODERS[kind](script, name, value)


@functools.cache
def _template_parts(template: str) -> tuple[tuple[str, str], ...]:
    """A template split once into literal text, `{q}` and `<arg>` parts: filling it is then a
    join, and a queue name holding "<x>" is never read as a placeholder."""
    parts: list[tuple[str, str]] = []
    position = 0
    for match in re.finditer(r"\{q\}|<([^>]*)>", template):
        parts.append(("text", template[position : match.start()]))
        parts.append(("q", "") if match[0] == "{q}" else ("arg", match[1]))
        position = match.end()
    parts.append(("text", template[position:]))
    return tuple(parts)


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


def check_one_slot(script: str, keys: Sequence[str | bytes]) -> None:
    """All keys of one call must hash to one Cluster slot, as the queue's hash tag makes them."""
    # Keys with one hash tag share a slot: comparing tags spares a CRC16 per key per call.
    tags = {_hash_tag(_as_bytes(k)) for k in keys}
    if len(tags) <= 1:
        return
    slots = {key_slot(tag) for tag in tags}
    if len(slots) > 1:
        raise ArgumentError(
            f"{script}: the keys hash to {len(slots)} different Cluster slots; every key of one"
            " call must carry the same hash tag"
        )


# -- replies ------------------------------------------------------------------------------


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def decode(shape: str, reply: object) -> object:
    """The reply as the Python value its header's return shape describes (as it came, for a
    script whose header is missing and so declares no shape)."""
    return _decoder(shape)(reply) if shape else reply


@functools.cache
def _decoder(shape: str) -> Callable[[object], object]:
    alternatives = split_shape(shape, "|")
    if len(alternatives) > 1:
        decoders = [(_decoder(a), a) for a in alternatives]

        def union(reply: object) -> object:
            if reply is None and any(a == "nil" for _, a in decoders):
                return None
            for decoder, name in decoders:
                if name == "nil":
                    continue
                try:
                    return decoder(reply)
                except (TypeError, ValueError):
                    continue
            raise TypeError(f"reply {reply!r:.60} does not fit {shape}")

        return union
    shape = shape.strip()
    if shape == "int":
        return _as_int
    if shape in ("string", "status"):
        return _as_str
    if shape == "nil":
        return _as_nil
    if shape == "hash":
        return _as_hash
    if shape.startswith("list[") and shape.endswith("]"):
        item = _decoder(shape[5:-1])
        return lambda reply: [item(x) for x in _as_list(reply)]
    if shape.startswith("tuple[") and shape.endswith("]"):
        items = [_decoder(part) for part in split_shape(shape[6:-1], ",")]

        count = len(items)

        def as_tuple(reply: object) -> object:
            if type(reply) is not list:
                reply = _as_list(reply)  # raises unless a list subclass
            if len(reply) != count:
                raise ValueError(f"expected {count} values, got {len(reply)}")
            return tuple([item(value) for item, value in zip(items, reply, strict=True)])

        return as_tuple
    raise ValueError(f"unknown return shape {shape!r}")


def _as_int(reply: object) -> int:
    if type(reply) is int:  # what redis-py gives: the common case first
        return reply
    if isinstance(reply, bool) or not isinstance(reply, int):
        raise TypeError(f"expected an integer reply, got {reply!r:.60}")
    return reply


def _as_str(reply: object) -> str:
    if isinstance(reply, bytes):
        return reply.decode("utf-8", "surrogateescape")
    if isinstance(reply, str):
        return reply
    raise TypeError(f"expected a string reply, got {reply!r:.60}")


def _as_nil(reply: object) -> None:
    if reply is not None:
        raise TypeError(f"expected nil, got {reply!r:.60}")


def _as_list(reply: object) -> list[object]:
    if not isinstance(reply, list):
        raise TypeError(f"expected an array reply, got {reply!r:.60}")
    return reply


def _as_hash(reply: object) -> dict[str, str]:
    values = _as_list(reply)
    if len(values) % 2:
        raise ValueError("a hash reply needs an even number of values")
    it = iter(values)
    return {_text(k): _text(v) for k, v in zip(it, it, strict=True)}


# -- scripts ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ScriptSpec:
    """What a wrapper knows about its script, all from the build that generated it."""

    name: str  # "extendLock"
    script_id: str  # "extendLock-2"
    num_keys: int
    sha1: str
    returns: str  # the header's return shape
    codes: tuple[int, ...]  # the failure codes the header lists
    package: str  # the package whose lua/ folder holds <script_id>.lua and .map.json
    templates: tuple[str, ...] = ()  # each key's template, when the header gives them
    # The template arguments `keys_for` checks as key parts (plain strings): the wrapper's own
    # encoders check the others (`id`, `enum`) first. None, in packages generated before argument
    # types: check them all.
    text_args: tuple[str, ...] | None = None


# A queue's keys for one script: every key with the queue filled in, and for each key that
# names an id, its index and pieces (literal text, or the name of the id to put there).
_QueueKeys = tuple[tuple[str, ...], tuple[tuple[int, tuple[tuple[bool, str], ...]], ...]]
_QUEUES_KEPT = 1024
_NO_IDS: Mapping[str, object] = MappingProxyType({})


def _as_is(reply: object) -> object:
    return reply


class Script:
    """One packaged script: its body (checked against its sha1 on first use) and its calls."""

    def __init__(self, spec: ScriptSpec, failures: Mapping[int, type[ScriptFailed]]) -> None:
        self.spec = spec
        # Each generated package has its own classes: two of them can live in one process.
        self.failures = failures
        self._body: bytes | None = None
        self._line_map: LineMap | None = None
        self._by_queue: dict[str, _QueueKeys] = {}
        self._decode = _decoder(spec.returns) if spec.returns else _as_is

    @property
    def body(self) -> bytes:
        if self._body is None:
            folder = resources.files(self.spec.package) / "lua"
            body = (folder / f"{self.spec.script_id}.lua").read_bytes()
            actual = hashlib.sha1(body).hexdigest()
            if actual != self.spec.sha1:
                raise BodyMismatchError(
                    f"{self.spec.script_id}: the packaged body hashes to {actual}, but the build"
                    f" recorded {self.spec.sha1}; rebuild with 'echomq-scripts build'"
                )
            self._body = body
        return self._body

    @property
    def line_map(self) -> LineMap:
        if self._line_map is None:
            folder = resources.files(self.spec.package) / "lua"
            data = json.loads((folder / f"{self.spec.script_id}.map.json").read_bytes())
            self._line_map = LineMap.from_json(data)
        return self._line_map

    def keys_for(self, queue: str, ids: Mapping[str, object] = _NO_IDS) -> list[str]:
        """The script's keys for `queue`, from its templates and the ids they name."""
        # Runs on every call: the queue's part of every key is filled once per queue and kept,
        # so a call only copies the list and fills the keys that name an id.
        if type(queue) is not str:
            # Refused by name before the lookup, which a list or another unhashable would fail.
            check_queue_name(self.spec.script_id, queue)
        filled = self._by_queue.get(queue)
        if filled is None:
            filled = self._fill_queue(queue)
        fixed, slots = filled
        keys = list(fixed)
        if slots:
            script_id, text_args = self.spec.script_id, self.spec.text_args
            for name in ids if text_args is None else text_args:
                check_key_arg(script_id, name, ids[name])
            for index, pieces in slots:
                keys[index] = "".join([str(ids[t]) if is_id else t for is_id, t in pieces])
        return keys

    def build_keys(self, queue: str, values: Mapping[str, object]) -> list[str]:
        """`keys_for` under the name that packages generated before it call."""
        return self.keys_for(queue, values)

    def _fill_queue(self, queue: str) -> _QueueKeys:
        check_queue_name(self.spec.script_id, queue)
        tag = "{" + queue + "}"
        fixed: list[str] = []
        slots: list[tuple[int, tuple[tuple[bool, str], ...]]] = []
        for index, template in enumerate(self.spec.templates):
            pieces: list[tuple[bool, str]] = []
            for kind, text in _template_parts(template):
                piece = tag if kind == "q" else text
                if kind != "arg" and pieces and not pieces[-1][0]:
                    pieces[-1] = (False, pieces[-1][1] + piece)  # merge adjacent literals
                else:
                    pieces.append((kind == "arg", piece))
            fixed.append("".join(t for _, t in pieces))
            if any(is_id for is_id, _ in pieces):
                slots.append((index, tuple(pieces)))
        if len(self._by_queue) >= _QUEUES_KEPT:
            self._by_queue.clear()  # a process that names queues without end keeps no more
        filled = (tuple(fixed), tuple(slots))
        self._by_queue[queue] = filled
        return filled

    @property
    def sha(self) -> str:
        """The script's sha1, as the build recorded it."""
        return self.spec.sha1

    def run(
        self, client: SyncClient, keys: Sequence[str | bytes], args: Sequence[str | bytes]
    ) -> Any:
        """EVALSHA on `client`; on NOSCRIPT, the call once more as EVAL. The raw reply."""
        if type(client) not in _CHECKED_SYNC:
            if isinstance(client, _PIPELINES) or not isinstance(client, _SYNC_CLIENTS):
                raise ArgumentError(
                    f"{self.spec.script_id}: takes a redis.Redis or RedisCluster, got"
                    f" {type(client).__name__} (pipelines: the _pipeline wrapper; asyncio: _async)"
                )
            _CHECKED_SYNC.add(type(client))
        if self._body is None:
            self.body  # noqa: B018 - the first use checks the body before anything is sent
        try:
            try:
                return client.evalsha(self.spec.sha1, len(keys), *keys, *args)
            except redis.exceptions.NoScriptError:
                # EVAL loads and runs the body in one command: no flush can come in between.
                return client.eval(self.body, len(keys), *keys, *args)  # type: ignore[arg-type]
        except redis.exceptions.ResponseError as exc:
            raise self.lua_error(exc) from exc

    async def arun(
        self, client: AsyncClient, keys: Sequence[str | bytes], args: Sequence[str | bytes]
    ) -> Any:
        """`run` for the asyncio clients."""
        if type(client) not in _CHECKED_ASYNC:
            if isinstance(client, _PIPELINES) or not isinstance(client, _ASYNC_CLIENTS):
                raise ArgumentError(
                    f"{self.spec.script_id}: the _async wrapper takes a redis.asyncio client,"
                    f" got {type(client).__name__}"
                )
            _CHECKED_ASYNC.add(type(client))
        if self._body is None:
            self.body  # noqa: B018 - the first use checks the body before anything is sent
        try:
            try:
                return await client.evalsha(self.spec.sha1, len(keys), *keys, *args)
            except redis.exceptions.NoScriptError:
                return await client.eval(self.body, len(keys), *keys, *args)  # type: ignore[arg-type]
        except redis.exceptions.ResponseError as exc:
            raise self.lua_error(exc) from exc

    def queue(
        self, pipe: PipelineClient, keys: Sequence[str | bytes], args: Sequence[str | bytes]
    ) -> int:
        """Queue the call on a pipeline; the index of its reply in `execute()`'s list.

        The first call of this script in the pipeline's current command stack goes as EVAL with
        the body, the later ones as EVALSHA (on a cluster pipeline: the first for each slot, so
        the EVAL reaches the node that runs the EVALSHAs). Nothing is sent while queueing, and a
        MULTI/EXEC carries every body it runs. redis-py replaces the stack with a new list when
        the pipeline resets (after every execute), so the next stack carries the bodies again.
        """
        if type(pipe) in _CHECKED_PLAIN_PIPELINES:
            # A plain pipeline of a kind already checked: nothing more to find out about it.
            if pipe.watching and not pipe.explicit_transaction:  # type: ignore[union-attr]
                raise ArgumentError(
                    f"{self.spec.script_id}: call pipe.multi() before queueing after WATCH"
                )
            return self._queue_call(
                pipe,
                pipe.command_stack,  # type: ignore[union-attr]
                self.spec.sha1,
                keys,
                args,
            )
        if not isinstance(pipe, _PIPELINES):
            raise ArgumentError(
                f"{self.spec.script_id}: the _pipeline wrapper takes a pipeline, got"
                f" {type(pipe).__name__}"
            )
        if isinstance(pipe, _PLAIN_PIPELINES):
            _CHECKED_PLAIN_PIPELINES.add(type(pipe))
            return self.queue(pipe, keys, args)
        # redis-py 6 and later keep a cluster pipeline's state in its execution strategy.
        state = getattr(pipe, "_execution_strategy", pipe)
        if getattr(state, "_watching", False) and not getattr(
            state, "_explicit_transaction", False
        ):
            # After WATCH and before MULTI, redis-py runs commands at once instead of queueing.
            raise ArgumentError(
                f"{self.spec.script_id}: call pipe.multi() before queueing after WATCH"
            )
        # A keyless call may go to any primary: it always carries the body.
        mark = (self.spec.sha1, key_slot(_as_bytes(keys[0]))) if keys else None
        return self._queue_call(pipe, _cluster_stack(pipe), mark, keys, args)

    def _queue_call(
        self,
        pipe: PipelineClient,
        stack: list[Any] | None,
        mark: object,
        keys: Sequence[str | bytes],
        args: Sequence[str | bytes],
    ) -> int:
        """Queue EVAL with the body when `mark` (the sha1, or the sha1 and the slot) is new to
        the pipeline's current `stack`, else EVALSHA; the call's index in the stack."""
        body = self.body  # the first use checks the body before anything is sent
        # redis-py blocks the eval() and evalsha() methods on cluster pipelines, not the
        # commands: it routes EVAL and EVALSHA by their keys like any other.
        queued = _queued_on(pipe, stack) if mark is not None else None
        if queued is None:  # a stack this redis-py keeps where we cannot see it: always carry
            pipe.execute_command("EVAL", body, len(keys), *keys, *args)
            # Every redis-py pipeline's len() is the number of commands queued so far.
            return len(pipe) - 1
        index = len(queued.stack)
        if mark in queued.carried:
            pipe.execute_command("EVALSHA", self.spec.sha1, len(keys), *keys, *args)
            queued.by_sha.append((index, self))
        else:
            pipe.execute_command("EVAL", body, len(keys), *keys, *args)
            queued.carried.add(mark)  # once queued: a refused command carried nothing
        return index

    def lua_error(self, exc: redis.exceptions.ResponseError) -> Exception:
        """A script's error as `LuaError`, placed by the line map; another error unchanged."""
        message = str(exc)
        if isinstance(exc, redis.exceptions.NoScriptError):
            return NotLoadedError(
                f"{self.spec.script_id} did not run: the server lacked the script (SCRIPT FLUSH"
                f" or failover after the pipeline's call that carried it): {message}"
            )
        line = error_line(message)
        if line is None:
            return exc  # not the script's own error (NOPERM, OOM, BUSY, ...): Redis's as it is
        origin = self.line_map.origin(line)
        source, source_line = origin if origin is not None else (None, None)
        return LuaError(self.spec.script_id, source, source_line, message)

    def result(self, reply: object, job_id: str | None = None) -> object:
        """The decoded reply; a failure code the header lists, or an error reply, raises."""
        if isinstance(reply, redis.exceptions.ResponseError):
            raise self.lua_error(reply)
        if isinstance(reply, int) and reply in self.spec.codes:
            failure = self.failures.get(reply)
            if failure is not None:
                raise failure(self.spec.script_id, job_id)
        try:
            return self._decode(reply)
        except (TypeError, ValueError) as exc:
            raise ReplyShapeError(
                f"{self.spec.script_id}: the reply does not fit '{self.spec.returns}': {exc}"
            ) from None


def _as_bytes(key: str | bytes) -> bytes:
    return key.encode("utf-8") if isinstance(key, str) else key


def _hash_tag(key: bytes) -> bytes:
    """The part of a key Redis Cluster hashes: the first non-empty {...}, else the whole key."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            return key[start + 1 : end]
    return key


class Pending(Generic[T]):
    """A wrapper call queued on a pipeline: `result(replies)` after `execute()`."""

    __slots__ = ("index", "job_id", "script")

    def __init__(self, script: Script, index: int, job_id: str | None) -> None:
        self.script = script
        self.index = index
        self.job_id = job_id

    def result(self, replies: Sequence[object]) -> T:
        """Decode this call's reply from the list `execute()` returned (raise_on_error or not)."""
        value: Any = self.script.result(replies[self.index], self.job_id)
        return value  # type: ignore[no-any-return]


class _Queued:
    """The wrapper calls queued on one command stack of a pipeline."""

    __slots__ = ("by_sha", "carried", "stack")

    def __init__(self, stack: list[Any]) -> None:
        # Held, so that no later list can be the same object while this entry is kept.
        self.stack = stack
        self.carried: set[object] = set()  # the marks whose EVAL with the body is queued
        self.by_sha: list[tuple[int, Script]] = []  # the calls queued as EVALSHA


# A pipeline's calls on its current command stack. redis-py gives a pipeline a new list when it
# resets, so an entry holding another list than the pipeline's current one is stale: it is
# replaced, never scanned, and a bulk pipeline stays O(n).
_QUEUED: weakref.WeakKeyDictionary[PipelineClient, _Queued] = weakref.WeakKeyDictionary()


def _queued_on(pipe: PipelineClient, stack: list[Any] | None) -> _Queued | None:
    """The calls queued on `stack`, the pipeline's current one (None: calls cannot be tracked)."""
    if stack is None:
        return None
    try:
        queued = _QUEUED.get(pipe)
        if queued is None or queued.stack is not stack:
            queued = _QUEUED[pipe] = _Queued(stack)
    except TypeError:  # a pipeline class that cannot be weakly referenced
        return None
    return queued


def _cluster_stack(pipe: PipelineClient) -> list[Any] | None:
    """The list a cluster pipeline queues its commands in now; None where it cannot be found."""
    strategy = getattr(pipe, "_execution_strategy", None)
    if strategy is not None:  # redis-py 6 and later, sync and asyncio
        stack = getattr(strategy, "_command_queue", None)
    else:  # redis-py 5: the sync pipeline's command_stack, the asyncio one's _command_stack
        stack = getattr(pipe, "command_stack", getattr(pipe, "_command_stack", None))
    return stack if type(stack) is list else None


def _stack_of(pipe: PipelineClient) -> list[Any] | None:
    if isinstance(pipe, _PLAIN_PIPELINES):
        return pipe.command_stack
    return _cluster_stack(pipe)


def _take_queued(pipe: PipelineClient) -> tuple[_Queued | None, list[Any] | None]:
    """Before an execute: the pipeline's stack, and the calls queued on it (no longer kept)."""
    stack = _stack_of(pipe)
    try:
        queued = _QUEUED.pop(pipe, None)
    except TypeError:
        return None, stack
    return (queued if queued is not None and queued.stack is stack else None), stack


def _checked_replies(
    queued: _Queued | None,
    stack: list[Any] | None,
    replies: list[Any],
    raise_on_error: bool,
) -> list[Any]:
    """The replies of an execute: PipelineIncompleteError for calls answered NOSCRIPT, else the
    first error reply raised as redis-py raises it (when `raise_on_error`), else the replies."""
    if queued is not None:
        count = len(replies)
        missing = [
            (index, script)
            for index, script in queued.by_sha
            if index < count and isinstance(replies[index], redis.exceptions.NoScriptError)
        ]
        if missing:
            raise PipelineIncompleteError(
                replies, [index for index, _ in missing], [s.spec.script_id for _, s in missing]
            )
    if raise_on_error:
        for index, reply in enumerate(replies):
            if isinstance(reply, redis.exceptions.ResponseError):  # as redis-py raises them
                raise _annotated(reply, index, stack)
    return replies


def _annotated(error: Exception, index: int, stack: list[Any] | None) -> Exception:
    """`error` with redis-py's note of which command of the pipeline caused it."""
    command = stack[index] if stack is not None and index < len(stack) else None
    args = getattr(command, "args", None) if not isinstance(command, tuple) else command[0]
    text = " ".join(_text(arg) for arg in args) if isinstance(args, tuple | list) else "?"
    if len(text) > 100:
        text = text[:97] + "..."
    first = error.args[0] if error.args else ""
    note = f"Command # {index + 1} ({text}) of pipeline caused error: {first}"
    error.args = (note, *error.args[1:])
    return error


def _check_pipeline(function: str, pipe: object, kinds: tuple[type, ...], other: str) -> None:
    if not isinstance(pipe, kinds):
        hint = f" ({other})" if isinstance(pipe, _PIPELINES) else ""
        names = " or ".join(f"{kind.__module__}.{kind.__name__}" for kind in kinds)
        raise ArgumentError(f"{function} takes a {names}, got {type(pipe).__name__}{hint}")


def execute(pipe: SyncPipeline, raise_on_error: bool = True) -> list[Any]:
    """Execute a pipeline (plain, MULTI/EXEC or cluster) and return its replies.

    It runs `pipe.execute(raise_on_error=False)`. When a wrapper call was answered NOSCRIPT (a
    SCRIPT FLUSH or a failover between the call that carried its script's body and this one: a
    plain pipeline only), it raises one `PipelineIncompleteError` that names the calls that did
    not run. Otherwise it returns the replies, and with `raise_on_error` raises the first error
    reply, as `pipe.execute()` does.
    """
    _check_pipeline("execute", pipe, _SYNC_PIPELINES, "asyncio pipelines: aexecute")
    queued, stack = _take_queued(pipe)
    return _checked_replies(queued, stack, pipe.execute(raise_on_error=False), raise_on_error)


async def aexecute(pipe: AsyncPipeline, raise_on_error: bool = True) -> list[Any]:
    """`execute` for the asyncio pipelines."""
    _check_pipeline("aexecute", pipe, _ASYNC_PIPELINES, "sync pipelines: execute")
    queued, stack = _take_queued(pipe)
    replies = await pipe.execute(raise_on_error=False)
    return _checked_replies(queued, stack, replies, raise_on_error)


def load_all(client: SyncClient, scripts: Iterable[Script]) -> list[str]:
    """SCRIPT LOAD every script (on every primary of a cluster); their sha1s, in order."""
    return [str(client.script_load(script.body)) for script in scripts]


async def aload_all(client: AsyncClient, scripts: Iterable[Script]) -> list[str]:
    """`load_all` for the asyncio clients."""
    return [str(await client.script_load(script.body)) for script in scripts]
