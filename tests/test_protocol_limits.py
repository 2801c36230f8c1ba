"""The queue's own limits: setGlobalConcurrency-1 and setGlobalRateLimit-1 (with their readers
getGlobalConcurrency-1 and getGlobalRateLimit-1), which every pickup obeys whatever its caller
passes; isMaxed-2 and getRateLimitTtl-2; rateLimit-1, a worker's dynamic limit; and
removeRateLimitKey-1."""

from __future__ import annotations

import pytest
import redis

from echomq_scripts import generated as g
from echomq_scripts.runtime import ArgumentError, LuaError
from tests.support.queue_harness import Queue


def test_the_queues_concurrency_caps_every_worker(q: Queue) -> None:
    for job_id in "abcd":
        q.add(job_id)
    assert g.set_global_concurrency(q.r, queue=q.name, concurrency=2) == 1
    assert q.hash("meta") == {"concurrency": "2"}
    assert g.get_global_concurrency(q.r, queue=q.name) == 2
    # A worker that asks for more gets the queue's cap; one that asks for less keeps its own.
    assert q.take_id(concurrency=1) == "a"
    assert q.take(concurrency=1) == ("", {}, 0)
    assert q.take_id(concurrency=10) == "b"
    assert g.is_maxed(q.r, queue=q.name) == 1
    assert q.take(concurrency=10) == ("", {}, 0)
    assert q.take() == ("", {}, 0)
    assert q.check() == {"a": "active", "b": "active", "c": "wait", "d": "wait"}
    # A finish frees a slot, and its fetch-next takes the next job within the cap.
    assert q.complete("a", fetch_next=True)[1] == "c"
    assert g.is_maxed(q.r, queue=q.name) == 1
    # Removed, the cap no longer holds.
    assert g.set_global_concurrency(q.r, queue=q.name, concurrency=0) == 1
    assert q.hash("meta") == {}
    assert g.get_global_concurrency(q.r, queue=q.name) == 0
    assert g.is_maxed(q.r, queue=q.name) == 0
    assert q.take_id() == "d"


def test_the_queues_rate_limit_replaces_the_workers(q: Queue) -> None:
    for job_id in "abc":
        q.add(job_id)
    assert g.set_global_rate_limit(q.r, queue=q.name, max=1, duration=5000) == 1
    assert g.get_global_rate_limit(q.r, queue=q.name) == (1, 5000)
    # The worker asks for 10 a second: the queue's 1 per 5 s holds.
    assert q.take_id(limit_max=10, limit_duration=1000) == "a"
    assert 1000 < q.r.pttl(q.key("limiter")) <= 5000
    job_id, _, limited_for = q.take(limit_max=10, limit_duration=1000)
    assert job_id == ""
    assert 1000 < limited_for <= 5000
    # A worker that passes no limit is held back too.
    assert q.take()[0] == ""
    assert 1000 < g.get_rate_limit_ttl(q.r, queue=q.name, max_jobs=0) <= 5000
    # Against a larger limit the limiter's one pickup leaves room.
    assert g.get_rate_limit_ttl(q.r, queue=q.name, max_jobs=2) == 0
    assert g.remove_rate_limit_key(q.r, queue=q.name) == 1
    assert g.remove_rate_limit_key(q.r, queue=q.name) == 0
    assert g.get_rate_limit_ttl(q.r, queue=q.name, max_jobs=0) == 0
    assert q.take_id() == "b"
    assert g.set_global_rate_limit(q.r, queue=q.name, max=0, duration=0) == 1
    assert g.get_global_rate_limit(q.r, queue=q.name) == (0, 0)
    assert q.hash("meta") == {}
    assert q.take_id() == "c"


def test_a_dynamic_rate_limit_holds_back_every_pickup_with_a_limit(q: Queue) -> None:
    q.add("a")
    q.add("b")
    assert q.take_id() == "a"
    assert g.rate_limit(q.r, queue=q.name, duration=4000) == 1
    job_id, _, limited_for = q.take(limit_max=100, limit_duration=1000)
    assert job_id == ""
    assert 0 < limited_for <= 4000
    assert 0 < g.get_rate_limit_ttl(q.r, queue=q.name, max_jobs=100) <= 4000
    # Without a limit of its own or the queue's, a pickup is not held back (as BullMQ's).
    assert 0 < g.get_rate_limit_ttl(q.r, queue=q.name, max_jobs=0) <= 4000
    assert q.take_id() == "b"


def test_a_finish_that_fetches_the_next_job_obeys_the_queues_limits(q: Queue) -> None:
    for job_id in "abc":
        q.add(job_id)
    assert q.take_id() == "a"
    assert q.take_id() == "b"
    g.set_global_concurrency(q.r, queue=q.name, concurrency=1)
    # Two active, a cap of one: the finish frees a slot but one job is still active.
    assert q.complete("a", fetch_next=True) == ("completed", "", {}, 0)
    g.set_global_rate_limit(q.r, queue=q.name, max=1, duration=60_000)
    g.set_global_concurrency(q.r, queue=q.name, concurrency=0)
    assert q.complete("b", fetch_next=True)[1] == "c"
    q.add("d")
    went, job_id, _, limited_for = q.complete("c", fetch_next=True)
    assert (went, job_id) == ("completed", "")
    assert 0 < limited_for <= 60_000


@pytest.mark.parametrize(
    ("script", "args"),
    [
        ("setGlobalConcurrency", ["-1"]),
        ("setGlobalConcurrency", ["2.5"]),
        ("setGlobalRateLimit", ["1e3", "10"]),
        ("setGlobalRateLimit", ["5", " 10"]),
        ("rateLimit", ["0"]),
    ],
)
def test_a_bad_limit_is_refused_before_any_write(q: Queue, script: str, args: list[str]) -> None:
    key = "limiter" if script == "rateLimit" else "meta"
    with pytest.raises(LuaError, match="must be an integer"):
        q.raw(script, [q.key(key)], args)
    assert q.r.exists(q.key(key)) == 0


def test_the_wrappers_refuse_a_bad_limit_first(r: redis.Redis) -> None:
    with pytest.raises(ArgumentError):
        g.set_global_concurrency(r, queue="q", concurrency=-1)
    with pytest.raises(ArgumentError):
        g.rate_limit(r, queue="q", duration=0)


@pytest.mark.parametrize(
    ("script", "key", "args"),
    [
        ("setGlobalConcurrency", "emq:{q}:wait", ["1"]),
        ("setGlobalRateLimit", "emq:{q}:7", ["1", "1"]),
        ("rateLimit", "emq:{q}:meta", ["100"]),
        ("removeRateLimitKey", "emq:{q}:7:lock", []),
        ("setGlobalConcurrency", "meta", ["1"]),
    ],
)
def test_a_key_that_is_not_the_queues_own_is_refused(
    r: redis.Redis, script: str, key: str, args: list[str]
) -> None:
    r.set("emq:{q}:7:lock", "t")
    with pytest.raises(LuaError, match="is not the queue's"):
        Queue(r, "q").raw(script, [key], args)
    assert r.get("emq:{q}:7:lock") == b"t"
    assert r.exists("emq:{q}:wait", "emq:{q}:7", "emq:{q}:meta", "meta") == 0
