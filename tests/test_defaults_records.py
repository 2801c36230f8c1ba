"""Argument defaults, roles and named reply records: from the header, through the manifest, to
the generated wrappers and what they send and answer on a real server."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any, NamedTuple

import jsonschema
import pytest
import redis

from echomq_scripts.runtime.errors import ArgumentError
from echomq_scripts.runtime.grammar import ROLES, parse_arg_type, parse_default, parse_shape
from echomq_scripts.toolchain.header import parse_header
from tests.support.environment import REPO
from tests.support.projects import run_build
from tests.support.redis_server import RedisServer

SCHEMA = json.loads((REPO / "echomq_scripts" / "toolchain" / "manifest.schema.json").read_text())


def header_of(*tag_lines: str) -> tuple[Any, list[str]]:
    """The header of a script with these tag lines, and its findings as `line:col: message`."""
    lines = ("--- Does a thing.", *tag_lines, "--- @return int  one")
    header, problems = parse_header("x-0.lua", lines)
    return header, [f"{d.line}:{d.col}: {d.message}" for d in problems]


# -- the header ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spelled", "default", "role"),
    [
        ("int(0..) = 0", "0", ""),
        ("int = -5", "-5", ""),
        ("number(0..<1) = 0.25", "0.25", ""),
        ('string = ""', '""', ""),
        ('string = "two words \\" and a quote"', '"two words \\" and a quote"', ""),
        ("bool = false", "false", ""),
        ('enum(fast|slow) = "slow"', '"slow"', ""),
        ('id? = ""', '""', ""),
        ("json(object) = {}", "{}", ""),
        ("json = []", "[]", ""),
        ("json = null", "null", ""),
        ("int(0..) = @now", "", "now"),
        ("string(non-empty) = @token", "", "token"),
    ],
)
def test_an_argument_takes_a_default_or_a_role(spelled: str, default: str, role: str) -> None:
    header, problems = header_of(f"--- @arg value  {spelled}  what it is")
    assert problems == []
    (slot,) = header.args
    assert (slot.default, slot.role, slot.description) == (default, role, "what it is")


@pytest.mark.parametrize(
    ("spelled", "message"),
    [
        ("int(0..) = -1", "bad default: must be an int >= 0, got int -1"),
        ('int = "1"', "bad default: must be an int, got str '1'"),
        ("int = 1.5", "bad default: must be an int, got float 1.5"),
        ('enum(a|b) = "c"', "bad default: must be one of 'a', 'b', got str 'c'"),
        ('string(non-empty) = ""', "bad default: must be a non-empty str, got str ''"),
        ("string = {}", "bad default: '{}' is a default for json arguments only"),
        ("json = [1]", "bad default: '[1]': a default object or array is empty ({} or [])"),
        ("json(object) = []", "bad default: must be a mapping (a JSON object), got list []"),
        ("int = yes", "bad default: 'yes' is not a default: a JSON literal"),
        ("int = @clock", "bad default: unknown role '@clock' (one of: @now, @token)"),
        ("string = @now", "bad default: '@now' stands for int arguments, not string"),
        ("int = @token", "bad default: '@token' stands for string arguments, not int"),
        ("bool = NaN", "bad default: must be a bool, got float nan"),
    ],
)
def test_a_bad_default_is_a_finding_at_the_default(spelled: str, message: str) -> None:
    header, problems = header_of(f"--- @arg value  {spelled}  what it is")
    assert header is None
    column = 4 + len(" @arg value  ") + spelled.index("=") + 2
    (problem,) = problems
    assert problem.startswith(f"2:{column}: {message}")


def test_a_variable_argument_list_takes_no_default() -> None:
    _, problems = header_of('--- @arg... ids  string = ""  job ids')
    assert problems == ["2:5: @arg... takes no default: its default is no values"]


def test_every_role_fills_the_kind_it_names() -> None:
    """The manifest's schema and the generated wrappers know the same roles as the grammar."""
    assert SCHEMA["$defs"]["arg"]["properties"]["role"]["enum"] == sorted(ROLES)
    for role, (kinds, _) in ROLES.items():
        for kind in kinds:
            assert parse_default(parse_arg_type(kind), f"@{role}") == (None, role)


# -- records ------------------------------------------------------------------------------


def test_a_record_is_read_spelled_and_decoded() -> None:
    shape = parse_shape("list[Job(id: string,fields:hash,  inner: Inner(n: int)|nil)] | nil")
    assert shape.spelling == "list[Job(id: string, fields: hash, inner: Inner(n: int) | nil)] | nil"
    assert shape.annotation == "list[Job] | None"
    assert [r.name for r in shape.records()] == ["Job", "Inner"]
    reply = [[b"7", [b"a", b"1"], [5]], [b"8", [], None]]
    # Without the classes a record is a tuple; with them, each is built by its own.
    assert shape.decoder()(reply) == [("7", {"a": "1"}, (5,)), ("8", {}, None)]

    class Inner(NamedTuple):
        n: int

    class Job(NamedTuple):
        id: str
        fields: dict[str, str]
        inner: Inner | None

    built = shape.decoder({"Job": Job, "Inner": Inner})
    jobs = built(reply)
    assert jobs == [Job("7", {"a": "1"}, Inner(5)), Job("8", {}, None)]
    assert isinstance(jobs, list)
    assert [type(job) for job in jobs] == [Job, Job]
    assert type(jobs[0].inner) is Inner
    assert jobs[0].inner.n == 5
    with pytest.raises(TypeError, match=r"reply \[\[b'7', \[\]\]\] does not fit list\[Job"):
        built([[b"7", []]])


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("Job(id: string, id: int)", "Job has two fields named 'id'"),
        ("Job(Id: string)", "'Id' is not a field name of Job"),
        ("Job(class: string)", "'class' is not a field name of Job"),
        ("Job(count: int)", "a field 'count' of Job would hide the tuple's own method"),
        ("Job(id string)", "expected ':', found 'string'"),
        ("Job(id: string", "expected ')', found 'it'"),
        ("job(id: string)", "expected a type"),
        ("Job(a: string) | list[Job(b: int)]", "two different records named Job"),
    ],
)
def test_a_bad_record_is_a_header_finding(shape: str, message: str) -> None:
    header, problems = parse_header("x-0.lua", ("--- Does a thing.", f"--- @return {shape}  it"))
    assert header is None
    assert len(problems) == 1
    assert message in problems[0].message


def test_records_nest_no_deeper_than_lists() -> None:
    deep = "A(a: " * 33 + "int" + ")" * 33
    with pytest.raises(ValueError, match="nest more than 32 deep"):
        parse_shape(deep)


def test_two_scripts_share_a_record_only_when_they_spell_it_alike(tmp_path: Path) -> None:
    src = tmp_path / "lua_src"
    src.mkdir()
    script = '--- {name}.\n--- @return {shape}  it\nreturn {{ "x" }}\n'
    (src / "first-0.lua").write_text(script.format(name="First", shape="Pair(a: string)"))
    (src / "second-0.lua").write_text(script.format(name="Second", shape="list[Pair(a: string)]"))
    assert not run_build(src, tmp_path / "out").failed(strict=True)
    (src / "second-0.lua").write_text(script.format(name="Second", shape="Pair(b: string)"))
    result = run_build(src, tmp_path / "out2")
    (finding,) = [d for d in result.diagnostics if d.severity.value == "error"]
    assert finding.code == "duplicate-script"
    assert "the record Pair of the reply of script 'second'" in finding.message
    assert "the record Pair of the reply of script 'first'" in finding.message


# -- the manifest and the generated wrappers ----------------------------------------------


def test_the_manifest_carries_defaults_roles_and_spellings(edges: tuple[Path, Any]) -> None:
    project, _ = edges
    manifest = json.loads((project / "build" / "manifest.json").read_bytes())
    jsonschema.validate(manifest, SCHEMA)
    (script,) = [s for s in manifest["scripts"] if s["name"] == "withDefaults"]
    by_name = {a["name"]: a for a in script["argv"]}
    assert by_name["count"] | {"description": ""} == {
        "name": "count",
        "type": "int",
        "spelling": "int(0..)",
        "default": 3,
        "description": "",
    }
    assert by_name["label"]["default"] == 'a "quoted" label'
    assert by_name["opts"]["default"] == {}
    assert by_name["mode"]["spelling"] == "enum(fast|slow)"
    assert (by_name["now"]["role"], by_name["token"]["role"]) == ("now", "token")
    assert "default" not in by_name["now"]
    assert script["returns"]["shape"].startswith("Echoed(total: int, label: string,")
    # A role beside a default contradicts itself: the schema refuses it.
    by_name["now"]["default"] = 0
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(manifest, SCHEMA)


def test_a_wrapper_fills_defaults_and_roles_and_answers_a_record(
    edges: tuple[Path, Any], redis_server: RedisServer
) -> None:
    _, g = edges
    r = redis.Redis(port=redis_server.port)
    before = time.time_ns() // 1_000_000
    first = g.with_defaults(r, queue="q")
    after = time.time_ns() // 1_000_000
    assert type(first) is g.Echoed
    assert type(first.inner) is g.Inner
    assert first[:5] == (3, 'a "quoted" label', "0", "slow", {})
    assert before <= first.now <= after
    assert re.fullmatch(r"[0-9a-f]{32}", first.token)
    assert first.inner == g.Inner(ratio="0.5")
    # A new token for every call; what the caller passes is sent instead of any default.
    assert g.with_defaults(r, queue="q").token != first.token
    given = g.with_defaults(
        r,
        queue="q",
        count=0,
        ratio=0.75,
        label="",
        flag=True,
        mode="fast",
        opts={"a": [1]},
        now=12,
        token="mine",
    )
    assert given == (0, "", "1", "fast", {"a": [1]}, 12, "mine", ("0.75",))
    # The defaults are checked as the caller's values are, and None is not a value for them.
    with pytest.raises(ArgumentError, match="argument 'count' is required, got None"):
        g.with_defaults(r, queue="q", count=None)
    assert g.list_inner(r, queue="q", ratio=[0.5, 0.25]) == [g.Inner("0.5"), g.Inner("0.25")]
    assert g.list_inner(r, queue="q") is None


def test_records_and_defaults_in_this_projects_wrappers(redis_server: RedisServer) -> None:
    """The protocol's own wrappers: a job added and picked up with the defaults alone."""
    from echomq_scripts import generated as emq

    r = redis.Redis(port=redis_server.port)
    added = emq.add_standard_job(r, queue="defaults", name="n", data={})
    assert type(added) is emq.Added
    assert added.added == 1
    pickup = emq.move_to_active(r, queue="defaults")
    assert type(pickup) is emq.Pickup
    assert (pickup.job_id, pickup.fields["name"], pickup.limit_delay) == (added.job_id, "n", 0)
    # A token the role drew holds the lock, for 30 s, the default lock time.
    lock = f"emq:{{defaults}}:{added.job_id}:lock"
    assert r.get(lock) == pickup.token.encode()
    assert re.fullmatch(r"[0-9a-f]{32}", pickup.token)
    assert 29_000 < r.pttl(lock) <= 30_000
