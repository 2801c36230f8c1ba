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


def replay_invocation(cwd: str, argv: list[str]) -> bool:
    """Answer `argv`, run in `cwd`, from the stamp of the identical command line's last build,
    when its sources and outputs are still what that build read and wrote; False (having
    printed nothing) to leave the command line to cli.py."""
    from .cache import build_digest, recorded_invocation, replay_build
    from .snapshot import take_snapshot

    record = recorded_invocation(cwd, argv)
    if record is None:
        return False
    src, out, root = record["src"], record["out"], record["cache"]
    if not os.path.isdir(src):
        return False
    digest = build_digest(take_snapshot(src), src, out, record["settings"])
    stamp = replay_build(root, digest)
    if stamp is None:
        return False
    print_replay(stamp, record["output_format"], record["out_text"])
    return True


def _write(text: str, err: bool = False) -> None:
    """`text`, as UTF-8, to stdout or stderr, flushed at once (so the two keep their order):
    the bytes that click.echo, which the rest of the command line prints with, writes."""
    stream = sys.stderr if err else sys.stdout
    if stream is None or not text:
        return
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(text)
    else:
        stream.flush()
        buffer.write(text.encode("utf-8", "replace"))
    stream.flush()


def summary_line(state: str, out: object, scripts: int, analysed: int, cached: int) -> str:
    noun = "script" if scripts == 1 else "scripts"
    return f"{state} {out} ({scripts} {noun}, {analysed} analysed, {cached} from cache)"


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
