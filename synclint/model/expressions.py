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
from synclint.model.call_args import (
    _keyword,
    _positional,
    _sequence_expr,
)
from synclint.model.calls import CallSemantics
from synclint.model.inlining import NOT_A_PROPERTY, read_property
from synclint.model.known_methods import KnownValueMethods
from synclint.model.resolver import canonical, dotted, target_names
from synclint.model.timeline import Op, OpKind
from synclint.model.values import (
    CLOCK,
    HOST,
    HOST_NAME,
    Alternatives,
    EventValue,
    GraphValue,
    HostValue,
    ModuleRef,
    Storage,
    StreamContext,
    StreamContextFactory,
    StreamList,
    StreamValue,
    TupleValue,
    WorkValue,
    holds_work,
    storages_of,
)

#: Modules other than torch whose functions the model knows (:mod:`synclint.model.api`).
_KNOWN_MODULES = ("time", "timeit", "weakref")

if TYPE_CHECKING:  # pragma: no cover
    from synclint.model.interpreter import Interpreter


_UNSEEN = object()
#: A name a comprehension binds that was not bound before it.
_UNBOUND = object()
#: Comparisons whose result is a host ``bool`` whatever they compare (``x is None``, ``k in d``).
_MEMBERSHIP_OR_IDENTITY = (cst.Is, cst.IsNot, cst.In, cst.NotIn)
#: Per evaluator class: node class -> (its ``ex_`` function, whether it takes a hint), or None.
_HANDLERS: dict[type, dict[type, Optional[tuple]]] = {}


def _handler(evaluator: type, node_type: type) -> Optional[tuple]:
    function = getattr(evaluator, f"ex_{node_type.__name__}", None)
    if function is None:
        return None
    return function, function.__code__.co_argcount == 3


def _works_among(elements) -> Optional[object]:
    """The work handles a loop over a list known only per path yields: ``reqs = [work]`` on one
    path and ``reqs = []`` (or a helper's list of sends) on another, then ``for r in reqs:
    r.wait()``. On every path where the list holds a handle the loop waits on it, so the element
    stands for all of them. Only handles: a tensor element known on some paths only would be
    claimed to alias what it may not, and unknown elements of the other paths say nothing."""
    works: list = []
    for element in elements:
        for value in element.values if isinstance(element, Alternatives) else (element,):
            if isinstance(value, WorkValue) and not any(value is seen for seen in works):
                works.append(value)
            elif value is not None:
                return None
    if not works:
        return None
    return works[0] if len(works) == 1 else Alternatives(tuple(works[:8]))


#: Arithmetic that counts when its right-hand side is a size, or one (see ``arithmetic_evidence``).
_COUNTING_OPERATORS = (cst.Add, cst.Subtract, cst.AddAssign, cst.SubtractAssign)
#: Tensor methods and builtins that give a count of elements, bytes or dimensions.
_SIZE_QUERIES = frozenset({"numel", "nelement", "size", "dim", "ndimension", "element_size", "len"})


def _operands_device(storages) -> str:
    """The device of an operator's result (``out - y.cuda()``, ``out > y.cuda()``): a CUDA tensor
    wherever one operand is, even where another's device is unknown, because PyTorch lets only a
    zero-dimensional CPU tensor meet a CUDA one (the result is on the GPU) and any other CPU operand
    raises. Otherwise the operands' common device (``tensor_op``'s ``"same"``)."""
    return "cuda" if any(s.device == "cuda" for s in storages) else "same"


def _a_size(node: cst.BaseExpression) -> bool:
    """A size: ``len(xs)``, ``t.numel()``, ``t.size(0)``, ``t.shape[0]``."""
    if type(node) is cst.Call:
        func = node.func
        name = func.attr.value if type(func) is cst.Attribute else (
            func.value if type(func) is cst.Name else None
        )
        return name in _SIZE_QUERIES
    if type(node) is cst.Subscript:
        node = node.value
    return type(node) is cst.Attribute and node.attr.value == "shape"


#: Operators that combine masks into a mask.
_LOGICAL = (cst.BitAnd, cst.BitOr, cst.BitXor)


def _made_here(storage: Storage) -> bool:
    """Is ``storage`` a tensor this function made (by tensor work: ``out = model(x.cuda())``)?
    Iterated, it yields rows. A parameter used as a tensor somewhere may still be a list on the
    path that iterates it (``if isinstance(value, list): [move(e) for e in value]``)."""
    return storage.tensor and storage.origin == "local"


def _computed_from_the_device(storage: Storage) -> bool:
    """Is ``storage`` the result of a call of unknown kind (neither a tensor op nor a method of
    one) that read device tensors (``pgd_attack(model, x)`` with ``x`` uploaded)?"""
    made_by = storage.alloc_op
    return (
        made_by is not None
        and made_by.kind == OpKind.ACCESS
        and made_by.qualname is None
        and any(r.root.device == "cuda" for r in made_by.reads)
    )


def any_item_key(container: str) -> str:
    """Where items stored in ``container`` at an index not written out are remembered (``d[*]``,
    ``self.batch[*]``)."""
    return f"{container}[*]"


def item_keys(node: cst.Subscript) -> Optional[tuple[str, str]]:
    """Where an item stored through ``node`` is remembered: ``("d['patches']", "d[*]")`` for a
    literal index, ``("d[*]", "d[*]")`` for any other single index; None for slices, several
    indexes and containers other than a local name (an attribute's items are stored and read by
    different methods, at different times)."""
    if type(node.value) is not cst.Name or len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return None
    container = node.value.value
    index = node.slice[0].slice.value
    any_key = any_item_key(container)
    if type(index) in (cst.SimpleString, cst.Integer):
        return f"{container}[{index.value}]", any_key
    return any_key, any_key


_KEY_PARTS = frozenset({cst.Name, cst.Attribute, cst.Subscript, cst.SubscriptElement, cst.Index,
                        cst.Integer, cst.SimpleString, cst.Call, cst.Arg})


def _computed_key(node: cst.Subscript) -> bool:
    """Is ``node`` one element of a container at an index computed without side effects from
    names, attributes, items, constants and ``str()``/``int()`` (``self.layer_mapping[str(i)]``)?"""
    if len(node.slice) != 1 or type(node.slice[0].slice) is not cst.Index:
        return False
    stack = [node.slice[0].slice.value]
    while stack:
        part = stack.pop()
        kind = type(part)
        if kind not in _KEY_PARTS:
            return False
        if kind is cst.Call:
            if type(part.func) is not cst.Name or part.func.value not in ("str", "int") or len(part.args) != 1:
                return False
            stack.append(part.args[0].value)
        elif kind is cst.Attribute:
            stack.append(part.value)
        elif kind is cst.Subscript:
            stack.append(part.value)
            stack.extend(e.slice for e in part.slice)
        elif kind is cst.Index:
            stack.append(part.value)
        elif kind is cst.SubscriptElement:
            stack.append(part.slice)
    return True


def _container_key(source: cst.BaseExpression) -> Optional[str]:
    """The container a ``for`` loop walks: ``works``, ``works.values()``, or the same container on
    both arms of a test of its type (MindSpeed's ``reqs if isinstance(reqs, list) else
    reqs.values()``, over a dict of handles)."""
    if type(source) is cst.IfExp:
        body, orelse = _container_key(source.body), _container_key(source.orelse)
        return body if body == orelse else None
    if (
        type(source) is cst.Call
        and not source.args
        and type(source.func) is cst.Attribute
        and source.func.attr.value == "values"
    ):
        source = source.func.value
    return dotted(source)


#: A local of unknown origin named as the default stream (``default_stream``,
#: ``default_stream_0``): taken to be the stream the function started on.
_DEFAULT_STREAM_NAME = re.compile(r"default_stream(?:_?\d+)?$")


def _handed_to_a_thread(call) -> Optional[cst.Attribute]:
    """``x.synchronize`` in ``loop.run_in_executor(executor, x.synchronize)`` or
    ``asyncio.to_thread(x.synchronize)``, with no other argument; else None."""
    if type(call) is not cst.Call or type(call.func) is not cst.Attribute:
        return None
    method = call.func.attr.value
    wanted = 2 if method == "run_in_executor" else 1 if method == "to_thread" else 0
    if not wanted or len(call.args) != wanted or any(a.keyword or a.star for a in call.args):
        return None
    function = call.args[-1].value
    if type(function) is cst.Attribute and function.attr.value == "synchronize":
        return function
    return None


class ExpressionEvaluator(CallSemantics, KnownValueMethods):
    def __init__(self, interp: "Interpreter") -> None:
        self.i = interp
        # ``ev`` runs for every expression node: its dispatch is a dictionary look-up, shared by
        # all evaluators of one class, instead of building and looking up a method name each time.
        self._handlers = _HANDLERS.setdefault(self.__class__, {})
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
        opaque: bool = False,
    ) -> Optional[Storage]:
        """Enqueue tensor work on the current stream (or run it on the host for CPU tensors).
        ``opaque``: see ``Op.opaque``."""
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
                # What an opaque call returns may be pooled, cached or something it was given:
                # where it was allocated is unknown.
                alloc_stream=None if opaque else self.state.current,
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
        host_ops = []
        if host_reads:
            host_ops.append(self.host_access(node, host_reads, "read"))
        if host_writes:
            host_ops.append(self.host_access(node, host_writes, "write"))
        if opaque and host_ops and not (dev_reads or dev_writes):
            # Handed only host tensors (`executor.submit(write, cpu_frames, events)`): it may
            # still wait for the copies that fill them before it returns (see `Op.opaque`).
            host_ops[-1].opaque = True
        if dev_reads or dev_writes:
            op = self.i.emit(OpKind.ACCESS, node, reads=tuple(dev_reads), writes=tuple(dev_writes),
                             opaque=opaque)
            for storage in dev_reads:
                self.i.access(op, storage, "read")
            for storage in dev_writes:
                self.i.access(op, storage, "write")
        return result

    def host_access(self, node: cst.CSTNode, storages: list[Storage], mode: str) -> Op:
        """The host touches CPU tensor memory: note the device work on it the host has not seen.
        Two different static slices of one buffer are disjoint regions here as on the device
        (:meth:`Interpreter.access`): the host filling ``buf[:, n:]`` while a copy lands in
        ``buf[:, :n]`` touches none of it."""
        pending = []
        for storage in storages:
            region = storage.region
            for access in self.state.history.get(storage.root.id, ()):
                if not access.op.seq:
                    continue
                if region is not None and access.region is not None and access.region != region:
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

    def size_from_data(self, node: cst.CSTNode, storages: list[Storage], hint: Optional[str]):
        """``x.nonzero()``, ``torch.unique(x)``: tensor work on the current stream whose output
        size the host reads before the call returns; for a device tensor, a wait for the current
        stream, like a blocking read."""
        result = self.tensor_op(node, reads=storages, result_label=hint or "<expr>",
                                device="same" if storages else None)
        if not storages or any(not s.on_host for s in storages):
            self.sync_stream(node, self.state.current, "blocking-read")
        return result

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
            part = self.i.new_storage(label, node, alloc_stream=None, tensor=False)
            part.from_device = any(_computed_from_the_device(s) for s in storages_of(value))
            return part
        return None

    def materialize(self, node: cst.BaseExpression) -> Storage:
        """A value of unknown origin used with a tensor-only method is a tensor (made elsewhere)."""
        key = dotted(node)
        storage = self.i.new_storage(key or "<expr>", node, origin="unknown", tensor=True,
                                     device="cpu" if key and HOST_NAME.search(key.rsplit(".", 1)[-1]) else None)
        if key is not None and (key.startswith("self.") or key in self.state.env):
            self.i.bind(key, storage)
        made_on = self.i.made_on_stream(key)
        if made_on is not None and made_on.key == self.state.current.key:
            # `model = Gen("cpu")`, then `model.net.to(dev)` on the same stream: made by that call
            # here, earlier on this stream, not by the caller.
            return storage
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
            return self.chosen_stream(value)
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
        elif _DEFAULT_STREAM_NAME.match(key):
            # `(default_stream_0,) = self.get_default_streams()`: named for what it is.
            return self.i.entry
        else:
            origin = "unknown"
        stream = StreamValue(key, f"stream `{key}`", origin, None)
        if key.startswith("self.") or key in self.state.env:
            self.state.env[key] = stream
        return stream

    def chosen_stream(self, value) -> Optional[StreamValue]:
        """The side stream of a stream chosen by configuration: a value that is, on some paths, one
        stream other than the caller's and, on the others, the caller's own stream (``stream =
        self.reduction_stream if self.overlap_comm else torch.cuda.current_stream()``). Where the
        caller's stream is chosen, work on ``stream`` runs in program order and cannot race;
        where the side stream is chosen it can. So the value is judged as the side stream:
        a block ``with torch.cuda.stream(stream):`` runs on it, and waits and recordings on
        ``stream`` are its own (on the other paths they are waits of a stream on itself).
        ``stream.synchronize()`` is the exception (:meth:`CallSemantics.synchronize_chosen`):
        on the other paths it waits for the caller's stream. None for anything else."""
        if not isinstance(value, Alternatives):
            return None
        if not all(isinstance(v, StreamValue) for v in value.values):
            return None
        own = {self.i.entry.key, self.state.current.key}
        others = {v.key: v for v in value.values if v.key not in own}
        if len(others) != 1 or len(others) == len({v.key for v in value.values}):
            return None
        return next(iter(others.values()))

    def as_event(self, node: cst.BaseExpression, value) -> Optional[EventValue]:
        if isinstance(value, EventValue):
            return value
        if isinstance(value, Alternatives):
            events = [v for v in value.values if isinstance(v, EventValue)]
            return events[0] if events and all(e.key == events[0].key for e in events) else None
        key = dotted(node) if type(node) is not cst.Subscript else self.element_key(node)
        if value is None and key is not None and (key.startswith("self.") or "[" in key):
            # An attribute event, or one element of a list of events (`self.ready[layer].record()`
            # ... `self.ready[layer].wait(self.d2h)`): the same text is the same event.
            origin = "attribute" if key.startswith("self.") else "element"
            event = EventValue(key, f"event `{key}`", None, None, origin=origin)
            self.state.env[key] = event
            return event
        return None

    def element_key(self, node: cst.Subscript) -> Optional[str]:
        """One element of a container as text (``self.ready[layer_idx]``), at an index
        :func:`_computed_key` accepts, for a container that is the object's or a local; None for
        a parameter's (``timer[1]`` in a helper walked at several call sites names another
        caller's container at each), a slice or several indexes."""
        base = dotted(node.value)
        if base is None:
            return None
        if not base.startswith("self.") and base.split(".", 1)[0] in self.i.params:
            return None
        if self.i.for_loops and len(node.slice) == 1 and type(node.slice[0].slice) is cst.Index:
            previous = self._previous_pass_element(base, node.slice[0].slice.value)
            if previous is not None:
                return previous
        if not _computed_key(node):
            return None
        index = node.slice[0].slice.value
        # `self.ready[layer]`, `events[1]`, `self.events[self.layer_mapping[str(layer_idx)]]`: the
        # same text names the same element within a walk (RetrievalAttention records and waits so).
        if type(index) in (cst.Integer, cst.SimpleString):
            text = index.value
        else:
            text = dotted(index) or self.i.model_code(index)
        return f"{base}[{text}]"

    def _previous_pass_element(self, base: str, index: cst.BaseExpression) -> Optional[str]:
        """``done[i - 1]`` in the second pass of ``for i in ...``: the element the first pass
        recorded as ``done[i]`` (a pipeline whose chunk waits for the previous chunk's event),
        while this pass has not recorded ``done[i]`` yet; None otherwise."""
        if not (
            type(index) is cst.BinaryOperation
            and type(index.operator) is cst.Subtract
            and type(index.left) is cst.Name
            and type(index.right) is cst.Integer
            and index.right.value == "1"
        ):
            return None
        loop = self.i.for_loops[-1]
        if loop.walked < 1 or index.left.value not in loop.variables:
            return None
        key = f"{base}[{index.left.value}]"
        recorded = self.state.events.get(key)
        if recorded is None or not recorded.recorded_by:
            return None
        this_pass = {id(op) for op in self.i.model.ops[loop.pass_start:]}
        return None if any(id(op) in this_pass for op in recorded.recorded_by) else key

    def is_current_stream_call(self, node: Optional[cst.BaseExpression]) -> bool:
        if type(node) is not cst.Call:
            return False
        if type(node.func) is cst.Attribute and node.func.attr.value in ("current_stream",):
            value = self.ev_callee_base(node.func.value)
            return isinstance(value, ModuleRef) and canonical(value.qualname) == "torch.cuda"
        name = self.i.resolver.qualify(node.func)
        return name in api.CURRENT_STREAM

    def ev_callee_base(self, node: cst.BaseExpression):
        if type(node) is cst.Name and node.value in self.state.env:
            return self.state.env[node.value]
        if type(node) is cst.Call and self.i.resolver.is_wrapper_call(node):
            return ModuleRef("torch.cuda")
        name = self.i.resolver.qualify(node)
        return ModuleRef(name) if name else None

    # -- entry points --------------------------------------------------------------------------

    def ev(self, node: Optional[cst.BaseExpression], hint: Optional[str] = None):
        if node is None:
            return None
        handler = self._handlers.get(node.__class__, _UNSEEN)
        if handler is _UNSEEN:
            handler = self._handlers[node.__class__] = _handler(self.__class__, node.__class__)
        if handler is None:
            return None
        function, takes_hint = handler
        return function(self, node, hint) if takes_hint else function(self, node)

    def condition(self, node: cst.BaseExpression) -> None:
        """A test the host evaluates: a tensor in it is converted with ``bool()``."""
        self._tested(node, self.ev(node))

    def _tested(self, node: cst.BaseExpression, value) -> None:
        # `if reset:` on a flag is not a read; `if found:` on what a call handed device tensors
        # returned is (a tensor, or a number the call read from one: the host waited for it).
        storages = [
            s for s in storages_of(value)
            if s.tensor or s.from_device or _computed_from_the_device(s)
        ]
        if storages:
            self.blocking_read(node, storages)

    def query_poll(self, test: cst.BaseExpression) -> bool:
        """``while not e.query():`` (or ``s.query()``, or a collective's ``while not
        work.is_completed():``, true for NCCL once the GPU has run it) polls until the work is
        done: a host sync."""
        if not (type(test) is cst.UnaryOperation and type(test.operator) is cst.Not):
            return False
        call = test.expression
        if not (type(call) is cst.Call and type(call.func) is cst.Attribute):
            return False
        if call.func.attr.value == "is_completed":
            work = self.ev(call.func.value)
            if not isinstance(work, WorkValue):
                return False
            self.sync_stream(call, work.stream, "query")
            return True
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

    def context(self, node: cst.BaseExpression, hint: Optional[str] = None):
        """Classify a ``with`` item: ("stream", StreamValue) for a stream context
        (``torch.cuda.stream(s)``), ("stream-itself", StreamValue) for a stream used as its own
        context manager (``torch.Stream(0)``), ("graph", None) or ("other", value)."""
        if type(node) is cst.Call:
            callee = self.callee_name(node.func)
            if callee in api.STREAM_CONTEXTS:
                stream_node = self.stream_context_argument(node)
                if stream_node is None:
                    return "none", None
                return "stream", self.as_stream(stream_node, self.ev(stream_node))
            if callee in api.GRAPH_CONTEXTS:
                for arg in node.args:
                    self.ev(arg.value)
                # `torch.cuda.graph.__enter__` starts with `torch.cuda.synchronize()` ("free as much
                # memory as we can for the graph"), then captures on its own stream.
                self.sync_device(node, "device", callee)
                return "graph", None
            if not node.args and type(node.func) is cst.Name:
                # `with stream_context():` where `stream_context = partial(torch.cuda.stream,
                # stream=s)` on some path (`contextlib.suppress` on the others: no stream there).
                bound = self.state.env.get(node.func.value)
                factories = bound.values if isinstance(bound, Alternatives) else (bound,)
                for factory in factories:
                    if isinstance(factory, StreamContextFactory):
                        return "stream", factory.stream
        value = self.ev(node, hint=hint)
        if isinstance(value, StreamValue):
            return "stream-itself", value
        # `with ctx:` where `ctx = torch.cuda.stream(s)`, or that on some paths and
        # `contextlib.nullcontext()` (no stream switch) on the others: judged on `s`, as a stream
        # chosen by configuration is (`chosen_stream`).
        contexts = {
            v.stream.key: v.stream
            for v in (value.values if isinstance(value, Alternatives) else (value,))
            if isinstance(v, StreamContext)
        }
        if len(contexts) == 1:
            return "stream", next(iter(contexts.values()))
        if isinstance(value, GraphValue):
            # `with g:` on a `torch.accelerator.Graph`: `__enter__` synchronizes the device,
            # then captures until the block ends.
            self.sync_device(node, "device", "torch.accelerator.Graph")
            return "graph", None
        return "other", None

    @staticmethod
    def stream_context_argument(node: cst.Call) -> Optional[cst.BaseExpression]:
        """The stream ``torch.cuda.stream(s)`` (or ``stream=s``) enters; None for no stream
        (``torch.cuda.stream(None)`` switches nothing)."""
        args = _positional(node) or [a.value for a in node.args if a.keyword and a.keyword.value == "stream"]
        if not args or (type(args[0]) is cst.Name and args[0].value == "None"):
            return None
        return args[0]

    def element_of(self, iterable, target: cst.BaseExpression, source: Optional[cst.BaseExpression] = None):
        """What a ``for`` loop over ``iterable`` (the value of ``source``) binds its target to.

        Handles appended to the list (``works.append(dist.all_reduce(..., async_op=True))``, kept
        under ``works[]``) are elements too, beside those of the literal it was bound to (``works
        = []``, perhaps appended to only on some paths). Of a list bound to ``[]`` here, what was
        appended is all there is."""
        key = _container_key(source) if source is not None else None
        kept = self.state.env.get(key + "[]") if key is not None else None
        if kept is not None:
            if iterable is None:
                return kept
            element = self._element_of(iterable, target, source)
            works = _works_among((element, kept))
            if works is not None:
                return works
            if isinstance(iterable, TupleValue) and not iterable.items:
                return kept  # `recv = []` filled here with `recv.append(t)`: exactly those
            return element
        element = self._element_of(iterable, target, source)
        if element is None and source is not None and not self.i.inline_stack:
            return self._element_of_a_parameter(target, source)
        return element

    def _not_a_tensor_here(self, source: Optional[cst.BaseExpression]) -> bool:
        """Is the walk in the arm of an ``isinstance`` test of ``source`` for other types than a
        tensor (``if isinstance(output, (list, tuple)): [move(v) for v in output]``), where what
        it iterates is a container, whatever else it may be elsewhere? Also True for a source
        that is no name."""
        name = dotted(source) if source is not None else None
        if name is None:
            return True
        for test in self.i.guards:
            if (
                type(test) is cst.Call and len(test.args) == 2
                and self.callee_name(test.func) == "isinstance"
                and dotted(test.args[0].value) == name
            ):
                kinds = test.args[1].value
                kinds = [e.value for e in kinds.elements] if type(kinds) is cst.Tuple else [kinds]
                if not any(self.callee_name(k) == "torch.Tensor" for k in kinds):
                    return True
        return False

    def _element_of_a_parameter(self, target: cst.BaseExpression, source: cst.BaseExpression):
        """An element of a parameter's container (``for t in tensors``, ``for k, v in
        losses.items()``, ``enumerate(tensors)``): made by the caller before the call, like the
        parameter itself, and a tensor once used as one. A storage of its own at each pass of a
        loop's body: the next iteration's element is another tensor (an all-reduce started on one
        parameter races with nothing the next iteration reads). None for other sources and
        targets."""
        container, items = source, False
        if type(source) is cst.Call and type(source.func) is cst.Attribute and not source.args:
            if source.func.attr.value not in ("items", "values"):
                return None
            container, items = source.func.value, source.func.attr.value == "items"
        if type(container) is not cst.Name or container.value not in self.i.params:
            return None
        held = self.state.env.get(container.value)
        if not isinstance(held, Storage) or held.origin != "param" or self.i.entry_op is None:
            return None
        if items:
            if not (isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2
                    and all(type(e.value) is cst.Name for e in target.elements)):
                return None
            name = target.elements[1].value.value
        elif type(target) is cst.Name:
            name = target.value
        else:
            return None
        storage = self.i.new_storage(name, source, origin="param", tensor=False, device=held.device)
        self.i.unknown_origin(storage)
        return TupleValue((HOST, storage)) if items else storage

    def _element_of(
        self, iterable, target: cst.BaseExpression, source: Optional[cst.BaseExpression] = None
    ):
        if isinstance(iterable, StreamList):
            index = dotted(target) or "i"
            return StreamValue(f"{iterable.key}[{index}]", f"stream `{iterable.key}[{index}]`", "created",
                               container=iterable.key, index=index, gpu=iterable.element_gpu(index),
                               every=type(target) is cst.Name)
        if isinstance(iterable, TupleValue):
            works = [v for v in iterable.items if isinstance(v, WorkValue)]
            if works:
                return works[0] if len(works) == 1 else Alternatives(tuple(works[:8]))
            values = [v for v in iterable.items if v is not None]
            if values and all(isinstance(v, Storage) for v in values):
                return values[0] if len(values) == 1 else Alternatives(tuple(values[:8]))
        if isinstance(iterable, Alternatives):
            return _works_among(self._element_of(v, target) for v in iterable.values)
        if isinstance(iterable, Storage) and _made_here(iterable.root):
            # `for row in out:` over a tensor: each row is a view of it (no data is read).
            return None if self._not_a_tensor_here(source) else iterable
        return None

    # -- leaves ----------------------------------------------------------------------------------

    def ex_Name(self, node: cst.Name):
        env = self.i.state.env
        if node.value in env:
            return env[node.value]
        if node.value in ("True", "False", "None"):
            return HOST
        stream = self.module_stream(node.value)
        if stream is not None:
            return stream
        name = self.i.resolver.qualify(node)
        if name and (name.startswith("torch") or name.split(".")[0] in _KNOWN_MODULES):
            # time/timeit: so that `time.perf_counter()` is a HOST_CLOCK; weakref: `weakref.ref`
            return ModuleRef(name)
        return None

    def module_stream(self, name: str) -> Optional[StreamValue]:
        """``side = torch.cuda.Stream()`` at the top of the module: one stream, made before any
        function runs (like an attribute's), that has waited for nothing; the same value at every
        read of the name in the scope."""
        streams = self.i.module_streams
        if name not in streams:
            made = self.i.module_constants.get(name)
            streams[name] = (
                StreamValue(name, f"stream `{name}`", "created", made)
                if type(made) is cst.Call and self.callee_name(made.func) in api.STREAM_FACTORIES
                else None
            )
        return streams[name]

    def ex_Integer(self, node):
        return HOST

    ex_Float = ex_Imaginary = ex_SimpleString = ex_ConcatenatedString = ex_Integer

    def ex_FormattedString(self, node: cst.FormattedString):
        for part in node.parts:
            if type(part) is cst.FormattedStringExpression:
                storages = storages_of(self.ev(part.expression))
                if storages:
                    self.blocking_read(part, storages)
        return HOST

    def ex_Attribute(self, node: cst.Attribute):
        key = dotted(node)
        env = self.i.state.env
        if key is not None and key in env:
            return env[key]
        attr = node.attr.value
        if attr in self.i.class_methods and type(node.value) is cst.Name and node.value.value == "self":
            value = read_property(self.i, node)
            if value is not NOT_A_PROPERTY:
                return value
        base = self.ev(node.value)
        if isinstance(base, ModuleRef):
            return ModuleRef(canonical(f"{base.qualname}.{attr}"))
        storages = storages_of(base)
        if storages:
            if attr in api.METADATA:
                self.mark_tensor(storages)
                return HOST
            if attr in api.VIEW_ATTRIBUTES or attr in api.OUTPUT_FIELDS:
                # A view, or a field of a model's output object (`out.logits`): memory the call
                # that made it wrote, as the object itself stands for it.
                self.mark_tensor(storages)
                return base
            return None
        if base is None and type(node.value) is cst.Call and self.i.resolver.is_wrapper_call(node.value):
            return ModuleRef(f"torch.cuda.{attr}")
        return None

    def ex_Subscript(self, node: cst.Subscript):
        base = self.ev(node.value)
        index_values = []
        self.index_depth += 1  # arithmetic in an index is usually integer arithmetic
        try:
            for element in node.slice:
                inner = element.slice
                if type(inner) is cst.Index:
                    index_values.append(self.ev(inner.value))
                else:
                    for part in (inner.lower, inner.upper, inner.step):
                        self.ev(part)
        finally:
            self.index_depth -= 1
        if isinstance(base, StreamList):
            inner = node.slice[0].slice
            text = self.i.model_code(inner.value) if type(inner) is cst.Index else "i"
            return StreamValue(f"{base.key}[{text}]", f"stream `{base.key}[{text}]`", "created",
                               container=base.key, index=text, gpu=base.element_gpu(text))
        if base is None or base is HOST or (
            isinstance(base, Alternatives) and all(v is None or v is HOST for v in base.values)
        ):
            # A list whose elements are known (appended, or made by a comprehension), also when
            # the name was `None` before on some path (`if self._staging is None: ...`).
            key = dotted(node.value)
            if key is not None and key + "[]" in self.state.env:
                return self.state.env[key + "[]"]
            stored = self.stored_item(node)
            if stored is not None:
                return stored
        if isinstance(base, WorkValue) or (
            isinstance(base, Alternatives) and all(isinstance(v, WorkValue) for v in base.values)
        ):
            return base  # `works[block][chunk]`: a handle from a nested container of handles
        if isinstance(base, TupleValue):
            inner = node.slice[0].slice
            if type(inner) is cst.Index and type(inner.value) is cst.Integer:
                position = int(inner.value.value)
                if -len(base.items) <= position < len(base.items):
                    return base.items[position]
            return None
        storages = storages_of(base)
        index_storages = [s for v in index_values for s in storages_of(v)]
        if storages and index_storages and (
            any(s.root.tensor for s in storages) or any(s.tensor for s in index_storages)
        ):
            if not any(s.tensor for s in index_storages):
                # `x[idx]` with an index of unknown kind: read x here, but `idx` may be an int.
                return self.tensor_op(node, reads=storages, result_label="<expr>")
            if self.masked(node, index_values):
                # `x[owner == g]`, or `mask = owner == g; x[mask]`, `x[mask, :]`: a boolean mask
                # selects as many elements as it holds true.
                return self.size_from_data(node, storages + index_storages, "<expr>")
            # Advanced indexing with a tensor: a gather, i.e. a new tensor. With a CUDA index the
            # indexed tensor is on the GPU too (PyTorch refuses a CPU one), and so is the result.
            on_gpu = any(s.device == "cuda" for s in index_storages)
            return self.tensor_op(node, reads=storages + index_storages, result_label="<expr>",
                                  device="cuda" if on_gpu else "same")
        if storages and not any(s.root.tensor for s in storages) and not any(
            type(e.slice) is cst.Slice for e in node.slice
        ):
            stored = self.stored_item(node)
            if stored is not None:
                return stored
            # `bufs[i]`, `bufs[t][j]` on something never used as a tensor, with an index that is not
            # known to be one either: most likely a list element, which is a value of its own (not
            # a view of the list).
            return self.i.new_storage(f"{storages[0].label}[]", node, origin="unknown", tensor=False)
        if storages:
            self.mark_tensor(storages)
            views = self.slice_views(node, base, storages)
            return base if views is None else views
        return None

    def masked(self, node: cst.Subscript, index_values: list) -> bool:
        """Is one index of ``node`` a boolean mask, the others static slices (``x[keep]``,
        ``x[keep, :]``, ``x[..., owner == g]``)? ``index_values`` are the values of its ``Index``
        elements, in order."""
        masks = 0
        values = iter(index_values)
        for element in node.slice:
            inner = element.slice
            if type(inner) is cst.Slice:
                continue
            value = next(values, None)
            if type(inner.value) is cst.Ellipsis:
                continue
            storages = storages_of(value)
            if type(inner.value) is cst.Comparison or (len(storages) == 1 and storages[0].mask):
                masks += 1
            else:
                return False
        return masks == 1

    def slice_views(self, node: cst.Subscript, base, storages: list):
        """``x[a:b, :]``, a static slice: a view of a region of the base, of each base a name may
        be bound to (``self.comm_output`` is ``self.output`` or a buffer of its own); None for any
        other subscript. Two different slice texts of one buffer are taken for disjoint regions
        (:meth:`Interpreter.access`), for a read (``x[n:]``) as for a store (``x[:n] = y``)."""
        if not all(type(e.slice) is cst.Slice for e in node.slice) or not (
            len(storages) == 1 or isinstance(base, Alternatives)
        ):
            return None
        text = ",".join(self.i.model_code(e) for e in node.slice)
        views = tuple(
            Storage(s.root.id, s.label, base=s, region=text, alloc_stream=s.alloc_stream,
                    device=s.device)
            for s in storages
        )
        return views[0] if len(views) == 1 else Alternatives(views)

    # -- operators -------------------------------------------------------------------------------

    def ex_BinaryOperation(self, node: cst.BinaryOperation, hint=None):
        # Long chains (`a + b + c + ...`) nest to the left: fold them iteratively, not recursively.
        spine = [node]
        while type(spine[-1].left) is cst.BinaryOperation:
            spine.append(spine[-1].left)
        value = self.ev(spine[-1].left)
        for link in reversed(spine):
            value = self.binary(link, value, self.ev(link.right), hint if link is node else None)
        return value

    def arithmetic_evidence(
        self, storages, operator: cst.CSTNode, operand: Optional[cst.BaseExpression] = None
    ) -> bool:
        """Is arithmetic on ``storages`` (``a - b``, ``a -= b``) evidence that they are tensors?
        Only when an operand is known to be one (``rank * n`` on two parameters, ``b -= 1`` on a
        loop index, are usually integer arithmetic), for ``@``, or inside a stream block, unless
        it counts: adds or subtracts a size (``total + p.numel()``) or steps a counter
        (``idx += 1``), as MindSpeed's prefetch loop does inside its copy stream's block.
        ``operand`` is the right-hand side."""
        if any(s.tensor for s in storages) or isinstance(
            operator, (cst.MatrixMultiply, cst.MatrixMultiplyAssign)
        ):
            return True
        if not self.i.block_streams or self.index_depth:
            return False
        if operand is None or not isinstance(operator, _COUNTING_OPERATORS):
            return True
        return not _a_size(operand) and not (
            # `idx += 1`: a counter; `y + 1` is as often a kernel.
            isinstance(operator, (cst.AddAssign, cst.SubtractAssign))
            and type(operand) is cst.Integer
            and operand.value == "1"
        )

    def binary(self, node: cst.BinaryOperation, left, right, hint):
        if type(node.operator) is cst.Modulo and isinstance(
            node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
        ):
            # `"%d faces" % n` formats its values on the host, as an f-string does: a device
            # tensor among them is read with a blocking copy (`"%d %d" % (t[0], t[1])` too).
            storages = [s for s in storages_of(right) if s.tensor]
            if storages:
                self.blocking_read(node, storages)
            return HOST
        if isinstance(left, TupleValue) or isinstance(right, TupleValue) or _sequence_expr(node):
            return None  # list/tuple arithmetic (`xs + [pad] * n`) is Python, not a kernel
        if left is CLOCK or right is CLOCK:
            return CLOCK  # `(now - batch["start_time"]) * 1000`: seconds, on the host
        storages = storages_of(left) + storages_of(right)
        if (
            storages
            and type(node.operator) is cst.FloorDivide
            and _a_size(node.left)
            and not any(s.tensor for s in storages)
        ):
            # `step = w.shape[0] // n`: a size split in parts is an integer, whatever the other
            # operand may be (a parameter).
            return HOST
        if storages:
            evidence = self.arithmetic_evidence(storages, node.operator, node.right)
            result = self.tensor_op(
                node, reads=storages, result_label=hint or "<expr>", evidence=evidence,
                device=_operands_device(storages),
            )
            if result is not None and type(node.operator) in _LOGICAL and all(s.mask for s in storages):
                result.mask = True  # `(lo <= y) & (y < hi)`: a mask of two masks
            return result
        return HOST if isinstance(left, HostValue) and isinstance(right, HostValue) else None

    def ex_Comparison(self, node: cst.Comparison, hint=None):
        values = [self.ev(node.left)] + [self.ev(c.comparator) for c in node.comparisons]
        if any(type(c.operator) in _MEMBERSHIP_OR_IDENTITY for c in node.comparisons) or any(
            v is CLOCK for v in values
        ):
            return HOST  # (`elapsed_ms < budget_ms`: a clock's seconds compared on the host)
        storages = [s for v in values for s in storages_of(v)]
        if storages:
            evidence = any(s.tensor for s in storages)
            result = self.tensor_op(
                node, reads=storages, result_label=hint or "<expr>", evidence=evidence,
                device=_operands_device(storages),
            )
            if result is not None:
                result.mask = True
            return result
        return HOST

    def ex_UnaryOperation(self, node: cst.UnaryOperation, hint=None):
        value = self.ev(node.expression)
        storages = storages_of(value)
        if type(node.operator) is cst.Not:
            if storages:
                self.blocking_read(node, storages)
            return HOST
        if storages:
            evidence = any(s.tensor for s in storages)
            result = self.tensor_op(node, reads=storages, result_label=hint or "<expr>", evidence=evidence)
            if result is not None and type(node.operator) is cst.BitInvert and all(s.mask for s in storages):
                result.mask = True  # `~keep`
            return result
        return value if isinstance(value, HostValue) else None

    def ex_BooleanOperation(self, node: cst.BooleanOperation, hint=None):
        left = self.ev(node.left)
        right = self.ev(node.right, hint)
        if type(node.operator) is cst.Or and isinstance(right, (EventValue, StreamValue)):
            # `e = producer_event or record(current_stream())`, `s = side or Stream()`: the object
            # the caller gave (streams and events are always true), else the fallback, as in `e if
            # e is not None else record(...)`. What is tested is an optional stream or event, not
            # a tensor converted with `bool()`, whatever the name of the parameter suggests.
            return left if isinstance(left, (EventValue, StreamValue)) else right
        self._tested(node.left, left)
        self._tested(node.right, right)
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
            if type(element) is cst.DictElement:
                self.ev(element.key)
            for storage in storages_of(self.ev(element.value)):
                storage.escapes = True
        return None

    def ex_ListComp(self, node, hint=None):
        element = node.elt
        if type(element) is cst.Call and self.callee_name(element.func) in api.STREAM_FACTORIES:
            key = hint or "streams"
            made = StreamValue(key, f"streams `{key}`", "created", element)  # the list's elements
            self.i.emit(OpKind.CREATE_STREAM, element, qualname="torch.cuda.Stream", target=made)
            streams = StreamList(key, f"streams `{key}`")
            device = _keyword(element, "device") or next(iter(_positional(element)), None)
            loops = list(self._comprehensions(node))
            if (
                type(device) is cst.Name and len(loops) == 1 and type(loops[0].target) is cst.Name
                and loops[0].target.value == device.value
            ):
                streams.gpu_per_element = self.i.model_code(loops[0].iter)
            return streams
        if hint is not None and type(node) is cst.ListComp and self._allocation(element):
            # `self._staging = [torch.empty(n).pin_memory() for _ in range(k)]`: one element
            # stands for all of them, kept as the list's element (`self._staging[i]`), so that
            # a pinned staging buffer taken from the list is known to live on the host.
            for comp in self._comprehensions(node):
                self.ev(comp.iter)
            made = self.ev(element)
            if storages_of(made) and all(s.on_host for s in storages_of(made)):
                self.state.env[hint + "[]"] = made
            return None
        (made,) = self._walk_comprehension(node, (element,))
        if hint is not None and holds_work(made):
            # `works = [dist.all_reduce(g, async_op=True) for g in grads]`: its elements are
            # those handles, for `for w in works: w.wait()` to wait on.
            self.state.env[hint + "[]"] = made
        return None

    def _allocation(self, node: cst.BaseExpression) -> bool:
        """Is ``node`` a ``torch`` factory call, perhaps pinned or moved to the host
        (``torch.empty(n).pin_memory()``)? Evaluating it does nothing but allocate."""
        while (
            type(node) is cst.Call
            and type(node.func) is cst.Attribute
            and node.func.attr.value in ("pin_memory", "cpu")
        ):
            node = node.func.value
        return type(node) is cst.Call and self.callee_name(node.func) in api.TENSOR_FACTORIES

    ex_GeneratorExp = ex_SetComp = ex_ListComp

    def ex_DictComp(self, node):
        self._walk_comprehension(node, (node.key, node.value))
        return None

    def _walk_comprehension(self, node, parts: tuple) -> list:
        """Walk a comprehension's element once, as one pass of a ``for`` loop: each ``for`` binds
        its names to an element of what it iterates, then its conditions and the element are
        evaluated (``{k: v.cpu().item() for k, v in losses.items()}`` reads every loss on the
        current stream and waits for it). The names are the comprehension's own: what they were
        bound to outside is put back after, without releasing anything."""
        env = self.state.env
        saved: dict = {}
        callers = set()
        for comp in self._comprehensions(node):
            iterable = self.ev(comp.iter)
            element = self.element_of(iterable, comp.target, comp.iter)
            names = target_names(comp.target)
            unpacked = {}
            if isinstance(element, TupleValue) and isinstance(comp.target, (cst.Tuple, cst.List)):
                unpacked = {
                    e.value.value: v for e, v in zip(comp.target.elements, element.items)
                    if type(e.value) is cst.Name
                }
            for name in names:
                saved.setdefault(name, env.get(name, _UNBOUND))
                env[name] = element if type(comp.target) is cst.Name else unpacked.get(name)
            if self.i.iterates_callers_values(comp.iter):
                callers |= names - self.i.param_elements
            self.i.param_elements |= callers
            for condition in comp.ifs:
                self.ev(condition.test)
        values = [self.ev(part) for part in parts]
        self.i.param_elements -= callers
        for name, value in saved.items():
            if value is _UNBOUND:
                env.pop(name, None)
            else:
                env[name] = value
        return values

    @staticmethod
    def _comprehensions(node):
        comp = node.for_in
        while comp is not None:
            yield comp
            comp = comp.inner_for_in

    def ex_Await(self, node):
        call = node.expression
        handed = _handed_to_a_thread(call)
        if handed is not None:
            return self._synchronize_in_a_thread(call, handed)
        return self.ev(call)

    def _synchronize_in_a_thread(self, call: cst.Call, function: cst.Attribute):
        """``await loop.run_in_executor(None, event.synchronize)`` (or ``asyncio.to_thread``): the
        coroutine goes on once a worker thread has synchronized the event or stream, which
        blocks the host's path here as calling it would, without blocking the event loop: the
        ``synchronize`` is given the meaning a direct call of it has."""
        self.ev(call.func)
        receiver = self.ev(function.value)
        if isinstance(receiver, ModuleRef):
            return self.qualified_call(call, canonical(f"{receiver.qualname}.synchronize"), None)
        event = self.as_event(function.value, receiver)
        if event is not None:
            return self.event_method(call, event, "synchronize")
        stream = self.as_stream(function.value, receiver)
        if stream is not None:
            return self.stream_method(call, stream, "synchronize")
        return HOST

    def stored_item(self, node: cst.Subscript):
        """What this function stored in the item a literal index reads (``batch['patches']``,
        ``outputs[0]``): under that key, else under a computed one (``for k, v in batch.items():
        batch[k] = v.to(device)`` replaces every item, so ``batch['patches']`` is one of those
        copies, not a value the caller made). None when nothing was stored, and for a computed
        index (``batch[k]`` in that loop reads the next item, not yet replaced)."""
        keys = item_keys(node)
        if keys is None or keys[0] == keys[1]:
            return None
        exact, any_key = keys
        env = self.state.env
        return env.get(exact) if exact in env else env.get(any_key)

    def ex_Yield(self, node):
        """``yield batch`` hands ``batch`` to the consumer, as ``return`` hands it to the caller:
        the consumer uses it on its current stream and drops it when it likes (the prefetching
        generator's case, :meth:`Interpreter.hand_off`). Not in a walk inlined at a call site:
        calling a generator runs none of its body there."""
        value = self.ev(node.value) if isinstance(node.value, cst.BaseExpression) else None
        items = self.i.items_handed_with(node.value)
        for storage in storages_of(value) + items:
            if not self.i.inline_stack and storage not in items:
                self.i.hand_off(storage, node)
            storage.escapes = True
        if not self.i.inline_stack:
            self.i.hand_off_items(items, node)
        return None

    def ex_NamedExpr(self, node: cst.NamedExpr):
        value = self.ev(node.value, dotted(node.target))
        self.i.assign(node.target, value, node)
        return value

    def ex_Lambda(self, node):
        return HOST
