"""Abstract interpretation of one function body into a timeline of ops.

The walk follows program order statement by statement, carrying a :class:`~synclint.model.state.State`:
which stream is current, what each stream has waited for (vector clocks), what the host has seen
complete, what each event captured, and the recent accesses of each tensor storage. Every time a
storage is accessed, the new access is checked against the storage's history: an earlier access on a
provably different stream, one of the two writing, that the new access is not ordered after, is a
:class:`~synclint.model.timeline.Hazard`. Releases (last reference dies) check lifetimes (SYN102).

Control flow is handled cheaply and without path explosion: both arms of an ``if`` from a copy of the
state, then a join; loop bodies twice (the second pass shows loop-carried hazards); ``try`` bodies
joined with their handlers (:mod:`synclint.model.control_flow`, mixed into :class:`Interpreter`).
Expression handling (calls, tensor methods) lives in :mod:`synclint.model.expressions`; this module
holds simple statements, bindings and the bookkeeping.
"""

from __future__ import annotations

import itertools
import re
from typing import Callable, Container, Iterable, Optional

import libcst as cst

from synclint.model import api
from synclint.model.bindings import Scope, iter_calls
from synclint.model.call_args import (
    _direction,
    is_flag_parameter,
)
from synclint.model.control_flow import ControlFlow, ForLoop
from synclint.model.expressions import any_item_key, item_keys
from synclint.model.inlining import return_from_inline
from synclint.model.resolver import ImportResolver, dotted
from synclint.model.state import EventState, State, alternatives, every_element, vc_join
from synclint.model.timeline import (
    Access,
    FunctionModel,
    Hazard,
    LifetimeHazard,
    Op,
    OpKind,
    ordered,
)
from synclint.model.torchapi import capture_method
from synclint.model.values import (
    HOST,
    HOST_NAME,
    STORAGE_HOLDERS,
    Alternatives,
    EventValue,
    Storage,
    StreamValue,
    TupleValue,
    WorkValue,
    default_stream,
    holds_work,
    storages_of,
)
from synclint.settings import AnalysisSettings

_storage_ids = itertools.count(1)
#: Exact type tests on hot paths: libcst's node classes are ABCs, and an ``isinstance`` that fails
#: goes through ``ABCMeta`` in Python (half a million times on a large repository).
_DISPLAYS = (cst.Tuple, cst.List)





#: Identifiers in a slice's text.
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


#: Calls by which a class orders its streams, or leaves the order to its callers' protocol (an
#: event it records, a wait method of its own).
_ORDERING_CALLS = frozenset({"wait_stream", "wait_event", "synchronize", "record_event", "record", "query", "wait"})
#: ... of which the method that returns the tensor may make these: the order it makes there is
#: the class's own, made before the return (the prefetcher's `next()` waiting, then preloading).
_OWN_ORDERING_CALLS = frozenset({"wait_stream"})


def _names_kept_values(value: Optional[cst.BaseExpression]) -> bool:
    """``return batch``, ``return self.x, self.y``: names or attributes, what a prefetcher keeps and
    hands out; not a value computed in the ``return`` itself (``return x.to(device)``)."""
    if type(value) is cst.Tuple:
        return bool(value.elements) and all(_names_kept_values(e.value) for e in value.elements)
    return type(value) in (cst.Name, cst.Attribute)


def _orders_streams(methods: dict, returning: cst.CSTNode) -> bool:
    """Does a class leave the order of its streams to its callers: a call of
    :data:`_ORDERING_CALLS` in any of its ``methods`` other than the ``returning`` one, or of any
    but :data:`_OWN_ORDERING_CALLS` in that one? (Asked only where a method returns a tensor a
    stream of its object wrote unordered: rarely.)"""
    for method in methods.values():
        names = _ORDERING_CALLS - _OWN_ORDERING_CALLS if method is returning else _ORDERING_CALLS
        if any(_called_name(call) in names for call in iter_calls(method)):
            return True
    return False


def _called_name(call: cst.Call) -> Optional[str]:
    """``wait_stream`` of ``torch.cuda.current_stream().wait_stream(s)``, ``f`` of ``f(x)``."""
    func = call.func
    return func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None


def _works_in(value) -> list[WorkValue]:
    """The ``Work`` handles in a value: itself, its alternatives, a tuple's items."""
    if isinstance(value, WorkValue):
        return [value]
    if isinstance(value, Alternatives):
        return [w for v in value.values for w in _works_in(v)]
    if isinstance(value, TupleValue):
        return [w for v in value.items for w in _works_in(v)]
    return []




class FunctionSummary:
    """What calling a module-level helper does, as far as streams are concerned."""

    def __init__(self) -> None:
        self.synchronizes = False
        #: It makes the host wait for the stream it is called on (``return t.item()`` in apex's
        #: ``to_python_float``): for the caller, a blocking read on its current stream.
        self.waits_for_current_stream = False
        self.returns_current_stream = False
        #: Every ``return`` gives back tensors it made on the device (``return torch.randint(...,
        #: device="cuda")``): for the caller, device tensors written on its current stream. None
        #: when not; 0 for one tensor; n for a tuple of n (``return input_ids, attention_mask``).
        self.returns_device_tensor: Optional[int] = None
        #: It ends by waiting (its last device work comes before its last synchronization or
        #: blocking read: ``b = a @ a; torch.cuda.synchronize(); return b``): for the caller, the
        #: tensors it returns were written before that wait, not after it.
        self.waits_last = False


_UNSEEN = object()


def _annotation_name(param: cst.Param) -> Optional[str]:
    """The class a parameter's annotation names, dotted or as a string (``"Runner"``); None for
    no annotation or any other form."""
    if param.annotation is None:
        return None
    annotation = param.annotation.annotation
    if type(annotation) is cst.SimpleString and isinstance(annotation.evaluated_value, str):
        return annotation.evaluated_value
    return dotted(annotation)


#: Parameter annotations (their last name) of values that are never tensors.
_HOST_ANNOTATIONS = api.PYTHON_SCALARS | frozenset(
    {"dict", "list", "tuple", "Callable", "Module", "device", "dtype"}
)
#: Parameter names that number or count the parts of a model or a schedule (``layer_idx``,
#: ``block_id``, ``stage_index``, ``layer_cnt``, ``num_layers``), or that give one size, length or
#: count (``sink_size``, ``seq_len``, ``token_count``; not ``seq_lens``, often a tensor of them):
#: integers, used to index lists and tensors, never tensors.
_ORDINAL_NAME = re.compile(
    r"(layer|block|stage|chunk|micro_?batch)_?(idx|id|index|num|number|no|cnt|count)"
    r"|(num|n)_(layers|blocks|stages|chunks|micro_?batches)"
    r"|[a-z0-9_]*_(size|len|length|cnt|count)"
)
#: Per interpreter class: statement node class -> its ``st_`` function (or None).
_STATEMENT_HANDLERS: dict[type, dict[type, Optional[Callable]]] = {}


def _method_of_another_object(node: cst.CSTNode) -> bool:
    """Is ``node`` a call ``<obj>.<method>(...)`` whose receiver is not ``self`` itself?"""
    func = node.func if type(node) is cst.Call else None
    return type(func) is cst.Attribute and not (
        type(func.value) is cst.Name and func.value.value == "self"
    )


class Interpreter(ControlFlow):
    """Walks one function (or module body) and fills a :class:`FunctionModel`."""

    def __init__(
        self,
        model: FunctionModel,
        resolver: ImportResolver,
        settings: AnalysisSettings,
        summaries: dict[str, FunctionSummary],
        counters: dict[str, int],
        attributes: Optional[dict] = None,
    ) -> None:
        from synclint.model.expressions import ExpressionEvaluator

        self.model = model
        #: Container name -> the item keys stored under it (``batch[*]``, ``batch['x']``), which
        #: rebinding the name drops (see :meth:`remember_item`).
        self._stored_items: dict[str, set[str]] = {}
        #: What getters of other objects handed back, by the call's code (see
        #: ``CallSemantics._got_from_a_store``).
        self.got_from_stores: dict[str, Storage] = {}
        self.resolver = resolver
        self.settings = settings
        #: Its parameters (and values met mid-function, such as queue items) were made by the
        #: caller on the caller's stream (``parameter-origin``): not for a thread's target, whose
        #: "caller" is another thread handing work over (``_Builder.thread_targets``).
        self.from_callers_stream = settings.parameter_origin == "caller-stream"
        self.summaries = summaries
        self.counters = counters
        self.entry = default_stream()
        self.state = State(current=self.entry)
        if attributes:
            for name, value in attributes.items():
                self.bind(name, value)
        self.iteration = 0
        self.loop_depth = 0
        #: Where each loop around the statement walked now started, in ``model.ops`` (outermost
        #: first): its next pass repeats the work from there (see ``finish``).
        self.loop_starts: list[int] = []
        #: Loops of callers a helper is walked from do not make its ops "in a loop" (SYN105).
        self.loop_base = 0
        self.block_streams: list[StreamValue] = []
        self.graph_depth = 0
        #: Captures begun by ``g.capture_begin()`` and not yet ended (:meth:`capture_by_hand`).
        self.manual_captures: list[cst.Call] = []
        self.params: set[str] = set()
        self.flag_params: set[str] = set()
        #: The `if` tests enclosing the current statement (their text only if `st_Assert` asks).
        self.guards: list[cst.BaseExpression] = []
        self._guard_code: dict[cst.BaseExpression, str] = {}
        #: Method names configured as synchronizing (`synchronizing-functions = ["Pool.store"]`).
        self.sync_methods = {name.rsplit(".", 1)[-1] for name in settings.synchronizing_functions if "." in name}
        self.param_elements: set[str] = set()
        #: Whether a `.backward()` was called yet (a gradient read after it is a device tensor's).
        self.backward_called = False
        #: Attribute names the enclosing class assigns somewhere -> the values it assigns (None
        #: for one not written out); None outside classes.
        self.assigned_attributes: Optional[dict] = None
        self._hazard_keys: set = set()
        self._lifetime_keys: set = set()
        self.returned_stream = False
        #: Methods of the enclosing class, walked at their call sites (:mod:`.inlining`).
        self.class_methods: dict[str, cst.FunctionDef] = {}
        #: The module's ``@contextmanager`` functions, walked where a ``with`` calls them
        #: (:mod:`.context_managers`).
        self.context_managers: dict[str, cst.FunctionDef] = {}
        #: The module's functions that make an event and return it, walked where they are called
        #: (:func:`scopes.event_makers`).
        self.event_makers: dict[str, cst.FunctionDef] = {}
        #: The call of an event maker being walked: the events it makes are keyed by that call.
        self.event_site: Optional[cst.CSTNode] = None
        #: Class name -> its methods that make the host wait (``"device"`` or ``"stream"``), for
        #: calls on an instance (``timer = CommTimer()`` ... ``timer.aggregate_ms()``,
        #: ``self.kv_cache.update(k, v)``): see ``_Builder.summarise_methods`` and
        #: ``Calls.instance_class``.
        self.synchronizing_methods: dict[str, dict[str, str]] = {}
        #: Attribute name -> the class of this file it always holds an instance of (``_Builder``).
        self.attribute_class: Callable[[str], Optional[str]] = lambda name: None
        #: Names the file assigns ``True`` or ``False`` (``x = False``), the only candidates of
        #: :meth:`constant_switch`: a container (``_Builder`` searches the text).
        self.bool_switches: Container[str] = frozenset()
        #: Does the file define a function or method of this name anywhere (``_Builder``: a
        #: search of the text, asked only of a few names)?
        self.file_defines: Callable[[str], bool] = lambda name: False
        #: The bindings of the scope being interpreted (:meth:`scope`, built when first asked).
        self.scope_bindings: Optional[Scope] = None
        #: ``torch.cuda.ExternalStream(ptr)`` wraps a stream this file created (``_Builder``).
        self.external_streams_are_new = False
        #: The file names a GPU somewhere (``cuda``, ``nccl``, ``device``...): see
        #: :func:`scopes.names_a_device`. Without it, ``Work.wait()`` is a host backend's, which
        #: blocks the host.
        self.file_names_a_device = True
        #: Module-level names bound once, to this value (:func:`scopes.module_constants`).
        self.module_constants: dict[str, cst.BaseExpression] = {}
        #: Module-level names read so far, to the stream each one is (None: not a stream).
        self.module_streams: dict[str, Optional[StreamValue]] = {}
        #: The interpreted function's parameters annotated with a name, by that name
        #: (``constructor: TorchCUDAGraphConstructor``, also written as a string).
        self.param_annotations: dict[str, str] = {}
        #: Enclosing ``for`` loops, innermost last.
        self.for_loops: list[ForLoop] = []
        #: Enclosing ``for`` loops over a counter (:meth:`ControlFlow.counter_guard`): [the
        #: statement, (counter, first value), its ``for_loops`` entry, what was learnt of its body].
        self.counted_loops: list[tuple] = []
        self.inline_stack: list[str] = []
        #: Per helper walked at a call site: parameter -> the expression the call writes out for
        #: it, or its default (:func:`synclint.model.inlining.inline_call`).
        self.inline_arguments: list[dict[str, cst.BaseExpression]] = []
        #: The statement of this function being walked (not of a helper walked at a call site).
        self.outer_statement: Optional[cst.CSTNode] = None
        #: The arms of configuration switches being walked (see ``Op.switches``).
        self.switches: tuple = ()
        self.inline_returns: list[list] = []
        self.inline_keep: list[Callable[[], set[int]]] = []  # see inlining._HeldBy
        #: Methods of the enclosing class known to return a tensor made on an attribute stream.
        self.method_returns: dict[str, StreamValue] = {}
        self.returned_storages: list[Storage] = []
        self.synchronized = False
        #: Dotted names the file treats as ``nn.Module`` objects (:func:`scopes.module_names`).
        self.module_names: frozenset[str] = frozenset()
        #: Names bound to a test of the current stream against another (``on_side_stream =
        #: torch.cuda.current_stream() != self.s``): see :meth:`_side_stream_tested`.
        self.stream_tests: dict[str, cst.Comparison] = {}
        #: The function waits on an event or stream its caller handed it (see :meth:`finish`).
        self.caller_orders_inputs = False
        #: Collective calls whose ``Work`` was handed to an unknown callee
        #: (``manager.set_bucket_handle(bucket, handle=work)``): that callee's owner waits on it,
        #: out of view, so what the work touches is not left open for the class's other methods.
        self.handed_work: set[int] = set()
        #: Local names bound to what an unknown call returned (``model = MaskGenerator(path)``),
        #: with the stream current at the call: tensors reached through them
        #: (``model.net.weight``) were made by that call, not by this function's caller.
        self.made_on: dict[str, StreamValue] = {}
        #: Storages whose ``alloc_op`` this interpreter set (cleared by :meth:`close`).
        self.allocated: list[Storage] = []
        self.exprs = ExpressionEvaluator(self)
        self._statement_handlers = _STATEMENT_HANDLERS.setdefault(self.__class__, {})

    # -- ops and clocks ----------------------------------------------------------------------------

    def emit(self, kind: OpKind, node: cst.CSTNode, stream: Optional[StreamValue] = None, **fields) -> Op:
        """Append an op. Device work (ENTRY, ACCESS, COPY, COLLECTIVE) advances its stream's clock."""
        stream = stream or self.state.current
        state = self.state
        vc = state.stream_vc(stream.key)
        op = Op(
            index=len(self.model.ops),
            kind=kind,
            node=node,
            stream=stream,
            vc=vc,
            host_vc=dict(state.host_vc),
            iteration=self.iteration,
            in_loop=self.loop_depth > self.loop_base,
            block_stream=self.block_streams[-1] if self.block_streams else None,
            in_graph_capture=self.graph_depth > 0,
            inlined=bool(self.inline_stack),
            call_site=self.outer_statement if self.inline_stack else None,
            switches=self.switches,
            **fields,
        )
        if op.on_device:
            self.counters[stream.key] = self.counters.get(stream.key, 0) + 1
            op.seq = self.counters[stream.key]
            after = dict(vc)
            after[stream.key] = op.seq
            state.vc[stream.key] = after
            state.issued[stream.key] = op.seq
        self.model.ops.append(op)
        return op

    def stream_now(self, stream: StreamValue) -> dict:
        """Everything enqueued on ``stream`` so far, plus what it had waited for. For the
        variable of a loop over a whole list of streams (``StreamValue.every``): on every element
        of the list (``for s in streams: main.wait_stream(s)``, ``s.synchronize()``)."""
        vc = self._key_now(stream.key)
        if stream.every and stream.container is not None:
            prefix = stream.container + "["
            for key in [k for k in self.counters if k.startswith(prefix) and k != stream.key]:
                vc = vc_join(vc, self._key_now(key))
        return vc

    def _key_now(self, key: str) -> dict:
        vc = dict(self.state.vc.get(key, {}))
        every = self.state.vc.get(every_element(key))
        if every:
            vc = vc_join(vc, every)
        count = self.counters.get(key, 0)
        if count:
            vc[key] = max(vc.get(key, 0), count)
        return vc

    def note_ordering(self, waiter: StreamValue, waited: StreamValue) -> None:
        """A parameter stream that the code orders against the current stream is meant as a side
        stream: from here on it is treated as distinct from the current stream."""
        for one, other in ((waiter, waited), (waited, waiter)):
            if one.origin == "parameter" and other.key == self.state.current.key:
                one.origin = "attribute"

    def wait_stream(self, waiter: StreamValue, waited: StreamValue) -> None:
        self.note_ordering(waiter, waited)
        now = self.stream_now(waited)
        self.runs_after(waiter.key, now)
        if waiter.every and waiter.container is not None:
            # `for s in self.streams: s.wait_stream(main)`: every element, `self.streams[k]` too.
            self.runs_after(waiter.container + "[*]", now)

    def runs_after(self, key: str, vc: dict) -> None:
        """What stream ``key`` runs from now on waits for everything ``vc`` covers (a
        ``wait_stream``, a ``wait_event``, or a hand-off the model takes for one)."""
        self.state.vc[key] = vc_join(self.state.stream_vc(key), vc)

    def host_sees(self, vc: dict) -> None:
        self.state.host_vc = vc_join(self.state.host_vc, vc)
        self.synchronized = True

    def host_sync_all(self) -> None:
        self.host_sees(self._everything_issued())

    def _everything_issued(self) -> dict:
        """The clock that covers every op issued so far, on every stream."""
        total: dict = {}
        for key in set(self.counters) | set(self.state.vc):
            total = vc_join(total, self.state.vc.get(key, {}))
            if self.counters.get(key):
                total[key] = max(total.get(key, 0), self.counters[key])
        return total

    def record_event(self, event: EventValue, stream: StreamValue, op: Op) -> None:
        self.state.events[event.key] = EventState(self.stream_now(stream), (op,), stream)

    def event_state(self, event: EventValue) -> Optional[EventState]:
        return self.state.events.get(event.key)

    # -- accesses, hazards, lifetimes -----------------------------------------------------------

    def access(self, op: Op, storage: Storage, mode: str) -> Access:
        region = storage.region
        storage = storage.root
        passes = (
            tuple((loop.node_id, loop.walked) for loop in self.for_loops) if region is not None else ()
        )
        access = Access(op, storage, mode, op.stream, region, frozenset(self.guards), passes)
        if self.graph_depth:
            return access  # captured into a CUDA graph: recorded now, executed at replay
        if mode == "write" and storage.alloc_op is None and op.site.node is storage.alloc_node:
            storage.alloc_op = op.site
            self.allocated.append(storage)
        for prev in self.state.history.get(storage.id, ()):
            if prev.stream.key == op.stream.key or (prev.mode == "read" and mode == "read"):
                continue
            if prev.region is not None and region is not None and (
                prev.region != region or self._other_iterations(prev.passes, passes, region)
            ):
                # Two different static slices of one buffer; or one slice text whose bounds name
                # the loop variable, in two iterations (`out[i * n:(i + 1) * n]`).
                continue
            if storage.on_host and prev.op.kind == OpKind.ENTRY:
                continue  # the caller filled host memory on the host: no stream is involved
            if not prev.stream.distinct_from(op.stream):
                continue
            if prev.op.switches and op.switches and _opposite_arms(prev.op.switches, op.switches):
                continue  # `if use_side_stream:` ... `else:` in two passes of a loop: one per call
            if prev.stream.origin == "collective" and op.stream.origin == "collective":
                continue  # ordered by the framework's own Work handling, which we cannot follow
            if ordered(prev.op, op.vc, op.stream):
                continue
            self._hazard(prev, access)
        self.state.remember(access)
        return access

    def _other_iterations(self, first: tuple, second: tuple, region: str) -> bool:
        """Were two accesses to one slice text made in different passes of an enclosing loop
        whose variables, or names that vary with them, the slice's bounds name? Then each pass's
        slice is another region of the buffer. ``first`` and ``second``: the passes of every
        enclosing ``for`` loop at each access (:meth:`ControlFlow.loop` walks a body twice).
        Which names vary is asked now, not at the first access: ``offset += n`` at the end of
        the body is seen after the first pass's accesses."""
        if not first or not second:
            return False
        words = set(_WORD.findall(region))
        varying = {loop.node_id for loop in self.for_loops if loop.names() & words}
        walked = dict(first)
        return any(
            loop_id in varying and walked.get(loop_id, walked_now) != walked_now
            for loop_id, walked_now in second
        )

    def _hazard(self, first: Access, second: Access) -> None:
        kind = {
            ("write", "read"): "read-after-write",
            ("read", "write"): "write-after-read",
            ("write", "write"): "write-after-write",
        }[(first.mode, second.mode)]
        key = (id(first.node), id(second.node), first.storage.label, kind)
        if key in self._hazard_keys:
            return
        self._hazard_keys.add(key)
        producer = self._common_producer(first, second)
        self.model.hazards.append(Hazard(second.storage, first, second, kind, producer))

    def _common_producer(self, first: Access, second: Access) -> Optional[Op]:
        """An op on a third stream that both streams waited for (SYN103), preferring a write of
        the tensor itself. None where one stream waited for the other (a point-to-point stream
        that started after the current stream's work, which reads its buffer too early): that is
        SYN101's plain race, not two siblings."""
        pair = (first.stream.key, second.stream.key)
        if first.op.vc.get(pair[1], 0) > 0 or second.op.vc.get(pair[0], 0) > 0:
            return None
        for key, count in first.op.vc.items():
            both = min(count, second.op.vc.get(key, 0))
            if key in pair or both <= 0:
                continue
            writes = [
                a.op for a in self.state.history.get(second.storage.id, ())
                if a.stream.key == key and a.mode == "write" and 0 < a.op.seq <= both
            ]
            if writes:
                return writes[-1]
            ops = [op for op in self.model.ops if op.stream.key == key and op.on_device and 0 < op.seq <= both]
            if ops:
                return ops[-1]
        return None

    def release(self, storage: Storage, node: cst.CSTNode) -> None:
        """The last local reference to ``storage`` dies at ``node``: check its cross-stream uses."""
        storage = storage.root
        if storage.origin != "local" or storage.escapes or storage.alloc_stream is None:
            return
        alloc = storage.alloc_stream
        uses = [
            a
            for a in self.state.history.get(storage.id, ())
            if a.stream.distinct_from(alloc)
            and a.op.seq
            and a.op.origin_op is None  # replayed from another method: may run after this release
            and a.stream.origin != "collective"  # process groups keep their tensors alive themselves
            # A method of another object (`self.pool.store_tensor(t)`) may copy the tensor with a
            # blocking copy, synchronize or keep it before it returns (see `Op.opaque`); a
            # callable attribute of this one (`self.model(batch)`) is a module's call.
            and not (a.op.opaque and _method_of_another_object(a.op.node))
        ]
        if not uses:
            return
        alloc_vc = self.state.stream_vc(alloc.key)
        alloc_op = self._alloc_op(storage)
        # What the side stream had waited for when the tensor was made: its allocation's op, or
        # (`torch.empty` launches nothing) the first work on the tensor there, such as `out=`.
        made = alloc_op or next(
            (a.op for a in self.state.history.get(storage.id, ()) if a.stream.key == alloc.key), None
        )
        release_op: Optional[Op] = None
        for use in uses:
            if alloc_vc.get(use.stream.key, 0) >= use.op.seq:
                continue
            if made is not None and made.switches and use.op.switches and _opposite_arms(
                made.switches, use.op.switches
            ):
                continue  # made under one arm of a configuration switch, used under the other
            if alloc.key != self.entry.key and made is not None:
                # A side stream that waits for the consumer's stream (directly, or for the main
                # stream once the main stream has waited for the consumer) before its work keeps
                # that discipline, so its next allocation is ordered after the use too.
                if made.vc.get(use.stream.key, 0) > 0:
                    continue
                entry_now = self.state.stream_vc(self.entry.key)
                if made.vc.get(self.entry.key, 0) > 0 and entry_now.get(use.stream.key, 0) >= use.op.seq:
                    continue
            if any(s.key == use.stream.key for s in storage.recorded_streams):
                continue
            key = (self._made_at(storage), id(use.node))
            if key in self._lifetime_keys:
                continue
            self._lifetime_keys.add(key)
            if release_op is None:
                release_op = self.emit(OpKind.RELEASE, node, reads=(storage,))
            self.model.lifetime_hazards.append(
                LifetimeHazard(storage, alloc_op, use, release_op, names=self.names_of(storage),
                               loop_start=self.loop_starts[0] if self.loop_starts else None)
            )

    @staticmethod
    def _made_at(storage: Storage) -> int:
        """Where ``storage`` was made, for reporting one hazard per place: the tensors a loop makes
        at one line on each pass, released at the next pass's rebinding and at the function's end,
        are one finding at each use, not two."""
        return id(storage.alloc_node) if storage.alloc_node is not None else storage.id

    def _alloc_op(self, storage: Storage) -> Optional[Op]:
        return storage.alloc_op

    def release_if_unreferenced(self, value, node: cst.CSTNode) -> None:
        for storage in storages_of(value):
            root = storage.root
            if root.origin != "local" or root.escapes or root.alloc_stream is None:
                continue
            if not any(a.stream.key != root.alloc_stream.key for a in self.state.history.get(root.id, ())):
                continue  # used on its own stream only: nothing to check, skip the reference scan
            if not self._referenced(root):
                self.release(root, node)

    def _referenced(self, storage: Storage) -> bool:
        root = storage.root
        # Inside a helper walked where it is called, the caller's names still hold what they held
        # (`d = (d - lo) / hi` rebinds the helper's parameter, not the caller's `depth`).
        if any(root.id in held() for held in self.inline_keep):
            return True
        env = self.state.env
        for name in root.names:
            value = env.get(name)
            if value is not None and any(root is s.root for s in storages_of(value)):
                return True
        return False

    def names_of(self, storage: Storage) -> tuple:
        """Names bound to ``storage`` (or a view of it) right now, plain locals first."""
        root = storage.root
        names = [n for n in root.names if any(s.root is root for s in storages_of(self.state.env.get(n)))]
        return tuple(sorted(names, key=lambda n: ("." in n, n)))

    def stored_values(self, name: str) -> list:
        """What this function stored in the items of the local container ``name`` (``d[k] = t``),
        as they are now."""
        keys = self._stored_items.get(name)
        if not keys:
            return []
        env = self.state.env
        return [env[key] for key in sorted(keys) if env.get(key) is not None]

    def bind(self, name: str, value) -> None:
        """Bind a name in the environment, remembering it on the storages it refers to. A
        container rebound (a loop's next ``batch``) forgets the items stored in the old one."""
        env = self.state.env
        env[name] = value
        items = self._stored_items.get(name)
        if items:
            for key in items:
                env.pop(key, None)
        for storage in storages_of(value):
            storage.root.names.add(name)

    def release_locals(
        self,
        node: cst.CSTNode,
        keep: Iterable[Storage] = (),
        keep_ids: Iterable[int] | Callable[[], Iterable[int]] = (),
    ) -> None:
        """Release the storages local names refer to, except those in ``keep`` or ``keep_ids``
        (ids, or a function giving them: asked only when needed) and those an object attribute
        still holds. The attributes and ``keep_ids`` are looked at only when some local storage is
        left to release: in a method of a large class the environment is mostly ``self.`` names,
        and most functions end with nothing to release."""
        env = self.state.env
        kept = {s.root.id for s in keep}
        pending: list[Storage] = []
        seen: set[int] = set()
        holders = STORAGE_HOLDERS
        for name, value in env.items():
            if value.__class__ not in holders or "." in name:
                continue
            for storage in storages_of(value):
                storage = storage.root
                if storage.id not in kept and storage.id not in seen:
                    seen.add(storage.id)
                    pending.append(storage)
        if not pending:
            return
        held = set(keep_ids() if callable(keep_ids) else keep_ids)
        for name, value in env.items():
            if value.__class__ in holders and "." in name:
                held.update(s.root.id for s in storages_of(value))  # still held by the object
        for storage in pending:
            if storage.id not in held:
                self.release(storage, node)

    # -- function entry -----------------------------------------------------------------------

    def new_storage(self, label: str, node: Optional[cst.CSTNode], **fields) -> Storage:
        return Storage(next(_storage_ids), label, alloc_node=node, **fields)

    def enter_function(self, node: cst.FunctionDef, is_method: bool) -> None:
        params = node.params
        every = list(params.posonly_params) + list(params.params) + list(params.kwonly_params)
        for index, param in enumerate(every):
            name = param.name.value
            if is_method and index == 0 and name in ("self", "cls"):
                continue
            self.params.add(name)
            annotation = _annotation_name(param)
            if annotation is not None:
                self.param_annotations[name] = annotation
            if is_flag_parameter(param):
                self.flag_params.add(name)
            self.bind(name, self._param_value(param))
        for star in (params.star_arg, params.star_kwarg):
            if type(star) is cst.Param:
                self.state.env[star.name.value] = None

    def _param_value(self, param: cst.Param):
        name = param.name.value
        annotation = dotted(param.annotation.annotation) if param.annotation else None
        tail = (annotation or "").rsplit(".", 1)[-1]
        lowered = name.lower()
        if tail in ("Stream",) or (tail == "" and "stream" in lowered):
            return StreamValue(name, f"stream `{name}`", "parameter", param)
        if tail == "Event" or (tail == "" and "event" in lowered):
            return EventValue(name, f"event `{name}`", None, param, origin="parameter")
        # `device: torch.device` (or a bare `device`) says where tensors go: it is not one.
        if tail in _HOST_ANNOTATIONS or (tail == "" and name in ("device", "dtype")):
            return HOST
        if tail == "" and _ORDINAL_NAME.fullmatch(lowered):
            return HOST  # `layer_idx`: which layer, an integer
        if name in self.module_names:
            return None  # `model.eval()` somewhere in the file: a module, no tensor
        if param.default is not None and type(param.default) is not cst.Name:
            if isinstance(param.default, (cst.Integer, cst.Float, cst.SimpleString, cst.Dict, cst.List, cst.Tuple)):
                return HOST
        if type(param.default) is cst.Name and param.default.value in ("True", "False"):
            return HOST
        storage = self.new_storage(name, param, origin="param", tensor=(tail == "Tensor"),
                                   device="cpu" if HOST_NAME.search(name) else None)
        if self.from_callers_stream:
            op = self.emit(OpKind.ENTRY, param, writes=(storage,), note="by the caller")
            self.access(op, storage, "write")
        return storage

    # -- statements --------------------------------------------------------------------------------

    def run_block(self, statements: Iterable[cst.CSTNode]) -> None:
        opened = len(self.manual_captures)
        for stmt in statements:
            if self.state.dead:
                break
            self.statement(stmt)
        while len(self.manual_captures) > opened:  # a capture begun here ends with its block
            self.manual_captures.pop()
            self.graph_depth -= 1

    def suite(self, suite: cst.BaseSuite) -> None:
        self.run_block(suite.body)

    def statement(self, stmt: cst.CSTNode) -> None:
        handlers = self._statement_handlers
        handler = handlers.get(stmt.__class__, _UNSEEN)
        if handler is _UNSEEN:  # a dictionary look-up, not a method name built per statement
            handler = handlers[stmt.__class__] = getattr(self.__class__, f"st_{stmt.__class__.__name__}", None)
        if handler is None:
            return
        if self.inline_stack:
            handler(self, stmt)
            return
        outer, self.outer_statement = self.outer_statement, stmt
        try:
            handler(self, stmt)
        finally:
            self.outer_statement = outer

    def st_SimpleStatementLine(self, stmt: cst.SimpleStatementLine) -> None:
        for small in stmt.body:
            if self.state.dead:
                return
            self.statement(small)

    def st_SimpleStatementSuite(self, stmt: cst.SimpleStatementSuite) -> None:
        self.run_block(stmt.body)

    def st_Expr(self, stmt: cst.Expr) -> None:
        value = stmt.value
        method = capture_method(value)
        if method is not None:
            self.capture_by_hand(method, value)
        self.exprs.ev(value)

    def capture_by_hand(self, method: str, call: cst.Call) -> None:
        """``g.capture_begin()`` ... ``g.capture_end()``: what is issued between the two is
        captured into a CUDA graph (recorded, run only at replay), as in ``with
        torch.cuda.graph(g):``. A capture still open at the end of the block it began in ends
        there (:meth:`run_block`): a begin on one path never hides the rest of a function."""
        if method == "capture_begin":
            self.emit(OpKind.GRAPH_CAPTURE, call)
            self.manual_captures.append(call)
            self.graph_depth += 1
        elif self.manual_captures:
            self.manual_captures.pop()
            self.graph_depth -= 1

    def st_Assign(self, stmt: cst.Assign) -> None:
        target = stmt.targets[0].target
        if (
            len(stmt.targets) == 1
            and type(target) in _DISPLAYS
            and type(stmt.value) in _DISPLAYS
            and len(target.elements) == len(stmt.value.elements)
        ):
            # `s1, s2 = Stream(), Stream()`: each value is named after its own target.
            values = [
                self.exprs.ev(v.value, hint=dotted(t.value) or "tensor")
                for t, v in zip(target.elements, stmt.value.elements)
            ]
            for t, value in zip(target.elements, values):
                self.assign(t.value, value, stmt)
            if self.for_loops:
                for t, v in zip(target.elements, stmt.value.elements):
                    self.varies_by_iteration([t.value], v.value)
            return
        if type(target) is cst.Name:
            if type(stmt.value) is cst.Comparison:
                self.stream_tests[target.value] = stmt.value
            elif self.stream_tests:
                self.stream_tests.pop(target.value, None)  # rebound: no longer that test
        hint = dotted(target) or _item_hint(target, self.model_code) or "tensor"
        if self.manual_captures and capture_method(stmt.value) == "capture_end":
            self.capture_by_hand("capture_end", stmt.value)  # `graph = wp.capture_end()`
        self.exprs.stored_node = stmt.value
        value = self.exprs.ev(stmt.value, hint=hint)
        for target in stmt.targets:
            self.assign(target.target, value, stmt)
        if self.for_loops:
            self.varies_by_iteration([t.target for t in stmt.targets], stmt.value)

    def st_AnnAssign(self, stmt: cst.AnnAssign) -> None:
        if stmt.value is not None:
            value = self.exprs.ev(stmt.value, hint=dotted(stmt.target) or "tensor")
            self.assign(stmt.target, value, stmt)

    def st_AugAssign(self, stmt: cst.AugAssign) -> None:
        if self.for_loops:
            self.varies_by_iteration([stmt.target], None)
        target = self.exprs.ev(stmt.target)
        value = self.exprs.ev(stmt.value)
        if storages_of(target):
            evidence = self.exprs.arithmetic_evidence(
                storages_of(target) + storages_of(value), stmt.operator, stmt.value
            )
            self.exprs.tensor_op(
                stmt, reads=storages_of(value), writes=storages_of(target), inplace=True,
                evidence=evidence,
            )
        elif storages_of(value) and type(stmt.target) is cst.Name:
            # ``total += loss`` with a Python number on the left: the result is a new tensor.
            result = self.exprs.tensor_op(stmt, reads=storages_of(value), result_label=stmt.target.value)
            self.assign(stmt.target, result, stmt)

    def st_Del(self, stmt: cst.Del) -> None:
        targets = stmt.target.elements if type(stmt.target) is cst.Tuple else [stmt.target]
        for target in targets:
            node = target.value if isinstance(target, cst.BaseElement) else target
            key = dotted(node)
            if key and key in self.state.env and "." not in key:
                old = self.state.env.pop(key)
                self.release_if_unreferenced(old, stmt)

    def st_Return(self, stmt: cst.Return) -> None:
        if return_from_inline(self, stmt):
            return
        self.exprs.stored_node = stmt.value
        value = self.exprs.ev(stmt.value) if stmt.value is not None else None
        returned = storages_of(value)
        items = self.items_handed_with(stmt.value)
        returned = returned + items
        self.returned_storages.extend(returned)
        # A `Work` returned is the caller's to wait on (`return work, output`), as one an unknown
        # callee took: its collective is not left open for the class's other methods.
        self.handed_work.update(id(work.node) for work in _works_in(value))
        kept = _names_kept_values(stmt.value)
        for storage in returned:
            if storage not in items:
                self.hand_off(storage, stmt)
                if kept:
                    self.returned_unordered(storage, stmt)
            storage.escapes = True
        self.hand_off_items(items, stmt)
        if isinstance(value, StreamValue):
            value.escapes = True
            if value.key == self.state.current.key:
                self.returned_stream = True
        self.release_locals(stmt, keep=returned)
        self.state.dead = True

    def st_Raise(self, stmt: cst.Raise) -> None:
        if stmt.exc is not None:
            self.exprs.ev(stmt.exc)
        self.state.dead = True

    def st_Assert(self, stmt: cst.Assert) -> None:
        """``assert not cond`` rules out the paths on which ``cond`` held: accesses made under
        ``if cond:`` cannot have happened on this path (Megatron's exclusive all-reduce and
        reduce-scatter)."""
        self.exprs.condition(stmt.test)
        test = stmt.test
        negated = type(test) is cst.UnaryOperation and type(test.operator) is cst.Not
        excluded = self.model_code(test.expression) if negated else f"not {self.model_code(test)}"
        is_excluded: dict = {}  # `if` test node -> is it this condition (equal text)?

        def under_excluded(access) -> bool:
            for test in access.guards:
                hit = is_excluded.get(test)
                if hit is None:
                    hit = is_excluded[test] = self.guard_text(test) == excluded
                if hit:
                    return True
            return False

        for sid, accesses in list(self.state.history.items()):
            kept = tuple(a for a in accesses if not (a.guards and under_excluded(a)))
            if len(kept) != len(accesses):
                self.state.history[sid] = kept

    def guard_text(self, test: cst.BaseExpression) -> str:
        """The source text of an ``if`` test (equal texts are the same condition), computed once."""
        text = self._guard_code.get(test)
        if text is None:
            text = self._guard_code[test] = self.model_code(test)
        return text

    def _made_after_the_callers_work(self, op: Op) -> bool:
        """Was ``op`` (on a side stream) ordered after work of the caller's stream: by a wait of
        its stream, or, in a loop, by a host synchronization the loop makes each pass (which
        also orders the next pass's reuse after what the consumer did with the last one)? Not by
        a synchronization before the loop (a blocking upload of constants), which happens once."""
        seen = op.vc.get(self.entry.key, 0)
        if seen == 0:
            return False
        if seen > op.host_vc.get(self.entry.key, 0) or not self.loop_starts:
            return True
        return any(o.kind == OpKind.HOST_SYNC for o in self.model.ops[self.loop_starts[0]:])

    def items_handed_with(self, value: Optional[cst.BaseExpression]) -> list[Storage]:
        """``out[k] = v.to("cuda", non_blocking=True)`` on a side stream, then ``return out`` or
        ``yield out``: the tensors stored in the local container's items are handed over with it."""
        if type(value) is not cst.Name or value.value not in self._stored_items:
            return []
        env = self.state.env
        return [s for key in sorted(self._stored_items[value.value]) for s in storages_of(env.get(key))]

    def hand_off_items(self, items: list[Storage], node: cst.CSTNode) -> None:
        """:meth:`hand_off` the items of a container returned or yielded. They are reached by a
        loop the model does not follow element by element (``for v in batch.values():
        v.record_stream(...)``): a function that records streams at all is taken to record
        theirs."""
        if any(op.kind == OpKind.RECORD_STREAM for op in self.model.ops):
            return
        for storage in items:
            self.hand_off(storage, node)

    def returned_unordered(self, storage: Storage, node: cst.CSTNode) -> None:
        """A method returns a tensor that a stream of its object copied, and nothing has made the
        caller's stream wait for that copy (the apex prefetcher without its ``wait_stream``:
        ``x = self.next_input; self.preload(); return x``). The caller uses it on its stream: a
        read there, at the ``return``, unordered after the write (:meth:`access` says whether).

        Only in a class none of whose other methods orders streams (no wait, record,
        synchronization or query written in them; the returning method may make the caller's
        stream wait, too early): a class that does leaves the order to a protocol of its own
        (a wait method, an event for its callers), and a function handed its stream leaves it
        to its caller."""
        root = storage.root
        if self.inline_stack or not self.class_methods or root.device == "cpu":
            return
        entry_vc = self.state.stream_vc(self.entry.key)
        writes = [
            a for a in self.state.history.get(root.id, ())
            if a.mode == "write"
            # A non-blocking upload or copy: what a prefetcher hands out. (A blocking one from the
            # host has finished when it returns; one of a tensor already there copies nothing.)
            and a.op.site.copy is not None
            and a.op.site.copy.non_blocking
            and a.stream.origin in ("attribute", "created")
            and a.stream.distinct_from(self.entry)
            and not ordered(a.op, entry_vc, self.entry)
        ]
        if not writes or any(h.storage is root for h in self.model.hazards):
            return  # (already read unordered here: one finding says it)
        if _orders_streams(self.class_methods, self.model.node):
            return
        op = self.emit(OpKind.RELEASE, node, stream=self.entry, reads=(root,), note="returned")
        self.access(op, root, "read")

    def hand_off(self, storage: Storage, node: cst.CSTNode) -> None:
        """A tensor allocated on a side stream is returned to a caller on the entry stream.

        Only when this function handed it over (the entry stream waited for its allocation), since
        then the caller will use it on its current stream and, when it drops it, the block goes back
        to the side stream's pool: without ``record_stream`` the side stream may reuse it early.
        """
        storage = storage.root
        alloc = storage.alloc_stream
        if alloc is None or storage.origin == "param" or not alloc.distinct_from(self.entry):
            return
        if storage.device == "cpu" or any(s.key == self.entry.key for s in storage.recorded_streams):
            return
        writes = [a for a in self.state.history.get(storage.id, ()) if a.stream.key == alloc.key and a.op.seq]
        if not writes:
            return
        entry_vc = self.state.stream_vc(self.entry.key)
        if not all(entry_vc.get(alloc.key, 0) >= w.op.seq for w in writes):
            return  # not handed over: an unordered use would be SYN101's business
        if any(self._made_after_the_callers_work(w.op) for w in writes):
            # The side stream waited for the caller's stream before making it: code that makes
            # the side stream wait for the main stream before each use orders the reuse too.
            return
        key = (self._made_at(storage), id(node))
        if key in self._lifetime_keys:
            return
        self._lifetime_keys.add(key)
        op = self.emit(OpKind.RELEASE, node, stream=self.entry, reads=(storage,), note="returned")
        used_here = [a for a in self.state.history.get(storage.id, ()) if a.stream.key == self.entry.key and a.op.seq]
        use = used_here[-1] if used_here else Access(op, storage, "read", self.entry)
        self.model.lifetime_hazards.append(
            LifetimeHazard(storage, self._alloc_op(storage), use, op, how="handed-off",
                           names=self.names_of(storage),
                           loop_start=self.loop_starts[0] if self.loop_starts else None)
        )

    # -- binding --------------------------------------------------------------------------------

    def made_on_stream(self, key: Optional[str]) -> Optional[StreamValue]:
        """The stream on which a call here made the object ``key`` names (``m``, ``m.module``)."""
        return self.made_on.get(key.split(".", 1)[0]) if key and self.made_on else None

    def assign(self, target: cst.BaseExpression, value, stmt: cst.CSTNode) -> None:
        if type(target) is cst.Name:
            old = self.state.env.get(target.value)
            self.bind(target.value, value)
            source = getattr(stmt, "value", None)
            if type(source) is cst.Attribute:
                self.alias_items(target.value, source)
            elif type(source) is cst.Name and source.value in self._stored_items:
                self.alias_local_items(target.value, source.value)
            call = getattr(stmt, "value", None)
            if type(call) is cst.Call and (
                value is None or isinstance(value, Storage) and value.alloc_node is call
            ):
                # Made by this call, here, on this stream (an object, or what may be a tensor):
                # its attributes are too (`m = Loss(cfg)` then `m.ln_var.item()`).
                self.made_on[target.value] = self.state.current
            elif self.made_on and (made := self.made_on_stream(dotted(call))) is not None:
                self.made_on[target.value] = made  # `loss = module.loss`: part of that object
            else:
                self.made_on.pop(target.value, None)
            _name_fresh(value, target.value)
            if old is not None and old is not value:
                self.release_if_unreferenced(old, stmt)
        elif type(target) is cst.Attribute:
            key = dotted(target)
            self.arguments_kept(value)
            if key is not None and key.startswith(("self.", "cls.")):
                # The object holds a reference while the attribute is bound (FSDP-style held
                # references); rebinding it may drop the last reference to the old value.
                old = self.state.env.get(key)
                self.bind(key, value)
                _name_fresh(value, key)  # `self.pos = pos.clone().detach()`
                if old is not None and old is not value:
                    self.release_if_unreferenced(old, stmt)
            else:
                for storage in storages_of(value):
                    storage.escapes = True
            if isinstance(value, StreamValue):
                value.escapes = True
            if key is not None:
                if key.startswith(("self.", "cls.")):
                    constructed = isinstance(value, StreamValue) and value.origin in ("created", "external")
                    if constructed and "@" in value.key:
                        # A stream stored in an attribute is known by the attribute's name.
                        value.label = f"stream `{key}`"
            else:
                self.exprs.ev(target.value)
        elif type(target) in (cst.Tuple, cst.List):
            items = value.items if isinstance(value, TupleValue) else None
            for index, element in enumerate(target.elements):
                inner = element.value
                if items is not None and index < len(items) and type(element) is not cst.StarredElement:
                    self.assign(inner, items[index], stmt)
                else:
                    # `out, lse = f(x)`: each part of an unknown result, made where the call ran;
                    # a tensor only if used as one (`ok, ids = f(x)` is often a flag and a list).
                    # Not written on the current stream here: such parts are as often host values.
                    part = self.exprs.derived(value, dotted(inner) or "tensor", stmt)
                    self.assign(inner, part, stmt)
        elif type(target) is cst.Subscript:
            base = self.exprs.ev(target.value)
            for element in target.slice:
                self.exprs.ev(getattr(element.slice, "value", None))
            if holds_work(value):
                self.keep_in_container(target.value, value)
            elif isinstance(stmt_value := getattr(stmt, "value", None), cst.Name) and stmt_value.value + "[]" in self.state.env:
                # `self.works[i] = works`: the handles kept in `works` are now kept there too.
                self.keep_in_container(target.value, self.state.env[stmt_value.value + "[]"])
            base_storages = storages_of(base)
            if base_storages and any(s.root.tensor for s in base_storages):
                # `o[:n, :] = y` writes a region of `o` (`o[n:, :]` is another one).
                views = self.exprs.slice_views(target, base, base_storages)
                written = base_storages if views is None else storages_of(views)
                sources = storages_of(value)
                direction = _store_direction(sources, written)
                if direction is not None:
                    # `host[:] = gpu_tensor`: a copy between the host and the device, done the
                    # blocking way (as `host.copy_(gpu_tensor)`).
                    self.exprs.emit_copy(stmt, sources[0], written[0], False, direction)
                elif _downloads_on_some_paths(sources, written):
                    # `host[slot] = grad`, `grad` on the GPU on one path and on the CPU on another:
                    # a blocking download or a copy on the host; no device work is left running.
                    for source in sources:
                        if source.root.device == "cuda":
                            self.exprs.emit_copy(stmt, source, written[0], False, "d2h")
                elif all(w.root.device is None for w in written) and any(
                    s.on_host for s in sources
                ):
                    # `parts[0] = host` into a value of unknown device (`parts = quantize(x)`):
                    # a slot of a list, an upload ordered on the current stream, or a CPU copy;
                    # only the last reads `host` on the host, and nothing says it is that one.
                    self.exprs.tensor_op(
                        stmt, reads=[s for s in sources if not s.on_host], writes=written,
                        inplace=True,
                    )
                else:
                    self.exprs.tensor_op(stmt, reads=sources, writes=written, inplace=True)
            else:
                # `bufs[k] = v` on a value never used as a tensor: a list or dict store on the host.
                for storage in storages_of(value):
                    storage.escapes = True
                self.arguments_kept(value)
                self.remember_item(target, value)
        elif type(target) is cst.StarredElement:
            self.assign(target.value, None, stmt)

    def remember_item(self, target: cst.Subscript, value) -> None:
        """``d[k] = t``: remember ``t`` for later reads of ``d``'s items (see
        :meth:`ExpressionEvaluator.stored_item`); only tensors, the values whose origin matters.
        Items stored in an attribute's container (``self.batch[k] = t``, BasicSR's prefetcher)
        are remembered for one purpose only: a name later bound to the container and returned
        (``batch = self.batch`` ... ``return batch``) hands them to the caller (see
        :meth:`alias_items`); reads of ``self.batch[k]`` are not answered from them (another
        method may have stored something else since)."""
        if not storages_of(value):
            return
        container = dotted(target.value) if type(target.value) is cst.Attribute else None
        if container is not None and container.startswith("self.") and len(target.slice) == 1:
            key = any_item_key(container)
            old = self.state.env.get(key)
            self.state.env[key] = value if old is None else alternatives(old, value)
            self._stored_items.setdefault(container, set()).add(key)
            return
        keys = item_keys(target)
        if keys is None:
            return
        exact, any_key = keys
        env = self.state.env
        old = env.get(exact) if exact == any_key else None
        env[exact] = value if old is None else alternatives(old, value)
        for storage in storages_of(value):
            if storage.root.label == "<expr>" and exact != any_key:
                storage.root.label = exact  # `batch["img"] = x.cuda().float()`: named by its item
        self._stored_items.setdefault(target.value.value, set()).add(exact)

    def alias_items(self, name: str, source: cst.BaseExpression) -> None:
        """``batch = self.batch``: the tensors stored in the attribute's container (here, or by
        another method: :meth:`remember_item`) are ``batch``'s items, as they are now; returning
        ``batch`` hands them to the caller (:meth:`st_Return`), even after the attribute is
        rebound (``self.preload()`` fetching the next batch)."""
        container = dotted(source)
        if container is None or not container.startswith("self."):
            return
        items = self.state.env.get(any_item_key(container))
        if items is None:
            return
        key = any_item_key(name)
        self.state.env[key] = items
        self._stored_items.setdefault(name, set()).add(key)

    def alias_local_items(self, name: str, source: str) -> None:
        """``prev = batch``: the tensors stored in ``batch``'s items (``batch["img"] = ...``) are
        ``prev``'s too, and stay so when the loop binds ``batch`` to its next element (the
        prefetching generator that yields the previous batch)."""
        env, keys = self.state.env, self._stored_items.setdefault(name, set())
        for key in self._stored_items.get(source, ()):
            value = env.get(key)
            if value is not None:
                alias = name + key[len(source):]
                env[alias] = value
                keys.add(alias)

    def arguments_kept(self, value) -> None:
        """``value`` is stored where it outlives this call (an attribute, a container). If an
        unknown call made it from tensors, it may keep them (an object built from them) or be one
        of them (``reload(state, buffer)`` returning ``buffer``): they escape too."""
        for storage in storages_of(value):
            made_by = storage.alloc_op
            if made_by is not None and made_by.kind == OpKind.ACCESS and made_by.qualname is None:
                for argument in made_by.reads:
                    argument.root.escapes = True

    def keep_in_container(self, container: cst.BaseExpression, value) -> None:
        """``works[i] = dist.all_reduce(..., async_op=True)`` / ``works.append(...)``: remember the
        handles under ``works[]`` so that ``works[i].wait()`` and ``for w in works: w.wait()`` find
        them (every handle stored there is taken to be waited: precision first). Also what is
        appended to a list bound to ``[]`` in this function (``CallSemantics.local_list``): its
        elements are exactly those."""
        key = dotted(container)
        if key is None:
            return
        key += "[]"
        old = self.state.env.get(key)
        self.state.env[key] = value if old is None else alternatives(old, value)

    # -- scopes ----------------------------------------------------------------------------------

    def scope(self) -> Scope:
        """Every binding made in the function (or module) being interpreted, flow-insensitively."""
        if self.scope_bindings is None:
            self.scope_bindings = Scope(self.model.node)
        return self.scope_bindings

    def local_bindings(self, name: str) -> Optional[list]:
        """Every value ``name`` is bound to in the scope interpreted now, when they are all there
        is to know; None for a parameter, a name the scope does not bind, one declared ``global``
        or ``nonlocal`` (set elsewhere too), or in a helper walked at a call site (its names are
        not the scope's)."""
        if self.inline_stack:
            return None
        scope = self.scope()
        values = scope.bindings.get(name)
        if not values or name in scope.parameters or name in scope.shared:
            return None
        return values

    def written_values(self, name: str) -> Optional[list]:
        """:meth:`local_bindings`, or for a name the function neither binds nor takes, the value
        the module binds it to once (``DEV = "cuda" if torch.cuda.is_available() else "cpu"``)."""
        values = self.local_bindings(name)
        if values is not None:
            return values
        constant = self.module_constants.get(name)
        if constant is None:
            return None
        scope = self.scope()
        if name in scope.bindings or name in scope.parameters or name in scope.shared:
            return None
        return [constant]

    # -- definitions -----------------------------------------------------------------------------

    def st_FunctionDef(self, stmt: cst.FunctionDef) -> None:
        # Nested functions are analysed on their own; what they capture outlives this frame.
        self.state.env[stmt.name.value] = HOST
        self.nested.append(stmt)

    def st_ClassDef(self, stmt: cst.ClassDef) -> None:
        self.state.env[stmt.name.value] = HOST

    nested: list

    # -- driving -------------------------------------------------------------------------------

    def unknown_origin(self, storage: Storage) -> None:
        """A value of unknown origin met mid-function was made by the caller, before entry: its
        producer is one ENTRY op at the function's start, so any later wait covers it."""
        if not self.from_callers_stream:
            return
        if self.entry_op is None:
            return
        self.access(self.entry_op, storage, "write")

    entry_op: Optional[Op] = None

    def site_number(self, node: cst.CSTNode) -> int:
        numbers = self.__dict__.setdefault("_sites", {})
        return numbers.setdefault(id(node), len(numbers) + 1)

    def run_function(self, node: cst.FunctionDef, is_method: bool) -> None:
        self.nested = []
        if self.from_callers_stream:
            self.entry_op = self.emit(OpKind.ENTRY, node, note="by the caller")
        self.enter_function(node, is_method)
        self.suite(node.body)
        if not self.state.dead:
            body = node.body.body
            self.release_locals(body[-1] if body else node)

    def run_module(self, module: cst.Module) -> None:
        self.nested = []
        body = [s for s in module.body if type(s) not in (cst.FunctionDef, cst.ClassDef)]
        self.run_block(body)

    def close(self) -> None:
        """Break the model's reference cycles once it is built: the interpreter and its expression
        evaluator point at each other, and a storage at the op that allocated it, which writes it
        (``alloc_op`` is needed only while interpreting). Reference counting then frees the model
        and the trees it holds when a file is done, and the cyclic collector, whose passes cost a
        cold run up to a fifth of its time, can stay paused while files are linted
        (:func:`synclint.runner.tune_gc`)."""
        self.exprs = None
        for storage in self.allocated:
            storage.alloc_op = None
        self.allocated = []

    def finish(self) -> None:
        """Drop hazards on values with no evidence of being tensors (precision first)."""
        def host_side(h: Hazard) -> bool:
            # Found to be host memory (it was uploaded): only copies touch it from a stream; what
            # made it or read it otherwise ran on the host.
            return h.storage.on_host and not (h.first.op.kind == h.second.op.kind == OpKind.COPY)

        def no_later_work(h: LifetimeHazard) -> bool:
            # A stream created in this call and never handed out does no work after the release
            # unless this function gives it some: later, or in a loop around the release, whose
            # next pass repeats what the stream did before it (`prev = nxt` carried over a pass
            # is released only in the walk's second pass, after the last work walked).
            alloc = h.storage.alloc_stream
            if not (alloc.origin == "created" and "@" in alloc.key and not alloc.escapes):
                return False
            ops = self.model.ops
            later = ops[h.release.index + 1:] if h.loop_start is None else ops[h.loop_start:]
            return not any(op.stream.key == alloc.key and op.on_device for op in later if op is not h.release)

        def callers_to_order(h: Hazard) -> bool:
            # `def a2a(x, group, event=None): ... with stream(comm): if event: event.wait()`: a
            # function that waits on an event or stream its caller hands it leaves the ordering of
            # what the caller made (its inputs) to that caller, on every path: the event marks it.
            return self.caller_orders_inputs and h.first.op.kind == OpKind.ENTRY

        self.model.hazards = [
            h for h in self.model.hazards
            if h.storage.tensor and not host_side(h) and not callers_to_order(h)
        ]
        self.model.lifetime_hazards = [
            h for h in self.model.lifetime_hazards
            if h.storage.tensor and not h.storage.on_host and not no_later_work(h)
        ]


def _item_hint(target: cst.BaseExpression, code) -> Optional[str]:
    """``outputs[i]`` for a value stored into an item of a local container (or of an attribute's,
    ``self.batch[k]``): what to call it in a message (else the default ``tensor``)."""
    if type(target) is not cst.Subscript or type(target.value) not in (cst.Name, cst.Attribute):
        return None
    text = code(target)
    return text if len(text) <= 40 and "\n" not in text else None



def _opposite_arms(first: tuple, second: tuple) -> bool:
    """Were two ops made under opposite arms of one configuration switch (``Op.switches``)?"""
    taken = dict(first)
    return any(switch in taken and taken[switch] != arm for switch, arm in second)


def _store_direction(sources: list, destinations: list) -> Optional[str]:
    """``"d2h"`` or ``"h2d"`` when a store (``dst[...] = src``) copies one known CPU tensor from or
    to one known CUDA tensor; None for anything else (a kernel on the current stream)."""
    if len(sources) != 1 or len(destinations) != 1:
        return None
    src, dst = sources[0].root.device, destinations[0].root.device
    return _direction(src, dst) if {src, dst} == {"cpu", "cuda"} else None


def _downloads_on_some_paths(sources: list, destinations: list) -> bool:
    """Does a store into one known CPU tensor take a value that is a CUDA tensor on some paths
    and a CPU tensor on the others (``grad = grad.cuda()`` under ``if use_cuda:``)?"""
    if len(destinations) != 1 or destinations[0].root.device != "cpu":
        return False
    devices = {s.root.device for s in sources}
    return devices == {"cpu", "cuda"}


def _name_fresh(value, name: str) -> None:
    """Name the unnamed storages of ``value`` (a fresh ``<expr>``) for the name they are bound
    to, as messages call them (``x``, ``self.pos``)."""
    for storage in storages_of(value):
        if storage.label in ("tensor", "<expr>"):
            storage.label = name
