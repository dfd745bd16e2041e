"""Which files get linted: default skips, excludes, .gitignore, explicit paths, links."""

from __future__ import annotations

import os
from pathlib import Path

import pathspec
import pytest
from frame_helpers import write
from hypothesis import given, settings
from hypothesis import strategies as st

from synclint.discovery import Discoverer, ExcludeRules, PathError, _Matcher
from synclint.project import Overrides, Project


def discovered(root: Path, *paths: str, force_exclude: bool = False) -> list[str]:
    project = Project(Overrides(), root)
    warnings: list[str] = []
    discoverer = Discoverer(project.exclude_rules, force_exclude, warnings.append)
    found = discoverer.files([root / p for p in paths] or [root])
    return sorted(p.relative_to(root).as_posix() for p in found)


def test_python_files_only_and_usual_folders_skipped(project):
    for name in (
        "a.py",
        "b.pyi",
        "c.txt",
        "pkg/d.py",
        ".git/e.py",
        ".venv/f.py",
        "build/g.py",
        "dist/h.py",
        "pkg/__pycache__/i.py",
        "node_modules/j.py",
        ".tox/k.py",
        "x.egg-info/l.py",
        ".synclint_cache/m.py",
    ):
        write(project / name, "x = 1\n")
    assert discovered(project, ".") == ["a.py", "b.pyi", "pkg/d.py"]


def test_any_virtualenv_is_skipped(project):
    write(project / "env-3.11" / "pyvenv.cfg", "home = /usr/bin\n")
    write(project / "env-3.11" / "lib" / "site.py", "x = 1\n")
    write(project / "a.py", "x = 1\n")
    assert discovered(project, ".") == ["a.py"]


def test_gitignore_respected_including_nested_and_parent(project):
    (project / ".git").mkdir()
    write(project / ".gitignore", "generated/\n*_pb2.py\n")
    write(project / "src" / ".gitignore", "local.py\n")
    for name in ("src/a.py", "src/local.py", "src/msg_pb2.py", "generated/x.py", "local.py"):
        write(project / name, "x = 1\n")
    assert discovered(project, ".") == ["local.py", "src/a.py"]
    # Walking from a subdirectory still honours the repository's top-level .gitignore.
    assert discovered(project, "src") == ["src/a.py"]


def test_respect_gitignore_false(project):
    write(project / "synclint.toml", "respect-gitignore = false\n")
    write(project / ".gitignore", "ignored.py\n")
    write(project / "ignored.py", "x = 1\n")
    assert discovered(project, ".") == ["ignored.py"]


def test_exclude_replaces_defaults_and_extend_exclude_adds(project):
    write(project / "build" / "a.py", "x = 1\n")
    write(project / "legacy" / "b.py", "x = 1\n")
    write(project / "c.py", "x = 1\n")
    write(project / "synclint.toml", 'exclude = ["legacy"]\n')
    assert discovered(project, ".") == ["build/a.py", "c.py"]
    write(project / "synclint.toml", 'extend-exclude = ["legacy/", "c.py"]\n')
    assert discovered(project, ".") == []


def test_explicit_files_are_linted_even_if_excluded_unless_forced(project):
    write(project / "synclint.toml", 'extend-exclude = ["skip_me.py", "vendored/"]\n')
    write(project / "skip_me.py", "x = 1\n")
    write(project / "vendored" / "lib.py", "x = 1\n")
    assert discovered(project, "skip_me.py", "vendored/lib.py") == ["skip_me.py", "vendored/lib.py"]
    assert discovered(project, "skip_me.py", "vendored/lib.py", force_exclude=True) == []


def test_missing_path_raises(project):
    with pytest.raises(PathError, match="nope.py: no such file"):
        discovered(project, "nope.py")


def test_symlink_loops_and_broken_links(project, cli):
    write(project / "a.py", "x = 1\n")
    os.symlink(project, project / "loop")  # a directory link back to the root
    os.symlink("self.py", project / "self.py")  # a link to itself
    os.symlink("missing.py", project / "dangling.py")
    assert discovered(project, ".") == ["a.py"]
    result = cli(".")
    assert result.status == 0
    assert "broken symbolic link" in result.err
    explicit = cli("self.py")
    assert explicit.status == 2 and "self.py" in explicit.err


def test_each_file_once_and_sorted_output(project, cli, fake_rules):
    write(project / "b.py", "marker()\n")
    write(project / "a" / "z.py", "marker()\n")
    result = cli("b.py", ".", "b.py", "--output-format", "concise", "--no-cache", "-q")
    assert [line.split(":")[0] for line in result.out.splitlines()] == ["a/z.py", "b.py"]


def test_exclude_rules_match_relative_to_config_root(tmp_path):
    rules = ExcludeRules(tmp_path, ("/top_only.py",))
    spec = rules.spec()
    assert spec.match_file("top_only.py")
    assert not spec.match_file("sub/top_only.py")


def test_gitignore_negation_and_directory_patterns(project):
    (project / ".git").mkdir()
    write(project / ".gitignore", "gen_*.py\n!gen_keep.py\ncache/\n/top.py\n")
    for name in ("gen_a.py", "gen_keep.py", "top.py", "sub/top.py", "cache/c.py", "sub/cache/d.py"):
        write(project / name, "x = 1\n")
    assert discovered(project, ".") == ["gen_keep.py", "sub/top.py"]


_PATTERN_PARTS = st.sampled_from(
    ["a", "b.py", "*.py", "**", "*", "dir", "?", "[ab]", "x*y", ".hidden", "build"]
)
_PATTERNS = st.builds(
    lambda neg, lead, parts, trail: ("!" if neg else "") + ("/" if lead else "")
    + "/".join(parts) + ("/" if trail else ""),
    st.booleans(),
    st.booleans(),
    st.lists(_PATTERN_PARTS, min_size=1, max_size=3),
    st.booleans(),
)
_PATHS = st.builds(
    lambda parts, is_dir: "/".join(parts) + ("/" if is_dir else ""),
    st.lists(st.sampled_from(["a", "b.py", "dir", "x_y", "xay", ".hidden", "build", "c.py"]),
             min_size=1, max_size=4),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PATTERNS, max_size=6), st.lists(_PATHS, min_size=1, max_size=8))
def test_joined_patterns_answer_as_pathspec_does(patterns, paths):
    """The walk's matcher joins patterns into one expression when none negates: it must say
    what pathspec says for every path, negations and directory patterns included."""
    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    matches = _Matcher(spec)
    for path in paths:
        assert matches(path) == spec.match_file(path), (patterns, path)


def test_default_excludes_are_joined():
    from synclint.discovery import DEFAULT_EXCLUDE

    matches = _Matcher(pathspec.GitIgnoreSpec.from_lines(DEFAULT_EXCLUDE))
    assert matches._joined is not None  # the fast path is the one walks take by default
    assert matches("build/") and matches("pkg/x.egg-info/") and not matches("src/")
