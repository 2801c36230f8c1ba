"""The generated wrappers on a real three-primary Redis Cluster."""

from __future__ import annotations

import asyncio

import redis.asyncio.cluster
import redis.cluster

from echomq_scripts import generated as g
from tests.support.redis_cluster import RedisCluster, queues_on_every_primary


def loaded_everywhere(cluster: RedisCluster, names: set[str]) -> list[bool]:
    """For each primary: whether it has exactly the scripts `names` name."""
    states = []
    for primary in cluster.primary_clients():
        found = primary.script_exists(*(s.sha for s in g.SCRIPTS))
        states.append({s.spec.name for s, x in zip(g.SCRIPTS, found, strict=True) if x} == names)
        primary.close()
    return states


def test_wrappers_run_on_the_node_owning_each_queue(
    rc: redis.cluster.RedisCluster, redis_cluster: RedisCluster
) -> None:
    queues = queues_on_every_primary(rc)
    assert len(set(queues.values())) == 3
    for queue in queues:
        rc.set(f"emq:{{{queue}}}:7:lock", "tok")
        rc.rpush(f"emq:{{{queue}}}:active", "7")
        # Every primary starts without the scripts: the first call loads them (NOSCRIPT).
        assert g.extend_lock(rc, queue=queue, token="tok", duration=5000, job_id="7") == 1
        assert g.get_job_state(rc, queue=queue, job_id="7") == "active"
        assert rc.pttl(f"emq:{{{queue}}}:7:lock") > 0
    assert loaded_everywhere(redis_cluster, {"extendLock", "getJobState"}) == [True] * 3


def test_async_wrappers_on_the_cluster(rc: redis.cluster.RedisCluster) -> None:
    queues = list(queues_on_every_primary(rc))
    for queue in queues:
        rc.zadd(f"emq:{{{queue}}}:delayed", {"5": 1})

    async def main() -> list[str]:
        node = rc.get_default_node()  # type: ignore[no-untyped-call]
        client = redis.asyncio.cluster.RedisCluster(host=node.host, port=node.port)
        try:
            return [await g.get_job_state_async(client, queue=q, job_id="5") for q in queues]
        finally:
            await client.aclose()

    assert asyncio.run(main()) == ["delayed"] * len(queues)


def test_load_all_loads_every_primary(
    rc: redis.cluster.RedisCluster, redis_cluster: RedisCluster
) -> None:
    assert loaded_everywhere(redis_cluster, set()) == [True] * 3
    assert g.load_all(rc) == [s.sha for s in g.SCRIPTS]
    assert loaded_everywhere(redis_cluster, {s.spec.name for s in g.SCRIPTS}) == [True] * 3


def test_cluster_pipelines_load_and_run_the_scripts(
    rc: redis.cluster.RedisCluster, redis_cluster: RedisCluster
) -> None:
    queues = list(queues_on_every_primary(rc))
    for queue in queues:
        rc.rpush(f"emq:{{{queue}}}:wait", "3")
    pipe = rc.pipeline()  # type: ignore[no-untyped-call]
    pending = [g.get_job_state_pipeline(pipe, queue=q, job_id="3") for q in queues]
    replies = pipe.execute()
    assert [p.result(replies) for p in pending] == ["wait"] * len(queues)

    async def in_async_pipeline() -> list[str]:
        node = rc.get_default_node()  # type: ignore[no-untyped-call]
        client = redis.asyncio.cluster.RedisCluster(host=node.host, port=node.port)
        try:
            # Warming every primary is optional (the pipeline carries each body in its first
            # call); load_all_async answers the sha1s the build recorded.
            assert await g.load_all_async(client) == [s.spec.sha1 for s in g.SCRIPTS]
            async with client.pipeline() as apipe:
                waiting = [g.get_job_state_pipeline(apipe, queue=q, job_id="3") for q in queues]
                results = await apipe.execute()
            return [p.result(results) for p in waiting]
        finally:
            await client.aclose()

    assert asyncio.run(in_async_pipeline()) == ["wait"] * len(queues)
