"""Pipelines of wrapper calls: which calls of a pipeline's current command stack carry their
script's body, `Pending` for a queued call's reply, and `execute`, which reports the calls a
SCRIPT FLUSH between a pipeline's commands kept from running (`PipelineIncompleteError`).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import redis

from .clients import PLAIN_PIPELINES, AsyncPipeline, PipelineClient, SyncPipeline, check_pipeline
from .errors import PipelineIncompleteError
from .replies import text

if TYPE_CHECKING:
    from .script import Script

T = TypeVar("T")


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


# The entry of the stack the last call was queued on. A pipeline's calls come one after another,
# so most calls find their entry here and skip the weak dictionary's lookup. The entry holds its
# stack, so no other list can be that object while it is kept; the weak reference to the
# pipeline drops the entry with the pipeline, as _QUEUED does.
_last: tuple[weakref.ref[Any], _Queued] | None = None


def _forget_last(ref: weakref.ref[Any]) -> None:
    global _last
    last = _last
    if last is not None and last[0] is ref:
        _last = None


def queued_on(pipe: PipelineClient, stack: list[Any] | None) -> _Queued | None:
    """The calls queued on `stack`, the pipeline's current one (None: calls cannot be tracked)."""
    global _last
    last = _last
    if last is not None and last[1].stack is stack:
        return last[1]
    if stack is None:
        return None
    try:
        queued = _QUEUED.get(pipe)
        if queued is None or queued.stack is not stack:
            queued = _QUEUED[pipe] = _Queued(stack)
        _last = (weakref.ref(pipe, _forget_last), queued)
    except TypeError:  # a pipeline class that cannot be weakly referenced
        return None
    return queued


def cluster_stack(pipe: PipelineClient) -> list[Any] | None:
    """The list a cluster pipeline queues its commands in now; None where it cannot be found."""
    strategy = getattr(pipe, "_execution_strategy", None)
    if strategy is not None:  # redis-py 6 and later, sync and asyncio
        stack = getattr(strategy, "_command_queue", None)
    else:  # redis-py 5: the sync pipeline's command_stack, the asyncio one's _command_stack
        stack = getattr(pipe, "command_stack", getattr(pipe, "_command_stack", None))
    return stack if type(stack) is list else None


def _stack_of(pipe: PipelineClient) -> list[Any] | None:
    if isinstance(pipe, PLAIN_PIPELINES):
        return pipe.command_stack
    return cluster_stack(pipe)


def _take_queued(pipe: PipelineClient) -> tuple[_Queued | None, list[Any] | None]:
    """Before an execute: the pipeline's stack, and the calls queued on it (no longer kept)."""
    global _last
    stack = _stack_of(pipe)
    last = _last
    if last is not None and last[1].stack is stack:
        _last = None
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
    shown = " ".join(text(arg) for arg in args) if isinstance(args, tuple | list) else "?"
    if len(shown) > 100:
        shown = shown[:97] + "..."
    first = error.args[0] if error.args else ""
    note = f"Command # {index + 1} ({shown}) of pipeline caused error: {first}"
    error.args = (note, *error.args[1:])
    return error


def execute(pipe: SyncPipeline, raise_on_error: bool = True) -> list[Any]:
    """Execute a pipeline (plain, MULTI/EXEC or cluster) and return its replies.

    It runs `pipe.execute(raise_on_error=False)`. When a wrapper call was answered NOSCRIPT (a
    SCRIPT FLUSH or a failover between the call that carried its script's body and this one: a
    plain pipeline only), it raises one `PipelineIncompleteError` that names the calls that did
    not run. Otherwise it returns the replies, and with `raise_on_error` raises the first error
    reply, as `pipe.execute()` does.
    """
    check_pipeline("execute", pipe, asyncio=False)
    queued, stack = _take_queued(pipe)
    return _checked_replies(queued, stack, pipe.execute(raise_on_error=False), raise_on_error)


async def execute_async(pipe: AsyncPipeline, raise_on_error: bool = True) -> list[Any]:
    """`execute` for the asyncio pipelines."""
    check_pipeline("execute_async", pipe, asyncio=True)
    queued, stack = _take_queued(pipe)
    replies = await pipe.execute(raise_on_error=False)
    return _checked_replies(queued, stack, replies, raise_on_error)
