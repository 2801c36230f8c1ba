"""Analysis on several cores (workers.py): the same results, in order, and errors that surface."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from echomq_scripts.toolchain import pipeline, workers
from echomq_scripts.toolchain.analyse import analyse
from tests.support.environment import REPO
from tests.support.projects import run_build

ITEMS = list(range(40))


def _square(value: int) -> tuple[int, int]:
    return value, value * value


def test_results_are_a_serial_runs_in_order() -> None:
    weights = [(i * 7) % 5 + 1 for i in ITEMS]
    assert workers.map_forked(_square, ITEMS, weights, 3) == [_square(i) for i in ITEMS]


def test_shares_are_balanced_and_cover_every_item() -> None:
    split = workers.shares([9, 1, 1, 1, 5, 5], 2)
    assert sorted(i for share in split for i in share) == list(range(6))
    assert [sum([9, 1, 1, 1, 5, 5][i] for i in share) for share in split] == [11, 11]


def _fails_in_a_child(value: int) -> int:
    if value == 39 and os.getpid() != PARENT:
        raise ValueError(f"bad item {value}")
    return value


PARENT = os.getpid()


def test_an_exception_in_a_child_is_raised_here() -> None:
    # The lightest item goes to the last share: a child's.
    weights = [2] * 39 + [1]
    with pytest.raises(ValueError, match="bad item 39"):
        workers.map_forked(_fails_in_a_child, ITEMS, weights, 2)


def _dies_in_a_child(value: int) -> int:
    if os.getpid() != PARENT:
        os._exit(3)
    return value


def test_a_child_that_dies_is_an_error_not_a_hang() -> None:
    with pytest.raises(RuntimeError, match="exited without an answer"):
        workers.map_forked(_dies_in_a_child, ITEMS, [1] * len(ITEMS), 2)


class _Unrebuildable(Exception):
    """Pickles, but its pickle cannot be loaded: __init__ takes two arguments and `args` holds
    one (as the toolchain's NotRegularFile does)."""

    def __init__(self, name: str, mode: int) -> None:
        super().__init__(f"{name} has mode {mode:o}")


def _fails_unrebuildably_in_children(value: int) -> int:
    if os.getpid() != PARENT:
        raise _Unrebuildable(f"item {value}", 0o10644)
    return value


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _zombie_children() -> set[int]:
    """This process's children that exited and were not waited for. Not waitpid(-1): the
    suite's own redis-server processes are children too."""
    zombies = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # pid (comm) state ppid ...: comm may hold spaces, so split after its ')'.
                state, ppid = stat.read().rsplit(")", 1)[1].split()[:2]
        except OSError:  # gone meanwhile
            continue
        if state == "Z" and int(ppid) == os.getpid():
            zombies.add(int(entry))
    return zombies


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc here")
def test_an_exception_that_cannot_be_rebuilt_leaves_no_zombie_and_no_descriptor() -> None:
    before = _open_descriptors()
    with pytest.raises(RuntimeError, match=r"_Unrebuildable: item \d+ has mode 10644"):
        workers.map_forked(_fails_unrebuildably_in_children, ITEMS, [1] * len(ITEMS), 4)
    assert _open_descriptors() == before
    assert _zombie_children() == set()  # every child was waited for


def test_a_closed_stdout_does_not_stop_the_work(monkeypatch: pytest.MonkeyPatch) -> None:
    # What Python makes of a process started with its stdout closed (`... >&-`).
    monkeypatch.setattr("sys.stdout", None)
    assert workers.map_forked(_square, ITEMS, [1] * len(ITEMS), 2) == [_square(i) for i in ITEMS]


def test_facts_of_forked_analysis_equal_serial_ones() -> None:
    texts = [path.read_text(encoding="utf-8") for path in sorted((REPO / "lua_src").glob("*.lua"))]
    assert len(texts) >= workers.MIN_ITEMS
    forked = workers.map_forked(analyse, texts, [len(t) for t in texts], 2)
    assert forked == [analyse(text) for text in texts]


def test_a_build_on_one_core_and_on_two_gives_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = []
    for cpus in (1, 2):
        monkeypatch.setattr(pipeline, "usable_cpus", lambda cpus=cpus: cpus)
        result = run_build(REPO / "lua_src", tmp_path / f"build-{cpus}")
        results.append((result.files, result.diagnostics, result.analysed, result.from_cache))
    assert results[0] == results[1]
    assert results[0][2] == len(list((REPO / "lua_src").glob("*.lua")))


def _pid(value: int) -> int:
    return os.getpid()


def test_with_other_threads_running_it_stays_in_this_process() -> None:
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert set(workers.map_forked(_pid, ITEMS, [1] * len(ITEMS), 2)) == {os.getpid()}
    finally:
        stop.set()
        thread.join()
    assert len(set(workers.map_forked(_pid, ITEMS, [1] * len(ITEMS), 2))) == 2
