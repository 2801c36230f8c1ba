"""The npm package the build makes: packed deterministically as npm packs, installed with
`npm install <tarball>` as a user installs it, and run through its API only; its types and
code table checked against the manifest's."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import redis

from echomq_scripts.generated.errors import BY_CODE
from echomq_scripts.runtime.codes import ERROR_CODES
from tests.support.environment import FIXTURES
from tests.support.projects import lua_src_bundle, run_build
from tests.support.redis_server import RedisServer
from tests.support.scenario import python_life, snapshot
from tests.test_node_consumer import NODE_DIR, node_binary


def installed(tmp_path: Path, package: Path) -> Path:
    """A Node.js project with ioredis (tests/node's) that installed `package` with npm."""
    project = tmp_path / "project"
    project.mkdir()
    for name in ("package.json", "package-lock.json"):
        shutil.copy(NODE_DIR / name, project / name)
    shutil.copytree(NODE_DIR / "node_modules", project / "node_modules", symlinks=True)
    npm = shutil.which("npm")
    assert npm is not None
    done = subprocess.run(
        [npm, "install", "--prefer-offline", "--no-audit", "--no-fund", "--no-save", str(package)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return project


def test_the_package_runs_the_scenario_through_its_api(
    tmp_path: Path, r: redis.Redis, redis_server: RedisServer
) -> None:
    node = node_binary()
    out = tmp_path / "build"
    lua_src_bundle(out)
    manifest = json.loads((out / "manifest.json").read_bytes())
    (package,) = out.glob("*.tgz")
    assert package.name == f"echomq-scripts-{manifest['version']}.tgz"
    project = installed(tmp_path, package)
    script = project / "lifecycle.mjs"
    shutil.copy(NODE_DIR / "package_lifecycle.mjs", script)
    done = subprocess.run(
        [node, str(script), str(redis_server.port), "npm"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["version"] == manifest["version"]
    # The one code table, as the package's enum and its error classes hold it.
    table = {name: code for code, name in ERROR_CODES.items()}
    assert report["codes"] == table
    assert report["classCodes"] == table
    assert report["add"] == {"job_id": "1", "added": 1}
    assert report["pickup"] == {"job_id": "1", "name": "email", "token": "worker:1"}
    assert report["heartbeat"] == 1
    wrong = report["wrongToken"]
    assert (wrong["name"], wrong["code"], wrong["codeName"]) == (
        "JobLockMismatch",
        -6,
        "JobLockMismatch",
    )
    assert wrong["isJobLockMismatch"]
    assert wrong["isScriptFailed"]
    assert (report["finish"], report["state"]) == ("completed", "completed")
    assert report["counts"] == {
        "wait": 0,
        "paused": 0,
        "active": 0,
        "delayed": 0,
        "prioritized": 0,
        "completed": 1,
        "failed": 0,
        "waiting_children": 0,
    }
    assert report["keys"] == ["emq:{npm}:1:lock", "emq:{npm}:stalled"]
    assert report["badArgument"]["name"] == "ArgumentError"
    assert "argument 'token' must be a non-empty string" in report["badArgument"]["message"]
    assert report["badId"]["name"] == "ArgumentError"
    assert "no lone surrogates" in report["loneSurrogate"]["message"]
    assert "a Map or Set is not JSON" in report["mapData"]["message"]
    assert "argument 'opts' must be a plain object" in report["dateOpts"]["message"]
    assert "argument 'job_id'" in report["reservedIdKeys"]["message"]
    assert {
        report[k]["name"] for k in ("loneSurrogate", "mapData", "dateOpts", "reservedIdKeys")
    } == {"ArgumentError"}
    assert report["oddQueueKeys"] == ["emq:{a$&b}:wait", "emq:{x<job_id>}:7:lock"]
    # What the package did is what the Python wrappers do, byte for byte.
    python_life(r, "py")
    assert snapshot(r, "npm") == snapshot(r, "py")


def test_the_packages_types_compile_and_refuse_mistakes(tmp_path: Path) -> None:
    # tsc --strict against the installed index.d.ts: a consumer using the API compiles, and each
    # mistake marked @ts-expect-error is refused (an unused marker is an error of its own).
    node = node_binary()
    out = tmp_path / "build"
    lua_src_bundle(out)
    (package,) = out.glob("*.tgz")
    project = installed(tmp_path, package)
    for name in ("package_types.ts", "package_type_errors.ts"):
        shutil.copy(NODE_DIR / name, project / name)
    tsc = project / "node_modules" / "typescript" / "bin" / "tsc"
    options = ["--strict", "--noEmit", "--module", "nodenext", "--moduleResolution", "nodenext"]
    done = subprocess.run(
        [node, str(tsc), *options, "package_types.ts", "package_type_errors.ts"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_package_is_packed_as_npm_packs_and_its_table_is_the_one(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    lua_src_bundle(first)
    lua_src_bundle(second)
    (package,) = first.glob("*.tgz")
    assert package.read_bytes() == next(second.glob("*.tgz")).read_bytes()
    with tarfile.open(package) as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        assert names == sorted(names)
        assert all(name.startswith("package/") for name in names)
        assert {(m.mtime, m.mode, m.uid, m.gid) for m in members} == {(499162500, 0o644, 0, 0)}
        declared = tar.extractfile("package/index.d.ts").read().decode()  # type: ignore[union-attr]
        meta = json.loads(tar.extractfile("package/package.json").read())  # type: ignore[union-attr]
    manifest = json.loads((first / "manifest.json").read_bytes())
    assert meta["version"] == manifest["version"]
    assert "package/scripts/moveToActive-11.lua" in names
    # The TypeScript enum names every code of the one table with its number.
    for code, name in ERROR_CODES.items():
        assert f"  {name} = {code}," in declared
        assert f"export declare class {name} extends ScriptFailed" in declared
    assert [(c["code"], c["name"]) for c in manifest["codes"]] == sorted(
        ERROR_CODES.items(), reverse=True
    )
    # Python's generated classes too: every runtime's names and numbers are the one table's.
    assert {code: (cls.__name__, cls.code) for code, cls in BY_CODE.items()} == {
        code: (name, code) for code, name in ERROR_CODES.items()
    }


def test_scripts_named_as_javascript_reserves_or_at_length_make_a_package_that_loads(
    tmp_path: Path,
) -> None:
    # A JavaScript word, a name the package declares itself, a name whose keys function is
    # another script's, and a name too long for a ustar header: the package still loads, each
    # function under its name or with "_" added.
    source = tmp_path / "lua_src"
    shutil.copytree(FIXTURES / "projects" / "clean" / "lua_src", source)
    touch = (source / "touch-3.lua").read_bytes()
    long_name = "x" * 240
    for name in ("delete", "runScript", "touchKeys", long_name):
        (source / f"{name}-3.lua").write_bytes(touch)
    out = tmp_path / "build"
    run_build(source, out)
    (package,) = out.glob("*.tgz")
    project = installed(tmp_path, package)
    listed = subprocess.run(
        [
            node_binary(),
            "--input-type=module",
            "-e",
            'const m = await import("echomq-scripts");'
            " console.log(JSON.stringify(Object.keys(m)));",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    exported = set(json.loads(listed.stdout))
    assert {"delete_", "runScript_", "touch", "touchKeys", "touchKeys_", long_name} <= exported
    assert {"touchKeysKeys", f"{long_name}Keys", "runScriptKeys", "deleteKeys"} <= exported
    assert "delete" not in exported
