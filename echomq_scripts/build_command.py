"""What `echomq-scripts build` does once its options are parsed, without the CLI framework.

cli.py's `build` parses the options with click and calls `run_build`; the console script
(entry.py) calls it directly for a plain build, so a build with work to do does not pay for
importing click either. A plain build's mistakes are raised before it prints anything:
`UsageProblem` (cli.py makes it a usage error, exit 2) and `EchoMQScriptsError` (exit 1), so the
console script can hand such a run to cli.py, which runs it again, meets the same mistake and
reports it. (A build that fails writing the generated package may have written --out already,
as it does through cli.py; `build --check`, which only cli.py runs, reports a stale package after
its findings.)
"""

from __future__ import annotations

import os
import sys

from .errors import ConfigError
from .snapshot import Snapshot, StrPath

# Light to import (no pathlib until a build runs): entry.py takes the settings and the summary
# line from here on the no-op path.
TYPE_CHECKING = False  # not typing's: see cache.py
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from .diagnostics import Diagnostic


class UsageProblem(Exception):
    """A mistake in the command line or in the project's settings."""


def build_settings(src: object, strict: bool | None) -> str:
    """The command-line settings a build stamp depends on; findings quote --src as typed."""
    return f"src={src}\0strict={strict}"


def summary_line(state: str, out: object, scripts: int, analysed: int, cached: int) -> str:
    noun = "script" if scripts == 1 else "scripts"
    return f"{state} {out} ({scripts} {noun}, {analysed} analysed, {cached} from cache)"


def inside(path: StrPath, tree: StrPath) -> bool:
    """Whether `path` lies in `tree` once both are resolved (what Path.is_relative_to answers
    for resolved paths, without pathlib: the console script asks it on the no-op path)."""
    real, real_tree = os.path.realpath(path), os.path.realpath(tree)
    return real == real_tree or real.startswith(os.path.join(real_tree, ""))


def cache_root(cache_dir: Path | None, no_cache: bool, *trees: Path) -> Path | None:
    """The cache directory to use, refusing one inside the sources or the output."""
    from pathlib import Path

    from .cache import default_cache_dir

    if no_cache:
        return None
    root = cache_dir or Path(default_cache_dir())
    for tree in trees:
        if inside(root, tree):
            raise UsageProblem(
                f"the cache directory {root} lies inside {tree}: choose one outside it"
            )
    return root


def render(diagnostics: list[Diagnostic]) -> dict[str, str]:
    """The findings as each format prints them: text for stderr, JSON for stdout."""
    from .diagnostics import Severity, format_json, format_text

    text = ""
    if diagnostics:
        errors = sum(1 for d in diagnostics if d.severity is Severity.ERROR)
        warnings = len(diagnostics) - errors
        text = format_text(diagnostics) + f"{errors} error(s), {warnings} warning(s)\n"
    return {"text": text, "json": format_json(diagnostics)}


def emit(text: str, *, err: bool = False) -> None:
    """Write `text` as click.echo does: nothing to a closed stream, UTF-8 to one whose encoding
    cannot take it, flushed at once (so stdout and stderr keep their order)."""
    stream = sys.stderr if err else sys.stdout
    if stream is None or not text:
        return
    try:
        stream.write(text)
    except UnicodeEncodeError:
        buffer = getattr(stream, "buffer", None)
        stream.flush()
        if buffer is not None:
            buffer.write(text.encode("utf-8", "replace"))
        else:
            stream.write(text.encode("ascii", "replace").decode("ascii"))
    stream.flush()


def replay(stamp: dict[str, Any], output_format: str, out: object) -> tuple[str, str]:
    """What an up-to-date build prints, from its stamp: (stdout, stderr)."""
    findings, scripts = stamp["findings"], stamp["scripts"]
    if output_format == "json":
        return findings["json"], ""
    return summary_line("up to date:", out, scripts, 0, scripts) + "\n", findings["text"]


def print_findings(findings: dict[str, str], output_format: str) -> None:
    if output_format == "json":
        emit(findings["json"])
    else:
        emit(findings["text"], err=True)


def print_summary(
    output_format: str, state: str, out: Path, scripts: int, analysed: int, cached: int
) -> None:
    if output_format == "text":
        emit(summary_line(state, out, scripts, analysed, cached) + "\n")


def run_build(
    *,
    src: Path,
    out: Path,
    cache_dir: Path | None,
    no_cache: bool,
    strict: bool | None,
    output_format: str,
    previous: Path | None,
    check_only: bool,
    prepared: tuple[Snapshot, str] | None = None,
) -> int:
    """Check every script and (unless `check_only`) write the build; the exit code.

    `prepared` is a snapshot of `src` and its inputs digest that the caller already made for
    these very options and found no stamp for.
    """
    from .cache import inputs_digest, replay_build, stamp_build
    from .snapshot import take_snapshot

    root = cache_root(cache_dir, no_cache, src, out)
    settings = build_settings(src, strict)
    # One read of the sources serves the up-to-date check and the build itself.
    snapshot: Snapshot | None
    digest: str | None = None
    # A build judged against a previous release, a check and a build without a cache keep no
    # stamp: only a build that may keep one takes the caller's digest.
    may_stamp = root is not None and not check_only and previous is None
    if prepared is not None:
        snapshot, digest = prepared[0], prepared[1] if may_stamp else None
    else:
        snapshot = take_snapshot(src) if src.is_dir() else None
    if may_stamp and root is not None and snapshot is not None:
        if digest is None:
            digest = inputs_digest(snapshot, src, out, settings)
            stamp = replay_build(root, digest)
        else:
            stamp = None  # the caller looked and found none
        if stamp is not None:
            # Nothing changed since a build that passed: say what it said, touch nothing.
            stdout, stderr = replay(stamp, output_format, out)
            emit(stderr, err=True)
            emit(stdout)
            return 0

    from . import pipeline
    from .cache import AnalysisCache
    from .config import load_config
    from .release import load_manifest

    try:
        config = load_config(src, strict)
        last_release = load_manifest(previous) if previous is not None else None
        cache = AnalysisCache(root)
        if check_only:
            result = pipeline.check(config, cache, snapshot)
        else:
            result = pipeline.build(config, cache, out, snapshot, last_release)
    except ConfigError as exc:
        raise UsageProblem(str(exc)) from None
    findings = render(result.diagnostics)
    print_findings(findings, output_format)
    if result.failed(config.strict):
        return 1
    if check_only:
        # Printed after the findings, so its errors are reported here rather than raised.
        try:
            stale = pipeline.stale_generated(config, result)
        except ConfigError as exc:
            emit(f"Error: {exc}\n", err=True)  # after the findings: not a usage message
            return 2
        for name in stale:
            emit(f"{config.python_package}/{name}: out of date\n", err=True)
        if stale:
            emit("run 'echomq-scripts build' to regenerate it\n", err=True)
            return 1
        return 0
    state = "wrote" if result.wrote else "up to date:"
    count = len(result.scripts)
    print_summary(output_format, state, out, count, result.analysed, result.from_cache)
    # A digest exists only where a stamp may be kept (see above). pyproject.toml was read again
    # by the build: stamp only if it held still meanwhile.
    if (
        digest is not None
        and root is not None
        and snapshot is not None
        and inputs_digest(snapshot, src, out, settings) == digest
    ):
        outputs: dict[StrPath, dict[str, bytes]] = {out: result.files}
        if config.python_package is not None:
            outputs[config.python_package] = result.generated
        stamp_build(root, digest, outputs, {"findings": findings, "scripts": count})
    return 0
