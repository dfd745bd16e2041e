"""Code written to fail: the bodies of ``with pytest.raises(...)`` and ``with
self.assertRaises(...)`` blocks.

A test that checks an error is raised (``elapsed_time`` on events made without timing, a
synchronization during capture, a copy expected to fail on a machine without the device) writes
the faulty code on purpose, and its result is thrown away because the call never returns. Findings
there would flag the test's subject, so the engine drops the ones anchored in such a body.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from synclint.cstwalk import walk

if TYPE_CHECKING:  # pragma: no cover
    from synclint.diagnostics import Diagnostic
    from synclint.rules.base import RuleContext

#: Context managers that expect the block to raise: pytest's and unittest's.
_EXPECTING = frozenset({"raises", "assertRaises", "assertRaisesRegex", "assertRaisesRegexp"})
_MENTIONED = re.compile(r"\b(?:raises|assertRaises)")


def outside_expected_failures(found: list[Diagnostic], ctx: RuleContext) -> list[Diagnostic]:
    """``found`` without the findings anchored in a block that is expected to raise."""
    if not found or not _MENTIONED.search(ctx.source):
        return found
    visitor = _ExpectingBlocks()
    walk(ctx.module, visitor)
    if not visitor.bodies:
        return found
    ranges = []
    for body in visitor.bodies:
        span = ctx.span(body)
        ranges.append((span.start.line, span.end.line))
    return [d for d in found if not any(a <= d.span.start.line <= b for a, b in ranges)]


class _ExpectingBlocks(cst.CSTVisitor):
    def __init__(self) -> None:
        self.bodies: list[cst.CSTNode] = []

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            call = item.item
            if isinstance(call, cst.Call) and _last_name(call.func) in _EXPECTING:
                self.bodies.append(node.body)
                return


def _last_name(func: cst.BaseExpression) -> str | None:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return None
