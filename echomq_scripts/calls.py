"""Work of several wrapper calls, written once for the synchronous and the asyncio clients.

Such work is a generator of `Steps`: it yields each call, a wrapper's name and its arguments but
the client, and is sent the call's reply, or thrown the `ScriptFailed` the call raised; what it
returns is the work's result. `run` drives it on a redis-py client, `run_async` on a redis.asyncio
one (each call the wrapper's `_async` form). The Queue's walks and multi-call reads, the job
schedulers' next run and the Worker's finish are such work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from . import generated as g
from .runtime import ScriptFailed
from .runtime.clients import AsyncClient, SyncClient

_T = TypeVar("_T")
Steps = Generator[tuple[str, dict[str, Any]], Any, _T]
# How a call is sent: `send(wrapper, client, **arguments)`; a Worker's sends it again after a
# connection error.
Send = Callable[..., Any]
AsyncSend = Callable[..., Awaitable[Any]]


def _direct(call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    return call(*args, **kwargs)


async def _direct_async(call: Callable[..., Awaitable[_T]], *args: Any, **kwargs: Any) -> _T:
    return await call(*args, **kwargs)


def run(client: SyncClient, steps: Steps[_T], send: Send = _direct) -> _T:
    """Drive `steps` on `client`; its result."""
    going, step = True, next(steps)  # step: the next call, then the result
    while going:
        try:
            going, step = _advance(steps, send(getattr(g, step[0]), client, **step[1]))
        except ScriptFailed as exc:
            going, step = _advance(steps, exc)
    return step  # type: ignore[return-value]


async def run_async(client: AsyncClient, steps: Steps[_T], send: AsyncSend = _direct_async) -> _T:
    """`run` on a redis.asyncio client."""
    going, step = True, next(steps)  # step: the next call, then the result
    while going:
        call = getattr(g, f"{step[0]}_async")
        try:
            going, step = _advance(steps, await send(call, client, **step[1]))
        except ScriptFailed as exc:
            going, step = _advance(steps, exc)
    return step  # type: ignore[return-value]


def _advance(steps: Steps[Any], reply: object) -> tuple[bool, Any]:
    """Send `steps` a call's reply, or throw it the call's ScriptFailed: (True, its next call),
    or (False, what it returned). A ScriptFailed it does not catch goes on to the caller."""
    try:
        if isinstance(reply, ScriptFailed):
            return True, steps.throw(reply)
        return True, steps.send(reply)
    except StopIteration as done:
        return False, done.value
