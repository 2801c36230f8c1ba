"""The bundle in a second runtime: Node.js with ioredis consumes it exactly as published."""

from __future__ import annotations

import shutil
from pathlib import Path

import redis

from tests.support.environment import unavailable
from tests.support.projects import consumed, lua_src_bundle
from tests.support.redis_server import RedisServer
from tests.support.scenario import python_life, snapshot

NODE_DIR = Path(__file__).resolve().parent / "node"


def node_binary() -> str:
    node = shutil.which("node")
    problem = None
    if node is None:
        problem = "node not found: install Node.js (apt-get install nodejs npm)"
    elif not (NODE_DIR / "node_modules" / "ioredis").is_dir():
        problem = "ioredis not installed: run 'npm ci --prefix tests/node' (make test does)"
    if problem is not None:
        unavailable("the Node.js consumer", problem)
    assert node is not None
    return node


def test_node_consumes_the_published_bundle(
    tmp_path: Path, r: redis.Redis, redis_server: RedisServer
) -> None:
    out = tmp_path / "build"
    bundle = lua_src_bundle(out)
    command = [node_binary(), str(NODE_DIR / "consume.mjs"), str(bundle), str(redis_server.port)]
    steps = consumed(command, out)["steps"]
    assert steps["add"] == {"jobId": "1", "added": 1}
    assert steps["pickup"] == {"jobId": "1", "name": "email"}
    assert steps["heartbeat"] == 1
    assert steps["wrongToken"] == {"reply": -6, "name": "JobLockMismatch"}
    assert steps["finish"] == {"state": "completed"}
    assert steps["counts"] == [0, 0, 0, 0, 0, 1, 0, 0]
    # A refusal is a Lua error, so a runtime sees where it was raised: Redis names the line.
    assert "action must be 'pause' or 'resume', got 'stop'" in steps["refusal"]
    assert "on @user_script:" in steps["refusal"]
    # What Node.js did is in Redis: the job completed, under the manifest's key layout.
    assert r.zscore("emq:{node}:completed", "1") == 1005
    assert r.hget("emq:{node}:1", "returnvalue") == b'"sent"'
    # The same scenario through the Python wrappers leaves the same keys and values.
    python_life(r, "py")
    assert snapshot(r, "node") == snapshot(r, "py")
