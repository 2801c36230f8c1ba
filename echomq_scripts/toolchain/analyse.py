"""Static analysis of one resolved script: what it reads, writes and returns.

The result, `Facts`, depends only on the resolved text, so it is cached by content hash; the
checks that also need the header, the filename and the line map (`checks.py`) run on every build.
Positions here are 0-based rows of the resolved script and 0-based byte columns, as tree-sitter
gives them; `checks.py` maps them back into source files.

The walk keeps Lua's scoping rules: a `local` statement's values are evaluated before its names
exist, a `local function` is visible in its own body, `repeat ... until` sees the body's locals,
and a method body has an implicit `self`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, TypeVar

from .redis_lua import GLOBALS, LIBRARY_FIELDS, MISSING_GLOBALS
from .syntax import check_syntax

Position = tuple[int, int]  # (row, byte column), both 0-based
_T = TypeVar("_T")
# What walking one node asks for next: its children to walk, each with its scope.
_Steps = Iterator[tuple[Any, "_Scope"]]


@dataclass
class Finding:
    """A problem the code shows by itself, before the header is consulted."""

    row: int
    col: int
    code: str
    message: str
    # Row of the other declaration a shadowing warning refers to.
    related_row: int | None = None
    # Set for locals declared at the top level of the chunk, which an include may own.
    top_level: bool = False


@dataclass
class TableUse:
    """How a script uses KEYS or ARGV, including through aliases and function parameters."""

    literal: list[tuple[int, int, int]] = field(default_factory=list)  # (index, row, col)
    dynamic: list[Position] = field(default_factory=list)  # t[expr], expr not known (integers())
    whole: list[Position] = field(default_factory=list)  # unpack(t), ipairs(t), #t, return t
    # Stored (`{k = t}`, `x.k = t`) or passed (a `...`, a function the walk cannot name) where
    # the check cannot follow it: its reads there are unknown.
    escaped: list[Position] = field(default_factory=list)


@dataclass
class TopDecl:
    """A local declared at the top level of the chunk, and the rows that read it."""

    name: str
    row: int
    col: int
    read_rows: list[int]


@dataclass
class Facts:
    syntax: tuple[int, int, str] | None = None
    findings: list[Finding] = field(default_factory=list)
    keys: TableUse = field(default_factory=TableUse)
    argv: TableUse = field(default_factory=TableUse)
    returned_codes: list[tuple[int, int, int]] = field(default_factory=list)  # (code, row, col)
    top_decls: list[TopDecl] = field(default_factory=list)
    top_statement_rows: list[int] = field(default_factory=list)
    # Each key argument of a redis.call / redis.pcall: (row, col, where its value comes from:
    # "keys", "argv", "literal" or "unknown").
    key_args: list[tuple[int, int, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        # What dataclasses.asdict gives, without its deep copies: a cold build writes one of
        # these per script.
        def use(table: TableUse) -> dict[str, Any]:
            return {
                "literal": table.literal,
                "dynamic": table.dynamic,
                "whole": table.whole,
                "escaped": table.escaped,
            }

        return {
            "syntax": self.syntax,
            "findings": [vars(f).copy() for f in self.findings],
            "keys": use(self.keys),
            "argv": use(self.argv),
            "returned_codes": self.returned_codes,
            "top_decls": [vars(d).copy() for d in self.top_decls],
            "top_statement_rows": self.top_statement_rows,
            "key_args": self.key_args,
        }

    @classmethod
    def from_json(cls, data: object, rows: int) -> Facts:
        """What `to_json` gave, read back from a cache entry of a script of `rows` lines.

        Raises ValueError for anything of another shape: a field missing, extra or of another
        type, a finding code that is not registered, a row outside the script. A damaged entry
        must be a miss, never a crash nor findings that a fresh analysis would not give.
        """
        row = _Field(int, 0, rows - 1)
        col = _Field(int, 0)

        def use(raw: object) -> TableUse:
            fields = _record(raw, ("literal", "dynamic", "whole", "escaped"))
            return TableUse(
                _list(fields["literal"], _tuple(_Field(int), row, col)),
                _list(fields["dynamic"], _tuple(row, col)),
                _list(fields["whole"], _tuple(row, col)),
                _list(fields["escaped"], _tuple(row, col)),
            )

        def finding(raw: object) -> Finding:
            fields = _record(raw, _FINDING_FIELDS)
            for name, check in zip(_FINDING_FIELDS, _finding_checks(row, col), strict=True):
                check(fields[name])
            return Finding(**fields)

        def decl(raw: object) -> TopDecl:
            fields = _record(raw, ("name", "row", "col", "read_rows"))
            return TopDecl(
                _Field(str)(fields["name"]),
                row(fields["row"]),
                col(fields["col"]),
                _list(fields["read_rows"], row),
            )

        fields = _record(data, _FACTS_FIELDS)
        syntax = fields["syntax"]
        return cls(
            syntax=None if syntax is None else _tuple(row, col, _Field(str))(syntax),
            findings=_list(fields["findings"], finding),
            keys=use(fields["keys"]),
            argv=use(fields["argv"]),
            returned_codes=_list(fields["returned_codes"], _tuple(_Field(int), row, col)),
            top_decls=_list(fields["top_decls"], decl),
            top_statement_rows=_list(fields["top_statement_rows"], row),
            key_args=_list(fields["key_args"], _tuple(row, col, _Field(str, choices=_KEY_KINDS))),
        )


# -- reading a cached `Facts` back: every field checked -----------------------------------------

_FACTS_FIELDS = (
    "syntax",
    "findings",
    "keys",
    "argv",
    "returned_codes",
    "top_decls",
    "top_statement_rows",
    "key_args",
)
_FINDING_FIELDS = ("row", "col", "code", "message", "related_row", "top_level")
_KEY_KINDS = frozenset({"keys", "argv", "literal", "unknown"})


class _Field:
    """A check of one JSON value: its type (a bool is no int here), and optionally its range or
    its allowed values; calling it returns the value or raises ValueError."""

    def __init__(
        self,
        kind: type,
        low: int | None = None,
        high: int | None = None,
        choices: frozenset[str] | None = None,
        optional: bool = False,
    ) -> None:
        self.kind, self.low, self.high = kind, low, high
        self.choices, self.optional = choices, optional

    def __call__(self, value: Any) -> Any:
        if value is None and self.optional:
            return value
        if type(value) is not self.kind:
            raise ValueError(f"{value!r} is not a {self.kind.__name__}")
        if isinstance(value, int) and not (
            (self.low is None or value >= self.low) and (self.high is None or value <= self.high)
        ):
            raise ValueError(f"{value!r} is out of range")
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{value!r} is not one of {sorted(self.choices)}")
        return value


def _finding_checks(row: _Field, col: _Field) -> tuple[_Field, ...]:
    from .diagnostics import CODES

    return (
        row,
        col,
        _Field(str, choices=frozenset(CODES)),
        _Field(str),
        _Field(int, row.low, row.high, optional=True),
        _Field(bool),
    )


def _record(raw: object, names: tuple[str, ...]) -> dict[str, Any]:
    """`raw` as an object with exactly the fields `names`."""
    if not isinstance(raw, dict) or sorted(raw) != sorted(names):
        raise ValueError(f"not an object with the fields {', '.join(names)}")
    return raw


def _list(raw: object, item: Callable[[object], _T]) -> list[_T]:
    if not isinstance(raw, list):
        raise ValueError(f"{raw!r} is not a list")
    return [item(x) for x in raw]


def _tuple(*items: _Field) -> Callable[[object], Any]:
    """A reader of a list of exactly `items`, as a tuple."""

    def read(raw: object) -> tuple[Any, ...]:
        if not isinstance(raw, list) or len(raw) != len(items):
            raise ValueError(f"{raw!r} is not a list of {len(items)}")
        return tuple(check(x) for check, x in zip(items, raw, strict=True))

    return read


def analyse(text: str) -> Facts:
    """Compile `text` with Lua 5.1 and, when it compiles, walk its syntax tree."""
    problem = check_syntax(text)
    if problem is not None:
        return Facts(syntax=(problem.row, problem.col, problem.message))
    return _Walker(text).run()


def load_parsers() -> None:
    """Load Lua 5.1 and tree-sitter now, before the analysis forks (workers.py): the workers
    then share them rather than each loading its own."""
    check_syntax("")
    _parse(b"")


_parser: Any = None


def _parse(text: bytes) -> Any:
    # tree-sitter is loaded on first use, so a build served from the cache never imports it.
    global _parser
    if _parser is None:
        import tree_sitter
        import tree_sitter_lua

        _parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_lua.language()))
    return _parser.parse(text)


class _Binding:
    """One declared local: a variable, a parameter, a loop variable or a local function."""

    __slots__ = (
        "col",
        "depth",
        "func",
        "kind",
        "loop_range",
        "name",
        "reads",
        "reassigned",
        "row",
        "values",
    )

    def __init__(self, name: str, node: Any, kind: str, depth: int) -> None:
        self.name = name
        self.row: int = node.start_point.row
        self.col: int = node.start_point.column
        self.kind = kind  # "local", "param", "loop" or "function"
        self.depth = depth  # 0 for the chunk's own top level
        self.reads: list[Any] = []
        self.values: list[Any] = []  # expressions assigned to it, for alias tracking
        self.func: Any = None  # the function node, when the binding holds a local function
        # A numeric for's variable: its start, end and step (None: 1) expressions.
        self.loop_range: tuple[Any, Any, Any] | None = None
        # Whether an assignment statement (not its declaration) gives it a value.
        self.reassigned = False


class _Scope:
    __slots__ = ("depth", "names", "parent")

    def __init__(self, parent: _Scope | None) -> None:
        self.parent = parent
        self.depth: int = 0 if parent is None else parent.depth + 1
        self.names: dict[str, _Binding] = {}

    def lookup(self, name: str) -> _Binding | None:
        scope: _Scope | None = self
        while scope is not None:
            found = scope.names.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None


_SKIP = frozenset({"comment", "string", "number", "nil", "true", "false", "vararg_expression"})


class _Walker:
    def __init__(self, text: str) -> None:
        self.tree = _parse(text.encode("utf-8"))
        self.facts = Facts()
        self.bindings: list[_Binding] = []
        self.resolved: dict[
            int, _Binding | None
        ] = {}  # identifier node id -> binding (None: global)
        self.global_reads: list[Any] = []
        self.params: dict[int, list[_Binding]] = {}  # function node id -> its parameters
        self.calls: list[Any] = []
        # Inside a branch that never runs (`if false then`): above 0 while the walk is there.
        self.dead = 0
        self.dead_reads: set[int] = set()  # identifier node ids read in such a branch
        # `_G.KEYS`, `_G["ARGV"]`: node id -> the table it reads, as a global read of it would.
        self.global_fields: dict[int, Any] = {}
        # The table of each `t[i]`: its node id -> the index expression. The checks look a
        # read's index up here: tree-sitter finds a node's parent by walking down from the root,
        # which in a long chain (`KEYS[1] + KEYS[1] + ...`) costs the chain's depth per read.
        self.indexed: dict[int, Any] = {}

    def run(self) -> Facts:
        root = self.tree.root_node
        scope = _Scope(None)
        for child in root.named_children:
            if child.type not in ("comment", "hash_bang_line", "variable_declaration") and not (
                child.type == "function_declaration" and _is_local(child)
            ):
                self.facts.top_statement_rows.append(child.start_point.row)
            self.visit(child, scope)
        self.report_locals()
        # What a local function's parameters receive: the arguments of its direct calls.
        for call in self.calls:
            for param, argument in zip(
                self.local_function_params(call) or [], _call_arguments(call), strict=False
            ):
                param.values.append(argument)
        self.facts.keys = self.table_use("KEYS")
        self.facts.argv = self.table_use("ARGV")
        self.facts.key_args = self.key_provenance()
        return self.facts

    # -- the walk ---------------------------------------------------------------------------

    def visit(self, node: Any, scope: _Scope) -> None:
        """Walk `node` and everything under it, depth first, in source order.

        The walk keeps its own stack of iterators, one per inner node being walked, instead of
        recursing: tree-sitter nests left-associative chains (`1 + 1 + ...`, `a and b and ...`,
        `f()()...`, `o:m():m()...`, `t.a.b...`, `t[1][1]...`) one node per link, and Lua 5.1
        compiles them in a loop, so a script Redis accepts may be thousands of nodes deep.
        Each handler yields the children it wants walked, with their scope, and goes on when
        they are done.
        """
        # Leaves (identifiers, literals) are handled where they are met, without a stack entry
        # of their own: most nodes are leaves, and this loop is most of a cold build.
        stack: list[_Steps] = [iter(((node, scope),))]
        handlers, skip, identifier = _HANDLERS, _SKIP, self.v_identifier
        while stack:
            for child, child_scope in stack[-1]:
                kind = child.type
                if kind in skip:
                    continue
                if kind == "identifier":
                    identifier(child, child_scope)
                    continue
                handler = handlers.get(kind)
                if handler is None:
                    stack.append(zip(child.named_children, repeat(child_scope)))
                else:
                    stack.append(handler(self, child, child_scope))
                break  # the child's walk first; this iterator goes on after it
            else:
                stack.pop()

    def declare(self, node: Any, scope: _Scope, kind: str) -> _Binding:
        name = node.text.decode("utf-8")
        hidden = scope.lookup(name)
        if hidden is not None and name != "_" and name != "self":
            point = node.start_point
            self.facts.findings.append(
                Finding(
                    point.row,
                    point.column,
                    "shadowed-local",
                    f"local '{name}' shadows the one declared",
                    related_row=hidden.row,
                    top_level=scope.depth == 0,
                )
            )
        binding = _Binding(name, node, kind, scope.depth)
        scope.names[name] = binding
        self.resolved[node.id] = binding
        self.bindings.append(binding)
        return binding

    def finding(self, node: Any, code: str, message: str) -> None:
        point = node.start_point
        self.facts.findings.append(Finding(point.row, point.column, code, message))

    def v_identifier(self, node: Any, scope: _Scope) -> None:
        name = node.text.decode("utf-8")
        # scope.lookup(name), inline: this is the walk's most frequent call.
        binding = None
        outer: _Scope | None = scope
        while outer is not None:
            binding = outer.names.get(name)
            if binding is not None:
                break
            outer = outer.parent
        node_id = node.id
        self.resolved[node_id] = binding
        if self.dead:
            self.dead_reads.add(node_id)
        if binding is not None:
            binding.reads.append(node)
            return
        self.global_reads.append(node)
        if name not in GLOBALS:
            reason = MISSING_GLOBALS.get(name, "Redis's Lua does not provide it")
            self.finding(node, "undefined-global", f"read of undefined global '{name}': {reason}")

    def v_block(self, node: Any, scope: _Scope) -> _Steps:
        inner = _Scope(scope)
        for child in node.named_children:
            yield child, inner

    def v_variable_declaration(self, node: Any, scope: _Scope) -> _Steps:
        target = node.named_children[-1]
        if target.type == "assignment_statement":
            names = _child_of_type(target, "variable_list")
            values = _expressions(_child_of_type(target, "expression_list"))
            for value in values:
                yield value, scope
        else:
            names, values = target, []
        for index, name in enumerate(_names(names)):
            binding = self.declare(name, scope, "local")
            if index < len(values):
                binding.values.append(values[index])
                if values[index].type == "function_definition":
                    binding.func = values[index]

    def v_function_declaration(self, node: Any, scope: _Scope) -> _Steps:
        name = node.child_by_field_name("name")
        if _is_local(node):
            binding = self.declare(name, scope, "function")
            binding.func = node
            yield from self.function_body(node, scope, method=False)
            return
        if name.type == "identifier":
            existing = scope.lookup(name.text.decode("utf-8"))
            self.resolved[name.id] = existing
            if existing is None:
                self.finding(
                    name,
                    "global-function",
                    f"global function '{name.text.decode('utf-8')}': Redis refuses to create"
                    " globals; declare it 'local function'",
                )
        else:
            yield name, scope
        yield from self.function_body(node, scope, method=name.type == "method_index_expression")

    def v_function_definition(self, node: Any, scope: _Scope) -> _Steps:
        yield from self.function_body(node, scope, method=False)

    def function_body(self, node: Any, scope: _Scope, method: bool) -> _Steps:
        inner = _Scope(scope)
        params: list[_Binding] = []
        if method:
            params.append(_Binding("self", node, "param", inner.depth))
            inner.names["self"] = params[0]
        parameters = node.child_by_field_name("parameters")
        if parameters is not None:
            for param in parameters.named_children:
                if param.type == "identifier":
                    params.append(self.declare(param, inner, "param"))
        self.params[node.id] = params
        body = node.child_by_field_name("body")
        if body is not None:
            yield body, inner

    def v_for_statement(self, node: Any, scope: _Scope) -> _Steps:
        clause = node.child_by_field_name("clause")
        inner = _Scope(scope)
        if clause.type == "for_numeric_clause":
            for part in ("start", "end", "step"):
                expression = clause.child_by_field_name(part)
                if expression is not None:
                    yield expression, scope
            variable = self.declare(clause.child_by_field_name("name"), inner, "loop")
            variable.loop_range = (
                clause.child_by_field_name("start"),
                clause.child_by_field_name("end"),
                clause.child_by_field_name("step"),
            )
        else:
            expressions = _expressions(_child_of_type(clause, "expression_list"))
            for expression in expressions:
                yield expression, scope
            for name in _names(_child_of_type(clause, "variable_list")):
                # What the loop walks is where its variables come from (for key provenance).
                self.declare(name, inner, "loop").values.extend(expressions[:1])
        body = node.child_by_field_name("body")
        if body is not None:
            yield body, inner

    def v_repeat_statement(self, node: Any, scope: _Scope) -> _Steps:
        # The condition is inside the body's scope: `repeat local done = f() until done`.
        inner = _Scope(scope)
        body = node.child_by_field_name("body")
        if body is not None:
            for child in body.named_children:
                yield child, inner
        yield node.child_by_field_name("condition"), inner

    def v_assignment_statement(self, node: Any, scope: _Scope) -> _Steps:
        values = _expressions(_child_of_type(node, "expression_list"))
        for value in values:
            yield value, scope
        for index, target in enumerate(_expressions(_child_of_type(node, "variable_list"))):
            if target.type != "identifier":
                yield target, scope
                continue
            name = target.text.decode("utf-8")
            binding = scope.lookup(name)
            self.resolved[target.id] = binding
            if binding is None:
                self.finding(
                    target,
                    "global-assign",
                    f"assignment to global '{name}': Redis refuses to create or change globals;"
                    " declare it 'local'",
                )
            else:
                binding.reassigned = True
                if index < len(values):
                    binding.values.append(values[index])

    def v_if_statement(self, node: Any, scope: _Scope) -> _Steps:
        # A branch behind a constant condition that is never true (`if false then`), or after
        # one that always is (`if true then ... else`), never runs: what it reads is no read.
        taken = False  # a clause before this one always runs
        for child in node.named_children:
            condition = child.child_by_field_name("condition")
            if child.type == "elseif_statement":
                yield condition, scope
                taken, dead = self.branch(condition, taken)
                body = child.child_by_field_name("consequence")
            elif child.type == "else_statement":
                dead, body = taken, child.child_by_field_name("body")
            elif child.type == "block":
                taken, dead = self.branch(node.child_by_field_name("condition"), taken)
                body = child
            else:
                yield child, scope
                continue
            if body is None:
                continue
            self.dead += dead
            yield body, scope
            self.dead -= dead

    @staticmethod
    def branch(condition: Any, taken: bool) -> tuple[bool, bool]:
        """For a clause after clauses of which one always runs (`taken`), with this condition:
        whether a clause up to this one always runs, and whether this clause's body never does."""
        while condition.type == "parenthesized_expression":
            condition = condition.named_children[0]
        never = taken or condition.type in ("false", "nil")
        return taken or condition.type == "true", never

    def v_bracket_index_expression(self, node: Any, scope: _Scope) -> _Steps:
        table, key = node.child_by_field_name("table"), node.child_by_field_name("field")
        self.indexed[table.id] = node
        yield table, scope
        yield key, scope
        content = _child_of_type(key, "string_content") if key.type == "string" else None
        if content is not None:
            self.global_field(node, table, content.text)

    def global_field(self, node: Any, table: Any, name: bytes) -> None:
        """Note `node` when it reads KEYS or ARGV as a field of `_G`."""
        if (
            name in (b"KEYS", b"ARGV")
            and table.type == "identifier"
            and table.text == b"_G"
            and self.resolved.get(table.id, 0) is None
            and not self.dead
        ):
            self.global_fields[node.id] = node

    def v_dot_index_expression(self, node: Any, scope: _Scope) -> _Steps:
        table = node.child_by_field_name("table")
        yield table, scope
        self.global_field(node, table, node.child_by_field_name("field").text)
        if table.type == "identifier" and self.resolved.get(table.id, 0) is None:
            library = table.text.decode("utf-8")
            fields = LIBRARY_FIELDS.get(library)
            name = node.child_by_field_name("field").text.decode("utf-8")
            if fields is not None and name not in fields:
                self.finding(
                    node.child_by_field_name("field"),
                    "undefined-field",
                    f"'{library}.{name}' does not exist in Redis's Lua",
                )

    def v_method_index_expression(self, node: Any, scope: _Scope) -> _Steps:
        yield node.child_by_field_name("table"), scope

    def v_field(self, node: Any, scope: _Scope) -> _Steps:
        # `{name = v}` names a field; only `{[expr] = v}` evaluates its key.
        name = node.child_by_field_name("name")
        if name is not None and node.children[0].type == "[":
            yield name, scope
        value = node.child_by_field_name("value")
        if value is not None:
            yield value, scope

    def v_function_call(self, node: Any, scope: _Scope) -> _Steps:
        if not self.dead:
            self.calls.append(node)
        for child in node.named_children:
            yield child, scope

    def v_return_statement(self, node: Any, scope: _Scope) -> _Steps:
        expressions = _expressions(_child_of_type(node, "expression_list"))
        # Redis replies with the first value a script returns: only that one can be a code.
        code = _negative_literal(expressions[0]) if expressions else None
        if code is not None:
            point = expressions[0].start_point
            self.facts.returned_codes.append((code, point.row, point.column))
        for expression in expressions:
            yield expression, scope

    def v_ignore(self, node: Any, scope: _Scope) -> _Steps:
        """Labels and gotos (refused by the syntax gate anyway) read no variables."""
        return iter(())

    # -- after the walk ---------------------------------------------------------------------

    def report_locals(self) -> None:
        for binding in self.bindings:
            if binding.depth == 0:
                self.facts.top_decls.append(
                    TopDecl(
                        binding.name,
                        binding.row,
                        binding.col,
                        sorted({n.start_point.row for n in binding.reads}),
                    )
                )
            if binding.reads or binding.kind == "param" or binding.name.startswith("_"):
                continue
            self.facts.findings.append(
                Finding(
                    binding.row,
                    binding.col,
                    "unused-local",
                    f"{'function' if binding.kind == 'function' else 'local'} '{binding.name}'"
                    " is never read",
                    top_level=binding.depth == 0,
                )
            )

    def table_use(self, table: str) -> TableUse:
        """Follow KEYS (or ARGV) through locals and local-function parameters to its uses."""
        aliases: set[int] = set()

        def is_table(node: Any) -> bool:
            while node.type == "parenthesized_expression":
                node = node.named_children[0]
            if node.id in self.global_fields:
                return bool(_global_field_name(node) == table.encode())
            if node.type != "identifier" or node.id not in self.resolved:
                return False
            binding = self.resolved[node.id]
            if binding is None:
                return bool(node.text == table.encode())
            return id(binding) in aliases

        # A local is an alias when every value it is ever given is the table or an alias; one
        # other value (`k = {}`) and its reads are its own. Growing only, this settles.
        changed = True
        while changed:
            changed = False
            for binding in self.bindings:
                if id(binding) in aliases or not binding.values:
                    continue
                if all(is_table(value) for value in binding.values):
                    aliases.add(id(binding))
                    changed = True

        use = TableUse()
        readers = [n for b in self.bindings if id(b) in aliases for n in b.reads]
        if table in GLOBALS:
            readers += [n for n in self.global_reads if n.text == table.encode()]
        readers += [
            n for n in self.global_fields.values() if _global_field_name(n) == table.encode()
        ]
        readers = [n for n in readers if n.id not in self.dead_reads]
        for node in sorted(readers, key=lambda n: (n.start_point.row, n.start_point.column)):
            self.classify(node, use, aliases)
        return use

    def classify(self, node: Any, use: TableUse, aliases: set[int]) -> None:
        point = node.start_point
        indexed = self.indexed.get(node.id)
        if indexed is not None:
            indexes = self.integers(indexed.child_by_field_name("field"))
            if indexes is None:
                use.dynamic.append((point.row, point.column))
            else:
                use.literal += [(index, point.row, point.column) for index in indexes]
            return
        parent = node.parent
        if parent.type == "unary_expression" and parent.children[0].type == "#":
            return
        # Handed to an alias (`local k = KEYS`, `f(KEYS)` for a local f): followed through it.
        receiver: _Binding | None = None
        escapes = False
        if parent.type == "expression_list" and parent.parent.type == "assignment_statement":
            position = _expressions(parent).index(node)
            targets = _expressions(_child_of_type(parent.parent, "variable_list"))
            if position < len(targets):
                receiver = self.resolved.get(targets[position].id)
                # Into a table's field or a global: read back where the check cannot see.
                escapes = targets[position].type != "identifier" or receiver is None
        elif parent.type == "arguments":
            call = parent.parent
            position = _call_arguments(call).index(node)
            read = self.library_read(call, position, point)
            if read is not None:
                use.literal += read[0]
                use.dynamic += read[1]
                return
            params = self.local_function_params(call)
            if params is not None:
                receiver = params[position] if position < len(params) else None
                escapes = receiver is None  # into the function's `...`
            else:
                # A function of Redis's Lua reads it whole, unless it stores it in a table
                # (`table.insert(t, KEYS)`); any other function the check cannot follow.
                callee = call.child_by_field_name("name")
                escapes = not self.is_library(callee) or callee.text in _STORING

        elif parent.type == "field":
            escapes = True  # `{k = KEYS}`: stored in a table
        elif parent.type == "expression_list" and parent.parent.type == "return_statement":
            # A script's reply is read whole; a function's result goes where it is called.
            escapes = _in_function(parent)
        if receiver is not None and id(receiver) in aliases:
            return
        (use.escaped if escapes else use.whole).append((point.row, point.column))

    def is_library(self, callee: Any) -> bool:
        """Whether `callee` names a global function or a field of a global table (`unpack`,
        `cjson.encode`, `redis.call`): Redis's Lua, which reads a table it is given whole."""
        while callee.type == "dot_index_expression":
            callee = callee.child_by_field_name("table")
        return callee.type == "identifier" and self.resolved.get(callee.id, 0) is None

    def library_read(
        self, call: Any, position: int, point: Any
    ) -> tuple[list[tuple[int, int, int]], list[Position]] | None:
        """The reads of a table passed as argument `position` of `call`, when a library function
        reads known entries of it: `rawget(t, i)` reads `t[i]`; `unpack(t)` as the values of
        `local a, b = ...` reads `t[1]` and `t[2]`, and inside `select(n, ...)` reads `t[n]`.
        (literal reads, dynamic reads), or None when the call reads it otherwise."""
        callee = call.child_by_field_name("name")
        if callee.type != "identifier" or self.resolved.get(callee.id, 0) is not None:
            return None
        arguments = _call_arguments(call)
        at = (point.row, point.column)
        if callee.text == b"rawget" and position == 0 and len(arguments) == 2:
            indexes = self.integers(arguments[1])
            if indexes is None:
                return [], [at]
            return [(index, *at) for index in indexes], []
        if callee.text != b"unpack" or position != 0 or len(arguments) != 1:
            return None
        outer = call.parent
        if outer.type == "arguments" and _expressions(outer)[-1] == call:
            selector = outer.parent
            name = selector.child_by_field_name("name")
            first = _expressions(outer)[0]
            if name.type == "identifier" and name.text == b"select" and first != call:
                start = self.integers(first)
                if start is not None and len(start) == 1 and start[0] >= 1:
                    return [(start[0], *at)], []
            return None
        if (
            outer.type == "expression_list"
            and outer.parent.type == "assignment_statement"
            and outer.parent.parent.type == "variable_declaration"
            and _expressions(outer)[-1] == call
        ):
            names = _names(_child_of_type(outer.parent, "variable_list"))
            count = len(names) - (len(_expressions(outer)) - 1)
            return [(index, *at) for index in range(1, count + 1)], []
        return None

    def integers(self, root: Any) -> tuple[int, ...] | None:
        """Every integer `root` can be, when that is known before the script runs; else None.

        Known are integer literals; `+`, `-` and `*` of known values; a local given one known
        value where it is declared and never assigned again; and the variable of a numeric
        `for` whose start, end and step are known (each value it takes). Evaluated with an
        explicit stack, as the walk is: `KEYS[1 + 1 + ...]` may be any length.
        """
        done: dict[int, tuple[int, ...] | None] = {}
        stack: list[tuple[Any, bool]] = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if node.id in done:
                continue
            operands = self.operands(node)
            if not ready and operands:
                stack.append((node, True))
                stack += [(operand, False) for operand in operands]
                continue
            done[node.id] = self.fold(node, [done[operand.id] for operand in operands])
        return done[root.id]

    def operands(self, node: Any) -> list[Any]:
        """The expressions whose values `fold` needs to know `node`'s."""
        kind = node.type
        if kind == "parenthesized_expression":
            return [node.named_children[0]]
        if kind == "unary_expression" and node.children[0].type == "-":
            return [node.child_by_field_name("operand")]
        if kind == "binary_expression" and node.children[1].type in _FOLDED:
            return [node.child_by_field_name("left"), node.child_by_field_name("right")]
        binding = self.resolved.get(node.id) if kind == "identifier" else None
        if binding is None or binding.reassigned:
            return []
        if binding.kind == "local" and len(binding.values) == 1:
            return [binding.values[0]]
        if binding.loop_range is not None:
            return [part for part in binding.loop_range if part is not None]
        return []

    def fold(self, node: Any, known: list[tuple[int, ...] | None]) -> tuple[int, ...] | None:
        """`node`'s possible values from its operands' (`known`, in `operands` order)."""
        if node.type == "number":
            value = _integer_literal(node)
            return None if value is None else (value,)
        if not known or None in known:
            return None
        values = [k for k in known if k is not None]
        if node.type in ("parenthesized_expression", "identifier") and len(values) == 1:
            return values[0]
        if node.type == "unary_expression":
            return tuple(-v for v in values[0])
        if node.type == "binary_expression":
            operator = _FOLDED[node.children[1].type]
            folded = {operator(a, b) for a in values[0] for b in values[1]}
            return tuple(sorted(folded)) if len(folded) <= _MAX_FOLDED else None
        # A numeric for's variable: one known start, end and step.
        if any(len(v) != 1 for v in values):
            return None
        start, end, step = values[0][0], values[1][0], values[2][0] if len(values) == 3 else 1
        if step == 0 or len(range(start, end + (1 if step > 0 else -1), step)) > _MAX_FOLDED:
            return None
        return tuple(range(start, end + (1 if step > 0 else -1), step))

    def key_provenance(self) -> list[tuple[int, int, str]]:
        """Where the key arguments of every redis.call / redis.pcall come from.

        A local is KEYS-derived when any value it is given reads KEYS or a KEYS-derived local
        (so `prefix .. id`, with `prefix = queuePrefix(KEYS[1])`, is), and ARGV-derived when it
        is not that but reads ARGV. A key argument that reads nothing KEYS-derived but reads
        ARGV, or is a bare literal, could name a key on another Cluster slot.
        """
        origin: dict[int, str] = {}  # binding id -> "keys" or "argv"
        # Per expression, walked once: what it reads directly (globals, literals) and the
        # bindings whose origin it takes on. The fixpoint below then only looks these up.
        walked: dict[int, tuple[set[str], set[int]]] = {}

        def refs(node: Any) -> tuple[set[str], set[int]]:
            known = walked.get(node.id)
            if known is not None:
                return known
            direct: set[str] = set()
            bound: set[int] = set()
            resolved = self.resolved
            stack = [node]
            while stack:
                current = stack.pop()
                kind = current.type
                # Identifiers and literals have no parts that could read anything.
                if kind == "identifier":
                    node_id = current.id
                    if node_id in resolved:
                        binding = resolved[node_id]
                        if binding is None:
                            direct.add(_GLOBAL_ORIGINS.get(current.text, "unknown"))
                        else:
                            bound.add(id(binding))
                elif kind == "string" or kind == "number":
                    direct.add("literal")
                elif kind == "function_call" and self.is_string_format(current):
                    # string.format('emq:{%s}', x) builds its key as 'emq:{' .. x .. '}' does:
                    # from its format's literal parts and its arguments, not from `string`.
                    stack.extend(_call_arguments(current))
                else:
                    stack.extend(current.named_children)
            walked[node.id] = (direct, bound)
            return direct, bound

        def reads(node: Any) -> set[str]:
            direct, bound = refs(node)
            return direct | {origin.get(b, "unknown") for b in bound}

        # A binding takes on "keys" when a value of it reads KEYS, or a binding that has taken
        # it on; then "argv" likewise, among the bindings left. Each is one walk from the
        # bindings that read the source directly, along who reads whom.
        readers: dict[int, list[int]] = {}  # binding id -> the bindings a value of which reads it
        direct: dict[int, set[str]] = {}  # binding id -> what its values read directly
        for binding in self.bindings:
            seen = direct.setdefault(id(binding), set())
            for value in binding.values:
                value_direct, value_bound = refs(value)
                seen |= value_direct
                for read in value_bound:
                    readers.setdefault(read, []).append(id(binding))
        for source in ("keys", "argv"):
            pending = [b for b, found in direct.items() if source in found and b not in origin]
            while pending:
                current = pending.pop()
                if current in origin:
                    continue
                origin[current] = source
                pending += [r for r in readers.get(current, ()) if r not in origin]

        result = []
        for call in self.calls:
            for argument in _key_positions(call, self.is_redis_call(call)):
                found = reads(argument)
                for kind in ("keys", "unknown", "argv", "literal"):
                    if kind in found:
                        break
                else:
                    kind = "unknown"
                point = argument.start_point
                result.append((point.row, point.column, kind))
        return result

    def is_string_format(self, call: Any) -> bool:
        """Whether `call` calls `string.format` of the global `string`."""
        callee = call.child_by_field_name("name")
        if callee.type != "dot_index_expression":
            return False
        table = callee.child_by_field_name("table")
        return bool(
            table.type == "identifier"
            and table.text == b"string"
            and self.resolved.get(table.id, 0) is None
            and callee.child_by_field_name("field").text == b"format"
        )

    def is_redis_call(self, call: Any) -> bool:
        """A call of redis.call / redis.pcall, directly or through a local alias of one
        (`local rcall = redis.call`)."""
        callee = call.child_by_field_name("name")
        if callee is None:
            return False
        if callee.type == "identifier":
            binding = self.resolved.get(callee.id)
            if binding is None or len(binding.values) != 1:
                return False
            callee = binding.values[0]
        if callee.type != "dot_index_expression":
            return False
        table, method = callee.child_by_field_name("table"), callee.child_by_field_name("field")
        return bool(table.text == b"redis" and method.text in (b"call", b"pcall"))

    def local_function_params(self, call: Any) -> list[_Binding] | None:
        callee = call.child_by_field_name("name")
        if callee is None or callee.type != "identifier":
            return None
        binding = self.resolved.get(callee.id)
        if binding is None or binding.func is None:
            return None
        return self.params.get(binding.func.id)


_HANDLERS: dict[str, Callable[[_Walker, Any, _Scope], _Steps]] = {
    name[2:]: method
    for name, method in vars(_Walker).items()
    if name.startswith("v_") and name not in ("v_ignore", "v_identifier")
}
_HANDLERS["goto_statement"] = _Walker.v_ignore
_HANDLERS["label_statement"] = _Walker.v_ignore


# The operators whose integer results the KEYS and ARGV checks work out (Lua's numbers are
# doubles, exact for these on any index that matters), and the most values one index may take
# before it counts as unknown (the most KEYS a script may declare).
_FOLDED: dict[str, Callable[[int, int], int]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
}
_MAX_FOLDED = 1024

# Where a key argument that reads a global comes from, by the global's name.
_GLOBAL_ORIGINS = {b"KEYS": "keys", b"ARGV": "argv"}

# Functions of Redis's Lua that store a table they are given in another table.
_STORING = frozenset({b"table.insert", b"rawset"})

# Where a command's keys are among its arguments (after the command name): the first one, the
# first two, or all of them. Commands not listed are not checked.
_FIRST_KEY = frozenset(
    "APPEND DECR DECRBY EXPIRE EXPIREAT GET GETDEL GETEX GETSET HDEL HEXISTS HGET HGETALL HINCRBY"
    " HINCRBYFLOAT HKEYS HLEN HMGET HMSET HSET HSETNX HVALS INCR INCRBY INCRBYFLOAT LINDEX LINSERT"
    " LLEN LPOP LPOS LPUSH LPUSHX LRANGE LREM LSET LTRIM PERSIST PEXPIRE PEXPIREAT PTTL RPOP RPUSH"
    " RPUSHX SADD SCARD SET SETEX SETNX SISMEMBER SMEMBERS SMISMEMBER SPOP SRANDMEMBER SREM STRLEN"
    " TTL TYPE XACK XADD XDEL XLEN XRANGE XREVRANGE XTRIM ZADD ZCARD ZCOUNT ZINCRBY ZMSCORE ZPOPMAX"
    " ZPOPMIN ZRANGE ZRANGEBYSCORE ZRANK ZREM ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREVRANGE"
    " ZREVRANGEBYSCORE ZREVRANK ZSCORE".split()
)
_FIRST_TWO_KEYS = frozenset("LMOVE RENAME RENAMENX RPOPLPUSH SMOVE COPY".split())
_ALL_KEYS = frozenset("DEL EXISTS MGET TOUCH UNLINK WATCH SINTER SUNION SDIFF".split())


def _key_positions(call: Any, is_redis_call: bool) -> list[Any]:
    """The argument nodes of a redis.call / redis.pcall with a literal command that are keys."""
    if not is_redis_call:
        return []
    arguments = _call_arguments(call)
    if not arguments or arguments[0].type != "string":
        return []
    content = _child_of_type(arguments[0], "string_content")
    command = content.text.decode("utf-8").upper() if content is not None else ""
    rest = arguments[1:]
    if command in _FIRST_KEY:
        return rest[:1]
    if command in _FIRST_TWO_KEYS:
        return rest[:2]
    if command in _ALL_KEYS:
        return [a for a in rest if a.type != "function_call"]  # unpack(...) is judged by KEYS
    return []


def _global_field_name(node: Any) -> bytes:
    """`KEYS` for `_G.KEYS` or `_G["KEYS"]`."""
    key = node.child_by_field_name("field")
    content = _child_of_type(key, "string_content")
    return bytes((content if content is not None else key).text)


def _in_function(node: Any) -> bool:
    """Whether `node` is inside a function's body, not at the chunk's top level."""
    while node is not None:
        if node.type in ("function_definition", "function_declaration"):
            return True
        node = node.parent
    return False


def _is_local(node: Any) -> bool:
    return bool(node.children and node.children[0].type == "local")


def _child_of_type(node: Any, kind: str) -> Any:
    for child in node.named_children:
        if child.type == kind:
            return child
    return None


def _expressions(node: Any) -> list[Any]:
    if node is None:
        return []
    return [c for c in node.named_children if c.type != "comment"]


def _names(variable_list: Any) -> list[Any]:
    return [c for c in variable_list.named_children if c.type == "identifier"]


def _call_arguments(call: Any) -> list[Any]:
    arguments = call.child_by_field_name("arguments")
    if arguments is None:
        return []
    return _expressions(arguments)


def _integer_literal(node: Any) -> int | None:
    """The value of an integer literal, signed or parenthesised (`1`, `-1`, `(2)`, `0x10`)."""
    while node is not None and node.type == "parenthesized_expression":
        node = node.named_children[0]
    if node is not None and node.type == "unary_expression" and node.children[0].type == "-":
        operand = _integer_literal(node.child_by_field_name("operand"))
        return None if operand is None else -operand
    if node is None or node.type != "number":
        return None
    text = node.text.decode("utf-8")
    try:
        number = float(int(text, 16)) if text.lower().startswith("0x") else float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None


def _negative_literal(node: Any) -> int | None:
    value = _integer_literal(node)
    return value if value is not None and value < 0 else None
