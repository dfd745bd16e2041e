"""SYN104 stream-waits-on-itself: ``wait_stream`` / ``record_stream`` given the current stream
inside that same stream's block, where ``current_stream()`` *is* the block's stream (a no-op).

The unsafe fix captures the stream before the ``with`` block and passes the captured value.
"""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from synclint.diagnostics import Applicability, Diagnostic, Edit, Fix
from synclint.model import Op, OpKind
from synclint.rules._common import (
    SIDE_STREAM_PATTERN,
    current_stream_call,
    enclosing_with,
    functions,
)
from synclint.rules.base import FixKind, Rule, RuleContext

CAPTURED = "producer_stream"


def _recorded_on_the_current_stream(record: Op) -> bool:
    """Was the event recorded on whatever stream was current (``event.record()``,
    ``torch.cuda.current_stream().record_event()``), rather than on a stream the code names
    (``event.record(self.stream)``)? Waiting inside that stream's block on an event recorded there
    by name is a redundant wait, not a wait meant for another stream."""
    return record.target is None or record.arg_is_current_stream


class StreamWaitsOnItself(Rule):
    code = "SYN104"
    name = "stream-waits-on-itself"
    summary = "wait_stream/record_stream given the current stream inside that stream's own block (a no-op)"
    fix_kind = FixKind.UNSAFE
    #: A wait (``wait_stream``, ``wait_event``, ``event.wait()``) or ``record_stream``, inside a
    #: ``with`` block of a stream.
    triggers = ("wait", "record_stream")
    requires_pattern = SIDE_STREAM_PATTERN

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        seen: set[int] = set()
        for function in functions(ctx):
            for op in function.ops:
                if id(op.node) in seen or op.block_stream is None:
                    continue
                if op.kind == OpKind.WAIT_STREAM and op.target is not None and op.target.key == op.stream.key:
                    what = f"`{ctx.code_for(op.node.func)}(...)` makes {op.stream.label} wait for itself"
                elif op.kind == OpKind.RECORD_STREAM and op.arg_is_current_stream and op.target is not None and any(
                    s.alloc_stream is not None and s.alloc_stream.key == op.target.key for s in op.reads
                ):
                    what = (
                        f"`record_stream` is given {op.target.label}, the stream the tensor was allocated on"
                    )
                elif (
                    op.kind == OpKind.WAIT_EVENT
                    and op.recorded_by
                    and all(r.stream.key == op.stream.key for r in op.recorded_by)
                    and any(_recorded_on_the_current_stream(r) for r in op.recorded_by)
                ):
                    what = (
                        f"{op.stream.label} waits for an event recorded on {op.stream.label} itself"
                    )
                else:
                    continue
                seen.add(id(op.node))
                message = (
                    f"{what}: inside the `with` block of {op.block_stream.label} the current stream is "
                    f"{op.block_stream.label}, so this call is a no-op"
                )
                fix = self.fix(ctx, op)
                message += f"; {fix.message}" if fix else "; capture the intended stream before the block"
                yield ctx.diagnostic(self, op.node, message, fix=fix, data={"stream": op.stream.short})

    def fix(self, ctx: RuleContext, op: Op) -> Optional[Fix]:
        block = enclosing_with(ctx, op.node)
        current = current_stream_call(ctx)
        call = op.node
        if block is None or current is None or type(call) is not cst.Call or not call.args:
            return None
        if CAPTURED in ctx.source:
            return None
        argument = call.args[0].value
        if op.kind == OpKind.WAIT_EVENT:
            # Only `s.wait_event(torch.cuda.current_stream().record_event())`: record on the
            # captured stream instead. An event recorded elsewhere (`done.record()`) is not a
            # stream to pass, and what it was meant to cover is not known.
            made_here = [r for r in op.recorded_by if r.node is argument and r.arg_is_current_stream]
            if not made_here or type(argument.func) is not cst.Attribute:
                return None
            argument = argument.func.value
        insert = ctx.insert_before_statement(block, f"{CAPTURED} = {current}", "", Applicability.UNSAFE)
        replace = Edit(ctx.span(argument), CAPTURED)
        use = "record the event on it" if op.kind == OpKind.WAIT_EVENT else f"pass `{CAPTURED}`"
        return Fix(
            f"capture `{CAPTURED} = {current}` before the `with` block and {use}",
            Applicability.UNSAFE,
            insert.edits + (replace,),
        )
