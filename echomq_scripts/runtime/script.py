"""`Script`: one packaged script and its calls, which the generated wrappers dispatch through.

A wrapper (echomq_scripts/generated/) holds one `Script` and calls it with encoded keys and
arguments. `Script` sends EVALSHA, never the body on every call: on NOSCRIPT it sends the call
once more as EVAL with the body, which loads and runs the script in one command, so a SCRIPT
FLUSH (or a failover to a replica) never reaches the caller. On a pipeline (and in MULTI/EXEC)
the first call of a script in the pipeline's current command stack goes as EVAL with the body
and later ones as EVALSHA, so a MULTI/EXEC carries every body it needs (pipelines.py follows
them). A negative reply from the protocol's closed table becomes the exception class
registered for it; a Lua error becomes `LuaError`, naming the source file and line from the
script's line map.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any

import redis
from redis.crc import key_slot

from .arguments import check_key_arg, check_queue_name
from .clients import (
    CHECKED_ASYNC,
    CHECKED_PLAIN_PIPELINES,
    CHECKED_SYNC,
    PIPELINES,
    PLAIN_PIPELINES,
    AsyncClient,
    PipelineClient,
    SyncClient,
    check_client,
)
from .errors import (
    ArgumentError,
    BodyMismatchError,
    LuaError,
    NotLoadedError,
    ReplyShapeError,
    ScriptFailed,
)
from .grammar import parse_shape
from .linemap import LineMap, error_line
from .pipelines import cluster_stack, queued_on


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
    # encoders check the others (`id`, `enum`) first.
    text_args: tuple[str, ...] = ()
    # The classes of the records its return shape names (`Pickup(...)`): generated NamedTuples.
    records: tuple[type, ...] = ()


# A queue's keys for one script, as sent: every key with the queue filled in, and for each key
# that names an id, its index and pieces (literal bytes, or the name of the id to put there).
_QueueKeys = tuple[tuple[bytes, ...], tuple[tuple[int, tuple[tuple[bool, Any], ...]], ...]]
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
        self._codes = frozenset(spec.codes)
        records = {cls.__name__: cls for cls in spec.records}
        self._decode = parse_shape(spec.returns).decoder(records) if spec.returns else _as_is

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
        return [key.decode("utf-8") for key in self.wire_keys(queue, ids)]

    def wire_keys(self, queue: str, ids: Mapping[str, object] = _NO_IDS) -> Sequence[bytes]:
        """`keys_for`, as the UTF-8 bytes a call sends (the protocol's text, whatever encoding
        the client has): redis-py sends bytes as they are, which spares encoding every key of
        every call."""
        # Runs on every call: the queue's part of every key is filled once per queue and kept,
        # so a call fills only the keys that name an id, and a script whose keys name none
        # gets the kept tuple itself.
        if type(queue) is not str:
            # Refused by name before the lookup, which a list or another unhashable would fail.
            check_queue_name(self.spec.script_id, queue)
        filled = self._by_queue.get(queue)
        if filled is None:
            filled = self._fill_queue(queue)
        fixed, slots = filled
        if not slots:
            return fixed
        script_id = self.spec.script_id
        for name in self.spec.text_args:
            check_key_arg(script_id, name, ids[name])
        keys = list(fixed)
        for index, pieces in slots:
            # The ids are checked str by now: the wrapper's encoders, or check_key_arg above.
            keys[index] = b"".join(
                [str(ids[part]).encode("utf-8") if is_id else part for is_id, part in pieces]
            )
        return keys

    def _fill_queue(self, queue: str) -> _QueueKeys:
        check_queue_name(self.spec.script_id, queue)
        tag = "{" + queue + "}"
        fixed: list[bytes] = []
        slots: list[tuple[int, tuple[tuple[bool, Any], ...]]] = []
        for index, template in enumerate(self.spec.templates):
            pieces: list[tuple[bool, str]] = []
            for kind, text in _template_parts(template):
                piece = tag if kind == "q" else text
                if kind != "arg" and pieces and not pieces[-1][0]:
                    pieces[-1] = (False, pieces[-1][1] + piece)  # merge adjacent literals
                else:
                    pieces.append((kind == "arg", piece))
            fixed.append("".join(t for _, t in pieces).encode("utf-8"))
            if any(is_id for is_id, _ in pieces):
                # Literal text as the bytes it is sent as; an id piece keeps the id's name.
                encoded = tuple((is_id, t if is_id else t.encode("utf-8")) for is_id, t in pieces)
                slots.append((index, encoded))
        if len(self._by_queue) >= _QUEUES_KEPT:
            self._by_queue.clear()  # a process that names queues without end keeps no more
        filled = (tuple(fixed), tuple(slots))
        self._by_queue[queue] = filled
        return filled

    @property
    def sha(self) -> str:
        """The script's sha1, as the build recorded it."""
        return self.spec.sha1

    def _ready(self, client: object, asyncio: bool) -> None:
        """What `run` and `run_async` check before sending, unless they already did for this
        client's class and this body: the client, and the packaged body against its sha1."""
        check_client(self.spec.script_id, client, asyncio)
        if self._body is None:
            self.body  # noqa: B018 - the first use checks the body before anything is sent

    def run(
        self, client: SyncClient, keys: Sequence[str | bytes], args: Sequence[str | bytes]
    ) -> Any:
        """EVALSHA on `client`; on NOSCRIPT, the call once more as EVAL. The raw reply."""
        if self._body is None or type(client) not in CHECKED_SYNC:  # once per client class
            self._ready(client, asyncio=False)
        # execute_command, as client.evalsha() itself ends in, without its two calls' copying
        # of the arguments; a cluster client routes EVALSHA and EVAL by their keys either way.
        try:
            try:
                return client.execute_command(  # type: ignore[no-untyped-call]
                    "EVALSHA", self.spec.sha1, len(keys), *keys, *args
                )
            except redis.exceptions.NoScriptError:
                # EVAL loads and runs the body in one command: no flush can come in between.
                return client.execute_command(  # type: ignore[no-untyped-call]
                    "EVAL", self.body, len(keys), *keys, *args
                )
        except redis.exceptions.ResponseError as exc:
            raise self.lua_error(exc) from exc

    async def run_async(
        self, client: AsyncClient, keys: Sequence[str | bytes], args: Sequence[str | bytes]
    ) -> Any:
        """`run` for the asyncio clients."""
        if self._body is None or type(client) not in CHECKED_ASYNC:
            self._ready(client, asyncio=True)
        try:
            try:
                return await client.execute_command(
                    "EVALSHA", self.spec.sha1, len(keys), *keys, *args
                )
            except redis.exceptions.NoScriptError:
                return await client.execute_command("EVAL", self.body, len(keys), *keys, *args)
        except redis.exceptions.ResponseError as exc:
            raise self.lua_error(exc) from exc

    def add_to_pipeline(
        self, pipe: PipelineClient, keys: Sequence[str | bytes], args: Sequence[str | bytes]
    ) -> int:
        """Queue the call on a pipeline; the index of its reply in `execute()`'s list.

        The first call of this script in the pipeline's current command stack goes as EVAL with
        the body, the later ones as EVALSHA (on a cluster pipeline: the first for each slot, so
        the EVAL reaches the node that runs the EVALSHAs). Nothing is sent while queueing, and a
        MULTI/EXEC carries every body it runs. redis-py replaces the stack with a new list when
        the pipeline resets (after every execute), so the next stack carries the bodies again.
        """
        if type(pipe) in CHECKED_PLAIN_PIPELINES:
            # A plain pipeline of a kind already checked: nothing more to find out about it.
            if pipe.watching and not pipe.explicit_transaction:  # type: ignore[union-attr]
                raise ArgumentError(
                    f"{self.spec.script_id}: call pipe.multi() before queueing after WATCH"
                )
            # The pipeline's own execute_command would check WATCH again and then call this.
            return self._queue_call(
                pipe,
                pipe.pipeline_execute_command,  # type: ignore[union-attr]
                pipe.command_stack,  # type: ignore[union-attr]
                self.spec.sha1,
                keys,
                args,
            )
        if not isinstance(pipe, PIPELINES):
            raise ArgumentError(
                f"{self.spec.script_id}: the _pipeline wrapper takes a pipeline, got"
                f" {type(pipe).__name__}"
            )
        if isinstance(pipe, PLAIN_PIPELINES):
            CHECKED_PLAIN_PIPELINES.add(type(pipe))
            return self.add_to_pipeline(pipe, keys, args)
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
        mark = (self.spec.sha1, key_slot(_key_bytes(keys[0]))) if keys else None
        return self._queue_call(pipe, pipe.execute_command, cluster_stack(pipe), mark, keys, args)

    def _queue_call(
        self,
        pipe: PipelineClient,
        send: Callable[..., object],
        stack: list[Any] | None,
        mark: object,
        keys: Sequence[str | bytes],
        args: Sequence[str | bytes],
    ) -> int:
        """Queue EVAL with the body when `mark` (the sha1, or the sha1 and the slot) is new to
        the pipeline's current `stack`, else EVALSHA, by `send` (the pipeline's method that
        queues a command); the call's index in the stack."""
        body = self._body
        if body is None:
            body = self.body  # the first use checks the body before anything is sent
        # redis-py blocks the eval() and evalsha() methods on cluster pipelines, not the
        # commands: it routes EVAL and EVALSHA by their keys like any other.
        queued = queued_on(pipe, stack) if mark is not None else None
        if queued is None:  # a stack this redis-py keeps where we cannot see it: always carry
            send("EVAL", body, len(keys), *keys, *args)
            # Every redis-py pipeline's len() is the number of commands queued so far.
            return len(pipe) - 1
        index = len(queued.stack)
        if mark in queued.carried:
            send("EVALSHA", self.spec.sha1, len(keys), *keys, *args)
            queued.by_sha.append((index, self))
        else:
            send("EVAL", body, len(keys), *keys, *args)
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
        kind = type(reply)
        if kind is not bytes and kind is not list:  # the common replies need neither check
            if isinstance(reply, redis.exceptions.ResponseError):
                raise self.lua_error(reply)
            if isinstance(reply, int) and reply in self._codes:
                failure = self.failures.get(reply)
                if failure is not None:
                    raise failure(self.spec.script_id, job_id)
        try:
            return self._decode(reply)
        except (TypeError, ValueError) as exc:
            raise ReplyShapeError(
                f"{self.spec.script_id}: the reply does not fit '{self.spec.returns}': {exc}"
            ) from None


def check_one_slot(script: str, keys: Sequence[str | bytes]) -> None:
    """All keys of one call must hash to one Cluster slot, as the queue's hash tag makes them."""
    # Keys with one hash tag share a slot: comparing tags spares a CRC16 per key per call.
    tags = {_hash_tag(_key_bytes(k)) for k in keys}
    if len(tags) <= 1:
        return
    slots = {key_slot(tag) for tag in tags}
    if len(slots) > 1:
        raise ArgumentError(
            f"{script}: the keys hash to {len(slots)} different Cluster slots; every key of one"
            " call must carry the same hash tag"
        )


def _key_bytes(key: str | bytes) -> bytes:
    return key.encode("utf-8") if isinstance(key, str) else key


def _hash_tag(key: bytes) -> bytes:
    """The part of a key Redis Cluster hashes: the first non-empty {...}, else the whole key."""
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            return key[start + 1 : end]
    return key


class ScriptModules:
    """The modules of a generated package's scripts, one a script, each imported on first use
    (PEP 562): importing the package reads none of them, and the first use of a wrapper imports
    its own script's module alone. `modules` maps each module's name (in `package`) to the name
    of its `Script` object and its public names, in the order of SCRIPTS."""

    def __init__(self, package: str, modules: Mapping[str, tuple[str, tuple[str, ...]]]) -> None:
        self.package = package
        self.modules = modules
        self.where = {name: module for module, (_, names) in modules.items() for name in names}

    def attribute(self, name: str, namespace: dict[str, object]) -> object:
        """The package's `name` (SCRIPTS, or a script's name), kept in its `namespace` so
        that the next read finds it there; AttributeError for any other name."""
        if name == "SCRIPTS":
            value: object = self.scripts()
        elif name in self.where:
            value = getattr(self._import(self.where[name]), name)
        else:
            raise AttributeError(f"module {self.package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def scripts(self) -> tuple[Script, ...]:
        """Every script's `Script` object, in order: every module imported."""
        return tuple(
            getattr(self._import(module), constant)
            for module, (constant, _) in self.modules.items()
        )

    def _import(self, module: str) -> object:
        import importlib

        return importlib.import_module(f"{self.package}.{module}")


def load_all(client: SyncClient, scripts: Iterable[Script]) -> list[str]:
    """SCRIPT LOAD every script (on every primary of a cluster); their sha1s, in order."""
    return [str(client.script_load(script.body)) for script in scripts]


async def load_all_async(client: AsyncClient, scripts: Iterable[Script]) -> list[str]:
    """`load_all` for the asyncio clients."""
    return [str(await client.script_load(script.body)) for script in scripts]
