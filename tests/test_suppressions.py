"""Suppression comments and SYN002 (unused suppressions) with its fixes."""

from __future__ import annotations

import libcst as cst
import pytest

from synclint.pipeline import FileSettings, lint_text

ALL_FAKE = frozenset({"SYN001", "SYN901", "SYN902"})
WITH_SYN002 = ALL_FAKE | {"SYN002"}


def lint(text: str, codes=ALL_FAKE):
    return lint_text(text, "t.py", FileSettings(frozenset(codes)))


def found(text: str, codes=ALL_FAKE) -> list[tuple[int, str]]:
    return [(d.span.start.line, d.code) for d in lint(text, codes).diagnostics]


@pytest.mark.parametrize(
    "line",
    [
        "marker()  # synclint: ignore[SYN901]",
        "marker()  # synclint: ignore[SYN902, SYN901]",
        "marker()  # synclint: ignore",
        "marker()  # noqa: SYN901",
        "marker()  # noqa:SYN901,E501",
        "marker()  # NOQA: syn901",
        "marker()  # noqa",
        "marker()  # type: ignore  # noqa: SYN901",
    ],
)
def test_line_suppressions(fake_rules, line):
    assert found(line + "\n") == []


@pytest.mark.parametrize(
    "line",
    [
        "marker()  # synclint: ignore[SYN902]",
        "marker()  # noqa: E501",
        "marker()  # noqa:",
        "marker()  # synclint ignore[SYN901]",
        "marker('# noqa: SYN901')",
    ],
)
def test_not_suppressed(fake_rules, line):
    assert found(line + "\n") == [(1, "SYN901")]


def test_first_or_last_line_of_a_multiline_statement(fake_rules):
    first = "x = (  # noqa: SYN901\n    1,\n    marker(),\n)\n"
    last = "x = (\n    1,\n    marker(),\n)  # synclint: ignore[SYN901]\n"
    elsewhere = "x = (\n    1,  # noqa: SYN901\n    marker(),\n)\n"
    assert found(first) == []
    assert found(last) == []
    assert found(elsewhere) == [(3, "SYN901")]


def test_file_level(fake_rules):
    text = "# synclint: ignore-file[SYN901]\nmarker()\nrisky(1)\n"
    assert found(text) == [(3, "SYN902")]
    assert found("marker()\nrisky(1)\n# synclint: ignore-file\n") == []


def test_suppressing_a_syntax_error(fake_rules):
    assert found("# synclint: ignore-file[SYN001]\nx = (\n") == []


def test_unused_suppressions_are_syn002_when_enabled(fake_rules):
    text = (
        "x = 1  # synclint: ignore[SYN901]\n"
        "marker()  # noqa: SYN901, SYN902\n"
        "y = 2  # noqa\n"
        "z = 3  # noqa: E501\n"
    )
    assert found(text) == []
    result = lint(text, WITH_SYN002)
    messages = [(d.span.start.line, d.message) for d in result.diagnostics]
    assert messages == [
        (1, "suppression: unused SYN901 (suppressed nothing)"),
        (2, "suppression: unused SYN902 (suppressed nothing)"),
    ]


def test_codes_of_disabled_rules_are_not_reported(fake_rules):
    text = "x = 1  # noqa: SYN902\n"
    assert found(text, {"SYN901", "SYN002"}) == []


def test_unknown_code_warns_and_is_syn002(fake_rules):
    result = lint("x = 1  # noqa: SYN999\n", WITH_SYN002)
    assert result.warnings == ["t.py:1: unknown rule code `SYN999` in a suppression comment"]
    assert [d.message for d in result.diagnostics] == ["suppression: unknown rule code SYN999"]
    assert lint("x = 1  # noqa: SYN999\n").warnings  # warned even with SYN002 off


def test_no_syn002_in_a_file_that_does_not_parse(fake_rules):
    assert found("x = (  # noqa: SYN901\n", WITH_SYN002) == [(1, "SYN001")]


def test_ignore_file_can_silence_syn002(fake_rules):
    text = "# synclint: ignore-file[SYN002]\nx = 1  # noqa: SYN901\n"
    assert found(text, WITH_SYN002) == []


def _apply_only_fix(text: str) -> str:
    from synclint.fixer import apply_fixes

    diagnostics = [d for d in lint(text, WITH_SYN002).diagnostics if d.code == "SYN002"]
    assert len(diagnostics) == 1
    fixed, count = apply_fixes(text, [diagnostics[0].fix])
    assert count == 1
    cst.parse_module(fixed)
    return fixed


@pytest.mark.parametrize(
    "before, after",
    [
        ("x = 1  # noqa: SYN901\n", "x = 1\n"),
        ("x = 1  # synclint: ignore[SYN901]\ny = 2\n", "x = 1\ny = 2\n"),
        ("marker()  # noqa: SYN901, SYN902\n", "marker()  # noqa: SYN901\n"),
        ("x = 1  # noqa: SYN901, E501\n", "x = 1  # noqa: E501\n"),
        ("# synclint: ignore-file[SYN901]\nx = 1\n", "x = 1\n"),
        ("x = 1  # noqa: SYN901 because reasons\n", "x = 1  # because reasons\n"),
        ("x = 1  # type: ignore  # noqa: SYN901\n", "x = 1  # type: ignore\n"),
        ("if True:\n    x = 1  # synclint: ignore\n", "if True:\n    x = 1\n"),
    ],
)
def test_syn002_fix(fake_rules, before, after):
    assert _apply_only_fix(before) == after


def test_other_tools_noqa_comments_are_skipped_without_missing_ours():
    from synclint.suppressions import parse_directives

    assert parse_directives("x = 1  # noqa: E501\ny = 2  # noqa:F401\n") == []
    mixed = parse_directives("x = 1  # NOQA:e501, syn101\n")
    assert [d.codes for d in mixed] == [("SYN101",)]
    assert [d.codes for d in parse_directives("x = 1  # noqa\n")] == [None]
    assert [d.codes for d in parse_directives("x = 1  # noqa :E501\n")] == [None]  # not a list
    assert [d.kind for d in parse_directives("# SynClint: ignore-file\n")] == ["ignore-file"]


def test_bare_noqa_comments_are_not_tokenized_in_a_file_without_findings(fake_rules, monkeypatch):
    """A bare ``# noqa`` only suppresses findings on its line: in a file with none it does
    nothing, so the file is not tokenized for it. Directives that name codes, and
    ``# synclint:`` comments, are still read (SYN002 reports them unused)."""
    from synclint import suppressions
    from synclint.suppressions import parse_directives

    assert parse_directives("x = 1  # noqa\n", findings=False) == []
    assert [d.codes for d in parse_directives("x = 1  # noqa\n", findings=True)] == [None]
    assert [d.codes for d in parse_directives("x  # noqa\ny  # noqa: SYN901\n", findings=False)] == [
        None,
        ("SYN901",),
    ]
    assert [d.kind for d in parse_directives("x  # synclint: ignore\n", findings=False)] == ["ignore"]

    tokenized = []
    original = suppressions._comments
    monkeypatch.setattr(
        suppressions, "_comments", lambda source: tokenized.append(source) or original(source)
    )
    assert found("x = 1  # noqa\n", WITH_SYN002) == []
    assert tokenized == []
    assert found("marker()  # noqa\n", WITH_SYN002) == []  # a finding: read, and suppressed
    assert len(tokenized) == 1
