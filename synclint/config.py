"""Configuration files: finding them, reading them, and checking every key.

synclint reads ``synclint.toml`` (keys at the top level, or under ``[tool.synclint]``) or the
``[tool.synclint]`` table of ``pyproject.toml``. For each linted file the *closest* such file wins:
the search walks up from the file's directory, and in one directory ``synclint.toml`` beats
``pyproject.toml``. A ``pyproject.toml`` without ``[tool.synclint]`` is passed over. ``--config``
names one file for everything.

Every problem (bad TOML, unknown key, wrong type) raises :class:`ConfigError`, whose message names the
file and, for TOML errors, the line and column; the CLI turns it into exit status 2. Unknown keys are
errors, not warnings, because a misspelt ``ignore`` that silently does nothing is worse than a stop.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from synclint.settings import AnalysisSettings

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

PARAMETER_ORIGINS = ("caller-stream", "synchronized")

_LIST_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "exclude",
    "extend-exclude",
    "accelerator-wrappers",
    "synchronizing-functions",
)
VALID_KEYS = (
    "select",
    "ignore",
    "extend-select",
    "exclude",
    "extend-exclude",
    "per-file-ignores",
    "respect-gitignore",
    "cache-dir",
    "accelerator-wrappers",
    "synchronizing-functions",
    "parameter-origin",
)


class ConfigError(Exception):
    """A configuration problem, with a message fit to show the user as is."""


@dataclass(frozen=True)
class FileConfig:
    """The validated contents of one configuration file (or the defaults, when ``path`` is None).

    ``root`` is the directory that relative patterns (``exclude``, ``per-file-ignores``) and
    ``cache-dir`` are relative to: the configuration file's directory.
    """

    root: Path
    path: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    respect_gitignore: bool = True
    cache_dir: Path | None = None
    settings: AnalysisSettings = field(default_factory=AnalysisSettings)


def read_toml(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read configuration: {error.strerror or error}") from None
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not valid UTF-8 (byte offset {error.start})") from None
    except tomllib.TOMLDecodeError as error:
        # The message already carries "(at line L, column C)".
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _table_in(path: Path, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
    tool = document.get("tool")
    table = tool.get("synclint") if isinstance(tool, Mapping) else None
    if path.name == "pyproject.toml":
        return table
    if table is not None:
        return table
    return {k: v for k, v in document.items() if k != "tool"}


def _string_list(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: `{key}` must be a list of strings, got {value!r}")
    return tuple(value)


def parse_table(path: Path, table: Mapping[str, Any]) -> FileConfig:
    """Validate a ``[tool.synclint]`` table into a :class:`FileConfig`."""
    unknown = sorted(set(table) - set(VALID_KEYS))
    if unknown:
        raise ConfigError(
            f"{path}: unknown key{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(f'`{k}`' for k in unknown)} in synclint configuration; "
            f"valid keys: {', '.join(VALID_KEYS)}"
        )
    values = {key: _string_list(path, key, table[key]) for key in _LIST_KEYS if key in table}
    per_file: list[tuple[str, tuple[str, ...]]] = []
    raw_per_file = table.get("per-file-ignores", {})
    if not isinstance(raw_per_file, Mapping):
        raise ConfigError(f"{path}: `per-file-ignores` must be a table of pattern = [codes]")
    for pattern, codes in raw_per_file.items():
        per_file.append((pattern, _string_list(path, f"per-file-ignores.{pattern}", codes)))
    respect_gitignore = table.get("respect-gitignore", True)
    if not isinstance(respect_gitignore, bool):
        raise ConfigError(f"{path}: `respect-gitignore` must be true or false")
    cache_dir = table.get("cache-dir")
    if cache_dir is not None and not isinstance(cache_dir, str):
        raise ConfigError(f"{path}: `cache-dir` must be a string")
    origin = table.get("parameter-origin", AnalysisSettings.parameter_origin)
    if origin not in PARAMETER_ORIGINS:
        raise ConfigError(
            f"{path}: `parameter-origin` must be one of {', '.join(PARAMETER_ORIGINS)}, "
            f"got {origin!r}"
        )
    defaults = AnalysisSettings()
    settings = AnalysisSettings(
        accelerator_wrappers=values.get("accelerator-wrappers", defaults.accelerator_wrappers),
        synchronizing_functions=values.get(
            "synchronizing-functions", defaults.synchronizing_functions
        ),
        parameter_origin=origin,
    )
    root = path.parent
    return FileConfig(
        root=root,
        path=path,
        select=values.get("select"),
        extend_select=values.get("extend-select", ()),
        ignore=values.get("ignore", ()),
        exclude=values.get("exclude"),
        extend_exclude=values.get("extend-exclude", ()),
        per_file_ignores=tuple(per_file),
        respect_gitignore=respect_gitignore,
        cache_dir=(root / cache_dir) if cache_dir is not None else None,
        settings=settings,
    )


def load_config(path: Path) -> FileConfig:
    """Load an explicitly named configuration file (``--config``)."""
    path = path.resolve()
    if not path.is_file():
        raise ConfigError(f"{path}: configuration file not found")
    table = _table_in(path, read_toml(path))
    return parse_table(path, table or {})


class ConfigFinder:
    """Finds the closest configuration for a directory, reading each file once."""

    def __init__(self, fallback_root: Path) -> None:
        self._fallback = FileConfig(root=fallback_root)
        self._by_dir: dict[Path, FileConfig] = {}

    def for_directory(self, directory: Path) -> FileConfig:
        cached = self._by_dir.get(directory)  # as given: saves a resolve() per file on big trees
        if cached is not None:
            return cached
        given = directory
        directory = directory.resolve()
        visited: list[Path] = []
        found: FileConfig | None = None
        current: Path | None = directory
        while current is not None:
            if current in self._by_dir:
                found = self._by_dir[current]
                break
            visited.append(current)
            found = self._config_in(current)
            if found is not None:
                break
            current = current.parent if current.parent != current else None
        result = found or self._fallback
        for seen in visited:
            self._by_dir[seen] = result
        self._by_dir[given] = result
        return result

    def _config_in(self, directory: Path) -> FileConfig | None:
        for name in ("synclint.toml", "pyproject.toml"):
            candidate = directory / name
            if candidate.is_file():
                table = _table_in(candidate, read_toml(candidate))
                if table is not None:
                    return parse_table(candidate, table)
        return None
