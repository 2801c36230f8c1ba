"""Whole-process timing: start a command, wait for it, and keep its wall and CPU time.

How to read the numbers: `wall` is from just before the process is spawned to just after it is
reaped, so it holds everything a user waits for (exec, interpreter start, imports, the work,
exit). `cpu` is the child's own user + system time (from wait4), which a busy neighbour on the
machine disturbs less than wall time; when wall is well above cpu, the process waited (disk,
page cache, or another process on the same core). A row is the median of its runs; min and max
show the spread.

Rows are timed in rounds: each round runs every row once, in order, so a slow spell on a shared
machine touches every row alike instead of one row; ratios to the floor row are therefore steadier
than the absolute times.

The children run with bytecode caching on (PYTHONDONTWRITEBYTECODE removed) and their `.pyc`
files kept under a temporary PYTHONPYCACHEPREFIX, so the numbers match an ordinary install and the
work tree gets no `__pycache__` directories. An untimed warm-up round comes first.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field


class CommandFailed(RuntimeError):
    """A timed command exited non-zero, or printed something other than what was expected."""


@dataclass(frozen=True)
class Sample:
    """One run of one command."""

    wall_ms: float
    cpu_ms: float  # user + system time of the child
    max_rss_kb: int
    output: str


@dataclass
class Measurement:
    """The runs of one row of the table."""

    name: str
    group: str
    command: list[str]
    samples: list[Sample] = field(default_factory=list)
    target_ms: float | None = None
    note: str = ""

    @property
    def wall_ms(self) -> float:
        return statistics.median(s.wall_ms for s in self.samples)

    @property
    def cpu_ms(self) -> float:
        return statistics.median(s.cpu_ms for s in self.samples)

    @property
    def verdict(self) -> str:
        if self.target_ms is None:
            return ""
        return "PASS" if self.wall_ms < self.target_ms else "MISS"


def child_environment(
    pycache_prefix: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of every timed command: the caller's, with bytecode caching on."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("ECHOMQ_SCRIPTS_CACHE_DIR", None)  # every build names its --cache-dir
    env["PYTHONPYCACHEPREFIX"] = pycache_prefix
    env.update(extra or {})
    return env


def run_once(command: Sequence[str], env: Mapping[str, str]) -> Sample:
    """Spawn `command` (an absolute path first), wait for it, and time it; raise on failure."""
    with tempfile.TemporaryFile() as log:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, log.fileno(), 1),
            (os.POSIX_SPAWN_DUP2, log.fileno(), 2),
        ]
        start = time.perf_counter()
        pid = os.posix_spawn(command[0], list(command), env, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
        log.seek(0)
        output = log.read().decode("utf-8", "replace")
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise CommandFailed(f"{' '.join(command)} exited {code}:\n{output}")
    cpu = usage.ru_utime + usage.ru_stime
    return Sample(wall * 1000, cpu * 1000, usage.ru_maxrss, output)


@dataclass(frozen=True)
class Plan:
    """How to time one row: its environment, what to do before each run, what it must print.

    `expect` holds pieces of text every timed run must print (e.g. " 0 analysed"), so a row can
    never time the wrong thing, such as a rebuild that was not a no-op.
    """

    row: Measurement
    env: Mapping[str, str]
    prepare: Callable[[], None] | None = None
    expect: Sequence[str] = ()


def measure_rounds(
    plans: Sequence[Plan], runs: int, progress: Callable[[str], None] = lambda _: None
) -> None:
    """Time every plan `runs` times, one run of each plan per round, after a warm-up round.

    The warm-up round is not checked or kept: it fills the page cache and the bytecode cache,
    and it makes the first build of each no-op row.
    """
    for round_ in range(runs + 1):
        progress(f"round {round_} of {runs}" + (" (warm-up)" if round_ == 0 else ""))
        for plan in plans:
            if plan.prepare is not None:
                plan.prepare()
            sample = run_once(plan.row.command, plan.env)
            if round_ == 0:
                continue
            missing = [text for text in plan.expect if text not in sample.output]
            if missing:
                raise CommandFailed(
                    f"{plan.row.name}: expected {missing} in the output, got:\n{sample.output}"
                )
            plan.row.samples.append(sample)
