"""Every finding code, on a fixture project, against its golden output (tests/fixtures/projects)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis

from echomq_scripts.toolchain.diagnostics import CODES
from tests.support.golden import PROJECTS, check_output, project_names


@pytest.mark.parametrize("name", project_names())
def test_project_findings_match_golden(name: str) -> None:
    expected = (PROJECTS / name / "expected.txt").read_text(encoding="utf-8")
    exit_code, stdout = check_output(PROJECTS / name)
    assert stdout == expected
    assert exit_code == (1 if ": error: " in expected else 0)


# Every code has a fixture (read-error's are links to nothing and out of the source root).
NOT_IN_FIXTURES: set[str] = set()


def test_every_finding_code_has_a_fixture() -> None:
    seen = set(NOT_IN_FIXTURES)
    for name in project_names():
        text = (PROJECTS / name / "expected.txt").read_text(encoding="utf-8")
        seen |= set(re.findall(r"\[([a-z-]+)\]$", text, re.MULTILINE))
    assert seen == set(CODES)


def _syntax_scripts() -> list[Path]:
    return sorted((PROJECTS / "syntax" / "lua_src").glob("*.lua"))


@pytest.mark.parametrize("script", _syntax_scripts(), ids=lambda p: p.stem)
def test_syntax_verdict_matches_redis(script: Path, r: redis.Redis) -> None:
    """Redis itself refuses each syntax fixture, on the line and with the words we report."""
    with pytest.raises(redis.ResponseError) as refused:
        r.script_load(script.read_bytes())
    redis_says = re.search(r"user_script:(\d+): (.*)", str(refused.value))
    assert redis_says is not None, str(refused.value)
    ours = [
        line
        for line in (PROJECTS / "syntax" / "expected.txt").read_text().splitlines()
        if line.startswith(f"lua_src/{script.name}:")
    ]
    assert len(ours) == 1
    line = int(ours[0].split(":")[1])
    # At the end of the file Lua names the line after the last one; we point at the last one.
    last_line = len(script.read_text().splitlines())
    assert line == min(int(redis_says[1]), last_line)
    # redis-py shows a lone byte of a broken character as U+FFFD; we show it as \xNN.
    assert redis_says[2].strip() in re.sub(r"\\x[0-9a-f]{2}", "\ufffd", ours[0])


def test_cached_facts_hold_every_field_and_read_back_equal() -> None:
    import dataclasses
    import json

    from echomq_scripts.toolchain.analyse import Facts, analyse

    # A script with findings, KEYS and ARGV uses, codes, top-level locals and key arguments.
    generated = Path(__file__).parent.parent / "echomq_scripts" / "generated" / "lua"
    extra = "local unused = 1\nlocal x = ARGV[1]\nlocal x = 2\nredis.call('GET', x)\n"
    text = extra + (generated / "moveToFinished-14.lua").read_text()
    facts = analyse(text)
    assert facts.findings
    assert facts.key_args
    assert facts.returned_codes
    assert facts.top_decls
    as_json = json.loads(json.dumps(facts.to_json()))
    assert as_json == json.loads(json.dumps(dataclasses.asdict(facts)))
    assert Facts.from_json(as_json, text.count("\n")) == facts


def test_text_findings_escape_control_characters_by_one_rule() -> None:
    from echomq_scripts.toolchain.diagnostics import escape_controls

    assert escape_controls("plain é name.lua") == "plain é name.lua"
    assert escape_controls("a\tb\nc\rd\x1be\x7ff\x85g\u2028h") == (
        "a\\tb\\nc\\rd\\x1be\\x7ff\\x85g\\u2028h"
    )
    # An undecodable byte, kept by os.fsdecode as a lone surrogate, shows as that byte.
    assert escape_controls("a\udcff.lua") == "a\\xff.lua"
    assert escape_controls(escape_controls("a\n")) == "a\\n"
