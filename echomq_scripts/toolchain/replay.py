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


def recorded_replay(cwd: str, argv: list[str]) -> tuple[dict[str, Any], str, str] | None:
    """What the identical command line's last build printed, as its stamp, output format and
    `--out` as typed, when its sources and outputs are still what that build read and wrote;
    None to leave the command line to cli.py. It prints nothing, so a failure here never
    leaves half an answer behind."""
    from .cache import build_digest, recorded_invocation, replay_build
    from .snapshot import take_snapshot

    record = recorded_invocation(cwd, argv)
    if record is None:
        return None
    # Recorded as typed (joined to the working directory), not resolved: a symlink repointed
    # since names other files, which the digest (it resolves them) then finds.
    src, out, root = record["src"], record["out"], record["cache"]
    if not os.path.isdir(src):
        return None
    digest = build_digest(take_snapshot(src), src, out, record["settings"])
    stamp = replay_build(root, digest)
    if stamp is None:
        return None
    return stamp, record["output_format"], record["out_text"]


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


def print_replay(
    stamp: dict[str, Any],
    output_format: str,
    out: object,
    write: Callable[..., None] = _write,
) -> None:
    """What an up-to-date build prints, from its stamp, through `write(text, err=...)`."""
    findings, scripts = stamp["findings"], stamp["scripts"]
    if output_format == "json":
        write(findings["json"])
        return
    write(findings["text"], err=True)
    write(summary_line("up to date:", out, scripts, 0, scripts) + "\n")
