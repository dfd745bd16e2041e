"""SYN304 pinned-source-mutated-in-flight: the host writes a pinned buffer while a
``non_blocking=True`` copy from it may still be running.

A non-blocking host-to-device copy from pinned memory is a DMA the GPU performs later; until it has
run, the host must not refill the buffer (the classic double-buffered loader or token stager bug:
the next batch overwrites the one still being uploaded). From pageable memory the copy is staged
before ``copy_`` returns, so only buffers known to be pinned are reported.
"""

from __future__ import annotations

from typing import Iterable

from synclint.diagnostics import Applicability, Diagnostic
from synclint.model import OpKind
from synclint.rules._common import (
    NON_BLOCKING_PATTERN,
    NON_BLOCKING_TRIGGERS,
    copy_vs_host_data,
    functions,
    may_copy_non_blocking,
)
from synclint.rules.base import FixKind, Rule, RuleContext
from synclint.rules.syn205_host_timer_without_sync import insert_sync
from synclint.rules.syn301_non_blocking_d2h_read_before_sync import in_flight_copies, sync_text


class PinnedSourceMutatedInFlight(Rule):
    code = "SYN304"
    name = "pinned-source-mutated-in-flight"
    summary = "the host writes a pinned buffer while a `non_blocking=True` copy from it may still be running"
    fix_kind = FixKind.UNSAFE
    triggers = NON_BLOCKING_TRIGGERS
    trigger_pattern = NON_BLOCKING_PATTERN
    text_check = staticmethod(may_copy_non_blocking)

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        """One finding per copy a function's host writes race with, at the first such write; the
        later ones are named in it. A staging buffer refilled field by field (Megatron's
        inference bookkeeping writes 49 lines into views of one pinned buffer) is one bug, fixed
        by one synchronization before the first write."""
        reported: set[int] = set()
        for function in functions(ctx):
            groups: dict[tuple, list] = {}
            for write in function.ops_of(OpKind.HOST_WRITE):
                if id(write.site.node) in reported:
                    continue
                # A copy from the buffer; or, as the model keeps only a stream's newest access, a
                # copy into it (`h.copy_(d, non_blocking=True)` after the upload from `h`, on the
                # same stream), which is as much in flight.
                for role in ("src", "dst"):
                    copies = [a for a in in_flight_copies(write, role) if a.storage.pinned is True]
                    if copies:
                        reported.add(id(write.site.node))
                        key = (id(copies[0].op.site), role)
                        groups.setdefault(key, [write, copies[0], role, []])[3].append(write)
                        break
            for write, access, role, writes in groups.values():
                yield self._report(ctx, write, access, role, writes[1:])

    def _report(self, ctx: RuleContext, write, access, role: str, later=()) -> Diagnostic:
        copy_op = access.op.site
        label = access.storage.label
        fix_text = sync_text(copy_op.stream)
        where = f"{copy_op.stream.label} (line {ctx.line(copy_op.node)})"
        if role == "src":
            race = (
                f"the `non_blocking=True` copy from it on {where} may still be reading it: the "
                "device may receive the new data or a mix"
            )
        else:
            race = (
                f"the `non_blocking=True` copy into it on {where} may still be writing it: the "
                "copy may land after the host's write and replace it"
            )
        message = (
            f"the host writes pinned `{label}` while {race}; call `{fix_text}` (or synchronize an "
            "event recorded after the copy) before refilling it"
        )
        later_lines = sorted({ctx.line(w.site.node) for w in later} - {ctx.line(write.site.node)})
        if later_lines:
            shown = ", ".join(str(n) for n in later_lines[:5]) + (", ..." if len(later_lines) > 5 else "")
            message += (
                f" ({len(later_lines)} more host write{'s' if len(later_lines) > 1 else ''} in this "
                f"function race{'' if len(later_lines) > 1 else 's'} with the same copy: "
                f"line{'s' if len(later_lines) > 1 else ''} {shown})"
            )
        return ctx.diagnostic(
            self,
            write.site.node,
            message,
            related=[(copy_op.node, f"non-blocking copy {'from' if role == 'src' else 'into'} the pinned buffer")]
            + [(w.site.node, "another host write racing with the same copy") for w in later],
            fix=insert_sync(ctx, write.site.node, fix_text, Applicability.UNSAFE),
            data=copy_vs_host_data(
                ctx, label, "host-write-during-copy", copy_op, "read" if role == "src" else "write",
                write.site.node, "write",
            ),
        )
