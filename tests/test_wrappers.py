"""The generated wrappers and their runtime, on a real redis-server."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import os
import pickle
import shutil
import subprocess
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import redis
import redis.asyncio
from click.testing import CliRunner

from echomq_scripts import generated as g
from echomq_scripts.generated import errors
from echomq_scripts.runtime import (
    ArgumentError,
    BodyMismatchError,
    LuaError,
    ReplyShapeError,
    ScriptFailed,
)
from echomq_scripts.runtime.codes import ERROR_CODES
from echomq_scripts.toolchain.cli import cli
from echomq_scripts.toolchain.naming import snake_case
from tests.support.environment import REPO
from tests.support.projects import copy_fixture, run_build
from tests.support.redis_server import RedisServer

LOCK, STALLED = "emq:{mail}:7:lock", "emq:{mail}:stalled"


def async_client(server: RedisServer) -> redis.asyncio.Redis:
    return redis.asyncio.Redis(host="127.0.0.1", port=server.port)


def run_async(server: RedisServer, call: Any) -> Any:
    """Run `await call(client)` with a fresh asyncio client of `server`."""

    async def main() -> Any:
        client = async_client(server)
        try:
            return await call(client)
        finally:
            await client.aclose()

    return asyncio.run(main())


# -- every wrapper, sync and async ------------------------------------------------------


def test_extend_lock_through_its_wrapper(r: redis.Redis) -> None:
    with pytest.raises(errors.JobLockNotExist) as missing:
        g.extend_lock(r, queue="mail", token="tok", duration=30000, job_id="7")
    assert (missing.value.code, missing.value.job_id, missing.value.script) == (
        -2,
        "7",
        "extendLock-2",
    )
    r.set(LOCK, "tok", px=1000)
    r.sadd(STALLED, "7")
    with pytest.raises(errors.JobLockMismatch):
        g.extend_lock(r, queue="mail", token="other", duration=30000, job_id="7")
    assert g.extend_lock(r, queue="mail", token="tok", duration=30000, job_id="7") == 1
    assert 1000 < r.pttl(LOCK) <= 30000
    assert r.smembers(STALLED) == set()


def test_extend_lock_async(r: redis.Redis, redis_server: RedisServer) -> None:
    r.set(LOCK, "tok", px=1000)
    extended = run_async(
        redis_server,
        lambda c: g.extend_lock_async(c, queue="mail", token="tok", duration=30000, job_id="7"),
    )
    assert extended == 1
    assert r.pttl(LOCK) > 1000
    with pytest.raises(errors.JobLockMismatch):
        run_async(
            redis_server,
            lambda c: g.extend_lock_async(c, queue="mail", token="x", duration=1, job_id="7"),
        )


def test_explicit_keys_equal_the_queue_helper(r: redis.Redis) -> None:
    keys = g.extend_lock_keys("mail", "7")
    assert keys == g.ExtendLockKeys(lock=LOCK, stalled=STALLED)
    r.set(LOCK, "tok")
    assert g.extend_lock(r, keys=keys, token="tok", duration=5000, job_id="7") == 1


STATES = ["wait", "paused", "active", "delayed", "prioritized", "completed", "failed"]


@pytest.mark.parametrize("state", [*STATES, "waiting-children"])
def test_get_job_state_sync_and_async(
    state: str, r: redis.Redis, redis_server: RedisServer
) -> None:
    key = f"emq:{{mail}}:{state}"
    if state in ("wait", "paused", "active"):
        r.rpush(key, "other", "42")
    else:
        r.zadd(key, {"other": 1, "42": 2})
    assert g.get_job_state(r, queue="mail", job_id="42") == state
    found = run_async(redis_server, lambda c: g.get_job_state_async(c, queue="mail", job_id="42"))
    assert found == state
    assert g.get_job_state(r, queue="mail", job_id="43") == "unknown"


# -- NOSCRIPT recovery -------------------------------------------------------------------


def loaded(r: redis.Redis) -> dict[str, bool]:
    """Which scripts the server has, by name."""
    shas = [s.sha for s in g.SCRIPTS]
    return {s.spec.name: bool(x) for s, x in zip(g.SCRIPTS, r.script_exists(*shas), strict=True)}


NONE_LOADED = {s.spec.name: False for s in g.SCRIPTS}
ALL_LOADED = {s.spec.name: True for s in g.SCRIPTS}


def test_plain_call_recovers_from_script_flush(r: redis.Redis) -> None:
    r.set(LOCK, "tok")
    assert g.extend_lock(r, queue="mail", token="tok", duration=5000, job_id="7") == 1
    r.script_flush()
    assert loaded(r) == NONE_LOADED
    assert g.extend_lock(r, queue="mail", token="tok", duration=5000, job_id="7") == 1
    assert loaded(r) == {**NONE_LOADED, "extendLock": True}


@pytest.mark.parametrize("transaction", [False, True], ids=["pipeline", "multi-exec"])
def test_pipeline_loads_missing_scripts_before_it_runs(r: redis.Redis, transaction: bool) -> None:
    r.set(LOCK, "tok")
    r.rpush("emq:{mail}:wait", "7")
    r.script_flush()
    pipe = r.pipeline(transaction=transaction)
    extended = g.extend_lock_pipeline(pipe, queue="mail", token="tok", duration=5000, job_id="7")
    state = g.get_job_state_pipeline(pipe, queue="mail", job_id="7")
    refused = g.extend_lock_pipeline(pipe, queue="mail", token="bad", duration=5000, job_id="7")
    replies = pipe.execute()
    assert extended.result(replies) == 1
    assert state.result(replies) == "wait"
    with pytest.raises(errors.JobLockMismatch):
        refused.result(replies)
    assert loaded(r) == {**NONE_LOADED, "extendLock": True, "getJobState": True}


def test_async_multi_exec_loads_missing_scripts(r: redis.Redis, redis_server: RedisServer) -> None:
    r.rpush("emq:{mail}:paused", "9")
    r.script_flush()

    async def call(client: redis.asyncio.Redis) -> str:
        async with client.pipeline(transaction=True) as pipe:
            pending = g.get_job_state_pipeline(pipe, queue="mail", job_id="9")
            return pending.result(await pipe.execute())

    assert run_async(redis_server, call) == "paused"


def test_load_all_warms_every_script(r: redis.Redis, redis_server: RedisServer) -> None:
    assert loaded(r) == NONE_LOADED
    assert g.load_all(r) == [s.sha for s in g.SCRIPTS]
    assert loaded(r) == ALL_LOADED
    r.script_flush()
    run_async(redis_server, g.load_all_async)
    assert loaded(r) == ALL_LOADED


def test_queue_keys_kept_between_calls_stay_right_and_bounded() -> None:
    from echomq_scripts.generated.scripts._extend_lock import _EXTEND_LOCK as script
    from echomq_scripts.runtime.script import _QUEUES_KEPT

    assert g.extend_lock_keys("mail", "7") == g.ExtendLockKeys(lock=LOCK, stalled=STALLED)
    # The queue's part is kept after the first call; the id's part is filled on every call.
    assert g.extend_lock_keys("mail", "8").lock == LOCK.replace(":7:", ":8:")
    with pytest.raises(ArgumentError, match="contains"):
        g.extend_lock_keys("mail", "8}")
    for n in range(_QUEUES_KEPT + 10):
        assert g.extend_lock_keys(f"q{n}", "1").lock == f"emq:{{q{n}}}:1:lock"
    assert len(script._by_queue) <= _QUEUES_KEPT
    assert g.extend_lock_keys("mail", "7").lock == LOCK
    # A value that is no str is refused by name, an unhashable one included.
    with pytest.raises(ArgumentError, match="a queue name must be a non-empty str"):
        script.keys_for(["mail"], {"job_id": "7"})  # type: ignore[arg-type]


# -- argument checks ---------------------------------------------------------------------


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("a str for an int", {"duration": "5000"}, "argument 'duration' must be an int >= 1, got str"),
    ("a bool for an int", {"duration": True}, "argument 'duration' must be an int >= 1, got bool"),
    ("None for a string", {"token": None}, "argument 'token' is required, got None"),
    ("an int for a string", {"token": 7}, "argument 'token' must be a str, got int"),
    ("a queue breaking the tag", {"queue": "ma{il"}, "queue name 'ma{il' contains '{' or '}'"),
    ("an empty queue", {"queue": ""}, "a queue name must be a non-empty str"),
    ("a job id breaking the tag", {"job_id": "7}"}, "job id '7}' contains '{', '}' or ':'"),
    ("queue and keys both", {"keys": ("a", "b")}, "pass queue= or keys=, not both"),
    ("neither queue nor keys", {"queue": None}, "pass queue= or keys="),
    ("too few keys", {"queue": None, "keys": ("a",)}, "takes 2 keys, got 1"),
    ("an empty key", {"queue": None, "keys": ("a", "")}, "key 2 must be a non-empty str"),
]


@pytest.mark.parametrize(
    ("change", "message"), [(c, m) for _, c, m in BAD_CALLS], ids=[n for n, _, _ in BAD_CALLS]
)
def test_bad_arguments_are_refused_before_anything_is_sent(
    r: redis.Redis, change: dict[str, Any], message: str
) -> None:
    arguments: dict[str, Any] = {"queue": "mail", "token": "t", "duration": 1, "job_id": "7"}
    arguments.update(change)
    r.config_resetstat()
    with pytest.raises(ArgumentError, match=message.replace("{", "\\{").replace("}", "\\}")):
        g.extend_lock(r, **arguments)
    with pytest.raises(ArgumentError):
        g.extend_lock_pipeline(r.pipeline(), **arguments)
    sent = [name for name in r.info("commandstats") if "eval" in name or "script" in name]
    assert sent == []


def test_number_and_json_arguments_are_checked_too() -> None:
    from echomq_scripts.runtime.grammar import TYPES

    def encode_arg(script: str, name: str, kind: str, value: object) -> bytes:
        encoder = TYPES[kind].encoder  # the grammar's table names each type's encoder
        assert encoder is not None
        return encoder(script, name, value)

    assert encode_arg("s", "ratio", "number", 0.5) == b"0.5"
    assert encode_arg("s", "flag", "bool", False) == b"0"
    assert encode_arg("s", "opts", "json", {"b": [1, None]}) == b'{"b":[1,null]}'
    assert encode_arg("s", "opts", "json", None) == b"null"  # None is JSON's null
    with pytest.raises(ArgumentError, match="finite"):
        encode_arg("s", "ratio", "number", float("nan"))
    with pytest.raises(ArgumentError, match="not JSON"):
        encode_arg("s", "opts", "json", {1j})
    with pytest.raises(ArgumentError, match="must be bytes"):
        encode_arg("s", "packed", "msgpack", "text")
    # Strings go out as UTF-8 bytes, encoded once; one UTF-8 cannot encode is refused by name.
    assert encode_arg("s", "name", "string", "süß") == "süß".encode()
    with pytest.raises(ArgumentError, match="argument 'name' must be a str that UTF-8 can encode"):
        encode_arg("s", "name", "string", "\udc80")
    with pytest.raises(ArgumentError, match="no lone surrogates"):
        encode_arg("s", "opts", "json", {"a": "\udc80"})  # cjson would refuse its escape


def test_a_json_object_argument_takes_a_mapping_only() -> None:
    from types import MappingProxyType

    from echomq_scripts.runtime.grammar import parse_arg_type

    arg = parse_arg_type("json(object)")
    assert (arg.kind, arg.form, arg.spelling, arg.wire) == (
        "json",
        "object",
        "json(object)",
        "json",
    )
    assert arg.annotation == "Mapping[str, object]"
    assert arg.encoder("s", "opts", {}, "object") == b"{}"
    assert arg.encoder("s", "opts", MappingProxyType({"a": [1]}), "object") == b'{"a":[1]}'
    not_mappings: list[object] = ["{}", [], 3]
    for value in not_mappings:
        with pytest.raises(ArgumentError, match="must be a mapping"):
            arg.encoder("s", "opts", value, "object")
    with pytest.raises(ArgumentError, match="is required, got None"):
        arg.encoder("s", "opts", None, "object")
    with pytest.raises(ValueError, match="a json's form is one of: object"):
        parse_arg_type("json(list)")


# -- generated packages of fixture projects ----------------------------------------------


def generate_fixture(name: str, package: str, tmp: Path) -> ModuleType:
    """Build a fixture project (its wrappers into its own package) and import that package."""
    project = copy_fixture(name, tmp)
    result = run_build(project / "lua_src", project / "build")
    assert not result.failed(strict=True), result.diagnostics
    sys.path.insert(0, str(project))
    try:
        return importlib.import_module(f"{package}.generated")
    finally:
        sys.path.remove(str(project))


@pytest.fixture(scope="module")
def every_code(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    yield generate_fixture("every-code", "emq_every_code", tmp_path_factory.mktemp("codes"))
    for module in [m for m in sys.modules if m.startswith("emq_every_code")]:
        del sys.modules[module]


@pytest.mark.parametrize(("code", "name"), sorted(ERROR_CODES.items(), reverse=True))
def test_every_code_raises_its_exception(
    every_code: ModuleType, r: redis.Redis, code: int, name: str
) -> None:
    with pytest.raises(ScriptFailed) as failed:
        every_code.fail(r, queue="mail", code=code, job_id="j1")
    assert type(failed.value) is getattr(every_code.errors, name)
    assert (failed.value.code, failed.value.job_id, failed.value.script) == (code, "j1", "fail-1")
    assert every_code.fail(r, queue="mail", code=0, job_id="j1") == 1


def test_lua_errors_name_the_source_line(tmp_path: Path, r: redis.Redis) -> None:
    module = generate_fixture("runtime-error", "emq_runtime_error", tmp_path)
    try:
        with pytest.raises(LuaError) as raised:
            module.fail(r, keys=module.FailKeys("emq:{q}:target"), mode="lua")
        assert (raised.value.source, raised.value.line) == ("includes/failures.lua", 3)
        assert "cannot handle emq:{q}:target" in raised.value.redis_message
        assert str(raised.value).startswith("fail-1 at includes/failures.lua:3: ")
        with pytest.raises(LuaError) as command:
            module.fail(r, keys=module.FailKeys("emq:{q}:target"), mode="redis")
        assert (command.value.source, command.value.line) == ("includes/failures.lua", 8)
        # The format of servers before Redis 7: the line only in front of the message.
        (script,) = module.SCRIPTS  # fail-1's
        line = raised.value.redis_message.split("on @user_script:")[1].rstrip(".")
        older = redis.exceptions.ResponseError(
            f"Error running script (call to f_{script.sha}): @user_script:{line}: boom"
        )
        assert (script.lua_error(older).source, script.lua_error(older).line) == (
            "includes/failures.lua",
            3,
        )
    finally:
        for name in [m for m in sys.modules if m.startswith("emq_runtime_error")]:
            del sys.modules[name]


def test_a_changed_body_is_refused_on_first_use(tmp_path: Path, r: redis.Redis) -> None:
    project = copy_fixture("runtime-error", tmp_path)
    run_build(project / "lua_src", project / "build")
    body = project / "emq_runtime_error" / "generated" / "lua" / "fail-1.lua"
    body.write_bytes(body.read_bytes() + b"-- edited by hand\n")
    sys.path.insert(0, str(project))
    try:
        module = importlib.import_module("emq_runtime_error.generated")
        r.config_resetstat()
        with pytest.raises(BodyMismatchError, match="rebuild"):
            module.fail(r, keys=module.FailKeys("k"), mode="lua")
        assert r.info("commandstats").get("cmdstat_evalsha") is None
    finally:
        sys.path.remove(str(project))
        for name in [m for m in sys.modules if m.startswith("emq_runtime_error")]:
            del sys.modules[name]


# -- build --check -----------------------------------------------------------------------


def test_build_check_fails_until_the_wrappers_are_rebuilt(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    shutil.copytree(REPO / "lua_src", project / "lua_src")
    shutil.copytree(REPO / "echomq_scripts" / "generated", project / "echomq_scripts" / "generated")
    shutil.copy(REPO / "pyproject.toml", project)
    previous = Path.cwd()
    os.chdir(project)
    try:
        runner = CliRunner()
        assert runner.invoke(cli, ["build", "--check", "--no-cache"]).exit_code == 0
        script = Path("lua_src/extendLock-2.lua")
        script.write_text(script.read_text().replace("return 1\n", "return (1)\n"))
        stale = runner.invoke(cli, ["build", "--check", "--no-cache"])
        assert stale.exit_code == 1
        assert "generated/lua/extendLock-2.lua: out of date" in stale.stderr
        assert "generated/scripts/_extend_lock.py: out of date" in stale.stderr
        assert runner.invoke(cli, ["build", "--no-cache"]).exit_code == 0
        assert runner.invoke(cli, ["build", "--check", "--no-cache"]).exit_code == 0
    finally:
        os.chdir(previous)


# -- every wrapper, whatever scripts there are -------------------------------------------

SAMPLES: dict[object, object] = {
    "str": "x1",
    "int": 1000,
    "float": 0.5,
    "bool": True,
    "object": {"n": 1},  # a json argument: any JSON value
}
# Arguments that scripts accept only from a closed set of words, and addFlow-10's nodes (a
# one-node flow: 8 values) and extendLocks-1's jobs (one pair), which their wrappers would
# otherwise send none of.
NAMED_SAMPLES: dict[str, object] = {
    "outcome": "failed",
    "action": "pause",
    "opts": {},
    "node": [b"", b"n", b"{}", b"{}", b"", b"0", b"0", b"0"],
    # A job scheduler runs every 1000 ms: no pattern, and an offset within the period.
    "pattern": "",
    "offset": 0,
    "state": "wait",
    "progress": 50,
    "jobs": ["7", "tok"],
    "part": "processed",
    # A fixed clock and token, not what their roles draw: the sync and asyncio calls answer
    # alike.
    "now": 1000,
    "token": "tok",
}
# Arguments whose name means other things in other scripts, by name and annotation: a SCAN
# cursor is text of digits (paginate-1, removeOrphanedJobs-8; cleanJobsInSet-5's is an int),
# getRanges-8 and getJobs-8 take their states as a list, and moveJobsToWait-8 takes no list's.
TYPED_SAMPLES: dict[tuple[str, object], object] = {
    ("cursor", "str"): "0",
    ("state", "Sequence[GetRangesState]"): ["wait"],
    ("state", "Sequence[GetJobsState]"): ["wait"],
    ("state", "MoveJobsToWaitState"): "delayed",
}


def wrapper_calls() -> list[tuple[str, dict[str, Any]]]:
    """Each generated wrapper's name, and keyword arguments that fit its signature."""
    calls = []
    for script in g.SCRIPTS:
        name = snake_case(script.spec.name)
        signature = inspect.signature(getattr(g, name))
        arguments: dict[str, Any] = {"queue": "mail"}
        for parameter in list(signature.parameters.values())[1:]:
            if (parameter.name, parameter.annotation) in TYPED_SAMPLES:
                arguments[parameter.name] = TYPED_SAMPLES[parameter.name, parameter.annotation]
            elif parameter.name in NAMED_SAMPLES:
                arguments[parameter.name] = NAMED_SAMPLES[parameter.name]
            elif parameter.name not in ("queue", "keys") and parameter.default is parameter.empty:
                arguments[parameter.name] = SAMPLES[parameter.annotation]
        calls.append((name, arguments))
    return calls


@pytest.mark.parametrize(("name", "arguments"), wrapper_calls(), ids=lambda x: str(x)[:20])
def test_every_wrapper_answers_alike_sync_and_async(
    name: str, arguments: dict[str, Any], r: redis.Redis, redis_server: RedisServer
) -> None:
    """On an empty queue each wrapper gives its typed reply or a failure its header lists."""
    script = next(s for s in g.SCRIPTS if snake_case(s.spec.name) == name)

    def outcome(call: Any) -> object:
        try:
            return call()
        except ScriptFailed as failed:
            return failed

    sync = outcome(lambda: getattr(g, name)(r, **arguments))
    r.flushall()  # the same empty queue for the async call
    asynchronous = outcome(
        lambda: run_async(redis_server, lambda c: getattr(g, f"{name}_async")(c, **arguments))
    )
    if isinstance(sync, ScriptFailed):
        assert sync.code in script.spec.codes
        assert type(asynchronous) is type(sync)
    else:
        assert sync == asynchronous
        annotation = inspect.signature(getattr(g, name)).return_annotation
        declared = eval(annotation, {"None": None, **{n: getattr(g, n) for n in g.__all__}})
        assert fits(sync, declared)  # the declared return type


def fits(value: object, annotation: Any) -> bool:
    """isinstance() for the annotations wrappers return: int, str, None, unions, generics."""
    if annotation is None:
        return value is None
    origin, parts = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(fits(value, part) for part in parts)
    if origin is list:
        return isinstance(value, list) and all(fits(v, parts[0]) for v in value)
    if origin is tuple:
        return isinstance(value, tuple) and all(map(fits, value, parts))
    if origin is dict:
        return isinstance(value, dict) and all(
            fits(k, parts[0]) and fits(v, parts[1]) for k, v in value.items()
        )
    if isinstance(annotation, type) and issubclass(annotation, tuple) and annotation is not tuple:
        # A record: its class, and each field of the type its annotation names.
        fields = typing.get_type_hints(annotation).values()
        return isinstance(value, annotation) and all(map(fits, value, fields))
    return isinstance(value, annotation)


def test_wrappers_use_the_bodies_the_manifest_lists(tmp_path: Path) -> None:
    out = tmp_path / "build"
    run_build(REPO / "lua_src", out)
    manifest = json.loads((out / "manifest.json").read_bytes())
    assert {s["name"]: s["sha1"] for s in manifest["scripts"]} == {
        s.spec.name: s.sha for s in g.SCRIPTS
    }
    for script in g.SCRIPTS:
        assert script.body == (out / "scripts" / f"{script.spec.script_id}.lua").read_bytes()


# -- misuse and the errors that are not the script's ---------------------------------------


def test_wrong_client_kinds_are_refused_before_sending(
    r: redis.Redis, redis_server: RedisServer
) -> None:
    r.config_resetstat()
    with pytest.raises(ArgumentError, match=r"takes a redis\.Redis or RedisCluster, got Pipeline"):
        g.get_job_state(r.pipeline(), queue="mail", job_id="1")
    with pytest.raises(ArgumentError, match="_pipeline wrapper takes a pipeline, got Redis"):
        g.get_job_state_pipeline(r, queue="mail", job_id="1")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match=r"_async wrapper takes a redis\.asyncio client"):
        asyncio.run(g.get_job_state_async(r, queue="mail", job_id="1"))  # type: ignore[arg-type]
    pipe = r.pipeline()
    pipe.watch("emq:{mail}:wait")  # type: ignore[no-untyped-call]
    with pytest.raises(ArgumentError, match=r"call pipe.multi\(\) before queueing after WATCH"):
        g.get_job_state_pipeline(pipe, queue="mail", job_id="1")
    pipe.reset()
    assert [n for n in r.info("commandstats") if "eval" in n or "script" in n] == []


def test_a_negative_reply_the_header_does_not_list_is_not_a_failure() -> None:
    get_state = next(s for s in g.SCRIPTS if s.spec.name == "getJobState")
    assert get_state.spec.codes == ()
    # -2 is JobLockNotExist for extendLock, but getJobState lists no codes: a wrong reply.
    with pytest.raises(ReplyShapeError, match="does not fit 'string'"):
        get_state.result(-2)


def test_errors_that_are_not_the_scripts_pass_through(r: redis.Redis) -> None:
    r.acl_setuser("reader", enabled=True, passwords=["+pw"], commands=["+ping"], keys=["*"])
    limited = redis.Redis(
        port=r.connection_pool.connection_kwargs["port"], username="reader", password="pw"
    )
    try:
        with pytest.raises(redis.exceptions.NoPermissionError):
            g.get_job_state(limited, queue="mail", job_id="1")
    finally:
        limited.close()
        r.acl_deluser("reader")


def test_errors_survive_pickling() -> None:
    failed = errors.JobLockMismatch("extendLock-2", "7")
    again = pickle.loads(pickle.dumps(failed))
    assert (type(again), str(again), again.job_id) == (type(failed), str(failed), "7")
    lua = LuaError("fail-1", "includes/failures.lua", 3, "ERR boom")
    copy = pickle.loads(pickle.dumps(lua))
    assert (copy.source, copy.line, str(copy)) == (lua.source, lua.line, str(lua))


def test_build_check_ignores_bytecode_of_the_generated_package(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    shutil.copytree(REPO / "lua_src", project / "lua_src")
    shutil.copytree(REPO / "echomq_scripts" / "generated", project / "echomq_scripts" / "generated")
    shutil.copy(REPO / "pyproject.toml", project)
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(project / "echomq_scripts")], check=True
    )
    assert list((project / "echomq_scripts" / "generated").glob("__pycache__/*.pyc"))
    done = subprocess.run(
        [sys.executable, "-m", "echomq_scripts", "build", "--check", "--no-cache"],
        cwd=project,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stderr) == (0, "")


LAZY_IMPORTS = """
import sys
def loaded():
    return sorted(m.rsplit(".", 1)[1] for m in sys.modules
                  if m.startswith("echomq_scripts.generated.scripts._"))
import echomq_scripts.generated as g
print(loaded())
g.move_to_active
print(loaded())
from echomq_scripts.generated.scripts._extend_lock import extend_lock
from echomq_scripts.generated.scripts import extend_lock as gathered
print(gathered is extend_lock is g.extend_lock, callable(gathered))
print(len(g.SCRIPTS), len(loaded()))
"""


def test_the_package_imports_a_scripts_module_on_first_use() -> None:
    """Importing the package reads no script's module; a wrapper's first use reads its own;
    SCRIPTS reads them all; a name means the wrapper however its module was imported."""
    done = subprocess.run(
        [sys.executable, "-c", LAZY_IMPORTS], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    count = len(g.SCRIPTS)
    assert done.stdout.splitlines() == [
        "[]",
        "['_move_to_active']",
        "True True",
        f"{count} {count}",
    ]
