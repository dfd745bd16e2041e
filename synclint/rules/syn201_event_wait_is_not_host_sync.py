"""SYN201 event-wait-is-not-host-sync: ``event.wait()``, ``stream.wait_event(event)`` or a
collective's ``work.wait()`` used as if it blocked the host.

These calls only make a *stream* wait; the host runs on at once. The rule fires where the code after
the wait needs the host to know the work finished, before any real host synchronization:
- the host reads memory the waited-for work writes (a non-blocking device-to-host copy's result),
- the host writes memory the work may still read (refilling a pinned buffer),
- a host clock is read around that work, or ``elapsed_time`` is asked of it;
or where nothing after the wait can be ordered by it (the wait comes last in a local side stream's
block, after the work it was meant to order). A blocking read after the wait (``.item()``) is
correct and not flagged; neither is a wait followed by work on the waiting stream.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

import libcst as cst

from synclint.diagnostics import Applicability, Diagnostic
from synclint.model import FunctionModel, Op, OpKind
from synclint.model.timeline import ordered
from synclint.model.file_facts import parent_map
from synclint.model.host_queries import DEVICE_WORK, record_seen, records_of, unseen_cuda_work
from synclint.rules._common import (
    ELAPSED_TIME_CALL,
    NON_BLOCKING_PATTERN,
    functions,
    is_identifier_path,
    may_copy_non_blocking,
    method_pattern,
)
from synclint.rules._intervals import Subtractions, interval_starts, measures_submission
from synclint.rules.base import FixKind, Rule, RuleContext
from synclint.rules.syn301_non_blocking_d2h_read_before_sync import host_destination, reads_values

WAITS = (OpKind.WAIT_EVENT, OpKind.WORK_WAIT)
#: Signs, other than a non-blocking copy, that code after a wait needs the host to know the work
#: finished (or that a wait may order nothing: a created stream).
_HOST_NEEDS = (
    "pin_memory",
    ELAPSED_TIME_CALL,
    r"time(?<!\wtime)(?!\w)",
    r"timeit(?<!\wtimeit)(?!\w)",
    r"Stream(?!\w)",
)
_HOST_NEED = re.compile("|".join(_HOST_NEEDS))


def _waited_for(wait: Op, access) -> bool:
    """Could the wait's event stand for ``access``'s work? Yes when its recording is unknown, or
    one of its recordings follows that work on its stream or on one that waited for it. An event
    recorded on another stream that never waited (an upload stream's event, with a download still
    in flight) has nothing to do with it: ``synchronize()`` on it would not help either, and the
    unfinished work is another rule's finding (SYN301)."""
    if wait.kind != OpKind.WAIT_EVENT or not wait.recorded_by:
        return True
    return any(ordered(access.op, record.vc, record.stream) for record in wait.recorded_by)


class EventWaitIsNotHostSync(Rule):
    code = "SYN201"
    name = "event-wait-is-not-host-sync"
    summary = "`Event.wait()`, `Stream.wait_event()` or `Work.wait()` used where the host needs the work finished"
    fix_kind = FixKind.UNSAFE
    triggers = ("wait",)
    #: ``event.wait()``, ``stream.wait_event(e)``, ``work.wait()``: a method, never a bare name.
    trigger_pattern = method_pattern("wait", "wait_event")
    #: What shows the host needed the work: a non-blocking copy or a pinned buffer, a host clock,
    #: ``elapsed_time``; or, for a wait that orders nothing, a created stream. The pattern lets
    #: through any ``True`` after a comma; the text check then asks for a copy the model takes for
    #: non-blocking (:func:`~synclint.rules._common.may_copy_non_blocking`).
    requires_pattern = (*NON_BLOCKING_PATTERN, *_HOST_NEEDS)
    text_check = staticmethod(
        lambda text: _HOST_NEED.search(text) is not None or may_copy_non_blocking(text)
    )

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        reported: set[int] = set()
        parents = parent_map(ctx)
        subtractions: dict = {}  # id(function) -> its `Subtractions`, made when first needed
        for function in functions(ctx):
            waits = function.ops_of(*WAITS)
            if not waits:
                continue
            # Only these later ops can show that the host needed the work: scan them, not all ops.
            needs = [
                op
                for op in function.ops
                if (op.kind in (OpKind.HOST_READ, OpKind.HOST_WRITE) and op.pending)
                or op.kind in (OpKind.HOST_CLOCK, OpKind.ELAPSED_TIME)
            ]
            own = {id(op) for op in function.ops}
            for wait in waits:
                if id(wait.node) in reported:
                    continue
                need = self._host_need(ctx, function, wait, parents, needs, own, subtractions)
                if need is not None:
                    reported.add(id(wait.node))
                    yield self._report_need(ctx, wait, *need)
                elif self._orders_nothing(function, wait):
                    reported.add(id(wait.node))
                    yield self._report_useless(ctx, wait)

    @staticmethod
    def _provable(ctx: RuleContext, later: Op, access) -> bool:
        """Host memory the device provably touches: the destination of a copy to the host (read),
        or a pinned buffer (write)."""
        if later.kind == OpKind.HOST_WRITE:
            return access.storage.pinned is True
        return (
            access.op.site.copy is not None
            and host_destination(ctx, access.op.site.node)
            and reads_values(ctx, later.site.node, access.storage.label)
        )

    def _host_need(
        self,
        ctx: RuleContext,
        function: FunctionModel,
        wait: Op,
        parents,
        needs: list[Op],
        own: set[int],
        subtractions: dict,
    ) -> Optional[tuple[Op, str]]:
        for later in needs:
            if later.index <= wait.index:
                continue
            if later.kind in (OpKind.HOST_READ, OpKind.HOST_WRITE):
                pending = [
                    a
                    for a in later.pending
                    if a.op.index < wait.index
                    and _waited_for(wait, a)
                    and self._provable(ctx, later, a)
                ]
                if pending:
                    label = pending[0].storage.label
                    verb = "reads" if later.kind == OpKind.HOST_READ else "writes"
                    return later, f"the host {verb} `{label}`"
            elif later.kind == OpKind.HOST_CLOCK:
                start = self._interval_start(function, wait, later, parents, subtractions)
                if start is not None and [
                    w
                    for w in unseen_cuda_work(function, start.index, later, parents)
                    if w.index < wait.index
                ]:
                    return later, f"`{later.clock}()` is read"
            elif later.kind == OpKind.ELAPSED_TIME and len(later.events) == 2:
                waited = wait.event.key if wait.event is not None else None
                if later.events[1].key == waited:
                    records = [r for r in records_of(later, waited) if id(r) in own]
                    if records and not any(
                        record_seen(function, r, later, parents) for r in records
                    ):
                        return later, "`elapsed_time` is asked"
        return None

    def _interval_start(
        self, function: FunctionModel, wait: Op, end: Op, parents, subtractions: dict
    ) -> Optional[Op]:
        """The reading before ``wait`` that the delta ending at ``end`` starts from, paired as
        SYN205 pairs them (:mod:`synclint.rules._intervals`); None when ``end`` ends no interval
        that spans the wait, when it is read in a helper walked at its call site, or when its delta
        is named for the submission (``submit_ns``)."""
        if end.inlined or measures_submission(end.node, parents):
            return None  # a helper's readings belong to the helper's own deltas (as in SYN205)
        found = subtractions.get(id(function))
        if found is None:  # one walk per function, however many waits and readings it has
            found = subtractions[id(function)] = Subtractions.of(function.node)
        clocks = [c for c in function.ops_of(OpKind.HOST_CLOCK) if c.index < end.index and not c.inlined]
        starts, since = interval_starts(end, clocks, parents, found)
        if since is not None:
            # `now() - t0`: the delta starts at the last reading bound to `t0` before `end`. In a
            # loop's next pass that is read again after the wait (`t0 = perf_counter()` at the
            # top of the body), and the delta spans only what comes after it.
            return starts[-1] if starts and starts[-1].index < wait.index else None
        starts = [c for c in starts if c.index < wait.index]
        return starts[-1] if starts else None

    def _report_need(self, ctx: RuleContext, wait: Op, later: Op, what: str) -> Diagnostic:
        call = wait.node
        kind = "`work.wait()`" if wait.kind == OpKind.WORK_WAIT else f"`{ctx.code_for(call)}`"
        message = (
            f"{kind} only makes a stream wait, the host does not block: {what} on line "
            f"{ctx.line(later.site.node)} before the work has finished; synchronize the host instead"
        )
        return ctx.diagnostic(
            self,
            call,
            message,
            related=[(later.site.node, "the host needs the work finished here")],
            fix=self._fix(ctx, wait),
            data={"wait": ctx.code_for(call), "need": ctx.line(later.site.node)},
        )

    def _fix(self, ctx: RuleContext, wait: Op):
        """``ev.wait()`` / ``s.wait_event(ev)`` as a statement -> ``ev.synchronize()``."""
        call = wait.node
        if wait.kind != OpKind.WAIT_EVENT or type(call) is not cst.Call:
            return None
        statement = ctx.positions.statement(call)
        if not (
            type(statement) is cst.SimpleStatementLine
            and len(statement.body) == 1
            and type(statement.body[0]) is cst.Expr
            and statement.body[0].value is call
        ):
            return None
        func = call.func
        if type(func) is not cst.Attribute:
            return None
        if func.attr.value == "wait":
            event = func.value
        elif func.attr.value == "wait_event" and call.args:
            event = call.args[0].value
        else:
            return None
        text = ctx.code_for(event)
        if not is_identifier_path(text):
            return None
        return ctx.replace(
            call,
            f"{text}.synchronize()",
            f"Block the host: `{text}.synchronize()`",
            Applicability.UNSAFE,
        )

    # -- nothing after the wait can be ordered by it --------------------------------------------

    def _orders_nothing(self, function: FunctionModel, wait: Op) -> bool:
        stream = wait.stream
        if wait.kind != OpKind.WAIT_EVENT or wait.in_loop:
            return False
        if stream.is_default or stream.origin != "created":
            return False  # the caller's stream, or one used elsewhere: later work may follow
        if wait.block_stream is None or wait.block_stream.key != stream.key:
            return False
        on_stream = self._stream_ops(function).get(stream.key, ())
        before = any(
            op.index < wait.index and op.kind in DEVICE_WORK and op.seq for op in on_stream
        )
        after = any(op.index > wait.index for op in on_stream)
        return before and not after

    def _stream_ops(self, function: FunctionModel) -> dict[str, list[Op]]:
        """Per stream: its device work, event records and stream waits (built once per function)."""
        cache = self.__dict__.setdefault("_stream_ops_cache", {})
        found = cache.get(id(function))
        if found is None:
            found = cache[id(function)] = {}
            kinds = (*DEVICE_WORK, OpKind.RECORD_EVENT, OpKind.WAIT_STREAM)
            for op in function.ops:
                if op.kind in kinds:
                    found.setdefault(op.stream.key, []).append(op)
        return found

    def _report_useless(self, ctx: RuleContext, wait: Op) -> Diagnostic:
        message = (
            f"`{ctx.code_for(wait.node)}` comes after the work on {wait.stream.label} it should "
            "order, and nothing is enqueued on that stream after it: the wait orders nothing; move "
            "it before the work"
        )
        return ctx.diagnostic(self, wait.node, message, data={"wait": ctx.code_for(wait.node)})
