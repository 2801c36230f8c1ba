"""The `echomq-scripts` command. A plain `build` (the options below, no --check, --previous or
--no-cache) runs here without the CLI framework, whose import costs more than a no-op build:
an up-to-date build is answered from its stamp with nothing but the standard library's lightest
modules, and a build with work to do goes straight to build_command.run_build. Every other
command line goes to cli.py untouched, and so does a plain build that meets a mistake: cli.py
runs it again, meets the same mistake and reports it as click does (build_command raises a plain
build's mistakes before printing anything).
"""

from __future__ import annotations

import os
import sys

# The options of `build` this path understands, and the name cli.build gives each value.
_VALUE_OPTIONS = {"--src": "src", "--out": "out", "--cache-dir": "cache_dir", "--format": "format"}
_STRICT_FLAGS = {"--strict": True, "--no-strict": False}


def _plain_build(argv: list[str]) -> dict[str, str | bool | None] | None:
    """The options of `build` as cli.build would receive them; None for anything else."""
    if not argv or argv[0] != "build":
        return None
    found: dict[str, str | bool | None] = {
        "src": "lua_src",
        "out": "build",
        "cache_dir": None,
        "format": "text",
        "strict": None,
    }
    rest = iter(argv[1:])
    for arg in rest:
        name, equals, value = arg.partition("=")
        if name in _VALUE_OPTIONS:
            if not equals:
                value = next(rest, "")
            if not value:
                return None
            found[_VALUE_OPTIONS[name]] = value
        elif arg in _STRICT_FLAGS:
            found["strict"] = _STRICT_FLAGS[arg]
        else:
            return None
    if found["format"] not in ("text", "json"):
        return None
    return found


def path_text(value: str) -> str:
    """`str(pathlib.Path(value))` on POSIX, without importing pathlib: click hands cli.build a
    Path, and the settings a stamp depends on and the summary line spell it so."""
    if value.startswith("//") and not value.startswith("///"):
        root = "//"
    elif value.startswith("/"):
        root = "/"
    else:
        root = ""
    parts = [part for part in value.split("/") if part and part != "."]
    return root + "/".join(parts) if root or parts else "."


def _stamped_answer(
    options: dict[str, str | bool | None],
) -> tuple[str, str] | tuple[dict[str, bytes | None], str] | None:
    """What the identical earlier build printed, as (stdout, stderr); else, when a build can
    run here, (the snapshot of the sources, their inputs digest); None to hand over."""
    from .build_command import build_settings, inside, replay
    from .cache import default_cache_dir, inputs_digest, replay_build
    from .snapshot import take_snapshot

    src, out = path_text(str(options["src"])), path_text(str(options["out"]))
    cache_dir = options["cache_dir"]
    cache_root = path_text(cache_dir if isinstance(cache_dir, str) else default_cache_dir())
    strict = options["strict"]
    # click refuses a file where a directory is asked for, or one it cannot read, and
    # build_command a cache inside the sources or the output: all for cli.py to say.
    if not (os.path.isdir(src) and os.access(src, os.R_OK)) or any(
        os.path.exists(p) and not (os.path.isdir(p) and os.access(p, os.R_OK))
        for p in (out, cache_root)
    ):
        return None
    if inside(cache_root, src) or inside(cache_root, out):
        return None
    snapshot = take_snapshot(src)
    settings = build_settings(src, strict if isinstance(strict, bool) else None)
    digest = inputs_digest(snapshot, src, out, settings)
    stamp = replay_build(cache_root, digest)
    if stamp is None:
        return snapshot, digest
    return replay(stamp, str(options["format"]), out)


def _build_here(
    options: dict[str, str | bool | None], prepared: tuple[dict[str, bytes | None], str]
) -> int | None:
    """The build, run without click; None when it met a mistake for cli.py to report."""
    from pathlib import Path

    from .build_command import UsageProblem, run_build
    from .errors import EchoMQScriptsError

    cache_dir = options["cache_dir"]
    strict = options["strict"]
    try:
        return run_build(
            src=Path(str(options["src"])),
            out=Path(str(options["out"])),
            cache_dir=Path(cache_dir) if isinstance(cache_dir, str) else None,
            no_cache=False,
            strict=strict if isinstance(strict, bool) else None,
            output_format=str(options["format"]),
            previous=None,
            check_only=False,
            prepared=prepared,
        )
    except (UsageProblem, EchoMQScriptsError):
        return None


def answer_build(argv: list[str]) -> int | None:
    """The exit code of a plain build run here (after printing what it prints); None to hand
    the command line over to cli.py."""
    options = _plain_build(argv)
    if options is None:
        return None
    try:
        answer = _stamped_answer(options)
    except Exception:  # cli.py meets the same problem and reports it properly
        return None
    if answer is None:
        return None
    try:
        if isinstance(answer[0], dict):
            return _build_here(options, (answer[0], str(answer[1])))
        from .build_command import emit

        emit(str(answer[1]), err=True)
        emit(str(answer[0]))
    except BrokenPipeError:
        # As click does: the reader went away; say nothing more.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces stdout for the exit flush
        return 1
    return 0


def main() -> None:
    try:
        code = answer_build(sys.argv[1:])
        if code is None:
            from .cli import main as full_command_line
    except KeyboardInterrupt:
        sys.stderr.write("\nAborted!\n")  # what click prints
        sys.exit(1)
    if code is not None:
        sys.exit(code)
    full_command_line()
