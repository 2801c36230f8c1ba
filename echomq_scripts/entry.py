"""The `echomq-scripts` command. A no-op build, nothing changed since a build that passed, is
answered here before the CLI framework loads: importing it costs more than the rest of such a
build. Every other command line, and every build with work to do, goes to cli.py.

The answer is the one the full command gives: the same up-to-date check (cache.inputs_digest and
cache.replay_build, on one snapshot of the sources), the same findings and the same summary line.
Whatever this module does not recognise as a plain build (another command, --check, --previous,
--no-cache, --help, a misspelt option) it leaves to cli.py untouched, and so does any error.
"""

from __future__ import annotations

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


def answer_no_op(argv: list[str]) -> int | None:
    """0 after printing what the identical earlier build printed; None to hand over to cli.py."""
    global prepared
    options = _plain_build(argv)
    if options is None:
        return None
    try:
        from pathlib import Path

        from .cache import default_cache_dir, inputs_digest, replay_build
        from .snapshot import take_snapshot

        src, out = Path(str(options["src"])), Path(str(options["out"]))
        cache_dir = options["cache_dir"]
        cache_root = Path(cache_dir) if isinstance(cache_dir, str) else default_cache_dir()
        if not src.is_dir() or any(
            cache_root.resolve().is_relative_to(tree.resolve()) for tree in (src, out)
        ):
            return None  # cli.py says what is wrong
        snapshot = take_snapshot(src)
        settings = f"src={src}\0strict={options['strict']}"  # as cli.build spells it
        digest = inputs_digest(snapshot, src, out, settings)
        stamp = replay_build(cache_root, digest)
        if stamp is None:
            prepared = ((str(src), str(out), str(cache_root), settings), snapshot, digest)
            return None
        findings, scripts = stamp["findings"], stamp["scripts"]
        if options["format"] == "json":
            sys.stdout.write(findings["json"])
        else:
            sys.stderr.write(findings["text"])
            noun = "script" if scripts == 1 else "scripts"
            summary = f"({scripts} {noun}, 0 analysed, {scripts} from cache)"
            sys.stdout.write(f"up to date: {out} {summary}\n")
        return 0
    except Exception:  # the full command line meets the same problem and reports it properly
        prepared = None
        return None


def main() -> None:
    code = answer_no_op(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from .cli import main as full_command_line

    full_command_line()
