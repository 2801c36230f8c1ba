"""Damaged and crafted releases: `diff` and `verify` refuse each in one line naming the file and
the problem, never with a traceback, never with click's bare "Aborted!", and never by reading
more than a bound into memory.

Each case was reproduced before its fix: a manifest of the wrong shape raised TypeError, one
nested 100000 lists deep RecursionError; a bundle cut in half printed only "Aborted!"; verify
read every bundle member whole, whatever size its header claimed; and on a cluster node that
serves no slots redis-py's RedisClusterException (not a RedisError) escaped as a traceback.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from echomq_scripts.toolchain import release as release_module
from echomq_scripts.toolchain.cli import cli
from tests.support.environment import FIXTURES, redis_binary
from tests.support.projects import run_build
from tests.support.redis_server import RedisServer

TOP = "echomq-scripts-1.0.0"
SCRIPT = "scripts/touch-3.lua"
NOWHERE = "redis://127.0.0.1:1"  # never reached: each release here is refused before


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build directory of the one-script fixture project at version 1.0.0; never changed."""
    project = tmp_path_factory.mktemp("release")
    shutil.copytree(FIXTURES / "projects" / "clean" / "lua_src", project / "lua_src")
    (project / "pyproject.toml").write_text('[project]\nversion = "1.0.0"\n')
    result = run_build(project / "lua_src", project / "build")
    assert not result.failed(strict=False), result.diagnostics
    return project / "build"


def diff(path: Path) -> Result:
    return CliRunner().invoke(cli, ["diff", str(path), str(path)])


def verify(path: Path, url: str = NOWHERE) -> Result:
    return CliRunner().invoke(cli, ["verify", "--redis", url, "--release", str(path)])


def refused(done: Result, message: str) -> None:
    """`done` exited 1 with exactly `Error: message` on one line."""
    assert (done.exit_code, done.stderr) == (1, f"Error: {message}\n"), done.output


def manifest_of(built: Path) -> dict[str, Any]:
    return dict(json.loads((built / "manifest.json").read_bytes()))


def edited(manifest: dict[str, Any], path: tuple[str | int, ...], value: object) -> str:
    """The manifest with the value at `path` replaced, as JSON."""
    *parents, last = path
    place: Any = manifest
    for part in parents:
        place = place[part]
    place[last] = value
    return json.dumps(manifest)


# What the reader says, after the file's name, for each wrong shape.
SHAPES: list[tuple[str, Callable[[dict[str, Any]], str], str]] = [
    (
        "script-not-object",
        lambda m: edited(m, ("scripts", 0), 1),
        "scripts[0]: 1 is not of type 'object'",
    ),
    ("scripts-not-list", lambda m: edited(m, ("scripts",), 5), "scripts: 5 is not of type 'array'"),
    (
        "key-name-not-string",
        lambda m: edited(m, ("scripts", 0, "keys", 0, "name"), 5),
        "scripts[0].keys[0].name: 5 is not of type 'string'",
    ),
    (
        "file-not-string",
        lambda m: edited(m, ("scripts", 0, "file"), 5),
        "scripts[0].file: 5 is not of type 'string'",
    ),
    (
        "empty-entry",
        lambda m: edited(m, ("scripts", 0), {}),
        "scripts[0]: 'name' is a required property",
    ),
    ("bare", lambda m: '{"format":1,"scripts":[1]}', "'version' is a required property"),
    ("list", lambda m: "[{}]", "not a format 1 echomq-scripts manifest"),
    (
        "nested-deep",
        lambda m: "[" * 100_000 + "]" * 100_000,
        "not a manifest: its JSON is nested too deeply",
    ),
    (
        "nested-deep-inside",
        lambda m: edited(m, ("scripts", 0), "@").replace('"@"', "[" * 100_000 + "]" * 100_000),
        "not a manifest: its JSON is nested too deeply",
    ),
    (
        # Nested within the parser's reach: the value is shown short.
        "nested-shallow",
        lambda m: edited(m, ("scripts", 0), "@").replace('"@"', "[" * 500 + "]" * 500),
        "scripts[0]: [[[[[[[...]]]]]]] is not of type 'object'",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), [(s[1], s[2]) for s in SHAPES], ids=[s[0] for s in SHAPES]
)
def test_a_manifest_of_the_wrong_shape_is_refused_by_its_json_path(
    built: Path, tmp_path: Path, text: Callable[[dict[str, Any]], str], message: str
) -> None:
    path = tmp_path / "build" / "manifest.json"
    path.parent.mkdir()
    path.write_text(text(manifest_of(built)))
    refused(diff(path), f"{path}: {message}")
    refused(diff(path.parent), f"{path}: {message}")
    refused(verify(path.parent), f"{path}: {message}")
    with tarfile.open(tmp_path / "shape.tar.gz", "w:gz") as tar:
        tar.add(path, f"{TOP}/manifest.json")
    refused(diff(tmp_path / "shape.tar.gz"), f"{tmp_path / 'shape.tar.gz'}: {message}")


def test_build_previous_checks_the_manifest_it_reads_too(built: Path, tmp_path: Path) -> None:
    previous = tmp_path / "manifest.json"
    previous.write_text(edited(manifest_of(built), ("scripts",), 5))
    project = tmp_path / "next"
    (project / "lua_src").mkdir(parents=True)
    (project / "lua_src" / "touch-3.lua").write_text("return 1\n")
    src, out = str(project / "lua_src"), str(project / "build")
    done = CliRunner().invoke(
        cli, ["build", "--src", src, "--out", out, "--previous", str(previous)]
    )
    refused(done, f"{previous}: scripts: 5 is not of type 'array'")


def bundle_of(built: Path) -> Path:
    return built / f"{TOP}.tar.gz"


def test_a_bundle_cut_short_is_named_not_aborted(built: Path, tmp_path: Path) -> None:
    data = bundle_of(built).read_bytes()
    cut = tmp_path / f"{TOP}.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    for done in (diff(cut), verify(cut)):
        assert done.exit_code == 1
        assert done.stderr.startswith(
            f"Error: {cut}: cannot read the bundle (damaged or cut short?): "
        )
        assert done.stderr.count("\n") == 1
        assert "Aborted!" not in done.output


def raw_member(name: str, data: bytes = b"", **fields: Any) -> bytes:
    """A tar member, its header (with `fields` set on it) and its data, as tar writes them."""
    info = tarfile.TarInfo(f"{TOP}/{name}")
    info.size = len(data)
    for field, value in fields.items():
        setattr(info, field, value)
    return info.tobuf(tarfile.GNU_FORMAT) + data + b"\0" * (-len(data) % tarfile.BLOCKSIZE)


def crafted(
    tmp_path: Path, originals: dict[str, bytes], *raw: bytes, replace: str | None = None
) -> Path:
    """A bundle of the `originals` (but `replace`), then the members `raw`."""
    files = b"".join(raw_member(n, d) for n, d in originals.items() if n != replace)
    path = tmp_path / f"{TOP}.tar.gz"
    path.write_bytes(gzip.compress(files + b"".join(raw) + b"\0" * 2 * tarfile.BLOCKSIZE))
    return path


@pytest.fixture
def originals(built: Path) -> dict[str, bytes]:
    """The fixture's bundle's files by their path inside its top directory."""
    with tarfile.open(bundle_of(built)) as tar:
        return {
            m.name.partition("/")[2]: tar.extractfile(m).read()  # type: ignore[union-attr]
            for m in tar.getmembers()
        }


@pytest.mark.parametrize(
    ("fields", "kind"),
    [
        ({"type": tarfile.SYMTYPE, "linkname": "/etc/passwd"}, "symlink"),
        ({"type": tarfile.LNKTYPE, "linkname": f"{TOP}/manifest.json"}, "hard link"),
        ({"type": tarfile.FIFOTYPE}, "special file"),
    ],
)
def test_a_bundle_with_a_link_is_refused(
    tmp_path: Path, originals: dict[str, bytes], fields: dict[str, Any], kind: str
) -> None:
    bundle = crafted(tmp_path, originals, raw_member("maps/extra.json", **fields))
    message = (
        f"{bundle}: member '{TOP}/maps/extra.json' is a {kind}; a release holds regular files only"
    )
    refused(diff(bundle), message)
    refused(verify(bundle), message)


LIMIT = release_module.MAX_FILE_BYTES


def test_a_member_whose_header_claims_a_huge_size_is_refused_unread(
    tmp_path: Path, originals: dict[str, bytes]
) -> None:
    # 2.5 GB by its header, the last member; the archive itself is a few kilobytes.
    huge = raw_member("manifest.json", size=2_500_000_000)
    bundle = crafted(tmp_path, originals, huge, replace="manifest.json")
    message = (
        f"{bundle}: member '{TOP}/manifest.json' is larger than {LIMIT} bytes; refusing to read it"
    )
    refused(diff(bundle), message)
    refused(verify(bundle), message)


def test_a_big_member_is_refused_past_the_bound(
    tmp_path: Path, originals: dict[str, bytes]
) -> None:
    # Zeros: 16 MiB of them compress to about 16 KB.
    big = raw_member(SCRIPT, bytes(LIMIT + 1))
    bundle = crafted(tmp_path, originals, big, replace=SCRIPT)
    assert bundle.stat().st_size < 100_000
    refused(
        verify(bundle),
        f"{bundle}: member '{TOP}/{SCRIPT}' is larger than {LIMIT} bytes; refusing to read it",
    )
    # A member the manifest does not name is not read at all, whatever its size.
    other = crafted(tmp_path, originals, raw_member("notes.txt", bytes(LIMIT + 1)))
    assert diff(other).exit_code == 0


def test_a_big_file_in_a_build_directory_is_refused_past_the_bound(
    built: Path, tmp_path: Path
) -> None:
    build = tmp_path / "build"
    (build / "scripts").mkdir(parents=True)
    manifest = build / "manifest.json"
    manifest.write_bytes((built / "manifest.json").read_bytes())
    (build / SCRIPT).write_bytes(bytes(LIMIT + 1))
    refused(verify(build), f"{build / SCRIPT}: larger than {LIMIT} bytes; refusing to read it")
    manifest.write_bytes(b" " * (LIMIT + 1))
    refused(diff(build), f"{manifest}: larger than {LIMIT} bytes; refusing to read it")


def test_a_bundle_of_too_many_members_is_refused(
    tmp_path: Path, originals: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(release_module, "MAX_BUNDLE_MEMBERS", 4)
    bundle = crafted(tmp_path, originals, raw_member("a.txt"))
    refused(diff(bundle), f"{bundle}: more than 4 members; not an echomq-scripts bundle")


@pytest.fixture
def slotless_node() -> Iterator[RedisServer]:
    """A cluster-enabled server that belongs to no cluster: it serves none of the slots."""
    node = RedisServer(redis_binary(), cluster_bus=True).start(
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"
    )
    try:
        yield node
    finally:
        node.stop()


def test_verify_on_a_cluster_that_serves_no_slots_says_so(
    built: Path, slotless_node: RedisServer
) -> None:
    url = f"redis://127.0.0.1:{slotless_node.port}"
    done = verify(built, url)
    assert done.exit_code == 1, done.output
    assert done.stderr.startswith(f"Error: {url}: All slots are not covered"), done.output
    assert "Traceback" not in done.output


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_named_pipe_in_a_build_directory_is_refused_unopened(built: Path, tmp_path: Path) -> None:
    """Opened to read, a named pipe waits for a writer for ever: each reader refuses it first.
    Run in a subprocess, so that a regression fails on the timeout instead of hanging the run."""
    build = tmp_path / "build"
    (build / "scripts").mkdir(parents=True)
    manifest = build / "manifest.json"
    manifest.write_bytes((built / "manifest.json").read_bytes())
    os.mkfifo(build / SCRIPT)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "echomq_scripts", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    done = run("verify", "--redis", NOWHERE, "--release", str(build))
    message = "it is a named pipe, not a regular file; refusing to read it"
    assert (done.returncode, done.stderr) == (1, f"Error: {build / SCRIPT}: {message}\n")
    manifest.unlink()
    os.mkfifo(manifest)
    done = run("diff", str(build), str(build))
    assert (done.returncode, done.stderr) == (1, f"Error: {manifest}: {message}\n")
