"""SYN301 non-blocking-d2h-read-before-sync: the host reads the result of a ``non_blocking=True``
device-to-host copy before synchronizing with it.

``x.to("cpu", non_blocking=True)`` and ``pinned.copy_(gpu, non_blocking=True)`` return at once; the
destination is filled later by the stream. Reading it on the host first (``.tolist()``, ``.numpy()``,
``float(t)``, indexing values, printing, arithmetic on the CPU tensor) reads zeros or stale values.
Views and metadata are not reads, and feeding the tensor to later work on the same stream is ordered;
the model's ``pending`` accesses of each host read say exactly which copies are still unsynchronized.
"""

from __future__ import annotations

from typing import Iterable

from synclint.diagnostics import Applicability, Diagnostic
from synclint.model import OpKind
from synclint.rules._common import functions, stream_text
from synclint.rules.base import FixKind, Rule, RuleContext
from synclint.rules.syn205_host_timer_without_sync import insert_sync


def in_flight_copies(op, role: str):
    """Pending accesses of ``op`` made by a non-blocking copy, where the storage is the copy's
    ``role`` ("dst": the copy writes it; "src": the copy reads it)."""
    found = []
    for access in op.pending:
        site = access.op.site
        copy = site.copy
        if copy is None or not copy.non_blocking:
            continue
        storage = copy.dst if role == "dst" else copy.src
        if storage is not None and storage.id == access.storage.id:
            found.append(access)
    return found


def sync_text(stream) -> str:
    text = stream_text(stream)
    return f"{text}.synchronize()" if text else "torch.cuda.synchronize()"


class NonBlockingD2HReadBeforeSync(Rule):
    code = "SYN301"
    name = "non-blocking-d2h-read-before-sync"
    summary = "the host reads the result of a `non_blocking=True` device-to-host copy before synchronizing it"
    fix_kind = FixKind.UNSAFE
    triggers = ("non_blocking",)

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        reported: set[int] = set()
        for function in functions(ctx):
            for read in function.ops_of(OpKind.HOST_READ):
                if id(read.site.node) in reported:
                    continue
                copies = [a for a in in_flight_copies(read, "dst") if a.storage.on_host]
                if not copies:
                    continue
                reported.add(id(read.site.node))
                yield self._report(ctx, read, copies[0])

    def _report(self, ctx: RuleContext, read, access) -> Diagnostic:
        copy_op = access.op.site
        label = access.storage.label
        fix_text = sync_text(copy_op.stream)
        message = (
            f"`{label}` is read on the host while the `non_blocking=True` copy into it on "
            f"{copy_op.stream.label} (line {ctx.line(copy_op.node)}) may still be running: the host "
            f"may see zeros or stale values; call `{fix_text}` (or synchronize an event recorded "
            "after the copy) before reading it"
        )
        return ctx.diagnostic(
            self, read.site.node, message,
            related=[(copy_op.node, "non-blocking device-to-host copy")],
            fix=insert_sync(ctx, read.site.node, fix_text, Applicability.UNSAFE),
            data={
                "tensor": label,
                "hazard": "host-read-before-copy",
                "first": {"stream": copy_op.stream.short, "line": ctx.line(copy_op.node), "access": "write"},
                "second": {"stream": "host", "line": ctx.line(read.site.node), "access": "read"},
            },
        )
