"""Which files to lint: walking directories, default and configured excludes, ``.gitignore``.

Directory walks skip the usual non-source folders (:data:`DEFAULT_EXCLUDE`, plus any directory with
a ``pyvenv.cfg``, i.e. a virtual environment), the ``exclude``/``extend-exclude`` patterns of the
configuration, and what ``.gitignore`` files ignore (those in the walked tree and in its parents up
to the repository root). A file named on the command line is linted even when excluded, unless
``force_exclude`` is set (pre-commit passes every staged file by name). Symbolic links to
directories are not followed, so link loops cannot trap the walk; broken links are skipped with a
warning. Output order does not depend on the walk: the caller sorts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pathspec

DEFAULT_EXCLUDE = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".ipynb_checkpoints",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pyenv",
    ".pytest_cache",
    ".pytype",
    ".ruff_cache",
    ".svn",
    ".synclint_cache",
    ".tox",
    ".venv",
    ".vscode",
    "__pycache__",
    "__pypackages__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
    "*.egg-info",
)
PYTHON_SUFFIXES = (".py", ".pyi")


class PathError(Exception):
    """A path named on the command line that cannot be linted (missing, unreadable)."""


@dataclass(frozen=True)
class ExcludeRules:
    """Exclusion patterns of one configuration, relative to ``root``."""

    root: Path
    patterns: tuple[str, ...]
    respect_gitignore: bool = True

    def spec(self) -> pathspec.PathSpec:
        return pathspec.GitIgnoreSpec.from_lines(self.patterns)


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return None


@dataclass
class _GitIgnores:
    """``.gitignore`` specs keyed by the directory they live in."""

    specs: dict[Path, pathspec.PathSpec | None] = field(default_factory=dict)

    def spec_for(self, directory: Path) -> pathspec.PathSpec | None:
        if directory not in self.specs:
            spec = None
            ignore_file = directory / ".gitignore"
            try:
                if ignore_file.is_file():
                    lines = ignore_file.read_text(encoding="utf-8", errors="replace").splitlines()
                    spec = pathspec.GitIgnoreSpec.from_lines(lines)
            except OSError:
                spec = None
            self.specs[directory] = spec
        return self.specs[directory]

    def ignored(self, path: Path, is_dir: bool, top: Path) -> bool:
        """Whether any .gitignore between ``top`` (a repository root or the walk's start) and the
        path's directory ignores it."""
        directory = path.parent
        while True:
            spec = self.spec_for(directory)
            if spec is not None:
                rel = _relative(path, directory)
                if rel is not None and spec.match_file(rel + ("/" if is_dir else "")):
                    return True
            if directory == top or directory.parent == directory:
                return False
            directory = directory.parent


def _git_top(start: Path) -> Path:
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


class Discoverer:
    """Expands command-line paths into files, with the exclusions of each path's configuration."""

    def __init__(
        self,
        rules_for: Callable[[Path], ExcludeRules],
        force_exclude: bool = False,
        warn: Callable[[str], None] = lambda message: None,
    ) -> None:
        self._rules_for = rules_for
        self._force_exclude = force_exclude
        self._warn = warn
        self._gitignores = _GitIgnores()
        self._specs: dict[ExcludeRules, pathspec.PathSpec] = {}

    def _excluded(self, path: Path, is_dir: bool, rules: ExcludeRules, top: Path) -> bool:
        name = path.name
        if is_dir and (path / "pyvenv.cfg").is_file():
            return True
        spec = self._specs.get(rules)
        if spec is None:
            spec = self._specs[rules] = rules.spec()
        suffix = "/" if is_dir else ""
        rel = _relative(path, rules.root)
        if spec.match_file(name + suffix) or (rel is not None and spec.match_file(rel + suffix)):
            return True
        return rules.respect_gitignore and self._gitignores.ignored(path, is_dir, top)

    def files(self, paths: list[Path]) -> Iterator[Path]:
        """Every file to lint, each once (absolute paths; order of discovery)."""
        seen: set[Path] = set()
        for given in paths:
            absolute = Path(os.path.abspath(given))
            if not os.path.lexists(absolute):
                raise PathError(f"{given}: no such file or directory")
            if not absolute.exists():
                raise PathError(f"{given}: broken symbolic link (or a link loop)")
            rules = self._rules_for(absolute if absolute.is_dir() else absolute.parent)
            top = _git_top(absolute if absolute.is_dir() else absolute.parent)
            if absolute.is_dir():
                if self._force_exclude and self._excluded(absolute, True, rules, top):
                    continue
                for found in self._walk(absolute, rules, top):
                    if found not in seen:
                        seen.add(found)
                        yield found
            else:
                if self._force_exclude and (
                    self._excluded(absolute, False, rules, top)
                    or self._in_excluded_dir(absolute, rules, top)
                ):
                    continue
                if absolute not in seen:
                    seen.add(absolute)
                    yield absolute

    def _in_excluded_dir(self, path: Path, rules: ExcludeRules, top: Path) -> bool:
        for parent in path.parents:
            if parent == rules.root or _relative(parent, rules.root) is None:
                return False
            if self._excluded(parent, True, rules, top):
                return True
        return False

    def _walk(self, root: Path, rules: ExcludeRules, top: Path) -> Iterator[Path]:
        def on_error(error: OSError) -> None:
            self._warn(f"cannot read directory {error.filename}: {error.strerror}")

        for directory, dirnames, filenames in os.walk(root, onerror=on_error):
            base = Path(directory)
            kept = []
            for name in sorted(dirnames):
                sub = base / name
                if sub.is_symlink():
                    continue  # never follow directory links: no loops, no escaping the tree
                if not self._excluded(sub, True, rules, top):
                    kept.append(name)
            dirnames[:] = kept
            for name in sorted(filenames):
                if not name.endswith(PYTHON_SUFFIXES):
                    continue
                path = base / name
                if not path.exists():
                    self._warn(f"skipping {path}: broken symbolic link (or a link loop)")
                    continue
                if path.is_dir():
                    continue
                if not self._excluded(path, False, rules, top):
                    yield path
