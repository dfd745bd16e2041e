"""SYN105 stream-created-in-loop: ``torch.cuda.Stream()`` inside a loop body.

``torch.cuda.Stream()`` hands out streams round-robin from a small per-device pool, so a stream per
iteration soon aliases earlier ones (hidden serialization, or ordering assumptions that break).
"""

from __future__ import annotations

from typing import Iterable

from synclint.diagnostics import Diagnostic
from synclint.model import OpKind
from synclint.rules._common import functions
from synclint.rules.base import FixKind, Rule, RuleContext


class StreamCreatedInLoop(Rule):
    code = "SYN105"
    name = "stream-created-in-loop"
    summary = "torch.cuda.Stream() created per loop iteration (pool aliasing, hidden serialization)"
    fix_kind = FixKind.NONE
    triggers = ("Stream",)

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        seen: set[int] = set()
        for function in functions(ctx):
            for op in function.ops:
                if op.kind != OpKind.CREATE_STREAM or not op.in_loop or id(op.node) in seen:
                    continue
                seen.add(id(op.node))
                message = (
                    "a new stream is created on every loop iteration: `torch.cuda.Stream()` hands out "
                    "streams round-robin from a small fixed pool per device, so these alias earlier "
                    "streams; create the streams once, before the loop"
                )
                yield ctx.diagnostic(self, op.node, message)
