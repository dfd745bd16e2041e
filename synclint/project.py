"""The project view of configuration: for each path, its configuration file, the rules enabled
there (configuration layered under the command line), its exclusions and its cache directory.

Configuration files are read once each; the result for a file is memoised per configuration and
per-file-ignore match, so a run over thousands of files resolves selection a handful of times.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pathspec

from synclint import catalogue
from synclint.cache import CACHE_DIR_NAME
from synclint.config import ConfigError, ConfigFinder, FileConfig, load_config
from synclint.discovery import DEFAULT_EXCLUDE, ExcludeRules
from synclint.pipeline import FileSettings
from synclint.selection import SelectionLayer, SelectorError, expand_all, resolve


@dataclass(frozen=True)
class Overrides:
    """Options from the command line that override configuration files."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    config: Path | None = None

    def layer(self) -> SelectionLayer:
        return SelectionLayer(self.select, self.extend_select, self.ignore)


class Project:
    def __init__(self, overrides: Overrides, cwd: Path | None = None) -> None:
        self.cwd = (cwd or Path.cwd()).resolve()
        self.overrides = overrides
        self._explicit = load_config(overrides.config) if overrides.config else None
        self._finder = ConfigFinder(self.cwd)
        self._settings: dict[tuple, FileSettings] = {}
        self._pfi: dict[FileConfig, list[tuple[pathspec.PathSpec, frozenset[str]]]] = {}
        known, _ = catalogue.codes()
        try:
            layer = overrides.layer()
            expand_all((*(layer.select or ()), *layer.extend_select, *layer.ignore), known)
        except SelectorError as error:
            raise ConfigError(f"command line: {error}") from None

    def config_for(self, directory: Path) -> FileConfig:
        return self._explicit or self._finder.for_directory(directory)

    def exclude_rules(self, directory: Path) -> ExcludeRules:
        config = self.config_for(directory)
        base = DEFAULT_EXCLUDE if config.exclude is None else config.exclude
        return ExcludeRules(
            config.root, tuple(base) + config.extend_exclude, config.respect_gitignore
        )

    def cache_dir(self) -> Path:
        config = self.config_for(self.cwd)
        if config.cache_dir is not None:
            return config.cache_dir
        return (config.root if config.path else self.cwd) / CACHE_DIR_NAME

    def _per_file_ignores(
        self, config: FileConfig
    ) -> list[tuple[pathspec.PathSpec, frozenset[str]]]:
        if config not in self._pfi:
            known, _ = catalogue.codes()
            entries = []
            for pattern, selectors in config.per_file_ignores:
                try:
                    codes = expand_all(selectors, known)
                except SelectorError as error:
                    raise ConfigError(
                        f"{config.path}: per-file-ignores `{pattern}`: {error}"
                    ) from None
                entries.append((pathspec.GitIgnoreSpec.from_lines([pattern]), codes))
            self._pfi[config] = entries
        return self._pfi[config]

    def file_settings(self, path: Path) -> FileSettings:
        """The codes enabled for ``path`` and its analysis settings."""
        config = self.config_for(path.parent)
        ignored: frozenset[str] = frozenset()
        per_file_ignores = self._per_file_ignores(config)
        if per_file_ignores:  # resolve() costs syscalls per file: only when patterns need it
            try:
                rel = path.resolve().relative_to(config.root).as_posix()
            except ValueError:
                rel = path.name
            for spec, codes in per_file_ignores:
                if spec.match_file(rel) or spec.match_file(path.name):
                    ignored |= codes
        key = (config, ignored)
        if key not in self._settings:
            file_layer = SelectionLayer(config.select, config.extend_select, config.ignore)
            try:
                known, defaults = catalogue.codes()
                codes = resolve([file_layer, self.overrides.layer()], known, defaults)
            except SelectorError as error:
                raise ConfigError(f"{config.path}: {error}") from None
            self._settings[key] = FileSettings(frozenset(codes - ignored), config.settings)
        return self._settings[key]
