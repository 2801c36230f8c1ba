"""Releases: the diff between two, the version check, the deploy check, and two side by side."""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import redis
import redis.cluster
from click.testing import CliRunner

from echomq_scripts.toolchain.cli import cli
from tests.support.environment import FIXTURES, REPO
from tests.support.projects import run_build
from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer


def release(
    tmp: Path,
    name: str,
    version: str,
    edit: dict[str, tuple[str, str]] | None = None,
    package: str | None = None,
    sources: Path = REPO / "lua_src",
) -> Path:
    """A copy of `sources` (by default this repository's scripts) at `version`, edited, built;
    its project dir."""
    project = tmp / name
    shutil.copytree(sources, project / "lua_src")
    for file, (old, new) in (edit or {}).items():
        path = project / "lua_src" / file
        assert old in path.read_text()
        path.write_text(path.read_text().replace(old, new))
    settings = f'[project]\nversion = "{version}"\n[tool.echomq-scripts]\n'
    if package:
        (project / package).mkdir()
        (project / package / "__init__.py").write_text('"""Wrappers of one release."""\n')
        settings += f'python-package = "{package}/generated"\n'
    (project / "pyproject.toml").write_text(settings)
    result = run_build(project / "lua_src", project / "build")
    assert not result.failed(strict=False), result.diagnostics
    return project


def bundle(project: Path) -> Path:
    (found,) = (project / "build").glob("*.tar.gz")
    return found


def diff(old: Path, new: Path) -> dict[str, object]:
    done = CliRunner().invoke(cli, ["diff", str(old), str(new), "--format", "json"])
    assert done.exit_code == 0, done.output
    return dict(json.loads(done.stdout))


def npm_package(bump: str, old: str, new: str) -> dict[str, str]:
    return {"name": "echomq-scripts", "bump": bump, "oldVersion": old, "newVersion": new}


BODY_EDIT = {"getCounts-8.lua": ("return {", "-- counted in one step\nreturn {")}
SIGNATURE_EDIT = {"pause-5.lua": ('"pause" or "resume"', '"pause" or "resume" (changed)')}


def test_diff_names_each_kind_of_change_and_the_bump(tmp_path: Path) -> None:
    base = release(tmp_path, "base", "1.2.3")
    body = release(tmp_path, "body", "1.2.4", BODY_EDIT)
    assert diff(bundle(base), bundle(body)) == {
        "added": [],
        "removed": [],
        "bodyChanged": ["getCounts"],
        "signatureChanged": [],
        "bump": "patch",
        "oldVersion": "1.2.3",
        "newVersion": "1.2.4",
        "npmPackage": npm_package("patch", "1.2.3", "1.2.4"),
    }
    added = release(tmp_path, "added", "1.3.0")
    (added / "lua_src" / "ping-0.lua").write_text(
        "--- Answers PONG.\n--- @return status  PONG\nreturn redis.status_reply('PONG')\n"
    )
    run_build(added / "lua_src", added / "build")
    assert diff(base / "build", added / "build")["bump"] == "minor"
    assert diff(base / "build", added / "build")["added"] == ["ping"]
    # A new argument type is a new signature; a removed script is too.
    typed = release(
        tmp_path,
        "typed",
        "2.0.0",
        {
            "moveStalledJobsToWait-8.lua": (
                "--- @arg now          int(0..) = @now",
                "--- @arg now          number(0..)",
            ),
        },
    )
    assert diff(base / "build" / "manifest.json", typed / "build")["signatureChanged"] == [
        "moveStalledJobsToWait"
    ]
    assert diff(added / "build", base / "build") == {
        "added": [],
        "removed": ["ping"],
        "bodyChanged": [],
        "signatureChanged": [],
        "bump": "major",
        "oldVersion": "1.3.0",
        "newVersion": "1.2.3",
        "npmPackage": npm_package("major", "1.3.0", "1.2.3"),
    }
    text = CliRunner().invoke(cli, ["diff", str(bundle(base)), str(bundle(body))])
    assert "changed in body only: getCounts" in text.stdout
    assert "smallest bump: patch (1.2.3 -> 1.2.4)" in text.stdout
    assert "npm package echomq-scripts: patch (1.2.3 -> 1.2.4), as the bundle" in text.stdout
    # Each build's npm package carries its release's version, so the bump is the package's.
    for project, version in ((base, "1.2.3"), (body, "1.2.4")):
        with tarfile.open(project / "build" / f"echomq-scripts-{version}.tgz") as tar:
            meta = tar.extractfile("package/package.json")
            assert meta is not None
            assert json.loads(meta.read())["version"] == version


# touch-3 declares -1 and returns tuple[int, int]. Declaring one more code, or returning another
# shape, changes nothing else about it: each alone is a new signature.
TOUCH = FIXTURES / "projects" / "clean" / "lua_src"
ERROR_LINE = "--- @error -1 JobNotExist\n"
RETURN_LINE = "--- @return tuple[int, int]  the number of keys, and 1\n"
SIGNATURE_ONLY_EDITS = {
    "codes": (ERROR_LINE, ERROR_LINE + "--- @error -3 JobNotInState\n"),
    "returns": (RETURN_LINE, RETURN_LINE.replace("tuple[int, int]", "list[int]")),
}


@pytest.mark.parametrize("part", sorted(SIGNATURE_ONLY_EDITS))
def test_a_changed_code_list_or_return_shape_needs_a_major_bump(tmp_path: Path, part: str) -> None:
    base = release(tmp_path, "base", "1.4.2", sources=TOUCH)
    edit = {"touch-3.lua": SIGNATURE_ONLY_EDITS[part]}
    changed = release(tmp_path, "changed", "2.0.0", edit, sources=TOUCH)
    # What the two manifests say about touch differs in `part` only.
    (before,) = json.loads((base / "build" / "manifest.json").read_bytes())["scripts"]
    (after,) = json.loads((changed / "build" / "manifest.json").read_bytes())["scripts"]
    assert {f for f in ("codes", "returns") if before[f] != after[f]} == {part}
    assert [before[f] for f in ("numKeys", "keys", "argv")] == [
        after[f] for f in ("numKeys", "keys", "argv")
    ]
    assert diff(bundle(base), bundle(changed)) == {
        "added": [],
        "removed": [],
        "bodyChanged": [],
        "signatureChanged": ["touch"],
        "bump": "major",
        "oldVersion": "1.4.2",
        "newVersion": "2.0.0",
        "npmPackage": npm_package("major", "1.4.2", "2.0.0"),
    }
    text = CliRunner().invoke(cli, ["diff", str(base / "build"), str(bundle(changed))])
    assert text.exit_code == 0, text.output
    assert "changed in body only: -\nchanged in signature: touch\n" in text.stdout
    assert "smallest bump: major (1.4.2 -> 2.0.0)" in text.stdout


def test_build_previous_refuses_a_version_too_small(tmp_path: Path) -> None:
    base = release(tmp_path, "base", "1.2.3")
    project = release(tmp_path, "next", "1.2.3", BODY_EDIT)
    shutil.rmtree(project / "build")
    args = [
        "build",
        "--src",
        str(project / "lua_src"),
        "--out",
        str(project / "build"),
        "--no-cache",
        "--previous",
        str(bundle(base)),
    ]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 1
    assert "version 1.2.3 is too small: the changes need a patch bump, 1.2.4 or more" in (
        refused.stderr
    )
    assert "body changed getCounts" in refused.stderr
    assert not (project / "build").exists()
    (project / "pyproject.toml").write_text('[project]\nversion = "1.2.4"\n')
    assert CliRunner().invoke(cli, args).exit_code == 0


def test_verify_reports_and_loads_missing_scripts(
    tmp_path: Path, r: redis.Redis, redis_server: RedisServer
) -> None:
    project = release(tmp_path, "v", "1.0.0")
    url = f"redis://127.0.0.1:{redis_server.port}/0"
    runner = CliRunner()
    missing = runner.invoke(cli, ["verify", "--redis", url, "--release", str(bundle(project))])
    assert missing.exit_code == 1
    node = f"127.0.0.1:{redis_server.port}"
    assert f"{node} getCounts: missing" in missing.stdout
    loaded = runner.invoke(
        cli, ["verify", "--redis", url, "--release", str(project / "build"), "--load"]
    )
    assert loaded.exit_code == 0
    assert f"{node} getCounts: loaded" in loaded.stdout
    again = runner.invoke(
        cli, ["verify", "--redis", url, "--format", "json", "--release", str(bundle(project))]
    )
    assert again.exit_code == 0
    (report,) = json.loads(again.stdout)
    assert report["missing"] == []
    assert "moveToFinished" in report["present"]
    bad = runner.invoke(
        cli, ["verify", "--redis", "redis://127.0.0.1:1/0", "--release", str(project / "build")]
    )
    assert bad.exit_code == 1
    assert "Traceback" not in bad.output


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://alice:s3cret@127.0.0.1:1/0", "redis://alice:***@127.0.0.1:1/0"),
        ("redis://:s3cret@127.0.0.1:1", "redis://:***@127.0.0.1:1"),
        ("redis://127.0.0.1:1/0?password=s3cret&db=0", "redis://127.0.0.1:1/0?password=***&db=0"),
        # Not percent-encoded: redis-py misreads the URL (and names the "port" in its error).
        ("redis://alice:s3c/ret@127.0.0.1:1/0", "redis://alice:***@127.0.0.1:1/0"),
        ("redis://alice:s3cret@127.0.0.1:port/0", "redis://alice:***@127.0.0.1:port/0"),
    ],
)
def test_verify_never_prints_the_password_of_the_url(tmp_path: Path, url: str, shown: str) -> None:
    project = release(tmp_path, "v", "1.0.0", sources=TOUCH)
    for release_path in (project / "build", bundle(project)):
        failed = CliRunner().invoke(cli, ["verify", "--redis", url, "--release", str(release_path)])
        assert failed.exit_code == 1
        assert failed.stderr.startswith(f"Error: {shown}: ")
        assert "s3c" not in failed.output
        assert "Traceback" not in failed.output


def test_verify_refused_by_the_server_hides_the_password(
    tmp_path: Path, r: redis.Redis, redis_server: RedisServer
) -> None:
    project = release(tmp_path, "v", "1.0.0", sources=TOUCH)
    url = f"redis://alice:s3cret@127.0.0.1:{redis_server.port}/0"
    refused = CliRunner().invoke(cli, ["verify", "--redis", url, "--release", str(bundle(project))])
    assert refused.exit_code == 1
    assert f"Error: redis://alice:***@127.0.0.1:{redis_server.port}/0: " in refused.stderr
    assert "s3cret" not in refused.output


def with_file(build: Path, file: str) -> None:
    """Point the manifest of `build` at `file` for its first script, with that file's sha1."""
    manifest = json.loads((build / "manifest.json").read_bytes())
    target = Path(file) if Path(file).is_absolute() else build / file
    manifest["scripts"][0]["file"] = file
    manifest["scripts"][0]["sha1"] = hashlib.sha1(target.read_bytes()).hexdigest()
    (build / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("file", "reason"),
    [
        # The schema's pattern for `file` refuses these before any file is looked at...
        ("../secret.lua", None),
        ("scripts/../../secret.lua", None),
        ("{outside}/secret.lua", None),
        # ...and a name of the right shape that is a symlink out of the release is refused too.
        ("scripts/link-1.lua", "leads outside it through a symlink"),
    ],
)
def test_verify_reads_and_loads_no_file_outside_the_release(
    tmp_path: Path, r: redis.Redis, redis_server: RedisServer, file: str, reason: str | None
) -> None:
    project = release(tmp_path, "v", "1.0.0", sources=TOUCH)
    build = project / "build"
    secret = project / "secret.lua"
    secret.write_text("return 'not part of the release'\n")
    (build / "scripts" / "link-1.lua").symlink_to(secret)
    file = file.format(outside=project)
    with_file(build, file)
    url = f"redis://127.0.0.1:{redis_server.port}/0"
    refused = CliRunner().invoke(cli, ["verify", "--redis", url, "--release", str(build), "--load"])
    assert refused.exit_code == 1
    if reason is None:
        shape = (
            f"Error: {build / 'manifest.json'}: scripts[0].file: {file!r} does not match '^scripts/"
        )
        assert refused.stderr.startswith(shape)
    else:
        assert refused.stderr == (
            f"Error: {build}: the manifest's file {file!r} {reason}; refusing to read it\n"
        )
    assert r.script_exists(hashlib.sha1(secret.read_bytes()).hexdigest()) == [False]


def test_verify_refuses_a_manifest_entry_without_a_string_file(tmp_path: Path) -> None:
    build = release(tmp_path, "v", "1.0.0", sources=TOUCH) / "build"
    manifest = json.loads((build / "manifest.json").read_bytes())
    manifest["scripts"][0]["file"] = 5
    (build / "manifest.json").write_text(json.dumps(manifest))
    refused = CliRunner().invoke(
        cli, ["verify", "--redis", "redis://127.0.0.1:1", "--release", str(build)]
    )
    assert refused.exit_code == 1
    message = "scripts[0].file: 5 is not of type 'string'"
    assert refused.stderr == f"Error: {build / 'manifest.json'}: {message}\n"


def test_verify_checks_every_primary_of_a_cluster(
    tmp_path: Path, rc: redis.cluster.RedisCluster, redis_cluster: RedisCluster
) -> None:
    project = release(tmp_path, "v", "1.0.0")
    url = f"redis://127.0.0.1:{redis_cluster.nodes[0].port}"
    runner = CliRunner()
    missing = runner.invoke(
        cli, ["verify", "--redis", url, "--release", str(project / "build"), "--format", "json"]
    )
    assert missing.exit_code == 1
    reports = json.loads(missing.stdout)
    assert len(reports) == 3
    scripts = len(json.loads((project / "build" / "manifest.json").read_bytes())["scripts"])
    assert scripts > 1
    assert all(len(report["missing"]) == scripts for report in reports)
    loaded = runner.invoke(
        cli,
        [
            "verify",
            "--redis",
            url,
            "--release",
            str(project / "build"),
            "--load",
            "--format",
            "json",
        ],
    )
    assert loaded.exit_code == 0
    assert (
        runner.invoke(
            cli, ["verify", "--redis", url, "--release", str(project / "build")]
        ).exit_code
        == 0
    )


@pytest.fixture
def two_releases(tmp_path: Path) -> Iterator[tuple[ModuleType, ModuleType]]:
    """Wrappers of two releases whose pickup and heartbeat scripts differ in body."""
    edits = {
        "moveToActive-11.lua": ("return picked\n", "return picked -- release two\n"),
        "extendLock-2.lua": ("return 1\n", "return 1 -- release two\n"),
    }
    one = release(tmp_path, "one", "1.0.0", package="emq_release_one")
    two = release(tmp_path, "two", "1.0.1", edits, package="emq_release_two")
    sys.path[:0] = [str(one), str(two)]
    try:
        yield (
            importlib.import_module("emq_release_one.generated"),
            importlib.import_module("emq_release_two.generated"),
        )
    finally:
        sys.path.remove(str(one))
        sys.path.remove(str(two))
        for name in [m for m in sys.modules if m.startswith("emq_release_")]:
            del sys.modules[name]


def test_two_releases_run_side_by_side_in_one_redis(
    two_releases: tuple[ModuleType, ModuleType], r: redis.Redis
) -> None:
    one, two = two_releases
    changed = {s.spec.name for s in two.SCRIPTS} - {
        s.spec.name for s in two.SCRIPTS if s.sha in {t.sha for t in one.SCRIPTS}
    }
    assert changed == {"moveToActive", "extendLock"}
    now = 1_000
    common = {"name": "n", "data": "{}", "opts": {}, "now": now, "dedup_id": ""}
    take = {
        "lock_duration": 30000,
        "now": now,
        "limit_max": 0,
        "limit_duration": 0,
        "concurrency": 0,
    }
    finish = {
        "now": now,
        "outcome": "completed",
        "result": "1",
        "stacktrace": "",
        "jitter": 0.0,
        "fetch_next": False,
        "lock_duration": 1,
        "limit_max": 0,
        "limit_duration": 0,
        "concurrency": 0,
        "max_metrics": 0,
        "backoff_delay": 0,
    }
    for job_id, adder, taker, beater, finisher in (
        ("a", one, two, one, two),
        ("b", two, one, two, one),
    ):
        adder.add_standard_job(r, queue="mail", job_id=job_id, **common)
        assert taker.move_to_active(r, queue="mail", token=job_id, **take)[0] == job_id
        assert beater.extend_lock(r, queue="mail", token=job_id, duration=5000, job_id=job_id) == 1
        assert finisher.move_to_finished(r, queue="mail", job_id=job_id, token=job_id, **finish)[
            0
        ] == ("completed")
    assert one.get_counts(r, queue="mail") == (0, 0, 0, 0, 0, 2, 0, 0)
    # Both bodies of each changed script are loaded at once, each under its own SHA1.
    shas = [s.sha for s in (*one.SCRIPTS, *two.SCRIPTS) if s.spec.name in changed]
    assert len(set(shas)) == 4
    assert all(r.script_exists(*shas))
