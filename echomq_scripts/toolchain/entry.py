"""The `echomq-scripts` console script.

One command line is answered here, before the CLI framework loads: the very command line (the
same arguments, in the same working directory) of an earlier `build` that passed, when the
sources and the outputs are still what that build read and wrote. The build recorded it, so
nothing is parsed: the answer is its stamp, replayed with the standard library's lightest
modules. Every other command line goes to cli.py, which parses it with click; without the
`build` extra installed, this says in one line what to install instead.
"""

from __future__ import annotations

import os
import sys

# What the toolchain imports beyond the runtime's redis-py: the `build` extra's packages, as
# modules (tests/test_architecture.py holds the two lists together).
TOOLCHAIN_PACKAGES = ("click", "jinja2", "lupa", "tree_sitter", "tree_sitter_lua", "jsonschema")


def replayed(argv: list[str]) -> bool:
    """Whether the command line was answered from the record of its last build."""
    from .replay import print_replay, recorded_replay

    try:
        found = recorded_replay(os.getcwd(), argv)
    except Exception:  # a record or stamp it cannot read: the full command line will do
        return False
    if found is None:
        return False
    print_replay(*found)  # outside the try: an answer is printed once or not at all
    return True


def main() -> None:
    argv = sys.argv[1:]
    try:
        if replayed(argv):
            sys.exit(0)
        # click at once, Jinja2, lupa and tree-sitter when a build needs them: any may be missing.
        from .cli import main as full_command_line

        full_command_line(argv)
    except ModuleNotFoundError as exc:
        if exc.name not in TOOLCHAIN_PACKAGES:
            raise
        sys.stderr.write(
            f"echomq-scripts: the build toolchain is not installed (no {exc.name}):"
            " pip install 'echomq-scripts[build]'\n"
        )
        sys.exit(1)
    except KeyboardInterrupt:
        sys.stderr.write("\nAborted!\n")  # what click prints
        sys.exit(1)
    except BrokenPipeError:
        # As click does: the reader went away; say nothing more.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - replaces stdout for the exit flush
        sys.exit(1)
