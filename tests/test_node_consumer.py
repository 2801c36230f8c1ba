"""The bundle in a second runtime: Node.js with ioredis consumes it exactly as published."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import redis

from tests.support.environment import REPO, unavailable
from tests.support.projects import run_build
from tests.support.redis_server import RedisServer

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
    run_build(REPO / "lua_src", out)
    (bundle,) = out.glob("*.tar.gz")
    done = subprocess.run(
        [node_binary(), str(NODE_DIR / "consume.mjs"), str(bundle), str(redis_server.port)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    manifest = json.loads((out / "manifest.json").read_bytes())
    assert report["scripts"] == len(manifest["scripts"])
    assert report["sha1Mismatches"] == []
    assert report["steps"]["add"] == {"jobId": "1", "added": 1}
    assert report["steps"]["pickup"] == {"jobId": "1", "name": "email"}
    assert report["steps"]["finish"] == {"state": "completed"}
    assert report["steps"]["counts"] == [0, 0, 0, 0, 0, 1, 0, 0]
    # A refusal is a Lua error, so a runtime sees where it was raised: Redis names the line.
    assert "action must be 'pause' or 'resume', got 'stop'" in report["steps"]["refusal"]
    assert "on @user_script:" in report["steps"]["refusal"]
    # What Node.js did is in Redis: the job completed, under the manifest's key layout.
    assert r.zscore("emq:{node}:completed", "1") == 1005
    assert r.hget("emq:{node}:1", "returnvalue") == b'"sent"'
