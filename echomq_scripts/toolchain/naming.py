"""Script and header names as Python names, and the header names no wrapper can take."""

from __future__ import annotations

import keyword
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..runtime.grammar import TUPLE_METHODS, TYPES
from .header import Header, Slot

# Names the generated module uses itself: a header argument, key or script of the same name
# gets a trailing underscore instead of shadowing one.
RESERVED = frozenset(
    {"client", "pipe", "queue", "keys", "extra_keys", "runtime", "cast", "annotations"}
    | {"Literal", "NamedTuple", "Mapping", "Sequence", "get_args"}
    | {"Pending", "Script", "ScriptSpec", "BY_CODE"}
    | {"SyncClient", "AsyncClient", "PipelineClient", "SCRIPTS", "load_all", "load_all_async"}
    | {"execute", "execute_async"}
    | {"errors", "scripts"}
)
# The locals of the wrappers' functions (templates/scripts.py.j2). An argument of one of these
# names is refused, not renamed: `_script_` would be no name to offer a caller.
# tests/test_codegen.py holds this list to the rendered code.
WRAPPER_LOCALS = frozenset(
    {"_script", "_encoded", "_value", "_checked", "_built", "_keys", "_args", "_reply", "_index"}
)
# The builtins the wrappers' functions read: annotations and the `cast(...)` of a reply, made of
# the grammar's types and the containers of return shapes and of the templates' own code. An
# argument of one of these names would hide it from the code of its own wrapper.
WRAPPER_BUILTINS = frozenset(
    {"list", "tuple", "str", "bytes"}
    | {
        word
        for kind in TYPES.values()
        for text in (kind.annotation, *kind.forms.values())
        for word in re.findall(r"[A-Za-z_]\w*", text)
        if word not in RESERVED and not keyword.iskeyword(word)
    }
)


def snake_case(name: str) -> str:
    """`moveToActive` -> `move_to_active`; `getJobIDs` -> `get_job_ids`; `HTTPServer` ->
    `http_server`."""
    # A run of capitals is one word, but its last capital starts the next word when a
    # lowercase letter follows it ("HTTPServer"), unless that lowercase is a plural "s" at the
    # end of the run ("IDs").
    words = re.findall(
        r"[A-Z]+(?:s(?![a-z]))?(?=[A-Z][a-z]|\d|\b|_|$)|[A-Z]?[a-z]+|[A-Z]+|\d+", name
    )
    return "_".join(word.lower() for word in words)


def pascal_case(name: str) -> str:
    """`moveToActive` -> `MoveToActive`."""
    return name[:1].upper() + name[1:]


def identifier(name: str, reserved: frozenset[str] = frozenset()) -> str:
    """A header name usable as a Python parameter or field: keywords and reserved names get `_`."""
    if keyword.iskeyword(name) or name in reserved:
        return name + "_"
    return name


def script_function(script: str) -> str:
    """The wrapper function of the script `script`: `moveToActive` -> `move_to_active`."""
    return identifier(snake_case(script), RESERVED)


def script_constant(script: str) -> str:
    """The module constant that holds the script's `Script` object."""
    return "_" + script_function(script).upper()


def keys_class(script: str) -> str:
    """The NamedTuple of the script's keys."""
    return pascal_case(script) + "Keys"


def key_field(key: str) -> str:
    """The field of the keys' NamedTuple that a header key becomes (no leading `_`: a
    NamedTuple refuses such fields)."""
    return identifier(key.lstrip("_") or "key", TUPLE_METHODS | RESERVED)


def arg_param(arg: str) -> str:
    """The wrappers' keyword parameter that a header argument becomes."""
    return identifier(arg, RESERVED)


def enum_alias(script: str, arg: str) -> str:
    """The Literal type alias of an enum argument, named for its script and argument."""
    alias = pascal_case(script) + pascal_case(arg)
    if alias == keys_class(script):
        alias += "Value"  # an argument called keys must not hide the keys class
    return alias


def values_constant(alias: str) -> str:
    """The module constant that holds an enum's values (from its alias)."""
    return "_" + snake_case(alias).upper()


def header_clashes(script: str, header: Header) -> list[tuple[Slot, str]]:
    """The header names whose wrapper would be broken, each with the slot to report it at and
    why: two keys that become one field, two arguments that become one parameter (or one enum
    alias), and an argument that would hide a name its wrapper's code reads. Keys and arguments
    never meet: keys are fields of a NamedTuple, arguments are parameters."""
    found: list[tuple[Slot, str]] = []
    fields: dict[str, Slot] = {}
    for slot in header.keys:
        field = key_field(slot.name)
        if field in fields:
            found.append((slot, _twice("key", slot, fields[field], f"the field '{field}'")))
        elif field == "str":
            # The NamedTuple's fields are annotated `str`: a field of that name hides the type.
            found.append(
                (slot, f"key '{slot.name}' would hide the builtin 'str' of the keys' type")
            )
        fields.setdefault(field, slot)
    own = wrapper_globals(script, header)
    params: dict[str, Slot] = {}
    names: dict[str, Slot] = {}  # the enum aliases and their values' constants
    for slot in _args(header):
        param = arg_param(slot.name)
        problem = _arg_problem(slot, param, params.get(param), own)
        params.setdefault(param, slot)
        if slot.arg.kind == "enum":
            alias = enum_alias(script, slot.name)
            for name in (alias, values_constant(alias)):
                first = names.setdefault(name, slot)
                if first is not slot and problem is None:
                    problem = _twice("argument", slot, first, f"'{name}'")
                elif name in RESERVED and problem is None:
                    # `ScriptSpec` from script `script` and argument `spec`: an import.
                    problem = (
                        f"argument '{slot.name}' would make '{name}', a name the generated"
                        " module imports or defines for itself: rename it"
                    )
        if problem is not None:
            found.append((slot, problem))
    return found


def wrapper_globals(script: str, header: Header) -> dict[str, str]:
    """The module names of its own that a script's wrappers read, each with what it is: an
    argument of one of these names would hide it from them."""
    names = {
        script_constant(script): "the script's object",
        f"_{script_function(script)}_call": "the function its wrappers share",
        keys_class(script): "the script's keys class",
    }
    for slot in _args(header):
        if slot.arg.kind == "enum":
            alias = enum_alias(script, slot.name)
            names[alias] = f"the type of argument '{slot.name}'"
            names[values_constant(alias)] = f"the values of argument '{slot.name}'"
    for record in header.returns.records() if header.returns else ():
        names[record.name] = f"the record {record.name} of its reply"
    return names


@dataclass(frozen=True)
class ModuleName:
    """What one module-level name of the generated `scripts.py` is, and the header argument it
    is made from (None: it is made from the script's name alone)."""

    what: str
    slot: Slot | None
    # A record's spelling: scripts whose replies spell a record alike share its one class.
    record: str = ""


def module_names(script: str, header: Header | None) -> dict[str, ModuleName]:
    """Every module-level name that the script `script`, with `header`, adds to the generated
    `scripts.py`; templates/scripts.py.j2 defines them, and tests/test_codegen.py holds this
    list to the rendered module. Without a header only the script's name makes names: the
    interface its code declares has no key templates and no enums (and building it for a
    script that reads ARGV[99999999] would take that many slots)."""
    func = script_function(script)
    own = f"of script '{script}'"
    names = {
        func: ModuleName(f"the wrapper {own}", None),
        f"{func}_async": ModuleName(f"the asyncio wrapper {own}", None),
        f"{func}_pipeline": ModuleName(f"the pipeline wrapper {own}", None),
        f"_{func}_call": ModuleName(f"the function the wrappers {own} share", None),
        script_constant(script): ModuleName(f"the Script object {own}", None),
        keys_class(script): ModuleName(f"the keys class {own}", None),
    }
    if header is None:
        return names
    for record in header.returns.records() if header.returns else ():
        what = f"the record {record.name} of the reply {own}"
        names.setdefault(record.name, ModuleName(what, None, record.spelling))
    if header.keys and all(slot.template for slot in header.keys):
        names[f"{func}_keys"] = ModuleName(f"the keys function {own}", None)
    for slot in _args(header):
        if slot.arg.kind == "enum":
            alias = enum_alias(script, slot.name)
            arg = f"argument '{slot.name}' {own}"
            # setdefault: two arguments of one alias are header_clashes' to report.
            names.setdefault(alias, ModuleName(f"the type of {arg}", slot))
            names.setdefault(values_constant(alias), ModuleName(f"the values of {arg}", slot))
    return names


def script_clashes(
    scripts: Sequence[tuple[str, str, Header | None]],
) -> list[tuple[int, Slot | None, str, str]]:
    """Where the module-level names of different scripts, given as (name, file, header) in
    file order, meet in the one generated module: `fooBar` and `foo_bar` share every name,
    `fooAsync` is `foo`'s asyncio wrapper, and script `foo`'s enum argument `pause` makes the
    constant `_FOO_PAUSE` that is script `fooPause`'s `Script` object. Each pair of scripts is
    reported once, as (index of the script, slot, code, message): at the header argument that
    makes the name when one does (header-names), else at the later script (duplicate-script)."""
    owners: dict[str, tuple[int, ModuleName]] = {}
    reported: set[tuple[int, int]] = set()
    found: list[tuple[int, Slot | None, str, str]] = []
    for index, (name, _, header) in enumerate(scripts):
        for generated, made in module_names(name, header).items():
            first, other = owners.setdefault(generated, (index, made))
            if first == index or (first, index) in reported:
                continue
            if made.record and made.record == other.record:
                continue  # one class, defined with the first script's wrappers
            reported.add((first, index))
            # Renaming the argument is the fix that leaves both scripts' names alone.
            if made.slot is None and other.slot is not None:
                here, mine, there, theirs = first, other, index, made
            else:
                here, mine, there, theirs = index, made, first, other
            message = (
                f"{mine.what} and {theirs.what} ({scripts[there][1]}) would both be"
                f" '{generated}' in the generated Python: rename one of them"
            )
            code = "duplicate-script" if mine.slot is None else "header-names"
            found.append((here, mine.slot, code, message))
    return found


def _args(header: Header) -> list[Slot]:
    return [*header.args, *([header.rest_args] if header.rest_args else [])]


def _arg_problem(slot: Slot, param: str, first: Slot | None, own: dict[str, str]) -> str | None:
    if first is not None:
        return _twice("argument", slot, first, f"the parameter '{param}'")
    if param in WRAPPER_LOCALS:
        return f"argument '{slot.name}' is a local of its wrapper's code: rename it"
    if param in WRAPPER_BUILTINS:
        return f"argument '{slot.name}' would hide the builtin '{param}' from its wrapper's code"
    if param in own:
        return f"argument '{slot.name}' would hide {own[param]}, '{param}', from its wrapper's code"
    return None


def _twice(what: str, slot: Slot, first: Slot, becomes: str) -> str:
    return (
        f"{what} '{slot.name}' and {what} '{first.name}' (line {first.line}) would both be"
        f" {becomes}: rename one of them"
    )
