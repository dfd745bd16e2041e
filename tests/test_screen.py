"""The screen (:mod:`synclint.screen`) never changes what synclint reports, and does pass clean files.

Screening is only an optimisation if it is invisible: a file it passes must have no diagnostics in
the ordinary run, and a file with any finding must take the ordinary run (which alone produces
positions, messages and fixes). These tests lint every fixture with the screen on and off, check
that it lets the findings through and passes the clean files, and that whatever goes wrong inside
it (a construct the mirror does not build, a crash) sends the file the ordinary way.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import synclint.mirror as mirror
from synclint import screen
from synclint.pipeline import FileSettings, _plan, lint_text
from synclint.rules.registry import all_rules
from synclint.settings import AnalysisSettings

ROOT = Path(__file__).resolve().parent.parent
EVERY_RULE = FileSettings(frozenset(all_rules()))
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))


def _screened(text: str, name: str) -> bool | None:
    """What the screen says about ``text`` (True: may report), or None when it is not asked."""
    plan = _plan(text, name, EVERY_RULE.codes)
    if plan.analysis is not None or plan.tree is None:
        return None
    return screen.may_report(
        name, text, plan.tree, plan.dropped, plan.codes, AnalysisSettings()
    )


def test_fixtures_lint_identically_with_and_without_the_screen():
    findings = 0
    for path in FIXTURES:
        text = path.read_text(encoding="utf-8")
        on = lint_text(text, str(path), EVERY_RULE, screen=True)
        off = lint_text(text, str(path), EVERY_RULE, screen=False)
        assert on.diagnostics == off.diagnostics, path
        assert on.errors == off.errors, path
        findings += len(off.diagnostics)
    assert findings > 50


def test_files_with_findings_are_flagged_and_clean_files_pass():
    flagged = passed = 0
    for path in FIXTURES:
        text = path.read_text(encoding="utf-8")
        verdict = _screened(text, str(path))
        if verdict is None:
            continue
        has_findings = bool(lint_text(text, str(path), EVERY_RULE, screen=False).diagnostics)
        if has_findings:
            assert verdict, f"{path} has findings but the screen passed it"
            flagged += 1
        elif not verdict:
            passed += 1
    assert flagged > 50
    assert passed > 50  # the screen saves work on clean code, it does not flag everything


CLEAN_WITH_STREAMS = """\
import torch

def overlap(x):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = x * 2
    torch.cuda.current_stream().wait_stream(side)
    return y + 1
"""

RACY = """\
import torch

def overlap(x):
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        y = x * 2
    return y + 1
"""


def test_a_clean_stream_function_passes_and_a_racy_one_is_flagged():
    assert _screened(CLEAN_WITH_STREAMS, "clean.py") is False
    assert _screened(RACY, "racy.py") is True
    racy = lint_text(RACY, "racy.py", EVERY_RULE)
    # positions come from the ordinary run: `x` read on the side stream, `y` back on the default
    assert [(d.code, d.span.start.line) for d in racy.diagnostics] == [("SYN101", 6), ("SYN101", 7)]


def test_a_timer_class_whose_method_synchronizes_passes_the_screen():
    """Learning which methods of a class synchronize (for calls on its instances) reads the mirror's
    names, not a node's code: asking for a class body's code ended the screen for every file with
    such a class, sending DeepSpeed's through libcst (a cold run a second slower)."""
    path = ROOT / "fixtures" / "SYN203" / "ok_events_read_after_a_method_of_a_timer_instance_synchronizes.py"
    assert _screened(path.read_text(encoding="utf-8"), str(path)) is False


def test_a_construct_the_mirror_does_not_build_takes_the_ordinary_way(monkeypatch):
    def unsupported(tree, text, dropped=()):
        raise mirror.Unsupported("not built")

    monkeypatch.setattr(mirror, "mirror_module", unsupported)
    assert _screened(CLEAN_WITH_STREAMS, "clean.py") is True
    assert {d.code for d in lint_text(RACY, "racy.py", EVERY_RULE).diagnostics} == {"SYN101"}


def test_a_crash_inside_the_screen_takes_the_ordinary_way(monkeypatch):
    def crash(self, node):
        raise ValueError("boom")

    monkeypatch.setattr(screen.ScreenContext, "model", property(lambda self: crash(self, None)))
    assert _screened(CLEAN_WITH_STREAMS, "clean.py") is True
    assert {d.code for d in lint_text(RACY, "racy.py", EVERY_RULE).diagnostics} == {"SYN101"}


def test_an_identifier_spelt_two_ways_takes_the_ordinary_way():
    """``ｅ`` (fullwidth) and ``e`` are one name to Python, two spellings in the text: the mirror
    cannot tell which node was spelt how, so the screen must hand the file to libcst, not crash
    (it did, before the text was read inside the screen's guard: pygments and test_re.py)."""
    text = RACY.replace("y = x * 2", "ｅ = 1\n        e = ｅ + 1\n        y = x * 2")
    assert text != RACY
    assert _screened(text, "spelt.py") is True
    result = lint_text(text, "spelt.py", EVERY_RULE)
    assert result.errors == []
    assert result.diagnostics == lint_text(text, "spelt.py", EVERY_RULE, screen=False).diagnostics
    assert {d.code for d in result.diagnostics} == {"SYN101"}


SUPPRESSIONS = """\
import torch  # noqa
# synclint: ignore[SYN999]

def overlap(x):  # synclint: ignore[SYN101, SYN201]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # noqa: SYN101, E501
        y = x * 2
    torch.cuda.current_stream().wait_stream(side)
    return y + 1
"""


def test_files_with_suppression_comments_are_screened_and_syn002_is_unchanged(monkeypatch):
    asked = []
    original = screen.may_report

    def spy(*args):
        verdict = original(*args)
        asked.append((args[0], verdict))
        return verdict

    monkeypatch.setattr(screen, "may_report", spy)
    with_syn002 = FileSettings(EVERY_RULE.codes | {"SYN002"})
    on = lint_text(SUPPRESSIONS, "clean.py", with_syn002)
    off = lint_text(SUPPRESSIONS, "clean.py", with_syn002, screen=False)
    assert asked == [("clean.py", False)]  # passed by the screen: no ordinary run
    assert on.diagnostics == off.diagnostics
    assert on.warnings == off.warnings == ["clean.py:2: unknown rule code `SYN999` in a suppression comment"]
    # every comment suppressed nothing: SYN002 on each one naming a known, enabled code
    assert [(d.code, d.span.start.line) for d in on.diagnostics] == [
        ("SYN002", 2), ("SYN002", 4), ("SYN002", 7)
    ]

    suppressed = "# synclint: ignore-file[SYN101]\n" + RACY
    result = lint_text(suppressed, "suppressed.py", with_syn002)
    assert asked[-1] == ("suppressed.py", True)  # the finding flags it; the ordinary run suppresses it
    assert result.diagnostics == lint_text(suppressed, "suppressed.py", with_syn002, screen=False).diagnostics
    assert result.diagnostics == []


@pytest.mark.parametrize("dropped_name", ["helper", "Unrelated"])
def test_dropped_definitions_are_not_analysed(dropped_name):
    text = CLEAN_WITH_STREAMS + (
        "\n\ndef helper():\n    return 1\n\n\nclass Unrelated:\n    def f(self):\n        return 2\n"
    )
    plan = _plan(text, "mixed.py", EVERY_RULE.codes)
    names = {plan.tree.body[i].name for i in plan.dropped}
    assert dropped_name in names
    module = mirror.mirror_module(plan.tree, text, plan.dropped)
    assert dropped_name not in module.code_for_node(module)
    assert isinstance(plan.tree, ast.Module)
    assert _screened(text, "mixed.py") is False


def _exclusive(test: str, negated: str) -> str:
    return CLEAN_WITH_STREAMS + (
        "\n\ndef exclusive(x, a, b):\n"
        "    side = torch.cuda.Stream()\n"
        "    side.wait_stream(torch.cuda.current_stream())\n"
        f"    if {test}:\n"
        "        with torch.cuda.stream(side):\n"
        "            x.add_(1)\n"
        f"    assert not {negated}\n"
        "    return x * 2\n"
    )


def test_node_code_comes_from_the_source():
    """The model tells ``assert not cond`` from ``if cond:`` by their code. The mirror would print
    ``(a and b)`` as ``a and b``; the screen cuts the code from the source as libcst prints it, so
    it agrees with the ordinary run both ways: equal texts exclude the race (the file passes the
    screen, with the model's use of code), different texts do not (the file is flagged)."""
    same = _exclusive("(a and  b)", "(a and  b)")
    assert lint_text(same, "same.py", EVERY_RULE, screen=False).diagnostics == []
    assert _screened(same, "same.py") is False
    differ = _exclusive("a and b", "(a and b)")
    off = lint_text(differ, "differ.py", EVERY_RULE, screen=False)
    assert [d.code for d in off.diagnostics] == ["SYN101"]  # libcst's texts differ
    assert _screened(differ, "differ.py") is True
    assert lint_text(differ, "differ.py", EVERY_RULE, screen=True).diagnostics == off.diagnostics
    spacing = _exclusive("(a and b)", "(a and  b)")  # the mirror would print both alike
    assert [d.code for d in lint_text(spacing, "s.py", EVERY_RULE).diagnostics] == ["SYN101"]


def test_code_the_screen_cannot_be_sure_of_takes_the_ordinary_way(monkeypatch):
    monkeypatch.setattr(screen.SourceCode, "code", lambda self, node: None)
    text = _exclusive("(a and  b)", "(a and  b)")
    assert _screened(text, "same.py") is True
    assert lint_text(text, "same.py", EVERY_RULE).diagnostics == []


FORMATTED = """\
import torch

def overlap(x, n):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        head = x[
            : n // 2
        ]
        head.mul_(2)
    if n > 0 and x.is_cuda \\
            and head.numel() > 0:
        torch.cuda.current_stream().wait_stream(side)
    torch.cuda.current_stream().wait_stream(side)
    return head + 1
"""


def test_formatted_slices_and_continuations_pass_the_screen():
    """Code as black writes it (a long slice split over lines, a condition continued with a
    backslash) is screened, not sent to libcst for nothing: the model reads both texts."""
    assert lint_text(FORMATTED, "formatted.py", EVERY_RULE, screen=False).diagnostics == []
    assert _screened(FORMATTED, "formatted.py") is False
