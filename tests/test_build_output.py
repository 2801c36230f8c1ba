"""What `build` writes: determinism, the manifest, the bundle, atomic replacement, the cache."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from echomq_scripts import __version__
from echomq_scripts import generated as g
from echomq_scripts.runtime.codes import ERROR_CODES
from echomq_scripts.toolchain.cache import AnalysisCache
from echomq_scripts.toolchain.config import load_config
from echomq_scripts.toolchain.errors import ConfigError, OutputError
from echomq_scripts.toolchain.manifest import to_json_bytes
from echomq_scripts.toolchain.pipeline import build
from echomq_scripts.toolchain.snapshot import take_snapshot
from tests.support.environment import REPO
from tests.support.projects import run_build, run_cli_then

GENERATED_LUA = REPO / "echomq_scripts" / "generated" / "lua"

BUNDLE = f"echomq-scripts-{__version__}.tar.gz"
NPM_PACKAGE = f"echomq-scripts-{__version__}.tgz"  # beside the bundle, not in it


def repo_copy(destination: Path) -> Path:
    """A copy of this repository's sources (lua_src/ and pyproject.toml) at `destination`."""
    destination.mkdir(parents=True)
    shutil.copytree(REPO / "lua_src", destination / "lua_src")
    shutil.copy(REPO / "pyproject.toml", destination)
    return destination


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under root but Python's bytecode, which importing a package may leave there."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def build_in_subprocess(project: Path, cache: Path, env: dict[str, str], *args: str) -> str:
    """`echomq-scripts build ARGS` in a fresh interpreter in `project`; what it printed."""
    return subprocess.run(
        [sys.executable, "-m", "echomq_scripts", "build", "--cache-dir", str(cache), *args],
        cwd=project,
        env={**os.environ, **env},
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def test_two_builds_in_different_places_are_byte_identical(tmp_path: Path) -> None:
    first = repo_copy(tmp_path / "a")
    second = repo_copy(tmp_path / "elsewhere" / "deeper" / "b")
    # Different directories, time zones, umasks, caches, file times and clocks: none may leak
    # into the output.
    build_in_subprocess(first, tmp_path / "cache-a", {"TZ": "UTC"})
    first_done = time.time()
    os.utime(second / "lua_src" / "extendLock-2.lua", (0, 0))
    # The second build starts more than a second after the first ended, so a time stamp of
    # whole seconds taken anywhere in either build (a tar or gzip mtime) differs.
    time.sleep(max(0.0, first_done + 1.1 - time.time()))
    build_in_subprocess(second, tmp_path / "cache-b", {"TZ": "Asia/Kolkata", "LC_ALL": "C"})
    a, b = tree_bytes(first / "build"), tree_bytes(second / "build")
    assert a.keys() == b.keys()
    assert a == b
    assert hashlib.sha256(a[BUNDLE]).hexdigest() == hashlib.sha256(b[BUNDLE]).hexdigest()
    assert str(tmp_path).encode() not in a["manifest.json"]
    # The generated wrappers, too, are a function of the sources alone.
    generated = "echomq_scripts/generated"
    assert tree_bytes(first / generated) == tree_bytes(second / generated)
    assert tree_bytes(first / generated) == tree_bytes(REPO / generated)


def test_manifest_describes_every_script(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    run_build(project / "lua_src", project / "build")
    manifest = json.loads((project / "build" / "manifest.json").read_bytes())
    assert manifest["format"] == 1
    assert manifest["version"] == __version__
    assert manifest["codes"] == [
        {"code": code, "name": name} for code, name in sorted(ERROR_CODES.items(), reverse=True)
    ]
    sources = sorted(p.name for p in (project / "lua_src").glob("*-*.lua"))
    assert sorted(Path(s["file"]).name for s in manifest["scripts"]) == sources
    for script in manifest["scripts"]:
        body = (project / "build" / script["file"]).read_bytes()
        assert script["sha1"] == hashlib.sha1(body).hexdigest()
        assert script["bytes"] == len(body)
        assert script["lines"] == body.count(b"\n")
        assert len(script["keys"]) == script["numKeys"]
        for source in script["sources"]:
            text = (project / "lua_src" / source["path"]).read_bytes()
            assert source["sha256"] == hashlib.sha256(text).hexdigest()
        line_map = json.loads((project / "build" / script["lineMap"]).read_bytes())
        assert len(line_map["lines"]) == script["lines"]
    extend = next(s for s in manifest["scripts"] if s["name"] == "extendLock")
    assert [k["name"] for k in extend["keys"]] == ["lock", "stalled"]
    assert [(a["name"], a["type"]) for a in extend["argv"]] == [
        ("token", "string"),
        ("duration", "int"),
        ("job_id", "string"),
    ]
    assert extend["codes"] == [-2, -6]
    assert extend["returns"]["shape"] == "int"


def test_line_maps_point_every_line_at_its_source(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    run_build(project / "lua_src", project / "build")
    for map_path in (project / "build" / "maps").glob("*.json"):
        line_map = json.loads(map_path.read_bytes())
        body = (project / "build" / line_map["script"]).read_text().split("\n")[:-1]
        for text, (index, line) in zip(body, line_map["lines"], strict=True):
            source = (project / "lua_src" / line_map["sources"][index]).read_text()
            assert source.split("\n")[line - 1] == text


def test_bundle_is_sorted_with_fixed_metadata(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    run_build(project / "lua_src", project / "build")
    data = (project / "build" / BUNDLE).read_bytes()
    assert data[4:8] == b"\0\0\0\0"  # gzip header time
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        assert names == sorted(names)
        prefix = f"echomq-scripts-{__version__}/"
        expected = sorted(
            prefix + p.relative_to(project / "build").as_posix()
            for p in (project / "build").rglob("*")
            if p.is_file() and p.name not in (BUNDLE, NPM_PACKAGE)
        )
        assert names == expected
        for member in members:
            assert (member.mtime, member.uid, member.gid, member.uname, member.gname) == (
                315532800,
                0,
                0,
                "",
                "",
            )
            assert member.mode == 0o644
            extracted = tar.extractfile(member)
            assert extracted is not None
            assert extracted.read() == (project / "build" / member.name[len(prefix) :]).read_bytes()


def test_failed_build_leaves_previous_build_untouched(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    out = project / "build"
    run_build(project / "lua_src", out)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    script = project / "lua_src" / "extendLock-2.lua"
    script.write_text(script.read_text() + "\nleaked = true\n")
    result = run_build(project / "lua_src", out)
    assert result.failed(strict=False)
    assert not result.wrote
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert sorted(p.name for p in project.iterdir()) == [
        "build",
        "echomq_scripts",
        "lua_src",
        "pyproject.toml",
    ]


def test_successful_rebuild_replaces_the_whole_directory(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    out = project / "build"
    run_build(project / "lua_src", out)
    (project / "lua_src" / "getJobState-8.lua").unlink()
    result = run_build(project / "lua_src", out)
    assert result.wrote
    assert not (out / "scripts" / "getJobState-8.lua").exists()
    assert not (out / "maps" / "getJobState-8.json").exists()
    assert sorted(p.name for p in project.iterdir()) == [
        "build",
        "echomq_scripts",
        "lua_src",
        "pyproject.toml",
    ]


def test_unchanged_build_is_not_rewritten(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    run_build(project / "lua_src", project / "build")
    manifest = project / "build" / "manifest.json"
    stamp = manifest.stat().st_mtime_ns
    assert not run_build(project / "lua_src", project / "build").wrote
    assert manifest.stat().st_mtime_ns == stamp


def test_refuses_to_replace_a_directory_it_did_not_write(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    precious = project / "notes" / "todo.txt"
    precious.parent.mkdir()
    precious.write_text("keep me")
    with pytest.raises(OutputError, match="not an echomq-scripts build"):
        run_build(project / "lua_src", project / "notes")
    assert precious.read_text() == "keep me"


@pytest.mark.parametrize("out", [".", "lua_src", "lua_src/build"])
def test_refuses_an_output_directory_overlapping_the_sources(tmp_path: Path, out: str) -> None:
    project = repo_copy(tmp_path / "p")
    with pytest.raises(ConfigError, match="overlaps the source directory"):
        run_build(project / "lua_src", project / out)
    assert (project / "lua_src" / "extendLock-2.lua").is_file()


def test_noop_rebuild_analyses_nothing(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    cache = tmp_path / "cache"
    first = run_build(project / "lua_src", project / "build", cache)
    count = len(list((project / "lua_src").glob("*-*.lua")))
    assert (first.analysed, first.from_cache) == (count, 0)
    second = run_build(project / "lua_src", project / "build", cache)
    assert (second.analysed, second.from_cache) == (0, count)
    script = project / "lua_src" / "extendLock-2.lua"
    script.write_text(script.read_text() + "-- a comment changes the body\n")
    third = run_build(project / "lua_src", project / "build", cache)
    assert (third.analysed, third.from_cache) == (1, count - 1)


def test_noop_rebuild_loads_no_parser(tmp_path: Path) -> None:
    """An unchanged rebuild loads neither the parsers nor the checker nor the emitter."""
    project = repo_copy(tmp_path / "p")
    cache = tmp_path / "cache"
    build_in_subprocess(project, cache, {})
    heavy = (
        "tree_sitter",
        "lupa",
        "echomq_scripts.toolchain.analyse",
        "echomq_scripts.toolchain.output",
    )
    *output, loaded = run_cli_then(
        project,
        ["build", "--cache-dir", str(cache)],
        f"sorted(m for m in {heavy!r} if m in sys.modules)",
    )
    assert loaded == "[]"
    count = len(list((project / "lua_src").glob("*-*.lua")))
    assert f"0 analysed, {count} from cache" in "\n".join(output)


def test_damaged_cache_entries_are_ignored(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    cache = tmp_path / "cache"
    run_build(project / "lua_src", project / "build", cache)
    for entry in cache.glob("*.json"):
        entry.write_text("{not json")
    result = run_build(project / "lua_src", project / "build", cache)
    assert (result.analysed, result.from_cache) == (len(list(cache.glob("*.json"))), 0)
    assert not result.failed(strict=True)


def test_an_edited_analyser_does_not_reuse_the_cache(tmp_path: Path) -> None:
    """Cached facts are keyed by the analyser's code as well as the script: a build by an
    edited analyser analyses every script again, and then finds its own entries."""
    project = repo_copy(tmp_path / "p")
    cache = tmp_path / "cache"
    count = len(list((project / "lua_src").glob("*-*.lua")))
    tool = tmp_path / "tool"
    shutil.copytree(
        REPO / "echomq_scripts",
        tool / "echomq_scripts",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    analyse = tool / "echomq_scripts" / "toolchain" / "analyse.py"
    analyse.write_text(analyse.read_text() + "# edited: the analyser's fingerprint changes\n")

    # Each build writes its own output directory: none is a replay of another's stamp.
    edited = {"PYTHONPATH": str(tool)}
    first = build_in_subprocess(project, cache, {}, "--out", "build-1")
    assert first == f"wrote build-1 ({count} scripts, {count} analysed, 0 from cache)\n"
    second = build_in_subprocess(project, cache, edited, "--out", "build-2")
    assert second == f"wrote build-2 ({count} scripts, {count} analysed, 0 from cache)\n"
    third = build_in_subprocess(project, cache, edited, "--out", "build-3")
    assert third == f"wrote build-3 ({count} scripts, 0 analysed, {count} from cache)\n"


def test_the_build_uses_the_snapshot_it_was_given(tmp_path: Path) -> None:
    """What a build writes comes from one read of the sources, whatever the disk says later."""
    project = repo_copy(tmp_path / "p")
    src = project / "lua_src"
    snapshot = take_snapshot(src)
    # getCounts-8 includes nothing, so its built body is its source as the snapshot read it.
    (src / "getCounts-8.lua").write_text("this is not Lua\n")
    result = build(load_config(src), AnalysisCache(None), project / "build", snapshot)
    assert not result.failed(strict=True)
    built = (project / "build" / "scripts" / "getCounts-8.lua").read_bytes()
    assert built == snapshot["getCounts-8.lua"]


def test_a_directory_with_a_foreign_manifest_is_not_replaced(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    web = project / "web"
    web.mkdir()
    (web / "manifest.json").write_text('{"name": "my web app"}')
    (web / "index.html").write_text("<p>mine</p>")
    with pytest.raises(OutputError, match="not an echomq-scripts build"):
        run_build(project / "lua_src", web)
    assert (web / "index.html").read_text() == "<p>mine</p>"


def test_a_linked_output_directory_is_built_through_the_link(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    (tmp_path / "real-build").mkdir()
    (project / "build").symlink_to(tmp_path / "real-build")
    run_build(project / "lua_src", project / "build")
    script = project / "lua_src" / "extendLock-2.lua"
    script.write_text(script.read_text() + "-- rebuilt\n")
    assert run_build(project / "lua_src", project / "build").wrote
    assert (project / "build").is_symlink()
    assert (
        (tmp_path / "real-build" / "scripts" / "extendLock-2.lua")
        .read_text()
        .endswith("-- rebuilt\n")
    )
    assert sorted(p.name for p in project.iterdir()) == [
        "build",
        "echomq_scripts",
        "lua_src",
        "pyproject.toml",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p", "real-build"]


def build_with_timeout(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`echomq-scripts build ARGS` in `project`, stopped after a minute: a build that hangs
    fails the test instead of hanging it."""
    return subprocess.run(
        [sys.executable, "-m", "echomq_scripts", "build", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("cache", [True, False], ids=["replay", "no-cache"])
def test_a_named_pipe_in_the_output_directory_is_refused_not_read(
    tmp_path: Path, cache: bool
) -> None:
    project = repo_copy(tmp_path / "p")
    flags = ["--cache-dir", str(tmp_path / "cache")] if cache else ["--no-cache"]
    assert build_with_timeout(project, *flags).returncode == 0
    os.mkfifo(project / "build" / "pipe")  # opening it to read would wait for a writer
    done = build_with_timeout(project, *flags)
    assert done.returncode == 1
    assert done.stderr == (
        f"Error: {project / 'build'}: refusing to read 'pipe': it is a named pipe, not a regular"
        " file\n"
    )
    assert (project / "build" / "pipe").exists()


def test_every_code_of_the_table_is_returned_by_some_script() -> None:
    """The closed table of failure codes, -1 to -11: each one is in some script's header (whose
    code returns it), and docs/protocol.md names a script for it."""
    returned = set()
    for script in g.SCRIPTS:
        body = (GENERATED_LUA / f"{script.spec.script_id}.lua").read_text()
        returned |= {c for c in script.spec.codes if re.search(rf"return \(?{c}\b", body)}
    assert set(ERROR_CODES) - returned == set()
    table = (REPO / "docs" / "protocol.md").read_text().split("\n## Failure codes\n", 1)[1]
    rows = table.split("\n\n", 2)[1].splitlines()[2:]
    assert len(rows) == len(ERROR_CODES)
    for row in rows:
        code, _name, returned_by = (cell.strip() for cell in row.strip("|").split("|"))
        assert "none" not in returned_by, f"code {code} is returned by no script: {row}"
        assert re.search(r"`\w+-\d+`", returned_by), row


BULLMQ_V6_2_SCRIPTS = """
addDelayedJob-6 addJobScheduler-11 addLog-2 addParentJob-6 addPrioritizedJob-9 addStandardJob-9
changeDelay-4 changePriority-7 cleanJobsInSet-3 drain-5 extendLock-2 extendLocks-1 getCounts-1
getCountsPerPriority-2 getDependencyCounts-4 getJobScheduler-1 getJobs-1 getMetrics-2
getRanges-1 getRateLimitTtl-2 getState-8 getStateV2-8 isFinished-3 isJobInList-1 isMaxed-2
moveJobFromActiveToWait-9 moveJobsToWait-8 moveStalledJobsToWait-9 moveToActive-11
moveToDelayed-12 moveToFinished-14 moveToWaitingChildren-7 obliterate-2 paginate-1 pause-7
promote-9 releaseLock-1 removeChildDependency-1 removeDeduplicationKey-1 removeJob-2
removeJobScheduler-3 removeOrphanedJobs-1 removeUnprocessedChildren-2 reprocessJob-8 retryJob-11
saveStacktrace-1 updateData-1 updateJobScheduler-12 updateProgress-3""".split()


def test_protocol_md_names_a_counterpart_for_each_of_bullmqs_scripts() -> None:
    """docs/protocol.md, "BullMQ's scripts": one row for each of BullMQ v6.2's 49 scripts, each
    naming a script of lua_src; every script of lua_src is in the table or in the list of those
    BullMQ's clients do without."""
    text = (REPO / "docs" / "protocol.md").read_text()
    section = text.split("\n## BullMQ's scripts\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([\w-]+)` \| `([\w-]+)` \| (.+) \|$", section, re.M)
    assert [bullmq for bullmq, _, _ in rows] == BULLMQ_V6_2_SCRIPTS
    ours = {p.stem for p in (REPO / "lua_src").glob("*-*.lua")}
    assert {echomq for _, echomq, _ in rows} <= ours
    extra = set(re.findall(r"`([\w]+-\d+)`", section.split("\n\n")[-1]))
    assert ours == {echomq for _, echomq, _ in rows} | extra


def test_modes_are_0644_and_0755_whatever_the_umask(tmp_path: Path) -> None:
    project = repo_copy(tmp_path / "p")
    subprocess.run(
        [sys.executable, "-m", "echomq_scripts", "build", "--no-cache"],
        cwd=project,
        check=True,
        capture_output=True,
        umask=0o077,
    )
    for root in (project / "build", project / "echomq_scripts" / "generated"):
        modes = {
            p.relative_to(project).as_posix(): p.stat().st_mode & 0o777
            for p in [root, *root.rglob("*")]
            if "__pycache__" not in p.parts
        }
        expected = {name: 0o755 if (project / name).is_dir() else 0o644 for name in modes}
        assert modes == expected


@pytest.mark.parametrize("how", ["unwritable", "under-a-file"])
def test_a_build_failing_on_the_package_leaves_every_output_as_it_was(
    tmp_path: Path, how: str
) -> None:
    project = repo_copy(tmp_path / "p")
    command = [sys.executable, "-m", "echomq_scripts", "build", "--no-cache"]
    subprocess.run(command, cwd=project, check=True, capture_output=True)
    before = tree_bytes(project / "build")
    package = project / "echomq_scripts" / "generated"
    generated = tree_bytes(package)
    if how == "unwritable":
        if os.geteuid() == 0:
            pytest.skip("root writes into a directory whatever its mode")
        package.parent.chmod(0o555)
    else:
        # A path under a regular file cannot be created, not even by root.
        (project / "not_a_directory").write_text("")
        settings = project / "pyproject.toml"
        settings.write_text(
            settings.read_text().replace(
                '"echomq_scripts/generated"', '"not_a_directory/generated"'
            )
        )
    script = project / "lua_src" / "extendLock-2.lua"
    script.write_text(script.read_text() + "\n-- changed\n")
    try:
        failed = subprocess.run(command, cwd=project, capture_output=True, text=True)
    finally:
        package.parent.chmod(0o755)
    assert failed.returncode == 1
    assert failed.stderr.startswith("Error: ")
    assert failed.stderr.count("\n") == 1
    assert tree_bytes(project / "build") == before
    assert tree_bytes(package) == generated
    # No temporary directory is left beside either output.
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2", "two-renames"])
def test_a_failed_swap_puts_back_the_outputs_swapped_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    from echomq_scripts.toolchain import output

    if not exchange:
        monkeypatch.setattr(output, "_exchange", lambda first, second: False)
    always: output.Ownership = (lambda found: True, "anything")
    first, second = tmp_path / "first", tmp_path / "second"
    output.write_outputs([(first, {"a": b"old"}, always), (second, {"b": b"old"}, always)])
    real_swap = output._Swap.swap

    def swap(self: output._Swap) -> None:
        if self.out == second:
            raise PermissionError("refused")
        real_swap(self)

    monkeypatch.setattr(output._Swap, "swap", swap)
    with pytest.raises(OutputError, match="second: cannot write the build: refused"):
        output.write_outputs(
            [(first, {"a": b"new", "x/y": b"new"}, always), (second, {"b": b"new"}, always)]
        )
    assert (tree_bytes(first), tree_bytes(second)) == ({"a": b"old"}, {"b": b"old"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first", "second"]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=_JSON, indent=st.sampled_from([None, 1, 2, 4]))
def test_json_bytes_are_what_json_dumps_gives(value: object, indent: int | None) -> None:
    """The manifest's own indented encoder (fast, for cold builds) writes the standard
    library's bytes exactly: sorted keys, no ASCII escaping, floats and empty containers."""
    separators = None if indent else (",", ":")
    expected = json.dumps(
        value, indent=indent, sort_keys=True, ensure_ascii=False, separators=separators
    )
    assert to_json_bytes(value, indent) == (expected + "\n").encode("utf-8")


def test_json_bytes_with_keys_that_are_not_strings() -> None:
    """Keys json.dumps converts (ints) or refuses (mixed types) are left to it."""
    assert to_json_bytes({2: "b", 1: "a"}) == b'{\n  "1": "a",\n  "2": "b"\n}\n'
    with pytest.raises(TypeError):
        to_json_bytes({1: "a", "b": 2})
