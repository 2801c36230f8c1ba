"""The `echomq-scripts` command line: parse options, run one pipeline call, print, exit.

Exit codes: 0 clean (warnings allowed unless --strict), 1 findings or a failed run, 2 usage.
Findings go to stdout (text, JSON or GitHub annotations); a run that cannot go on says why in one
line on stderr.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from .. import __version__
from .errors import ConfigError, EchoMQScriptsError

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")


def _format_option(what: str, *extra: str) -> Callable[[F], F]:
    """`--format text|json` (and the `extra` formats), printing `what` (findings, changes, a
    report)."""
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(["text", "json", *extra]),
        default="text",
        show_default=True,
        help=f"How to print the {what}.",
    )


def _source_options(func: F) -> F:
    """The options every command that reads sources shares."""
    options = [
        click.option(
            "--src",
            type=click.Path(path_type=Path, file_okay=False),
            default=None,
            help="Directory holding the <name>-<N>.lua scripts [default: the project's 'src'"
            " setting, else lua_src].",
        ),
        click.option(
            "--strict/--no-strict",
            default=None,
            help="Treat warnings as errors (default: the project's 'strict' setting).",
        ),
        click.option(
            "--ignore",
            "ignore",
            multiple=True,
            metavar="CODE[,CODE...]",
            help="Drop the findings of these codes (repeatable), besides the project's 'ignore'.",
        ),
        _format_option("findings", "github"),
        click.option(
            "-q",
            "--quiet",
            is_flag=True,
            help="Print the findings only: no summary line, no 'wrote' line.",
        ),
        click.option(
            "--color",
            type=click.Choice(["auto", "always", "never"]),
            default="auto",
            show_default=True,
            help="Colour the text findings; auto: when stdout is a terminal and NO_COLOR is"
            " not set.",
        ),
        click.option(
            "--cache-dir",
            type=click.Path(path_type=Path, file_okay=False),
            default=None,
            help="Where analysis results are kept [default: ~/.cache/echomq-scripts].",
        ),
        click.option("--no-cache", is_flag=True, help="Analyse every script afresh."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="echomq-scripts")
def cli() -> None:
    """Build, check and publish Redis Lua scripts written as <name>-<N>.lua files."""


@cli.command()
@_source_options
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Output directory, replaced as a whole on success [default: the project's 'out'"
    " setting, else build].",
)
@click.option(
    "--previous",
    type=click.Path(path_type=Path, exists=True),
    default=None,
    help="The last release (a bundle, a manifest.json or a build directory): fail when the"
    " version is smaller than the changes since it need.",
)
@click.option(
    "--check",
    "check_only",
    is_flag=True,
    help="Write nothing: run every check, and also fail when a generated file kept in the"
    " repository (not the --out directory) differs from what the sources give.",
)
def build(
    src: Path | None,
    strict: bool | None,
    ignore: tuple[str, ...],
    output_format: str,
    quiet: bool,
    color: str,
    cache_dir: Path | None,
    no_cache: bool,
    out: Path | None,
    previous: Path | None,
    check_only: bool,
) -> None:
    """Check every script and write the resolved scripts, line maps, manifest and bundle.

    \b
    Example:
        echomq-scripts build --src lua_src --out build
    """
    from .build_command import BuildRequest, run_build

    invocation = click.get_current_context().find_root().obj
    request = BuildRequest(
        src=src,
        out=out,
        cache_dir=cache_dir,
        no_cache=no_cache,
        strict=strict,
        output_format=output_format,
        previous=previous,
        check_only=check_only,
        quiet=quiet,
        color=color,
        invocation=invocation if isinstance(invocation, tuple) else None,
        ignore=ignore,
    )
    sys.exit(_run(lambda: run_build(request)))


@cli.command()
@_source_options
def check(
    src: Path | None,
    strict: bool | None,
    ignore: tuple[str, ...],
    output_format: str,
    quiet: bool,
    color: str,
    cache_dir: Path | None,
    no_cache: bool,
) -> None:
    """Run every check on the scripts and write nothing.

    \b
    Example:
        echomq-scripts check --src lua_src --strict
    """
    from .build_command import run_check

    sys.exit(
        _run(
            lambda: run_check(src, strict, cache_dir, no_cache, output_format, quiet, color, ignore)
        )
    )


@cli.command(name="diff")
@click.argument("old", type=click.Path(path_type=Path, exists=True))
@click.argument("new", type=click.Path(path_type=Path, exists=True))
@_format_option("changes")
def diff_command(old: Path, new: Path, output_format: str) -> None:
    """List what changed between two releases and the smallest version bump that fits.

    OLD and NEW are bundles (.tar.gz), manifest.json files or build directories.

    \b
    Example:
        echomq-scripts diff echomq-scripts-0.1.0.tar.gz build/
    """
    import json

    from .npm import PACKAGE
    from .release import diff, load_manifest

    before, after = _run(lambda: load_manifest(old)), _run(lambda: load_manifest(new))
    changes = diff(before, after)
    if output_format == "json":
        click.echo(json.dumps(changes.to_json(), indent=2))
        return
    for label, names in (
        ("added", changes.added),
        ("removed", changes.removed),
        ("changed in body only", changes.body_changed),
        ("changed in signature", changes.signature_changed),
    ):
        click.echo(f"{label}: {', '.join(names) if names else '-'}")
    # The versions are the two releases' own, old -> new: what they are, not a suggestion.
    versions = f"({changes.old_version} -> {changes.new_version})"
    click.echo(f"smallest bump: {changes.bump} {versions}")
    # The npm package carries the bundle's version: it takes the same bump.
    click.echo(f"npm package {PACKAGE}: {changes.bump} {versions}, as the bundle")


@cli.command()
@click.option("--redis", "url", required=True, help="The server, e.g. redis://host:6379/0.")
@click.option(
    "--release",
    type=click.Path(path_type=Path, exists=True),
    default=Path("build"),
    show_default=True,
    help="The release: a build directory or a bundle (.tar.gz).",
)
@click.option("--load", is_flag=True, help="SCRIPT LOAD the scripts a server is missing.")
@_format_option("report")
def verify(url: str, release: Path, load: bool, output_format: str) -> None:
    """Report which of a release's scripts a server (or every primary of a cluster) has.

    Exit code 1 when a script is missing and --load was not given.

    \b
    Example:
        echomq-scripts verify --redis redis://localhost:6379 --release build --load
    """
    from .verify import release_scripts, reports_json
    from .verify import verify as check_servers

    scripts = _run(lambda: release_scripts(release))
    reports = _run(lambda: check_servers(url, scripts, load))
    if output_format == "json":
        click.echo(reports_json(reports))
    else:
        for report in reports:
            for name in report.present:
                click.echo(f"{report.node} {name}: present")
            for name in report.missing:
                state = "loaded" if name in report.loaded else "missing"
                click.echo(f"{report.node} {name}: {state}")
    missing = any(set(r.missing) - set(r.loaded) for r in reports)
    sys.exit(1 if missing else 0)


@cli.command()
@click.argument("location", metavar="SCRIPT:LINE")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The build directory to read [default: the project's 'out' setting, else build].",
)
@click.option(
    "--src",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The source directory, to show the line's text [default: the project's 'src'"
    " setting, else lua_src].",
)
def explain(location: str, out: Path | None, src: Path | None) -> None:
    """Say which source file and line a line of a resolved script came from.

    \b
    Example:
        echomq-scripts explain moveToFinished-14:412
    """
    script, _, raw_line = location.rpartition(":")
    # ASCII digits only: str.isdigit() takes "²" (which int() refuses) and int() takes "٣".
    if not script or re.fullmatch(r"0*[1-9][0-9]*", raw_line) is None:
        raise click.UsageError(f"expected SCRIPT:LINE (e.g. extendLock-2:12), got {location!r}")
    # A number too long for int() (over 4300 digits) is past the end of any script all the same.
    digits = raw_line.lstrip("0")
    line_number = int(digits) if len(digits) <= 18 else sys.maxsize
    from ..runtime.linemap import LineMap
    from .lines import split_lines
    from .release import ReleaseError, inside, read_file

    if src is None or out is None:
        from .config import project_dirs

        project_src, project_out = _run(project_dirs)
        src, out = src or project_src, out or project_out
    script = Path(script).name.removesuffix(".lua")
    map_path = out / "maps" / f"{script}.json"
    try:
        # read_file, as every file of a release: a named pipe is refused, not waited on.
        line_map = LineMap.parse(read_file(map_path))
    except ReleaseError as exc:
        raise click.ClickException(str(exc)) from None
    except FileNotFoundError:
        raise click.ClickException(
            f"{map_path}: no line map for '{script}' (run 'echomq-scripts build' first)"
        ) from None
    except OSError as exc:
        raise click.ClickException(f"{map_path}: unreadable line map: {exc}") from None
    except ValueError as exc:  # LineMap.load checks the whole map, paths and indices included
        raise click.ClickException(f"{map_path}: not a valid line map: {exc}") from None
    origin = line_map.origin(line_number)
    if origin is None:
        raise click.UsageError(
            f"{script} has {len(line_map.lines)} lines; line {raw_line} does not exist"
        )
    source, line = origin
    try:
        # The map's sources do not go up or start at "/"; nor may a symlink lead out of --src.
        source_path = inside(src, source, "the line map's source")
    except ReleaseError as exc:
        raise click.ClickException(f"{map_path}: {exc}") from None
    try:
        text = split_lines(read_file(source_path).decode("utf-8"))[line - 1].strip()
    except (OSError, ReleaseError, IndexError, UnicodeDecodeError):
        text = ""  # the sources are optional: the map alone answers the question
    click.echo(f"{source_path.as_posix()}:{line}" + (f": {text}" if text else ""))


class _SettingsError(click.ClickException):
    """A mistake in the project's settings: exit 2 as a usage mistake, but without click's usage
    lines, which would point at the command line when the file is at fault."""

    exit_code = 2


def _run(action: Callable[[], R]) -> R:
    """`action()`, its mistakes as click reports them: usage and settings errors exit 2, the
    rest 1."""
    from .build_command import UsageProblem

    try:
        return action()
    except ConfigError as exc:
        raise _SettingsError(str(exc)) from None
    except UsageProblem as exc:
        raise click.UsageError(str(exc)) from None
    except EchoMQScriptsError as exc:
        raise click.ClickException(str(exc)) from None


def main(argv: list[str] | None = None) -> None:
    """The command line `argv` (default: the process's); a `build` that passes records it, with
    the working directory, for the console script to answer again without click (entry.py)."""
    args = sys.argv[1:] if argv is None else argv
    cli.main(args=args, prog_name="echomq-scripts", obj=(os.getcwd(), tuple(args)))
