"""The replay of an unchanged build: what the console script answers before click loads.

A build that passes stamps its inputs and outputs (cache.py) and records its command line; the
identical command line, run again in the same directory, is answered here from that stamp when
the sources and the outputs are still what the build read and wrote. This module and what it
imports are the whole of that path, so it imports only the lightest of the standard library
(no pathlib, json, re, typing or dataclasses): see docs/benchmarks.md.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: see cache.py
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def recorded_replay(cwd: str, argv: list[str]) -> tuple[dict[str, Any], dict[str, str]] | None:
    """What the identical command line's last build printed, as its stamp and its recorded
    invocation (the output format, `--out` as typed, `--quiet`, `--color`), when its sources
    and outputs are still what that build read and wrote; None to leave the command line to
    cli.py. It prints nothing, so a failure here never leaves half an answer behind."""
    from .cache import digest_of, load_index, recorded_invocation, replay_build, save_index

    record = recorded_invocation(cwd, argv)
    if record is None or record["output_format"] not in ("text", "json", "github"):
        return None
    # Recorded as typed (joined to the working directory), not resolved: a symlink repointed
    # since names other files, which the digest (it resolves them) then finds.
    src, out, root = record["src"], record["out"], record["cache"]
    if not os.path.isdir(src):
        return None
    # The digest and the outputs' hashes as a build computes them from the bytes, but each
    # file that still has the stat it had when this command line's replay last read it is
    # taken at the hash it had then (fileindex.py): a no-op reads almost nothing.
    index = load_index(cwd, argv)
    digest = digest_of(index.tree_hashes(src), src, out, record["settings"], index)
    stamp = replay_build(root, digest, index)
    save_index(cwd, argv, index, (src, out), complete=stamp is not None)
    if stamp is None:
        return None
    return stamp, record


def color_wanted(choice: str, stream: Any = None) -> bool:
    """Whether text findings get colours: `--color always` or `never` as said; `auto` when
    `stream` (default stdout) is a terminal and NO_COLOR is unset or empty (no-color.org)."""
    if choice != "auto":
        return choice == "always"
    stream = sys.stdout if stream is None else stream
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty is not None and isatty())
    except ValueError:  # a closed stream
        return False


def _write(text: str, err: bool = False) -> None:
    """`text` to stdout or stderr, flushed at once (so the two keep their order), as click.echo
    writes it: through the stream's encoding, and as UTF-8 where that encoding cannot take it."""
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


def summary_line(state: str, out: object, scripts: int, analysed: int, cached: int) -> str:
    noun = "script" if scripts == 1 else "scripts"
    name = str(out)
    if not name.isprintable():
        # A newline or a byte that is not UTF-8 in --out: escaped as a finding's names are, so
        # the line stays one line and can be written to any stream (the import is rare).
        from .diagnostics import escape_controls

        name = escape_controls(name)
    return f"{state} {name} ({scripts} {noun}, {analysed} analysed, {cached} from cache)"


def print_findings(
    findings: dict[str, str],
    printing: dict[str, str],
    clean: str = "",
    write: Callable[..., None] = _write,
) -> None:
    """The findings on stdout as `printing` says (its output format, quiet, color): in a format
    for programs alone; in text, coloured or not, then the summary line (or `clean` when there
    are none) unless quiet."""
    output_format = printing["output_format"]
    if output_format != "text":
        write(findings[output_format])
        return
    write(findings["color" if color_wanted(printing["color"]) else "text"])
    if not printing["quiet"]:
        write(findings["summary"] or clean)


def print_replay(
    stamp: dict[str, Any],
    record: dict[str, str],
    write: Callable[..., None] = _write,
) -> None:
    """What an up-to-date build prints, from its stamp and the recorded options of its command
    line, through `write(text, err=...)`: what the build printed, then its `up to date` line."""
    scripts = stamp["scripts"]
    print_findings(stamp["findings"], record, write=write)
    if record["output_format"] == "text" and not record["quiet"]:
        write(summary_line("up to date:", record["out_text"], scripts, 0, scripts) + "\n")
