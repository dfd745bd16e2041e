"""Every fix of the event, timing, transfer and API rules: apply it, re-lint, the finding is gone
and the result still parses (and, where it matters, other findings did not appear)."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from synclint.diagnostics import Applicability, Diagnostic, Fix
from synclint.engine import lint_source
from synclint.fixer import LineIndex

try:  # the shared fixer, when present; the fallback keeps these tests about the rules' edits
    from synclint.fixer import apply_fixes
except ImportError:  # pragma: no cover
    apply_fixes = None


def _apply(text: str, fix: Fix) -> str:
    if apply_fixes is not None:
        return apply_fixes(text, [fix])[0]
    index = LineIndex(text)
    edits = sorted(
        ((index.offset(e.span.start), index.offset(e.span.end), e.content) for e in fix.edits),
        reverse=True,
    )
    for start, end, content in edits:
        text = text[:start] + content + text[end:]
    return text


def fix_once(source: str, code: str) -> tuple[str, list[Diagnostic]]:
    """Apply the fix of every ``code`` finding (one at a time, re-linting in between)."""
    text = textwrap.dedent(source)
    before = [d for d in lint_source(text) if d.code == code]
    assert before, f"expected a {code} finding to fix"
    for _ in range(len(before)):
        found = [d for d in lint_source(text) if d.code == code and d.fix is not None]
        if not found:
            break
        text = _apply(text, found[0].fix)
        cst.parse_module(text)  # the fix must leave code that parses
    return text, before


def assert_fixed(source: str, code: str, applicability: Applicability, expect: list[str]) -> str:
    text, before = fix_once(source, code)
    assert all(d.fix is not None and d.fix.applicability is applicability for d in before)
    after = lint_source(text)
    assert [d for d in after if d.code == code] == [], text
    for snippet in expect:
        assert snippet in text, text
    return text


def test_syn202_adds_enable_timing_to_constructors() -> None:
    out = assert_fixed(
        """
        import torch

        class Timer:
            def __init__(self):
                self.start = torch.cuda.Event()
                self.end = torch.cuda.Event(blocking=True)

            def stop(self):
                self.end.record()
                self.end.synchronize()
                return self.start.elapsed_time(self.end)
        """,
        "SYN202",
        Applicability.SAFE,
        ["torch.cuda.Event(enable_timing=True)", "torch.cuda.Event(blocking=True, enable_timing=True)"],
    )
    assert lint_source(out) == []


def test_syn202_turns_literal_false_into_true() -> None:
    assert_fixed(
        """
        import torch
        a, b = torch.cuda.Event(False), torch.cuda.Event(enable_timing=False)
        a.record(); b.record(); b.synchronize()
        print(a.elapsed_time(b))
        """,
        "SYN202",
        Applicability.SAFE,
        ["torch.cuda.Event(True)", "torch.cuda.Event(enable_timing=True)"],
    )


def test_syn202_no_fix_for_record_event() -> None:
    source = textwrap.dedent(
        """
        import torch
        s = torch.cuda.current_stream()
        a = s.record_event()
        b = s.record_event()
        b.synchronize()
        print(a.elapsed_time(b))
        """
    )
    (found,) = [d for d in lint_source(source) if d.code == "SYN202"]
    assert found.fix is None


def test_syn302_assigns_the_result_back() -> None:
    assert_fixed(
        """
        import torch

        def prepare(x: torch.Tensor, device):
            x.to(device, non_blocking=True)
            return x
        """,
        "SYN302",
        Applicability.UNSAFE,
        ["x = x.to(device, non_blocking=True)"],
    )


def test_syn302_no_fix_for_a_chained_receiver() -> None:
    source = "import torch\ntorch.ones(3).cuda()\n"
    (found,) = [d for d in lint_source(source) if d.code == "SYN302"]
    assert found.fix is None


@pytest.mark.parametrize(
    ("bad", "good"),
    [
        ("torch.cuda.Event(enable_timings=True)", "torch.cuda.Event(enable_timing=True)"),
        ("torch.cuda.Stream(priorty=-1)", "torch.cuda.Stream(priority=-1)"),
        ("torch.cuda.event(blocking=True)", "torch.cuda.Event(blocking=True)"),
        ("s.wait_stream(torch.cuda.current_stream)", "s.wait_stream(torch.cuda.current_stream())"),
    ],
)
def test_syn501_fixes_unambiguous_misuse(bad: str, good: str) -> None:
    assert_fixed(f"import torch\ns = torch.cuda.Stream()\nx = {bad}\n", "SYN501", Applicability.SAFE, [good])


def test_syn501_no_fix_when_the_keyword_is_ambiguous_or_far() -> None:
    source = "import torch\ne = torch.cuda.Event(timing=True)\n"
    (found,) = [d for d in lint_source(source) if d.code == "SYN501"]
    assert found.fix is None
