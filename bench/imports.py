"""Where a no-op rebuild's start-up goes: `python -X importtime` on the build, summed up.

How to read the numbers: `-X importtime` prints, per imported module, its own (self) time and
the time including what it imported (cumulative), in microseconds. The tree lists the imports
made directly by the interpreter, the console script or a function (`site`,
`echomq_scripts.toolchain.entry`, ...) and, indented below each, the imports it made first, with
their cumulative times, down to `depth` levels; entries under 1 ms are left out. A module is
charged to whoever imported it first: `pathlib` appears under `site` (the editable install's
finder loads it) and is then free for the CLI. The second table sums self time by top-level
package (`click`, `echomq_scripts`, `typing`, ...): whose code the time goes to. Both are
medians over the runs; -X importtime adds some overhead of its own, so compare the shares, not
the sums, with the timed rows.
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from timing import run_once

_LINE = re.compile(
    r"^import time:\s+(?P<self>\d+) \|\s+(?P<cumulative>\d+) \|(?P<indent> *)(?P<name>\S+)$"
)


@dataclass
class ImportNode:
    name: str
    self_us: int
    cumulative_us: int
    children: list[ImportNode] = field(default_factory=list)


@dataclass(frozen=True)
class ImportProfile:
    runs: int
    tree_ms: list[tuple[int, str, float]]  # (depth, module, median cumulative ms), in tree order
    by_package_ms: list[tuple[str, float]]  # (top-level package, median self ms), largest first
    total_ms: float  # median of the summed outermost imports


def parse_importtime(output: str) -> list[ImportNode]:
    """The outermost imports of one run, each with the imports it made below it.

    -X importtime prints a module after the modules it imported (one level deeper), so the
    lines waiting one level down when a module's line comes are its children.
    """
    waiting: dict[int, list[ImportNode]] = defaultdict(list)
    for raw in output.splitlines():
        match = _LINE.match(raw)
        if match is None:
            continue
        depth = (len(match["indent"]) - 1) // 2
        node = ImportNode(match["name"], int(match["self"]), int(match["cumulative"]))
        node.children = waiting.pop(depth + 1, [])
        waiting[depth].append(node)
    return waiting[0]


def _walk(nodes: Sequence[ImportNode], path: str = "") -> Iterator[tuple[str, ImportNode]]:
    for node in nodes:
        here = f"{path}/{node.name}"
        yield here, node
        yield from _walk(node.children, here)


def _tree_rows(runs: Sequence[Mapping[str, float]], depth: int) -> list[tuple[int, str, float]]:
    """Median cumulative ms per import path, in tree order, largest first among siblings."""
    paths = {p for run in runs for p in run if p.count("/") <= depth + 1}
    median = {p: statistics.median(run.get(p, 0.0) for run in runs) for p in paths}
    rows: list[tuple[int, str, float]] = []

    def add(parent: str, level: int) -> None:
        children = [p for p in median if p.rsplit("/", 1)[0] == parent and median[p] >= 1.0]
        for child in sorted(children, key=lambda p: -median[p]):
            rows.append((level, child.rsplit("/", 1)[1], median[child]))
            add(child, level + 1)

    add("", 0)
    return rows


def profile(
    command: Sequence[str], env: Mapping[str, str], runs: int, depth: int = 2
) -> ImportProfile:
    """Run `command` (which must start `python -X importtime`) `runs` times and summarise it."""
    run_once(command, env)  # warm-up
    cumulative: list[dict[str, float]] = []
    packages: list[dict[str, float]] = []
    totals: list[float] = []
    for _ in range(runs):
        roots = parse_importtime(run_once(command, env).output)
        nodes = list(_walk(roots))
        cumulative.append({path: node.cumulative_us / 1000 for path, node in nodes})
        own: dict[str, float] = defaultdict(float)
        for _, node in nodes:
            own[node.name.split(".")[0]] += node.self_us / 1000
        packages.append(own)
        totals.append(sum(root.cumulative_us for root in roots) / 1000)
    keys = {key for run in packages for key in run}
    by_package = {k: statistics.median(run.get(k, 0.0) for run in packages) for k in keys}
    return ImportProfile(
        runs,
        _tree_rows(cumulative, depth),
        sorted(by_package.items(), key=lambda item: -item[1]),
        statistics.median(totals),
    )
