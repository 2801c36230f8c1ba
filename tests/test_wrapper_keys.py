"""Keys passed with `keys=`: a wrapper refuses keys of two Cluster slots before it sends anything.

Keys built from `queue=` share the queue's hash tag by construction; keys a caller passes do not,
and a script called with keys of two slots would fail on a cluster (CROSSSLOT) or, on a single
server, touch keys that no cluster could hold together. Both kinds of script are checked: one
whose keys have templates (this repository's extendLock) and one whose keys have none.
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest
import redis
import redis.asyncio
from redis.crc import key_slot

from echomq_scripts import generated as g
from echomq_scripts.runtime import ArgumentError
from tests.support.projects import run_build
from tests.support.redis_server import RedisServer

# Two hash tags in two different slots, and two plain keys in two different slots.
TAG_A, TAG_B = "a", "b"
PLAIN_SOURCE, PLAIN_TARGET = "source", "target"

COPY_SCRIPT = """\
--- Copies one string key to another: keys without templates, as a caller names them.
--- @key source  the key to read
--- @key target  the key to write
--- @return int  1 when the source existed and was copied, 0 when it did not exist
local value = redis.call("GET", KEYS[1])
if not value then
  return 0
end
redis.call("SET", KEYS[2], value)
return 1
"""


def test_the_keys_used_here_are_in_different_slots() -> None:
    assert key_slot(TAG_A.encode()) != key_slot(TAG_B.encode())
    assert key_slot(PLAIN_SOURCE.encode()) != key_slot(PLAIN_TARGET.encode())


@pytest.fixture(scope="module")
def untemplated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The generated package of a project whose one script has two keys without templates."""
    project = tmp_path_factory.mktemp("untemplated")
    (project / "lua_src").mkdir()
    (project / "lua_src" / "copy-2.lua").write_text(COPY_SCRIPT)
    (project / "emq_untemplated").mkdir()
    (project / "emq_untemplated" / "__init__.py").write_text('"""Wrappers of copy-2."""\n')
    (project / "pyproject.toml").write_text(
        '[tool.echomq-scripts]\npython-package = "emq_untemplated/generated"\n'
    )
    result = run_build(project / "lua_src", project / "build")
    assert not result.failed(strict=True), result.diagnostics
    sys.path.insert(0, str(project))
    try:
        module = importlib.import_module("emq_untemplated.generated")
    finally:
        sys.path.remove(str(project))
    # Nothing to build from: the wrapper takes keys= only.
    assert module.CopyKeys._fields == ("source", "target")
    yield module
    for name in [m for m in sys.modules if m.startswith("emq_untemplated")]:
        del sys.modules[name]


def scripts_sent(r: redis.Redis) -> list[str]:
    """The script commands the server has run since its statistics were reset."""
    return [name for name in r.info("commandstats") if "eval" in name or "script" in name]


def assert_refused_before_sending(
    r: redis.Redis,
    server: RedisServer,
    wrapper: Callable[..., Any],
    wrapper_async: Callable[..., Any],
    wrapper_pipeline: Callable[..., Any],
    **arguments: Any,
) -> None:
    """Each form of a wrapper raises ArgumentError for the slots, and nothing reaches Redis."""
    slots = "the keys hash to 2 different Cluster slots"
    r.config_resetstat()
    with pytest.raises(ArgumentError, match=slots):
        wrapper(r, **arguments)

    async def call_async() -> object:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
        try:
            return await wrapper_async(client, **arguments)
        finally:
            await client.aclose()

    with pytest.raises(ArgumentError, match=slots):
        asyncio.run(call_async())
    pipe = r.pipeline()
    with pytest.raises(ArgumentError, match=slots):
        wrapper_pipeline(pipe, **arguments)
    assert len(pipe) == 0
    assert pipe.execute() == []
    assert scripts_sent(r) == []


@pytest.mark.parametrize(
    ("lock", "stalled"),
    [
        (f"emq:{{{TAG_A}}}:7:lock", f"emq:{{{TAG_B}}}:stalled"),
        (f"emq:{{{TAG_A}}}:7:lock", PLAIN_TARGET),
    ],
    ids=["two tags", "a tag and a plain key"],
)
def test_templated_keys_of_two_slots_are_refused(
    r: redis.Redis, redis_server: RedisServer, lock: str, stalled: str
) -> None:
    r.set(lock, "tok")
    assert_refused_before_sending(
        r,
        redis_server,
        g.extend_lock,
        g.extend_lock_async,
        g.extend_lock_pipeline,
        keys=g.ExtendLockKeys(lock, stalled),
        token="tok",
        duration=30000,
        job_id="7",
    )
    assert r.pttl(lock) == -1  # the lock was not extended


def test_templated_keys_of_one_tag_go_through(r: redis.Redis) -> None:
    lock, stalled = f"emq:{{{TAG_A}}}:7:lock", f"emq:{{{TAG_A}}}:stalled"
    r.set(lock, "tok")
    r.sadd(stalled, "7")
    keys = g.ExtendLockKeys(lock, stalled)
    assert g.extend_lock(r, keys=keys, token="tok", duration=30000, job_id="7") == 1
    assert 0 < r.pttl(lock) <= 30000
    assert r.smembers(stalled) == set()


@pytest.mark.parametrize(
    ("source", "target"),
    [(f"emq:{{{TAG_A}}}:source", f"emq:{{{TAG_B}}}:target"), (PLAIN_SOURCE, PLAIN_TARGET)],
    ids=["two tags", "two plain keys"],
)
def test_untemplated_keys_of_two_slots_are_refused(
    untemplated: ModuleType,
    r: redis.Redis,
    redis_server: RedisServer,
    source: str,
    target: str,
) -> None:
    r.set(source, "value")
    assert_refused_before_sending(
        r,
        redis_server,
        untemplated.copy,
        untemplated.copy_async,
        untemplated.copy_pipeline,
        keys=untemplated.CopyKeys(source, target),
    )
    assert r.exists(target) == 0


def test_untemplated_keys_of_one_slot_go_through(untemplated: ModuleType, r: redis.Redis) -> None:
    source, target = f"emq:{{{TAG_A}}}:source", f"emq:{{{TAG_A}}}:target"
    r.set(source, "value")
    assert untemplated.copy(r, keys=untemplated.CopyKeys(source, target)) == 1
    assert r.get(target) == b"value"
