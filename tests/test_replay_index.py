"""The replay's file index (fileindex.py): a file whose stat is unchanged is not read again, and
yet no change the build would see is missed: an edit that puts the size and the mtime back, a
file written too recently to trust its stat, a file added to or removed from the outputs, a named
pipe."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from echomq_scripts.toolchain import cache, fileindex, snapshot
from echomq_scripts.toolchain.fileindex import FileIndex, load_entries
from echomq_scripts.toolchain.replay import recorded_replay
from tests.support.projects import copy_fixture

LATER = 3_600 * 10**9  # an hour: every file of the test is then old enough to be trusted


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fixture project "locals", built once by the console script, which recorded its
    command line in the test's own default cache directory."""
    monkeypatch.delenv("ECHOMQ_SCRIPTS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = copy_fixture("locals", tmp_path)
    monkeypatch.chdir(root)
    built = subprocess.run(
        [sys.executable, "-m", "echomq_scripts", *ARGV], capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    return root


ARGV = ["build", "--cache-dir", "../cache"]


def replay(monkeypatch: pytest.MonkeyPatch, later: int = LATER) -> tuple[bool, int]:
    """The console script's replay in this process, its clock `later` ahead: whether it
    answered, and how many files it read."""
    reads: list[str] = []
    real_read = snapshot.read_regular

    def reading(path: str, name: str, most: int = -1) -> bytes:
        reads.append(path)
        return real_read(path, name, most)

    now = time.time_ns() + later
    with monkeypatch.context() as patch:
        patch.setattr(fileindex, "read_regular", reading)
        patch.setattr(time, "time_ns", lambda: now)
        cache._fingerprints.clear()
        found = recorded_replay(os.getcwd(), ARGV)
    cache._fingerprints.clear()
    return found is not None, len(reads)


def rewrite_keeping_stat(path: Path, data: bytes) -> None:
    """Write `data` (as long as what `path` holds) and put its mtime and atime back."""
    before = path.stat()
    assert len(data) == before.st_size
    path.write_bytes(data)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def test_an_unchanged_tree_is_replayed_without_reading_it(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered, first = replay(monkeypatch)
    assert answered
    assert first > 10  # the sources, the outputs, the tool's code: all read once
    assert replay(monkeypatch) == (True, 0)


def test_files_too_young_to_trust_are_read_on_every_run(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # By the real clock every file of the project was written a moment ago: none is trusted.
    assert replay(monkeypatch, later=0)[0]
    answered, again = replay(monkeypatch, later=0)
    assert answered
    assert again >= len(list(Path("build").rglob("*.json")))
    # The index keeps no entry for them.
    index = FileIndex(now_ns=time.time_ns())
    index.tree_hashes("lua_src")
    assert index.entries == {}


@pytest.mark.parametrize("where", ["lua_src/locals-1.lua", "build/scripts/locals-1.lua"])
def test_an_edit_that_keeps_size_and_mtime_is_seen_by_its_ctime(
    project: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    assert replay(monkeypatch)[0]
    path = Path(where)
    original = path.read_bytes()
    # The build took longer than a tick of the file system's clock: this write's ctime is
    # later than the one the index holds.
    rewrite_keeping_stat(path, original.replace(b"local", b"LOCAL", 1))
    assert replay(monkeypatch)[0] is False
    rewrite_keeping_stat(path, original)  # the bytes of the build again: the stamp holds
    assert replay(monkeypatch)[0] is True


def test_an_edit_in_the_same_tick_as_the_recorded_stat_is_seen(tmp_path: Path) -> None:
    """A file written within the clock's tick of its recorded stat can have the same stat after
    another write of the same size: its entry is never kept, so it is read again."""
    path = tmp_path / "racy.lua"
    path.write_bytes(b"return 1\n")
    first = FileIndex(now_ns=time.time_ns())  # the run begins as the file is written
    old = first.source_hash(str(path), "racy.lua")
    assert first.entries == {}
    path.write_bytes(b"return 2\n")
    later = FileIndex(load_entries(first.dumps()), now_ns=time.time_ns())
    assert later.source_hash(str(path), "racy.lua") not in (None, old)
    # Once the file is old enough, its entry is kept and trusted.
    settled = FileIndex(now_ns=time.time_ns() + LATER)
    new = settled.source_hash(str(path), "racy.lua")
    trusted = FileIndex(load_entries(settled.dumps()), now_ns=time.time_ns() + LATER)
    assert trusted.source_hash(str(path), "racy.lua") == new
    assert trusted.read == 0


@pytest.mark.parametrize("change", ["removed", "added", "added-empty", "fifo"])
def test_an_output_file_added_or_removed_is_seen(
    project: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    assert replay(monkeypatch)[0]
    assert replay(monkeypatch) == (True, 0)
    if change == "removed":
        Path("build/maps/locals-1.json").unlink()
    elif change == "added":
        Path("build/scripts/extra-1.lua").write_text("return 1\n")
    elif change == "added-empty":
        Path("build/maps/more").mkdir()
        Path("build/maps/more/x").write_bytes(b"")
    else:
        os.mkfifo("build/scripts/pipe-1.lua")  # never opened: a hang would fail the test
    assert replay(monkeypatch)[0] is False


def test_a_source_file_added_or_removed_is_seen(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert replay(monkeypatch)[0]
    Path("lua_src/includes/spare.lua").write_text("-- nothing\n")
    assert replay(monkeypatch)[0] is False
    Path("lua_src/includes/spare.lua").unlink()
    assert replay(monkeypatch) == (True, 0)
    os.mkfifo("lua_src/pipe-1.lua")
    assert replay(monkeypatch)[0] is False


def test_a_damaged_index_is_an_empty_one(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert replay(monkeypatch)[0]
    (index,) = (Path("../xdg/echomq-scripts/invocations")).glob("*.index")
    for damage in (b"", b"\x00" * 40, index.read_bytes()[:-3]):
        index.write_bytes(damage)
        answered, reads = replay(monkeypatch)
        assert answered
        assert reads > 10
