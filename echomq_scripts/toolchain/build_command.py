"""What `echomq-scripts build` and `check` do once cli.py has parsed their options, step by step:
find the cache, take one snapshot of the sources, replay an identical earlier build, else run
the pipeline, print, stamp what passed and record its command line, which the console script
(entry.py, replay.py) then answers without click.

Mistakes in the command line or the project's settings are raised as `UsageProblem` (cli.py
makes them usage errors, exit 2) before anything is printed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from . import replay
from .cache import (
    AnalysisCache,
    build_digest,
    default_cache_dir,
    inside,
    record_invocation,
    replay_build,
    stamp_build,
)
from .config import Config, load_config
from .diagnostics import (
    Diagnostic,
    format_github,
    format_json,
    format_summary,
    format_text,
    plural,
)
from .errors import ConfigError
from .replay import print_replay, summary_line
from .snapshot import Snapshot, StrPath, take_snapshot

if TYPE_CHECKING:
    from .pipeline import BuildResult


class UsageProblem(Exception):
    """A mistake in the command line or in the project's settings."""


@dataclass(frozen=True)
class BuildRequest:
    """`build`'s options as cli.py parsed them."""

    src: Path | None  # None: the project's setting (config.py)
    out: Path | None
    cache_dir: Path | None
    no_cache: bool
    strict: bool | None
    output_format: str  # "text", "json" or "github"
    previous: Path | None
    check_only: bool
    quiet: bool = False  # the findings only: no summary, no `wrote` line
    color: str = "auto"  # colour the text findings: "auto", "always" or "never"
    # The console script's working directory and raw arguments: a build that stamps records
    # them, so that the identical command line is answered before click loads.
    invocation: tuple[str, tuple[str, ...]] | None = None
    ignore: tuple[str, ...] = ()  # --ignore, as given


def run_build(request: BuildRequest) -> int:
    """Check every script and (unless `check_only`) write the build; the exit code."""
    config = _config(request.src, request.strict, request.out, request.ignore)
    # From here on the directories are settled: as typed, else from the project's settings.
    request = replace(request, src=config.src, out=config.out)
    src, out = config.src, config.out
    root = cache_root(request.cache_dir, request.no_cache, src, out)
    # One read of the sources serves the up-to-date check and the build itself.
    snapshot = take_snapshot(src) if src.is_dir() else None
    digest = _stamp_digest(request, root, snapshot)
    if root is not None and digest is not None:
        stamp = replay_build(root, digest)
        if stamp is not None:
            # Nothing changed since a build that passed: say what it said, touch nothing.
            print_replay(stamp, {**_printing(request), "out_text": str(request.out)}, echo)
            _record_invocation(request, root)
            return 0
    result = _run_pipeline(request, config, root, snapshot)
    findings = render(result.diagnostics)
    printing = _printing(request)
    # `build --check` writes nothing: it ends as `check` does.
    clean = _clean_line(result) if request.check_only else ""
    print_findings(findings, printing, clean)
    if result.failed(config.strict):
        return 1
    if request.check_only:
        return _report_stale_package(config, result)
    if printing["output_format"] == "text" and not request.quiet:
        state = "wrote" if result.wrote else "up to date:"
        echo(
            summary_line(
                state, request.out, len(result.scripts), result.analysed, result.from_cache
            )
            + "\n"
        )
    if root is not None and digest is not None and snapshot is not None:
        _stamp(request, root, snapshot, digest, config, result, findings)
    return 0


def run_check(
    src: Path | None,
    strict: bool | None,
    cache_dir: Path | None,
    no_cache: bool,
    output_format: str,
    quiet: bool = False,
    color: str = "auto",
    ignore: tuple[str, ...] = (),
) -> int:
    """`echomq-scripts check`: every check of `build --check` but the generated package's."""
    from . import pipeline  # the checker and the parsers: only a run that checks loads them

    config = _config(src, strict, None, ignore)
    root = cache_root(cache_dir, no_cache, config.src)
    result = pipeline.check(config, AnalysisCache(root))
    printing = {"output_format": output_format, "quiet": "1" if quiet else "", "color": color}
    print_findings(render(result.diagnostics), printing, _clean_line(result))
    return 1 if result.failed(config.strict) else 0


# -- the steps ------------------------------------------------------------------------------


def cache_root(cache_dir: Path | None, no_cache: bool, *trees: Path) -> Path | None:
    """The cache directory to use, refusing one inside the sources or the output."""
    if no_cache:
        return None
    try:
        root = cache_dir or Path(default_cache_dir())
    except ConfigError as exc:
        raise UsageProblem(str(exc)) from None
    for tree in trees:
        if inside(root, tree):
            raise UsageProblem(
                f"the cache directory {root} lies inside {tree}: choose one outside it"
            )
    return root


def _settings(request: BuildRequest) -> str:
    """The command-line settings a build stamp depends on; findings quote --src as typed."""
    ignore = ",".join(sorted(request.ignore))
    return f"src={request.src}\0strict={request.strict}\0ignore={ignore}"


def _stamp_digest(
    request: BuildRequest, root: Path | None, snapshot: Snapshot | None
) -> str | None:
    """The digest a stamp of this build is kept under; None for a build that keeps none (a
    check, one judged against a previous release, one without a cache or sources)."""
    if root is None or snapshot is None or request.check_only or request.previous is not None:
        return None
    return _digest(request, snapshot)


def _digest(request: BuildRequest, snapshot: Snapshot) -> str:
    assert request.src is not None, "settled by run_build"
    assert request.out is not None, "settled by run_build"
    return build_digest(snapshot, request.src, request.out, _settings(request))


def _config(
    src: Path | None, strict: bool | None, out: Path | None, ignore: tuple[str, ...]
) -> Config:
    # A ConfigError goes up as it is: the CLI reports a settings mistake without usage lines.
    return load_config(src, strict, out=out, ignore=ignore)


def _run_pipeline(
    request: BuildRequest, config: Config, root: Path | None, snapshot: Snapshot | None
) -> BuildResult:
    from . import pipeline
    from .release import load_manifest

    cache = AnalysisCache(root)
    if request.check_only:
        return pipeline.check(config, cache, snapshot)
    previous = load_manifest(request.previous) if request.previous is not None else None
    return pipeline.build(config, cache, config.out, snapshot, previous)


def _report_stale_package(config: Config, result: BuildResult) -> int:
    """`build --check`'s last step: the generated package must be what the sources give."""
    from . import pipeline

    # Printed after the findings, so its errors are reported here rather than raised.
    try:
        stale = pipeline.stale_generated(config, result)
    except ConfigError as exc:
        echo(f"Error: {exc}\n", err=True)  # after the findings: not a usage message
        return 2
    for name in stale:
        echo(f"{config.python_package}/{name}: out of date\n", err=True)
    if stale:
        echo("run 'echomq-scripts build' to regenerate it\n", err=True)
        return 1
    return 0


def _stamp(
    request: BuildRequest,
    root: Path,
    snapshot: Snapshot,
    digest: str,
    config: Config,
    result: BuildResult,
    findings: dict[str, str],
) -> None:
    """Stamp a build that passed, and record its command line for the console script."""
    # pyproject.toml was read again by the build: stamp only if it held still meanwhile.
    if _digest(request, snapshot) != digest:
        return
    outputs: dict[StrPath, dict[str, bytes]] = {config.out: result.files}
    if config.python_package is not None:
        outputs[config.python_package] = result.generated
    stamp_build(root, digest, outputs, {"findings": findings, "scripts": len(result.scripts)})
    _record_invocation(request, root)


def _record_invocation(request: BuildRequest, root: Path) -> None:
    if request.invocation is None:
        return
    cwd, argv = request.invocation
    assert request.src is not None, "settled by run_build"
    assert request.out is not None, "settled by run_build"
    record = {
        # As typed, joined to the working directory: the replay resolves them afresh.
        "src": os.path.join(cwd, request.src),
        "out": os.path.join(cwd, request.out),
        "out_text": str(request.out),  # as the summary line spells it
        "cache": os.path.join(cwd, root),
        "settings": _settings(request),
        **_printing(request),
    }
    record_invocation(cwd, list(argv), record)


# -- printing -------------------------------------------------------------------------------


def _printing(request: BuildRequest) -> dict[str, str]:
    """The options that decide what a build prints, as its invocation record keeps them."""
    return {
        "output_format": request.output_format,
        "quiet": "1" if request.quiet else "",
        "color": request.color,
    }


def _clean_line(result: BuildResult) -> str:
    """What a check without findings prints, as mypy's `Success: ...`: how many scripts."""
    if result.diagnostics:
        return ""
    return f"No findings in {plural(len(result.scripts), 'script')}.\n"


def render(diagnostics: list[Diagnostic]) -> dict[str, str]:
    """The findings as each output prints them (cache.FINDING_FORMATS): the text lines, plain
    and coloured, the text's summary line, JSON and GitHub annotations. A stamp keeps them all,
    so the replay prints what this run would."""
    return {
        "text": format_text(diagnostics),
        "color": format_text(diagnostics, color=True),
        "summary": format_summary(diagnostics),
        "json": format_json(diagnostics),
        "github": format_github(diagnostics),
    }


def echo(text: str, *, err: bool = False) -> None:
    """`text` as it is, through click.echo (cli.py has loaded click). Colours are decided here
    (`color_wanted`), so click is told to keep them."""
    if text:
        click.echo(text, nl=False, err=err, color=True)


def print_findings(findings: dict[str, str], printing: dict[str, str], clean: str) -> None:
    """The findings and their summary on stdout, through click."""
    replay.print_findings(findings, printing, clean, echo)
