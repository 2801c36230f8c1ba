"""The bundle in a third runtime: Go with redigo (Debian's packages, GOPATH mode, offline) reads
it with the standard library, checks every SHA1, and runs a job's life; the same life run by the
Python wrappers leaves the same keys and values, byte for byte."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
import redis

from echomq_scripts import generated as g
from echomq_scripts.runtime.codes import ERROR_CODES
from tests.support.environment import REPO, unavailable
from tests.support.projects import consumed, lua_src_bundle, run_build
from tests.support.redis_server import RedisServer
from tests.support.scenario import python_life, snapshot

GO_DIR = Path(__file__).resolve().parent / "go" / "consume"
# Where Debian's golang-github-gomodule-redigo-dev puts redigo's source.
GOPATH = Path("/usr/share/gocode")


@pytest.fixture(scope="module")
def consumer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Go consumer, built offline in GOPATH mode against Debian's redigo."""
    go = shutil.which("go")
    if go is None:
        unavailable("Go", "go not found: apt-get install golang-go (make test does, as root)")
    if not (GOPATH / "src" / "github.com" / "gomodule" / "redigo" / "redis").is_dir():
        unavailable("redigo", "apt-get install golang-github-gomodule-redigo-dev")
    assert go is not None
    out = tmp_path_factory.mktemp("go")
    environment = {
        **os.environ,
        "GO111MODULE": "off",  # GOPATH mode: imports resolve under GOPATH, nothing is fetched
        "GOPATH": str(GOPATH),
        "GOCACHE": str(out / "cache"),
        "GOFLAGS": "",
    }
    built = subprocess.run(
        [go, "build", "-o", str(out / "consume"), "main.go"],
        cwd=GO_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    return out / "consume"


def test_go_consumes_the_bundle_and_leaves_what_python_leaves(
    tmp_path: Path, consumer: Path, r: redis.Redis, redis_server: RedisServer
) -> None:
    out = tmp_path / "build"
    bundle = lua_src_bundle(out)
    report = consumed([str(consumer), str(bundle), str(redis_server.port), "go"], out)
    # The closed table as Go holds it, read from the manifest: the one table, name for number.
    assert report["codes"] == {name: code for code, name in ERROR_CODES.items()}
    assert report["steps"] == {
        "add": {"jobId": "1", "added": 1},
        "pickup": {"jobId": "1", "name": "email"},
        "heartbeat": 1,
        # The closed table's code, named by the manifest's table as Go read it.
        "wrongToken": {"reply": -6, "name": "JobLockMismatch"},
        "finish": "completed",
        "state": "completed",
    }
    python_life(r, "py")
    go_state, python_state = snapshot(r, "go"), snapshot(r, "py")
    assert "emq:{Q}:1" in go_state  # the job's hash, among the rest
    assert go_state == python_state


def test_a_damaged_bundle_is_refused_by_its_sha1s(
    tmp_path: Path, consumer: Path, redis_server: RedisServer
) -> None:
    out = tmp_path / "build"
    bundle = lua_src_bundle(out)
    # The same archive with one body changed by a byte: the manifest's SHA1 no longer fits.
    damaged = tmp_path / "damaged.tar.gz"
    with tarfile.open(bundle) as source, tarfile.open(damaged, "w:gz") as target:
        for member in source.getmembers():
            data = source.extractfile(member) if member.isfile() else None
            body = data.read() if data is not None else b""
            if member.name.endswith("/scripts/getCounts-8.lua"):
                body = body.replace(b"return", b"return ", 1)
                member.size = len(body)
            target.addfile(member, io.BytesIO(body) if data is not None else None)
    done = subprocess.run(
        [str(consumer), str(damaged), str(redis_server.port), "go"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["sha1Mismatches"] == ["getCounts"]
    assert "SHA1 mismatches: [getCounts]" in done.stderr


def test_two_releases_side_by_side_each_runtime_calling_its_own(
    tmp_path: Path, consumer: Path, r: redis.Redis, redis_server: RedisServer
) -> None:
    # The next release changes addStandardJob-6's body (a comment): a new SHA1 for the same
    # behaviour. Go runs it while Python runs the release its wrappers came from, in one Redis.
    source = tmp_path / "lua_src"
    shutil.copytree(REPO / "lua_src", source)
    changed = source / "addStandardJob-6.lua"
    changed.write_bytes(changed.read_bytes() + b"-- the next release's addStandardJob\n")
    out = tmp_path / "next"
    run_build(source, out)
    (bundle,) = out.glob("*.tar.gz")
    report = consumed([str(consumer), str(bundle), str(redis_server.port), "go"], out)
    assert report["steps"]["finish"] == "completed"
    python_life(r, "py")
    scripts = {
        s["name"]: s["sha1"] for s in json.loads((out / "manifest.json").read_bytes())["scripts"]
    }
    ours = {s.spec.name: s.sha for s in g.SCRIPTS}
    assert scripts["addStandardJob"] != ours["addStandardJob"]
    assert scripts["getJobState"] == ours["getJobState"]  # unchanged: one body serves both
    # Each runtime loaded and ran its own body, and both bodies did the same work.
    assert r.script_exists(scripts["addStandardJob"], ours["addStandardJob"]) == [True, True]
    assert snapshot(r, "go") == snapshot(r, "py")
