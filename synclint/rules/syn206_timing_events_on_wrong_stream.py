"""SYN206 timing-events-on-wrong-stream: the events around timed work are recorded on one stream
while the work runs on another.

``start.record()`` / ``end.record()`` capture *their* stream's progress. When the timed work is
enqueued on a different stream and the recording stream never waits for it, ``elapsed_time`` measures
the gap between two markers on an idle stream (near zero), not the work. Reported at the end
``record``; work on streams of uncertain identity (parameters) is not judged, since it may be the
recording stream.
"""

from __future__ import annotations

from typing import Iterable, Optional

from synclint.diagnostics import Diagnostic
from synclint.model import FunctionModel, Op, OpKind
from synclint.model.host_queries import DEVICE_WORK, records_of
from synclint.rules._common import ELAPSED_TIME_CALL, functions
from synclint.rules.base import Rule, RuleContext


def _single(records: list[Op]) -> Optional[Op]:
    nodes = {id(r.node) for r in records}
    return records[-1] if len(nodes) == 1 else None


class TimingEventsOnWrongStream(Rule):
    code = "SYN206"
    name = "timing-events-on-wrong-stream"
    summary = "timing events recorded on a different stream than the work they time"
    triggers = ("elapsed_time",)
    trigger_pattern = ELAPSED_TIME_CALL

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        reported: set[int] = set()
        for function in functions(ctx):
            own = {id(o) for o in function.ops}
            for elapsed in function.ops_of(OpKind.ELAPSED_TIME):
                if len(elapsed.events) != 2:
                    continue
                start = _single(records_of(elapsed, elapsed.events[0].key))
                end = _single(records_of(elapsed, elapsed.events[1].key))
                if start is None or end is None or start.index >= end.index:
                    continue
                if id(start) not in own or id(end) not in own:
                    continue  # recorded in other methods: the timeline here does not show the work
                if id(end.node) in reported:
                    continue
                work = self._misplaced_work(function, start, end)
                if work:
                    reported.add(id(end.node))
                    yield self._report(ctx, start, end, work)

    def _misplaced_work(self, function: FunctionModel, start: Op, end: Op) -> list[Op]:
        if start.stream.key != end.stream.key:
            return []
        timed = [
            op
            for op in function.ops
            if start.index < op.index < end.index and op.kind in DEVICE_WORK and op.seq
        ]
        if not timed or any(op.stream.key == end.stream.key for op in timed):
            return []
        if not all(end.stream.distinct_from(op.stream) for op in timed):
            return []
        # Work the end marker waits for (wait_stream / wait_event) is inside the timing.
        unordered = [op for op in timed if end.vc.get(op.stream.key, 0) < op.seq]
        return unordered

    def _report(self, ctx: RuleContext, start: Op, end: Op, work: list[Op]) -> Diagnostic:
        where = work[0].stream.label
        message = (
            f"the timing events are recorded on {end.stream.label} (lines {ctx.line(start.node)} "
            f"and {ctx.line(end.node)}) but the work they time runs on {where} (line "
            f"{ctx.line(work[0].site.node)}): `elapsed_time` measures an idle stream; record both "
            f"events on {where}"
        )
        return ctx.diagnostic(
            self,
            end.node,
            message,
            related=[
                (start.node, "start event recorded here"),
                (work[0].site.node, f"timed work on {where}"),
            ],
            data={"recorded_on": end.stream.short, "work_on": work[0].stream.short},
        )
