"""SYN105 stream-created-in-loop: ``torch.cuda.Stream()`` inside a loop body.

``torch.cuda.Stream()`` hands out streams round-robin from a small per-device pool, so a stream per
iteration soon aliases earlier ones (hidden serialization, or ordering assumptions that break).
Not reported: one stream per device (the call's arguments use the loop variable), creation guarded
by a condition inside the loop (lazy creation, caches), ``ExternalStream`` (wraps a stream that
exists already), loops in ``__init__`` and loops that build a pool (the stream is stored in a
container or attribute), streams nothing uses, and streams that are idle when the next iteration
makes another (:func:`idle_when_made_again`).
"""

from __future__ import annotations

import re
from typing import Iterable

import libcst as cst

from synclint.cstwalk import names_in, walk
from synclint.diagnostics import Diagnostic
from synclint.model import Op, OpKind
from synclint.model.file_facts import parent_map
from synclint.model.host_queries import ALL_STREAM_SYNCS, dominates
from synclint.rules._common import functions
from synclint.rules.base import FixKind, Rule, RuleContext


#: Methods that store what they are given (building a pool), unlike lookups with a default.
_POOL_METHODS = frozenset({"append", "add", "insert", "put", "put_nowait"})


def _stored_into_a_pool(ctx: RuleContext, argument: cst.Arg) -> bool:
    """Is ``argument`` given to a method that stores it (``streams.append(Stream(device))``), also
    wrapped in its context first (``pool.put(torch.cuda.stream(Stream()))``)?"""
    call = ctx.positions.parent(argument)
    if type(call) is not cst.Call:
        return False
    func = call.func
    name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
    if name == "stream":
        outer = ctx.positions.parent(call)
        return type(outer) is cst.Arg and _stored_into_a_pool(ctx, outer)
    return type(func) is cst.Attribute and name in _POOL_METHODS


class _ConstructorArguments(cst.CSTVisitor):
    """The plain names handed to calls of capitalized callees (``Worker(queue, stream)``)."""

    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Call(self, call: cst.Call) -> None:
        func = call.func
        callee = func.value if type(func) is cst.Name else func.attr.value if type(func) is cst.Attribute else ""
        if callee[:1].isupper():
            self.found.update(a.value.value for a in call.args if type(a.value) is cst.Name)


def _given_to_a_constructor(body: cst.CSTNode, name: str) -> bool:
    visitor = _ConstructorArguments()
    walk(body, visitor)
    return name in visitor.found


def _counted(loop: cst.For) -> bool:
    """``for _ in range(n):``: a loop that counts, over no data."""
    call = loop.iter
    return (
        type(call) is cst.Call
        and type(call.func) is cst.Name
        and call.func.value == "range"
    )


def idle_when_made_again(ctx: RuleContext, function, first: Op) -> bool:
    """When the next iteration creates a stream at the same site, has the host seen all the work
    the previous iteration gave its stream (``torch.cuda.synchronize()``, or a blocking read after
    the current stream waited for it)? Then a stream that aliases it is idle: nothing is
    serialized behind old work, and no assumption about a fresh stream is false. This is a test
    that warms a CUDA graph up on a side stream for every configuration, as PyTorch's
    documentation shows, and checks the results before the next one. A stream only joined back
    into the current stream (``current_stream().wait_stream(s)``) is not idle: work given to a
    stream that aliases it still queues behind the old work."""
    if first.target is None:
        return False
    again = next(
        (op for op in function.ops if op.index > first.index and op.node is first.node), None
    )
    if again is None:
        return False  # walked once (deeply nested loops): not known
    made = first.target.key  # the stream, or the list a comprehension fills with streams
    work = [
        op for op in function.ops
        if first.index < op.index < again.index
        and op.on_device
        and made in (op.stream.key, op.stream.container)
    ]
    if work:
        return all(function.host_has_seen(op, again) for op in work)
    # Work the model cannot see (`with stream(Stream()): do_bench_cudagraph(fn)`): a
    # synchronization of every stream between the two creations, on every path to the second.
    parents = parent_map(ctx)
    return any(
        op.kind == OpKind.HOST_SYNC
        and op.sync_kind in ALL_STREAM_SYNCS
        and first.index < op.index < again.index
        and dominates(op.node, again.node, parents)
        for op in function.ops
    )


class StreamCreatedInLoop(Rule):
    code = "SYN105"
    name = "stream-created-in-loop"
    summary = "torch.cuda.Stream() created per loop iteration (pool aliasing, hidden serialization)"
    fix_kind = FixKind.NONE
    triggers = ("Stream",)
    #: The stream classes (``torch.cuda.Stream``, ``get_accelerator().Stream``, an import of one
    #: under another name): ``Stream`` as a whole word, not ``StreamingResponse`` or ``AsyncStream``.
    trigger_pattern = (r"Stream(?<!\wStream)(?!\w)", r"ExternalStream(?!\w)")
    #: ... created in a loop (a comprehension's ``for`` counts).
    requires_pattern = (r"for(?<!\wfor)(?!\w)", r"while(?<!\wwhile)(?!\w)")

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        seen: set[int] = set()
        for function in functions(ctx):
            for op in function.ops:
                # `in_loop` counts the function's own loops (not those of a caller it is walked from).
                if op.kind != OpKind.CREATE_STREAM or not op.in_loop or id(op.node) in seen:
                    continue
                seen.add(id(op.node))
                if op.qualname == "torch.cuda.ExternalStream" or self.per_loop_key(ctx, op.node):
                    continue
                if function.name.endswith("__init__") or self.pool_or_unused(ctx, op.node):
                    continue
                if idle_when_made_again(ctx, function, op):
                    continue
                message = (
                    f"a new stream is created on every loop iteration: `{ctx.code_for(op.node.func)}()` "
                    "hands out streams round-robin from a small fixed pool per device, so these alias "
                    "earlier streams; create the streams once, before the loop"
                )
                yield ctx.diagnostic(self, op.node, message)

    @staticmethod
    def pool_or_unused(ctx: RuleContext, call: cst.CSTNode) -> bool:
        """Loops that build a pool (the stream is stored in a container or attribute) or make a
        stream nothing uses are set-up, not per-iteration work."""
        assign = next((a for a in ctx.positions.ancestors(call) if type(a) is cst.Assign), None)
        loop = next((a for a in ctx.positions.ancestors(call) if isinstance(a, (cst.For, cst.While))), None)
        parent = ctx.positions.parent(call)
        if (
            type(parent) is cst.Arg
            and _stored_into_a_pool(ctx, parent)
            and type(loop) is cst.For
            and _counted(loop)
        ):
            return True  # `for _ in range(n): pool.append(Stream())`: a pool of n streams
        if assign is None or loop is None or type(assign.targets[0].target) is not cst.Name:
            return assign is not None and type(assign.targets[0].target) is not cst.Name
        name = assign.targets[0].target.value
        body = ctx.code_for(loop.body)
        uses = re.findall(rf"(?<![\w.]){re.escape(name)}(?!\w)", body)
        if len(uses) <= 1:
            return True  # only the assignment: never used
        stored = re.search(
            rf"\.({'|'.join(sorted(_POOL_METHODS))})\(\s*{re.escape(name)}\s*\)|=\s*{re.escape(name)}\s*$",
            body,
            re.MULTILINE,
        )
        if stored is not None:
            return True
        # `for i in range(n): s = Stream(); workers.append(Worker(queue, s))`: each object made in a
        # loop that counts gets a stream of its own, a pool of n streams held by them.
        return type(loop) is cst.For and _counted(loop) and _given_to_a_constructor(loop.body, name)

    @staticmethod
    def per_loop_key(ctx: RuleContext, call: cst.CSTNode) -> bool:
        """Creation that is conditional inside the loop, or parameterised by the loop variable."""
        arguments = set()
        if type(call) is cst.Call:
            # Only a bare loop variable as an argument (`Stream(device=index)`) means "one per device".
            arguments = {arg.value.value for arg in call.args if type(arg.value) is cst.Name}
        for ancestor in ctx.positions.ancestors(call):
            if type(ancestor) is cst.Arg and not _stored_into_a_pool(ctx, ancestor):
                return False  # an argument of another call (`d.setdefault(k, Stream())`) runs eagerly
            if isinstance(ancestor, (cst.If, cst.IfExp)):
                return True
            if isinstance(ancestor, (cst.For, cst.CompFor)):
                return bool(arguments & names_in(ancestor.target))
            if type(ancestor) is cst.While:
                return False
            if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
                return False
        return False
