"""The built scripts on a real redis-server: SHA1s, execution, and errors mapped to sources."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import redis

from echomq_scripts.runtime import keys
from echomq_scripts.runtime.grammar import parse_shape
from echomq_scripts.runtime.linemap import LineMap, error_line
from tests.support.environment import REPO
from tests.support.projects import copy_fixture, run_build

# Arguments that scripts accept only from a closed set of words, or as JSON objects.
NAMED_SAMPLES = {
    "outcome": "failed",
    "action": "pause",
    "opts": "{}",
    "job_id": "",
    "parent_id": "",
    # A job scheduler runs every 1000 ms: no pattern, and an offset within the period.
    "pattern": "",
    "offset": "0",
    "state": "wait",
    "part": "processed",
    "cursor": "0",  # a SCAN cursor is digits
}
# Where a script's words leave the shared sample out: moveJobsToWait-8 takes no list's state.
SCRIPT_SAMPLES = {"moveJobsToWait-8": {"state": "delayed"}}
ARG_SAMPLES = {
    "string": "x",
    "int": "1000",
    "number": "0.5",
    "bool": "1",
    "json": "{}",
    "msgpack": "\x80",
    "bytes": "\x00",
}
# A variadic argument's values: addFlow-10's, a flow of one node; extendLocks-1's, one job;
# getRanges-8's and getJobs-8's, one state; getCountsPerPriority-3's, two priorities.
VARIADIC_SAMPLES = {
    "node": ["", "n", "{}", "{}", "", "0", "0", "0"],
    "jobs": ["7", "tok"],
    "state": ["wait"],
    "priority": ["0", "2"],
}
# What each script answers on an empty queue to those arguments (raw, as redis-py reads it): an
# add adds job "1", a pickup finds nothing, a call about job "7" finds no lock.
EMPTY_QUEUE_REPLIES: dict[str, object] = {
    "addDelayedJob-5": [b"1", 1],
    "addFlow-10": [[b"1", 1]],
    "addLog-2": -1,
    "addJobScheduler-10": [b"repeat-x-1000", 1000],
    "addPrioritizedJob-6": [b"1", 1],
    "addStandardJob-6": [b"1", 1],
    "changeDelay-4": -1,
    "changePriority-6": -1,
    "cleanJobsInSet-5": [0, []],
    "drain-5": 0,
    "extendLock-2": -2,
    "extendLocks-1": [[b"7", -2]],
    "getCounts-8": [0] * 8,
    "getDeduplicationJobId-1": b"",
    "getDependencies-4": -1,
    "getDependencyCounts-4": -1,
    "getGlobalConcurrency-1": 0,
    "getGlobalRateLimit-1": [0, 0],
    "getCountsPerPriority-3": [0, 0],
    "getJobLogs-1": [0, []],
    "getJobs-8": [[]],
    "getJobScheduler-2": [],
    "getJobSchedulers-1": [0, []],
    "getJobState-8": b"unknown",
    "getMetrics-2": [0, 0, 0, [], 0],
    "getRanges-8": [[]],
    "getRateLimitTtl-2": 0,
    "isFinished-3": -1,
    "isJobInList-1": 0,
    "isMaxed-2": 0,
    "moveJobFromActiveToWait-11": -2,
    "moveJobsToWait-8": 0,
    "moveStalledJobsToWait-8": [[], []],
    "moveToActive-11": [b"", [], 0, b"x"],  # nothing to pick up, and the token sent
    "moveToDelayed-8": -2,
    "moveToFinished-14": -2,
    "moveToWaitingChildren-7": -2,
    "obliterate-20": 2,  # not paused
    "paginate-1": [b"0", 0, []],
    "pause-5": 1,
    "promote-8": -1,
    "rateLimit-1": 1,
    "releaseLock-1": 0,
    "removeChildDependency-2": -1,
    "removeDeduplicationKey-2": 0,
    "removeJob-13": -1,
    "removeJobScheduler-8": 0,
    "removeOrphanedJobs-8": [b"0", []],
    "removeRateLimitKey-1": 0,
    "removeUnprocessedChildren-10": -1,
    "reprocessJob-8": -1,
    "retryJob-12": -2,
    "saveStacktrace-1": -1,
    "setGlobalConcurrency-1": 1,
    "setGlobalRateLimit-1": 1,
    "updateData-1": -1,
    "updateJobScheduler-10": b"",
    "updateProgress-3": -1,
}


@pytest.fixture(scope="module")
def repo_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("repo") / "build"
    result = run_build(REPO / "lua_src", out)
    assert not result.failed(strict=True), result.diagnostics
    return out, json.loads((out / "manifest.json").read_bytes())


def script_ids() -> list[str]:
    return sorted(p.stem for p in (REPO / "lua_src").glob("*-*.lua"))


@pytest.mark.parametrize("script_id", script_ids())
def test_script_load_returns_the_manifest_sha1_and_evalsha_runs(
    script_id: str, repo_build: tuple[Path, dict[str, Any]], r: redis.Redis
) -> None:
    out, manifest = repo_build
    (entry,) = [s for s in manifest["scripts"] if s["file"] == f"scripts/{script_id}.lua"]
    body = (out / entry["file"]).read_bytes()
    assert r.script_load(body) == entry["sha1"]
    samples = NAMED_SAMPLES | SCRIPT_SAMPLES.get(script_id, {})
    args = [samples.get(a["name"], ARG_SAMPLES[a["type"]]) for a in entry["argv"]]
    names = [a["name"] for a in entry["argv"]]
    if "job_id" in names and not script_id.startswith("add"):
        args[names.index("job_id")] = "7"  # a job, not a new id
    values = {a["name"]: value for a, value in zip(entry["argv"], args, strict=True)}
    if entry["variadicArgv"]:
        args += VARIADIC_SAMPLES[entry["variadicArgv"]["name"]]
    call_keys = [re.sub(r"<(\w+)>", lambda m: values[m[1]], k["template"]) for k in entry["keys"]]
    reply = r.evalsha(entry["sha1"], entry["numKeys"], *call_keys, *args)
    # On an empty queue each script answers what it should, in its declared shape or code.
    assert reply == EMPTY_QUEUE_REPLIES[script_id]
    if isinstance(reply, int) and reply < 0:
        assert reply in entry["codes"]
    else:
        parse_shape(entry["returns"]["shape"]).decoder()(reply)  # raises unless it fits


def test_extend_lock_extends_only_for_the_holder(
    repo_build: tuple[Path, dict[str, Any]], r: redis.Redis
) -> None:
    out, _ = repo_build
    extend = r.register_script((out / "scripts" / "extendLock-2.lua").read_bytes())
    lock, stalled = "emq:{mail}:7:lock", "emq:{mail}:stalled"
    assert extend(keys=[lock, stalled], args=["tok", 30000, "7"]) == -2
    r.set(lock, "tok", px=1000)
    r.sadd(stalled, "7", "8")
    assert extend(keys=[lock, stalled], args=["other", 30000, "7"]) == -6
    assert r.pttl(lock) <= 1000
    assert extend(keys=[lock, stalled], args=["tok", 30000, "7"]) == 1
    assert 1000 < r.pttl(lock) <= 30000
    assert r.smembers(stalled) == {b"8"}


@pytest.mark.parametrize("state", keys.STATES)
def test_get_job_state_finds_the_state_holding_the_job(
    state: str, repo_build: tuple[Path, dict[str, Any]], r: redis.Redis
) -> None:
    out, _ = repo_build
    get_state = r.register_script((out / "scripts" / "getJobState-8.lua").read_bytes())
    state_keys = [keys.state("q", name) for name in keys.STATES]
    key = f"emq:{{q}}:{state}"
    if state in ("wait", "paused", "active"):
        r.rpush(key, "other", "42")
    else:
        r.zadd(key, {"other": 1, "42": 2})
    assert get_state(keys=state_keys, args=["42"]) == state.encode()
    assert get_state(keys=state_keys, args=["43"]) == b"unknown"


@pytest.fixture
def failing_build(tmp_path: Path) -> tuple[Path, LineMap]:
    project = copy_fixture("runtime-error", tmp_path)
    out = project / "build"
    assert not run_build(project / "lua_src", out).failed(strict=True)
    return out, LineMap.load(out / "maps" / "fail-1.json")


def _failure(r: redis.Redis, out: Path, mode: str) -> str:
    with pytest.raises(redis.ResponseError) as failed:
        r.eval((out / "scripts" / "fail-1.lua").read_text(), 1, "emq:{q}:target", mode)
    return str(failed.value)


@pytest.mark.parametrize(
    ("mode", "words", "source_line"),
    [
        # A Lua error: Redis names the line in front of the message and at its end.
        ("lua", "cannot handle emq:{q}:target", 3),
        # A Redis command's error: only at the end ("... on @user_script:N.").
        ("redis", "not an integer", 8),
    ],
)
def test_runtime_error_maps_to_its_include_line(
    failing_build: tuple[Path, LineMap], r: redis.Redis, mode: str, words: str, source_line: int
) -> None:
    out, line_map = failing_build
    message = _failure(r, out, mode)
    assert words in message
    line = error_line(message)
    assert line is not None
    assert line_map.origin(line) == ("includes/failures.lua", source_line)


def test_error_line_reads_both_redis_formats(
    failing_build: tuple[Path, LineMap], r: redis.Redis
) -> None:
    out, _ = failing_build
    message = _failure(r, out, "lua")
    redis7_line = error_line(message)
    # Before Redis 7 the line came only in front: "... @user_script:N: <message>".
    older = "Error running script (call to f_0123): @" + message.split(" script: ")[0]
    assert error_line(older) == redis7_line
    assert error_line(message.split(" script: ")[0]) == redis7_line
    assert error_line("ERR unknown command") is None
