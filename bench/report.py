"""Printing the results as plain-text tables, and turning them into the JSON of results.json.

How to read the main table: `median` is the whole-process wall time in milliseconds, `min-max`
its spread over the runs, `cpu` the child's own CPU time. `x floor` divides by the median of
`python -c pass` with the same interpreter and environment, the least any Python command costs
here; `+floor` subtracts it, which leaves what the command itself adds (imports and work).
`target` and the verdict are the issue's goals for whole-process time (PASS when the median is
under the target).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from imports import ImportProfile
from parsers import ParserResult
from scriptcost import (
    FLOW_CHILDREN,
    FLOW_JOBS,
    BulkRow,
    CycleComparison,
    InstructionRow,
    OperationRow,
    OverheadRow,
)
from timing import Measurement
from walks import WalkRow


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the first column left-aligned, the rest right."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first, *rest = cells
        parts = [first.ljust(widths[0])] + [
            c.rjust(w) for c, w in zip(rest, widths[1:], strict=True)
        ]
        return "  ".join(parts).rstrip()

    rule = "-" * (sum(widths) + 2 * (len(widths) - 1))
    return "\n".join([line(header), rule, *(line(r) for r in rows)])


def _ms(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.1f}"


def timing_table(rows: Sequence[Measurement], floor_ms: float) -> str:
    header = ["row", "median ms", "min-max ms", "cpu ms", "x floor", "+floor ms", "target", ""]
    body = []
    for row in rows:
        walls = [s.wall_ms for s in row.samples]
        body.append(
            [
                row.name,
                _ms(row.wall_ms),
                f"{min(walls):.1f}-{max(walls):.1f}",
                _ms(row.cpu_ms),
                f"{row.wall_ms / floor_ms:.2f}",
                f"{row.wall_ms - floor_ms:+.1f}",
                f"< {row.target_ms:.0f} ms" if row.target_ms is not None else "",
                row.verdict,
            ]
        )
    return table(header, body)


def growth_table(
    sizes: Sequence[int], cold: Sequence[Measurement], noop: Sequence[Measurement]
) -> str:
    """Per size: medians, and the cost each extra script adds between this size and the last."""
    header = ["scripts", "cold ms", "no-op ms", "cold ms/script", "no-op ms/script"]
    body = []
    previous: tuple[int, float, float] | None = None
    for size, c, n in zip(sizes, cold, noop, strict=True):
        if previous is None:
            marginal = ["", ""]
        else:
            added = size - previous[0]
            marginal = [
                f"{(c.wall_ms - previous[1]) / added:.2f}",
                f"{(n.wall_ms - previous[2]) / added:.2f}",
            ]
        body.append([str(size), _ms(c.wall_ms), _ms(n.wall_ms), *marginal])
        previous = (size, c.wall_ms, n.wall_ms)
    return table(header, body)


def parser_table(results: Sequence[ParserResult], scripts: int, lines: int) -> str:
    header = [
        "parser",
        "import ms",
        "first ms",
        "median ms",
        "ms/script",
        "x tree-sitter",
        "failed",
        "names",
        "positioned",
    ]
    reference = results[0].median_ms
    body = []
    for r in results:
        if r.error:
            body.append([r.name, r.error, "", "", "", "", "", "", ""])
            continue
        share = (
            ""
            if r.names is None
            else f"{r.positioned} ({100 * (r.positioned or 0) / max(r.names, 1):.0f}%)"
        )
        body.append(
            [
                r.name,
                _ms(r.import_ms),
                _ms(r.first_ms),
                _ms(r.median_ms),
                f"{r.median_ms / scripts:.3f}",
                f"{r.median_ms / reference:.2f}",
                str(r.failures),
                "" if r.names is None else str(r.names),
                share,
            ]
        )
    return f"{scripts} scripts, {lines} lines\n" + table(header, body)


def import_table(profile: ImportProfile, limit: int = 8) -> str:
    tree = table(
        ["import (indented: imported first by the line above)", "cumulative ms"],
        [["  " * depth + name, f"{ms:.1f}"] for depth, name, ms in profile.tree_ms],
    )
    own = table(
        ["package (self time)", "ms"],
        [[name, f"{ms:.1f}"] for name, ms in profile.by_package_ms[:limit]],
    )
    return f"{tree}\n(all imports: {profile.total_ms:.1f} ms)\n\n{own}"


def measurement_json(row: Measurement, floor_ms: float) -> dict[str, Any]:
    return {
        "name": row.name,
        "group": row.group,
        "command": row.command,
        "note": row.note,
        "runs": len(row.samples),
        "median_wall_ms": round(row.wall_ms, 3),
        "median_cpu_ms": round(row.cpu_ms, 3),
        "wall_ms": [round(s.wall_ms, 3) for s in row.samples],
        "cpu_ms": [round(s.cpu_ms, 3) for s in row.samples],
        "max_rss_kb": max(s.max_rss_kb for s in row.samples),
        "ratio_to_floor": round(row.wall_ms / floor_ms, 3),
        "over_floor_ms": round(row.wall_ms - floor_ms, 3),
        "target_ms": row.target_ms,
        "verdict": row.verdict or None,
    }


def parser_json(result: ParserResult, reference_ms: float) -> dict[str, Any]:
    data = asdict(result)
    data["median_ms"] = None if math.isnan(result.median_ms) else round(result.median_ms, 3)
    data["ratio_to_tree_sitter"] = (
        None if result.error else round(result.median_ms / reference_ms, 3)
    )
    return data


# -- script cost ----------------------------------------------------------------------------

OVERHEAD_TARGET = 1.05  # a wrapper call at most 5% over a raw evalsha of the same script
CYCLE_TARGET = 0.8  # Redis-side time per job cycle at most 0.8 of BullMQ's
# The records that answer re-sent calls may not take the cycle's server instructions above this.
CYCLE_CEILING = 0.95
BULK_TARGET = 1.0  # the pipeline wrappers' bulk add at least BullMQ's addBulk rate
QUEUE_BULK_TARGET = 1.5  # Queue.add_bulk at least 1.5 times BullMQ's addBulk rate


def bulk_target(side: str) -> float | None:
    """The target of a bulk-add row: None for BullMQ's own, the reference."""
    if side.startswith("BullMQ"):
        return None
    return QUEUE_BULK_TARGET if "add_bulk" in side else BULK_TARGET


FLOW_TARGET = 0.9  # adding a flow: server instructions at most 0.9 of BullMQ's FlowProducer
OPERATION_TARGET = 0.9  # a dedup add, a scheduler upsert: at most 0.9 of BullMQ's a call


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def overhead_table(rows: Sequence[OverheadRow]) -> str:
    header = [
        "script",
        "mode",
        "raw us/call",
        "wrapper us/call",
        "ratio",
        "target",
        "",
        "client cpu us: raw",
        "wrapper",
        "added",
    ]
    body = [
        [
            r.script,
            r.mode,
            f"{r.raw_us:.1f}",
            f"{r.wrapper_us:.1f}",
            f"{r.ratio:.3f} ({100 * (r.ratio - 1):+.1f}%)",
            f"< {OVERHEAD_TARGET:.2f}",
            _verdict(r.ratio < OVERHEAD_TARGET),
            f"{r.raw_cpu_us:.1f}",
            f"{r.wrapper_cpu_us:.1f}",
            f"{r.wrapper_cpu_us - r.raw_cpu_us:+.1f}",
        ]
        for r in rows
    ]
    return table(header, body)


def cycle_table(comparisons: Sequence[CycleComparison]) -> str:
    header = ["fetch-next", "side", "jobs/s", "redis us/job", "(median)", "redis us/call by phase"]
    body = []
    for c in comparisons:
        for row in (c.echomq, c.bullmq):
            phases = ", ".join(f"{n} {us:.1f}" for n, us in row.redis_usec_by_phase.items())
            body.append(
                [
                    "on" if c.fetch_next else "off",
                    row.side,
                    f"{row.jobs_per_s:.0f}",
                    f"{row.redis_usec_per_job:.1f}",
                    f"{row.redis_usec_per_job_median:.1f}",
                    phases,
                ]
            )
    ratios = table(
        [
            "fetch-next",
            "redis us/job EchoMQ/BullMQ",
            "(median)",
            "target",
            "",
            "jobs/s EchoMQ/BullMQ",
        ],
        [
            [
                "on" if c.fetch_next else "off",
                f"{c.redis_ratio:.3f}",
                f"{c.redis_ratio_median:.3f}",
                f"<= {CYCLE_TARGET}",
                _verdict(c.redis_ratio <= CYCLE_TARGET),
                f"{c.rate_ratio:.3f}",
            ]
            for c in comparisons
        ],
    )
    return f"{table(header, body)}\n\n{ratios}"


def instruction_table(rows: Sequence[InstructionRow]) -> str:
    header = [
        "fetch-next",
        "EchoMQ instr/job",
        "BullMQ instr/job",
        "EchoMQ/BullMQ",
        "target",
        "",
        "ceiling",
        "",
        "rounds differ by",
        "EchoMQ by phase (per call)",
        "BullMQ by phase (per call)",
    ]

    def phases(values: dict[str, float]) -> str:
        return ", ".join(f"{n} {v / 1000:.0f}k" for n, v in values.items())

    body = [
        [
            "on" if r.fetch_next else "off",
            f"{r.echomq_per_job / 1000:.0f}k",
            f"{r.bullmq_per_job / 1000:.0f}k",
            f"{r.ratio:.3f}",
            f"<= {CYCLE_TARGET}",
            _verdict(r.ratio <= CYCLE_TARGET),
            f"<= {CYCLE_CEILING}",
            _verdict(r.ratio <= CYCLE_CEILING),
            f"{100 * r.spread:.1f}%",
            phases(r.echomq_by_phase),
            phases(r.bullmq_by_phase),
        ]
        for r in rows
    ]
    return table(header, body)


def flow_table(row: OperationRow) -> str:
    header = [
        "flow",
        "EchoMQ instr/flow",
        "BullMQ instr/flow",
        "EchoMQ/BullMQ",
        "target",
        "",
        "rounds differ by",
        "EchoMQ instr/job",
        "BullMQ instr/job",
    ]
    body = [
        [
            f"1 parent + {FLOW_CHILDREN} children",
            f"{row.echomq_per_operation / 1000:.0f}k",
            f"{row.bullmq_per_operation / 1000:.0f}k",
            f"{row.ratio:.3f}",
            f"<= {FLOW_TARGET}",
            _verdict(row.ratio <= FLOW_TARGET),
            f"{100 * row.spread:.1f}%",
            f"{row.echomq_per_operation / FLOW_JOBS / 1000:.0f}k",
            f"{row.bullmq_per_operation / FLOW_JOBS / 1000:.0f}k",
        ]
    ]
    return table(header, body)


def operation_table(rows: Sequence[OperationRow]) -> str:
    header = [
        "operation",
        "EchoMQ instr/call",
        "BullMQ instr/call",
        "EchoMQ/BullMQ",
        "target",
        "",
        "rounds differ by",
    ]
    body = [
        [
            row.name,
            f"{row.echomq_per_operation / 1000:.0f}k",
            f"{row.bullmq_per_operation / 1000:.0f}k",
            f"{row.ratio:.3f}",
            f"<= {OPERATION_TARGET}",
            _verdict(row.ratio <= OPERATION_TARGET),
            f"{100 * row.spread:.1f}%",
        ]
        for row in rows
    ]
    return table(header, body)


def bulk_table(rows: Sequence[BulkRow]) -> str:
    header = ["added by", "jobs/s", "redis us/job", "x BullMQ addBulk", "target", ""]
    body = [
        [
            r.side,
            f"{r.jobs_per_s:.0f}",
            f"{r.redis_usec_per_job:.1f}",
            f"{r.ratio_to_bullmq:.3f}",
            "" if target is None else f">= {target:.1f}",
            "" if target is None else _verdict(r.ratio_to_bullmq >= target),
        ]
        for r, target in ((r, bulk_target(r.side)) for r in rows)
    ]
    return table(header, body)


def walk_table(rows: Sequence[WalkRow]) -> str:
    header = ["walk", "jobs", "calls", "longest ms", "median ms", "total s", "redis us/job"]
    body = [
        [
            r.walk,
            str(r.jobs),
            str(r.calls),
            f"{r.longest_ms:.1f}",
            f"{r.median_ms:.1f}",
            f"{r.total_s:.1f}",
            f"{r.redis_usec_per_job:.1f}",
        ]
        for r in rows
    ]
    return table(header, body)


def walk_json(rows: Sequence[WalkRow]) -> list[dict[str, Any]]:
    return [_rounded(asdict(r)) for r in rows]


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 3)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def script_cost_json(
    overhead: Sequence[OverheadRow],
    cycles: Sequence[CycleComparison],
    instructions: Sequence[InstructionRow] | None,
    bulk: Sequence[BulkRow],
    flow: OperationRow | None,
    operations: Sequence[OperationRow] | None,
) -> dict[str, Any]:
    return {
        "operation_instructions": None
        if operations is None
        else [
            {**_rounded(asdict(r)), "verdict": _verdict(r.ratio <= OPERATION_TARGET)}
            for r in operations
        ],
        "flow_instructions": None
        if flow is None
        else {**_rounded(asdict(flow)), "verdict": _verdict(flow.ratio <= FLOW_TARGET)},
        "job_cycle_instructions": None
        if instructions is None
        else [
            {
                **_rounded(asdict(r)),
                "verdict": _verdict(r.ratio <= CYCLE_TARGET),
                "ceiling_verdict": _verdict(r.ratio <= CYCLE_CEILING),
            }
            for r in instructions
        ],
        "targets": {
            "wrapper_over_raw_below": OVERHEAD_TARGET,
            "cycle_redis_ratio_at_most": CYCLE_TARGET,
            "cycle_instructions_ratio_ceiling": CYCLE_CEILING,
            "bulk_ratio_at_least": BULK_TARGET,
            "queue_bulk_ratio_at_least": QUEUE_BULK_TARGET,
            "flow_instructions_ratio_at_most": FLOW_TARGET,
            "operation_instructions_ratio_at_most": OPERATION_TARGET,
        },
        "wrapper_overhead": [
            {**_rounded(asdict(r)), "verdict": _verdict(r.ratio < OVERHEAD_TARGET)}
            for r in overhead
        ],
        "job_cycle": [
            {**_rounded(asdict(c)), "verdict": _verdict(c.redis_ratio <= CYCLE_TARGET)}
            for c in cycles
        ],
        "bulk_add": [
            {
                **_rounded(asdict(r)),
                "verdict": None if target is None else _verdict(r.ratio_to_bullmq >= target),
            }
            for r, target in ((r, bulk_target(r.side)) for r in bulk)
        ],
    }
