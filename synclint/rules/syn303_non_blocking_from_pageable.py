"""SYN303 non-blocking-from-pageable: a ``non_blocking=True`` host-to-device copy from memory that is
provably not pinned.

From pageable memory CUDA first stages the data through a pinned bounce buffer, synchronously: the
copy returns only when it is done, nothing overlaps, and the ``non_blocking=True`` promises a speed-up
that never happens (in training loops, the missing ``pin_memory=True`` on the DataLoader). Reported
only when the source is known to be pageable: a torch factory without ``pin_memory=True``,
``torch.from_numpy``, ``.cpu()``, or a batch from a ``DataLoader`` without ``pin_memory=True`` (and
without a custom ``collate_fn``). Unknown sources are never reported.
"""

from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from synclint.diagnostics import Diagnostic
from synclint.model import OpKind
from synclint.model.bindings import ElementOf, Unknown
from synclint.model.file_facts import bindings, import_resolver, tensor_facts
from synclint.model.torchapi import keyword
from synclint.rules._common import (
    NON_BLOCKING_PATTERN,
    NON_BLOCKING_TRIGGERS,
    functions,
    may_copy_non_blocking,
    transfer_destination,
)
from synclint.rules.base import Rule, RuleContext

_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})


class NonBlockingFromPageable(Rule):
    code = "SYN303"
    name = "non-blocking-from-pageable"
    summary = "`non_blocking=True` host-to-device copy from memory that is provably not pinned"
    triggers = NON_BLOCKING_TRIGGERS
    trigger_pattern = NON_BLOCKING_PATTERN
    text_check = staticmethod(may_copy_non_blocking)

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        reported: set[int] = set()
        for function in functions(ctx):
            for op in function.ops_of(OpKind.COPY):
                copy = op.copy
                if copy is None or not copy.non_blocking or id(op.node) in reported:
                    continue
                if not _to_gpu(ctx, op.node):
                    continue  # only copies known to go to a GPU (``.to(device)`` may be the CPU)
                source = _source_expression(op.node)
                if source is None:
                    continue
                why = self._pageable(ctx, op, source)
                if why:
                    reported.add(id(op.node))
                    yield ctx.diagnostic(
                        self,
                        op.node,
                        f"`{ctx.code_for(source)}` is pageable memory ({why}): a `non_blocking=True` "
                        "copy from it is staged synchronously and overlaps nothing; pin it "
                        "(`pin_memory=True` / `.pin_memory()`) or drop `non_blocking`",
                        data={"tensor": ctx.code_for(source), "why": why},
                    )

    def _pageable(self, ctx: RuleContext, op, source: cst.BaseExpression) -> Optional[str]:
        src = op.copy.src
        if src is not None and src.pinned is True:
            return None
        # The model tracks pinned-ness where it sees the allocation; tensor facts (a helper over
        # the same bindings) also follow ``self.`` buffers from ``__init__`` and ``.cpu()`` results.
        facts = tensor_facts(ctx).facts(source, op.node)
        if facts is not None and facts.device == "cpu" and facts.pinned is False:
            return f"made by {facts.how}"
        loader = self._loader_of(ctx, source, op.node)
        if loader is not None:
            return "a batch from a DataLoader without `pin_memory=True`"
        return None

    def _loader_of(self, ctx: RuleContext, source: cst.BaseExpression, at: cst.CSTNode):
        """The DataLoader call ``source`` is (part of) a batch of, when it does not pin."""
        while type(source) is cst.Subscript:
            source = source.value
        if type(source) is not cst.Name:
            return None
        try:
            values = bindings(ctx).lookup(source, at)
        except Unknown:
            return None
        values = [v for v in values or () if not _contains(v, at)]
        if not values or not all(isinstance(v, ElementOf) for v in values):
            return None
        loaders = []
        for value in values:
            container = value.container
            while isinstance(container, ElementOf):
                container = container.container
            loader = self._pageable_loader(ctx, container, at)
            if loader is None:
                return None
            loaders.append(loader)
        return loaders[0]

    def _pageable_loader(self, ctx: RuleContext, expr, at) -> Optional[cst.Call]:
        if (
            type(expr) is cst.Call
            and type(expr.func) is cst.Name
            and expr.func.value == "enumerate"
            and expr.args
        ):
            expr = expr.args[0].value
        try:
            leaves = bindings(ctx).origins(expr, at)
        except Unknown:
            return None
        if len(leaves) != 1 or type(leaves[0]) is not cst.Call:
            return None
        call = leaves[0]
        if import_resolver(ctx).qualname(call.func) not in _LOADERS:
            return None
        if any(a.star for a in call.args) or keyword(call, "collate_fn") is not None:
            return None
        batch_size = keyword(call, "batch_size")
        if (
            batch_size is not None
            and type(batch_size.value) is cst.Name
            and batch_size.value.value == "None"
        ):
            return None
        pin = keyword(call, "pin_memory")
        if pin is None or (type(pin.value) is cst.Name and pin.value.value == "False"):
            return call
        return None


def _to_gpu(ctx: RuleContext, node: cst.CSTNode) -> bool:
    """``.cuda(...)``, ``.to(<a GPU device>)``, or ``gpu.copy_(...)`` into a tensor known to be on a GPU."""
    return transfer_destination(ctx, node) == "cuda"


def _source_expression(node: cst.CSTNode) -> Optional[cst.BaseExpression]:
    if type(node) is not cst.Call or type(node.func) is not cst.Attribute:
        return None
    method = node.func.attr.value
    if method in ("to", "cuda"):
        return node.func.value
    if method == "copy_" and node.args:
        return node.args[0].value
    return None


def _contains(value, node: cst.CSTNode) -> bool:
    if not isinstance(value, cst.CSTNode):
        return False
    if value is node:
        return True
    return any(_contains(child, node) for child in value.children)
