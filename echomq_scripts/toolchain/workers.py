"""Analysing many scripts at once, on the machine's other cores, with forked processes.

A cold build of a large tree spends most of its time in the analysis of each script, which is
pure Python and independent from one script to the next. Forked children share everything
already loaded, so they start in about a millisecond; `concurrent.futures` and
`multiprocessing` would cost a cold build more to import (40 to 50 ms, `logging` and
`threading` with them) than they save on a tree of a few dozen scripts.

The results are the very values a serial run gives, in the order of the items: each process
runs the same function on its share, and the children's results come back pickled.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from typing import TypeVar

_T = TypeVar("_T")
_R = TypeVar("_R")

# Below this many items a second process costs about what it saves.
MIN_ITEMS = 8


def usable_cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def shares(weights: Sequence[int], count: int) -> list[list[int]]:
    """The indexes of `weights` split into `count` shares of about equal total weight: the
    heaviest first, each to the lightest share so far (ties to the first share)."""
    split: list[list[int]] = [[] for _ in range(count)]
    totals = [0] * count
    for index in sorted(range(len(weights)), key=lambda i: (-weights[i], i)):
        lightest = totals.index(min(totals))
        split[lightest].append(index)
        totals[lightest] += weights[index]
    return split


def map_forked(
    func: Callable[[_T], _R], items: Sequence[_T], weights: Sequence[int], workers: int
) -> list[_R]:
    """`[func(item) for item in items]`, the items shared among `workers` processes (this one
    and forked children) by `weights`.

    An exception in any share is raised here, after every child has been waited for; a child
    that dies without answering is a RuntimeError. Without `os.fork`, with one worker or few
    items, or while other threads run, it runs here alone.
    """
    workers = min(workers, len(items))
    if workers < 2 or len(items) < MIN_ITEMS or not hasattr(os, "fork") or _threaded():
        return [func(item) for item in items]
    split = shares(weights, workers)
    _flush_output()
    children: list[tuple[int, int]] = []  # (pid, read end of its pipe)
    try:
        for share in split[1:]:
            read_end, write_end = os.pipe()
            try:
                pid = os.fork()
            except OSError:
                os.close(read_end)
                os.close(write_end)
                raise
            if pid == 0:  # the child: never returns into the caller's code
                os.close(read_end)
                _answer(func, [items[i] for i in share], write_end)
            os.close(write_end)
            children.append((pid, read_end))
        results: dict[int, _R] = {}
        for index in split[0]:
            results[index] = func(items[index])
    finally:
        # Every child is read and waited for, whatever happened here, before any answer is
        # unpickled (which may itself raise).
        payloads = [_collect(pid, read_end) for pid, read_end in children]
    for share, payload in zip(split[1:], payloads, strict=True):
        answer = _unpickled(payload)
        if isinstance(answer, BaseException):
            raise answer
        assert isinstance(answer, list)
        results.update(zip(share, answer, strict=True))
    return [results[index] for index in range(len(items))]


def _flush_output() -> None:
    """Flush what is buffered, which every child would otherwise write as well. A stream that is
    closed or gone is left alone: the serial path never touches it either."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                stream.flush()


def _threaded() -> bool:
    """Whether other threads run: a forked child gets none of them, but may get a lock one of
    them held, and wait for it forever (a library calling the build from a threaded program)."""
    threading = sys.modules.get("threading")
    return threading is not None and threading.active_count() > 1


def _answer(func: Callable[[_T], _R], items: list[_T], write_end: int) -> None:
    """In a child: run `func` on `items`, write the results (or the exception) and exit."""
    status = 1
    try:
        from pickle import dumps, loads  # here, not at the top: a small tree never needs pickle

        try:
            payload = dumps([func(item) for item in items])
        except BaseException as exc:  # handed to the parent, which raises it
            try:
                payload = dumps(exc)
                loads(payload)  # some pickle but cannot be rebuilt (a changed __init__)
            except Exception:  # then its text will do
                payload = dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(payload)
        status = 0
    finally:
        os._exit(status)  # whatever happened: the parent reports a child without an answer


def _collect(pid: int, read_end: int) -> bytes | None:
    """A child's pickled answer, or None when it gave none. The pipe is always closed and the
    child always waited for, so no descriptor or zombie is left whatever happens."""
    data = b""
    try:
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()  # before waiting: a full pipe would block the child
    finally:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:  # already reaped (SIGCHLD ignored): its answer is what counts
            status = 0
    return data if status == 0 and data else None


def _unpickled(payload: bytes | None) -> object:
    """A child's results, or the exception to raise: its own, or one saying why there is none
    (an exception whose class cannot be rebuilt from its pickle included)."""
    if payload is None:
        return RuntimeError("an analysis worker exited without an answer")
    from pickle import loads

    try:
        return loads(payload)
    except Exception as exc:
        return RuntimeError(f"an analysis worker's answer could not be read: {exc}")
