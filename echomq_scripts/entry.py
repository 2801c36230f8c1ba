"""The `echomq-scripts` command. A no-op build, nothing changed since a build that passed, is
answered here before the CLI framework loads: importing it costs more than the rest of such a
build. Every other command line, and every build with work to do, goes to cli.py.

The answer is the one the full command gives: the same up-to-date check (cache.inputs_digest and
cache.replay_build, on one snapshot of the sources), the same findings and the same summary line.
Whatever this module does not recognise as a plain build (another command, --check, --previous,
--no-cache, --help, a misspelt option) it leaves to cli.py untouched, and so does any error.
"""

from __future__ import annotations

import os
import sys

# The options of `build` this path understands, and the name cli.build gives each value.
_VALUE_OPTIONS = {"--src": "src", "--out": "out", "--cache-dir": "cache_dir", "--format": "format"}
_STRICT_FLAGS = {"--strict": True, "--no-strict": False}

# What the up-to-date check read, for cli.build to reuse when it takes over: (the options it
# concerns, the snapshot of the sources, the inputs digest).
prepared: tuple[tuple[str, str, str, str], dict[str, bytes | None], str] | None = None


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


def build_settings(src: object, strict: bool | None) -> str:
    """The command-line settings a build stamp depends on; findings quote --src as typed."""
    return f"src={src}\0strict={strict}"


def summary_line(state: str, out: object, scripts: int, analysed: int, cached: int) -> str:
    noun = "script" if scripts == 1 else "scripts"
    return f"{state} {out} ({scripts} {noun}, {analysed} analysed, {cached} from cache)"


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


def _inside(path: str, tree: str) -> bool:
    """Whether `path` lies in `tree` once both are resolved (Path.is_relative_to's answer)."""
    real, real_tree = os.path.realpath(path), os.path.realpath(tree)
    return real == real_tree or real.startswith(os.path.join(real_tree, ""))


def _stamped_answer(options: dict[str, str | bool | None]) -> tuple[str, str] | None:
    """What the identical earlier build printed (stdout, stderr), or None to hand over."""
    global prepared
    from .cache import default_cache_dir, inputs_digest, replay_build
    from .snapshot import take_snapshot

    src, out = path_text(str(options["src"])), path_text(str(options["out"]))
    cache_dir = options["cache_dir"]
    cache_root = path_text(cache_dir if isinstance(cache_dir, str) else default_cache_dir())
    strict = options["strict"]
    if not os.path.isdir(src) or _inside(cache_root, src) or _inside(cache_root, out):
        return None  # cli.py says what is wrong
    snapshot = take_snapshot(src)
    settings = build_settings(src, strict if isinstance(strict, bool) else None)
    digest = inputs_digest(snapshot, src, out, settings)
    stamp = replay_build(cache_root, digest)
    if stamp is None:
        prepared = ((src, out, cache_root, settings), snapshot, digest)
        return None
    findings, scripts = stamp["findings"], stamp["scripts"]
    if options["format"] == "json":
        return findings["json"], ""
    return summary_line("up to date:", out, scripts, 0, scripts) + "\n", findings["text"]


def answer_no_op(argv: list[str]) -> int | None:
    """0 after printing what the identical earlier build printed; None to hand over to cli.py."""
    global prepared
    options = _plain_build(argv)
    if options is None:
        return None
    try:
        answer = _stamped_answer(options)
    except Exception:  # the full command line meets the same problem and reports it properly
        prepared = None
        return None
    if answer is None:
        return None
    stdout, stderr = answer
    try:
        sys.stderr.write(stderr)
        sys.stdout.write(stdout)
        sys.stdout.flush()
    except BrokenPipeError:
        # As click does: the reader went away; say nothing more.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces stdout for the exit flush
        return 1
    return 0


def main() -> None:
    try:
        code = answer_no_op(sys.argv[1:])
    except KeyboardInterrupt:
        sys.stderr.write("Aborted!\n")  # what click prints
        sys.exit(1)
    if code is not None:
        sys.exit(code)
    from .cli import main as full_command_line

    full_command_line()
