"""SYN101 unordered-cross-stream-access: a query over ``FunctionModel.hazards``.

A hazard whose two streams did *not* both wait for a common producer (that is SYN103) is reported
at the second access, with the first as a related location. The unsafe fix inserts the missing
``wait_stream`` where one place is clearly right: before the ``with`` block when a side stream reads
work of the stream current outside it, or before the consuming statement when the current stream
uses a side stream's result.
"""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from synclint.diagnostics import Applicability, Diagnostic, Fix
from synclint.model import Hazard, OpKind
from synclint.rules._common import (
    SIDE_STREAM_PATTERN,
    block_stream_text,
    current_stream_call,
    describe_access,
    enclosing_with,
    functions,
    stream_text,
)
from synclint.rules.base import FixKind, Rule, RuleContext


def hazard_data(hazard: Hazard, ctx: RuleContext) -> dict:
    def side(access) -> dict:
        return {
            "stream": access.stream.short,
            "line": ctx.line(access.node),
            "access": access.mode,
        }

    return {
        "tensor": hazard.storage.label,
        "hazard": hazard.kind,
        "first": side(hazard.first),
        "second": side(hazard.second),
    }


def first_clause(hazard: Hazard, ctx: RuleContext) -> str:
    first = hazard.first
    where = f"{first.stream.label} (line {ctx.line(first.node)})"
    if first.op.kind == OpKind.ENTRY and first.op.origin_op is None:
        if type(first.node) is cst.FunctionDef:
            return (
                f"`{hazard.storage.label}` comes from before `{first.node.name.value}` started (line "
                f"{ctx.line(first.node)}), so it is taken to be produced on {first.stream.label}"
            )
        return f"`{hazard.storage.label}` is produced on {first.stream.label} by the caller (parameter, line {ctx.line(first.node)})"
    if first.op.kind == OpKind.ENTRY:
        return f"`{hazard.storage.label}` is {describe_access(first.mode)} on {where} in another method"
    return f"`{hazard.storage.label}` is {describe_access(first.mode)} on {where}"


def _from_before_the_function(hazards: list[Hazard]) -> Optional[cst.FunctionDef]:
    """The function all of ``hazards``' first accesses stand for the state at the start of (the
    entry of a value that is no parameter), or None."""
    nodes = {id(h.first.node): h.first.node for h in hazards}
    if len(nodes) != 1 or any(h.first.op.kind != OpKind.ENTRY or h.first.op.origin_op is not None for h in hazards):
        return None
    node = next(iter(nodes.values()))
    return node if type(node) is cst.FunctionDef else None


class UnorderedCrossStreamAccess(Rule):
    code = "SYN101"
    name = "unordered-cross-stream-access"
    summary = "a tensor written on one stream and used on another with no happens-before edge"
    fix_kind = FixKind.UNSAFE
    triggers = ("stream", "Stream", "async_op", "isend", "irecv")
    requires_pattern = SIDE_STREAM_PATTERN

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        # One finding per statement and pair of streams, naming every tensor involved: a helper
        # walked from several call sites is still one finding, and so is a statement that reads
        # one tensor and writes another (`dst.copy_(src)`), or reads and writes one
        # (`x[:n] = x[:n] + 1`). It is reported where the statement's first such access is.
        groups: dict[tuple, list[Hazard]] = {}
        for function in functions(ctx):
            for hazard in function.hazards:
                if hazard.common_producer is not None:
                    continue
                where = ctx.statement_lines(hazard.second.node)
                key = (where, hazard.first.stream.key, hazard.second.stream.key)
                groups.setdefault(key, []).append(hazard)
        for hazards in groups.values():
            if len(hazards) > 1:
                hazards.sort(key=lambda h: ctx.span(h.second.node).start)
            yield self.report(ctx, hazards)

    def report(self, ctx: RuleContext, hazards: list[Hazard]) -> Diagnostic:
        hazard = hazards[0]
        second = hazard.second
        line = ctx.line(second.node)
        names = list(dict.fromkeys(h.storage.label for h in hazards))
        before = _from_before_the_function(hazards)
        if len(names) == 1 and all(h.first is hazard.first for h in hazards):
            subject = first_clause(hazard, ctx)  # one tensor, one earlier access
        elif before is not None:
            # Every tensor comes from before the function started (attributes, containers): say
            # so, rather than cite the `def` line as where they were written.
            tensors = ", ".join(f"`{name}`" for name in names)
            subject = (
                f"{tensors} come from before `{before.name.value}` started (line "
                f"{ctx.line(before)}), so they are taken to be produced on {hazard.first.stream.label}"
            )
        else:
            lines = sorted({ctx.line(h.first.node) for h in hazards})
            where = "line" if len(lines) == 1 else "lines"
            parts = []
            for mode in ("write", "read"):
                named = list(dict.fromkeys(f"`{h.storage.label}`" for h in hazards if h.first.mode == mode))
                if named:
                    parts.append(f"{', '.join(named)} {describe_access(mode)}")
            if len(parts) == 1:
                were = "is" if len(names) == 1 else "are"
                tensors, verb = parts[0].rsplit(" ", 1)
                subject = f"{tensors} {were} {verb}"
            else:
                subject = " and ".join(parts)
            subject += f" on {hazard.first.stream.label} ({where} {', '.join(map(str, lines))})"
        modes = {h.second.mode for h in hazards}
        if second.op.kind == OpKind.RELEASE:
            # `return self.next_input`: the caller reads it (`Interpreter.returned_unordered`).
            them = "it" if len(names) == 1 else "them"
            used = f"returned at line {line} to a caller that uses {them} on {second.stream.label}"
        elif len(modes) == 1:
            used = f"{describe_access(modes.pop())} on {second.stream.label} (line {line})"
        else:
            by_mode = {
                mode: ", ".join(dict.fromkeys(f"`{h.storage.label}`" for h in hazards if h.second.mode == mode))
                for mode in ("read", "write")
            }
            used = (
                f"used on {second.stream.label} (line {line}: {by_mode['read']} read, "
                f"{by_mode['write']} written)"
            )
        message = f"{subject} and {used} with nothing ordering them"
        fix = self.fix(ctx, hazard)
        if fix is not None:
            message += f"; {fix.message}"
        related = [
            (h.first.node, f"`{h.storage.label}` {describe_access(h.first.mode)} on {h.first.stream.label}")
            for h in hazards
        ]
        data = hazard_data(hazard, ctx)
        data["tensors"] = names
        return ctx.diagnostic(self, second.node, message, related, fix, data)

    def fix(self, ctx: RuleContext, hazard: Hazard) -> Optional[Fix]:
        first, second = hazard.first, hazard.second
        if second.op.iteration or first.op.index > second.op.index and first.op.kind != OpKind.ENTRY:
            return None
        current = current_stream_call(ctx)
        if current is None:
            return None
        if first.stream.is_default and not second.stream.is_default:
            block = enclosing_with(ctx, second.node)
            if block is None or second.op.block_stream is None:
                return None
            if second.op.block_stream.key != second.stream.key:
                return None
            waiter = block_stream_text(ctx, block)  # the block's own argument, as written
            if waiter is None:
                return None
            text = f"{waiter}.wait_stream({current})"
            return ctx.insert_before_statement(
                block, text, f"call `{text}` before the `with` block", Applicability.UNSAFE
            )
        if second.stream.is_default and not first.stream.is_default and second.op.block_stream is None:
            producer = stream_text(first.stream)
            if producer is None:
                return None
            text = f"{current}.wait_stream({producer})"
            return ctx.insert_before_statement(
                second.node, text, f"call `{text}` before line {ctx.line(second.node)}", Applicability.UNSAFE
            )
        return None
