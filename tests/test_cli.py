"""The command line: exit codes, output formats, help, and every usage mistake."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from echomq_scripts import __version__
from echomq_scripts.toolchain.cli import cli
from tests.support.environment import REPO
from tests.support.projects import copy_fixture

# What `check` and `build` print for the fixture project "locals": seven warnings and a summary.
LOCALS = (REPO / "tests/fixtures/projects/locals/expected.txt").read_text(encoding="utf-8")
UP_TO_DATE = "up to date: build (3 scripts, 0 analysed, 3 from cache)\n"
WROTE_TWO = "wrote build (3 scripts, 2 analysed, 1 from cache)\n"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout == f"echomq-scripts, version {__version__}\n"


def test_python_dash_m_runs_the_same_cli() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "echomq_scripts", "--version"], capture_output=True, text=True
    )
    assert (done.returncode, done.stdout) == (0, f"echomq-scripts, version {__version__}\n")


@pytest.mark.parametrize("command", ["build", "check", "explain", "diff", "verify"])
def test_every_command_has_help_with_an_example(command: str) -> None:
    result = invoke(command, "-h")
    assert result.exit_code == 0
    assert "Example:" in result.stdout
    assert f"echomq-scripts {command}" in result.stdout


def test_clean_build_prints_a_summary_and_nothing_on_stderr(in_tmp: Path) -> None:
    copy_fixture("clean", in_tmp)
    os.chdir(in_tmp / "clean")
    result = invoke("build", "--no-cache")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == "wrote build (1 script, 1 analysed, 0 from cache)\n"
    assert (in_tmp / "clean" / "build" / "scripts" / "touch-3.lua").is_file()


def test_findings_exit_1_and_build_writes_nothing(in_tmp: Path) -> None:
    copy_fixture("keys", in_tmp)
    os.chdir(in_tmp / "keys")
    result = invoke("build", "--no-cache")
    assert result.exit_code == 1
    assert "[keys-range]" in result.stdout
    assert result.stdout.endswith("\nFound 8 errors and 4 warnings in 9 files.\n")
    assert result.stderr == ""
    assert not (in_tmp / "keys" / "build").exists()


def test_json_format_lists_findings_on_stdout(in_tmp: Path) -> None:
    copy_fixture("argv", in_tmp)
    os.chdir(in_tmp / "argv")
    result = invoke("check", "--format", "json", "--no-cache")
    assert result.exit_code == 1
    assert result.stderr == ""
    findings = json.loads(result.stdout)
    assert findings[0] == {
        "path": "lua_src/dynamic-1.lua",
        "line": 6,
        "col": 32,
        "severity": "error",
        "code": "argv-dynamic",
        "message": "ARGV indexed by a value the check cannot work out: use ARGV[<integer>], or"
        " declare a variable argument list with '@arg...' in the header",
    }
    assert {f["code"] for f in findings} == {"argv-dynamic", "argv-undeclared", "argv-unused"}


def test_json_format_of_clean_sources_is_an_empty_list(in_tmp: Path) -> None:
    copy_fixture("clean", in_tmp)
    os.chdir(in_tmp / "clean")
    result = invoke("build", "--format", "json", "--no-cache")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "[]\n", "")


def test_strict_turns_warnings_into_failure(in_tmp: Path) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    assert invoke("check", "--no-cache").exit_code == 0
    assert invoke("check", "--strict", "--no-cache").exit_code == 1
    strict_build = invoke("build", "--strict", "--no-cache")
    assert strict_build.exit_code == 1
    assert not (in_tmp / "locals" / "build").exists()


def test_project_strict_setting_applies_and_the_flag_overrides_it(in_tmp: Path) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    Path("pyproject.toml").write_text("[tool.echomq-scripts]\nstrict = true\n")
    assert invoke("check", "--no-cache").exit_code == 1
    assert invoke("check", "--no-strict", "--no-cache").exit_code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check", "--src", "nowhere"], "nowhere: source directory not found"),
        (["build", "--format", "xml"], "Invalid value for '--format'"),
        (["build", "--bogus"], "No such option '--bogus'"),
        (["explain", "extendLock-2"], "expected SCRIPT:LINE"),
        (["explain", "extendLock-2:0"], "expected SCRIPT:LINE"),
        # Digits, but not ASCII ones: int() refuses the first and reads the second as 3.
        (["explain", "extendLock-2:²"], "expected SCRIPT:LINE"),
        (["explain", "extendLock-2:٣"], "expected SCRIPT:LINE"),
        (["explain", "extendLock-2:+3"], "expected SCRIPT:LINE"),
        (["explain", "extendLock-2: 3"], "expected SCRIPT:LINE"),
        (["frobnicate"], "No such command 'frobnicate'"),
    ],
)
def test_usage_mistakes_exit_2_with_a_message(in_tmp: Path, args: list[str], message: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("require-header = 1", "require-header must be true or false"),
        ("colour = true", "unknown setting(s) in [tool.echomq-scripts]: colour"),
        ("version = 3", "the version must be a string"),
        ('version = "1/../../escaped"', "the version must be a string of letters"),
        ("[tool.echomq-scripts.strict]", "strict must be true or false"),
        ("[broken", "cannot read"),
    ],
)
def test_bad_project_settings_exit_2(in_tmp: Path, setting: str, message: str) -> None:
    copy_fixture("clean", in_tmp)
    os.chdir(in_tmp / "clean")
    Path("pyproject.toml").write_text(f"[tool.echomq-scripts]\n{setting}\n")
    result = invoke("check", "--no-cache")
    assert result.exit_code == 2
    assert message in result.stderr


def test_output_directory_that_is_not_a_build_exits_1(in_tmp: Path) -> None:
    copy_fixture("clean", in_tmp)
    os.chdir(in_tmp / "clean")
    Path("docs").mkdir()
    Path("docs/keep.md").write_text("mine")
    result = invoke("build", "--out", "docs", "--no-cache")
    assert result.exit_code == 1
    assert "refusing to replace a directory that is not an echomq-scripts build" in result.stderr
    assert Path("docs/keep.md").read_text() == "mine"


def test_explain_names_the_include_line(in_tmp: Path) -> None:
    copy_fixture("clean", in_tmp)
    os.chdir(in_tmp / "clean")
    assert invoke("build", "--no-cache").exit_code == 0
    body = Path("build/scripts/touch-3.lua").read_text().split("\n")
    line = body.index('  redis.call("HSET", key, field, value)') + 1
    result = invoke("explain", f"touch-3:{line}")
    assert result.exit_code == 0
    assert result.stdout == (
        'lua_src/includes/setField.lua:2: redis.call("HSET", key, field, value)\n'
    )
    # The file name with its extension, or its path under build/, works as well.
    assert invoke("explain", f"build/scripts/touch-3.lua:{line}").stdout == result.stdout


def test_explain_errors(in_tmp: Path) -> None:
    missing = invoke("explain", "extendLock-2:3")
    assert missing.exit_code == 1
    assert "no line map for 'extendLock-2'" in missing.stderr
    copy_fixture("clean", in_tmp)
    os.chdir(in_tmp / "clean")
    invoke("build", "--no-cache")
    past_end = invoke("explain", "touch-3:999")
    assert past_end.exit_code == 2
    assert "line 999 does not exist" in past_end.stderr
    # Longer than int() reads (4300 digits), and a 1 after many zeros.
    far_past_end = invoke("explain", "touch-3:" + "9" * 5000)
    assert far_past_end.exit_code == 2
    assert "9" * 5000 + " does not exist" in far_past_end.stderr
    assert invoke("explain", "touch-3:" + "0" * 30 + "1").stdout.startswith("lua_src/touch-3.lua:1")


@pytest.fixture
def built_clean(in_tmp: Path) -> Path:
    """The clean fixture, built, as the working directory."""
    copy_fixture("clean", in_tmp)
    os.chdir(in_tmp / "clean")
    assert invoke("build", "--no-cache").exit_code == 0
    return in_tmp / "clean"


def crafted(edit: str) -> bytes:
    """The clean fixture's line map of touch-3 (in build/), with `edit` applied."""
    data = json.loads(Path("build/maps/touch-3.json").read_bytes())
    if edit == "not a map":
        return b"[1, 2]"
    if edit == "deep":
        return b"[" * 100_000 + b"]" * 100_000
    field, _, value = edit.partition("=")
    if field.startswith("lines[0]"):
        data["lines"][0] = json.loads(value)
    elif field == "sources[0]":
        data["sources"][0] = json.loads(value)
    else:
        data[field] = json.loads(value)
    return json.dumps(data).encode()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ('sources[0]="/etc/passwd"', "sources[0] '/etc/passwd' is absolute"),
        ('sources[0]="../../../../../../../../etc/passwd"', "goes up with '..'"),
        ('sources[0]="includes/../../x.lua"', "goes up with '..'"),
        ('sources[0]="touch-3.lua\\u0000"', "sources[0] 'touch-3.lua\\x00' holds a NUL"),
        ('sources[0]=""', "sources[0] '' is empty"),
        ("sources[0]=7", "sources[0] 7 is not a string"),
        ("sources=[]", "sources is not a list of paths"),
        ("lines[0]=[9, 1]", "lines[0] is [9, 1]: a source index from 0 to 2"),
        ("lines[0]=[-1, 1]", "lines[0] is [-1, 1]: a source index from 0 to 2"),
        ("lines[0]=[0, 0]", "and a line from 1 were expected"),
        ("lines[0]=[true, 1]", "lines[0] is not a pair of integers"),
        ("lines[0]=[0, 1.5]", "lines[0] is not a pair of integers"),
        ('lines[0]=["0", "1"]', "lines[0] is not a pair of integers"),
        ("lines[0]=[0, 1, 2]", "lines[0] is not a pair of integers"),
        ("lines=7", "lines is not a list"),
        ("script=null", "script is not a string"),
        ("format=2", "format is 2, not 1"),
        ("not a map", "not a JSON object"),
        ("deep", "nested too deeply"),
    ],
)
def test_explain_refuses_a_crafted_line_map(built_clean: Path, edit: str, message: str) -> None:
    Path("build/maps/touch-3.json").write_bytes(crafted(edit))
    refused = invoke("explain", "touch-3:1")
    assert refused.exit_code == 1
    assert refused.stderr.startswith("Error: build/maps/touch-3.json: not a valid line map: ")
    assert message in refused.stderr
    assert refused.stdout == ""
    assert "Traceback" not in refused.output


def test_explain_reads_no_source_linked_from_outside_src(built_clean: Path) -> None:
    Path("secret.txt").write_text("the first line of a private file\n")
    Path("lua_src/touch-3.lua").unlink()
    Path("lua_src/touch-3.lua").symlink_to(Path("secret.txt").resolve())
    refused = invoke("explain", "touch-3:1")
    assert refused.exit_code == 1
    assert refused.stderr == (
        "Error: build/maps/touch-3.json: lua_src: the line map's source 'touch-3.lua' leads"
        " outside it through a symlink; refusing to read it\n"
    )
    assert "private" not in refused.output


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`echomq-scripts ARGS` in a fresh interpreter, stopped after a minute: a regression to
    work that never ends fails the test instead of hanging it."""
    return subprocess.run(
        [sys.executable, "-m", "echomq_scripts", *args], capture_output=True, text=True, timeout=60
    )


def test_a_key_count_above_the_limit_is_refused_before_any_work(in_tmp: Path) -> None:
    Path("lua_src").mkdir()
    # Without the limit, building this names 10^11 keys (and a-1000000 wrote a 130 MB manifest).
    Path("lua_src/a-99999999999.lua").write_text("return unpack(KEYS)\n")
    done = run_cli("build", "--no-cache")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "lua_src/a-99999999999.lua:1:1: error: the filename declares 99999999999 keys, more than"
        " the 1024 a script may take: declare a longer or varying list of keys with '@key...'"
        " in the header [keys-limit]",
        "Found 1 error in 1 file.",
    ]
    assert done.stderr == ""
    assert not Path("build").exists()


@pytest.mark.parametrize(("keys", "refused"), [(1024, False), (1025, True)])
def test_the_key_limit_is_1024(in_tmp: Path, keys: int, refused: bool) -> None:
    Path("lua_src").mkdir()
    Path(f"lua_src/a-{keys}.lua").write_text("return unpack(KEYS)\n")
    result = invoke("check", "--no-cache")
    assert result.exit_code == (1 if refused else 0)
    assert ("[keys-limit]" in result.stdout) is refused


def test_an_argv_index_above_the_limit_without_a_header_is_refused(in_tmp: Path) -> None:
    """Without a header the wrappers name one parameter per ARGV index up to the highest the code
    reads: ARGV[99999999999] hung the build, which built 10^11 of them."""
    Path("lua_src").mkdir()
    Path("lua_src/a-0.lua").write_text("return ARGV[99999999999]\n")
    done = run_cli("build", "--no-cache")
    assert done.returncode == 1
    assert (
        "lua_src/a-0.lua:1:8: error: ARGV[99999999999] is past the 1024 arguments a script"
        " without a header may read: declare a varying list with '@arg...' in a header"
        " [argv-limit]" in done.stdout.splitlines()
    )
    assert not Path("build").exists()


@pytest.mark.parametrize(("index", "refused"), [(1024, False), (1025, True)])
def test_the_positional_argv_limit_is_1024(in_tmp: Path, index: int, refused: bool) -> None:
    Path("lua_src").mkdir()
    Path("lua_src/a-0.lua").write_text(f"return ARGV[{index}]\n")
    result = invoke("check", "--no-cache")
    assert result.exit_code == (1 if refused else 0)
    assert ("[argv-limit]" in result.stdout) is refused


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_named_pipes_in_the_sources_are_reported_or_ignored_never_read(in_tmp: Path) -> None:
    copy_fixture("clean", in_tmp)
    os.chdir(in_tmp / "clean")
    os.mkfifo("lua_src/pipe-0.lua")  # a script: reported
    os.mkfifo("lua_src/includes/piped.lua")  # included below: reported where it is read
    os.mkfifo("lua_src/includes/unused.lua")  # read by nothing: ignored, like any such file
    os.mkfifo("lua_src/notes")  # not Lua: ignored
    Path("lua_src/user-0.lua").write_text('--- @include "includes/piped"\nreturn 1\n')
    done = run_cli("build", "--no-cache")
    assert done.returncode == 1
    assert [line for line in done.stdout.splitlines() if "[read-error]" in line] == [
        "lua_src/includes/piped.lua:1:1: error: cannot read the file: it is a named pipe, not a"
        " regular file [read-error]",
        "lua_src/pipe-0.lua:1:1: error: cannot read the file: it is a named pipe, not a regular"
        " file [read-error]",
    ]
    assert not Path("build").exists()


def test_repo_sources_are_clean_under_strict() -> None:
    """This repository's own scripts pass every check, warnings included."""
    result = CliRunner().invoke(
        cli, ["check", "--src", str(REPO / "lua_src"), "--strict", "--no-cache"]
    )
    assert (result.exit_code, result.stderr) == (0, "")


def test_settings_are_found_when_src_is_the_current_directory(in_tmp: Path) -> None:
    copy_fixture("require-header", in_tmp)
    os.chdir(in_tmp / "require-header" / "lua_src")
    result = invoke("check", "--src", ".", "--no-cache")
    assert result.exit_code == 1
    assert "error: script has no header" in result.stdout


def test_unchanged_rebuild_replays_the_stamped_build(in_tmp: Path) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    cache = str(in_tmp / "cache")
    first = invoke("build", "--cache-dir", cache)
    assert first.exit_code == 0
    assert first.stdout == LOCALS + "wrote build (3 scripts, 3 analysed, 0 from cache)\n"
    again = invoke("build", "--cache-dir", cache)
    assert again.exit_code == 0
    # The warnings of the stamped build are printed again, in either format.
    assert again.stdout == LOCALS + UP_TO_DATE
    assert again.stderr == first.stderr == ""
    as_json = invoke("build", "--cache-dir", cache, "--format", "json")
    assert {f["code"] for f in json.loads(as_json.stdout)} == {"unused-local", "shadowed-local"}


def test_any_changed_input_or_output_defeats_the_stamp(in_tmp: Path) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    cache = str(in_tmp / "cache")
    assert invoke("build", "--cache-dir", cache).exit_code == 0
    include = Path("lua_src/includes/countJob.lua")
    include.write_text(include.read_text() + "-- changed\n")
    assert invoke("build", "--cache-dir", cache).stdout == LOCALS + WROTE_TWO
    # An output edited by hand is put back.
    script = Path("build/scripts/locals-1.lua")
    original = script.read_bytes()
    script.write_text("return 0\n")
    assert invoke("build", "--cache-dir", cache).stdout == (
        LOCALS + "wrote build (3 scripts, 0 analysed, 3 from cache)\n"
    )
    assert script.read_bytes() == original
    # A setting in pyproject.toml counts as an input: strict now fails on the warnings.
    Path("pyproject.toml").write_text("[tool.echomq-scripts]\nstrict = true\n")
    assert invoke("build", "--cache-dir", cache).exit_code == 1
    # So does the command line's --strict.
    Path("pyproject.toml").unlink()
    assert invoke("build", "--cache-dir", cache).exit_code == 0
    assert invoke("build", "--cache-dir", cache, "--strict").exit_code == 1


@pytest.mark.parametrize("text", ['tool = "x"\n', "[tool]\necho = 1\n'echomq-scripts' = 1\n"])
def test_malformed_tables_in_pyproject_exit_2(in_tmp: Path, text: str) -> None:
    copy_fixture("clean", in_tmp)
    os.chdir(in_tmp / "clean")
    Path("pyproject.toml").write_text(text)
    result = invoke("check", "--no-cache")
    assert result.exit_code == 2
    assert "must be a table" in result.stderr


def test_stamped_findings_follow_how_src_is_spelled(in_tmp: Path) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    cache = str(in_tmp / "cache")
    assert "lua_src/locals-1.lua:5:7" in invoke("build", "--cache-dir", cache).stdout
    os.chdir("lua_src")
    inside = invoke("build", "--src", ".", "--out", "../build", "--cache-dir", cache)
    assert inside.exit_code == 0
    assert "\nlocals-1.lua:5:7: warning" in "\n" + inside.stdout


@pytest.mark.parametrize("where", ["lua_src/.cache", "build/.cache"])
def test_a_cache_inside_the_sources_or_the_output_is_refused(in_tmp: Path, where: str) -> None:
    copy_fixture("clean", in_tmp)
    os.chdir(in_tmp / "clean")
    result = invoke("build", "--cache-dir", where)
    assert result.exit_code == 2
    assert "lies inside" in result.stderr
    assert not Path(where).exists()


# -- the console script: an identical command line is replayed without click (entry.py) --


@pytest.fixture(autouse=True)
def private_default_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default cache directory (where builds record their command lines) is the test's."""
    monkeypatch.delenv("ECHOMQ_SCRIPTS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "echomq-scripts"


def run_console(*args: str) -> subprocess.CompletedProcess[str]:
    """`echomq-scripts ...` as installed: python -m runs the same entry point."""
    return subprocess.run(
        [sys.executable, "-m", "echomq_scripts", *args], capture_output=True, text=True
    )


def replay_probe(*args: str) -> subprocess.CompletedProcess[str]:
    """The console script's replay alone on `args`: exit 10 when it answered them, 9 when it
    left them to cli.py, 99 when it imported click or the pipeline on the way."""
    script = (
        "import sys\n"
        "from echomq_scripts.toolchain.entry import replayed\n"
        "answered = replayed(sys.argv[1:])\n"
        "heavy = {'click', 'pathlib', 'json', 're', 'typing', 'dataclasses'}\n"
        "heavy |= {'echomq_scripts.toolchain.pipeline', 'echomq_scripts.toolchain.cli'}\n"
        "print(sorted(heavy & set(sys.modules)), file=sys.stderr)\n"
        "sys.exit(99 if heavy & set(sys.modules) else 10 if answered else 9)"
    )
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True)


def test_console_replay_answers_as_the_full_command_does(in_tmp: Path) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    cache = str(in_tmp / "cache")
    first = run_console("build", "--cache-dir", cache)
    assert (first.returncode, first.stdout) == (
        0,
        LOCALS + "wrote build (3 scripts, 3 analysed, 0 from cache)\n",
    )
    for options in (
        [],
        ["--format", "json"],
        ["--format=json", "--no-strict"],
        ["--format", "github"],
        ["-q"],
        ["--quiet", "--color", "always"],
        ["--color=never"],
    ):
        run_console("build", f"--cache-dir={cache}", *options)  # records this command line
        quick = replay_probe("build", f"--cache-dir={cache}", *options)
        full = invoke("build", "--cache-dir", cache, *options)
        assert quick.returncode == 10
        assert (quick.stdout, quick.stderr.removesuffix("[]\n")) == (full.stdout, full.stderr)
    # The answer came from the replay alone, without click, pathlib, json, re or typing.
    probe = replay_probe("build", "--cache-dir", cache)
    assert probe.returncode == 10
    assert probe.stdout == LOCALS + UP_TO_DATE


def test_console_replays_only_the_identical_command_line(in_tmp: Path) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    cache = str(in_tmp / "cache")
    assert run_console("build", "--cache-dir", cache).returncode == 0
    assert replay_probe("build", "--cache-dir", cache).returncode == 10
    # The same build spelt otherwise is parsed (and then recorded too); so is a build run
    # from another directory, and any other command.
    assert replay_probe(f"--cache-dir={cache}", "build").returncode == 9
    assert replay_probe("build", f"--cache-dir={cache}").returncode == 9
    assert replay_probe("check", "--cache-dir", cache).returncode == 9
    respelt = run_console("build", f"--cache-dir={cache}")
    assert respelt.stdout == LOCALS + UP_TO_DATE
    assert replay_probe("build", f"--cache-dir={cache}").returncode == 10
    os.chdir("lua_src")
    assert replay_probe("build", "--cache-dir", cache).returncode == 9
    os.chdir("..")
    # A changed source, a changed output: the record stands, but the stamp no longer fits.
    include = Path("lua_src/includes/countJob.lua")
    include.write_text(include.read_text() + "-- changed\n")
    assert replay_probe("build", "--cache-dir", cache).returncode == 9
    rebuilt = run_console("build", "--cache-dir", cache)
    assert rebuilt.stdout == LOCALS + WROTE_TWO
    assert replay_probe("build", "--cache-dir", cache).returncode == 10
    Path("build/scripts/locals-1.lua").write_text("return 0\n")
    assert replay_probe("build", "--cache-dir", cache).returncode == 9
    # A build without a stamp (--no-cache, --check) records nothing to replay.
    assert run_console("build", "--no-cache").returncode == 0
    assert replay_probe("build", "--no-cache").returncode == 9


def test_console_replay_follows_a_repointed_symlink(in_tmp: Path) -> None:
    """A symlinked --src or --out that points elsewhere since the build names other files: the
    record holds the paths as typed, so the replay finds no stamp for them."""
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    cache = str(in_tmp / "cache")
    Path("lua_src").rename("v1")
    shutil.copytree("v1", "v2")
    (Path("v2") / "locals-1.lua").write_text("return 1 +\n")  # does not compile
    Path("lua_src").symlink_to("v1")
    Path("o1").mkdir()
    Path("out").symlink_to("o1")
    assert run_console("build", "--cache-dir", cache, "--out", "out").returncode == 0
    assert replay_probe("build", "--cache-dir", cache, "--out", "out").returncode == 10
    Path("out").unlink()
    Path("o2").mkdir()
    Path("out").symlink_to("o2")
    assert replay_probe("build", "--cache-dir", cache, "--out", "out").returncode == 9
    assert run_console("build", "--cache-dir", cache, "--out", "out").returncode == 0
    assert sorted(p.name for p in Path("o2").iterdir()) == sorted(
        p.name for p in Path("o1").iterdir()
    )
    Path("lua_src").unlink()
    Path("lua_src").symlink_to("v2")
    assert replay_probe("build", "--cache-dir", cache, "--out", "out").returncode == 9
    failed = run_console("build", "--cache-dir", cache, "--out", "out")
    assert failed.returncode == 1
    assert "[syntax]" in failed.stdout


def test_no_command_line_record_lands_in_the_sources_or_the_output(
    in_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    monkeypatch.setenv("ECHOMQ_SCRIPTS_CACHE_DIR", str(in_tmp / "locals" / "build" / ".cache"))
    cache = str(in_tmp / "cache")
    assert run_console("build", "--cache-dir", cache).returncode == 0
    again = run_console("build", "--cache-dir", cache)
    assert again.stdout == LOCALS + UP_TO_DATE
    assert not Path("build/.cache").exists()


def test_a_failing_build_is_reported_once(in_tmp: Path) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    cache = str(in_tmp / "cache")
    strict = run_console("build", "--cache-dir", cache, "--strict")
    full = invoke("build", "--cache-dir", cache, "--strict")
    assert (strict.returncode, strict.stdout, strict.stderr) == (1, full.stdout, full.stderr)
    assert strict.stdout.count("Found ") == 1  # one summary: the build ran once
    assert replay_probe("build", "--cache-dir", cache, "--strict").returncode == 9
    refused = run_console("build", "--cache-dir", "lua_src/.cache")
    assert refused.returncode == 2
    assert refused.stderr.count("lies inside") == 1
    Path("not-a-dir").write_text("")
    assert run_console("build", "--out", "not-a-dir", "--cache-dir", cache).returncode == 2


def test_console_hands_everything_else_to_the_full_command(in_tmp: Path) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    cache = str(in_tmp / "cache")
    assert run_console("build", "--cache-dir", cache).returncode == 0
    include = Path("lua_src/includes/countJob.lua")
    include.write_text(include.read_text() + "-- changed\n")
    rebuilt = run_console("build", "--cache-dir", cache)
    assert rebuilt.stdout == LOCALS + WROTE_TWO
    assert "-- changed" in Path("build/scripts/acrossFiles-1.lua").read_text()
    misspelt = run_console("build", "--cache-dir", cache, "--sorce", "x")
    assert misspelt.returncode == 2
    assert "No such option '--sorce'" in misspelt.stderr
    assert run_console("build", "--cache-dir", cache, "--format", "xml").returncode == 2
    checked = run_console("build", "--cache-dir", cache, "--check")
    assert (checked.returncode, checked.stdout) == (0, LOCALS)
    assert "Usage: echomq-scripts build" in run_console("build", "--help").stdout


def _stamp_damages() -> list[bytes]:
    import hashlib
    import marshal

    def sealed(payload: bytes) -> bytes:  # a checksum that matches: only the payload is wrong
        return hashlib.blake2b(payload, digest_size=32).digest() + payload

    wrong_shape = {"format": 4, "outputs": {}, "findings": 1, "scripts": 3}
    return [
        b"",
        b"\x00garbage",
        b"(\xff\xff\xff\x7f",  # a huge length: marshal alone would try to allocate it
        sealed(marshal.dumps(wrong_shape)),
        sealed(marshal.dumps([1, 2])),
    ]


@pytest.mark.parametrize("damage", _stamp_damages())
def test_a_damaged_stamp_is_a_miss_for_both_paths(in_tmp: Path, damage: bytes) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    cache = in_tmp / "cache"
    assert run_console("build", "--cache-dir", str(cache)).returncode == 0
    stamps = list((cache / "builds").iterdir())
    assert len(stamps) == 1

    def stamped() -> object:  # what the stamp holds (marshal's bytes vary with object identity)
        import marshal

        return marshal.loads(stamps[0].read_bytes()[32:])

    good = stamped()
    stamps[0].write_bytes(damage)
    # Either path reads a damaged stamp as none, builds (the outputs are already right, so it
    # writes nothing) and stamps again.
    quick = run_console("build", "--cache-dir", str(cache))
    assert quick.returncode == 0
    assert quick.stdout == LOCALS + UP_TO_DATE
    assert "Traceback" not in quick.stderr
    assert stamped() == good
    stamps[0].write_bytes(damage)
    full = invoke("build", "--cache-dir", str(cache))
    assert (full.exit_code, full.exception) == (0, None)
    assert stamped() == good


@pytest.mark.parametrize("damage", _stamp_damages())
def test_a_damaged_command_line_record_is_a_miss(
    in_tmp: Path, private_default_cache: Path, damage: bytes
) -> None:
    copy_fixture("locals", in_tmp)
    os.chdir(in_tmp / "locals")
    cache = str(in_tmp / "cache")
    assert run_console("build", "--cache-dir", cache).returncode == 0
    (record,) = (private_default_cache / "invocations").iterdir()
    good = record.read_bytes()
    record.write_bytes(damage)
    assert replay_probe("build", "--cache-dir", cache).returncode == 9
    again = run_console("build", "--cache-dir", cache)
    assert (again.returncode, again.stdout) == (0, LOCALS + UP_TO_DATE)
    assert "Traceback" not in again.stderr
    assert record.read_bytes() == good  # recorded afresh, as it was


def test_the_stamp_covers_the_version_the_schema_and_both_halves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new version (echomq_scripts/__init__.py) or schema changes what a build writes: both
    count among the tool's inputs, with every module of the toolchain and of the runtime."""
    from echomq_scripts.toolchain import cache

    read: list[str] = []
    real_read = cache._read

    def reading(path: str) -> bytes:
        read.append(os.path.relpath(os.path.realpath(path), REPO / "echomq_scripts"))
        return real_read(path)

    monkeypatch.setattr(cache, "_read", reading)
    cache._fingerprint(None)
    assert {"__init__.py", "toolchain/manifest.schema.json", "runtime/grammar.py"} <= set(read)
    assert "toolchain/templates/scripts.py.j2" in read


@pytest.mark.parametrize("end", [b"\n", b"\r", b"\r\n", b"\n\r"], ids=["lf", "cr", "crlf", "lfcr"])
def test_findings_count_lines_as_lua_does(in_tmp: Path, end: bytes) -> None:
    """Each of Lua's four line ends is one line end for every finding and for explain."""
    from lupa import lua51

    src = in_tmp / "lua_src"
    src.mkdir()
    lines = [b"-- no header", b"local x = 1", b"return y"]
    (src / "a-0.lua").write_bytes(end.join(lines) + end)
    (src / "b-0.lua").write_bytes(end.join([*lines[:2], b"return 1 +"]) + end)
    (src / "c-0.lua").write_bytes(end.join([*lines[:2], b"return '\xff'"]) + end)
    result = invoke("check", "--src", "lua_src", "--no-cache")
    assert result.exit_code == 1
    assert result.stderr == ""
    assert result.stdout.splitlines()[:-1] == [
        "lua_src/a-0.lua:1:1: warning: script has no header (see docs/authoring.md)"
        " [header-missing]",
        "lua_src/a-0.lua:2:7: warning: local 'x' is never read [unused-local]",
        "lua_src/a-0.lua:3:8: error: read of undefined global 'y': Redis's Lua does not provide it"
        " [undefined-global]",
        "lua_src/b-0.lua:3:11: error: unexpected symbol near '<eof>' [syntax]",
        "lua_src/c-0.lua:3:1: error: not valid UTF-8: invalid start byte [encoding]",
    ]
    # Lua itself names line 4 (the end of the file), which the finding clamps to the last line.
    compiled = lua51.LuaRuntime(encoding=None).globals().loadstring
    assert compiled((src / "b-0.lua").read_bytes(), b"@user_script")[1].startswith(
        b"user_script:4: "
    )
    (src / "b-0.lua").unlink()
    (src / "c-0.lua").unlink()
    (src / "a-0.lua").write_bytes(end.join([b"local x = 1", b"return x"]) + end)
    assert invoke("build", "--src", "lua_src", "--no-cache").exit_code == 0
    assert Path("build/scripts/a-0.lua").read_bytes() == b"local x = 1\nreturn x\n"
    assert invoke("explain", "a-0:2").stdout == "lua_src/a-0.lua:2: return x\n"


def test_control_characters_in_names_keep_each_finding_on_one_line(in_tmp: Path) -> None:
    """Text output escapes a name's control characters; JSON output holds the real name."""
    src = in_tmp / "lua_src"
    (src / "includes").mkdir(parents=True)
    (src / "bad\nname.lua").write_text("return 1\n")
    (src / "includes" / "tab\there.lua").write_text(
        "local function one()\n  local unused = 1\n  return 1\nend\n"
    )
    (src / "uses-0.lua").write_text('--- @include "includes/tab\there"\nreturn one()\n')
    text = invoke("check", "--src", "lua_src", "--no-cache")
    assert text.exit_code == 1
    assert text.stderr == ""
    assert text.stdout.splitlines() == [
        "lua_src/bad\\nname.lua:1:1: error: script file 'bad\\nname.lua' is not named"
        " <name>-<N>.lua, where N is its number of KEYS (shared code belongs in includes/)"
        " [bad-filename]",
        "lua_src/includes/tab\\there.lua:2:9: warning: local 'unused' is never read [unused-local]",
        "lua_src/uses-0.lua:1:1: warning: script has no header (see docs/authoring.md)"
        " [header-missing]",
        "Found 1 error and 2 warnings in 3 files.",
    ]
    found = json.loads(invoke("check", "--src", "lua_src", "--no-cache", "--format", "json").stdout)
    assert [f["path"] for f in found] == [
        "lua_src/bad\nname.lua",
        "lua_src/includes/tab\there.lua",
        "lua_src/uses-0.lua",
    ]
    assert "'bad\nname.lua'" in found[0]["message"]
