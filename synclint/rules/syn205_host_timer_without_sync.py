"""SYN205 host-timer-without-sync: a host clock delta around CUDA work, read before the host has
synchronized with that work.

CUDA calls return as soon as the work is queued, so ``t1 = time.perf_counter()`` right after
``model(x.cuda())`` measures the launch, not the work. The end reading must come after a host
synchronization (``torch.cuda.synchronize()``, a stream or event ``synchronize()``, or a blocking
read such as ``.item()``/``.cpu()`` on the stream that ran it). Only work the model knows runs on a
GPU counts, so clocks around CPU code are never flagged.
"""

from __future__ import annotations

from typing import Iterable

import libcst as cst

from synclint.astscan import imports_or_names_module
from synclint.diagnostics import Applicability, Diagnostic, Fix
from synclint.model import OpKind
from synclint.model.host_queries import unseen_cuda_work
from synclint.rules._common import functions, torch_name
from synclint.rules.base import FixKind, Rule, RuleContext


class HostTimerWithoutSync(Rule):
    code = "SYN205"
    name = "host-timer-without-sync"
    summary = (
        "a host clock delta around CUDA work with no host synchronization before the end reading"
    )
    fix_kind = FixKind.UNSAFE
    triggers = ("time", "timer")
    #: Host clocks resolve to ``time.*`` or ``timeit.*``: the identifier ``time`` or ``timeit`` must
    #: occur (in the import or the call), not merely the letters (``runtime``, ``timestamp``).
    trigger_pattern = (r"time(?<!\wtime)(?!\w)", r"timeit(?<!\wtimeit)(?!\w)")
    #: ... and in code, not only in comments or docstrings: imported, or used as a bare name.
    syntax_check = staticmethod(
        lambda tree, text: imports_or_names_module(tree, frozenset({"time", "timeit"}), text)
    )

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        reported: set[int] = set()
        for function in functions(ctx):
            # Readings in helpers walked at their call sites belong to those helpers' own deltas.
            clocks = [c for c in function.ops_of(OpKind.HOST_CLOCK) if not c.inlined]
            for end in clocks:
                starts = [c for c in clocks if c.index < end.index and c.node is not end.node]
                if not starts or id(end.node) in reported:
                    continue
                start = starts[-1]
                work = unseen_cuda_work(function, start.index, end)
                if not work:
                    continue
                reported.add(id(end.node))
                yield self._report(ctx, start, end, work[0])

    def _report(self, ctx: RuleContext, start, end, work) -> Diagnostic:
        clock = end.clock or "the clock"
        message = (
            f"`{clock}()` is read while CUDA work started after the first reading (line "
            f"{ctx.line(start.node)}) may still be running (line {ctx.line(work.site.node)}): the "
            "delta measures the launch, not the work; synchronize before the end reading"
        )
        return ctx.diagnostic(
            self,
            end.node,
            message,
            related=[
                (start.node, "first reading"),
                (work.site.node, "CUDA work not yet synchronized"),
            ],
            fix=insert_sync(ctx, end.node, "torch.cuda.synchronize()", Applicability.UNSAFE),
            data={"clock": clock, "start": ctx.line(start.node), "work": ctx.line(work.site.node)},
        )


def insert_sync(
    ctx: RuleContext, node: cst.CSTNode, text: str, applicability: Applicability
) -> Fix | None:
    """Insert ``text`` (spelled with the file's name for ``torch``) on its own line before the simple
    statement holding ``node``; None where that place is ambiguous (compound headers, one-line
    suites, files without ``import torch``)."""
    torch = torch_name(ctx)
    if torch is None:
        return None
    if not isinstance(ctx.positions.statement(node), cst.SimpleStatementLine):
        return None
    text = text.replace("torch.", f"{torch}.", 1) if text.startswith("torch.") else text
    return ctx.insert_before_statement(
        node, text, f"Insert `{text}` before this line", applicability
    )
