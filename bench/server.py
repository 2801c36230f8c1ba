"""A private redis-server for the script benchmarks, pinned to its own core.

The server is the tests' own (tests/support/redis_server.py: a free loopback port, no persistence,
stopped by pid). With two or more cores the server's threads go to the last core and the
benchmark's own process to the first, so the client's Python and the server's Lua never take
turns on one core; with one core both share it, and the results say so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from tests.support.redis_server import RedisServer, RedisUnavailable, find_binary

__all__ = [
    "CallgrindServer",
    "Pinned",
    "RedisUnavailable",
    "callgrind_available",
    "callgrind_server",
    "pinned_server",
]


@dataclass(frozen=True)
class Pinned:
    """The running server and where each side ran."""

    server: RedisServer
    client_cpus: list[int]
    server_cpus: list[int]
    version: str

    @property
    def shared(self) -> bool:
        return bool(set(self.client_cpus) & set(self.server_cpus))


def _pin_process(pid: int, cpus: set[int]) -> None:
    """Every thread of `pid`: redis-server starts its background threads before we get here."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with suppress(ProcessLookupError, PermissionError):  # a thread that just ended
            os.sched_setaffinity(int(tid), cpus)


@contextmanager
def pinned_server() -> Iterator[Pinned]:
    available = sorted(os.sched_getaffinity(0))
    client_cpus = available[:1] if len(available) > 1 else available
    server_cpus = available[-1:] if len(available) > 1 else available
    server = RedisServer(find_binary()).start()
    try:
        assert server.process is not None
        _pin_process(server.process.pid, set(server_cpus))
        os.sched_setaffinity(0, set(client_cpus))
        client = server.client()
        version = str(client.info("server")["redis_version"])
        client.close()
        yield Pinned(server, client_cpus, server_cpus, version)
    finally:
        os.sched_setaffinity(0, set(available))
        server.stop()


class CallgrindServer:
    """A redis-server under valgrind's callgrind: counts the instructions the server runs.

    Instruction counts hardly move with the machine's load, unlike times on a shared VM, so they
    show what a script costs the server run after run. `zero()` before a phase and `read()` after
    it give the instructions in between (callgrind_control's zero and dump commands). The server
    runs `hz 1`, so its once-a-tick housekeeping adds little to a phase.
    """

    def __init__(self, binary: str) -> None:
        directory = Path(tempfile.mkdtemp(prefix="emq-callgrind-"))
        self.server = RedisServer(
            binary,
            directory=directory,
            launcher=("valgrind", "--tool=callgrind", f"--callgrind-out-file={directory}/cg.out"),
            ready_timeout=60.0,
        ).start("--hz", "1")
        self.port = self.server.port
        self._dumps = 0

    def _control(self, *command: str) -> None:
        assert self.server.process is not None
        subprocess.run(
            ["callgrind_control", *command, str(self.server.process.pid)],
            check=True,
            capture_output=True,
        )

    def zero(self) -> None:
        self._control("-z")

    def read(self) -> int:
        """Instructions since the last zero(), from the dump callgrind writes."""
        self._control("-d")
        self._dumps += 1
        dump = self.server.directory / f"cg.out.{self._dumps}"
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
        raise RuntimeError(f"no instruction total in {dump}")

    def stop(self) -> None:
        self.server.stop()


def callgrind_available() -> bool:
    return shutil.which("valgrind") is not None and shutil.which("callgrind_control") is not None


@contextmanager
def callgrind_server() -> Iterator[CallgrindServer]:
    server = CallgrindServer(find_binary())
    try:
        yield server
    finally:
        server.stop()
