"""SYN204 wait-on-unrecorded-event: waiting on an event no path has recorded yet.

``s.wait_event(e)`` / ``e.wait()`` / ``e.synchronize()`` on an event that was never recorded returns at
once: the wait orders nothing. It usually means the ``record()`` is missing, or comes after the wait
(the producer records only once the consumer has already "waited"). Only events created in the same
function are judged: an event in an attribute or a parameter may have been recorded elsewhere. A
wait in a loop that the previous iteration's ``record()`` reaches is the normal pipelining pattern and
is not flagged.
"""

from __future__ import annotations

from typing import Iterable

from synclint.diagnostics import Diagnostic
from synclint.model import OpKind
from synclint.rules._common import functions, method_pattern
from synclint.rules.base import Rule, RuleContext


class WaitOnUnrecordedEvent(Rule):
    code = "SYN204"
    name = "wait-on-unrecorded-event"
    summary = "waiting on an event that has not been recorded on this path, or recorded only after the wait"
    triggers = ("wait", "synchronize")
    #: ``s.wait_event(e)``, ``e.wait()``, ``e.synchronize()``: methods, never bare names.
    trigger_pattern = method_pattern("wait", "wait_event", "synchronize")
    #: Only events created in the same function are judged.
    requires_pattern = r"Event"

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        for function in functions(ctx):
            created = {op.event.key: op for op in function.ops_of(OpKind.CREATE_EVENT) if op.event}
            waits: dict[int, list] = {}
            for op in function.ops:
                is_wait = op.kind == OpKind.WAIT_EVENT or (
                    op.kind == OpKind.HOST_SYNC and op.sync_kind == "event"
                )
                if is_wait and op.event is not None and op.event.key in created:
                    waits.setdefault(id(op.node), []).append(op)
            records: dict[str, list] = {}
            for r in function.ops_of(OpKind.RECORD_EVENT):
                if r.event is not None:
                    records.setdefault(r.event.key, []).append(r)
            for ops in waits.values():
                if any(op.recorded_by for op in ops):
                    continue
                wait = ops[0]
                later = [r for r in records.get(wait.event.key, ()) if r.index > wait.index]
                yield self._report(ctx, wait, created[wait.event.key], later[0] if later else None)

    def _report(self, ctx: RuleContext, wait, creation, record) -> Diagnostic:
        name = wait.event.label
        verb = "synchronizes on" if wait.kind == OpKind.HOST_SYNC else "waits on"
        if record is not None:
            message = (
                f"`{ctx.code_for(wait.node)}` {verb} {name} before it is recorded (line "
                f"{ctx.line(record.node)}): waiting on an unrecorded event is a no-op, so nothing is "
                "ordered; record the event before waiting on it"
            )
            related = [(record.node, "recorded only here, after the wait")]
        else:
            message = (
                f"`{ctx.code_for(wait.node)}` {verb} {name}, which is never recorded before this "
                "point: the wait is a no-op and orders nothing; call `.record()` on the producing "
                "stream first"
            )
            related = [(creation.node, "event created here")]
        return ctx.diagnostic(
            self,
            wait.node,
            message,
            related=related,
            data={"event": name, "recorded_after": bool(record)},
        )
