"""The runtime that generated wrappers dispatch through: arguments, EVALSHA, replies, errors.

A wrapper (echomq_scripts/generated/) holds one `Script` and calls it with encoded keys and
arguments. `Script` sends EVALSHA, never the body on every call: on NOSCRIPT it loads the body
once and retries. In a pipeline (and in MULTI/EXEC) it registers itself with redis-py's own
mechanism, so the pipeline loads every missing script before it runs and never fails on NOSCRIPT.
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, ClassVar, Generic, TypeVar

import redis
import redis.asyncio
import redis.asyncio.client
import redis.asyncio.cluster
import redis.client
import redis.cluster
from redis.crc import key_slot

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
_SYNC_CLIENTS = (redis.Redis, redis.cluster.RedisCluster)
_ASYNC_CLIENTS = (redis.asyncio.Redis, redis.asyncio.cluster.RedisCluster)
_CLUSTER_PIPELINES = (redis.cluster.ClusterPipeline, redis.asyncio.cluster.ClusterPipeline)
_PLAIN_PIPELINES = (redis.client.Pipeline, redis.asyncio.client.Pipeline)
_PIPELINES = (*_PLAIN_PIPELINES, *_CLUSTER_PIPELINES)
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
    """A script was not loaded on the server that ran a pipeline which could not load it."""


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


def string_arg(script: str, name: str, value: object) -> bytes:
    if isinstance(value, str):
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError:
            expected = "a str that UTF-8 can encode (no lone surrogates)"
            raise _refuse(script, name, expected, value) from None
    raise _refuse(script, name, "a str", value)


def int_arg(script: str, name: str, value: object) -> bytes:
    if isinstance(value, int) and not isinstance(value, bool):
        return b"%d" % value
    raise _refuse(script, name, "an int", value)


def number_arg(script: str, name: str, value: object) -> bytes:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _refuse(script, name, "an int or a float", value)
    if isinstance(value, int):
        return b"%d" % value
    if not math.isfinite(value):
        raise _refuse(script, name, "a finite number", value)
    return repr(float(value)).encode("ascii")


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


def check_name(script: str, what: str, value: object) -> None:
    """A queue name or id that goes into a key: a non-empty str that cannot break the tag."""
    if not isinstance(value, str) or not value:
        raise ArgumentError(f"{script}: {what} must be a non-empty str, got {value!r:.60}")
    if "{" in value or "}" in value:
        raise ArgumentError(
            f"{script}: {what} {value!r} contains '{{' or '}}', which would break the key's"
            " hash tag"
        )


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


# A queue's keys for one script: every key with the queue filled in, and for each key that
# names an id, its index and pieces (literal text, or the name of the id to put there).
_QueueKeys = tuple[tuple[str, ...], tuple[tuple[int, tuple[tuple[bool, str], ...]], ...]]
_QUEUES_KEPT = 1024
_NO_IDS: Mapping[str, object] = MappingProxyType({})


def _as_is(reply: object) -> object:
    return reply


class Script:
    """One packaged script: its body (checked against its sha1 on first use) and its calls.

    It also offers the two attributes redis-py's pipelines read from the scripts registered with
    them, `sha` and `script`, so a pipeline loads it before running.
    """

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
            check_name(self.spec.script_id, "queue", queue)
        filled = self._by_queue.get(queue)
        if filled is None:
            filled = self._fill_queue(queue)
        fixed, slots = filled
        keys = list(fixed)
        if slots:
            script_id = self.spec.script_id
            for name, value in ids.items():
                check_name(script_id, name, value)
            for index, pieces in slots:
                keys[index] = "".join([str(ids[t]) if is_id else t for is_id, t in pieces])
        return keys

    def build_keys(self, queue: str, values: Mapping[str, object]) -> list[str]:
        """`keys_for` under the name that packages generated before it call."""
        return self.keys_for(queue, values)

    def _fill_queue(self, queue: str) -> _QueueKeys:
        check_name(self.spec.script_id, "queue", queue)
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

    # redis-py's Pipeline.load_scripts() reads `sha` and `script`, and stores what SCRIPT LOAD
    # answered into `sha`: for our bodies that is the same sha1.
    @property
    def sha(self) -> str:
        return self.spec.sha1

    @sha.setter
    def sha(self, value: str) -> None:
        if value != self.spec.sha1:
            raise BodyMismatchError(f"{self.spec.script_id}: Redis hashed the body to {value}")

    @property
    def script(self) -> bytes:
        return self.body

    def run(
        self, client: SyncClient, keys: Sequence[str | bytes], args: Sequence[str | bytes]
    ) -> Any:
        """EVALSHA on `client`; on NOSCRIPT, SCRIPT LOAD and one retry. The raw reply."""
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
                client.script_load(self.body)
                return client.evalsha(self.spec.sha1, len(keys), *keys, *args)
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
                await client.script_load(self.body)
                return await client.evalsha(self.spec.sha1, len(keys), *keys, *args)
        except redis.exceptions.ResponseError as exc:
            raise self.lua_error(exc) from exc

    def queue(
        self, pipe: PipelineClient, keys: Sequence[str | bytes], args: Sequence[str | bytes]
    ) -> int:
        """Queue the call on a pipeline; the index of its reply in `execute()`'s list.

        A plain or MULTI/EXEC pipeline loads the script before it runs (redis-py's own
        mechanism). A cluster pipeline cannot, so the script is loaded now, on the primary that
        owns the keys' slot; an asyncio cluster pipeline cannot load while queueing at all: call
        `aload_all` first there.
        """
        if type(pipe) in _CHECKED_PLAIN_PIPELINES:
            # A plain pipeline of a kind already checked: nothing more to find out about it.
            if pipe.watching and not pipe.explicit_transaction:  # type: ignore[union-attr]
                raise ArgumentError(
                    f"{self.spec.script_id}: call pipe.multi() before queueing after WATCH"
                )
            if self._body is None:
                self.body  # noqa: B018 - the first use checks the body before anything is sent
            pipe.scripts.add(self)  # type: ignore[union-attr, arg-type]
            pipe.evalsha(self.spec.sha1, len(keys), *keys, *args)
            return len(pipe.command_stack) - 1  # type: ignore[union-attr]
        if not isinstance(pipe, _PIPELINES):
            raise ArgumentError(
                f"{self.spec.script_id}: the _pipeline wrapper takes a pipeline, got"
                f" {type(pipe).__name__}"
            )
        if isinstance(pipe, _PLAIN_PIPELINES):
            _CHECKED_PLAIN_PIPELINES.add(type(pipe))
            return self.queue(pipe, keys, args)
        if getattr(pipe, "watching", False) and not getattr(pipe, "explicit_transaction", False):
            # After WATCH and before MULTI, redis-py runs commands at once instead of queueing.
            raise ArgumentError(
                f"{self.spec.script_id}: call pipe.multi() before queueing after WATCH"
            )
        body = self.body
        if isinstance(pipe, redis.cluster.ClusterPipeline):
            node = pipe.nodes_manager.get_node_from_slot(
                key_slot(_as_bytes(keys[0])) if keys else 0
            )
            node.redis_connection.script_load(body)
        # redis-py blocks the evalsha() method on cluster pipelines, not the command: it
        # routes EVALSHA by its keys like any other.
        pipe.execute_command("EVALSHA", self.spec.sha1, len(keys), *keys, *args)
        # Every redis-py pipeline's len() is the number of commands queued so far.
        return len(pipe) - 1

    def lua_error(self, exc: redis.exceptions.ResponseError) -> Exception:
        """A script's error as `LuaError`, placed by the line map; another error unchanged."""
        message = str(exc)
        if isinstance(exc, redis.exceptions.NoScriptError):
            return NotLoadedError(f"{self.spec.script_id}: {message}")
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


def load_all(client: SyncClient, scripts: Iterable[Script]) -> list[str]:
    """SCRIPT LOAD every script (on every primary of a cluster); their sha1s, in order."""
    return [str(client.script_load(script.body)) for script in scripts]


async def aload_all(client: AsyncClient, scripts: Iterable[Script]) -> list[str]:
    """`load_all` for the asyncio clients."""
    return [str(await client.script_load(script.body)) for script in scripts]
