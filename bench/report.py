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
from timing import Measurement


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
