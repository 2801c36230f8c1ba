"""Benchmarks of `echomq-scripts build`: whole-process times, growth, imports and parsers.

Run it with `make bench` (or `.venv/bin/python bench/run.py --help` for the options). It prints
the tables and writes bench/results.json; docs/benchmarks.md explains each row.

How to read the numbers: every timed row is the median wall time of at least 5 runs of a whole
process (`.venv/bin/echomq-scripts build ...`), after an untimed warm-up round, so it includes
interpreter start-up and imports, as a user's command does. The first rows time Python doing
nothing (`python -c pass`, the floor) and importing click, with the same interpreter and
environment in the same run; divide by the floor (`x floor`) or subtract it (`+floor ms`) to
compare runs made on different machines or days. "cold" means an empty analysis cache and no
output directory, "no-op" a rebuild of unchanged sources into an up-to-date output directory,
which analyses nothing. The targets come from the issue and apply to whole-process wall time.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import json
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import imports
import parsers
import report
import treegen
from timing import Measurement, Plan, child_environment, measure_rounds

REPO = Path(__file__).resolve().parent.parent
COLD_TARGET_MS = 150.0  # cold build of all of lua_src/, whole process
NOOP_TARGET_MS = 30.0  # no-op rebuild, whole process
BULLMQ_COLD_TARGET_MS = 400.0  # cold build of BullMQ's published tree (64 scripts, 72 includes)
_PACKAGES = (
    "echomq-scripts",
    "click",
    "lupa",
    "tree-sitter",
    "tree-sitter-lua",
    "luaparser",
    "redis",
    "bullmq",
    "msgpack",
)


@dataclass(frozen=True)
class Bench:
    """What every row needs: the commands, the environment, the run count and a scratch dir."""

    python: str
    cli: str
    env: dict[str, str]
    runs: int
    scratch: Path

    def build_command(self, dirs: BuildDirs) -> list[str]:
        paths = ["--src", str(dirs.src), "--out", str(dirs.out), "--cache-dir", str(dirs.cache)]
        return [self.cli, "build", *paths, *dirs.options]


@dataclass(frozen=True)
class BuildDirs:
    src: Path
    out: Path
    cache: Path
    options: tuple[str, ...] = ()  # more of the command line (BullMQ's tree: --ignore)


def _progress(message: str) -> None:
    print(f"... {message}", file=sys.stderr, flush=True)


def _fresh(dirs: BuildDirs) -> Callable[[], None]:
    """Before a cold run: an empty cache directory and no output directory."""

    def reset() -> None:
        shutil.rmtree(dirs.cache, ignore_errors=True)
        shutil.rmtree(dirs.out, ignore_errors=True)
        dirs.cache.mkdir(parents=True)

    return reset


def _dirs(bench: Bench, label: str, src: Path, options: tuple[str, ...] = ()) -> BuildDirs:
    work = bench.scratch / label
    work.mkdir(parents=True, exist_ok=True)
    return BuildDirs(src, work / "out", work / "cache", options)


# -- rows -------------------------------------------------------------------------------------


def floor_plans(bench: Bench) -> list[Plan]:
    """The interpreter's own cost, and the CLI's before it builds anything."""
    rows = [
        Measurement(
            "python -S -c pass (no site, no .pth files)",
            "floor",
            [bench.python, "-S", "-c", "pass"],
        ),
        Measurement("python -c pass (the floor)", "floor", [bench.python, "-c", "pass"]),
        Measurement('python -c "import click"', "floor", [bench.python, "-c", "import click"]),
        Measurement("echomq-scripts --version (CLI start-up)", "floor", [bench.cli, "--version"]),
        # What a service pays to import the runtime: target under 30 ms over redis-py alone.
        Measurement('python -c "import redis"', "floor", [bench.python, "-c", "import redis"]),
        Measurement(
            "import redis and the generated wrappers",
            "floor",
            [bench.python, "-c", "import redis, echomq_scripts.generated"],
        ),
        Measurement(
            "import the Queue, the Worker and the events",
            "floor",
            [
                bench.python,
                "-c",
                "import echomq_scripts.queue, echomq_scripts.worker, echomq_scripts.events",
            ],
        ),
    ]
    return [Plan(row, bench.env) for row in rows]


def cold_plan(
    bench: Bench, name: str, dirs: BuildDirs, scripts: int, target: float | None = None
) -> Plan:
    command = bench.build_command(dirs)
    expect = ("wrote", f"({scripts} scripts, {scripts} analysed, 0 from cache)")
    row = Measurement(name, "build", command, target_ms=target)
    return Plan(row, bench.env, prepare=_fresh(dirs), expect=expect)


def noop_plan(
    bench: Bench,
    name: str,
    dirs: BuildDirs,
    target: float | None = None,
    env: dict[str, str] | None = None,
    prepare: Callable[[], None] | None = None,
    note: str = "",
) -> Plan:
    """The warm-up round makes the build; every timed run must find it up to date."""
    command = bench.build_command(dirs)
    row = Measurement(name, "build", command, target_ms=target, note=note)
    return Plan(row, env or bench.env, prepare, expect=("up to date", " 0 analysed"))


def lua_src_plans(bench: Bench) -> tuple[list[Plan], BuildDirs]:
    """The repository's own scripts: the rows the issue's targets are about."""
    src = REPO / "lua_src"
    count = sum(1 for p in src.glob("*.lua") if p.is_file())
    cold_dirs = _dirs(bench, "lua-cold", src)
    cold = cold_plan(
        bench, f"cold build, lua_src/ ({count} scripts)", cold_dirs, count, COLD_TARGET_MS
    )
    dirs = _dirs(bench, "lua-noop", src)
    noop = noop_plan(bench, "no-op rebuild, lua_src/", dirs, NOOP_TARGET_MS)
    source_only = noop_plan(
        bench,
        "no-op rebuild, lua_src/, package not byte-compiled",
        dirs,
        env=_source_only_env(bench),
        prepare=_strip_package_bytecode(bench),
        note=_SOURCE_ONLY_NOTE,
    )
    return [cold, noop, source_only], dirs


_SOURCE_ONLY_NOTE = (
    "PYTHONDONTWRITEBYTECODE=1 and no .pyc for echomq_scripts (the rest of the bytecode cache"
    " warm): what a shell that sets PYTHONDONTWRITEBYTECODE sees with an editable install"
)


def _source_only_env(bench: Bench) -> dict[str, str]:
    env = dict(bench.env)
    env["PYTHONPYCACHEPREFIX"] = str(bench.scratch / "pycache-no-package")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _strip_package_bytecode(bench: Bench) -> Callable[[], None]:
    """Before each run: the shared bytecode cache, copied, less the package's own modules.

    The copy is made on the first call, in the warm-up round, after the rows before this one
    have filled the shared cache.
    """
    shared = Path(bench.env["PYTHONPYCACHEPREFIX"])
    copy = Path(_source_only_env(bench)["PYTHONPYCACHEPREFIX"])

    def strip() -> None:
        if not copy.exists():
            shutil.copytree(shared, copy)
        package = REPO / "echomq_scripts"
        shutil.rmtree(copy / package.relative_to(package.anchor), ignore_errors=True)

    return strip


def bullmq_plans(bench: Bench) -> list[Plan]:
    """BullMQ's published tree (npm `bullmq`, pinned as the tests pin it), built with
    `--ignore key-slot` (IGNORED, as the tests build it); no rows, with a note, when npm cannot
    fetch it."""
    from tests.support.bullmq_package import (
        CACHE_NAME,
        IGNORED,
        VERSION,
        PackageDamaged,
        PackageUnavailable,
        unpack_commands,
    )

    try:
        # The tests' copy: pytest's cache directory, so one fetch serves both.
        src = unpack_commands(REPO / ".pytest_cache" / "d" / CACHE_NAME, bench.scratch / "bullmq")
    except (PackageUnavailable, PackageDamaged) as exc:
        _progress(f"no BullMQ rows: {exc}")
        return []
    count = sum(1 for p in src.glob("*.lua") if p.is_file())
    options = ("--ignore", ",".join(IGNORED))
    label = f"BullMQ {VERSION} dist/cjs/commands/"
    cold_dirs = _dirs(bench, "bullmq-cold", src, options)
    cold = cold_plan(
        bench, f"cold build, {label} ({count} scripts)", cold_dirs, count, BULLMQ_COLD_TARGET_MS
    )
    noop = noop_plan(
        bench, f"no-op rebuild, {label}", _dirs(bench, "bullmq-noop", src, options), NOOP_TARGET_MS
    )
    return [cold, noop]


def growth_plans(bench: Bench, sizes: Sequence[int]) -> tuple[list[Plan], list[Plan], list[Path]]:
    """Cold and no-op builds of a generated tree of each size; also their output dirs."""
    cold: list[Plan] = []
    noop: list[Plan] = []
    outs: list[Path] = []
    for size in sizes:
        tree = treegen.write_tree(bench.scratch / f"tree-{size}", size)
        cold_dirs = _dirs(bench, f"gen{size}-cold", tree.src)
        cold.append(cold_plan(bench, f"cold build, {size} generated scripts", cold_dirs, size))
        dirs = _dirs(bench, f"gen{size}-noop", tree.src)
        noop.append(noop_plan(bench, f"no-op rebuild, {size} generated scripts", dirs))
        outs.append(dirs.out)
    return cold, noop, outs


def import_profile(bench: Bench, dirs: BuildDirs, runs: int) -> imports.ImportProfile:
    _progress("python -X importtime on the no-op rebuild")
    command = [
        bench.python,
        "-X",
        "importtime",
        *bench.build_command(dirs),
    ]
    return imports.profile(command, bench.env, runs)


def parser_comparison(
    bench: Bench, script_dirs: Sequence[Path], sample: int
) -> tuple[list[parsers.ParserResult], list[parsers.Script]]:
    _progress("parser comparison")
    scripts = parsers.load_scripts(script_dirs, sample)
    return parsers.compare(scripts, bench.runs), scripts


# -- the run ----------------------------------------------------------------------------------


def _versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in _PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def machine_info(runs: int) -> dict[str, Any]:
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "python": sys.version,
        "python_executable": sys.executable,
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_used": sorted(os.sched_getaffinity(0)),
        "load_average_before": list(os.getloadavg()),
        "runs_per_row": runs,
        "caller_PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE"),
        "bytecode": "cached under a temporary PYTHONPYCACHEPREFIX, warm after the warm-up round",
        "packages": _versions(),
    }


def _runs(value: str) -> int:
    runs = int(value)
    if runs < 5:
        raise argparse.ArgumentTypeError("at least 5 runs per row")
    return runs


def _sizes(value: str) -> list[int]:
    return [int(part) for part in value.split(",") if part.strip()]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument(
        "--runs", type=_runs, default=7, help="timed runs per row, >= 5 (default 7)"
    )
    parser.add_argument(
        "--sizes",
        type=_sizes,
        default=[10, 100, 1000],
        help="generated tree sizes (default 10,100,1000)",
    )
    parser.add_argument(
        "--parser-sample",
        type=int,
        default=200,
        help="generated scripts in the parser comparison (default 200)",
    )
    parser.add_argument(
        "--import-runs", type=_runs, default=5, help="runs of -X importtime (default 5)"
    )
    parser.add_argument(
        "--cpus",
        type=_sizes,
        default=None,
        help="pin to these CPU ids, e.g. 1 (default: as started)",
    )
    parser.add_argument(
        "--only",
        choices=["all", "build", "scripts", "walks", "workers"],
        default="all",
        help="the build rows, the script-cost rows (Redis, BullMQ), the walks on a large queue,"
        " the workers end to end, or all of them (default)",
    )
    parser.add_argument(
        "--worker-jobs", type=int, default=20_000, help="jobs a round of the worker rows"
    )
    parser.add_argument(
        "--worker-rounds", type=_runs, default=5, help="rounds of the worker rows (default 5)"
    )
    parser.add_argument(
        "--worker-concurrency",
        type=_sizes,
        default=[1, 50],
        help="the workers' concurrencies (default 1,50)",
    )
    parser.add_argument(
        "--walk-jobs", type=int, default=200_000, help="jobs in the queue a walk empties"
    )
    parser.add_argument(
        "--walk-batch", type=int, default=1000, help="a walk's batch: jobs a call (default 1000)"
    )
    parser.add_argument(
        "--rounds", type=_runs, default=7, help="script-cost rounds, >= 5 (default 7)"
    )
    parser.add_argument(
        "--jobs", type=int, default=2000, help="jobs a round in the job cycle and bulk add"
    )
    parser.add_argument(
        "--calls", type=int, default=20000, help="timed calls a side in the wrapper rows"
    )
    parser.add_argument("--batch", type=int, default=100, help="calls per pipeline (default 100)")
    parser.add_argument(
        "--callgrind-jobs",
        type=int,
        default=300,
        help="jobs a round of the job cycle under callgrind, and a tenth as many flows (at least"
        " 20) a round in the flow row (0: skip those rows)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=REPO / "bench" / "results.json",
        help="where to write the results",
    )
    return parser.parse_args(argv)


@dataclass(frozen=True)
class Outcome:
    """Everything one run measured."""

    rows: list[Measurement]
    cold: list[Measurement]
    noop: list[Measurement]
    profile: imports.ImportProfile
    parser_results: list[parsers.ParserResult]
    scripts: list[parsers.Script]


def run_all(bench: Bench, args: argparse.Namespace) -> Outcome:
    floors = floor_plans(bench)
    lua_plans, lua_dirs = lua_src_plans(bench)
    foreign = bullmq_plans(bench)
    cold, noop, outs = growth_plans(bench, args.sizes)
    growth = [p for pair in zip(cold, noop, strict=True) for p in pair]
    plans = [*floors, *lua_plans, *foreign, *growth]
    measure_rounds(plans, args.runs, _progress)
    profile = import_profile(bench, lua_dirs, args.import_runs)
    script_dirs = [lua_dirs.out / "scripts"] + ([outs[-1] / "scripts"] if outs else [])
    results, scripts = parser_comparison(bench, script_dirs, args.parser_sample)
    rows = [p.row for p in plans]
    return Outcome(rows, [p.row for p in cold], [p.row for p in noop], profile, results, scripts)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cpus:
        os.sched_setaffinity(0, args.cpus)
    cli = Path(sys.executable).with_name("echomq-scripts")
    if args.only in ("all", "build") and not cli.exists():
        print(f"error: {cli} not found: run 'make build' first", file=sys.stderr)
        return 2
    info = machine_info(args.runs)
    sections: list[str] = []
    results: dict[str, Any] = {"machine": info}
    if args.only in ("all", "build"):
        with tempfile.TemporaryDirectory(prefix="echomq-bench-") as scratch:
            env = child_environment(str(Path(scratch) / "pycache"))
            bench = Bench(sys.executable, str(cli), env, args.runs, Path(scratch))
            outcome = run_all(bench, args)
        sections.append(_summary(info, args.sizes, outcome))
        results.update(_json(outcome))
    # The parts that need a redis-server (and the bench extra): each a section and a JSON key.
    servers: list[tuple[str, str, Callable[[argparse.Namespace], tuple[str, Any]]]] = [
        ("scripts", "script_cost", script_cost),
        ("walks", "walks", walk_rows),
        ("workers", "workers", worker_part),
    ]
    for part, key, measure in servers:
        if args.only not in ("all", part):
            continue
        try:
            text, data = measure(args)
        except ScriptBenchUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        sections.append(text)
        results[key] = data
    info["load_average_after"] = list(os.getloadavg())
    print("\n\n".join(sections))
    args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.json}")
    return 0


def worker_part(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """EchoMQ's workers against BullMQ Python's, end to end, on a private pinned server."""
    try:
        import bullmq  # noqa: F401 - the bench extra, checked before a server starts
        import server
        import workers
    except ImportError as exc:
        raise ScriptBenchUnavailable(
            f"{exc.name} is missing: install the bench extra (pip install -e '.[bench]')"
        ) from None
    try:
        with server.pinned_server() as pinned:
            rows = workers.worker_rows(
                pinned.server.port,
                args.worker_jobs,
                args.worker_rounds,
                tuple(args.worker_concurrency),
                _progress,
            )
    except server.RedisUnavailable as exc:
        raise ScriptBenchUnavailable(str(exc)) from None
    data = {
        "jobs": args.worker_jobs,
        "target_ratio": workers.TARGET,
        "rows": [
            {"side": r.side, "concurrency": r.concurrency, "jobs_per_s": r.jobs_per_s} for r in rows
        ],
    }
    return workers.worker_table(rows, args.worker_jobs), data


class ScriptBenchUnavailable(Exception):
    """What the script-cost rows need and this machine lacks, in one line."""


def script_cost(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """Wrapper overhead, the job cycle and bulk add, on a private pinned redis-server; the job
    cycle and adding a flow in instructions, on one under callgrind."""
    try:
        import bullmq_side
        import scriptcost
        import server
    except ImportError as exc:
        raise ScriptBenchUnavailable(
            f"{exc.name} is missing: install the bench extra (pip install -e '.[bench]')"
        ) from None
    with contextlib.ExitStack() as stack:
        try:
            pinned = stack.enter_context(server.pinned_server())
        except server.RedisUnavailable as exc:
            raise ScriptBenchUnavailable(str(exc)) from None
        port = pinned.server.port
        _progress("wrapper against raw evalsha")
        overhead = scriptcost.wrapper_overhead(port, args.calls, args.rounds, args.batch)
        cycles = scriptcost.job_cycle(
            port, bullmq_side.BullCycle, args.jobs, args.rounds, _progress
        )
        bulk = scriptcost.bulk_add(
            port, bullmq_side.BulkAdd, args.jobs, args.batch, args.rounds, _progress
        )
    instructions = None
    flow = None
    operations = None
    flows = max(args.callgrind_jobs // 10, 20)
    operation_calls = max(args.callgrind_jobs // 3, 20)
    if server.callgrind_available() and args.callgrind_jobs > 0:
        with server.callgrind_server() as counted:
            instructions = scriptcost.job_cycle_instructions(
                counted, counted.port, bullmq_side.BullCycle, args.callgrind_jobs, 2, _progress
            )
            flow = scriptcost.operation_instructions(
                counted,
                counted.port,
                [
                    scriptcost.Operation(
                        "adding a flow",
                        scriptcost.EchoFlow,
                        bullmq_side.BullFlow,
                        scriptcost.check_flows,
                    )
                ],
                flows,
                2,
                _progress,
            )[0]
            operations = scriptcost.operation_instructions(
                counted, counted.port, _operations(), operation_calls, 2, _progress
            )
    where = (
        f"client on CPU {pinned.client_cpus}, redis-server {pinned.version} on CPU"
        f" {pinned.server_cpus}" + (" (shared: one core)" if pinned.shared else "")
    )
    head = f"script cost: {where}; {args.rounds} rounds, sides alternating"
    text = "\n".join(
        [
            head,
            "",
            f"wrapper against raw evalsha: {args.calls} calls, and"
            f" {max(args.calls // args.batch, 1) * args.rounds} pipelines of {args.batch}, a side;"
            " the sides take turns; medians",
            report.overhead_table(overhead),
            "",
            f"job cycle through the wrappers, BullMQ's own scripts side by side ({args.jobs} jobs"
            " a round)",
            report.cycle_table(cycles),
            "",
            f"bulk add ({args.jobs} jobs a round in MULTI pipelines of {args.batch})",
            report.bulk_table(bulk),
            "",
            (
                "job cycle, the server's instructions under callgrind"
                f" ({args.callgrind_jobs} jobs, 2 rounds a side, each phase's least round)"
            ),
            report.instruction_table(instructions)
            if instructions is not None
            else "(skipped: valgrind is not installed, or --callgrind-jobs 0)",
            "",
            (
                "adding a flow (EchoMQ's addFlow-10, BullMQ's FlowProducer), side by side, the"
                f" server's instructions under callgrind ({flows} flows, 2 rounds a side, each"
                " side's least round)"
            ),
            report.flow_table(flow)
            if flow is not None
            else "(skipped: valgrind is not installed, or --callgrind-jobs 0)",
            "",
            (
                "deduplication and job schedulers, side by side, the server's instructions under"
                f" callgrind ({operation_calls} calls a round, 2 rounds a side, each side's least"
                " round)"
            ),
            report.operation_table(operations)
            if operations is not None
            else "(skipped: valgrind is not installed, or --callgrind-jobs 0)",
        ]
    )
    data = {
        "client_cpus": pinned.client_cpus,
        "server_cpus": pinned.server_cpus,
        "cores_shared": pinned.shared,
        "redis_version": pinned.version,
        "rounds": args.rounds,
        "jobs_per_round": args.jobs,
        "wrapper_calls_per_side": args.calls,
        "pipeline_batch": args.batch,
        "callgrind_jobs": args.callgrind_jobs if instructions is not None else None,
        "callgrind_flows": flows if flow is not None else None,
        "callgrind_operation_calls": operation_calls if operations is not None else None,
        **report.script_cost_json(overhead, cycles, instructions, bulk, flow, operations),
    }
    return text, data


def walk_rows(args: argparse.Namespace) -> tuple[str, list[dict[str, Any]]]:
    """The longest single call of the bounded walks on a large queue (bench/walks.py)."""
    try:
        import server
        import walks
    except ImportError as exc:
        raise ScriptBenchUnavailable(
            f"{exc.name} is missing: install the bench extra (pip install -e '.[bench]')"
        ) from None
    try:
        with server.pinned_server() as pinned:
            rows = walks.walks(pinned.server.port, args.walk_jobs, args.walk_batch, _progress)
    except server.RedisUnavailable as exc:
        raise ScriptBenchUnavailable(str(exc)) from None
    head = (
        f"walks on a queue of {args.walk_jobs} jobs, {args.walk_batch} a call, each call timed"
        f" (redis-server {pinned.version} on CPU {pinned.server_cpus})"
    )
    return f"{head}\n{report.walk_table(rows)}", report.walk_json(rows)


def _operations() -> list[Any]:
    """The dedup and scheduler rows: EchoMQ's scripts and BullMQ's, doing the same."""
    import bullmq_side
    import scriptcost

    return [
        scriptcost.Operation(
            "add, a new dedup id with a TTL",
            lambda port: scriptcost.EchoDedupAdd(port, held=False),
            lambda port: bullmq_side.BullDedupAdd(port, held=False),
            scriptcost.check_new_dedup_ids,
        ),
        scriptcost.Operation(
            "add, its dedup id held",
            lambda port: scriptcost.EchoDedupAdd(port, held=True),
            lambda port: bullmq_side.BullDedupAdd(port, held=True),
            scriptcost.check_held_dedup_id,
        ),
        scriptcost.Operation(
            "upsert a new job scheduler, every 60 s",
            scriptcost.EchoUpsertScheduler,
            bullmq_side.BullUpsertScheduler,
            scriptcost.check_new_schedulers,
        ),
    ]


def _floor(outcome: Outcome) -> float:
    return next(r.wall_ms for r in outcome.rows if r.command[1:] == ["-c", "pass"])


def _json(outcome: Outcome) -> dict[str, Any]:
    floor = _floor(outcome)
    profile = outcome.profile
    return {
        "floor_ms": round(floor, 3),
        "rows": [report.measurement_json(r, floor) for r in outcome.rows],
        "imports_noop_lua_src": {
            "runs": profile.runs,
            "total_ms": round(profile.total_ms, 3),
            "tree_cumulative_ms": [
                {"depth": depth, "module": name, "ms": round(ms, 3)}
                for depth, name, ms in profile.tree_ms
            ],
            "self_ms_by_package": {k: round(v, 3) for k, v in profile.by_package_ms},
        },
        "parsers": {
            "scripts": len(outcome.scripts),
            "lines": sum(s.text.count("\n") for s in outcome.scripts),
            "results": [
                report.parser_json(r, outcome.parser_results[0].median_ms)
                for r in outcome.parser_results
            ],
        },
    }


def _summary(info: dict[str, Any], sizes: Sequence[int], outcome: Outcome) -> str:
    head = (
        f"echomq-scripts build benchmark: Python {platform.python_version()}, CPUs"
        f" {info['cpus_used']} of {info['cpu_count']} ({info['cpu_model']}), median of"
        f" {info['runs_per_row']} runs per row, whole-process wall time"
    )
    lines = sum(s.text.count("\n") for s in outcome.scripts)
    sections = [head, "", report.timing_table(outcome.rows, _floor(outcome))]
    if sizes:
        growth = report.growth_table(sizes, outcome.cold, outcome.noop)
        sections += ["", "growth (generated trees)", growth]
    sections += [
        "",
        "imports of the no-op rebuild of lua_src/ (python -X importtime)",
        report.import_table(outcome.profile),
        "",
        "parsers on the same resolved scripts (in-process)",
        report.parser_table(outcome.parser_results, len(outcome.scripts), lines),
    ]
    return "\n".join(sections)


if __name__ == "__main__":
    sys.exit(main())
