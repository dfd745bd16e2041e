"""--fix, --unsafe-fixes and --diff: what is applied, what is written, and that it is safe."""

from __future__ import annotations

import os
import stat

from frame_helpers import write

from synclint.diagnostics import Applicability, Edit, Fix, Position, Span
from synclint.fixer import MAX_ROUNDS, apply_fixes, fix_text, write_atomic


def test_fix_applies_safe_fixes_only(project, cli, fake_rules):
    path = write(project / "a.py", "marker()\nrisky(1)\n")
    result = cli("a.py", "--fix")
    assert path.read_text() == "marked()\nrisky(1)\n"
    assert result.status == 1  # the unsafe one remains
    assert "Found 2 errors (1 fixed, 1 remaining)." in result.out
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option" in result.out
    assert "help: Use `careful` instead (unsafe fix" in result.out


def test_unsafe_fixes(project, cli, fake_rules):
    path = write(project / "a.py", "marker()\nrisky(1)\n")
    result = cli("a.py", "--fix", "--unsafe-fixes")
    assert path.read_text() == "marked()\ncareful(1)\n"
    assert result.status == 0
    assert "Found 2 errors (2 fixed, 0 remaining)." in result.out


def test_second_fix_changes_nothing(project, cli, fake_rules):
    path = write(project / "a.py", "marker()\nif x:\n    marker()\n")
    cli("a.py", "--fix")
    first = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    result = cli("a.py", "--fix")
    assert path.read_bytes() == first == b"marked()\nif x:\n    marked()\n"
    assert path.stat().st_mtime_ns == mtime  # not even rewritten
    assert result.status == 0 and "All checks passed!" in result.out


def test_diff_writes_nothing(project, cli, fake_rules):
    path = write(project / "a.py", "marker()\nrisky(1)\n")
    result = cli("a.py", "--diff")
    assert path.read_text() == "marker()\nrisky(1)\n"
    assert result.status == 1
    assert "--- a/a.py\n+++ b/a.py\n" in result.out
    assert "-marker()\n+marked()\n" in result.out
    assert "careful" not in result.out
    assert "Would fix 1 error." in result.err
    assert cli("a.py", "--diff", "--unsafe-fixes").out.count("+careful(1)") == 1
    write(project / "a.py", "x = 1\n")
    assert cli("a.py", "--diff").status == 0


def test_fix_keeps_mode_encoding_and_newlines(project, cli, fake_rules):
    path = project / "a.py"
    path.write_bytes(
        "# -*- coding: latin-1 -*-\r\nname = 'caf\u00e9'\r\nmarker()\r\n".encode("latin-1")
    )
    os.chmod(path, 0o750)
    assert cli("a.py", "--fix").status == 0
    assert (
        path.read_bytes()
        == "# -*- coding: latin-1 -*-\r\nname = 'caf\u00e9'\r\nmarked()\r\n".encode("latin-1")
    )
    assert stat.S_IMODE(path.stat().st_mode) == 0o750
    assert [p.name for p in project.iterdir() if "synclint-tmp" in p.name] == []


def test_a_fix_that_breaks_the_parse_is_dropped():
    text = "a = 1\nb = 2\n"
    good = Fix("good", Applicability.SAFE, (Edit(Span(Position(1, 5), Position(1, 6)), "10"),))
    bad = Fix("bad", Applicability.SAFE, (Edit(Span(Position(2, 5), Position(2, 6)), "(("),))

    def lint(current):
        from synclint.diagnostics import Diagnostic

        found = []
        if "10" not in current:
            found.append(Diagnostic("SYN901", "g", "t.py", good.edits[0].span, fix=good))
        if "((" not in current:
            found.append(Diagnostic("SYN901", "b", "t.py", bad.edits[0].span, fix=bad))
        return found

    outcome = fix_text(text, lint, unsafe=False)
    assert outcome.text == "a = 10\nb = 2\n"
    assert outcome.applied == 1


def test_overlapping_fixes_first_wins_and_duplicates_apply_once():
    text = "abcdef\n"
    a = Fix("a", Applicability.SAFE, (Edit(Span(Position(1, 1), Position(1, 4)), "X"),))
    b = Fix("b", Applicability.SAFE, (Edit(Span(Position(1, 3), Position(1, 5)), "Y"),))
    c = Fix("c", Applicability.SAFE, (Edit(Span(Position(1, 6), Position(1, 6)), "!"),))
    same_as_c = Fix("c2", Applicability.SAFE, c.edits)
    assert apply_fixes(text, [b, a, c, same_as_c]) == ("Xde!f\n", 2)


def test_fix_loop_is_bounded():
    """A 'fix' that always offers another fix stops after MAX_ROUNDS rounds."""
    from synclint.diagnostics import Diagnostic

    def lint(current):
        end = Position(1, len(current.splitlines()[0]) + 1)
        grow = f"+{current.count('+')}"
        fix = Fix("grow", Applicability.SAFE, (Edit(Span(end, end), grow),))
        return [Diagnostic("SYN901", "m", "t.py", Span(end, end), fix=fix)]

    outcome = fix_text("x = 1\n", lint, unsafe=False)
    assert outcome.applied == MAX_ROUNDS
    assert outcome.text == "x = 1" + "".join(f"+{n}" for n in range(MAX_ROUNDS)) + "\n"


def test_write_atomic_replaces_through_symlink(tmp_path):
    target = write(tmp_path / "real.py", "old\n")
    link = tmp_path / "link.py"
    os.symlink("real.py", link)
    write_atomic(link, b"new\n")
    assert link.is_symlink() and target.read_text() == "new\n"


def test_unreadable_target_directory_is_an_error_not_a_crash(project, cli, fake_rules, monkeypatch):
    import synclint.fixer as fixer

    def refuse(path, data):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(fixer, "write_atomic", refuse)
    path = write(project / "a.py", "marker()\n")
    result = cli("a.py", "--fix")
    assert result.status == 2
    assert "cannot write a.py: Permission denied" in result.err
    assert path.read_text() == "marker()\n"


def test_a_fix_that_does_not_resolve_its_finding_is_applied_once():
    """A rule whose fix leaves the finding in place must not pile up copies of the fix."""
    from synclint.diagnostics import Diagnostic

    def lint(current):
        line = current.splitlines().index("b = 2") + 1  # always "insert before `b = 2`"
        at = Position(line, 1)
        fix = Fix("insert", Applicability.UNSAFE, (Edit(Span(at, at), "s.wait_stream(t)\n"),))
        return [Diagnostic("SYN101", f"before line {line}", "t.py", Span(at, at), fix=fix)]

    outcome = fix_text("a = 1\nb = 2\n", lint, unsafe=True)
    assert outcome.text == "a = 1\ns.wait_stream(t)\nb = 2\n"
    assert outcome.applied == 1


def test_an_insertion_already_in_place_is_not_repeated_by_a_later_run():
    from synclint.diagnostics import Diagnostic

    def lint(current):
        line = current.splitlines().index("b = 2") + 1
        at = Position(line, 1)
        fix = Fix("insert", Applicability.UNSAFE, (Edit(Span(at, at), "s.wait_stream(t)\n"),))
        return [Diagnostic("SYN101", "m", "t.py", Span(at, at), fix=fix)]

    first = fix_text("a = 1\nb = 2\n", lint, unsafe=True)
    second = fix_text(first.text, lint, unsafe=True)
    assert second.text == first.text == "a = 1\ns.wait_stream(t)\nb = 2\n"
    assert second.applied == 0


def test_insertion_is_not_mistaken_for_a_differently_indented_line() -> None:
    """An inserted line equal to the *tail* of the previous, more indented line is still new."""
    from synclint.diagnostics import Applicability, Edit, Fix, Position, Span
    from synclint.fixer import apply_fixes

    text = "if x:\n        wait()\n    use()\n"
    at = Position(3, 1)
    fix = Fix("insert", Applicability.UNSAFE, (Edit(Span(at, at), "    wait()\n"),))
    fixed, count = apply_fixes(text, [fix])
    assert fixed == "if x:\n        wait()\n    wait()\n    use()\n" and count == 1
