"""Project settings: the `[tool.echomq-scripts]` table of the project's `pyproject.toml`.

The settings file is found as ruff finds its own: walking up from a starting directory, the first
`pyproject.toml` that has a `[tool.echomq-scripts]` table; when none on the way has one, the
first `pyproject.toml` at all (for its `[project] version`). The walk starts at the working
directory, or at the source directory when `--src` names one: the settings belong to the tree
being built, so building another project's tree (BullMQ's, say) from here applies that
project's settings, or the defaults when it has none, never this project's.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .errors import ConfigError
from .rules import RuleError, Rules, checked_codes
from .snapshot import NotRegularFile, read_regular

_KNOWN_KEYS = {
    "require-header",
    "strict",
    "version",
    "python-package",
    "python-module",
    "src",
    "out",
    "ignore",
    "warn",
}
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
SETTINGS_FILE = "pyproject.toml"
DEFAULT_SRC = "lua_src"
DEFAULT_OUT = "build"


@dataclass(frozen=True)
class Config:
    """Settings for one build run, after the command line has overridden the project file."""

    # The source directory, as findings name it: as typed after --src, else relative to the
    # working directory when it lies inside it (absolute otherwise).
    src: Path
    require_header: bool = False
    strict: bool = False
    # The version written into the manifest and the bundle's name.
    version: str = "0.0.0"
    # Where the typed Python wrappers go (a package directory), and their import name.
    python_package: Path | None = None
    python_module: str = ""
    # The output directory, named as `src` is.
    out: Path = Path(DEFAULT_OUT)
    # Which findings are dropped or reported as warnings (rules.py).
    rules: Rules = field(default_factory=Rules)
    # The pyproject.toml the settings came from, if any.
    settings_file: Path | None = None


def find_settings(start: Path) -> tuple[Path, dict[str, object]] | None:
    """The settings file for a walk up from `start`, and its parsed contents; None when no
    directory on the way holds a `pyproject.toml`."""
    first: tuple[Path, dict[str, object]] | None = None
    for directory in (start, *start.parents):
        candidate = directory / SETTINGS_FILE
        # exists(), not is_file(): a named pipe or a directory there is refused (_read_toml),
        # not taken for no settings.
        if not candidate.exists():
            continue
        data = _read_toml(candidate)
        if "echomq-scripts" in _table(candidate, data, "tool"):
            return candidate, data
        if first is None:
            first = candidate, data
    return first


def project_dirs(cwd: Path | None = None) -> tuple[Path, Path]:
    """The source and output directories the settings found from `cwd` name (as findings name
    them), for commands that read a build rather than make one (`explain`); neither need
    exist."""
    here = (cwd or Path.cwd()).resolve()
    found = find_settings(here)
    if found is None:
        return Path(DEFAULT_SRC), Path(DEFAULT_OUT)
    pyproject, data = found
    table = _table(pyproject, _table(pyproject, data, "tool"), "echomq-scripts")
    src = _path_setting(pyproject, table, "src", DEFAULT_SRC)
    out = _path_setting(pyproject, table, "out", DEFAULT_OUT)
    return _shown(pyproject.parent / src, here), _shown(pyproject.parent / out, here)


def load_config(
    src: Path | None = None,
    strict: bool | None = None,
    *,
    out: Path | None = None,
    ignore: Iterable[str] = (),
    cwd: Path | None = None,
) -> Config:
    """Read the settings of the tree to build, and merge the command line's over them.

    Args:
        src: `--src` (the source directory) as typed, or None for the project's `src` setting,
            else `lua_src` beside the settings file (or in `cwd` without one).
        strict: `--strict` from the command line; None keeps the project's own setting.
        out: `--out` as typed, or None for the project's `out` setting, else `build` beside the
            settings file (or in `cwd` without one).
        ignore: `--ignore` codes from the command line (each may be a comma-separated list).
        cwd: the working directory (default: the process's).

    Returns:
        The merged settings. Without a settings file every setting has its default.
    """
    here = (cwd or Path.cwd()).resolve()
    try:
        cli_ignore = checked_codes(ignore)
    except RuleError as exc:
        raise ConfigError(f"--ignore: {exc}") from None
    if src is not None and not src.is_dir():
        raise ConfigError(f"{src}: source directory not found")
    # resolve() first: the parents of a relative "." are none at all.
    found = find_settings(src.resolve() if src is not None else here)
    pyproject = found[0] if found is not None else here / SETTINGS_FILE
    base = pyproject.parent
    table: dict[str, object] = {}
    project_version = "0.0.0"
    if found is not None:
        data = found[1]
        table = _table(pyproject, _table(pyproject, data, "tool"), "echomq-scripts")
        project_version = str(_table(pyproject, data, "project").get("version", project_version))
    unknown = sorted(set(table) - _KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{pyproject}: unknown setting(s) in [tool.echomq-scripts]: {', '.join(unknown)}"
        )
    if src is None:
        src = _shown(base / _path_setting(pyproject, table, "src", DEFAULT_SRC), here)
        if not src.is_dir():
            where = f" (the 'src' setting of {pyproject})" if "src" in table else ""
            raise ConfigError(f"{src}: source directory not found{where}")
    if out is None:
        out = _shown(base / _path_setting(pyproject, table, "out", DEFAULT_OUT), here)
    require_header = _bool_setting(pyproject, table, "require-header", False)
    project_strict = _bool_setting(pyproject, table, "strict", False)
    project_ignore = _codes_setting(pyproject, table, "ignore")
    project_warn = _codes_setting(pyproject, table, "warn")
    both = sorted(project_ignore & project_warn)
    if both:
        raise ConfigError(
            f"{pyproject}: [tool.echomq-scripts] lists '{both[0]}' in both ignore and warn"
        )
    version = table.get("version", project_version)
    # The version names the bundle file, so it must not be able to name a path.
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise ConfigError(
            f"{pyproject}: the version must be a string of letters, digits and . _ + -"
            f" (got {version!r})"
        )
    package = table.get("python-package")
    if package is None and "python-module" in table:
        raise ConfigError(f"{pyproject}: python-module needs python-package beside it")
    package_dir: Path | None = None
    if package is not None:
        if not isinstance(package, str) or not re.fullmatch(
            r"[A-Za-z_]\w*(/[A-Za-z_]\w*)*", package
        ):
            raise ConfigError(
                f"{pyproject}: python-package must be a package path such as"
                f" 'mypkg/generated', relative to the project (got {package!r})"
            )
        package_dir = pyproject.parent / package
    # The import name: given, or the path itself ("pkg/generated" -> "pkg.generated"); a
    # src/ layout ("src/pkg/generated") has to say it ("pkg.generated").
    module = table.get("python-module", package.replace("/", ".") if package else "")
    if package is not None and (
        not isinstance(module, str) or not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", module)
    ):
        raise ConfigError(f"{pyproject}: python-module must be a dotted module name")
    return Config(
        src=src,
        require_header=require_header,
        strict=project_strict if strict is None else strict,
        version=version,
        python_package=package_dir,
        python_module=module if isinstance(module, str) else "",
        out=out,
        rules=Rules(ignore=project_ignore | cli_ignore, warn=project_warn),
        settings_file=found[0] if found is not None else None,
    )


def _read_toml(path: Path) -> dict[str, object]:
    # read_regular never opens a named pipe, which would wait forever.
    try:
        return tomllib.loads(read_regular(str(path), str(path)).decode("utf-8"))
    except NotRegularFile as exc:
        raise ConfigError(f"{path}: cannot read: it is {exc.kind}, not a regular file") from None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise ConfigError(f"{path}: cannot read: its values nest too deeply") from None


def _shown(path: Path, cwd: Path) -> Path:
    """`path` as findings name it: relative to `cwd` inside it, as ruff does, else absolute."""
    return Path(os.path.relpath(path, cwd)) if path.is_relative_to(cwd) else path


def _path_setting(path: Path, table: dict[str, object], key: str, default: str) -> str:
    value = table.get(key, default)
    if not isinstance(value, str) or not value or "\0" in value:
        raise ConfigError(
            f"{path}: [tool.echomq-scripts] {key} must be a directory path, relative to"
            f" {path.name}'s directory (got {value!r})"
        )
    return value


def _codes_setting(path: Path, table: dict[str, object], key: str) -> frozenset[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: [tool.echomq-scripts] {key} must be a list of finding codes")
    try:
        return checked_codes(value)
    except RuleError as exc:
        raise ConfigError(f"{path}: [tool.echomq-scripts] {key}: {exc}") from None


def _table(path: Path, data: dict[str, object], key: str) -> dict[str, object]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: '{key}' must be a table")
    return value


def _bool_setting(path: Path, table: dict[str, object], key: str, default: bool) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: [tool.echomq-scripts] {key} must be true or false")
    return value
