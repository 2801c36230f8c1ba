"""The examples of README.md and docs/*.md, run as tests with Sybil (the root conftest.py).

How a page marks what runs (README.md, "Examples that run", says the same for writers):

- A fenced block with the info string `console` is a transcript. Each line that starts with `$ `
  is a command, run by bash; the lines up to the next command are what it prints, stdout and
  stderr together as a terminal shows them. A command's exit code is not compared, but
  `echo $?` shows it. Each transcript starts in the page's project directory; a `cd` lasts to
  the end of its block.
- A `python` block is run in the page's namespace (in the project's directory, importable, when
  the page has one). When the next block, with only blank lines between, has no info string,
  that block is what the code prints on stdout.
- A paragraph that is only a path in backticks and a colon (`` `lua_src/a-1.lua`: ``), followed
  by a fenced block, shows a file of the page's project; `<!-- file: PATH` ... `-->` is one the
  reader does not need to see. A path under `/tmp/` is a file outside the project. Files shown
  after a transcript start a new project. `<!-- project: NAME -->` starts a new, empty one in
  the directory NAME. A page whose transcripts come before any file runs them in a copy of this
  repository (its `pyproject.toml`, `lua_src/`, `echomq_scripts/generated/` and `tests/node/`),
  the directory `echomq-scripts`.
- `<!-- run: COMMAND -->` is a set-up step run before the next transcript (an edit the prose
  describes); it must exit with 0, and its output is not shown.
- Any other block (no info string, `text`, `lua`, `toml`, `json`, `js`, `sh`) is illustrative
  and not run.

What varies from run to run is normalised, and only this:

- `...` matches any text, within a line or across lines, as doctest's ELLIPSIS.
- `/tmp/` in a command or a file is the test's own temporary directory, and that directory is
  shown as `/tmp` in the output: examples can name `/tmp/bd` without touching the real `/tmp`.
- `<!-- redis-port: 7989 -->` says that the page's commands and output write the port of the
  tests' private redis-server as `7989`, and `<!-- redis-cluster-port: 43385 -->` one port of
  their private cluster as `43385`. Python examples get the server's port as `port` and the
  cluster's as `cluster_port`. Each page starts with both emptied of keys and scripts.

`pytest --update-docs` (`make docs-update`) rewrites every shown output that differs with what
the example printed, in place; review the diff. A `...` of an output that still matches is kept.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sybil import Document, Example, Region
from sybil.parsers.markdown.lexers import RawFencedCodeBlockLexer

from tests.support.redis_cluster import RedisCluster
from tests.support.redis_server import RedisServer

REPO = Path(__file__).resolve().parents[2]

# Set by the root conftest.py from `--update-docs`.
UPDATE = False
# The rewrites `--update-docs` collected: path -> [(start, end, new text)].
REWRITES: dict[str, list[tuple[int, int, str]]] = {}

_FILE_LINE = re.compile(r"^`(?P<path>/?[\w./-]+\.[A-Za-z]\w*|[\w./-]+/[\w.-]+)`:$")
_COMMENT = re.compile(
    r"^<!-- (?P<directive>file|run|redis-port|redis-cluster-port|project): ?(?P<arguments>[^\n]*?)"
    r"(?:\s*-->$|\n(?P<body>.*?)^-->$)",
    re.MULTILINE | re.DOTALL,
)
_CHECKER = doctest.OutputChecker()


def matches(want: str, got: str) -> bool:
    """Whether output `got` is what an example shows, `...` matching anything."""
    return want == got or _CHECKER.check_output(want, got, doctest.ELLIPSIS)


@dataclass
class Services:
    """The session's private Redis servers, started when an example first needs one (the root
    conftest.py's `docs_services`)."""

    server: Callable[[], RedisServer]
    cluster: Callable[[], RedisCluster]


@dataclass
class Page:
    """What the examples of one page share: its temporary directory and its current project."""

    tmp: Path
    services: Services | None = None
    project: Path | None = None
    # Whether the project's last file came after its last transcript (the next file starts anew).
    ran: bool = False
    pending: list[str] = field(default_factory=list)
    redis_port: str | None = None
    cluster_port_shown: str | None = None
    cwd: Path | None = None
    status: int = 0
    fresh_server: bool = False
    fresh_cluster: bool = False
    # The directory name of the next project (`<!-- project: NAME -->`).
    next_name: str = "project"

    def new_project(self, name: str) -> Path:
        # One project at a time, so that its path is the same whatever came before on the page.
        if self.project is not None:
            shutil.rmtree(self.project)
        self.project = self.tmp / name
        self.project.mkdir(parents=True)
        self.cwd = self.project
        self.ran = False
        return self.project

    def ensure_project(self) -> Path:
        if self.project is None:
            root = self.new_project("echomq-scripts")
            shutil.copy2(REPO / "pyproject.toml", root)
            shutil.copytree(REPO / "lua_src", root / "lua_src")
            generated = root / "echomq_scripts" / "generated"
            shutil.copytree(
                REPO / "echomq_scripts" / "generated",
                generated,
                ignore=shutil.ignore_patterns("__pycache__"),
            )
            # bundle.md runs the Node.js consumer from the repository root.
            (root / "tests").mkdir()
            (root / "tests" / "node").symlink_to(REPO / "tests" / "node")
        assert self.project is not None
        return self.project

    def port(self) -> int:
        """The private server's port; the first use on a page empties it of keys and scripts."""
        assert self.services is not None
        server = self.services.server()
        if not self.fresh_server:
            client = server.client()
            client.flushall()
            client.script_flush()
            client.close()
            self.fresh_server = True
        return server.port

    def cluster_port(self) -> int:
        """A port of the private cluster; the first use on a page empties every primary."""
        assert self.services is not None
        cluster = self.services.cluster()
        if not self.fresh_cluster:
            for primary in cluster.primary_clients():
                primary.flushall()
                primary.script_flush()
                primary.close()
            self.fresh_cluster = True
        return cluster.nodes[0].port

    def in_tmp(self, text: str) -> str:
        """A command or file as run: the page's `/tmp/` is the test's temporary directory."""
        text = text.replace("/tmp/", f"{self.tmp}/")
        if self.redis_port is not None and self.redis_port in text:
            text = text.replace(self.redis_port, str(self.port()))
        if self.cluster_port_shown is not None and self.cluster_port_shown in text:
            text = text.replace(self.cluster_port_shown, str(self.cluster_port()))
        return text

    def shown(self, text: str) -> str:
        """Output as the page shows it: the temporary directory as `/tmp`, the port as declared."""
        for tmp in {str(self.tmp.resolve()), str(self.tmp)}:
            text = text.replace(tmp, "/tmp")
        if self.redis_port is not None and self.fresh_server:
            text = text.replace(str(self.port()), self.redis_port)
        if self.cluster_port_shown is not None and self.fresh_cluster:
            text = text.replace(str(self.cluster_port()), self.cluster_port_shown)
        return text

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("CI", None)
        env.update(
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
            PYTHONPATH=str(REPO),
            PYTHONUNBUFFERED="1",
            PYTHONDONTWRITEBYTECODE="1",
            ECHOMQ_SCRIPTS_CACHE_DIR=str(self.tmp / "cache"),
            NO_COLOR="1",
            TERM="dumb",
            COLUMNS="100",
        )
        return env

    def shell(self, command: str) -> tuple[str, int]:
        """Run one command as bash would at the prompt: in the current directory, with `$?` the
        last command's code; a `cd` carries over to the next command."""
        self.ensure_project()
        assert self.cwd is not None
        state = self.tmp / "state"
        script = (
            f"cd {_quote(str(self.cwd))}\n(exit {self.status})\n{self.in_tmp(command)}\n"
            f'__code=$?; pwd > {_quote(str(state))}; exit "$__code"\n'
        )
        done = subprocess.run(
            ["bash", "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.environment(),
            timeout=300,
            check=False,
        )
        self.status = done.returncode
        if state.exists():
            self.cwd = Path(state.read_text().strip())
        return self.shown(done.stdout.decode("utf-8", "backslashreplace")), done.returncode


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def open_page(namespace: dict[str, Any]) -> None:
    """Sybil's set-up of a page: its temporary directory."""
    namespace["__page__"] = Page(Path(tempfile.mkdtemp(prefix="docs-")))


def close_page(namespace: dict[str, Any]) -> None:
    page = namespace.pop("__page__")
    assert isinstance(page, Page)
    shutil.rmtree(page.tmp, ignore_errors=True)
    # A page's own project's modules (python.md imports `worker`) go with it.
    if page.project is not None:
        for name, module in list(sys.modules.items()):
            if str(getattr(module, "__file__", "") or "").startswith(str(page.tmp)):
                del sys.modules[name]


def page_of(example: Example) -> Page:
    page = example.namespace.get("__page__")
    assert isinstance(page, Page), "the root conftest.py's Sybil set-up makes the page"
    page.services = example.namespace["docs_services"]
    return page


def _rewrite(example: Example, start: int, end: int, text: str) -> None:
    REWRITES.setdefault(example.path, []).append((start, end, text))


def _indent(text: str, indent: str) -> str:
    return "".join(indent + line if line.strip() else line for line in text.splitlines(True))


def _difference(want: str, got: str) -> str:
    return _CHECKER.output_difference(
        doctest.Example("", want), got, doctest.ELLIPSIS | doctest.REPORT_UDIFF
    )


# --- the regions ---------------------------------------------------------------------------------


@dataclass
class Transcript:
    """A console block: commands with what each prints."""

    steps: list[tuple[str, str]]
    # Where the block's text starts and ends in the document, and the indent of its lines (a
    # block in a list item), for --update-docs.
    start: int
    end: int
    indent: str


def parse_transcript(source: str) -> list[tuple[str, str]]:
    steps: list[tuple[str, list[str]]] = []
    for line in source.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
        elif line.strip():
            raise ValueError(f"a console block must start with '$ ': {line!r}")
    return [(command, "".join(out + "\n" for out in output)) for command, output in steps]


def evaluate_transcript(example: Example) -> str | None:
    page = page_of(example)
    transcript: Transcript = example.parsed
    # Each set-up step and each transcript starts in the project's directory; a `cd` lasts to
    # the end of its block.
    page.cwd = page.project
    for command in page.pending:
        page.cwd = page.project
        output, code = page.shell(command)
        if code != 0:
            return f"set-up step {command!r} exited with {code}:\n{output}"
    page.pending.clear()
    page.ran = True
    # Each transcript starts in the project's directory; a `cd` lasts to the end of its block.
    page.cwd = page.project
    failures = []
    shown = []
    for command, want in transcript.steps:
        got, _ = page.shell(command)
        shown.append(f"$ {command}\n" + (want if matches(want, got) else got))
        if not matches(want, got):
            failures.append(f"$ {command}\n{_difference(want, got)}")
    if failures and UPDATE:
        _rewrite(
            example, transcript.start, transcript.end, _indent("".join(shown), transcript.indent)
        )
        return None
    return "\n".join(failures) or None


@dataclass
class PythonCode:
    source: str
    line: int
    want: str | None
    start: int
    end: int


def evaluate_python(example: Example) -> str | None:
    page = page_of(example)
    code: PythonCode = example.parsed
    namespace = example.namespace
    if "port" in code.source:
        namespace["port"] = page.port()
    if "cluster_port" in code.source:
        namespace["cluster_port"] = page.cluster_port()
    compiled = compile("\n" * code.line + code.source, example.path, "exec")
    out = io.StringIO()
    with contextlib.ExitStack() as stack:
        if page.project is not None:
            stack.enter_context(contextlib.chdir(page.project))
            sys.path.insert(0, str(page.project))
            stack.callback(sys.path.remove, str(page.project))
        stack.enter_context(contextlib.redirect_stdout(out))
        exec(compiled, namespace)
    got = page.shown(out.getvalue())
    if code.want is None or matches(code.want, got):
        return None
    if UPDATE:
        _rewrite(example, code.start, code.end, got)
        return None
    return _difference(code.want, got)


def evaluate_file(example: Example) -> None:
    page = page_of(example)
    path, content = example.parsed
    if path.startswith("/tmp/"):
        # A file outside the project (in the page's temporary directory) leaves it as it is.
        target = Path(page.in_tmp(path))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page.in_tmp(content))
        return
    if page.project is None or page.ran:
        page.new_project(page.next_name)
    assert page.project is not None
    target = page.project / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page.in_tmp(content))


def evaluate_run(example: Example) -> None:
    page_of(example).pending.append(example.parsed)


def evaluate_name(example: Example) -> None:
    """`<!-- project: NAME -->`: a new, empty project in the directory NAME, at once."""
    page = page_of(example)
    page.next_name = example.parsed
    page.new_project(example.parsed)


def evaluate_port(example: Example) -> None:
    page_of(example).redis_port = example.parsed


def evaluate_cluster_port(example: Example) -> None:
    page_of(example).cluster_port_shown = example.parsed


_DIRECTIVES: dict[str, Callable[[Example], None]] = {
    "file": evaluate_file,
    "run": evaluate_run,
    "project": evaluate_name,
    "redis-port": evaluate_port,
    "redis-cluster-port": evaluate_cluster_port,
}


class PageParser:
    """The one Sybil parser of a page: its fenced blocks and its `<!-- ... -->` directives, in
    order (the module's docstring has the rules)."""

    def __call__(self, document: Document) -> Iterable[Region]:
        text = document.text
        blocks = list(
            RawFencedCodeBlockLexer(re.compile(r"(?P<info>[^\n]*)$\n", re.MULTILINE))(document)
        )
        regions: list[Region] = []
        used: set[int] = set()
        for index, block in enumerate(blocks):
            if index in used:
                continue
            info = str(block.lexemes["info"]).strip()
            source = str(block.lexemes["source"])
            source_start = block.start + block.lexemes["source"].offset
            line = text.count("\n", 0, source_start)
            path = _file_before(text, block.start)
            if path is not None:
                regions.append(Region(block.start, block.end, (path, source), evaluate_file))
            elif info == "console":
                steps = parse_transcript(source)
                # The raw text between the fences, indent included.
                raw_end = text.rindex("\n", block.start, block.end - 1) + 1
                indent = text[block.start : text.index("`", block.start)]
                transcript = Transcript(steps, source_start, raw_end, indent)
                regions.append(Region(block.start, block.end, transcript, evaluate_transcript))
            elif info == "python":
                want = None
                start = end = block.end
                following = blocks[index + 1] if index + 1 < len(blocks) else None
                if (
                    following is not None
                    and not str(following.lexemes["info"]).strip()
                    and not text[block.end : following.start].strip()
                ):
                    used.add(index + 1)
                    want = str(following.lexemes["source"])
                    start = following.start + following.lexemes["source"].offset
                    end = start + len(want)
                    block = Region(block.start, following.end, lexemes=block.lexemes)
                parsed_code = PythonCode(source, line, want, start, end)
                regions.append(Region(block.start, block.end, parsed_code, evaluate_python))
        for match in _COMMENT.finditer(text):
            directive, arguments = match["directive"], match["arguments"].strip()
            parsed: object = arguments
            if directive == "file":
                parsed = (arguments, match["body"] or "")
            evaluator = _DIRECTIVES[directive]
            regions.append(Region(match.start(), match.end(), parsed, evaluator))
        return sorted(regions, key=lambda region: region.start)


def _file_before(text: str, start: int) -> str | None:
    """The path of a `` `path`: `` paragraph right before the block at `start`, if there is one."""
    before = text[:start].rstrip("\n").rsplit("\n", 2)
    if len(before) < 2 or (len(before) == 3 and before[1].strip()):
        return None
    match = _FILE_LINE.match(before[-1].strip())
    if match is None or (len(before) == 3 and before[-2].strip()):
        return None
    return match["path"]


def apply_rewrites() -> list[str]:
    """Write the outputs `--update-docs` collected into their pages; the pages changed."""
    changed = []
    for path, rewrites in REWRITES.items():
        text = Path(path).read_text()
        for start, end, new in sorted(rewrites, reverse=True):
            text = text[:start] + new + text[end:]
        Path(path).write_text(text)
        changed.append(path)
    REWRITES.clear()
    return changed
