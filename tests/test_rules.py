"""Configuring findings (`--ignore`, the `ignore` and `warn` settings, ignore comments) and
finding the settings file by walking up (docs/checks.md#configuring-findings,
docs/authoring.md#project-settings). The comments' own findings are the `ignore-comment`
fixture's golden output (test_findings.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from echomq_scripts.toolchain.cli import cli
from tests.support.projects import copy_fixture

SLOTS_20 = (
    "lua_src/slots-2.lua:20:19: {}: this key is built from ARGV alone: on a Redis Cluster it may"
    " hash to another slot than the script's KEYS; pass it in KEYS, or build it from a KEYS value"
    " or its prefix [key-slot]"
)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def lines(text: str) -> list[str]:
    return text.splitlines()


@pytest.fixture
def slots(in_tmp: Path) -> Path:
    """The key-slot fixture (three errors, nothing else), as the working directory."""
    project = copy_fixture("slots", in_tmp)
    os.chdir(project)
    return project


@pytest.fixture
def locals_project(in_tmp: Path) -> Path:
    """The locals fixture (four unused-local and three shadowed-local warnings)."""
    project = copy_fixture("locals", in_tmp)
    os.chdir(project)
    return project


def test_ignore_drops_a_code_and_the_build_passes(slots: Path) -> None:
    failing = invoke("build", "--no-cache")
    assert failing.exit_code == 1
    assert lines(failing.stdout)[-1] == "Found 3 errors in 1 file."
    passing = invoke("build", "--no-cache", "--ignore", "key-slot")
    assert (passing.exit_code, passing.stderr) == (0, "")
    assert passing.stdout == "wrote build (1 script, 1 analysed, 0 from cache)\n"


def test_ignore_is_repeatable_and_takes_comma_lists(locals_project: Path) -> None:
    strict = invoke("check", "--no-cache", "--strict")
    assert (strict.exit_code, lines(strict.stdout)[-1]) == (1, "Found 7 warnings in 4 files.")
    one = invoke("check", "--no-cache", "--strict", "--ignore", "unused-local")
    assert (one.exit_code, lines(one.stdout)[-1]) == (1, "Found 3 warnings in 3 files.")
    assert "[unused-local]" not in one.stdout
    for args in (
        ["--ignore", "unused-local", "--ignore", "shadowed-local"],
        ["--ignore", "unused-local, shadowed-local"],
    ):
        both = invoke("check", "--no-cache", "--strict", *args)
        assert (both.exit_code, both.stdout) == (0, "No findings in 3 scripts.\n")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "key-slots",
            "Error: --ignore: unknown finding code 'key-slots' (did you mean 'key-slot'?)",
        ),
        (
            "nonsense",
            "Error: --ignore: unknown finding code 'nonsense' (docs/checks.md lists them)",
        ),
        ("key-slot,", "Error: --ignore: empty finding code"),
        (
            "KEY-SLOT",
            "Error: --ignore: unknown finding code 'KEY-SLOT' (did you mean 'key-slot'?)",
        ),
        (
            "syntax",
            "Error: --ignore: 'syntax' cannot be ignored or made a warning: the build would"
            " write broken output or leave a file out (docs/checks.md#configuring-findings)",
        ),
    ],
)
def test_a_code_that_cannot_be_ignored_is_a_usage_error(
    slots: Path, value: str, message: str
) -> None:
    for command in ("build", "check"):
        result = invoke(command, "--no-cache", "--ignore", value)
        assert result.exit_code == 2
        assert lines(result.stderr)[-1] == message
        assert "Traceback" not in result.stderr
    assert not (slots / "build").exists()


def write_settings(text: str, where: Path | None = None) -> None:
    (where or Path.cwd()).joinpath("pyproject.toml").write_text(
        f"[tool.echomq-scripts]\n{text}\n", encoding="utf-8"
    )


def test_project_ignore_and_warn(slots: Path) -> None:
    write_settings('ignore = ["key-slot"]')
    clean = invoke("check", "--no-cache")
    assert (clean.exit_code, clean.stdout) == (0, "No findings in 1 script.\n")
    # warn reports the errors as warnings: the run passes, unless it is strict.
    write_settings('warn = ["key-slot"]')
    warned = invoke("build", "--no-cache")
    assert warned.exit_code == 0
    assert lines(warned.stdout)[0] == SLOTS_20.format("warning")
    assert lines(warned.stdout)[-2:] == [
        "Found 3 warnings in 1 file.",
        "wrote build (1 script, 1 analysed, 0 from cache)",
    ]
    strict = invoke("build", "--no-cache", "--strict")
    assert (strict.exit_code, lines(strict.stdout)[-1]) == (1, "Found 3 warnings in 1 file.")
    # The command line's --ignore adds to the project's lists and wins over its warn.
    ignored = invoke("build", "--no-cache", "--strict", "--ignore", "key-slot")
    assert (ignored.exit_code, ignored.stderr) == (0, "")


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('ignore = "key-slot"', "[tool.echomq-scripts] ignore must be a list of finding codes"),
        ("warn = [1]", "[tool.echomq-scripts] warn must be a list of finding codes"),
        ('warn = ["keyslot"]', "warn: unknown finding code 'keyslot' (did you mean 'key-slot'?)"),
        ('ignore = ["read-error"]', "ignore: 'read-error' cannot be ignored or made a warning"),
        ('warn = ["header-names"]', "warn: 'header-names' cannot be ignored or made a warning"),
        (
            'ignore = ["key-slot"]\nwarn = ["key-slot"]',
            "[tool.echomq-scripts] lists 'key-slot' in both ignore and warn",
        ),
        ("src = 3", "[tool.echomq-scripts] src must be a directory path"),
        ('out = ""', "[tool.echomq-scripts] out must be a directory path"),
        ('src = "nowhere"', "nowhere: source directory not found (the 'src' setting of"),
    ],
)
def test_bad_rule_settings_are_one_line_usage_errors(
    slots: Path, setting: str, message: str
) -> None:
    write_settings(setting)
    result = invoke("build", "--no-cache")
    assert result.exit_code == 2
    assert message in lines(result.stderr)[-1]
    assert lines(result.stderr)[-1].startswith("Error: ")
    assert "Traceback" not in result.stderr


def test_rules_apply_after_the_cache_and_count_for_the_stamp(slots: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")
    assert invoke("build", "--cache-dir", cache, "--ignore", "key-slot").exit_code == 0
    # The same sources and analyses, read from the cache, with other rules: other findings.
    again = invoke("check", "--cache-dir", cache)
    assert (again.exit_code, lines(again.stdout)[-1]) == (1, "Found 3 errors in 1 file.")
    rebuilt = invoke("build", "--cache-dir", cache, "--ignore", "key-slot")
    assert rebuilt.stdout == "up to date: build (1 script, 0 analysed, 1 from cache)\n"
    # Settings in pyproject.toml are inputs of the stamp: a warn list changes the findings.
    write_settings('warn = ["key-slot"]')
    warned = invoke("build", "--cache-dir", cache)
    assert warned.exit_code == 0
    assert lines(warned.stdout)[-2] == "Found 3 warnings in 1 file."


def test_ignore_comments_silence_their_own_line_only(slots: Path) -> None:
    script = Path("lua_src/slots-2.lua")
    text = script.read_text().splitlines()
    text[19] += "  -- echomq: ignore[key-slot]"  # line 20
    text[22] += "  -- echomq: ignore[key-slot]"  # line 23, the line before line 24's finding
    script.write_text("\n".join(text) + "\n")
    result = invoke("check", "--no-cache")
    assert lines(result.stdout)[0].startswith("lua_src/slots-2.lua:21:19: error: this key is a")
    assert lines(result.stdout)[1].startswith("lua_src/slots-2.lua:24:15: error: this key is bu")
    assert lines(result.stdout)[-1] == "Found 2 errors in 1 file."


# -- finding pyproject.toml ------------------------------------------------------------------


@pytest.fixture
def nested(in_tmp: Path) -> Path:
    """A project whose settings put the sources in scripts/ and the output in dist/."""
    project = in_tmp / "proj"
    (project / "scripts" / "includes").mkdir(parents=True)
    copy_fixture("slots", in_tmp)
    for file in (in_tmp / "slots" / "lua_src").rglob("*.lua"):
        target = project / "scripts" / file.relative_to(in_tmp / "slots" / "lua_src")
        target.write_bytes(file.read_bytes())
    write_settings('src = "scripts"\nout = "dist"\nwarn = ["key-slot"]', project)
    return project


def test_settings_are_found_from_a_subdirectory(nested: Path) -> None:
    os.chdir(nested)
    top = invoke("build", "--cache-dir", str(nested.parent / "cache"))
    assert top.exit_code == 0
    assert lines(top.stdout)[0].startswith("scripts/slots-2.lua:20:19: warning: this key")
    assert lines(top.stdout)[-1] == "wrote dist (1 script, 1 analysed, 0 from cache)"
    # Below the project, a pyproject.toml without the table is passed by on the way up.
    os.chdir(nested / "scripts" / "includes")
    Path("pyproject.toml").write_text('[project]\nname = "other"\nversion = "9.9.9"\n')
    below = invoke("build", "--cache-dir", str(nested.parent / "cache"))
    assert below.exit_code == 0
    # The sources lie outside the working directory: findings name them absolutely.
    assert lines(below.stdout)[0].startswith(f"{nested}/scripts/slots-2.lua:20:19: warning")
    assert (
        lines(below.stdout)[-1] == f"up to date: {nested}/dist (1 script, 0 analysed, 1 from cache)"
    )
    assert sorted(p.name for p in nested.iterdir()) == ["dist", "pyproject.toml", "scripts"]


def test_the_command_line_overrides_src_and_out(nested: Path) -> None:
    os.chdir(nested)
    result = invoke("build", "--no-cache", "--src", "scripts", "--out", "elsewhere")
    assert result.exit_code == 0
    assert lines(result.stdout)[0].startswith("scripts/slots-2.lua:20:19: warning: this key")
    assert lines(result.stdout)[-1] == "wrote elsewhere (1 script, 1 analysed, 0 from cache)"
    assert not (nested / "dist").exists()


def test_a_foreign_src_gets_its_own_settings_not_the_working_directorys(
    nested: Path, in_tmp: Path
) -> None:
    """From inside this project, --src naming a tree in no project builds it with the
    defaults: no warn list (and the output would go to the working directory's build/)."""
    foreign = copy_fixture("slots", in_tmp / "foreign")
    os.chdir(nested)
    result = invoke("build", "--no-cache", "--src", str(foreign / "lua_src"))
    assert result.exit_code == 1
    assert lines(result.stdout)[0] == f"{foreign}/" + SLOTS_20.format("error")
    # Its own pyproject.toml, beside or above the sources, applies.
    write_settings('ignore = ["key-slot"]', foreign)
    passing = invoke("build", "--no-cache", "--src", str(foreign / "lua_src"))
    assert (passing.exit_code, passing.stderr) == (0, "")
    # And its output goes beside its settings file, as the project's own would.
    assert passing.stdout == f"wrote {foreign}/build (1 script, 1 analysed, 0 from cache)\n"
    assert sorted(p.name for p in nested.iterdir()) == ["pyproject.toml", "scripts"]


def test_a_settings_file_appearing_above_defeats_the_stamp(slots: Path, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache")

    def bundle_after_build() -> list[str]:
        result = invoke("build", "--cache-dir", cache, "--ignore", "key-slot")
        assert result.exit_code == 0, result.output
        return sorted(p.name for p in Path("build").glob("*.tar.gz"))

    assert bundle_after_build() == ["echomq-scripts-0.0.0.tar.gz"]
    # A pyproject.toml one directory up, with the table, now holds the settings.
    write_settings('src = "slots/lua_src"\nout = "slots/build"\nversion = "2.0.0"', slots.parent)
    assert bundle_after_build() == ["echomq-scripts-2.0.0.tar.gz"]
    # One beside the sources is nearer, and gives the defaults again.
    write_settings("", slots)
    assert bundle_after_build() == ["echomq-scripts-0.0.0.tar.gz"]
    (slots / "pyproject.toml").unlink()
    assert bundle_after_build() == ["echomq-scripts-2.0.0.tar.gz"]


def test_explain_reads_the_projects_build_from_a_subdirectory(nested: Path) -> None:
    os.chdir(nested)
    assert invoke("build", "--no-cache").exit_code == 0
    os.chdir(nested / "scripts" / "includes")
    result = invoke("explain", "slots-2:20")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == f'{nested}/scripts/slots-2.lua:18: redis.call("TYPE", key)\n'


def test_console_replay_from_a_subdirectory_follows_the_settings_file(
    nested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The console script's replay (entry.py) of a build whose directories came from the
    settings, and a change to that file (a new ignore list) that it must not replay over."""
    from tests.test_cli import replay_probe, run_console

    monkeypatch.delenv("ECHOMQ_SCRIPTS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(nested.parent / "xdg"))
    os.chdir(nested / "scripts" / "includes")
    cache = str(nested.parent / "cache")
    first = run_console("build", "--cache-dir", cache)
    assert lines(first.stdout)[-1] == f"wrote {nested}/dist (1 script, 1 analysed, 0 from cache)"
    replayed = replay_probe("build", "--cache-dir", cache)
    assert replayed.returncode == 10
    assert lines(replayed.stdout)[-2:] == [
        "Found 3 warnings in 1 file.",
        f"up to date: {nested}/dist (1 script, 0 analysed, 1 from cache)",
    ]
    write_settings('src = "scripts"\nout = "dist"\nignore = ["key-slot"]', nested)
    assert replay_probe("build", "--cache-dir", cache).returncode == 9
    again = run_console("build", "--cache-dir", cache)
    assert (again.returncode, again.stderr) == (0, "")
