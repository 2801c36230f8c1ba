"""A foreign tree: BullMQ's published scripts (npm package `bullmq`, `dist/cjs/commands`) build
with `--ignore key-slot` alone, every built script's SHA1 is the one Redis gives it, each is the
text BullMQ's own loader makes of it (`dist/cjs/scripts`) but for empty lines, and one whose
includes need them pasted in place runs.

The package is fetched once with `npm pack` into pytest's cache directory and checked against
its pinned sha256 (tests/support/bullmq_package.py, which also says why each code in IGNORED is
ignored); later runs need neither npm nor the network. Without npm (and without that cached
copy) the tests are skipped, or fail in CI (`unavailable`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner, Result

from echomq_scripts.toolchain.cli import cli
from tests.support.bullmq_package import (
    CACHE_NAME,
    IGNORED,
    PackageDamaged,
    PackageUnavailable,
    loader_output,
    unpack_commands,
)
from tests.support.environment import unavailable


@pytest.fixture(scope="module")
def bullmq_commands(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """BullMQ's `dist/cjs/commands`, unpacked into a fresh directory."""
    cache = getattr(request.config, "cache", None)
    directory = cache.mkdir(CACHE_NAME) if cache is not None else tmp_path_factory.mktemp("npm")
    try:
        return unpack_commands(directory, tmp_path_factory.mktemp("bullmq"))
    except PackageUnavailable as exc:
        unavailable("npm", str(exc))
    except PackageDamaged as exc:
        pytest.fail(str(exc))


def test_bullmq_tree_is_what_we_think(bullmq_commands: Path) -> None:
    assert len(list(bullmq_commands.glob("*.lua"))) == 64
    assert len(list((bullmq_commands / "includes").glob("*.lua"))) == 72


def test_bullmq_checks_clean_but_for_key_slot(bullmq_commands: Path) -> None:
    result = CliRunner().invoke(
        cli, ["check", "--src", str(bullmq_commands), "--no-cache", "--ignore", "key-slot"]
    )
    assert result.exit_code == 0, result.output
    assert [line for line in result.stdout.splitlines() if ": error: " in line] == []
    # A headerless script that takes a key only to route the call is a warning (keys-arity).
    relays = ["relayAckInbox", "relayReadInbox", "relayRemoveEndpoint", "relayTrimInbox"]
    assert [line for line in result.stdout.splitlines() if line.endswith("[keys-arity]")] == [
        f"{bullmq_commands}/{name}-1.lua:1:1: warning: the filename declares 1 key but the code"
        " reads at most none of them [keys-arity]"
        for name in relays
    ]


@pytest.fixture(scope="module")
def bullmq_build(
    bullmq_commands: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Result]:
    """Our build of BullMQ's tree, ignoring only IGNORED's codes: its directory, and the run."""
    out = tmp_path_factory.mktemp("bullmq-build") / "build"
    options = ["--out", str(out), "--no-cache", "--ignore", ",".join(IGNORED)]
    return out, CliRunner().invoke(cli, ["build", "--src", str(bullmq_commands), *options])


def test_bullmq_builds_and_redis_agrees_on_every_sha1(
    bullmq_build: tuple[Path, Result], r: redis.Redis
) -> None:
    out, result = bullmq_build
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == f"wrote {out} (64 scripts, 64 analysed, 0 from cache)"
    scripts = json.loads((out / "manifest.json").read_bytes())["scripts"]
    assert len(scripts) == 64
    for script in scripts:
        assert r.script_load((out / script["file"]).read_bytes()) == script["sha1"], script["name"]


def test_bullmq_removes_unprocessed_children_in_our_build(
    bullmq_build: tuple[Path, Result], r: redis.Redis
) -> None:
    # includes/removeJobWithChildren.lua declares `local rcall = redis.call` above its own
    # directives, whose files call rcall: it works only when each include is pasted in place
    # (docs/authoring.md#includes). Before, this build failed at run time ("Script attempted to
    # access nonexistent global variable 'rcall'").
    out, result = bullmq_build
    assert result.exit_code == 0, result.output
    # BullMQ's key layout: a job's hash is prefix + id, its children's keys are members of
    # `<job key>:dependencies`, and a waiting job's id is in `<prefix>wait`.
    prefix = "bull:q:"
    r.hset(f"{prefix}parent", mapping={"name": "parent", "data": "{}"})
    r.hset(
        f"{prefix}child", mapping={"name": "child", "data": "{}", "parentKey": f"{prefix}parent"}
    )
    r.rpush(f"{prefix}wait", "child")
    r.sadd(f"{prefix}parent:dependencies", f"{prefix}child")
    script = (out / "scripts" / "removeUnprocessedChildren-2.lua").read_text(encoding="utf-8")
    r.eval(script, 2, f"{prefix}parent", f"{prefix}meta", prefix, "parent")
    assert r.exists(f"{prefix}child") == 0
    assert r.lrange(f"{prefix}wait", 0, -1) == []
    assert r.exists(f"{prefix}parent:dependencies") == 0
    assert r.hget(f"{prefix}parent", "name") == b"parent"
    assert [fields for _, fields in r.xrange(f"{prefix}events") or []] == [
        {b"event": b"removed", b"jobId": b"child", b"prev": b"wait"}
    ]


def test_bullmq_scripts_are_laid_out_as_bullmq_lays_them_out(
    bullmq_commands: Path, bullmq_build: tuple[Path, Result]
) -> None:
    # BullMQ's own build (dist/cjs/scripts) also drops its empty lines; ours keeps them, so a
    # line number is the source's. Apart from those, every script is the same text.
    out, result = bullmq_build
    assert result.exit_code == 0, result.output

    def without_empty_lines(text: str) -> list[str]:
        return [line for line in text.splitlines() if line.strip()]

    modules = sorted((bullmq_commands.parent / "scripts").glob("*-*.js"))
    assert len(modules) == 64
    for module in modules:
        ours = (out / "scripts" / f"{module.stem}.lua").read_text(encoding="utf-8")
        theirs = loader_output(module)
        assert without_empty_lines(ours) == without_empty_lines(theirs), module.stem
