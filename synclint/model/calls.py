"""Calls: what a call means, by the name it resolves to (stream and event constructors, stream
contexts, synchronizing functions, collectives, tensor factories) or, when unknown, by what it is
handed. Part of :class:`~synclint.model.expressions.ExpressionEvaluator`, which mixes this in."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from synclint.model import api
from synclint.model.call_args import (
    _SETTER_NAME,
    _STREAM_ONLY_METHODS,
    _SYNC_NAME,
    _TENSOR_ONLY_METHODS,
    _is_true,
    _keyword,
    _literal_bool,
    _narrow,
    _positional,
    _string,
    a_setter,
    copies_to_the_host,
    runs_a_loop,
)
from synclint.model.inlining import MAX_DEPTH, can_inline, inline_call, property_value
from synclint.model.resolver import canonical, dotted, is_self_attribute
from synclint.model.tensor_methods import is_opaque_method
from synclint.model.timeline import OpKind, done_with
from synclint.model.torchapi import leading_text
from synclint.model.values import (
    CLOCK,
    CUDA_GRAPH,
    GRAPH,
    HOST,
    Alternatives,
    CudaGraphValue,
    EventValue,
    ModuleRef,
    Storage,
    StreamContext,
    StreamContextFactory,
    StreamValue,
    TupleValue,
    WorkValue,
    holds_work,
    storages_of,
)

#: Factories that build a tensor from data: from host data (not a tensor) onto a device, a
#: blocking copy.
_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor"})


#: A name the walk has not bound (yet) in the scope.
_NOT_BOUND = object()


#: A module named by a capital letter, as GAN code names its networks (``G(z)``, ``D(x)``,
#: ``G_ema(z)``, ``E2(x)``): called on tensors, it runs them, it is no class being constructed.
_MODULE_LETTER = re.compile(r"[A-Z][0-9]*(?:_[a-z0-9_]*)?")


def _module_letter(name: str) -> bool:
    return _MODULE_LETTER.fullmatch(name) is not None


def _spelled_as_a_sequence(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The data of ``torch.tensor(...)`` where it is written as a list, a tuple or a list
    comprehension (elements taken one by one), not a tensor (copied as a whole, on its own
    device); else None."""
    first = call.args[0] if call.args else None
    if first is None or first.keyword is not None or first.star:
        return None
    return first.value if type(first.value) in (cst.List, cst.Tuple, cst.ListComp) else None


def _device_kind(text: str) -> Optional[str]:
    """"cpu" or "cuda" for a device written out (``"cuda:0"``, ``"xpu"``); None for another."""
    if text.startswith("cpu"):
        return "cpu"
    return "cuda" if text.startswith(("cuda", "xpu")) else None


def _reads_a_gradient(expr: cst.BaseExpression) -> bool:
    """``w.grad``, ``model.fc.weight.grad[0]``, ``p.grad.norm()``: an expression whose chain of
    attributes, subscripts and calls passes through ``.grad``."""
    while type(expr) in (cst.Attribute, cst.Subscript, cst.Call):
        if type(expr) is cst.Attribute and expr.attr.value == "grad":
            return True
        expr = expr.func if type(expr) is cst.Call else expr.value
    return False


def _handles_in(value) -> list:
    """The ``Work`` handles in ``value``: itself, the items of a tuple or list literal, or the
    handles it may be on different paths."""
    if isinstance(value, WorkValue):
        return [value]
    if isinstance(value, (TupleValue, Alternatives)):
        items = value.items if isinstance(value, TupleValue) else value.values
        return [item for item in items if isinstance(item, WorkValue)]
    return []


class CallSemantics:
    """``ex_Call`` and the meaning of calls; ``self`` is the :class:`ExpressionEvaluator`."""

    # -- calls -------------------------------------------------------------------------------------

    def callee_name(self, func: cst.BaseExpression) -> Optional[str]:
        if type(func) is cst.Name:
            bound = self.state.env.get(func.value)
            if isinstance(bound, ModuleRef):
                return bound.qualname
            if func.value in self.state.env:
                return None
            return self.i.resolver.qualify(func)
        if type(func) is cst.Attribute:
            base = self.ev_callee_base(func.value)
            if isinstance(base, ModuleRef):
                return canonical(f"{base.qualname}.{func.attr.value}")
        return None

    def ex_Call(self, node: cst.Call, hint=None):
        if self.i.resolver.is_wrapper_call(node):
            return ModuleRef("torch.cuda")  # `acc = get_accelerator()` then `acc.Stream()`
        func = node.func
        if type(func) is cst.Attribute:
            receiver = _narrow(self.ev(func.value))
            method = func.attr.value
            if method == "backward":
                self.i.backward_called = True
            if isinstance(receiver, ModuleRef):
                return self.qualified_call(node, canonical(f"{receiver.qualname}.{method}"), hint)
            if receiver is None and type(func.value) is cst.Call and self.i.resolver.is_wrapper_call(func.value):
                return self.qualified_call(node, f"torch.cuda.{method}", hint)
            if isinstance(receiver, StreamValue):
                return self.stream_method(node, receiver, method)
            chosen = self.chosen_stream(receiver) if type(receiver) is Alternatives else None
            if chosen is not None:
                if method == "synchronize":
                    return self.synchronize_chosen(node, chosen)
                return self.stream_method(node, chosen, method)
            if isinstance(receiver, EventValue):
                return self.event_method(node, receiver, method)
            if isinstance(receiver, WorkValue):
                return self.work_method(node, receiver, method)
            if isinstance(receiver, CudaGraphValue) and method == "replay":
                # The captured kernels, on the current stream: device work the host does not wait
                # for (their tensors are the graph's, not named here).
                self.args(node)
                self.i.emit(OpKind.ACCESS, node, qualname=api.GRAPH_REPLAY)
                return None
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
            if (
                receiver is None
                and method in _TENSOR_ONLY_METHODS
                and not self.names_a_module(func.value)
            ):
                receiver = self.materialize(func.value)
            if method == "synchronize" and isinstance(receiver, Storage) and not receiver.root.tensor:
                # `runner = Runner(n)` then `runner.synchronize()`: an unknown call's result, never
                # used as a tensor, and tensors have no `synchronize`: an object of unknown kind.
                receiver = None
            elif storages_of(receiver) and not _SETTER_NAME.match(method):
                return self.tensor_method(node, receiver, method, hint)
            # A setter (`sampler.set_epoch(epoch)`, no tensor method is named so) configures the
            # object on the host: it reads none of the tensors the object may hold.
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
            # One creation site is one stream identity (both analysed loop iterations share it).
            key = label if "." in label else f"{label}@{i.site_number(node)}"
            # `ExternalStream(ptr)` wraps a stream made elsewhere, maybe the current one
            # (`ExternalStream(torch.cuda.current_stream().cuda_stream)`): of uncertain identity,
            # unless the file makes raw streams to wrap (`cudaStreamCreate()`).
            external = name == "torch.cuda.ExternalStream" and not i.external_streams_are_new
            origin = "external" if external else "created"
            stream = StreamValue(key, f"stream `{label}`", origin, node)
            i.emit(OpKind.CREATE_STREAM, node, qualname=name, target=stream)
            if "@" in key:
                self.state.born = self.state.born | {key}
            return stream
        if name in api.EVENT_FACTORIES:
            self.args(node)
            timing = _keyword(node, "enable_timing")
            positional = _positional(node)
            if timing is None and positional:
                timing = positional[0]
            enable = False if timing is None else _literal_bool(timing)
            label = hint or "event"
            op = i.emit(OpKind.CREATE_EVENT, node, qualname=name)
            site = i.event_site if i.event_site is not None else node
            key = label if "." in label else f"{label}@{i.site_number(site)}"
            event = EventValue(key, f"event `{label}`", enable, node, conditional=bool(i.guards))
            op.event = event
            if "@" in key:
                self.state.born = self.state.born | {key}  # see `join`: made on this path
            return event
        if name in api.CURRENT_STREAM:
            self.args(node)
            return self.state.current
        if name in api.DEFAULT_STREAM:
            self.args(node)
            return i.entry
        if name in api.STREAM_CONTEXTS:
            # Written in a `with` item it is entered there (`ExpressionEvaluator.context` reads the
            # call itself); evaluated anywhere else, it is a context entered later.
            stream_node = self.stream_context_argument(node)
            if stream_node is None:
                return None
            stream = self.as_stream(stream_node, self.ev(stream_node))
            return StreamContext(stream) if stream is not None else None
        if name in api.SET_STREAM:
            values = self.args(node)
            positional = _positional(node)
            stream = self.as_stream(positional[0] if positional else None, values[0] if values else None)
            i.emit(OpKind.SET_STREAM, node, target=stream)
            if stream is not None:
                self.state.current = stream
            return HOST
        if name == api.UNBOUND_STREAM_SYNCHRONIZE:
            # llumnix's `torch.cuda.Stream.synchronize(self.migration_stream)`.
            values = self.args(node)
            positional = _positional(node)
            first = positional[0] if positional else None
            stream = self.as_stream(first, values[0] if values else None)
            if stream is not None:
                self.sync_stream(node, stream, "stream")
            return HOST
        if name in api.DEVICE_SYNC:
            self.args(node)
            self.sync_device(node, "device", name)
            return HOST
        if name in api.HOST_CLOCKS:
            i.emit(OpKind.HOST_CLOCK, node, clock=name, qualname=name)
            return CLOCK
        if name in api.SERIALIZERS:
            # `torch.save(state, path)` copies every CUDA tensor it is given to the host through
            # the current stream (a blocking copy) before it writes: the host waits for that stream.
            # Host tensors are read as they are, synchronized or not (SYN301).
            host = [s for s in self.arg_storages(node) if s.on_host]
            if host:
                self.host_access(node, host, "read")
            self.sync_stream(node, self.state.current, "blocking-copy")
            return HOST
        if name in api.COLLECTIVES:
            return self.collective(node, name)
        if name in api.WAIT_TENSOR:
            return self.wait_tensor(node)
        if name in api.GRAPH_OBJECTS:
            self.args(node)
            return GRAPH
        if name in api.CUDA_GRAPHS:
            self.args(node)
            return CUDA_GRAPH
        if name == api.BARRIER and self.barrier(node):
            return HOST
        if name in api.TENSOR_FACTORIES or name in api.LIKE_FACTORIES:
            return self.factory(node, name, hint)
        if name in api.LEGACY_HOST_TENSORS:
            # `torch.FloatTensor(x.size()).copy_(x)`: a new host tensor, whatever it is handed.
            self.args(node)
            return self.i.new_storage(hint or "<expr>", node, alloc_stream=self.state.current,
                                      device="cpu")
        if name in self.i.settings.synchronizing_functions or name.rsplit(".", 1)[-1] in {
            f for f in self.i.settings.synchronizing_functions if "." not in f
        }:
            self.args(node)
            self.sync_device(node, "helper", name)
            return HOST
        if name in self.i.event_makers and can_inline(
            self.i, name, self.i.event_makers, depth=MAX_DEPTH + 1
        ):
            # `ready = mark(stream)` where `mark` makes an event, records it and returns it:
            # walked here, so the caller holds the event, recorded on the stream it passed.
            # Each call makes an event of its own: keyed by the call, not by the helper's line.
            # One level deeper than other helpers: it is a few statements, and a method that
            # orders its streams with it is often walked inside two others (`to0_sum` ->
            # `to0` -> `_p2p_copy` -> `mark`).
            outer, self.i.event_site = self.i.event_site, node
            try:
                return inline_call(self.i, node.args, self.i.event_makers[name])
            finally:
                self.i.event_site = outer
        summary = self.i.summaries.get(name)
        if summary is not None:
            self.args(node)
            result = None
            if summary.waits_last and summary.returns_device_tensor is not None:
                # `b = a @ a; torch.cuda.synchronize(); return b`: made before the wait.
                result = self._made_by_helper(node, name, hint, summary.returns_device_tensor)
            if summary.synchronizes:
                self.sync_device(node, "helper", name)
            elif summary.waits_for_current_stream:
                self.sync_stream(node, self.state.current, "blocking-read")
            if summary.returns_current_stream:
                return self.state.current
            if summary.returns_device_tensor is not None and not summary.waits_last:
                return self._made_by_helper(node, name, hint, summary.returns_device_tensor)
            return result
        if name in api.HOST_CONVERSIONS:
            storages = self.arg_storages(node)
            if storages:
                self.mark_tensor(storages)
                self.blocking_read(node, storages)
            elif self._gradient_after_a_backward(node):
                self.sync_stream(node, self.state.current, "blocking-read")
            return HOST
        if name in api.CALLABLE_BUILDERS:
            factory = self._stream_context_factory(node)
            if factory is not None:
                return factory
            # `run = partial(op.forward, op, x)` runs nothing: what it is handed is kept for later.
            for storage in self.arg_storages(node):
                storage.root.escapes = True
            return None
        if name == "next" and node.args:
            # `batch = next(self._dataloader_iter)`: an element of the iterator, as `for batch in
            # ...` would bind; taking it runs no kernel (whatever made it ran before).
            values = self.args(node)
            return self.element_of(values[0], node, node.args[0].value)
        if name == "map" and len(node.args) == 2 and type(node.args[0].value) is cst.Lambda:
            return self.map_lambda(node, node.args[0].value)
        if name in api.HOST_BUILTINS:
            values = self.args(node)
            if name in ("max", "min") and len(values) > 1:
                # `best = max(score, best)`: Python compares the values, calling `bool()` on a
                # tensor comparison: a blocking read of each tensor among them.
                compared = [s for v in values for s in storages_of(v) if s.tensor]
                if compared:
                    self.blocking_read(node, compared)
            if name in ("list", "tuple", "sorted", "reversed") and values:
                return values[0] if isinstance(values[0], TupleValue) else None
            if name == "sum" and values and storages_of(values[0]):
                # `loss = sum(losses)`: tensors added on the current stream make a tensor.
                return self.tensor_op(node, reads=storages_of(values[0]), result_label=hint or "<expr>")
            return HOST
        if name == "torch.device":
            self.args(node)
            return HOST
        if name in api.CALLABLE_WRAPPERS:
            self.args(node)
            return None
        if name in api.TRACING_CALLS:
            storages = [s for v in self.args(node) for s in storages_of(v)]
            if storages:  # the model's forward on the examples: an opaque call (see `Op.opaque`)
                self.tensor_op(
                    node, reads=storages, evidence=False, mark_arguments=False, opaque=True
                )
            return None
        if name.startswith(api.LR_SCHEDULER_MODULES):
            # `scheduler = StepLR(optimizer, 30)`: its `step()` sets the optimizer's learning
            # rates, Python numbers, on the host; no kernel.
            self.args(node)
            return HOST
        if name in api.ALIASING_WRAPPERS or name.startswith(api.TENSOR_HOLDER_MODULES):
            storages = [s for v in self.args(node)[:1] for s in storages_of(v)]
            return storages[0] if storages else None
        if name.startswith("torch.cuda.") or name.startswith("torch.distributed."):
            self.args(node)
            return HOST
        if name.startswith("torch.") and name.count(".") == 1 or name.startswith(("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")):
            return self.torch_function(node, name, hint)
        return self.unknown_call(node, hint)

    def _stream_context_factory(self, node: cst.Call) -> Optional[StreamContextFactory]:
        """``partial(torch.cuda.stream, stream=s)`` (or ``partial(torch.cuda.stream, s)``): a
        stream context made later by calling it, entered by ``with`` (see
        :meth:`ExpressionEvaluator.context`)."""
        positional = _positional(node)
        if not positional or self.callee_name(positional[0]) not in api.STREAM_CONTEXTS:
            return None
        rest = positional[1:2] or [a.value for a in node.args if a.keyword and a.keyword.value == "stream"]
        if not rest:
            return None
        stream = self.as_stream(rest[0], self.ev(rest[0]))
        return StreamContextFactory(stream) if stream is not None else None

    def local_list(self, node: cst.BaseExpression) -> bool:
        """Is ``node`` a name bound in this function to a list literal (``recv = []``), whose
        elements are then exactly what the function puts there?"""
        return type(node) is cst.Name and isinstance(self.state.env.get(node.value), TupleValue)

    def names_a_module(self, node: cst.BaseExpression) -> bool:
        """Is ``node`` a name the file calls ``nn.Module``-only methods on (``model.eval()``)?"""
        names = self.i.module_names
        return bool(names) and dotted(node) in names

    def barrier(self, node: cst.Call) -> bool:
        """``torch.distributed.barrier()``: ProcessGroupNCCL's barrier is a dummy all-reduce that
        the current stream waits for, then synchronized back to the host
        (``currentStream.synchronize()``; older releases synchronize the whole device), so
        everything the current stream ran is done. Not with ``async_op=True``."""
        if _is_true(_keyword(node, "async_op")):
            return False
        self.args(node)
        self.sync_stream(node, self.state.current, "stream")
        return True

    def sync_by_name(self, node: cst.Call, name: str) -> bool:
        """An unknown helper whose name says it synchronizes (``timer.sync()``, ``cuda_sync()``,
        ``synchronize_all()``) is taken at its word: precision first. So are other frameworks'
        documented host barriers (:data:`api.OTHER_HOST_BARRIERS`). A helper named ``barrier``
        (MosaicML streaming's, which calls ``dist.barrier()`` when a group is up) is taken for
        ``torch.distributed.barrier``: the current stream is done when it returns."""
        if name.rsplit(".", 1)[-1] == "barrier":
            return self.barrier(node)
        if name not in api.OTHER_HOST_BARRIERS and not _SYNC_NAME.search(name.rsplit(".", 1)[-1]):
            return False
        values = self.args(node)
        streams = [v for v in values if isinstance(v, StreamValue)]
        if streams:
            # `lib.synchronizeStream(self.normal_stream)` (`cudaStreamSynchronize` through ctypes):
            # the host waits for the streams it is handed, not for every stream.
            for stream in streams:
                self.sync_stream(node, stream, "stream")
            return True
        if values and "stream" in name.rsplit(".", 1)[-1].lower():
            return True  # handed a stream the model does not know (a raw handle): no known wait
        self.sync_device(node, "helper", name)
        return True

    def handed_to_unknown(self, node: cst.Call, values, name: str) -> None:
        """What an unknown callee may do with its arguments: keep them (a constructor), record them
        on the current stream (``record_stream=True``), run work on a stream given to it."""
        storages = [s for v in values for s in storages_of(v)]
        for value in values:
            if isinstance(value, StreamValue):
                value.escapes = True
            elif isinstance(value, EventValue):
                self._handed_an_event(value)
            elif isinstance(value, WorkValue):
                self.i.handed_work.add(id(value.node))
        if _is_true(_keyword(node, "record_stream")):
            for storage in storages:
                storage.root.recorded_streams.append(self.state.current)
        tail = name.rsplit(".", 1)[-1]
        if tail[:1].isupper():
            for storage in storages:
                storage.root.escapes = True

    def _handed_an_event(self, event: EventValue) -> None:
        """An event recorded here and handed to an unknown callee (``pool.do(fn, flag,
        cuda_event=done)``) is there to be waited on: what the callee does next is taken to run
        after what the event covers, on the current stream. No op is emitted (nothing here is an
        ``event.wait()`` a rule could judge); only the current stream's clock moves."""
        state = self.i.event_state(event)
        if state is not None and state.recorded_by:
            self.i.runs_after(self.state.current.key, state.vc)

    def unknown_result(self, node: cst.Call, storages: list, hint: Optional[str], opaque: bool = False):
        """The result of an unknown call given tensors: a tensor made on the current stream if
        used as one later; host memory when every tensor given was host memory."""
        evidence = any(s.tensor for s in storages)
        device = "cpu" if all(s.root.on_host for s in storages) else None
        # `model.generate(ids, stream=self.side)`: the callee runs its kernels on the stream it
        # is handed, as `with torch.cuda.stream(stream):` inside it would.
        saved = self.state.current
        self.state.current = self._handed_stream(node) or saved
        try:
            return self.tensor_op(node, reads=storages, result_label=hint or "<expr>",
                                  device=device, evidence=evidence, mark_arguments=False,
                                  opaque=opaque)
        finally:
            self.state.current = saved

    def _handed_stream(self, node: cst.Call) -> Optional[StreamValue]:
        """The stream a call is handed as ``stream=`` (or ``cuda_stream=``), when it is one."""
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value not in ("stream", "cuda_stream"):
                continue
            key = dotted(arg.value)
            stream = self.as_stream(arg.value, self.state.env.get(key) if key else None)
            if stream is not None:
                return stream
        return None

    def unknown_call(self, node: cst.Call, hint: Optional[str]):
        name = self.i.resolver.qualify(node.func) or ""
        if name and self.sync_by_name(node, name):
            return HOST
        if name in api.HOST_WORKERS:
            return self.host_worker(node)
        values = self.args(node)
        self.handed_to_unknown(node, values, name)
        storages = [s for v in values for s in storages_of(v)]
        if not storages:
            return None
        if a_setter(node, name.rsplit(".", 1)[-1]):
            self.kept(values)
            return None
        tail = name.rsplit(".", 1)[-1]
        on_device = [s for s in storages if s.tensor and not s.on_host]
        if on_device and copies_to_the_host(tail) and not self.i.file_defines(tail):
            # `boxes = convert2cpu(pred)`, a helper of another module: a blocking download (one
            # of this file is walked, or is a nested function: it says what it does).
            self.blocking_read(node, on_device)
            return self.i.new_storage(hint or "<expr>", node, alloc_stream=self.state.current,
                                      device="cpu")
        # An object built from tensors (`BroadcastOperation(bucket=buf)`): what its constructor
        # does is unknown, a synchronization included (see ``Op.opaque``).
        constructor = tail[:1].isupper() and not _module_letter(tail)
        # A function that runs a whole training or evaluation loop (`train_loop(model, loader,
        # mean, std)`) may as well synchronize before it returns (`runs_a_loop`).
        opaque = constructor or runs_a_loop(tail)
        return self._unknown_result_after_handed_work(values, node, storages, hint, opaque)

    def _made_by_helper(self, node: cst.Call, name: str, hint: Optional[str], count: int):
        """Device tensors a helper of the file made and returned (``x = get_data(8)``; a tuple of
        ``count`` of them when ``count`` is not 0): written on the current stream, where the
        helper's kernels ran."""
        made = [
            self.i.new_storage(hint or "<expr>", node, alloc_stream=self.state.current, device="cuda")
            for _ in range(max(count, 1))
        ]
        op = self.i.emit(OpKind.ACCESS, node, writes=tuple(made), qualname=name)
        for storage in made:
            self.i.access(op, storage, "write")
        return TupleValue(tuple(made)) if count else made[0]

    def synchronize_chosen(self, node: cst.Call, chosen: StreamValue):
        """``stream.synchronize()`` on a stream chosen by configuration (:meth:`chosen_stream`):
        the host waits for the side stream where it was chosen, for the caller's stream where
        that was; both are taken as waited for (precision first)."""
        self.args(node)
        self.sync_stream(node, chosen, "stream")
        self.sync_stream(node, self.state.current, "stream")
        return HOST

    def kept(self, values) -> None:
        """``xs.append(t)``, ``set_actual_seq_len(buf)``: the callee keeps the values (in a
        container, ``global _X; _X = buf``) for later use, reading nothing now."""
        for value in values:
            for storage in storages_of(value):
                storage.escapes = True
            self.i.arguments_kept(value)

    def names_a_device_object(self, node: cst.BaseExpression) -> bool:
        """Is ``node``, whose value is unknown, more likely a device module than a stream? Its
        ``synchronize()`` then waits for the whole device, as ``torch.cuda.synchronize()`` does:
        sglang's ``current_platform.synchronize()`` and ``get_device_module().synchronize()``,
        ``self.accelerator.synchronize()``. A name that says stream (``copy_stream``,
        ``self._stream``) or a parameter (``s``) is still taken for a stream, unless the
        parameter is annotated with a class that is not one (``constructor:
        TorchCUDAGraphConstructor``)."""
        key = dotted(node)
        if key is None or "stream" in key.lower():
            return False
        root = key.split(".", 1)[0]
        if root == "self" or root not in self.i.params:
            return True
        annotation = self.i.param_annotations.get(root)
        return annotation is not None and "stream" not in annotation.lower()

    def instance_class(self, receiver: cst.BaseExpression) -> Optional[str]:
        """The class of this file ``receiver`` is an instance of, when the class has methods that
        make the host wait (``_Builder.summarise_methods``): a name every binding of which in the
        scope interpreted now makes one (``timer = CommTimer()``, ``with CommTimer() as timer``;
        see ``Interpreter.local_bindings``), or ``self.<name>`` when every assignment to it in the
        file makes one (``self.kv_cache = KVCache(...)``)."""
        if is_self_attribute(receiver):
            cls = self.i.attribute_class(receiver.attr.value)
            return cls if cls in self.i.synchronizing_methods else None
        if type(receiver) is not cst.Name:
            return None
        values = self.i.local_bindings(receiver.value)
        if values is None or not all(
            type(v) is cst.Call and type(v.func) is cst.Name for v in values
        ):
            return None
        classes = {v.func.value for v in values}
        cls = classes.pop() if len(classes) == 1 else None
        return cls if cls in self.i.synchronizing_methods else None

    def host_worker(self, node: cst.Call):
        """``threading.Thread(target=f, args=(grads,))`` (``api.HOST_WORKERS``): a host object,
        built without work, that keeps what it is handed for its target."""
        values = self.args(node)
        self.handed_to_unknown(node, values, "")
        self.kept(values)
        return HOST

    def unknown_method(self, node: cst.Call, func: cst.Attribute, receiver, method: str, hint):
        if receiver is None and method[:1].isupper() and self.i.resolver.qualify(func) in api.HOST_WORKERS:
            return self.host_worker(node)  # `threading.` is no module the model follows
        if method == "cpu" and receiver is None and not node.args:
            # `outputs[k + 1].cpu()` on a value of unknown kind: only tensors and modules have
            # `.cpu()`, and on a GPU one it is a blocking copy that waits for the current stream
            # (MONAI's MAISI autoencoder gathers chunks to the host this way).
            self.sync_stream(node, self.state.current, "blocking-read")
            return None
        if method == "synchronize" and receiver is None and self.names_a_device_object(func.value):
            self.args(node)
            self.sync_device(node, "unknown")
            return HOST
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
        named_to_sync = method == "barrier" or _SYNC_NAME.search(method)
        if method != "synchronize" and named_to_sync and self.sync_by_name(node, method):
            return HOST
        if method in self.i.sync_methods:
            self.args(node)
            self.sync_device(node, "helper", method)
            return HOST
        if (receiver is None or receiver is HOST) and self.i.synchronizing_methods:
            # (HOST: `self.kv_cache = None` in `__init__`, set to an instance later.)
            cls = self.instance_class(func.value)
            waits = self.i.synchronizing_methods[cls].get(method) if cls is not None else None
            if waits == "device":
                self.args(node)
                self.sync_device(node, "helper", f"{cls}.{method}")
                return HOST
            if waits == "stream":
                # `self.kv_cache.update(k, v)` whose body reads `k.cpu()`: the host has waited for
                # the stream this call is made on.
                self.args(node)
                self.sync_stream(node, self.state.current, "blocking-read")
                return None
        if method in ("record", "elapsed_time") and receiver is None:
            event = self.as_event(func.value, receiver)
            if event is not None:
                return self.event_method(node, event, method)
        if method in ("wait", "synchronize", "query") and receiver is None and type(func.value) is cst.Subscript:
            # `self.ready[layer].wait(self.d2h)`: an element of a list of events this path recorded
            # (`self.ready[layer].record()`); anything else (`works[i].wait()`) is not taken for one.
            event = self.state.env.get(self.element_key(func.value))
            if type(event) is EventValue and self.i.event_state(event) is not None:
                return self.event_method(node, event, method)
        if type(func.value) is cst.Name and func.value.value == "self" and can_inline(self.i, method):
            return inline_call(self.i, node.args, self.i.class_methods[method])
        if type(func.value) is cst.Name and func.value.value == "self" and method in self.i.method_returns:
            self.args(node)
            stream = self.i.method_returns[method]
            storage = self.i.new_storage(hint or "<expr>", node, alloc_stream=stream, device="cuda")
            op = self.i.emit(OpKind.ACCESS, node, stream=stream, writes=(storage,), note=f"in `{method}`")
            self.i.access(op, storage, "write")
            return storage
        values = self.args(node)
        for arg in node.args:
            if arg.star and type(arg.value) is cst.Name:
                # `model.generate(**gen_kwargs)` after `gen_kwargs["encoder_outputs"] = enc`: the
                # tensors stored in the local container are handed to the method too.
                values.extend(self.i.stored_values(arg.value.value))
        self.handed_to_unknown(node, values, method)
        local_list = method in ("append", "insert") and values and self.local_list(func.value)
        if local_list or (method in ("append", "insert") and any(holds_work(v) for v in values)):
            self.i.keep_in_container(func.value, values[-1])
        appended = storages_of(values[-1]) if local_list and method == "append" else ()
        if appended and all(s.root.on_host for s in appended):
            # `losses.append(loss.to("cpu", non_blocking=True))`: the list holds host memory now,
            # for `losses[0]`, `sum(losses)` and `torch.stack(losses)` to read on the host.
            held = self.state.env[func.value.value]
            self.state.env[func.value.value] = TupleValue((*held.items, values[-1]))
        if method in api.STORING_METHODS or a_setter(node, method):
            self.kept(values)
            return None
        storages = [s for v in values for s in storages_of(v)]
        getter = receiver is None and method.startswith("get_") and type(func.value) is cst.Attribute
        # Handed values inside a stream block (`self.encoder.get_voxel_info(voxels)` there), a
        # getter computes as often as it looks up: its result is made where it is called, unless
        # the same getter was called before with the same arguments (the object keeps it).
        computed_here = (
            storages
            and self.i.block_streams
            and self.i.model_code(node) not in self.i.got_from_stores
        )
        if getter and not any(s.tensor for s in storages) and not computed_here:
            # Handed only what is not known to be a tensor (`rank=rank`, `group_id=0`): a lookup.
            return self._got_from_a_store(node, hint)
        if storages:
            opaque = is_opaque_method(method) and not self._calls_a_held_module(func, method)
            return self._unknown_result_after_handed_work(values, node, storages, hint, opaque)
        return None

    def _calls_a_held_module(self, func: cst.Attribute, method: str) -> bool:
        """``self.loss(vecs, y)``, ``self.model(x)``: the class assigns ``self.<method>`` and has no
        such method, so the call runs the module or function an attribute holds, as ``model(x)``
        does on a name (launches work and returns), unless its name says it runs a whole loop."""
        return (
            type(func.value) is cst.Name
            and func.value.value == "self"
            and method in (self.i.assigned_attributes or {})
            and method not in self.i.class_methods
            and not runs_a_loop(method)
        )

    def _got_from_a_store(self, node: cst.Call, hint: Optional[str]):
        """``flat = self._store.get_flatten_grad()``: what a getter of another object hands back
        (ColossalAI's and InternEvo's gradient and parameter stores) may be a tensor it keeps; if
        it is used as one, it was made before this function, on the caller's stream, like a value
        of unknown origin (:meth:`Interpreter.unknown_origin`). A value never used as a tensor
        stays out of every finding (``Storage.tensor``)."""
        # The same getter called again with the same arguments (here, or in a helper walked where
        # it is called) hands back the same value: the object keeps it.
        key = self.i.model_code(node)
        got = self.i.got_from_stores.get(key)
        if got is not None:
            return got
        storage = self.i.new_storage(hint or "<expr>", node, origin="unknown", tensor=False)
        self.i.unknown_origin(storage)
        self.i.got_from_stores[key] = storage
        return storage

    def _gradient_after_a_backward(self, call: cst.Call) -> bool:
        """``print("grad:", model.layer.weight.grad[3])`` after a ``loss.backward()`` this scope
        called: a gradient lives where the backward that made it ran, so where the function has
        work on the GPU the conversion copies a device tensor to the host and waits for the
        current stream, though the model has no storage for the module's parameter (nor, often,
        for the loss a helper returned)."""
        return self.i.backward_called and any(
            _reads_a_gradient(a.value) for a in call.args if a.keyword is None
        )

    def _unknown_result_after_handed_work(self, values, node, storages, hint, opaque: bool):
        """:meth:`unknown_result`, where a collective's ``Work`` handed with the tensors it fills
        (nnscaler's ``AsyncCommHandler().submit(tensor, [work])``, or a list of handles appended
        to, as in starrygl's ``CacheUpdateFuture(works, recv)``) is the callee's to wait on
        before it uses them: the call's own use of the tensors runs after the collective. Only
        that use: what the caller does with them afterwards is still unordered until a wait."""
        works = [w for v in values for w in _handles_in(v)]
        env = self.state.env
        for arg in node.args:
            # `works.append(work)` then `Future(works, recv)`: the list's appended handles.
            if type(arg.value) is cst.Name and arg.value.value + "[]" in env:
                works += _handles_in(env[arg.value.value + "[]"])
        if not works:  # nearly every call: no clock to save
            return self.unknown_result(node, storages, hint, opaque=opaque)
        key = self.state.current.key
        saved = dict(self.state.vc.get(key, {}))
        for work in works:
            self.i.runs_after(key, self.i.stream_now(work.stream))
        try:
            return self.unknown_result(node, storages, hint, opaque=opaque)
        finally:
            own = self.state.vc.get(key, {}).get(key)
            if own is not None:
                saved[key] = max(saved.get(key, 0), own)
            self.state.vc[key] = saved

    def map_lambda(self, node: cst.Call, function: cst.Lambda):
        """``list(map(lambda x: write(x, img), output))``: the lambda's body, walked once as a
        comprehension's element is, with its parameter bound to an element of what is mapped
        (``map`` is lazy, but a map nobody consumes is rare). Lambdas of several or starred
        parameters are only evaluated as values."""
        params = function.params
        if params.star_arg is not cst.MaybeSentinel.DEFAULT or params.star_kwarg is not None or (
            len(params.params) != 1 or params.posonly_params or params.kwonly_params
        ):
            self.args(node)
            return HOST
        iterable = self.ev(node.args[1].value)
        name = params.params[0].name
        env = self.state.env
        saved = env.get(name.value, _NOT_BOUND)
        env[name.value] = self.element_of(iterable, name, node.args[1].value)
        try:
            self.ev(function.body)
        finally:
            if saved is _NOT_BOUND:
                env.pop(name.value, None)
            else:
                env[name.value] = saved
        return HOST

    def factory(self, node: cst.Call, name: str, hint: Optional[str]):
        data = _spelled_as_a_sequence(node) if name == "torch.tensor" else None
        if type(data) is cst.ListComp:
            (element,) = self._walk_comprehension(data, (data.elt,))
            values = [element, *self.args(node, skip=1)]
        else:
            values = self.args(node)
        if data is not None:
            # `torch.tensor([out[i] for i in ids])`: each element is made a Python number, a
            # blocking read of a device tensor, whatever device the new tensor is for.
            read = [s for s in storages_of(values[0]) if s.tensor and not s.on_host]
            if read:
                self.blocking_read(node, read)
        # (A comprehension's elements, known only since the walk above, copy as before: from
        # the host.)
        copied = values[0] if values and type(data) is not cst.ListComp else None
        device_node = _keyword(node, "device")
        device = self.device_of(device_node) if device_node is not None else None
        if device_node is None:
            if name in api.LIKE_FACTORIES:
                # `torch.zeros_like(x)` is where `x` is, unknown when `x` is (an element of
                # `torch.split(t, ...)` indexed by a rank).
                given = storages_of(values[0]) if values else []
                device = given[0].device if given else None
            else:
                device = "cpu"
        pinned = _is_true(_keyword(node, "pin_memory"))
        alloc = self.state.current
        if device_node is not None and self._for_another_device(device_node, alloc):
            alloc = None
        storage = self.i.new_storage(hint or "<expr>", node, alloc_stream=alloc,
                                     device=device, pinned=pinned)
        if storage.on_host:
            return storage
        if name.rsplit(".", 1)[-1].startswith("empty"):
            # Allocation only, no kernel: nothing to race with, but the allocation stream counts.
            return storage
        op = self.i.emit(OpKind.ACCESS, node, writes=(storage,), qualname=name)
        self.i.access(op, storage, "write")
        if name in _FROM_DATA and not storages_of(copied):
            # `torch.tensor([0, 2], device="cuda")`: host data copied the blocking way (non_blocking
            # is False inside): done when the call returns.
            self.i.emit(OpKind.HOST_SYNC, node, target=op.stream, sync_kind="blocking-copy")
            self.i.host_sees(done_with(op))
        return storage

    def _for_another_device(self, device_node: cst.BaseExpression, stream) -> bool:
        """May ``torch.empty(..., device=d)`` inside ``with torch.cuda.stream(s):`` allocate for
        another GPU than ``s``'s? Then its memory comes from that GPU's current stream, not from
        ``s`` (entering the block makes ``s`` current on its own GPU only): which stream the memory
        belongs to is not known. Asked where ``s`` is one of a list of streams made one per GPU
        (``[torch.cuda.Stream(device=d) for d in self.devices]``, a multi-GPU runtime) and the
        allocation names a GPU in other words than ``s``'s (``device=dst_dev``, not
        ``self.devices[0]`` for ``self.streams[0]``); ``device="cuda"`` is the current GPU, ``s``'s.
        A single stream made for a named GPU (``torch.cuda.Stream(local_rank)``) is one process's
        GPU, which its allocations name in other words (``device=self.device``), unless both are
        attributes of the object of other names (``torch.cuda.Stream(device=self.worker_device)``,
        then ``x.to(self.inference_device)``): an object that keeps two devices uses two GPUs."""
        if _string(device_node) == "cuda":
            return False
        gpu = getattr(stream, "gpu", None)
        if gpu is None:
            made = getattr(stream, "created_at", None)
            if type(made) is not cst.Call:
                return False
            positional = _positional(made)
            made_for = _keyword(made, "device") or (positional[0] if positional else None)
            return (
                is_self_attribute(made_for)
                and is_self_attribute(device_node)
                and made_for.attr.value != device_node.attr.value
            )
        return self.i.model_code(device_node) != gpu

    def _device_argument(self, node: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
        """What a device argument names: ``where`` for ``torch.device(where)``, else itself."""
        if type(node) is cst.Call and self.callee_name(node.func) == "torch.device":
            args = _positional(node)
            return args[0] if args else None
        return node

    def device_text(self, node: Optional[cst.BaseExpression]) -> Optional[str]:
        """The device a device argument writes out (``"cuda:0"``, ``torch.device("xla")``)."""
        return _string(self._device_argument(node))

    def kind_written_out(self, node: Optional[cst.BaseExpression]) -> Optional[str]:
        """"cpu" or "cuda" for a device written out, even when built at run time
        (``"cuda:{}".format(gpu)``, ``torch.device(f"cuda:{rank}")``); None for another."""
        node = self._device_argument(node)
        text = leading_text(node) if node is not None else None
        return _device_kind(text) if text is not None else None

    def device_of(self, node: Optional[cst.BaseExpression]) -> Optional[str]:
        """"cpu", "cuda" or None for a device argument."""
        if node is None:
            return None
        kind = self.kind_written_out(node)
        if kind is not None:
            return kind
        if is_self_attribute(node):
            # `@property def device(self): return "cpu"` (a :func:`simple_property`).
            method = self.i.class_methods.get(node.attr.value)
            returned = property_value(method) if method is not None else None
            kind = self.kind_written_out(returned) or self._attribute_device(node.attr.value)
            if kind is not None:
                return kind
        if type(node) is cst.Attribute and node.attr.value == "device":
            storages = storages_of(self.ev(node.value))
            return storages[0].device if storages else None
        if type(node) is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "current_device":
            return "cuda"
        if type(node) is cst.Integer:
            return "cuda"
        if type(node) is cst.Name:
            return self._written_device(node.value)
        return None

    def _attribute_device(self, name: str) -> Optional[str]:
        """"cpu" or "cuda" when every assignment to ``self.<name>`` in the class writes out that
        kind of device (``self.device = torch.device("cuda:0")`` in ``__init__``); None when one
        assigns something else (a parameter, ``"cuda" if ok else "cpu"``) or the class never does."""
        values = (self.i.assigned_attributes or {}).get(name)
        if not values or None in values:
            return None
        kinds = {self.kind_written_out(value) for value in values}
        return kinds.pop() if len(kinds) == 1 else None

    def _written_device(self, name: str, depth: int = 0) -> Optional[str]:
        """"cpu" or "cuda" where every value the scope gives ``name`` names that kind of device
        (``device = "cuda:0"`` or ``device = torch.device("cpu")`` in the function, or at the
        module's top level when the function neither binds the name nor takes it as a
        parameter; ``device = torch.device(where)`` or ``device = where`` with ``where`` such a
        name, two names deep); else None."""
        if self.i.inline_stack and depth == 0:
            # A helper's parameter walked at a call site: the device the call writes out for it,
            # or its default (`def _inputs(self, n=64, device="cpu")` called as `_inputs(n=512)`).
            return self.kind_written_out(self.i.inline_arguments[-1].get(name))
        if name in self.i.params or self.i.inline_stack:
            return None
        held = self.state.env.get(name, _NOT_BOUND)
        if held is _NOT_BOUND and name not in self.i.module_constants:
            return None
        if held is not _NOT_BOUND and held is not HOST:
            return None  # a tensor, a module, an object: not a string (and no scope walked)
        values = self.i.written_values(name)
        if values is None:
            return None
        kinds = {self._device_written(value, depth) for value in values}
        return kinds.pop() if len(kinds) == 1 else None

    def _device_written(self, value, depth: int) -> Optional[str]:
        """The kind of device one value bound to a name writes out (see :meth:`_written_device`)."""
        if not isinstance(value, cst.BaseExpression):
            return None
        kind = self.kind_written_out(value)
        if kind is not None:
            return kind
        value = self._device_argument(value)
        if type(value) is cst.Name and depth < 2:
            return self._written_device(value.value, depth + 1)
        return None

    def torch_function(self, node: cst.Call, name: str, hint: Optional[str]):
        values = self.args(node)
        if name in api.NON_TENSOR_OBJECTS:
            return None
        storages = [s for v in values for s in storages_of(v)]
        out = _keyword(node, "out")
        out_storages = storages_of(self.ev(out)) if out is not None else []
        if out_storages:
            self.tensor_op(node, reads=[s for s in storages if s not in out_storages], writes=out_storages)
            return out_storages[0]
        short = name.rsplit(".", 1)[-1]
        if short.startswith("_foreach_") and short.endswith("_") and node.args and values:
            # `torch._foreach_add_(ema, params, alpha=0.01)`: writes the tensors of the list it is
            # given first (each one in place), reads those of the others.
            written = storages_of(values[0])
            if written:
                self.tensor_op(node, reads=[s for s in storages if s not in written], writes=written)
                return None
        if short in api.SIZE_FROM_DATA or (short == "where" and len(node.args) == 1 and not node.args[0].star):
            # Its argument is a tensor, wherever it was made: as for `.item()` on a value of
            # unknown kind, the host waits for the current stream.
            return self.size_from_data(node, storages, hint)
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

    def wait_tensor(self, node: cst.Call):
        """``wait_tensor(t)``: the current stream waits for the collectives' streams that wrote
        ``t`` (as ``Work.wait()`` would); it returns ``t``."""
        values = self.args(node)
        value = values[0] if values else None
        i = self.i
        streams = {
            access.stream.key: access.stream
            for storage in storages_of(value)
            for access in self.state.history.get(storage.root.id, ())
            if access.stream.origin == "collective" and access.mode == "write"
        }
        for stream in streams.values():
            i.emit(OpKind.WORK_WAIT, node, target=stream)
            i.wait_stream(self.state.current, stream)
        return value

    def collective(self, node: cst.Call, name: str):
        output_keyword = api.COLLECTIVE_OUTPUT.get(name)
        outputs: list = []
        storages: list = []
        first_positional = True
        for arg in node.args:
            tensor_argument = arg.keyword is None or arg.keyword.value in api.COLLECTIVE_TENSOR_KEYWORDS
            value = self.ev(arg.value)
            if not tensor_argument:
                continue
            found = storages_of(value)
            storages.extend(found)
            # The output is the first positional argument, or the one named by its keyword:
            # `all_gather(buffers, kv)` writes the buffers and only reads `kv`.
            if output_keyword is not None and (
                (arg.keyword is None and first_positional and not arg.star)
                or (arg.keyword is not None and arg.keyword.value == output_keyword)
            ):
                outputs.extend(found)
            if arg.keyword is None:
                first_positional = False
        asynchronous = _is_true(_keyword(node, "async_op")) or name in api.ALWAYS_ASYNC_COLLECTIVES
        inputs = [s for s in storages if s not in outputs]
        if storages and all(s.root.on_host for s in storages):
            # Every tensor is on the host (`torch.ones(shape)`): a host backend (gloo, MPI) runs
            # it, on no CUDA stream, and its `Work.wait()` blocks the host. Host accesses only.
            self.tensor_op(node, reads=inputs, writes=outputs)
            return None
        for storage in storages:
            # ProcessGroupNCCL records its tensors on its internal stream (or stashes them in the
            # Work) until the collective completes: the allocator cannot reuse them early.
            storage.root.recorded_streams.append(self.state.current)
        i = self.i
        current = self.state.current
        # Collectives run on the process group's internal stream, one for its collectives and
        # another for its point-to-point operations, each in issue order (ProcessGroupNCCL).
        group = _keyword(node, "group")
        group_text = i.model_code(group) if group is not None else "default group"
        if name in api.POINT_TO_POINT:
            stream = StreamValue(f"p2p:{group_text}",
                                 f"the process group's point-to-point stream ({group_text})",
                                 "collective", node)
        else:
            stream = StreamValue(f"collective:{group_text}",
                                 f"the process group's stream ({group_text})", "collective", node)
        if not asynchronous:
            # `async_op=False` waits for the work before it returns: the current stream waits for
            # the group's stream, so also for what was queued there before (an `irecv` whose
            # handle nobody waited on), and the work is done as far as the current stream is
            # concerned (the host does not block). Taken as work on the current stream.
            i.wait_stream(current, stream)
            self.tensor_op(node, reads=inputs, writes=outputs)
            return None
        # An asynchronous one starts once the current stream's work so far is done.
        i.wait_stream(stream, current)
        op = i.emit(OpKind.COLLECTIVE, node, stream=stream, reads=tuple(inputs), writes=tuple(outputs), qualname=name)
        for storage in inputs:
            storage.tensor = True
            i.access(op, storage, "read")
        for storage in outputs:
            storage.tensor = True
            i.access(op, storage, "write")
        return WorkValue(stream, node, conditional=bool(i.guards), op=op)
