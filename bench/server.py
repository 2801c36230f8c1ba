"""A private redis-server for the script benchmarks, pinned to its own core.

The server is the tests' own (tests/redis_server.py: a free loopback port, no persistence,
stopped by pid). With two or more cores the server's threads go to the last core and the
benchmark's own process to the first, so the client's Python and the server's Lua never take
turns on one core; with one core both share it, and the results say so.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.redis_server import RedisServer, RedisUnavailable, find_binary

__all__ = ["Pinned", "RedisUnavailable", "pinned_server"]


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
