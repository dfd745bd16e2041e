"""Expressions: what each call, method and operator means for streams, events and tensors.

:class:`ExpressionEvaluator` turns an expression into an abstract value (a stream, an event, a
storage, a namespace, ``HOST`` or ``None`` for "unknown") and emits the ops it implies through the
:class:`~synclint.model.interpreter.Interpreter`. Unknown calls neither synchronize nor switch
streams; they read their tensor arguments on the current stream and, when given tensors, return a
new tensor made there.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

import libcst as cst

from synclint.model import api
from synclint.model.inlining import can_inline, inline_call
from synclint.model.resolver import canonical, dotted
from synclint.model.state import vc_join
from synclint.model.timeline import CopyInfo, Op, OpKind
from synclint.model.values import (
    HOST,
    HOST_NAME,
    Alternatives,
    EventValue,
    HostValue,
    ModuleRef,
    Storage,
    StreamList,
    StreamValue,
    TupleValue,
    WorkValue,
    storages_of,
)

if TYPE_CHECKING:  # pragma: no cover
    from synclint.model.interpreter import Interpreter

_CONSTANTS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)
_COMMON_TENSOR_METHODS = {
    "sum", "mean", "max", "min", "norm", "abs", "clone", "add", "mul", "sub", "div", "matmul",
    "bmm", "mm", "softmax", "log_softmax", "exp", "log", "sqrt", "pow", "argmax", "argmin", "topk",
    "gather", "scatter", "index_select", "masked_fill", "sigmoid", "tanh", "relu", "cumsum", "prod",
    "float", "half", "double", "long", "int", "bfloat16", "std", "var", "sort", "where", "clamp",
    "fill_", "zero_", "copy_", "add_", "mul_", "div_", "sub_", "normal_", "uniform_", "neg",
    "reciprocal", "any", "all", "eq", "ne", "lt", "gt", "le", "ge", "masked_select", "nonzero",
    "repeat", "index_add_", "index_copy_", "scatter_", "scatter_add_", "masked_fill_", "clamp_",
    "sign", "round", "floor", "ceil", "square", "amax", "amin", "logsumexp", "baddbmm", "addmm",
}


#: Methods only tensors have: a receiver of unknown origin that gets one is taken to be a tensor.
_TENSOR_ONLY_METHODS = {
    "cuda", "to", "pin_memory", "record_stream", "copy_", "item", "tolist", "numpy", "data_ptr",
    "is_pinned", "non_blocking", "narrow", "view", "contiguous", "untyped_storage", "element_size",
}


_SYNC_NAME = re.compile(r"(^|_)(sync|synchronize|synchronise)(_|$)", re.IGNORECASE)
_STREAM_ONLY_METHODS = {"wait_stream", "wait_event", "record_event"}


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [arg.value for arg in call.args if arg.keyword is None and not arg.star]


def _is_true(node: Optional[cst.BaseExpression]) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _literal_bool(node: Optional[cst.BaseExpression]) -> Optional[bool]:
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return node.value == "True"
    return None


def _string(node: Optional[cst.BaseExpression]) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


class ExpressionEvaluator:
    def __init__(self, interp: "Interpreter") -> None:
        self.i = interp
        self.index_depth = 0
        #: The whole right-hand side of the assignment or return being evaluated.
        self.stored_node: Optional[cst.CSTNode] = None

    # -- helpers -------------------------------------------------------------------------------

    @property
    def state(self):
        return self.i.state

    def mark_tensor(self, value) -> None:
        for item in value if isinstance(value, list) else [value]:
            for storage in storages_of(item):
                storage.tensor = True

    def tensor_op(
        self,
        node: cst.CSTNode,
        reads=(),
        writes=(),
        inplace: bool = False,
        result_label: Optional[str] = None,
        device: Optional[str] = "same",
        evidence: bool = True,
        mark_arguments: bool = True,
    ) -> Optional[Storage]:
        """Enqueue tensor work on the current stream (or run it on the host for CPU tensors)."""
        reads = list(reads)
        writes = list(writes)
        result = None
        if result_label is not None:
            if device == "same":
                devices = {s.device for s in reads + writes}
                device = devices.pop() if len(devices) == 1 else (None if None in devices else "cuda")
            result = self.i.new_storage(
                result_label,
                node,
                alloc_stream=self.state.current,
                device=device,
                tensor=evidence,
            )
            writes.append(result)
        if evidence and mark_arguments:
            for storage in reads + writes:
                storage.tensor = True
        host_reads = [s for s in reads if s.on_host]
        host_writes = [s for s in writes if s.on_host]
        dev_reads = [s for s in reads if not s.on_host]
        dev_writes = [s for s in writes if not s.on_host]
        if host_reads:
            self.host_access(node, host_reads, "read")
        if host_writes:
            self.host_access(node, host_writes, "write")
        if dev_reads or dev_writes:
            op = self.i.emit(OpKind.ACCESS, node, reads=tuple(dev_reads), writes=tuple(dev_writes))
            for storage in dev_reads:
                self.i.access(op, storage, "read")
            for storage in dev_writes:
                self.i.access(op, storage, "write")
        return result

    def host_access(self, node: cst.CSTNode, storages: list[Storage], mode: str) -> Op:
        """The host touches CPU tensor memory: note the device work on it the host has not seen."""
        pending = []
        for storage in storages:
            for access in self.state.history.get(storage.root.id, ()):
                if not access.op.seq:
                    continue
                if mode == "read" and access.mode != "write":
                    continue
                if self.state.host_vc.get(access.stream.key, 0) >= access.op.seq:
                    continue
                pending.append(access)
        kind = OpKind.HOST_READ if mode == "read" else OpKind.HOST_WRITE
        attr = "reads" if mode == "read" else "writes"
        return self.i.emit(kind, node, pending=tuple(pending), **{attr: tuple(storages)})

    def blocking_read(self, node: cst.CSTNode, storages: list[Storage]) -> None:
        """``.item()``, ``print(t)``, ``bool(t)``...: a device tensor is copied and the current stream
        synchronized; a host tensor is simply read."""
        host = [s for s in storages if s.on_host]
        device = [s for s in storages if not s.on_host]
        if host:
            self.host_access(node, host, "read")
        if device:
            op = self.i.emit(OpKind.ACCESS, node, reads=tuple(device))
            for storage in device:
                self.i.access(op, storage, "read")
            self.sync_stream(node, self.state.current, "blocking-read")

    def sync_stream(self, node: cst.CSTNode, stream: StreamValue, kind: str) -> None:
        self.i.emit(OpKind.HOST_SYNC, node, target=stream, sync_kind=kind)
        self.i.host_sees(self.i.stream_now(stream))

    def sync_device(self, node: cst.CSTNode, kind: str, qualname: Optional[str] = None) -> None:
        self.i.emit(OpKind.HOST_SYNC, node, sync_kind=kind, qualname=qualname)
        self.i.host_sync_all()

    def derived(self, value, label: str, node: cst.CSTNode):
        """An unknown function of ``value`` (tuple unpacking of an unknown call's result)."""
        if storages_of(value):
            # Where it was allocated is unknown (the callee may return something it was given).
            return self.i.new_storage(label, node, alloc_stream=None, tensor=False)
        return None

    def materialize(self, node: cst.BaseExpression) -> Storage:
        """A value of unknown origin used with a tensor-only method is a tensor (made elsewhere)."""
        key = dotted(node)
        storage = self.i.new_storage(key or "<expr>", node, origin="unknown", tensor=True,
                                     device="cpu" if key and HOST_NAME.search(key.rsplit(".", 1)[-1]) else None)
        if key is not None and (key.startswith("self.") or key in self.state.env):
            self.i.bind(key, storage)
        if key is not None and not key.startswith("self.") and (
            not self.i.inline_stack
            or key.split(".")[0] in self.i.params
            or key.split(".")[0] in self.i.param_elements
        ):
            # Of unknown origin: made by the caller, on its stream. Inside a helper walked from a
            # call site, only what the call passed in counts as the caller's.
            self.i.unknown_origin(storage)
        return storage

    def as_stream(self, node: Optional[cst.BaseExpression], value) -> Optional[StreamValue]:
        """Interpret a value used where a stream is expected; materialise attribute streams."""
        if isinstance(value, StreamValue):
            return value
        if isinstance(value, Alternatives):
            streams = [v for v in value.values if isinstance(v, StreamValue)]
            if streams and all(s.key == streams[0].key for s in streams):
                return streams[0]
            return None
        if node is None or value is not None and not isinstance(value, (Storage,)):
            return None
        key = dotted(node)
        if key is None:
            return None
        if key.startswith("self."):
            # A stream attribute the class never assigns (dead code, or set by unseen code) may be
            # anything, the current stream included.
            assigned = self.i.assigned_attributes
            origin = "attribute" if assigned is None or key[5:] in assigned else "unknown"
        elif key in self.i.params:
            origin = "parameter"
        else:
            origin = "unknown"
        stream = StreamValue(key, f"stream `{key}`", origin, None)
        if key.startswith("self.") or key in self.state.env:
            self.state.env[key] = stream
        return stream

    def as_event(self, node: cst.BaseExpression, value) -> Optional[EventValue]:
        if isinstance(value, EventValue):
            return value
        if isinstance(value, Alternatives):
            events = [v for v in value.values if isinstance(v, EventValue)]
            return events[0] if events and all(e.key == events[0].key for e in events) else None
        key = dotted(node)
        if value is None and key is not None and key.startswith("self."):
            event = EventValue(key, f"event `{key}`", None, None, origin="attribute")
            self.state.env[key] = event
            return event
        return None

    def is_current_stream_call(self, node: Optional[cst.BaseExpression]) -> bool:
        if not isinstance(node, cst.Call):
            return False
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("current_stream",):
            value = self.ev_callee_base(node.func.value)
            return isinstance(value, ModuleRef) and canonical(value.qualname) == "torch.cuda"
        name = self.i.resolver.qualify(node.func)
        return name in api.CURRENT_STREAM

    def ev_callee_base(self, node: cst.BaseExpression):
        if isinstance(node, cst.Name) and node.value in self.state.env:
            return self.state.env[node.value]
        if isinstance(node, cst.Call) and self.i.resolver.is_wrapper_call(node):
            return ModuleRef("torch.cuda")
        name = self.i.resolver.qualify(node)
        return ModuleRef(name) if name else None

    # -- entry points --------------------------------------------------------------------------

    def ev(self, node: Optional[cst.BaseExpression], hint: Optional[str] = None):
        if node is None:
            return None
        handler = getattr(self, f"ex_{type(node).__name__}", None)
        if handler is None:
            return None
        return handler(node, hint) if handler.__code__.co_argcount == 3 else handler(node)

    def condition(self, node: cst.BaseExpression) -> None:
        """A test the host evaluates: a tensor in it is converted with ``bool()``."""
        value = self.ev(node)
        storages = [s for s in storages_of(value) if s.tensor]  # `if reset:` on a flag is not a read
        if storages:
            self.blocking_read(node, storages)

    def query_poll(self, test: cst.BaseExpression) -> bool:
        """``while not e.query():`` (or ``s.query()``) polls until the work is done: a host sync."""
        if not (isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)):
            return False
        call = test.expression
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)):
            return False
        if call.func.attr.value != "query":
            return False
        receiver = self.ev(call.func.value)
        if isinstance(receiver, EventValue):
            self._event_sync(call, receiver, "query")
            return True
        if isinstance(receiver, StreamValue):
            self.sync_stream(call, receiver, "query")
            return True
        return False

    def context(self, node: cst.BaseExpression):
        """Classify a ``with`` item: ("stream", StreamValue), ("graph", None) or ("other", value)."""
        if isinstance(node, cst.Call):
            callee = self.callee_name(node.func)
            if callee in api.STREAM_CONTEXTS:
                args = _positional(node) or [a.value for a in node.args if a.keyword and a.keyword.value == "stream"]
                if not args:
                    return "none", None
                if isinstance(args[0], cst.Name) and args[0].value == "None":
                    return "none", None
                value = self.ev(args[0])
                return "stream", self.as_stream(args[0], value)
            if callee in api.GRAPH_CONTEXTS:
                for arg in node.args:
                    self.ev(arg.value)
                return "graph", None
        value = self.ev(node)
        if isinstance(value, StreamValue):
            return "stream", value
        return "other", None

    def element_of(self, iterable, target: cst.BaseExpression, source: Optional[cst.BaseExpression] = None):
        if iterable is None and source is not None:
            key = dotted(source)
            if key is not None and key + "[]" in self.state.env:
                return self.state.env[key + "[]"]
        if isinstance(iterable, StreamList):
            index = dotted(target) or "i"
            return StreamValue(f"{iterable.key}[{index}]", f"stream `{iterable.key}[{index}]`", "created",
                               container=iterable.key, index=index)
        if isinstance(iterable, TupleValue):
            works = [v for v in iterable.items if isinstance(v, WorkValue)]
            if works:
                return works[0] if len(works) == 1 else Alternatives(tuple(works[:8]))
            values = [v for v in iterable.items if v is not None]
            if values and all(isinstance(v, Storage) for v in values):
                return values[0] if len(values) == 1 else Alternatives(tuple(values[:8]))
        return None

    # -- leaves ----------------------------------------------------------------------------------

    def ex_Name(self, node: cst.Name):
        if node.value in self.state.env:
            return self.state.env[node.value]
        if node.value in ("True", "False", "None"):
            return HOST
        name = self.i.resolver.qualify(node)
        if name and (name.startswith("torch") or name.split(".")[0] in ("time", "timeit")):
            return ModuleRef(name)  # time/timeit: so that `time.perf_counter()` is a HOST_CLOCK
        return None

    def ex_Integer(self, node):
        return HOST

    ex_Float = ex_Imaginary = ex_SimpleString = ex_ConcatenatedString = ex_Integer

    def ex_FormattedString(self, node: cst.FormattedString):
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                storages = storages_of(self.ev(part.expression))
                if storages:
                    self.blocking_read(part, storages)
        return HOST

    def ex_Attribute(self, node: cst.Attribute):
        key = dotted(node)
        if key is not None and key in self.state.env:
            return self.state.env[key]
        base = self.ev(node.value)
        attr = node.attr.value
        if isinstance(base, ModuleRef):
            return ModuleRef(canonical(f"{base.qualname}.{attr}"))
        storages = storages_of(base)
        if storages:
            if attr in api.METADATA:
                self.mark_tensor(storages)
                return HOST
            if attr in api.VIEW_ATTRIBUTES:
                self.mark_tensor(storages)
                return base
            return None
        if base is None and isinstance(node.value, cst.Call) and self.i.resolver.is_wrapper_call(node.value):
            return ModuleRef(f"torch.cuda.{attr}")
        return None

    def ex_Subscript(self, node: cst.Subscript):
        base = self.ev(node.value)
        index_values = []
        self.index_depth += 1  # arithmetic in an index is usually integer arithmetic
        try:
            for element in node.slice:
                inner = element.slice
                if isinstance(inner, cst.Index):
                    index_values.append(self.ev(inner.value))
                else:
                    for part in (inner.lower, inner.upper, inner.step):
                        self.ev(part)
        finally:
            self.index_depth -= 1
        if isinstance(base, StreamList):
            inner = node.slice[0].slice
            text = self.i.model_code(inner.value) if isinstance(inner, cst.Index) else "i"
            return StreamValue(f"{base.key}[{text}]", f"stream `{base.key}[{text}]`", "created",
                               container=base.key, index=text)
        if base is None:
            key = dotted(node.value)
            if key is not None and key + "[]" in self.state.env:
                return self.state.env[key + "[]"]
        if isinstance(base, WorkValue) or (
            isinstance(base, Alternatives) and all(isinstance(v, WorkValue) for v in base.values)
        ):
            return base  # `works[block][chunk]`: a handle from a nested container of handles
        if isinstance(base, TupleValue):
            inner = node.slice[0].slice
            if isinstance(inner, cst.Index) and isinstance(inner.value, cst.Integer):
                position = int(inner.value.value)
                if -len(base.items) <= position < len(base.items):
                    return base.items[position]
            return None
        storages = storages_of(base)
        index_storages = [s for v in index_values for s in storages_of(v)]
        if storages and index_storages:
            if not any(s.tensor for s in index_storages):
                # `x[idx]` with an index of unknown kind: read x here, but `idx` may be an int.
                return self.tensor_op(node, reads=storages, result_label="<expr>")
            # Advanced indexing with a tensor: a gather, i.e. a new tensor.
            return self.tensor_op(node, reads=storages + index_storages, result_label="<expr>")
        if storages and not any(s.root.tensor for s in storages) and not any(
            isinstance(e.slice, cst.Slice) for e in node.slice
        ):
            # `bufs[i]` on something never used as a tensor: most likely a list element, which is
            # a value of its own (not a view of the list).
            return self.i.new_storage(f"{storages[0].label}[]", node, origin="unknown", tensor=False)
        if storages:
            self.mark_tensor(storages)
            if len(storages) == 1 and all(isinstance(e.slice, cst.Slice) for e in node.slice):
                # A static slice: a view of a region of the base.
                text = ",".join(self.i.model_code(e) for e in node.slice)
                return Storage(storages[0].root.id, storages[0].label, base=storages[0], region=text,
                               alloc_stream=storages[0].alloc_stream, device=storages[0].device)
            return base
        return None

    # -- operators -------------------------------------------------------------------------------

    def ex_BinaryOperation(self, node: cst.BinaryOperation, hint=None):
        # Long chains (`a + b + c + ...`) nest to the left: fold them iteratively, not recursively.
        spine = [node]
        while isinstance(spine[-1].left, cst.BinaryOperation):
            spine.append(spine[-1].left)
        value = self.ev(spine[-1].left)
        for link in reversed(spine):
            value = self.binary(link, value, self.ev(link.right), hint if link is node else None)
        return value

    def binary(self, node: cst.BinaryOperation, left, right, hint):
        if isinstance(left, TupleValue) or isinstance(right, TupleValue) or _sequence_expr(node):
            return None  # list/tuple arithmetic (`xs + [pad] * n`) is Python, not a kernel
        storages = storages_of(left) + storages_of(right)
        if storages:
            # Arithmetic is evidence only when an operand is known to be a tensor (`rank * n` on two
            # parameters is usually integer arithmetic), for `@`, or inside a stream block.
            evidence = (
                any(s.tensor for s in storages)
                or isinstance(node.operator, cst.MatrixMultiply)
                or (bool(self.i.block_streams) and not self.index_depth)
            )
            return self.tensor_op(node, reads=storages, result_label=hint or "<expr>", evidence=evidence)
        return HOST if isinstance(left, HostValue) and isinstance(right, HostValue) else None

    def ex_Comparison(self, node: cst.Comparison, hint=None):
        values = [self.ev(node.left)] + [self.ev(c.comparator) for c in node.comparisons]
        if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
            return HOST
        storages = [s for v in values for s in storages_of(v)]
        if storages:
            evidence = any(s.tensor for s in storages)
            return self.tensor_op(node, reads=storages, result_label=hint or "<expr>", evidence=evidence)
        return HOST

    def ex_UnaryOperation(self, node: cst.UnaryOperation, hint=None):
        value = self.ev(node.expression)
        storages = storages_of(value)
        if isinstance(node.operator, cst.Not):
            if storages:
                self.blocking_read(node, storages)
            return HOST
        if storages:
            evidence = any(s.tensor for s in storages)
            return self.tensor_op(node, reads=storages, result_label=hint or "<expr>", evidence=evidence)
        return value if isinstance(value, HostValue) else None

    def ex_BooleanOperation(self, node: cst.BooleanOperation):
        self.condition(node.left)
        self.condition(node.right)
        return HOST

    def ex_IfExp(self, node: cst.IfExp, hint=None):
        self.condition(node.test)
        body = self.ev(node.body, hint)
        orelse = self.ev(node.orelse, hint)
        if body is orelse:
            return body
        if body is None or orelse is None:
            return body if orelse is None or isinstance(orelse, HostValue) else orelse
        return Alternatives((body, orelse))

    def ex_Tuple(self, node, hint=None):
        return TupleValue(tuple(self.ev(e.value) for e in node.elements))

    ex_List = ex_Tuple

    def ex_Set(self, node):
        for element in node.elements:
            for storage in storages_of(self.ev(element.value)):
                storage.escapes = True
        return HOST

    def ex_Dict(self, node: cst.Dict):
        for element in node.elements:
            if isinstance(element, cst.DictElement):
                self.ev(element.key)
            for storage in storages_of(self.ev(element.value)):
                storage.escapes = True
        return None

    def ex_ListComp(self, node, hint=None):
        element = node.elt
        if isinstance(element, cst.Call) and self.callee_name(element.func) in api.STREAM_FACTORIES:
            key = hint or "streams"
            self.i.emit(OpKind.CREATE_STREAM, element, qualname="torch.cuda.Stream")
            return StreamList(key, f"streams `{key}`")
        for comp in self._comprehensions(node):
            self.ev(comp.iter)
        return None

    ex_GeneratorExp = ex_SetComp = ex_ListComp

    def ex_DictComp(self, node):
        for comp in self._comprehensions(node):
            self.ev(comp.iter)
        return None

    @staticmethod
    def _comprehensions(node):
        comp = node.for_in
        while comp is not None:
            yield comp
            comp = comp.inner_for_in

    def ex_Await(self, node):
        return self.ev(node.expression)

    def ex_Yield(self, node):
        value = self.ev(node.value) if isinstance(node.value, cst.BaseExpression) else None
        for storage in storages_of(value):
            storage.escapes = True
        return None

    def ex_NamedExpr(self, node: cst.NamedExpr):
        value = self.ev(node.value, dotted(node.target))
        self.i.assign(node.target, value, node)
        return value

    def ex_Lambda(self, node):
        return HOST

    # -- calls -------------------------------------------------------------------------------------

    def callee_name(self, func: cst.BaseExpression) -> Optional[str]:
        if isinstance(func, cst.Name):
            bound = self.state.env.get(func.value)
            if isinstance(bound, ModuleRef):
                return bound.qualname
            if func.value in self.state.env:
                return None
            return self.i.resolver.qualify(func)
        if isinstance(func, cst.Attribute):
            base = self.ev_callee_base(func.value)
            if isinstance(base, ModuleRef):
                return canonical(f"{base.qualname}.{func.attr.value}")
        return None

    def ex_Call(self, node: cst.Call, hint=None):
        if self.i.resolver.is_wrapper_call(node):
            return ModuleRef("torch.cuda")  # `acc = get_accelerator()` then `acc.Stream()`
        func = node.func
        if isinstance(func, cst.Attribute):
            receiver = _narrow(self.ev(func.value))
            method = func.attr.value
            if isinstance(receiver, ModuleRef):
                return self.qualified_call(node, canonical(f"{receiver.qualname}.{method}"), hint)
            if receiver is None and isinstance(func.value, cst.Call) and self.i.resolver.is_wrapper_call(func.value):
                return self.qualified_call(node, f"torch.cuda.{method}", hint)
            if isinstance(receiver, StreamValue):
                return self.stream_method(node, receiver, method)
            if isinstance(receiver, EventValue):
                return self.event_method(node, receiver, method)
            if isinstance(receiver, WorkValue):
                return self.work_method(node, receiver, method)
            if isinstance(receiver, Alternatives) and any(isinstance(v, WorkValue) for v in receiver.values):
                # `handle` is a Work on some paths: waiting on it waits for those (precision first).
                result = None
                for work in receiver.values:
                    if isinstance(work, WorkValue):
                        result = self.work_method(node, work, method)
                return result
            if method in _STREAM_ONLY_METHODS and (receiver is None or isinstance(receiver, Storage)):
                stream = self.as_stream(func.value, receiver)
                if stream is not None:
                    return self.stream_method(node, stream, method)
            if receiver is None and method in _TENSOR_ONLY_METHODS:
                receiver = self.materialize(func.value)
            if storages_of(receiver):
                return self.tensor_method(node, receiver, method, hint)
            return self.unknown_method(node, func, receiver, method, hint)
        name = self.callee_name(func)
        if name is None:
            self.ev(func)
        return self.qualified_call(node, name, hint)

    def args(self, node: cst.Call, skip: int = 0):
        values = []
        for index, arg in enumerate(node.args):
            if index < skip:
                continue
            values.append(self.ev(arg.value))
        return values

    def arg_storages(self, node: cst.Call) -> list[Storage]:
        return [s for v in self.args(node) for s in storages_of(v)]

    def qualified_call(self, node: cst.Call, name: Optional[str], hint: Optional[str]):
        i = self.i
        if name is None:
            return self.unknown_call(node, hint)
        if name in api.STREAM_FACTORIES:
            self.args(node)
            label = hint or "stream"
            i.emit(OpKind.CREATE_STREAM, node, qualname=name)
            # One creation site is one stream identity (both analysed loop iterations share it).
            key = label if "." in label else f"{label}@{i.site_number(node)}"
            return StreamValue(key, f"stream `{label}`", "created", node)
        if name in api.EVENT_FACTORIES:
            self.args(node)
            timing = _keyword(node, "enable_timing")
            positional = _positional(node)
            if timing is None and positional:
                timing = positional[0]
            enable = False if timing is None else _literal_bool(timing)
            label = hint or "event"
            op = i.emit(OpKind.CREATE_EVENT, node, qualname=name)
            key = label if "." in label else f"{label}@{i.site_number(node)}"
            event = EventValue(key, f"event `{label}`", enable, node)
            op.event = event
            return event
        if name in api.CURRENT_STREAM:
            self.args(node)
            return self.state.current
        if name in api.DEFAULT_STREAM:
            self.args(node)
            return i.entry
        if name in api.STREAM_CONTEXTS:
            return None  # handled by `with`
        if name in api.SET_STREAM:
            values = self.args(node)
            positional = _positional(node)
            stream = self.as_stream(positional[0] if positional else None, values[0] if values else None)
            i.emit(OpKind.SET_STREAM, node, target=stream)
            if stream is not None:
                self.state.current = stream
            return HOST
        if name in api.DEVICE_SYNC:
            self.args(node)
            self.sync_device(node, "device", name)
            return HOST
        if name in api.HOST_CLOCKS:
            i.emit(OpKind.HOST_CLOCK, node, clock=name, qualname=name)
            return HOST
        if name in api.COLLECTIVES:
            return self.collective(node, name)
        if name in api.TENSOR_FACTORIES or name in api.LIKE_FACTORIES:
            return self.factory(node, name, hint)
        if name in self.i.settings.synchronizing_functions or name.rsplit(".", 1)[-1] in {
            f for f in self.i.settings.synchronizing_functions if "." not in f
        }:
            self.args(node)
            self.sync_device(node, "helper", name)
            return HOST
        summary = self.i.summaries.get(name)
        if summary is not None:
            self.args(node)
            if summary.synchronizes:
                self.sync_device(node, "helper", name)
            if summary.returns_current_stream:
                return self.state.current
            return None
        if name in api.HOST_CONVERSIONS:
            storages = self.arg_storages(node)
            if storages:
                self.mark_tensor(storages)
                self.blocking_read(node, storages)
            return HOST
        if name in api.HOST_BUILTINS:
            values = self.args(node)
            if name in ("list", "tuple", "sorted", "reversed") and values:
                return values[0] if isinstance(values[0], TupleValue) else None
            return HOST
        if name == "torch.device":
            self.args(node)
            return HOST
        if name.startswith("torch.cuda.") or name.startswith("torch.distributed."):
            self.args(node)
            return HOST
        if name.startswith("torch.") and name.count(".") == 1 or name.startswith(("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")):
            return self.torch_function(node, name, hint)
        return self.unknown_call(node, hint)

    def sync_by_name(self, node: cst.Call, name: str) -> bool:
        """An unknown helper whose name says it synchronizes (``timer.sync()``, ``cuda_sync()``,
        ``synchronize_all()``) is taken at its word: precision first."""
        if not _SYNC_NAME.search(name.rsplit(".", 1)[-1]):
            return False
        self.args(node)
        self.sync_device(node, "helper", name)
        return True

    def handed_to_unknown(self, node: cst.Call, values, name: str) -> None:
        """What an unknown callee may do with its arguments: keep them (a constructor), record them
        on the current stream (``record_stream=True``), run work on a stream given to it."""
        storages = [s for v in values for s in storages_of(v)]
        for value in values:
            if isinstance(value, StreamValue):
                value.escapes = True
        if _is_true(_keyword(node, "record_stream")):
            for storage in storages:
                storage.root.recorded_streams.append(self.state.current)
        tail = name.rsplit(".", 1)[-1]
        if tail[:1].isupper():
            for storage in storages:
                storage.root.escapes = True

    def unknown_result(self, node: cst.Call, storages: list, hint: Optional[str]):
        """The result of an unknown call given tensors: a tensor made on the current stream if
        used as one later; host memory when every tensor given was host memory."""
        evidence = any(s.tensor for s in storages)
        device = "cpu" if all(s.root.on_host for s in storages) else None
        return self.tensor_op(node, reads=storages, result_label=hint or "<expr>", device=device,
                              evidence=evidence, mark_arguments=False)

    def unknown_call(self, node: cst.Call, hint: Optional[str]):
        name = self.i.resolver.qualify(node.func) or ""
        if name and self.sync_by_name(node, name):
            return HOST
        values = self.args(node)
        self.handed_to_unknown(node, values, name)
        storages = [s for v in values for s in storages_of(v)]
        if not storages:
            return None
        return self.unknown_result(node, storages, hint)

    def unknown_method(self, node: cst.Call, func: cst.Attribute, receiver, method: str, hint):
        if method in ("wait_stream", "wait_event", "record_event") or (
            method == "synchronize" and receiver is None
        ):
            stream = self.as_stream(func.value, receiver)
            if stream is not None:
                return self.stream_method(node, stream, method)
            if method == "synchronize":
                self.args(node)
                self.sync_device(node, "unknown")
                return HOST
        if method != "synchronize" and _SYNC_NAME.search(method) and self.sync_by_name(node, method):
            return HOST
        if method in self.i.sync_methods:
            self.args(node)
            self.sync_device(node, "helper", method)
            return HOST
        if method in ("record", "elapsed_time") and receiver is None:
            event = self.as_event(func.value, receiver)
            if event is not None:
                return self.event_method(node, event, method)
        if isinstance(func.value, cst.Name) and func.value.value == "self" and can_inline(self.i, method):
            return inline_call(self.i, node, self.i.class_methods[method])
        if isinstance(func.value, cst.Name) and func.value.value == "self" and method in self.i.method_returns:
            self.args(node)
            stream = self.i.method_returns[method]
            storage = self.i.new_storage(hint or "<expr>", node, alloc_stream=stream, device="cuda")
            op = self.i.emit(OpKind.ACCESS, node, stream=stream, writes=(storage,), note=f"in `{method}`")
            self.i.access(op, storage, "write")
            return storage
        values = self.args(node)
        self.handed_to_unknown(node, values, method)
        if method in ("append", "insert") and values and any(isinstance(v, WorkValue) for v in values):
            self.i.keep_in_container(func.value, values[-1])
        if method in api.STORING_METHODS:
            for value in values:
                for storage in storages_of(value):
                    storage.escapes = True
            return None
        storages = [s for v in values for s in storages_of(v)]
        if storages:
            return self.unknown_result(node, storages, hint)
        return None

    def factory(self, node: cst.Call, name: str, hint: Optional[str]):
        values = self.args(node)
        device_node = _keyword(node, "device")
        device = self.device_of(device_node) if device_node is not None else None
        if device_node is None:
            if name in api.LIKE_FACTORIES and values and storages_of(values[0]):
                device = storages_of(values[0])[0].device
            else:
                device = "cpu"
        pinned = _is_true(_keyword(node, "pin_memory"))
        storage = self.i.new_storage(hint or "<expr>", node, alloc_stream=self.state.current,
                                     device=device, pinned=pinned)
        if storage.on_host:
            return storage
        if name.rsplit(".", 1)[-1].startswith("empty"):
            # Allocation only, no kernel: nothing to race with, but the allocation stream counts.
            return storage
        op = self.i.emit(OpKind.ACCESS, node, writes=(storage,), qualname=name)
        self.i.access(op, storage, "write")
        return storage

    def device_of(self, node: Optional[cst.BaseExpression]) -> Optional[str]:
        """"cpu", "cuda" or None for a device argument."""
        if node is None:
            return None
        text = _string(node)
        if text is not None:
            return "cpu" if text.startswith("cpu") else ("cuda" if text.startswith(("cuda", "xpu")) else None)
        if isinstance(node, cst.Call) and self.callee_name(node.func) == "torch.device":
            args = _positional(node)
            return self.device_of(args[0]) if args else None
        if isinstance(node, cst.Attribute) and node.attr.value == "device":
            storages = storages_of(self.ev(node.value))
            return storages[0].device if storages else None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "current_device":
            return "cuda"
        if isinstance(node, cst.Integer):
            return "cuda"
        return None

    def torch_function(self, node: cst.Call, name: str, hint: Optional[str]):
        values = self.args(node)
        storages = [s for v in values for s in storages_of(v)]
        out = _keyword(node, "out")
        out_storages = storages_of(self.ev(out)) if out is not None else []
        if out_storages:
            self.tensor_op(node, reads=[s for s in storages if s not in out_storages], writes=out_storages)
            return out_storages[0]
        if not storages:
            device_node = _keyword(node, "device")
            # Only factories default to the CPU; `torch.stack([...])` of unknown values may be anywhere.
            default = "cpu" if name.rsplit(".", 1)[-1] in api.HOST_FACTORIES else None
            device = self.device_of(device_node) if device_node is not None else default
            storage = self.i.new_storage(hint or "<expr>", node, alloc_stream=self.state.current, device=device)
            if not storage.on_host:
                op = self.i.emit(OpKind.ACCESS, node, writes=(storage,), qualname=name)
                self.i.access(op, storage, "write")
            return storage
        short = name.rsplit(".", 1)[-1]
        if short in ("chunk", "split", "unbind", "tensor_split"):
            return TupleValue(tuple(storages[:1]))
        if short in api.VIEW_METHODS or short in ("narrow", "select", "squeeze", "unsqueeze", "flatten"):
            return storages[0]
        return self.tensor_op(node, reads=storages, result_label=hint or "<expr>")

    def collective(self, node: cst.Call, name: str):
        values = [self.ev(arg.value) for arg in node.args if arg.keyword is None or arg.keyword.value in ("tensor", "output", "input", "tensor_list", "output_tensor", "input_tensor")]
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value not in ("tensor", "output", "input", "tensor_list", "output_tensor", "input_tensor"):
                self.ev(arg.value)
        storages = [s for v in values for s in storages_of(v)]
        asynchronous = _is_true(_keyword(node, "async_op")) or name in api.ALWAYS_ASYNC_COLLECTIVES
        outputs = storages[:1] if name in api.COLLECTIVE_OUTPUT_FIRST else []
        inputs = [s for s in storages if s not in outputs]
        for storage in storages:
            # ProcessGroupNCCL records its tensors on its internal stream (or stashes them in the
            # Work) until the collective completes: the allocator cannot reuse them early.
            storage.root.recorded_streams.append(self.state.current)
        if not asynchronous:
            self.tensor_op(node, reads=inputs, writes=outputs)
            return None
        # The collective runs on an internal stream that waits for the current stream at the call.
        i = self.i
        current = self.state.current
        # One internal stream per process group: collectives on a group run in issue order.
        group = _keyword(node, "group")
        group_text = i.model_code(group) if group is not None else "default group"
        stream = StreamValue(f"collective:{group_text}", f"the process group's stream ({group_text})",
                             "collective", node)
        i.wait_stream(stream, current)
        op = i.emit(OpKind.COLLECTIVE, node, stream=stream, reads=tuple(inputs), writes=tuple(outputs), qualname=name)
        for storage in inputs:
            storage.tensor = True
            i.access(op, storage, "read")
        for storage in outputs:
            storage.tensor = True
            i.access(op, storage, "write")
        return WorkValue(stream, node)

    # -- methods on known values ---------------------------------------------------------------

    def stream_method(self, node: cst.Call, stream: StreamValue, method: str):
        i = self.i
        positional = _positional(node)
        values = self.args(node)
        first = positional[0] if positional else None
        if method == "wait_stream":
            other = self.as_stream(first, values[0] if values else None)
            op = i.emit(OpKind.WAIT_STREAM, node, stream=stream, target=other,
                        arg_is_current_stream=self.is_current_stream_call(first))
            if other is not None:
                i.wait_stream(stream, other)
            return HOST
        if method == "wait_event":
            event = self.as_event(first, values[0] if values else None) if first is not None else None
            return self._wait_event(node, event, stream, explicit=True)
        if method == "record_event":
            event = self.as_event(first, values[0] if values else None) if first is not None else None
            if event is None:
                event = EventValue(f"event@{len(i.model.ops)}", "the recorded event", False, node)
            op = i.emit(OpKind.RECORD_EVENT, node, stream=stream, event=event, target=stream)
            i.record_event(event, stream, op)
            return event
        if method == "synchronize":
            self.sync_stream(node, stream, "stream")
            return HOST
        if method == "query":
            return HOST
        return None

    def _wait_event(self, node: cst.Call, event: Optional[EventValue], stream: StreamValue, explicit: bool):
        i = self.i
        state = i.event_state(event) if event is not None else None
        if state is not None and state.stream is not None:
            i.note_ordering(stream, state.stream)
        i.emit(OpKind.WAIT_EVENT, node, stream=stream, event=event, target=stream if explicit else None,
               recorded_by=state.recorded_by if state else ())
        if state is not None:
            current = self.state
            current.vc[stream.key] = vc_join(current.stream_vc(stream.key), state.vc)
        return HOST

    def _event_sync(self, node: cst.Call, event: EventValue, kind: str) -> None:
        state = self.i.event_state(event)
        self.i.emit(OpKind.HOST_SYNC, node, event=event, sync_kind=kind,
                    recorded_by=state.recorded_by if state else ())
        if state is not None:
            self.i.host_sees(state.vc)

    def event_method(self, node: cst.Call, event: EventValue, method: str):
        i = self.i
        positional = _positional(node)
        values = self.args(node)
        first = positional[0] if positional else _keyword(node, "stream")
        if method == "record":
            stream = self.as_stream(first, values[0] if values else None) if first is not None else self.state.current
            stream = stream or self.state.current
            op = i.emit(OpKind.RECORD_EVENT, node, stream=stream, event=event,
                        target=stream if first is not None else None,
                        arg_is_current_stream=self.is_current_stream_call(first))
            i.record_event(event, stream, op)
            return HOST
        if method == "wait":
            stream = self.as_stream(first, values[0] if values else None) if first is not None else self.state.current
            return self._wait_event(node, event, stream or self.state.current, explicit=first is not None)
        if method == "synchronize":
            self._event_sync(node, event, "event")
            return HOST
        if method == "query":
            state = i.event_state(event)
            i.emit(OpKind.EVENT_QUERY, node, event=event, recorded_by=state.recorded_by if state else ())
            return HOST
        if method == "elapsed_time":
            end = self.as_event(first, values[0] if values else None) if first is not None else None
            events = (event, end) if end is not None else (event,)
            recorded: tuple = ()
            for ev in events:
                state = i.event_state(ev)
                if state:
                    recorded += state.recorded_by
            i.emit(OpKind.ELAPSED_TIME, node, event=end or event, events=events, recorded_by=recorded)
            return HOST
        return None

    def work_method(self, node: cst.Call, work: WorkValue, method: str):
        self.args(node)
        if method == "wait":
            self.i.emit(OpKind.WORK_WAIT, node, target=work.stream)
            self.i.wait_stream(self.state.current, work.stream)
        return HOST

    def tensor_method(self, node: cst.Call, receiver, method: str, hint: Optional[str]):
        i = self.i
        storages = storages_of(receiver)
        if method in api.METADATA:
            self.args(node)
            self.mark_tensor(storages)
            return HOST
        if method in ("chunk", "split", "unbind", "tensor_split"):
            self.args(node)
            self.mark_tensor(storages)
            return TupleValue(tuple(storages[:1]))
        if method in api.VIEW_METHODS:
            self.args(node)
            self.mark_tensor(storages)
            return receiver
        if method == "record_stream":
            positional = _positional(node)
            values = self.args(node)
            stream = self.as_stream(positional[0] if positional else None, values[0] if values else None)
            i.emit(OpKind.RECORD_STREAM, node, reads=tuple(storages), target=stream,
                   arg_is_current_stream=self.is_current_stream_call(positional[0] if positional else None))
            self.mark_tensor(storages)
            if stream is not None:
                for storage in storages:
                    storage.recorded_streams.append(stream)
            return HOST
        if method == "numpy" and node is self.stored_node and all(s.root.on_host for s in storages):
            # `arr = t.numpy()` / `return t.numpy()`: a view of host memory, handed on; its values
            # are read later by whoever uses the array (async copy helpers return exactly this,
            # and their callers wait on an event first).
            self.args(node)
            self.mark_tensor(storages)
            return None
        if method in api.BLOCKING_READS:
            self.args(node)
            self.mark_tensor(storages)
            self.blocking_read(node, storages)
            return HOST
        if method == "copy_":
            return self.copy_into(node, storages)
        if method in api.TRANSFER_METHODS:
            return self.transfer(node, storages, method, hint)
        if method == "wait" or method == "synchronize":
            self.args(node)
            return None
        values = self.args(node)
        arg_storages = [s for v in values for s in storages_of(v)]
        if method.endswith("_") and not method.endswith("__"):
            self.tensor_op(node, reads=arg_storages, writes=storages)
            return receiver
        out = _keyword(node, "out")
        if out is not None:
            out_storages = storages_of(self.ev(out))
            self.tensor_op(node, reads=storages + arg_storages, writes=out_storages)
            return out_storages[0] if out_storages else None
        evidence = method in _COMMON_TENSOR_METHODS or any(s.tensor for s in storages)
        return self.tensor_op(node, reads=storages + arg_storages, result_label=hint or "<expr>", evidence=evidence)

    def copy_into(self, node: cst.Call, destinations: list[Storage]):
        positional = _positional(node)
        values = self.args(node)
        sources = storages_of(values[0]) if values else []
        non_blocking = _is_true(_keyword(node, "non_blocking")) or (
            len(positional) > 1 and _is_true(positional[1])
        )
        dst = destinations[0]
        src = sources[0] if sources else None
        if src is not None and src.root.device is None and non_blocking and dst.root.device == "cuda":
            mark_host(src)  # a non-blocking copy into device memory from a source of unknown kind
        direction = _direction(src.device if src else None, dst.device)
        self.mark_tensor(destinations + sources)
        if direction == "h2h":
            self.host_access(node, sources, "read") if sources else None
            self.host_access(node, destinations, "write")
            return dst
        self._copy_op(node, src, dst, non_blocking, direction)
        return dst

    def _copy_op(self, node, src: Optional[Storage], dst: Storage, non_blocking: bool, direction: str) -> Op:
        i = self.i
        reads = (src,) if src is not None else ()
        op = i.emit(OpKind.COPY, node, reads=reads, writes=(dst,),
                    copy=CopyInfo(non_blocking, direction, src, dst))
        if src is not None:
            i.access(op, src, "read")
        i.access(op, dst, "write")
        if not non_blocking and direction in ("d2h", "h2d", "unknown") and (
            direction == "d2h" or (src is not None and src.on_host)
        ):
            # A blocking copy returns once it is done (pageable H2D copies are staged first).
            self.i.emit(OpKind.HOST_SYNC, node, target=op.stream, sync_kind="blocking-copy")
            self.i.host_sees({op.stream.key: op.seq})
        return op

    def tensor_device(self, node: Optional[cst.BaseExpression]) -> bool:
        """``other.device`` where ``other`` is a known tensor (not ``self.device``)."""
        if not (isinstance(node, cst.Attribute) and node.attr.value == "device"):
            return False
        key = dotted(node.value)
        return key is not None and bool(storages_of(self.state.env.get(key)))

    def transfer(self, node: cst.Call, storages: list[Storage], method: str, hint: Optional[str]):
        positional = _positional(node)
        self.args(node)
        src = storages[0]
        self.mark_tensor(storages)
        non_blocking = _is_true(_keyword(node, "non_blocking"))
        target: Optional[str]
        pinned = False
        device_node = None
        if method in ("cuda", "xpu"):
            target = "cuda"
        elif method == "cpu":
            target = "cpu"
        elif method == "pin_memory":
            target, pinned = "cpu", True
        elif method == "to":
            device_node = _keyword(node, "device") or (positional[0] if positional else None)
            target = self.device_of(device_node)
            if target is None and device_node is not None:
                if _is_dtype(device_node):
                    target = src.device
                elif src.on_host:
                    target = "cuda"  # `.to(device)` from a CPU tensor is almost always an upload
            if len(positional) > 1 and _is_true(positional[1]):
                non_blocking = True
        else:
            target = src.device  # dtype conversion
        if method == "pin_memory":
            mark_host(src)  # only host memory can be pinned; nothing touches the GPU
        elif src.device is None and (
            (target == "cuda" and method in ("cuda", "xpu", "to"))
            or (method == "to" and non_blocking and target is None and not self.tensor_device(device_node))
        ):
            # Uploading it (`.cuda()`, `.to("cuda")`, `.to(device, non_blocking=True)`): the source
            # is host memory. Not `.to(other.device)`, which follows another tensor wherever it is.
            mark_host(src)
        direction = _direction(src.device, target)
        result = self.i.new_storage(hint or "<expr>", node, alloc_stream=self.state.current,
                                    device=target, pinned=pinned or None)
        if direction == "h2h":
            self.host_access(node, [src], "read")
            return result
        self._copy_op(node, src, result, non_blocking, direction)
        return result


def _narrow(value):
    """``x`` is None on one path and an event (or stream) on the other (lazy creation:
    ``if self.ev is None: self.ev = Event()``): calling a method on it means it is the event."""
    if not isinstance(value, Alternatives):
        return value
    known = [v for v in value.values if v is not None and not isinstance(v, HostValue)]
    if known and all(isinstance(v, (EventValue, StreamValue)) and type(v) is type(known[0]) and v.key == known[0].key for v in known):
        return known[0]
    return value


def _sequence_expr(node: cst.BaseExpression) -> bool:
    """A list or tuple display, comprehension, or arithmetic on them (`[x] * n`, `xs + [y]`)."""
    if isinstance(node, (cst.List, cst.Tuple, cst.ListComp)):
        return True
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, (cst.Add, cst.Multiply)):
        return _sequence_expr(node.left) or _sequence_expr(node.right)
    return False


def mark_host(storage: Storage, depth: int = 3) -> None:
    """``storage`` is host memory, and so (while unknown) are the values it was computed from on
    the host (``torch.cat(ids).to("cuda")``: the ids are CPU tensors too)."""
    root = storage.root
    if root.device is not None or depth == 0:
        return
    root.device = "cpu"
    made_by = root.alloc_op
    if made_by is not None:
        for source in getattr(made_by, "reads", ()):
            mark_host(source, depth - 1)


def _direction(src: Optional[str], dst: Optional[str]) -> str:
    if src == "cpu" and dst == "cpu":
        return "h2h"
    if src == "cpu" and dst in ("cuda", None):
        return "h2d" if dst == "cuda" else "unknown"
    if dst == "cpu":
        return "d2h" if src in ("cuda", None) else "unknown"
    if src == "cuda" and dst == "cuda":
        return "d2d"
    return "unknown"


def _is_dtype(node: cst.BaseExpression) -> bool:
    text = dotted(node) or ""
    return text.startswith("torch.") and text.rsplit(".", 1)[-1] in {
        "float", "float16", "float32", "float64", "half", "bfloat16", "double", "int", "int8",
        "int16", "int32", "int64", "long", "bool", "uint8", "complex64",
    } or text.endswith(".dtype")
