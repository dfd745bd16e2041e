"""SYN202 elapsed-time-without-enable-timing: ``elapsed_time()`` on an event built without timing.

``torch.cuda.Event()`` defaults to ``enable_timing=False`` and ``stream.record_event()`` makes such an
event too; ``elapsed_time`` on either raises ``ValueError`` at run time, typically only on the code
path that logs timings. We flag only when every creation that may have produced the event is known
and lacks timing (an ``enable_timing=flag`` variable or an event passed in from elsewhere is left
alone).
"""

from __future__ import annotations

from typing import Iterable

import libcst as cst

from synclint.diagnostics import Applicability, Diagnostic, Edit, Fix
from synclint.model.bindings import iter_calls
from synclint.model.event_creation import EventCreation
from synclint.model.file_facts import event_creations
from synclint.rules._common import ELAPSED_TIME_CALL
from synclint.rules.base import FixKind, Rule, RuleContext


class ElapsedTimeWithoutEnableTiming(Rule):
    code = "SYN202"
    name = "elapsed-time-without-enable-timing"
    summary = "`elapsed_time()` on an event not created with `enable_timing=True`"
    fix_kind = FixKind.SAFE
    triggers = ("elapsed_time",)
    trigger_pattern = ELAPSED_TIME_CALL

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        creations = event_creations(ctx)
        for call in iter_calls(ctx.module):
            func = call.func
            if not (type(func) is cst.Attribute and func.attr.value == "elapsed_time"):
                continue
            if len(call.args) != 1 or call.args[0].keyword is not None:
                continue
            untimed: list[tuple[cst.BaseExpression, list[EventCreation]]] = []
            for event in (func.value, call.args[0].value):
                made = creations.of(event, call)
                if made and all(c.timing is False for c in made):
                    untimed.append((event, made))
            if untimed:
                yield self._report(ctx, call, untimed)

    def _report(self, ctx, call, untimed) -> Diagnostic:
        names = " and ".join(f"`{ctx.code_for(event)}`" for event, _ in untimed)
        made = {id(c.call): c for _, cs in untimed for c in cs}
        lines = sorted({ctx.line(c.call) for c in made.values()})
        where = ", ".join(f"line {n}" for n in lines)
        verb = "are" if len(untimed) > 1 else "is"
        message = (
            f"{names} {verb} created without `enable_timing=True` ({where}): "
            "`elapsed_time` raises ValueError"
        )
        if any(c.kind == "record_event" for c in made.values()):
            message += "; `record_event()` with no argument returns an event without timing"
        related = [(c.call, "event created here without timing") for c in made.values()]
        return ctx.diagnostic(
            self,
            call,
            message,
            related=related,
            fix=self._fix(ctx, list(made.values())),
            data={"events": [ctx.code_for(e) for e, _ in untimed], "created": lines},
        )

    def _fix(self, ctx: RuleContext, made: list[EventCreation]) -> Fix | None:
        if any(c.kind == "record_event" for c in made):
            return None  # the fix would be a new event object: not ours to invent
        edits = []
        for creation in made:
            if creation.timing_arg is not None:
                edits.append(Edit(ctx.span(creation.timing_arg.value), "True"))
            else:
                edits.append(
                    Edit(ctx.span(creation.call), ctx.code_for(with_timing(creation.call)))
                )
        return Fix("Create the event with `enable_timing=True`", Applicability.SAFE, tuple(edits))


def with_timing(call: cst.Call) -> cst.Call:
    """``call`` with ``enable_timing=True`` appended to its arguments."""
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
        )
    args.append(
        cst.Arg(
            keyword=cst.Name("enable_timing"),
            value=cst.Name("True"),
            equal=cst.AssignEqual(
                whitespace_before=cst.SimpleWhitespace(""),
                whitespace_after=cst.SimpleWhitespace(""),
            ),
        )
    )
    return call.with_changes(args=args)
