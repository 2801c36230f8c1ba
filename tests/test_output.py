"""What `check` and `build` print: findings and a summary on stdout, `--quiet`, colours on a
terminal, and `--format github` (docs/checks.md, "Output formats")."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from echomq_scripts.toolchain.cli import cli
from echomq_scripts.toolchain.diagnostics import Diagnostic, Severity, format_summary

# One error and two warnings in one file.
SCRIPT = "local x = 1\nreturn y\n"
FINDINGS = (
    "lua_src/a-0.lua:1:1: warning: script has no header (see docs/authoring.md)"
    " [header-missing]\n"
    "lua_src/a-0.lua:1:7: warning: local 'x' is never read [unused-local]\n"
    "lua_src/a-0.lua:2:8: error: read of undefined global 'y': Redis's Lua does not provide it"
    " [undefined-global]\n"
)
SUMMARY = "Found 1 error and 2 warnings in 1 file.\n"
# The same findings with --color always: the severity bold red or yellow, the code cyan.
COLORED = (
    "lua_src/a-0.lua:1:1: \x1b[1;33mwarning\x1b[0m: script has no header (see"
    " docs/authoring.md) \x1b[36m[header-missing]\x1b[0m\n"
    "lua_src/a-0.lua:1:7: \x1b[1;33mwarning\x1b[0m: local 'x' is never read"
    " \x1b[36m[unused-local]\x1b[0m\n"
    "lua_src/a-0.lua:2:8: \x1b[1;31merror\x1b[0m: read of undefined global 'y': Redis's Lua does"
    " not provide it \x1b[36m[undefined-global]\x1b[0m\n"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of one script with three findings, as the working directory."""
    project = tmp_path / "p"
    (project / "lua_src").mkdir(parents=True)
    (project / "lua_src" / "a-0.lua").write_text(SCRIPT)
    monkeypatch.chdir(project)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("ECHOMQ_SCRIPTS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return project


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def outputs(result: Result) -> tuple[int, str, str]:
    return result.exit_code, result.stdout, result.stderr


# -- findings and the summary on stdout -------------------------------------------------------


def test_check_prints_the_findings_and_a_summary_on_stdout(project: Path) -> None:
    assert outputs(invoke("check", "--no-cache")) == (1, FINDINGS + SUMMARY, "")


def test_a_clean_check_says_how_many_scripts_it_checked(project: Path) -> None:
    (project / "lua_src" / "a-0.lua").write_text("--- Says one.\n--- @return int  one\nreturn 1\n")
    (project / "lua_src" / "b-0.lua").write_text("--- Says two.\n--- @return int  two\nreturn 2\n")
    assert outputs(invoke("check", "--no-cache")) == (0, "No findings in 2 scripts.\n", "")
    (project / "lua_src" / "b-0.lua").unlink()
    assert outputs(invoke("check", "--no-cache")) == (0, "No findings in 1 script.\n", "")
    # `build --check` writes nothing and ends as `check` does; `build` says what it wrote.
    checked = invoke("build", "--check", "--no-cache")
    assert outputs(checked) == (0, "No findings in 1 script.\n", "")
    built = invoke("build", "--no-cache")
    assert outputs(built) == (0, "wrote build (1 script, 1 analysed, 0 from cache)\n", "")


def test_a_build_with_warnings_prints_them_the_summary_and_what_it_wrote(project: Path) -> None:
    (project / "lua_src" / "a-0.lua").write_text("local x = 1\nreturn 1\n")
    assert outputs(invoke("build", "--no-cache")) == (
        0,
        "lua_src/a-0.lua:1:1: warning: script has no header (see docs/authoring.md)"
        " [header-missing]\n"
        "lua_src/a-0.lua:1:7: warning: local 'x' is never read [unused-local]\n"
        "Found 2 warnings in 1 file.\n"
        "wrote build (1 script, 1 analysed, 0 from cache)\n",
        "",
    )


def test_a_failed_build_prints_its_findings_on_stdout_and_writes_nothing(project: Path) -> None:
    assert outputs(invoke("build", "--no-cache")) == (1, FINDINGS + SUMMARY, "")
    assert not (project / "build").exists()


def test_a_run_that_cannot_go_on_says_why_in_one_line_on_stderr(project: Path) -> None:
    (project / "lua_src" / "a-0.lua").write_text("--- Says one.\n--- @return int  one\nreturn 1\n")
    Path("mine").mkdir()
    Path("mine/notes.txt").write_text("not a build")
    for quiet in ([], ["-q"]):
        refused = invoke("check", "--src", "nowhere", "--no-cache", *quiet)
        assert refused.exit_code == 2
        assert refused.stdout == ""
        assert refused.stderr.splitlines()[-1] == "Error: nowhere: source directory not found"
        failed = invoke("build", "--out", "mine", "--no-cache", *quiet)
        assert outputs(failed) == (
            1,
            "",
            f"Error: {project / 'mine'}: refusing to replace a directory that is not an"
            " echomq-scripts build (it has no manifest.json written by echomq-scripts)\n",
        )


@pytest.mark.parametrize(
    ("severities", "files", "summary"),
    [
        ("E", 1, "Found 1 error in 1 file."),
        ("W", 1, "Found 1 warning in 1 file."),
        ("EE", 2, "Found 2 errors in 2 files."),
        ("WWW", 1, "Found 3 warnings in 1 file."),
        ("EWW", 2, "Found 1 error and 2 warnings in 2 files."),
        ("EEW", 3, "Found 2 errors and 1 warning in 3 files."),
    ],
)
def test_the_summary_counts_in_words(severities: str, files: int, summary: str) -> None:
    severity = {"E": Severity.ERROR, "W": Severity.WARNING}
    found = [
        Diagnostic(f"f{i % files}.lua", i + 1, 1, severity[s], "syntax", "m")
        for i, s in enumerate(severities)
    ]
    assert format_summary(found) == summary + "\n"
    assert format_summary([]) == ""


# -- --quiet ----------------------------------------------------------------------------------


def test_quiet_prints_the_findings_only(project: Path) -> None:
    assert outputs(invoke("check", "--no-cache", "-q")) == (1, FINDINGS, "")
    assert outputs(invoke("build", "--no-cache", "--quiet")) == (1, FINDINGS, "")
    (project / "lua_src" / "a-0.lua").write_text("return 1\n")
    warned = invoke("build", "--no-cache", "--quiet")
    assert outputs(warned) == (
        0,
        "lua_src/a-0.lua:1:1: warning: script has no header (see docs/authoring.md)"
        " [header-missing]\n",
        "",
    )
    assert (project / "build" / "manifest.json").is_file()
    (project / "lua_src" / "a-0.lua").write_text("--- Says one.\n--- @return int  one\nreturn 1\n")
    for command in (["check"], ["build"], ["build", "--check"]):
        assert outputs(invoke(*command, "--no-cache", "-q")) == (0, "", "")


def test_quiet_replays_quietly(project: Path) -> None:
    """The console script answers an unchanged build before click loads: as quiet as the build."""
    (project / "lua_src" / "a-0.lua").write_text("return 1\n")
    cache = str(project.parent / "cache")
    console = [sys.executable, "-m", "echomq_scripts", "build", "--cache-dir", cache, "-q"]
    first = subprocess.run(console, capture_output=True, text=True, check=True)
    again = subprocess.run(console, capture_output=True, text=True, check=True)
    assert (
        first.stdout
        == again.stdout
        == (
            "lua_src/a-0.lua:1:1: warning: script has no header (see docs/authoring.md)"
            " [header-missing]\n"
        )
    )
    loud = subprocess.run(console[:-1], capture_output=True, text=True, check=True)
    assert loud.stdout.endswith(
        "Found 1 warning in 1 file.\nup to date: build (1 script, 0 analysed, 1 from cache)\n"
    )


# -- colours ----------------------------------------------------------------------------------


def test_color_always_colours_the_severity_and_the_code(project: Path) -> None:
    assert outputs(invoke("check", "--no-cache", "--color", "always")) == (
        1,
        COLORED + SUMMARY,
        "",
    )
    assert outputs(invoke("check", "--no-cache", "--color=never")) == (1, FINDINGS + SUMMARY, "")
    # Not a terminal (CliRunner's stdout): no colours.
    assert outputs(invoke("check", "--no-cache")) == (1, FINDINGS + SUMMARY, "")


def test_color_always_overrides_no_color_and_json_has_none(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    assert invoke("check", "--no-cache", "--color", "always").stdout == COLORED + SUMMARY
    as_json = invoke("check", "--no-cache", "--color", "always", "--format", "json").stdout
    assert "\x1b" not in as_json


def on_a_terminal(*args: str, env: dict[str, str] | None = None) -> tuple[int, bytes, bytes]:
    """`echomq-scripts ARGS` in a fresh interpreter whose stdout is a terminal (a pty): its
    exit code, the bytes it wrote to the terminal (as the terminal passes them on: '\\n' as
    '\\r\\n'), and its stderr."""
    main, terminal = pty.openpty()
    environment = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    with subprocess.Popen(
        [sys.executable, "-m", "echomq_scripts", *args],
        stdout=terminal,
        stderr=subprocess.PIPE,
        env={**environment, **(env or {})},
    ) as process:
        os.close(terminal)
        shown = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the process closed its end
                break
            if not chunk:
                break
            shown += chunk
        stderr = process.stderr.read() if process.stderr else b""
        code = process.wait(timeout=60)
    os.close(main)
    return code, shown.replace(b"\r\n", b"\n"), stderr


def test_a_terminal_gets_colours_unless_no_color_is_set(project: Path) -> None:
    colored = (COLORED + SUMMARY).encode()
    plain = (FINDINGS + SUMMARY).encode()
    assert on_a_terminal("check", "--no-cache") == (1, colored, b"")
    assert on_a_terminal("check", "--no-cache", env={"NO_COLOR": "1"}) == (1, plain, b"")
    # no-color.org: an empty NO_COLOR is as good as none.
    assert on_a_terminal("check", "--no-cache", env={"NO_COLOR": ""}) == (1, colored, b"")
    assert on_a_terminal("check", "--no-cache", "--color", "never") == (1, plain, b"")


def test_a_replayed_build_is_coloured_as_the_build_was(project: Path) -> None:
    (project / "lua_src" / "a-0.lua").write_text("return 1\n")
    cache = str(project.parent / "cache")
    warning = (
        "lua_src/a-0.lua:1:1: \x1b[1;33mwarning\x1b[0m: script has no header (see"
        " docs/authoring.md) \x1b[36m[header-missing]\x1b[0m\nFound 1 warning in 1 file.\n"
    )
    first = on_a_terminal("build", "--cache-dir", cache)
    assert first == (
        0,
        (warning + "wrote build (1 script, 1 analysed, 0 from cache)\n").encode(),
        b"",
    )
    up_to_date = (warning + "up to date: build (1 script, 0 analysed, 1 from cache)\n").encode()
    assert on_a_terminal("build", "--cache-dir", cache) == (0, up_to_date, b"")
    # The same command line, replayed, with NO_COLOR now set: no colours.
    replayed = on_a_terminal("build", "--cache-dir", cache, env={"NO_COLOR": "1"})
    assert replayed == (
        0,
        up_to_date.replace(b"\x1b[1;33m", b"").replace(b"\x1b[36m", b"").replace(b"\x1b[0m", b""),
        b"",
    )


# -- --format github --------------------------------------------------------------------------


def test_github_format_prints_one_workflow_command_per_finding(project: Path) -> None:
    result = invoke("check", "--no-cache", "--format", "github")
    assert outputs(result) == (
        1,
        "::warning file=lua_src/a-0.lua,line=1,col=1,title=header-missing::script has no header"
        " (see docs/authoring.md)\n"
        "::warning file=lua_src/a-0.lua,line=1,col=7,title=unused-local::local 'x' is never read\n"
        "::error file=lua_src/a-0.lua,line=2,col=8,title=undefined-global::read of undefined"
        " global 'y': Redis's Lua does not provide it\n",
        "",
    )
    # Nothing else: no summary, no `wrote` line, whatever the colour.
    (project / "lua_src" / "a-0.lua").write_text("--- Says one.\n--- @return int  one\nreturn 1\n")
    for command in (["check"], ["build"], ["build", "--check"]):
        done = invoke(*command, "--no-cache", "--format", "github", "--color", "always")
        assert outputs(done) == (0, "", "")


def test_github_format_escapes_hostile_names(project: Path) -> None:
    """GitHub's runner reads `%`, CR and LF back from %25, %0D and %0A, and in a property (the
    file, the title) also `:` and `,` from %3A and %2C; a control character it has no escape
    for is shown as the text format shows it."""
    (project / "lua_src" / "a-0.lua").unlink()
    (project / "lua_src" / "50%,a:b\r\nc.lua").write_text("return 1\n")
    (project / "lua_src" / "includes").mkdir()
    (project / "lua_src" / "includes" / "x,y:%z\x1b.lua").write_text(
        "local function one()\n  local unused = 1\n  return 1\nend\n"
    )
    (project / "lua_src" / "uses-0.lua").write_text(
        '--- @include "includes/x,y:%z\x1b"\nreturn one()\n'
    )
    result = invoke("check", "--no-cache", "--format", "github")
    assert outputs(result) == (
        1,
        "::error file=lua_src/50%25%2Ca%3Ab%0D%0Ac.lua,line=1,col=1,title=bad-filename::script"
        " file '50%25,a:b%0D%0Ac.lua' is not named <name>-<N>.lua, where N is its number of"
        " KEYS (shared code belongs in includes/)\n"
        "::warning file=lua_src/includes/x%2Cy%3A%25z\\x1b.lua,line=2,col=9,title=unused-local"
        "::local 'unused' is never read\n"
        "::warning file=lua_src/uses-0.lua,line=1,col=1,title=header-missing::script has no"
        " header (see docs/authoring.md)\n",
        "",
    )
