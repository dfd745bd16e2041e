"""SYN203 elapsed-time-before-completion: ``elapsed_time()`` before the host knows the end event
completed.

``start.elapsed_time(end)`` raises ``RuntimeError`` (cudaErrorNotReady) when ``end`` has been
recorded but its work has not finished, which is the normal state right after ``end.record()``:
recording is asynchronous. The host must synchronize first: ``end.synchronize()``,
``torch.cuda.synchronize()``, a synchronize of the stream it was recorded on, or a blocking read on
that stream. ``end.wait()`` does not count (it makes a stream wait, not the host: SYN201).
"""

from __future__ import annotations

from typing import Iterable

import libcst as cst

from synclint.diagnostics import Applicability, Diagnostic
from synclint.model import OpKind
from synclint.model.file_facts import parent_map
from synclint.model.host_queries import record_seen, records_of
from synclint.rules._common import ELAPSED_TIME_CALL, functions, is_identifier_path
from synclint.rules.base import FixKind, Rule, RuleContext
from synclint.rules.syn205_host_timer_without_sync import insert_sync


class ElapsedTimeBeforeCompletion(Rule):
    code = "SYN203"
    name = "elapsed-time-before-completion"
    summary = "`elapsed_time()` with no host synchronization on the end event before it"
    fix_kind = FixKind.UNSAFE
    triggers = ("elapsed_time",)
    trigger_pattern = ELAPSED_TIME_CALL

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        by_node: dict[int, list] = {}
        parents = parent_map(ctx)
        for function in functions(ctx):
            own = {id(o) for o in function.ops}
            for op in function.ops_of(OpKind.ELAPSED_TIME):
                if len(op.events) != 2:
                    continue
                end = op.events[1]
                records = records_of(op, end.key)
                if not all(id(r) in own for r in records):
                    records = []  # recorded in another method: its caller's protocol decides
                unseen = [r for r in records if not record_seen(function, r, op, parents)]
                by_node.setdefault(id(op.node), []).append((op, records, unseen))
        for entries in by_node.values():
            # Report only if every analysed occurrence (loop iterations, methods) is unsynchronized.
            if not all(records and unseen for _, records, unseen in entries):
                continue
            op, _, unseen = entries[0]
            yield self._report(ctx, op, unseen[0])

    def _report(self, ctx: RuleContext, op, record) -> Diagnostic:
        call = op.node
        end_text = None
        if type(call) is cst.Call and call.args:
            end_text = ctx.code_for(call.args[0].value)
        name = f"`{end_text}`" if end_text else "the end event"
        message = (
            f"{name} was recorded (line {ctx.line(record.node)}) but the host has not synchronized "
            "with it: `elapsed_time` raises RuntimeError while the event's work is still running; "
            f"call `{end_text or 'end'}.synchronize()` first"
        )
        fix = None
        if (
            end_text
            and is_identifier_path(end_text)
            and not _bound_in_comprehension(ctx, call, end_text)
        ):
            fix = insert_sync(ctx, call, f"{end_text}.synchronize()", Applicability.UNSAFE)
        return ctx.diagnostic(
            self,
            call,
            message,
            related=[(record.node, "end event recorded here")],
            fix=fix,
            data={"event": end_text, "recorded": ctx.line(record.node)},
        )


def _bound_in_comprehension(ctx: RuleContext, node, text: str) -> bool:
    """``[s.elapsed_time(e) for s, e in ...]``: ``e`` does not exist before the statement."""
    head = text.split(".")[0]
    for ancestor in ctx.positions.ancestors(node):
        if isinstance(ancestor, (cst.ListComp, cst.GeneratorExp, cst.SetComp, cst.DictComp)):
            for_in = ancestor.for_in
            while for_in is not None:
                if head in ctx.code_for(for_in.target):
                    return True
                for_in = for_in.inner_for_in
        if isinstance(ancestor, cst.BaseStatement):
            return False
    return False
