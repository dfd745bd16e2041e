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
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

import pathspec
from pathspec.util import normalize_file

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


def below(path: str, directory: str) -> str | None:
    """``path`` relative to ``directory`` (both absolute and normalised), in POSIX form, or None
    when it is not below it: ``Path.relative_to`` on strings (no ``Path`` per file and pattern)."""
    prefix = directory if directory.endswith(os.sep) else directory + os.sep
    if not path.startswith(prefix):
        return "." if path == directory else None
    rel = path[len(prefix) :]
    return rel if os.sep == "/" else rel.replace(os.sep, "/")


_GROUP = re.compile(r"\(\?P<\w+>")


class _Matcher:
    """Whether a gitignore-style spec ignores a path, as ``spec.match_file`` answers.

    pathspec turns each line into a pattern (a regular expression) and decides what negation
    means; its pure-Python backend then tries the patterns one by one: the 29 default excludes
    for every file and directory of a walk. When no pattern negates, a path is ignored exactly
    when some pattern matches, which one search of the patterns joined into a single expression
    answers. (Their named groups, which only tell pathspec's negation rules what kind of pattern
    matched, become plain groups: names may not repeat in one expression.) With a negation the
    spec answers itself."""

    __slots__ = ("_joined", "_spec")

    def __init__(self, spec: pathspec.PathSpec) -> None:
        self._spec = spec
        self._joined: re.Pattern | None = None
        active = [p for p in spec.patterns if p.include is not None]
        joinable = all(
            p.include
            and isinstance(getattr(p, "regex", None), re.Pattern)
            and isinstance(p.regex.pattern, str)
            for p in active
        )
        if joinable:
            alternatives = [_GROUP.sub("(?:", p.regex.pattern) for p in active]
            self._joined = re.compile("|".join(f"(?:{a})" for a in alternatives) or "(?!)")

    def __call__(self, path: str) -> bool:
        if self._joined is None:
            return self._spec.match_file(path)
        return self._joined.search(normalize_file(path)) is not None


@dataclass
class _GitIgnores:
    """``.gitignore`` matchers keyed by the directory they live in (absolute, as a string)."""

    matchers: dict[str, _Matcher | None] = field(default_factory=dict)

    def matcher_for(self, directory: str) -> _Matcher | None:
        if directory not in self.matchers:
            matcher = None
            ignore_file = os.path.join(directory, ".gitignore")
            try:
                if os.path.isfile(ignore_file):
                    with open(ignore_file, encoding="utf-8", errors="replace") as handle:
                        lines = handle.read().splitlines()
                    matcher = _Matcher(pathspec.GitIgnoreSpec.from_lines(lines))
            except OSError:
                matcher = None
            self.matchers[directory] = matcher
        return self.matchers[directory]

    def chain(self, directory: str, top: str) -> tuple[tuple[str, _Matcher], ...]:
        """The ``.gitignore`` files that apply to what ``directory`` holds: its own and those of
        its parents up to ``top`` (a repository root or the walk's start), nearest first."""
        found = []
        while True:
            matcher = self.matcher_for(directory)
            if matcher is not None:
                found.append((directory, matcher))
            parent = os.path.dirname(directory)
            if directory == top or parent == directory:
                return tuple(found)
            directory = parent

    @staticmethod
    def ignores(chain: tuple[tuple[str, _Matcher], ...], path: str, is_dir: bool) -> bool:
        """Whether one of the ``.gitignore`` files of ``chain`` ignores ``path`` (in a directory
        the chain is for)."""
        for directory, matcher in chain:
            rel = below(path, directory)
            if rel is not None and matcher(rel + ("/" if is_dir else "")):
                return True
        return False


def _git_top(start: Path) -> Path:
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


class _Exclusion(NamedTuple):
    """An :class:`ExcludeRules` made ready for a walk."""

    matches: _Matcher
    root: str
    respect_gitignore: bool


class Discoverer:
    """Expands command-line paths into files, with the exclusions of each path's configuration.

    The walk works on strings and ``os.scandir`` entries, which know from the directory listing
    whether they are directories or links: on a large tree a ``Path`` object and a ``stat`` per
    file and per pattern cost more than the rest of the walk."""

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
        self._exclusions: dict[ExcludeRules, _Exclusion] = {}

    def _exclusion(self, rules: ExcludeRules) -> _Exclusion:
        exclusion = self._exclusions.get(rules)
        if exclusion is None:
            exclusion = self._exclusions[rules] = _Exclusion(
                _Matcher(rules.spec()), str(rules.root), rules.respect_gitignore
            )
        return exclusion

    @staticmethod
    def _excluded(path: str, is_dir: bool, exclusion: _Exclusion, chain) -> bool:
        """Whether ``path`` is excluded: a virtual environment, an exclude pattern (matched on
        its name and on its path below the configuration's root), or a ``.gitignore`` of
        ``chain`` (those of the directory that holds it and of its parents)."""
        if is_dir and os.path.isfile(os.path.join(path, "pyvenv.cfg")):
            return True
        matches = exclusion.matches
        suffix = "/" if is_dir else ""
        rel = below(path, exclusion.root)
        if matches(os.path.basename(path) + suffix) or (rel is not None and matches(rel + suffix)):
            return True
        return exclusion.respect_gitignore and _GitIgnores.ignores(chain, path, is_dir)

    def _excluded_named(self, path: str, is_dir: bool, rules: ExcludeRules, top: str) -> bool:
        chain = (
            self._gitignores.chain(os.path.dirname(path), top) if rules.respect_gitignore else ()
        )
        return self._excluded(path, is_dir, self._exclusion(rules), chain)

    def files(self, paths: list[Path]) -> Iterator[Path]:
        """Every file to lint, each once (absolute paths; order of discovery)."""
        seen: set[str] = set()
        for given in paths:
            absolute = os.path.abspath(given)
            if not os.path.lexists(absolute):
                raise PathError(f"{given}: no such file or directory")
            if not os.path.exists(absolute):
                raise PathError(f"{given}: broken symbolic link (or a link loop)")
            is_dir = os.path.isdir(absolute)
            directory = absolute if is_dir else os.path.dirname(absolute)
            rules = self._rules_for(Path(directory))
            top = str(_git_top(Path(directory)))
            if is_dir:
                if self._force_exclude and self._excluded_named(absolute, True, rules, top):
                    continue
                for found in self._walk(absolute, rules, top):
                    if found not in seen:
                        seen.add(found)
                        yield Path(found)
            else:
                if self._force_exclude and (
                    self._excluded_named(absolute, False, rules, top)
                    or self._in_excluded_dir(absolute, rules, top)
                ):
                    continue
                if absolute not in seen:
                    seen.add(absolute)
                    yield Path(absolute)

    def _in_excluded_dir(self, path: str, rules: ExcludeRules, top: str) -> bool:
        root = str(rules.root)
        parent = os.path.dirname(path)
        while True:
            if parent == root or below(parent, root) is None:
                return False
            if self._excluded_named(parent, True, rules, top):
                return True
            up = os.path.dirname(parent)
            if up == parent:
                return False
            parent = up

    def _walk(self, root: str, rules: ExcludeRules, top: str) -> Iterator[str]:
        """Top down, in name order: a directory's files, then its subdirectories (what
        ``os.walk`` with sorted names gives). Links to directories are never followed."""
        gitignores = self._gitignores
        exclusion = self._exclusion(rules)
        pending = [root]
        while pending:
            directory = pending.pop()
            try:
                with os.scandir(directory) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError as error:
                self._warn(f"cannot read directory {error.filename}: {error.strerror}")
                continue
            chain = gitignores.chain(directory, top) if rules.respect_gitignore else ()
            subdirectories = []
            for entry in entries:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                if is_dir:
                    if entry.is_symlink():
                        continue  # never follow directory links: no loops, no escaping the tree
                    if not self._excluded(entry.path, True, exclusion, chain):
                        subdirectories.append(entry.path)
                    continue
                if not entry.name.endswith(PYTHON_SUFFIXES):
                    continue
                if entry.is_symlink() and not os.path.exists(entry.path):
                    self._warn(f"skipping {entry.path}: broken symbolic link (or a link loop)")
                    continue
                if not self._excluded(entry.path, False, exclusion, chain):
                    yield entry.path
            pending.extend(reversed(subdirectories))
