"""Project settings: the `[tool.echomq-scripts]` table of the tree being built.

The settings belong to the tree, not to the machine running the build: they are read from the
`pyproject.toml` next to the source directory (its parent), so building another project's tree
with `--src` applies that project's rules, not ours.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError
from .snapshot import NotRegularFile, read_regular

_KNOWN_KEYS = {"require-header", "strict", "version", "python-package", "python-module"}
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


@dataclass(frozen=True)
class Config:
    """Settings for one build run, after the command line has overridden the project file."""

    src: Path
    require_header: bool = False
    strict: bool = False
    # The version written into the manifest and the bundle's name.
    version: str = "0.0.0"
    # Where the typed Python wrappers go (a package directory), and their import name.
    python_package: Path | None = None
    python_module: str = ""


def load_config(src: Path, strict: bool | None = None) -> Config:
    """Read the settings of the tree whose scripts live in `src`.

    Args:
        src: the source directory (`lua_src/`); its parent may hold a `pyproject.toml`.
        strict: `--strict` from the command line; None keeps the project's own setting.

    Returns:
        The merged settings. Without a `pyproject.toml` every setting has its default.
    """
    if not src.is_dir():
        raise ConfigError(f"{src}: source directory not found")
    # resolve() first: the parent of a relative "." would be "." itself.
    pyproject = src.resolve().parent / "pyproject.toml"
    table: dict[str, object] = {}
    project_version = "0.0.0"
    # exists(), not is_file(): a named pipe or a directory there is refused (read_regular never
    # opens one, which for a pipe would wait forever), not taken for no settings.
    if pyproject.exists():
        try:
            data = tomllib.loads(read_regular(str(pyproject), str(pyproject)).decode("utf-8"))
        except NotRegularFile as exc:
            raise ConfigError(
                f"{pyproject}: cannot read: it is {exc.kind}, not a regular file"
            ) from None
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{pyproject}: cannot read: {exc}") from None
        table = _table(pyproject, _table(pyproject, data, "tool"), "echomq-scripts")
        project_version = str(_table(pyproject, data, "project").get("version", project_version))
    unknown = sorted(set(table) - _KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{pyproject}: unknown setting(s) in [tool.echomq-scripts]: {', '.join(unknown)}"
        )
    require_header = _bool_setting(pyproject, table, "require-header", False)
    project_strict = _bool_setting(pyproject, table, "strict", False)
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
    )


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
