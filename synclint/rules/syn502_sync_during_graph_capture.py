"""SYN502 sync-during-graph-capture: a synchronizing call while a CUDA graph is being captured.

During ``with torch.cuda.graph(g):`` (or between ``g.capture_begin()`` and ``g.capture_end()``) work
is recorded, not run: ``torch.cuda.synchronize()``, ``stream.synchronize()``, ``event.synchronize()``
and blocking device-to-host reads (``.item()``, ``.tolist()``, ``.cpu()``, ``.numpy()``,
``.to("cpu")``, ``float(t)``) are illegal there and fail the capture (``cudaErrorStreamCaptureUnsupported``
or an invalidated capture). Only calls written inside the captured region are checked; helpers
called from it are not followed.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import libcst as cst

from synclint.astscan import bound_names, has_with_call_of, uses_identifier
from synclint.cstwalk import walk
from synclint.diagnostics import Diagnostic
from synclint.model.bindings import iter_calls
from synclint.model.file_facts import import_resolver, tensor_facts
from synclint.model.tensor_facts import device_of_literal
from synclint.model.torchapi import (
    DEVICE_SYNCHRONIZE,
    GRAPH_CONTEXTS,
    capture_call,
    keyword,
    literal_bool,
)
from synclint.rules.base import Rule, RuleContext

_BLOCKING_READS = frozenset({"item", "tolist", "cpu", "numpy"})
_CONVERSIONS = frozenset({"float", "int", "bool"})
_GRAPH = frozenset({"graph"})


class SyncDuringGraphCapture(Rule):
    code = "SYN502"
    name = "sync-during-graph-capture"
    summary = "a synchronizing call inside `torch.cuda.graph(...)` capture"
    triggers = ("graph", "capture_begin")
    #: Graph contexts qualify to ``torch.cuda[.graphs].graph``: the identifier ``graph`` occurs.
    trigger_pattern = (r"graph(?<!\wgraph)(?!\w)", "capture_begin")
    #: A captured region is ``with <graph>(...):`` (the callee's last name is ``graph`` or a name
    #: bound to it: ``from torch.cuda import graph as capture``) or follows a ``capture_begin`` call.
    syntax_check = staticmethod(
        lambda tree, text: has_with_call_of(tree, bound_names(tree, text, _GRAPH))
        or ("capture_begin" in text and uses_identifier(tree, frozenset({"capture_begin"})))
    )

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        seen: set[int] = set()
        for region in self._captured_regions(ctx):
            for call in iter_calls(region):
                if id(call) in seen:
                    continue
                seen.add(id(call))
                why = self._synchronizes(ctx, call)
                if why:
                    yield ctx.diagnostic(
                        self,
                        call,
                        f"{why} during CUDA graph capture: synchronizing calls are not allowed "
                        "while a graph is captured and make the capture fail; move it before or "
                        "after the captured region",
                        data={"call": ctx.code_for(call.func)},
                    )

    def _captured_regions(self, ctx: RuleContext) -> Iterator[cst.CSTNode]:
        visitor = _CapturedRegions(import_resolver(ctx))
        walk(ctx.module, visitor)
        yield from visitor.found

    def _synchronizes(self, ctx: RuleContext, call: cst.Call) -> str | None:
        names = import_resolver(ctx)
        qualname = names.qualname(call.func)
        if qualname in DEVICE_SYNCHRONIZE:
            return f"`{ctx.code_for(call.func)}()` blocks the host"
        func = call.func
        if type(func) is cst.Attribute:
            method = func.attr.value
            if method == "synchronize" and not call.args:
                return f"`{ctx.code_for(call)}` blocks the host"
            if (
                method in _BLOCKING_READS
                and not call.args
                and not self._on_cpu(ctx, func.value, call)
            ):
                return f"`.{method}()` reads the tensor on the host"
            if method == "to" and self._to_cpu_blocking(ctx, call):
                return 'a blocking `.to("cpu")` copy'
        if type(func) is cst.Name and func.value in _CONVERSIONS and len(call.args) == 1:
            facts = tensor_facts(ctx).facts(call.args[0].value, call)
            if facts is not None and facts.device == "cuda":
                return f"`{func.value}()` of a CUDA tensor reads it on the host"
        return None

    def _on_cpu(self, ctx: RuleContext, receiver: cst.BaseExpression, at: cst.CSTNode) -> bool:
        facts = tensor_facts(ctx).facts(receiver, at)
        return facts is not None and facts.device == "cpu"

    def _to_cpu_blocking(self, ctx: RuleContext, call: cst.Call) -> bool:
        target = keyword(call, "device") or (call.args[0] if call.args else None)
        if target is None or device_of_literal(target.value, import_resolver(ctx)) != "cpu":
            return False
        non_blocking = keyword(call, "non_blocking")
        return non_blocking is None or literal_bool(non_blocking.value) is False


def _between_capture_calls(body) -> list[cst.CSTNode]:
    """Statements between ``g.capture_begin()`` and ``g.capture_end()`` in one block.

    The end may be assigned (warp's ``graph = wp.capture_end()`` returns the graph) or sit in the
    ``finally`` of a ``try`` right after the begin, where an exception must end the capture too:
    the ``try`` is captured, what follows it is not."""
    regions: list[cst.CSTNode] = []
    inside = False
    for statement in body:
        method = capture_call(statement)
        if method == "capture_begin":
            inside = True
        elif method == "capture_end":
            inside = False
        elif inside and type(statement) is cst.Try and (
            captured := _before_capture_end(statement.body.body)
        ) is not None:
            # `try: step(); graph = wp.capture_end(); replay...; except: wp.capture_end(); raise`:
            # the capture ends inside the `try`, on the path that does not raise.
            regions.extend(captured)
            for handler in statement.handlers:
                ended = _before_capture_end(handler.body.body)
                regions.extend(handler.body.body if ended is None else ended)
            inside = False
        elif inside:
            regions.append(statement)
            if _finally_ends_capture(statement):
                inside = False
    return regions


def _before_capture_end(body) -> list[cst.CSTNode] | None:
    """The statements of ``body`` before its ``capture_end`` call; None when it has none."""
    for index, statement in enumerate(body):
        if capture_call(statement) == "capture_end":
            return list(body[:index])
    return None


def _finally_ends_capture(statement: cst.CSTNode) -> bool:
    final = getattr(statement, "finalbody", None) if type(statement) is cst.Try else None
    return final is not None and any(
        capture_call(s) == "capture_end" for s in final.body.body
    )


class _CapturedRegions(cst.CSTVisitor):
    """Blocks under a graph-capture context manager, and statements between capture calls. (A
    module-level class: one made inside a method would be cyclic garbage holding the tree.)"""

    def __init__(self, names) -> None:
        self.names = names
        self.found: list[cst.CSTNode] = []

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            if (
                type(item.item) is cst.Call
                and self.names.qualname(item.item.func) in GRAPH_CONTEXTS
            ):
                self.found.append(node.body)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.found.extend(_between_capture_calls(node.body))

    def visit_Module(self, node: cst.Module) -> None:
        self.found.extend(_between_capture_calls(node.body))
