"""The exceptions a wrapper raises: every one a `ScriptError`.

A failure code of the protocol's closed table becomes a subclass of `ScriptFailed` (one per
code, defined in each generated package's `errors` module); a refusal or a fault raised inside a
script becomes `LuaError`, naming the source file and line; a bad argument is `ArgumentError`
before anything is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar


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
