"""The build, stage by stage: sources -> includes -> analysis -> checks -> output files.

`check()` runs every stage but the last and writes nothing; `build()` also writes the output
directory, and only when the checks pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .analyse import Facts, analyse, load_parsers
from .cache import AnalysisCache
from .checks import CheckOptions, check_script
from .config import Config
from .diagnostics import Diagnostic, Severity, has_failures
from .errors import ConfigError, OutputError
from .header import parse_header
from .manifest import ScriptBuild, manifest, to_json_bytes
from .naming import script_clashes
from .output import (
    BUILD_DIRECTORY,
    Target,
    current_files,
    has_output_modes,
    output_files,
    write_outputs,
)
from .resolve import resolve
from .rules import apply_rules
from .snapshot import Snapshot
from .sources import SourceFile, SourceTree
from .syntax import check_syntax
from .workers import map_forked, usable_cpus

if TYPE_CHECKING:
    from .release import ReleaseDiff


@dataclass
class BuildResult:
    """What a run found and made; `diagnostics` carry paths as the user named the sources."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    scripts: list[ScriptBuild] = field(default_factory=list)
    analysed: int = 0  # scripts whose code was parsed in this run
    from_cache: int = 0  # scripts whose analysis came from the cache
    files: dict[str, bytes] = field(default_factory=dict)
    generated: dict[str, bytes] = field(default_factory=dict)  # the Python package, if any
    wrote: bool = False  # whether the output directory (or the generated package) changed

    def failed(self, strict: bool) -> bool:
        return has_failures(self.diagnostics, strict)


def check(config: Config, cache: AnalysisCache, snapshot: Snapshot | None = None) -> BuildResult:
    """Run every check on the tree at `config.src` (or on its `snapshot`); write nothing."""
    tree = SourceTree(config.src, snapshot)
    result = BuildResult()
    found: list[Diagnostic] = []
    options = CheckOptions(config.require_header, src_display=config.src.as_posix())
    # The lines of every file read, where the ignore comments are (rules.py).
    lines: dict[str, tuple[str, ...]] = {}
    verdicts: dict[str, Diagnostic | None] = {}  # include path -> its own syntax finding
    # First every script is resolved and looked up in the cache, then the misses are analysed
    # together (on several cores when there are many, workers.py), then each is checked.
    found_scripts = []
    for entry in tree.find_scripts():
        resolved, problems = resolve(tree, entry)
        found += problems
        if resolved is not None:
            found_scripts.append((resolved, cache.get(resolved.text)))
    # Each text missing from the cache is analysed once, all together; its scripts take it below.
    fresh = _analyse_all([r.text for r, facts in found_scripts if facts is None], cache)
    for resolved, facts in found_scripts:
        lines.update((source.path, source.lines) for source in resolved.files)
        header, header_problems = parse_header(resolved.entry.path, resolved.files[0].lines)
        found += header_problems
        if facts is None and resolved.text not in fresh:
            # A text met again: as a run of one script after the other does, read back the
            # cache entry its first script just wrote.
            facts = cache.get(resolved.text)
        if facts is None:
            facts = fresh.pop(resolved.text, None)
            if facts is None:  # met again, and no cache entry to read back
                facts = analyse(resolved.text)
                cache.put(resolved.text, facts)
            result.analysed += 1
        else:
            result.from_cache += 1
        code_findings = check_script(
            resolved, header, facts, options, header_unreadable=bool(header_problems)
        )
        if facts.syntax is not None:
            # Lua names where the whole script stopped making sense, which for a broken include
            # is often the includer's next line: an include that does not compile alone is the
            # one to name. Only then is the script's own verdict kept.
            broken = [
                problem
                for source in resolved.files[1:]
                if (problem := include_syntax(source, verdicts)) is not None
            ]
            code_findings = broken or code_findings
        found += code_findings
        result.scripts.append(ScriptBuild(resolved, header, facts))
    found += _name_clashes(result.scripts)
    found += tree.diagnostics
    # After the cache, on every run: the rules change which findings count, never the facts.
    found = apply_rules(found, config.rules, lines)
    # An include shared by several scripts reports its findings once.
    result.diagnostics = [
        replace(d, path=(config.src / d.path).as_posix()) for d in sorted(set(found))
    ]
    return result


def _analyse_all(texts: list[str], cache: AnalysisCache) -> dict[str, Facts]:
    """The facts of each of `texts`, analysed on several cores when there are enough of them;
    each is put in the `cache` by the process that analysed it."""
    unique = list(dict.fromkeys(texts))
    if unique:  # a build served from the cache loads neither
        load_parsers()

    def analyse_and_keep(text: str) -> Facts:
        facts = analyse(text)
        cache.put(text, facts)
        return facts

    weights = [len(text) for text in unique]
    facts = map_forked(analyse_and_keep, unique, weights, usable_cpus())
    return dict(zip(unique, facts, strict=True))


def _name_clashes(scripts: list[ScriptBuild]) -> list[Diagnostic]:
    """The scripts whose generated Python names meet another script's (naming.script_clashes),
    checked whether or not the project generates a package, as header-names is: the names are
    the scripts' interface."""
    found = []
    headers = [(s.resolved.entry.name, s.resolved.entry.path, s.header) for s in scripts]
    for index, slot, code, message in script_clashes(headers):
        path = scripts[index].resolved.entry.path
        line, col = 1, 1
        if slot is not None:
            # At the name in its header line, as every header-names finding.
            text = scripts[index].resolved.files[0].lines[slot.line - 1]
            line, col = slot.line, max(text.find(" " + slot.name) + 2, 1)
        found.append(Diagnostic(path, line, col, Severity.ERROR, code, message))
    return found


def include_syntax(source: SourceFile, verdicts: dict[str, Diagnostic | None]) -> Diagnostic | None:
    """The `syntax` finding of an include compiled on its own as a chunk, at its own line, or
    None when it compiles; remembered in `verdicts` so each include is compiled once a run.

    An include is a fragment of the script it is pasted into, but at the top level, in one
    piece: a file of local functions and tables compiles as a chunk of its own just as it does
    in the script, and a file that does not compile alone is broken in every script.
    """
    if source.path not in verdicts:
        problem = check_syntax("".join(line + "\n" for line in source.lines))
        verdict = None
        if problem is not None:
            text = source.lines[problem.row].encode("utf-8") if source.lines else b""
            col = len(text[: problem.col].decode("utf-8", "ignore")) + 1  # bytes -> characters
            verdict = Diagnostic(
                source.path, problem.row + 1, col, Severity.ERROR, "syntax", problem.message
            )
        verdicts[source.path] = verdict
    return verdicts[source.path]


def build(
    config: Config,
    cache: AnalysisCache,
    out: Path,
    snapshot: Snapshot | None = None,
    previous: dict[str, Any] | None = None,
) -> BuildResult:
    """Check the tree (or its `snapshot`) and, when it passes, make `out` hold its build.

    With the `previous` release's manifest, the build also refuses (before writing) a version
    smaller than the changes since that release need.
    """
    src, target = _resolved(config.src, "--src"), _resolved(out, "--out")
    if src == target or src.is_relative_to(target) or target.is_relative_to(src):
        raise ConfigError(f"--out {out} overlaps the source directory {config.src}")
    package = config.python_package
    if package is not None:
        place = _resolved(package, "python-package")
        if place.is_relative_to(src) or place.is_relative_to(target):
            raise ConfigError(f"python-package {package} lies inside --src or --out")
    result = check(config, cache, snapshot)
    if result.failed(config.strict):
        return result
    if previous is not None:
        from .release import ReleaseError, check_version, diff

        changes = diff(previous, manifest(result.scripts, config.version))
        problem = check_version(str(previous.get("version", "0.0.0")), config.version, changes.bump)
        if problem is not None:
            raise ReleaseError(f"{problem} (since {previous.get('version')}: {_summary(changes)})")
    result.files = output_files(result.scripts, config.version)
    if package is not None:
        from .package import GENERATED_PACKAGE, is_current, package_digest

        present = current_files(package, GENERATED_PACKAGE)  # refuses a directory not ours
        inputs = package_digest(result.files["manifest.json"], config.python_module)
        if present is not None and is_current(present, inputs) and has_output_modes(package):
            # Generated from these very inputs and untouched since, modes included: rendering
            # it again would give these bytes. (`build --check` renders it all the same.)
            result.generated = present
        else:
            from .codegen import generated_files

            templates = None if cache.directory is None else Path(cache.directory)
            result.generated = generated_files(
                result.scripts, config.python_module, inputs, templates
            )
    targets: list[Target] = [(out, result.files, BUILD_DIRECTORY)]
    # A package kept as it was read just above needs no second read to know it is unchanged.
    if package is not None and result.generated is not present:
        targets.append((package, result.generated, GENERATED_PACKAGE))
    # Both directories are swapped in together, or neither is.
    result.wrote = any(write_outputs(targets))
    return result


def _resolved(path: Path, what: str) -> Path:
    """`path` with every link followed; a loop of links is an `OutputError`, not a traceback
    (Python 3.11's resolve() raises RuntimeError for it, 3.13's OSError)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError) as exc:
        raise OutputError(f"{what} {path}: cannot follow its symbolic links: {exc}") from None


def _summary(changes: ReleaseDiff) -> str:
    parts = [
        f"{label} {', '.join(names)}"
        for label, names in (
            ("removed", changes.removed),
            ("signature changed", changes.signature_changed),
            ("added", changes.added),
            ("body changed", changes.body_changed),
        )
        if names
    ]
    return "; ".join(parts) or "no changes"


def stale_generated(config: Config, result: BuildResult) -> list[str]:
    """The files of the generated package that differ from what the checked sources give."""
    if config.python_package is None:
        return []
    from .codegen import generated_files
    from .package import GENERATED_PACKAGE, package_digest

    manifest_bytes = to_json_bytes(manifest(result.scripts, config.version))
    inputs = package_digest(manifest_bytes, config.python_module)
    expected = generated_files(result.scripts, config.python_module, inputs)
    present = current_files(config.python_package, GENERATED_PACKAGE) or {}
    names = sorted(set(expected) | set(present))
    return [n for n in names if expected.get(n) != present.get(n)]
