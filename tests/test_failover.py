"""A primary dies while jobs run: its replica takes over and no job is lost or completed twice.

The cluster is this module's own (three primaries, a replica each): the test kills one primary
for good. Replication is asynchronous, so the last writes the dead primary acknowledged may never
reach its replica: a job the worker saw complete may come back active on the new primary. Its
lock then expires, the stalled check (two runs) puts it back in wait, and it runs again. Those
are the only jobs allowed to run twice, and the test says how many there were.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import redis
import redis.cluster
import redis.exceptions

from echomq_scripts import generated as g
from echomq_scripts.runtime import ScriptFailed
from tests.support.environment import start_cluster
from tests.support.invariants import assert_one_state
from tests.support.redis_cluster import RedisCluster

JOBS = 120
QUEUE = "failover"


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisCluster]:
    """This module's own cluster: the test kills one of its primaries for good."""
    started = start_cluster()
    yield started
    started.stop()


def kill_primary_of(cluster: RedisCluster, client: redis.cluster.RedisCluster, key: str) -> int:
    """SIGKILL the primary that owns `key`'s slot; its port."""
    port = int(client.get_node_from_key(key).port)  # type: ignore[no-untyped-call]
    (victim,) = [node for node in cluster.nodes if node.port == port]
    with victim.client() as primary:
        # The replica must hold the data to take over with it: WAIT until it has every write
        # so far. (Writes after this point may still be lost: that is what the test measures.)
        acked = primary.execute_command("WAIT", 1, 5000)
        assert acked == 1, f"the replica of :{port} did not acknowledge the writes"
    assert victim.process is not None
    os.kill(victim.process.pid, signal.SIGKILL)
    victim.process.wait()
    return port


def describe(cluster: RedisCluster) -> list[str]:
    """Each live node's role, primary and key count: what a failure message needs."""
    found = []
    for node in cluster.nodes:
        if node.process is None or node.process.poll() is not None:
            continue
        with node.client(decode_responses=True) as client:
            replication = client.info("replication")
            found.append(
                f":{node.port} {replication.get('role')} of {replication.get('master_port')}"
                f" keys={client.dbsize()}"
            )
            if client.dbsize() == 0 and replication.get("role") == "master":
                log = (node.directory / "redis.log").read_text(errors="replace").splitlines()
                found += [line[:160] for line in log if "ync" in line or "ailover" in line][-12:]
    return found


OUTAGE = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ClusterDownError,
    redis.exceptions.ClusterError,
    redis.exceptions.TryAgainError,
)


def test_no_job_is_lost_or_completed_twice_across_a_failover(
    cluster: RedisCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    client = redis.cluster.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    ids = [f"j{n}" for n in range(JOBS)]
    for job_id in ids:
        g.add_standard_job(
            client,
            queue=QUEUE,
            job_id=job_id,
            name="n",
            data={},
            opts={},
            now=1,
            dedup_id="",
        )
    completions: Counter[str] = Counter()
    killed_port = 0
    outages = 0
    now = 1_000
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        now += 1
        try:
            if not killed_port and len(completions) >= JOBS // 3:
                killed_port = kill_primary_of(cluster, client, f"emq:{{{QUEUE}}}:wait")
            job_id, *_ = g.move_to_active(
                client,
                queue=QUEUE,
                token=f"t{now}",
                lock_duration=1000,
                now=now,
                limit_max=0,
                limit_duration=0,
                concurrency=0,
            )
            if not job_id:
                if g.get_counts(client, queue=QUEUE).completed == JOBS:
                    break
                # Jobs lost in flight come back once their lock is gone and two checks ran.
                g.move_stalled_jobs_to_wait(client, queue=QUEUE, max_stalled=10, now=now)
                time.sleep(0.2)
                continue
            g.move_to_finished(
                client,
                queue=QUEUE,
                job_id=job_id,
                token=f"t{now}",
                now=now,
                outcome="completed",
                result="1",
                stacktrace="",
                jitter=0.0,
                fetch_next=False,
                lock_duration=1000,
                limit_max=0,
                limit_duration=0,
                concurrency=0,
                max_metrics=0,
                backoff_delay=0,
            )
            completions[job_id] += 1
        except OUTAGE:
            outages += 1
            time.sleep(0.2)
        except ScriptFailed:
            pass  # the job's lock or state went with the old primary; stalled recovery has it
    else:
        pytest.fail(
            f"not every job completed in time: {g.get_counts(client, queue=QUEUE)};"
            f" {outages} outages; killed :{killed_port}; nodes: {describe(cluster)}"
        )

    assert killed_port, "the primary was never killed"
    states = assert_one_state(client, QUEUE)
    assert states == dict.fromkeys(ids, "completed")  # none lost, each in completed once
    assert set(completions) == set(ids)
    again = sorted(job_id for job_id, count in completions.items() if count > 1)
    for job_id in again:
        # Only the stalled-recovery path runs a job again: it counted the stall.
        stalled = client.hget(f"emq:{{{QUEUE}}}:{job_id}", "stc")
        assert stalled is not None
        assert int(stalled) >= 1, job_id
    with capsys.disabled():
        print(
            f"\nfailover: primary :{killed_port} killed after {JOBS // 3} of {JOBS} jobs;"
            f" {outages} calls met the outage; {len(again)} job(s) ran twice"
            f" (lost with the old primary, recovered as stalled): {again}"
        )
    client.close()
