"""A private Redis Cluster for the tests: primaries (and replicas) on free loopback ports.

Built from `RedisServer` processes started with cluster mode on, joined with
`redis-cli --cluster create`, and stopped by pid like any other test server.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
import redis.cluster

from tests.support.redis_server import RedisServer, RedisUnavailable


@dataclass
class RedisCluster:
    binary: str
    primaries: int = 3
    replicas: int = 0
    # Seconds that `start` waits, once the cluster is created, for cluster_state:ok on every
    # node and every replica synced, before it raises: generous, for a slow or loaded machine.
    # A cluster still not ready then fails the tests that need it (it is never a skip).
    ready_timeout: float = 120.0
    nodes: list[RedisServer] = field(default_factory=list)

    def start(self) -> RedisCluster:
        cli = shutil.which("redis-cli", path=str(Path(self.binary).parent)) or shutil.which(
            "redis-cli"
        )
        if cli is None:
            raise RedisUnavailable("redis-cli not found next to redis-server or on PATH")
        count = self.primaries * (1 + self.replicas)
        try:
            for _ in range(count):
                node = RedisServer(self.binary, cluster_bus=True).start(
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                    "--cluster-node-timeout",
                    "2000",
                    # Replicas sync at once instead of waiting 5 s for others to join the sync.
                    "--repl-diskless-sync-delay",
                    "0",
                )
                self.nodes.append(node)
            addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
            done = subprocess.run(
                [
                    cli,
                    "--cluster",
                    "create",
                    *addresses,
                    "--cluster-replicas",
                    str(self.replicas),
                    "--cluster-yes",
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            if done.returncode != 0:
                raise RedisUnavailable(f"redis-cli --cluster create failed: {done.stdout[-500:]}")
            self._wait_until_ok()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_until_ok(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            states = []
            synced = 0
            for node in self.nodes:
                with node.client(decode_responses=True) as client:
                    info = client.execute_command("CLUSTER INFO")
                    # redis-py parses the reply into a dict; older versions leave it text.
                    state = info.get("cluster_state") if isinstance(info, dict) else info
                    states.append("ok" in str(state))
                    # A replica that has not synced yet would take over with no data: wait
                    # until every one of them has its link to its primary up.
                    replication = client.info("replication")
                    if replication.get("role") == "slave":
                        synced += replication.get("master_link_status") == "up"
            if all(states) and synced == self.primaries * self.replicas:
                return
            time.sleep(0.1)
        raise RedisUnavailable(
            f"the cluster did not reach cluster_state:ok within {self.ready_timeout:g} s"
        )

    def client(self) -> redis.cluster.RedisCluster:
        return redis.cluster.RedisCluster(host="127.0.0.1", port=self.nodes[0].port)

    def primary_clients(self) -> list[redis.Redis]:
        """A plain client of each primary node."""
        found = []
        for node in self.nodes:
            client = node.client()
            role = client.execute_command("ROLE")[0]  # type: ignore[no-untyped-call]
            if role in (b"master", "master"):
                found.append(client)
            else:
                client.close()
        return found

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
        self.nodes.clear()


def queues_on_every_primary(
    rc: redis.cluster.RedisCluster, per_primary: int = 1, prefix: str = "q"
) -> dict[str, str]:
    """`per_primary` queues (each its own slot) on every primary: queue -> the node that owns it.
    The names are `prefix` and a number, the first ones that fill every primary."""
    found: dict[str, str] = {}
    primaries = len(rc.get_primaries())  # type: ignore[no-untyped-call]
    for number in itertools.count():
        queue = f"{prefix}{number}"
        # redis-py leaves these cluster methods unannotated.
        node = rc.get_node_from_key(f"emq:{{{queue}}}:wait").name  # type: ignore[no-untyped-call]
        if list(found.values()).count(node) < per_primary:
            found[queue] = node
        if len(found) == primaries * per_primary:
            return found
    raise AssertionError("unreachable")
