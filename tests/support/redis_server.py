"""Private redis-server processes for the tests: free loopback ports, temp dirs, no persistence.

Each server is started from the binary named by REDIS_SERVER (default `redis-server` on PATH)
and stopped by its pid. Nothing here talks to a server the tests did not start. A test that
needs persistence asks for it (`aof=True`): such a server can be killed and restarted on the same
port and directory, and comes back with every write it acknowledged.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

MIN_VERSION = (7, 0)
# A cluster node also listens on its port + 10000, the cluster bus.
CLUSTER_BUS_OFFSET = 10000


class RedisUnavailable(Exception):
    """No usable redis-server: the message says what is missing."""


def find_binary() -> str:
    """The redis-server to run, checked to exist and to be at least MIN_VERSION."""
    name = os.environ.get("REDIS_SERVER", "redis-server")
    binary = shutil.which(name)
    if binary is None:
        raise RedisUnavailable(
            f"{name} not found: install redis-server >= 7.0 (apt-get install redis-server)"
            " or set REDIS_SERVER"
        )
    output = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
    match = re.search(r"v=(\d+)\.(\d+)", output)
    if match is None or (int(match[1]), int(match[2])) < MIN_VERSION:
        raise RedisUnavailable(
            f"{binary} is too old or unrecognised ({output.strip()!r}); need 7.0+"
        )
    return binary


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port(cluster_bus: bool = False) -> int:
    """A free loopback port; with `cluster_bus`, one whose bus port is free and valid too."""
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port: int = sock.getsockname()[1]
        # Ephemeral ports reach 60999: a node above 55535 would refuse to start.
        bus = port + CLUSTER_BUS_OFFSET
        if not cluster_bus or (bus <= 65535 and _bindable(bus)):
            return port


@dataclass
class RedisServer:
    """One running redis-server; `stop()` ends it by pid and removes its directory."""

    binary: str
    port: int = 0
    directory: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="emq-redis-")))
    process: subprocess.Popen[bytes] | None = None
    # A command the server runs under (the benchmark's valgrind), and how long it may take to
    # answer then.
    launcher: tuple[str, ...] = ()
    ready_timeout: float = 10.0
    # A cluster node: its port leaves room for the cluster bus (see `free_port`).
    cluster_bus: bool = False
    # An append-only file in `directory`, fsynced before each write is acknowledged, so that a
    # server killed with SIGKILL and restarted (`kill()`, `restart()`) has every write it
    # acknowledged. Off by default: no test server persists anything unless it asks.
    aof: bool = False
    # The extra options of the last start(), which restart() uses again.
    options: tuple[str, ...] = ()

    def start(self, *extra: str) -> RedisServer:
        self.options = extra
        # Another process may take the port between free_port() and bind: try a few.
        for _ in range(5):
            self.port = free_port(self.cluster_bus)
            if self._launch():
                return self
            self.stop(remove=False)
        raise self._failed()

    def restart(self) -> RedisServer:
        """Start again on the same port and directory with the same options (after `kill()`:
        an `aof` server then loads what it had written)."""
        self.stop(remove=False)
        if not self._launch():
            self.stop(remove=False)
            raise self._failed()
        return self

    def kill(self) -> None:
        """SIGKILL the server, as a crash would end it; its directory stays for `restart()`."""
        if self.process is not None:
            if self.process.poll() is None:
                os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.process = None

    def _launch(self) -> bool:
        """Run the binary on `port`; whether it answered PING in time."""
        persistence = ("yes", "--appendfsync", "always") if self.aof else ("no",)
        self.process = subprocess.Popen(
            [
                *self.launcher,
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                *persistence,
                "--daemonize",
                "no",
                "--dir",
                str(self.directory),
                "--logfile",
                str(self.directory / "redis.log"),
                *self.options,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return self._wait_ready(self.ready_timeout)

    def _failed(self) -> RedisUnavailable:
        log = (self.directory / "redis.log").read_text(errors="replace")[-2000:]
        return RedisUnavailable(f"redis-server did not start; its log ends:\n{log}")

    def _wait_ready(self, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        # No retries: redis-py's default backoff would spend seconds on a server that has exited.
        client = self.client(retry=Retry(NoBackoff(), 0))
        try:
            while time.monotonic() < deadline:
                if self.process is None or self.process.poll() is not None:
                    return False
                try:
                    if client.ping():
                        return True
                except redis.ConnectionError:
                    time.sleep(0.02)
            return False
        finally:
            client.close()

    def client(self, **options: object) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **options)  # type: ignore[arg-type]

    def stop(self, remove: bool = True) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                os.kill(self.process.pid, signal.SIGTERM)
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.kill(self.process.pid, signal.SIGKILL)
                    self.process.wait()
            self.process = None
        if remove:
            shutil.rmtree(self.directory, ignore_errors=True)
