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

import libcst as cst

from synclint.diagnostics import Applicability, Diagnostic
from synclint.model import OpKind
from synclint.model.file_facts import import_resolver
from synclint.rules._common import (
    NON_BLOCKING_PATTERN,
    NON_BLOCKING_TRIGGERS,
    copy_vs_host_data,
    functions,
    may_copy_non_blocking,
    stream_text,
    transfer_destination,
)
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


def host_destination(ctx: RuleContext, copy_node) -> bool:
    """Is the copy's destination provably host memory?"""
    return transfer_destination(ctx, copy_node) == "cpu"


#: Builtins that read a tensor's values on the host when handed one.
_READING_BUILTINS = frozenset(
    {
        "print",
        "float",
        "int",
        "bool",
        "str",
        "repr",
        "format",
        "complex",
        "list",
        "tuple",
        "sum",
        "max",
        "min",
        "sorted",
        "any",
        "all",
    }
)


#: Tensor methods that compute from (read) the tensor's values.
_TENSOR_READS = frozenset(
    "item tolist numpy sum mean max min topk argmax argmin any all eq ne gt lt ge le nonzero "
    "unique sort cumsum prod std var norm abs add mul sub div clone equal allclose isnan isinf "
    "count_nonzero bincount".split()
)


def reads_values(ctx: RuleContext, node, label: str) -> bool:
    """Does the host-read ``node`` certainly read the tensor's values now? A tensor method on it
    (``.item()``, ``.tolist()``, ``.sum()``), a reading builtin (``print``, ``float``), a torch
    function, indexing, arithmetic or a comparison do. Handing it to a function or constructor of
    this project does not say when (or whether) the values are read: maybe after a sync."""
    if type(node) is not cst.Call:
        return True
    func = node.func
    if type(func) is cst.Name and func.value in _READING_BUILTINS:
        return True
    qualname = import_resolver(ctx).qualname(func) or ""
    if qualname.startswith("torch.") or qualname.startswith("numpy."):
        return True
    if type(func) is cst.Attribute:
        if func.attr.value in _TENSOR_READS:
            return True
        receiver = ctx.code_for(func.value)
        return receiver == label or receiver.startswith((label + "[", label + ".", label + "("))
    return False


def sync_text(stream) -> str:
    text = stream_text(stream)
    return f"{text}.synchronize()" if text else "torch.cuda.synchronize()"


#: Methods that return the tensor itself when it already has that dtype/layout (no data read then).
_MAYBE_NO_OP = frozenset(
    {"float", "half", "double", "bfloat16", "int", "long", "bool", "to", "type", "contiguous"}
)


def _maybe_no_op_conversion(node) -> bool:
    """``t.to("cpu", non_blocking=True).float()`` reads ``t`` on the host only if the dtype changes:
    unknowable here, so not reported."""
    return (
        type(node) is cst.Call
        and type(node.func) is cst.Attribute
        and node.func.attr.value in _MAYBE_NO_OP
    )


class NonBlockingD2HReadBeforeSync(Rule):
    code = "SYN301"
    name = "non-blocking-d2h-read-before-sync"
    summary = "the host reads the result of a `non_blocking=True` device-to-host copy before synchronizing it"
    fix_kind = FixKind.UNSAFE
    triggers = NON_BLOCKING_TRIGGERS
    trigger_pattern = NON_BLOCKING_PATTERN
    text_check = staticmethod(may_copy_non_blocking)

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        reported: set[int] = set()
        for function in functions(ctx):
            for read in function.ops_of(OpKind.HOST_READ):
                if id(read.site.node) in reported:
                    continue
                copies = [
                    a
                    for a in in_flight_copies(read, "dst")
                    if a.storage.on_host
                    and host_destination(ctx, a.op.site.node)
                    and reads_values(ctx, read.site.node, a.storage.label)
                ]
                if not copies or _maybe_no_op_conversion(read.site.node):
                    continue
                reported.add(id(read.site.node))
                yield self._report(ctx, read, copies[0])

    def _report(self, ctx: RuleContext, read, access) -> Diagnostic:
        copy_op = access.op.site
        label = access.storage.label
        if label.startswith("<"):
            node = copy_op.node
            # `dst[i][:, :n].copy_(src, non_blocking=True)`: the buffer is the copy's receiver,
            # not the whole call.
            is_copy_into = (
                type(node) is cst.Call
                and type(node.func) is cst.Attribute
                and node.func.attr.value == "copy_"
            )
            label = ctx.code_for(node.func.value if is_copy_into else node)
        fix_text = sync_text(copy_op.stream)
        message = (
            f"`{label}` is read on the host while the `non_blocking=True` copy into it on "
            f"{copy_op.stream.label} (line {ctx.line(copy_op.node)}) may still be running: the host "
            f"may see zeros or stale values; call `{fix_text}` (or synchronize an event recorded "
            "after the copy) before reading it"
        )
        return ctx.diagnostic(
            self,
            read.site.node,
            message,
            related=[(copy_op.node, "non-blocking device-to-host copy")],
            fix=insert_sync(ctx, read.site.node, fix_text, Applicability.UNSAFE),
            data=copy_vs_host_data(ctx, label, "host-read-before-copy", copy_op, "write", read.site.node, "read"),
        )
