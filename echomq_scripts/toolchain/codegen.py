"""Typed Python wrappers, generated from a build's manifest through the templates in templates/.

Each template gets view models whose properties hold every decision (names, types, docstrings);
the templates only lay them out. The output is already formatted as `ruff format` would, so the
committed files pass `ruff format --check` without the generator depending on ruff.
"""

from __future__ import annotations

import hashlib
import json
import re
import textwrap
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..runtime.codes import ERROR_CODES
from ..runtime.grammar import ROLES, ArgType, Shape
from .errors import EchoMQScriptsError
from .header import Slot
from .manifest import ScriptBuild, line_map, to_json_bytes
from .naming import (
    RESERVED,
    arg_param,
    enum_alias,
    key_field,
    keys_class,
    script_constant,
    script_function,
    values_constant,
)
from .package import UNSEALED, seal
from .snapshot import read_regular

if TYPE_CHECKING:
    from jinja2 import BytecodeCache

_LINE_LENGTH = 100  # ruff's, as pyproject.toml sets it
# An argument with one of these names identifies the job a failure is about.
_JOB_ID_ARGS = ("job_id", "jobId", "id")


class CodegenError(EchoMQScriptsError):
    """The scripts cannot be given distinct Python names."""


def _doc_line(text: str) -> str:
    # A description ends up inside a triple-quoted string: keep it from closing it.
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


@dataclass(frozen=True)
class KeyView:
    field: str
    description: str
    template: str
    unused: bool

    @property
    def doc_lines(self) -> list[str]:
        """The field's docstring, wrapped to fit the line length; [] for none."""
        text = self.description[:1].upper() + self.description[1:]
        if self.template:
            text = f"{text} ({self.template})" if text else self.template
        if self.unused:
            text += ": unused, kept for the key order"
        return textwrap.wrap(_doc_line(text), 88)


def call_lines(
    indent: str, function: str, arguments: list[str], suffix: str = "", brackets: str = "()"
) -> list[str]:
    """A call (or a subscript, with `brackets` "[]") laid out as `ruff format` lays it out: on
    one line when it fits, else with its arguments on one line of their own, else one argument
    per line with a trailing comma."""
    start, end = f"{indent}{function}{brackets[0]}", f"{indent}{brackets[1]}{suffix}"
    one_line = f"{start}{', '.join(arguments)}{brackets[1]}{suffix}"
    if len(one_line) <= _LINE_LENGTH:
        return [one_line]
    inner = f"{indent}    {', '.join(arguments)}"
    if len(inner) <= _LINE_LENGTH:
        return [start, inner, end]
    return [start, *(f"{indent}    {a}," for a in arguments), end]


def _number(value: float, kind: str) -> str:
    return str(int(value)) if kind == "int" else repr(float(value))


def _python_literal(value: object) -> str:
    """A header default (a JSON value, grammar.parse_default) as the wrapper's parameter
    default, spelled as `ruff format` leaves it."""
    if value is True or value is False or value is None:
        return repr(value)
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)[1:-1]  # JSON's escapes are Python's too
        if value.count('"') > value.count("'"):
            # ruff format's choice: the quotes that need fewer escapes, double on a tie.
            return "'" + text.replace('\\"', '"').replace("'", "\\'") + "'"
        return f'"{text}"'

    # The only containers a default may be: {} for a json argument (a mapping no one can
    # change, not a shared dict) and [].
    return "runtime.EMPTY_OBJECT" if value == {} else "()"


@dataclass(frozen=True)
class ArgView:
    name: str  # as the header spells it
    param: str  # as the wrapper spells it
    arg: ArgType
    description: str
    alias: str = ""  # an enum's Literal type alias, named for its script and argument
    default: str = ""  # the header's default, JSON text; "" for none
    role: str = ""  # the role that fills it when the caller leaves it out (grammar.ROLES)

    @property
    def kind(self) -> str:
        return self.arg.kind

    @property
    def annotation(self) -> str:
        return self.alias or self.arg.annotation

    @property
    def param_annotation(self) -> str:
        """The wrapper's parameter type: None too for an argument a role fills."""
        return f"{self.annotation} | None" if self.role else self.annotation

    @property
    def param_default(self) -> str:
        """The wrapper's parameter default, as Python: "" for none, None for a role's."""
        if self.role:
            return "None"
        return _python_literal(json.loads(self.default)) if self.default else ""

    @property
    def fill(self) -> str:
        """The runtime function that fills a role's argument the caller left out."""
        return {"now": "runtime.now_ms", "token": "runtime.new_token"}[self.role]

    @property
    def doc_type(self) -> str:
        """The type and default the docstring shows: `int(0..), default 0`."""
        if self.role:
            return f"{self.arg.spelling}, default @{self.role}: {ROLES[self.role][1]}"
        if self.default:
            return f"{self.arg.spelling}, default {self.default}"
        return self.arg.spelling

    @property
    def values_constant(self) -> str:
        """The module constant that holds an enum's values (from its alias)."""
        return values_constant(self.alias)

    def alias_lines(self) -> list[str]:
        """An enum's `Alias = Literal[...]` and its values' constant."""
        values = [f'"{v}"' for v in self.arg.values]
        return [
            *call_lines("", f"{self.alias} = Literal", values, "", "[]"),
            f'"""The values of `{self.param}`."""',
            f"{self.values_constant}: tuple[str, ...] = get_args({self.alias})",
        ]

    def encode(self, value: str, indent: str, suffix: str = ",") -> list[str]:
        """The lines of the runtime call that checks and encodes `value` for this argument,
        then `suffix` (a list item's comma by default)."""
        arg = self.arg
        arguments = ["_script", f'"{self.name}"', value]
        if arg.form:
            arguments.append(f'"{arg.form}"')
        elif arg.kind == "enum":
            arguments.append(self.values_constant)
        elif arg.kind == "id" and arg.optional:
            arguments.append("optional=True")
        elif arg.kind in ("int", "number"):
            if arg.low is not None:
                arguments.append(f"low={_number(arg.low, arg.kind)}")
            if arg.high is not None:
                arguments.append(f"high={_number(arg.high, arg.kind)}")
            if arg.below:
                arguments.append("below=True")
        return call_lines(indent, f"runtime.{arg.encoder.__name__}", arguments, suffix)

    def append_lines(self, value: str, indent: str) -> list[str]:
        """`_encoded.append(<the encoding call>)`, laid out as ruff lays out a call in a call."""
        inner = self.encode(value, "", "")
        if len(inner) == 1:
            return call_lines(indent, "_encoded.append", inner)
        return [f"{indent}_encoded.append(", *self.encode(value, indent + "    ", ""), f"{indent})"]


@dataclass(frozen=True)
class ScriptView:
    """One script as the wrapper template needs it."""

    script: ScriptBuild
    package: str

    @property
    def entry(self) -> Any:
        return self.script.resolved.entry

    @property
    def script_id(self) -> str:
        return str(self.entry.script_id)

    @property
    def name(self) -> str:
        return str(self.entry.name)

    @property
    def func(self) -> str:
        return script_function(self.name)

    @property
    def constant(self) -> str:
        return script_constant(self.name)

    @property
    def keys_class(self) -> str:
        return keys_class(self.name)

    @cached_property
    def keys(self) -> list[KeyView]:
        return [
            KeyView(
                key_field(k.name),
                k.description,
                k.template,
                k.unused,
            )
            for k in self.script.interface.keys
        ]

    @cached_property
    def args(self) -> list[ArgView]:
        return [self._arg_view(a) for a in self.script.interface.args]

    @cached_property
    def rest_arg(self) -> ArgView | None:
        header = self.script.header
        if header is None or header.rest_args is None:
            return None
        return self._arg_view(header.rest_args)

    def _arg_view(self, slot: Slot) -> ArgView:
        alias = enum_alias(self.name, slot.name) if slot.arg.kind == "enum" else ""
        return ArgView(
            slot.name,
            arg_param(slot.name),
            slot.arg,
            slot.description,
            alias,
            slot.default,
            slot.role,
        )

    @property
    def role_args(self) -> list[ArgView]:
        """The arguments a role fills when the caller leaves them out."""
        return [a for a in self.args if a.role]

    @cached_property
    def records(self) -> list[Shape]:
        """The records of the return shape, each once, innermost first (a record's fields may
        name another record, which must be defined before it)."""
        shape = self.script.interface.returns
        found = {} if shape is None else {r.name: r for r in reversed(shape.records())}
        return list(found.values())

    def record_lines(self, record: Shape) -> list[str]:
        """The NamedTuple class of one record of the reply."""
        text = _doc_line(f"A reply of {self.script_id}: {record.spelling}.")
        lines = [f"class {record.name}(NamedTuple):"]
        if len(text) <= 90:  # with its indent and quotes, within the line length
            lines.append(f'    """{text}"""')
        else:
            doc = textwrap.wrap(text, 88)  # two lines at least: one, ruff would join
            lines += [f'    """{doc[0]}', *(f"    {line}" for line in doc[1:]), '    """']
        lines.append("")
        fields = zip(record.fields, record.items, strict=True)
        lines += [f"    {field}: {item.annotation}" for field, item in fields]
        return lines

    @property
    def public_names(self) -> list[str]:
        """The names its module gives the package: its wrappers, keys class and enum types."""
        names = [self.keys_class, self.func, self.func + "_async", self.func + "_pipeline"]
        names += [a.alias for a in self.enum_args]
        if self.templated:
            names.append(self.func + "_keys")
        return names

    @property
    def module(self) -> str:
        """Its module's name in scripts/: the wrapper's with a leading underscore, so that
        importing it never binds a name the package gives the wrapper itself."""
        return f"_{self.func}"

    @property
    def module_entry_lines(self) -> list[str]:
        """Its entry in scripts/__init__.py's ScriptModules, laid out as ruff format lays it
        out: on one line when it fits, else its names one a line."""
        names = [f'"{n}"' for n in sorted(self.public_names, key=_import_key)]
        start = f'"{self.module}": ("{self.constant}", ('
        one = f"{start}{', '.join(names)})),"
        if len(one) <= _LINE_LENGTH - 8:
            return [one]
        return [
            f'"{self.module}": (',
            f'    "{self.constant}",',
            "    (",
            *(f"        {n}," for n in names),
            "    ),",
            "),",
        ]

    @property
    def public_import_lines(self) -> list[str]:
        """scripts/__init__.py's import of its public names (for type checkers), laid out as
        ruff's isort lays it out inside an `if`: on one line when it fits, else one name a
        line."""
        names = sorted(self.public_names, key=_import_key)
        line = f"from .{self.module} import {', '.join(names)}"
        if len(line) <= _LINE_LENGTH - 4:
            return [line]
        return [f"from .{self.module} import (", *(f"    {n}," for n in names), ")"]

    @property
    def uses_mapping(self) -> bool:
        every = [*self.args, *([self.rest_arg] if self.rest_arg else [])]
        return any("Mapping[" in a.annotation for a in every)

    @property
    def uses_runtime(self) -> bool:
        """Whether its module's code calls the runtime: any argument or key does."""
        return bool(self.args or self.rest_arg or not self.keyless)

    @property
    def typing_imports(self) -> str:
        names = ["NamedTuple"]
        if self.enum_args:
            names += ["Literal", "get_args"]
        if self.returns:
            names.append("cast")
        return ", ".join(sorted(names, key=_import_key))

    @property
    def record_names(self) -> str:
        """Its module's import of the records, in ruff's isort order."""
        return ", ".join(sorted((r.name for r in self.records), key=_import_key))

    @property
    def records_tuple(self) -> str:
        names = [r.name for r in self.records]
        return ", ".join(names) + ("," if len(names) == 1 else "")

    @property
    def enum_args(self) -> list[ArgView]:
        """The arguments whose type is an enum: each gets a Literal alias."""
        return [a for a in [*self.args, *([self.rest_arg] if self.rest_arg else [])] if a.alias]

    @property
    def has_rest_keys(self) -> bool:
        return self.script.header is not None and self.script.header.rest_keys is not None

    @property
    def keyless(self) -> bool:
        """A script that takes no keys at all: its wrappers take neither queue= nor keys=."""
        return not self.keys and not self.has_rest_keys

    @property
    def templated(self) -> bool:
        return bool(self.keys) and all(k.template for k in self.keys)

    @property
    def template_args(self) -> list[ArgView]:
        """The arguments that key templates name, in argument order."""
        named = {p for k in self.keys for p in re.findall(r"<([^>]*)>", k.template)}
        return [a for a in self.args if a.name in named]

    @property
    def template_text_args(self) -> str:
        """The template arguments `keys_for` checks (plain strings: the encoders of `id` and
        `enum` arguments check theirs), as a tuple literal."""
        names = [f'"{a.name}"' for a in self.template_args if a.kind == "string"]
        return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"

    @property
    def returns(self) -> str:
        shape = self.script.interface.returns
        return shape.spelling if shape is not None else ""

    @property
    def returns_lines(self) -> list[str]:
        """The spec's `returns=`: one string, or parts of it that `ruff format` leaves apart
        (broken after a blank) when the whole would pass the line length."""
        one = f'        returns="{self.returns}",'
        if len(one) <= _LINE_LENGTH:
            return [one]
        parts = [""]
        for piece in re.split(r"(?<= )", self.returns):
            if parts[-1] and len(parts[-1]) + len(piece) > 76:
                parts.append("")
            parts[-1] += piece
        return ["        returns=(", *(f'            "{part}"' for part in parts), "        ),"]

    @property
    def return_type(self) -> str:
        shape = self.script.interface.returns
        return shape.annotation if shape is not None else "object"

    @property
    def sha1(self) -> str:
        return hashlib.sha1(self.script.body).hexdigest()

    @property
    def codes_tuple(self) -> str:
        codes = [str(code) for code, _ in self.codes]
        return ", ".join(codes) + ("," if len(codes) == 1 else "")

    @property
    def job_id_suffix(self) -> str:
        return f", {self.job_id_param}" if self.job_id_param else ""

    @property
    def cast_return(self) -> list[str]:
        """The wrapper's `return cast(...)`, laid out as `ruff format` lays it out."""
        call = f"{self.constant}.result(_reply{self.job_id_suffix})"
        return call_lines("    ", "return cast", [self.return_type, call])

    @property
    def call_parameters(self) -> list[str]:
        """The names `_<func>_call` takes, in order; each wrapper passes its own of each."""
        names = [] if self.keyless else ["queue", "keys"] if self.templated else ["keys"]
        if self.has_rest_keys:
            names.append("extra_keys")
        names += [a.param for a in self.args]
        if self.rest_arg:
            names.append(self.rest_arg.param)
        return names

    @property
    def job_id_param(self) -> str:
        for arg in self.args:
            if arg.name in _JOB_ID_ARGS and arg.kind in ("string", "id"):
                return arg.param
        return ""

    @property
    def codes(self) -> list[tuple[int, str]]:
        header = self.script.header
        listed = header.codes if header is not None else ()
        return [(code, ERROR_CODES[code]) for code in listed]

    @property
    def docstring(self) -> list[str]:
        """The wrapper's docstring, line by line (without the quotes' indentation)."""
        header = self.script.header
        summary = header.summary if header is not None else f"Runs {self.script_id}."
        lines = textwrap.wrap(_doc_line(summary), 88)
        if header is not None and header.description:
            lines += ["", *textwrap.wrap(_doc_line(header.description), 88)]
        if self.args or self.rest_arg:
            lines += ["", "Args:"]
            for arg in [*self.args, *([self.rest_arg] if self.rest_arg else [])]:
                text = f"{arg.param} ({arg.doc_type}): {arg.description or 'ARGV'}"
                lines += ["    " + line for line in textwrap.wrap(_doc_line(text), 84)]
        if header is not None:
            returns = f"{self.returns}: {header.returns_description}".rstrip(": ")
            lines += ["", "Returns:"] + ["    " + x for x in textwrap.wrap(_doc_line(returns), 84)]
        if self.codes:
            lines += ["", "Raises:"]
            lines += [f"    {name}: the script returned {code}." for code, name in self.codes]
        return lines


def generated_files(
    scripts: list[ScriptBuild], package: str, inputs: str, cache_dir: Path | None = None
) -> dict[str, bytes]:
    """Every file of the generated package, by its path inside it; `inputs` (from
    `package.package_digest`) is recorded in __init__.py, so a later build can tell it is current
    without rendering anything.

    With a `cache_dir`, Jinja keeps its compiled templates there: compiling them costs more
    than rendering them.
    """
    from jinja2 import Environment, PackageLoader, StrictUndefined

    environment = Environment(
        bytecode_cache=None if cache_dir is None else _bytecode_cache(cache_dir / "templates"),
        loader=PackageLoader("echomq_scripts.toolchain", "templates"),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=StrictUndefined,
        autoescape=False,  # Python source, not HTML
    )
    views = [ScriptView(s, package) for s in sorted(scripts, key=lambda s: s.resolved.entry.name)]
    functions: dict[str, str] = {}
    for view in views:
        if view.func in functions:
            raise CodegenError(
                f"scripts '{functions[view.func]}' and '{view.name}' would both be wrapped as"
                f" '{view.func}': rename one of them"
            )
        functions[view.func] = view.name

    records = _records(views)
    # What the package's __init__.py imports: every script module's public names (through
    # scripts/__init__.py), the records, and the three of scripts/__init__.py itself.
    from_scripts = ["SCRIPTS", "load_all", "load_all_async"]
    for view in views:
        from_scripts += view.public_names
    context: dict[str, Any] = {
        "scripts": views,
        "codes": sorted(ERROR_CODES.items(), reverse=True),
        "generator": f"echomq-scripts {__version__}",
        "exports": sorted(from_scripts, key=_import_key),
        "record_names": sorted(records, key=_import_key),
        "records_lines": _records_lines(sorted(records)),
        "all_names": sorted([*from_scripts, *records, "errors"], key=_isort_key),
        "scripts_all": sorted(from_scripts, key=_isort_key),
        # scripts/__init__.py's imports, in the order ruff's isort keeps modules.
        "modules": sorted(views, key=lambda v: v.module.lower()),
        "records": [
            (view, record)
            for view in views
            for record in view.records
            if records[record.name] == view.name
        ],
        "inputs": inputs,
        "contents": UNSEALED,  # filled in by `seal`, once every file is rendered
    }

    def render(template: str, **more: Any) -> bytes:
        text = environment.get_template(template).render({**context, **more})
        return text.encode("utf-8")

    files = {
        "__init__.py": render("__init__.py.j2"),
        "errors.py": render("errors.py.j2"),
        "scripts/__init__.py": render("scripts.py.j2"),
    }
    if records:
        files["records.py"] = render("records.py.j2")
    for view in views:
        files[f"scripts/{view.module}.py"] = render("script.py.j2", s=view)
    for script in scripts:
        files[f"lua/{script.script_id}.lua"] = script.body
        files[f"lua/{script.script_id}.map.json"] = to_json_bytes(line_map(script), indent=None)
    return seal(files)


def _records(views: list[ScriptView]) -> dict[str, str]:
    """Each record the scripts' replies name, by the script that defines its class (the first
    to name it). Two scripts share a record only when they spell it alike, and a record takes
    no other script's name: the checks refuse the rest (naming.script_clashes). The names the
    module imports are refused here, where the module is made."""
    owners: dict[str, str] = {}  # record name -> the script that defines it
    for view in views:
        for record in view.records:
            if record.name in RESERVED:
                raise CodegenError(
                    f"script '{view.name}': the record {record.name} of its reply would hide"
                    f" '{record.name}', a name the generated module imports or defines for"
                    " itself: rename the record"
                )
            owners.setdefault(record.name, view.name)
    return owners


def _records_lines(names: list[str]) -> list[str]:
    """The package's `_RECORDS = frozenset(...)` of the record names, laid out as `ruff
    format` lays it out: on one line, else the set on a line of its own, else a name a line."""
    if not names:
        return ["_RECORDS: frozenset[str] = frozenset()"]
    items = ", ".join(f'"{name}"' for name in names)
    one = f"_RECORDS = frozenset({{{items}}})"
    if len(one) <= _LINE_LENGTH:
        return [one]
    if len(items) + 6 <= _LINE_LENGTH:
        return ["_RECORDS = frozenset(", f"    {{{items}}}", ")"]
    return ["_RECORDS = frozenset(", "    {", *(f'        "{n}",' for n in names), "    }", ")"]


def _bytecode_cache(directory: Path) -> BytecodeCache:
    """Jinja's cache of compiled templates in `directory`, whose entries are read as the build's
    other caches are: anything but a regular file (a named pipe would make Jinja's own `open`
    wait forever) and a damaged entry are misses."""
    from jinja2.bccache import Bucket, FileSystemBytecodeCache

    class Cache(FileSystemBytecodeCache):
        def load_bytecode(self, bucket: Bucket) -> None:
            try:
                data = read_regular(self._get_cache_filename(bucket), "a template cache entry")
            except OSError:
                return
            try:
                bucket.bytecode_from_string(data)
            except Exception:  # Jinja unpickles the entry: damage can raise almost anything
                bucket.reset()

    directory.mkdir(parents=True, exist_ok=True)
    return Cache(str(directory))


def _import_key(name: str) -> tuple[int, str]:
    # An import list's order in ruff's isort: as RUF022's, but names of one kind compare without
    # case (GetJobsKeys before GetJobStateKeys), where `__all__` compares them as they are.
    kind, _ = _isort_key(name)
    return (kind, name.lower())


def _isort_key(name: str) -> tuple[int, str]:
    # The order ruff's isort and RUF022 keep: CONSTANTS, then Classes, then everything else.
    if name.isupper():
        return (0, name)
    return (1, name) if name[:1].isupper() else (2, name)
