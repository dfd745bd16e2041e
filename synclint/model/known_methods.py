"""Methods on values the model knows: a stream's ``wait_stream``/``synchronize``, an event's
``record``/``wait``/``elapsed_time``, a collective's ``work.wait()``, and a tensor's methods,
copies and transfers (``copy_``, ``.to``, ``.cuda``, ``.cpu``, ``.pin_memory``). Part of
:class:`~synclint.model.expressions.ExpressionEvaluator`, which mixes this in."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from synclint.model import api
from synclint.model.call_args import (
    _COMMON_TENSOR_METHODS,
    _direction,
    _keyword,
    _may_be_true,
    _positional,
    is_dtype_expression,
    is_dtype_name,
    mark_host,
)
from synclint.model.resolver import dotted
from synclint.model.tensor_methods import is_opaque_method
from synclint.model.timeline import CopyInfo, Op, OpKind, done_with
from synclint.model.values import (
    HOST,
    Alternatives,
    EventValue,
    ModuleRef,
    Storage,
    StreamValue,
    TupleValue,
    WorkValue,
    storages_of,
)


#: In-place methods whose argument is the value to write, usually a Python number.
_SCALAR_FILLS = frozenset({"fill_", "fill_diagonal_"})


class KnownValueMethods:
    """Methods called on known streams, events, work handles and tensors; ``self`` is the
    :class:`ExpressionEvaluator`."""

    # -- methods on known values ---------------------------------------------------------------

    def stream_method(self, node: cst.Call, stream: StreamValue, method: str):
        i = self.i
        positional = _positional(node)
        values = self.args(node)
        first = positional[0] if positional else None
        if method == "wait_stream":
            other = self.as_stream(first, values[0] if values else None)
            handed_over = other is not None and other.origin == "parameter"
            if handed_over and other.key != self.state.current.key:
                i.caller_orders_inputs = True  # a stream the caller handed over (see `finish`)
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
                event = EventValue(f"event@{len(i.model.ops)}", "the recorded event", False, node,
                                   conditional=bool(i.guards))
                self.state.born = self.state.born | {event.key}  # see `join`: made on this path
            # `torch.cuda.current_stream().record_event()` records on whatever stream is current,
            # like `event.record()`: SYN104 tells such recordings from a stream named on purpose.
            op = i.emit(OpKind.RECORD_EVENT, node, stream=stream, event=event, target=stream,
                        arg_is_current_stream=self.is_current_stream_call(node.func.value))
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
        if state is None and event is not None and event.origin == "parameter":
            i.caller_orders_inputs = True  # an event the caller recorded (see `Interpreter.finish`)
        if state is not None and state.stream is not None:
            i.note_ordering(stream, state.stream)
        i.emit(OpKind.WAIT_EVENT, node, stream=stream, event=event, target=stream if explicit else None,
               recorded_by=state.recorded_by if state else ())
        if state is not None:
            i.runs_after(stream.key, state.vc)
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
            if not self.i.file_names_a_device:
                # Nothing in the file names a GPU: a host backend (gloo) ran the collective, and its
                # `Work.wait()` blocks the host until the work is done (see `names_a_device`).
                self.sync_stream(node, work.stream, "stream")
            else:
                self.i.emit(OpKind.WORK_WAIT, node, target=work.stream)
            self.i.wait_stream(self.state.current, work.stream)
            if work.op is not None:
                self.i.runs_after(self.state.current.key, done_with(work.op))
        return HOST

    def tensor_method(self, node: cst.Call, receiver, method: str, hint: Optional[str]):
        i = self.i
        storages = storages_of(receiver)
        if method in api.METADATA:
            self.args(node)
            self.mark_tensor(storages)
            return HOST
        if method in api.STR_METHODS:
            # `result["text"].strip()`: text on the host, not tensor work.
            self.args(node)
            return HOST
        if method in api.HOST_FLAG_METHODS or method in api.MODULE_TENSOR_ACCESSORS:
            # `model.eval()`, `model.parameters()`: no work; the object itself, or its tensors.
            self.args(node)
            return receiver
        if method in ("chunk", "split", "unbind", "tensor_split"):
            self.args(node)
            self.mark_tensor(storages)
            return TupleValue(tuple(storages[:1]))
        if method in api.VIEW_METHODS and not (
            method in _COPY_WHEN_TRANSPOSED and _transposed(node.func.value)
        ):
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
        if method in ("new_empty", "new_empty_strided"):
            # Allocation only, no kernel (like `torch.empty`): the allocation stream counts.
            self.args(node)
            self.mark_tensor(storages)
            return i.new_storage(
                hint or "<expr>", node, alloc_stream=self.state.current,
                device=self._device_like(node, storages),
            )
        if method in ("new_zeros", "new_ones", "new_full"):
            # A new tensor with the receiver's dtype and device, filled on the current stream:
            # the receiver's data is not read (StreamDiffusionV2 sends `pred.new_zeros([1] *
            # pred.ndim)` as a sentinel on its communication stream, long after `pred` was made).
            values = self.args(node)
            self.mark_tensor(storages)
            given = [s for v in values for s in storages_of(v)]  # a tensor `fill_value`
            return self.tensor_op(node, reads=given, result_label=hint or "<expr>",
                                  device=self._device_like(node, storages))
        if method in api.SIZE_FROM_DATA:
            arg_storages = [s for v in self.args(node) for s in storages_of(v)]
            self.mark_tensor(storages)
            return self.size_from_data(node, storages + arg_storages, hint)
        if method == "copy_":
            return self.copy_into(node, storages)
        if method in api.TRANSFER_METHODS:
            result = self.transfer(node, storages, method, hint)
            if method == "bool" and isinstance(result, Storage) and not any(result is s for s in storages):
                result.mask = True  # `m = batch["train_mask"].bool()`, then `y_hat[m]`
            return result
        if method == "wait" or method == "synchronize":
            self.args(node)
            return None
        if (is_opaque_method(method) or method == "put") and not any(s.tensor for s in storages):
            # No tensor has this method: the receiver, never used as a tensor, is some other
            # object (`group.rank()`, `handle_buf.append(...)`, `runner.capture(x)`). `put` is
            # also a queue's (`q.put(frame)`, far more often than `Tensor.put`): it stores its
            # argument.
            return self.unknown_method(node, node.func, None, method, hint)
        values = self.args(node)
        arg_storages = [s for v in values for s in storages_of(v)]
        if method in _SCALAR_FILLS:
            # `buf.fill_(t)` takes a number, or a one-element tensor: a value of unknown kind
            # (`t = timestep(i, n)`, then `0.5 + t * 0.5`) is the number, not a tensor read.
            arg_storages = [s for s in arg_storages if s.tensor]
        if (method.endswith("_") and not method.endswith("__")) or (
            method == "apply" and len(node.args) == 1 and not any(s.on_host for s in storages)
        ):
            # In place; `model.apply(init_weights)` too (no tensor has `apply`; a module runs the
            # function on each submodule, there to initialise its weights in place).
            self.tensor_op(node, reads=arg_storages, writes=storages)
            return receiver
        out = _keyword(node, "out")
        if out is not None:
            out_storages = storages_of(self.ev(out))
            self.tensor_op(node, reads=storages + arg_storages, writes=out_storages)
            return out_storages[0] if out_storages else None
        evidence = method in _COMMON_TENSOR_METHODS or any(s.tensor for s in storages)
        # A method only some tensor subclasses have, on a tensor (`dt.full_tensor()`).
        opaque = bool(node.args) and is_opaque_method(method)
        return self.tensor_op(node, reads=storages + arg_storages, result_label=hint or "<expr>",
                              evidence=evidence, opaque=opaque)

    def _device_like(self, node: cst.Call, storages: list[Storage]) -> Optional[str]:
        """The device of ``x.new_*(...)``'s result: its ``device=``, else the receiver's."""
        device_node = _keyword(node, "device")
        if device_node is not None:
            return self.device_of(device_node)
        return storages[0].root.device if storages else None

    def copy_into(self, node: cst.Call, destinations: list[Storage]):
        positional = _positional(node)
        values = self.args(node)
        sources = storages_of(values[0]) if values else []
        non_blocking = _may_be_true(_keyword(node, "non_blocking")) or (
            len(positional) > 1 and _may_be_true(positional[1])
        )
        dst = destinations[0]
        src = sources[0] if sources else None
        guessed = src is not None and src.root.device is None and non_blocking and dst.root.device == "cuda"
        if guessed:
            mark_host(src)  # a non-blocking copy into device memory from a source of unknown kind
        direction = _direction(src.device if src else None, dst.device)
        self.mark_tensor(destinations + sources)
        if direction == "h2h":
            self.host_access(node, sources, "read") if sources else None
            self.host_access(node, destinations, "write")
            return dst
        self.emit_copy(node, src, dst, non_blocking, direction, guessed)
        return dst

    def emit_copy(self, node, src: Optional[Storage], dst: Storage, non_blocking: bool, direction: str,
                  guessed: bool = False) -> Op:
        """A copy from ``src`` to ``dst`` on the current stream (``copy_``, ``.to()``, a store
        ``host[:] = gpu``), and the host's wait when it is a blocking copy to or from the host.
        ``guessed``: the source is taken for host memory only because of this copy."""
        i = self.i
        reads = (src,) if src is not None else ()
        op = i.emit(OpKind.COPY, node, reads=reads, writes=(dst,),
                    copy=CopyInfo(non_blocking, direction, src, dst, guessed))
        if src is not None:
            i.access(op, src, "read")
        i.access(op, dst, "write")
        if not non_blocking and direction in ("d2h", "h2d", "unknown") and (
            direction == "d2h" or (src is not None and src.on_host)
        ):
            # A blocking copy returns once it is done (pageable H2D copies are staged first).
            self.i.emit(OpKind.HOST_SYNC, node, target=op.stream, sync_kind="blocking-copy")
            self.i.host_sees(done_with(op))
        return op

    def tensor_device(self, node: Optional[cst.BaseExpression]) -> bool:
        """``other.device`` where ``other`` is a known tensor (not ``self.device``)."""
        if not (type(node) is cst.Attribute and node.attr.value == "device"):
            return False
        key = dotted(node.value)
        return key is not None and bool(storages_of(self.state.env.get(key)))

    def other_tensors_device(self, node: Optional[cst.BaseExpression]) -> bool:
        """``other.device`` where ``other`` is a tensor this function made, or an item of a
        container (``enc["input_ids"].device``, a tokenizer's output): wherever that tensor is.
        Not ``config.device`` on a parameter (reading ``.device`` is no proof of a tensor): a
        configuration's device, the GPU more often than not."""
        if not (type(node) is cst.Attribute and node.attr.value == "device"):
            return False
        if type(node.value) is cst.Subscript:
            return True
        key = dotted(node.value)
        storages = storages_of(self.state.env.get(key)) if key is not None else []
        return bool(storages) and all(s.root.origin == "local" for s in storages)

    def _dtype_from_a_table(self, node: cst.BaseExpression, depth: int = 0) -> bool:
        """``.to(DTYPES[name])``, also through a name bound to it (``dt = DTYPES[name]``): an item
        of a dict bound once at the module's top level whose every value is a ``torch`` dtype
        (``DTYPES = {"fp16": torch.float16, "fp32": torch.float32}``): a conversion, no move."""
        if type(node) is cst.Name and depth == 0:
            values = self.i.written_values(node.value)
            return bool(values) and all(
                isinstance(v, cst.BaseExpression) and self._dtype_from_a_table(v, 1) for v in values
            )
        if type(node) is not cst.Subscript or type(node.value) is not cst.Name:
            return False
        tables = self.i.written_values(node.value.value)
        return bool(tables) and all(
            type(table) is cst.Dict
            and bool(table.elements)
            and all(type(e) is cst.DictElement and is_dtype_expression(e.value) for e in table.elements)
            for table in tables
        )

    def transfer(self, node: cst.Call, storages: list[Storage], method: str, hint: Optional[str]):
        positional = _positional(node)
        self.args(node)
        src = storages[0]
        self.mark_tensor(storages)
        non_blocking = _may_be_true(_keyword(node, "non_blocking"))
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
                if is_dtype_expression(device_node) or self._dtype_from_a_table(device_node) or (
                    type(device_node) is cst.Name
                    and _names_a_dtype(self.state.env.get(device_node.value))
                ):
                    target = src.device
                elif (
                    src.on_host
                    and self.device_text(device_node) is None
                    and not self.other_tensors_device(device_node)
                ):
                    # `.to(device)` from a CPU tensor is almost always an upload; not to a device
                    # written out as another kind (`"xla"`, `torch.device("mps")`), nor to where
                    # another tensor of unknown device is (`.to(enc["input_ids"].device)`).
                    target = "cuda"
            if len(positional) > 1 and _may_be_true(positional[1]):
                non_blocking = True
        else:
            target = src.device  # dtype conversion
        guessed = False
        if method == "pin_memory":
            mark_host(src)  # only host memory can be pinned; nothing touches the GPU
        elif src.device is None and (
            (target == "cuda" and method in ("cuda", "xpu", "to"))
            or (method == "to" and non_blocking and target is None and not self.tensor_device(device_node))
        ):
            # Uploading it (`.cuda()`, `.to("cuda")`, `.to(device, non_blocking=True)`): the source
            # is host memory. Not `.to(other.device)`, which follows another tensor wherever it is.
            mark_host(src)
            guessed = True
        direction = _direction(src.device, target)
        alloc = self.state.current
        if (
            target != "cpu"
            and device_node is not None
            and _names_a_device(device_node, node)
            and self._for_another_device(device_node, alloc)
        ):
            alloc = None  # memory from another GPU's current stream (`factory`)
        result = self.i.new_storage(hint or "<expr>", node, alloc_stream=alloc,
                                    device=target, pinned=pinned or None)
        if direction == "h2h":
            self.host_access(node, [src], "read")
            return result
        self.emit_copy(node, src, result, non_blocking, direction, guessed)
        return result


def _names_a_device(device_node: cst.BaseExpression, call: cst.Call) -> bool:
    """Is the argument of ``.to(...)`` a device, not a dtype? Given as ``device=``, or an
    attribute whose name says so (``self.home_dev``, ``self.gpu``; not ``self.img_dtype``)."""
    if _keyword(call, "device") is device_node:
        return True
    if type(device_node) is not cst.Attribute:
        return False
    name = device_node.attr.value.lower()
    return "dtype" not in name and any(word in name for word in ("dev", "gpu", "cuda"))


#: View methods that copy when their receiver is a transposed view: the data must be laid out
#: anew (``lse.transpose(0, 1).contiguous()``, ``x.permute(0, 2, 1).reshape(n, -1)``), a kernel
#: that reads the tensor, like ``.clone()``.
_COPY_WHEN_TRANSPOSED = frozenset({"contiguous", "reshape", "flatten"})
_TRANSPOSING_METHODS = frozenset({"transpose", "t", "permute", "movedim", "swapaxes", "swapdims"})
_TRANSPOSING_ATTRIBUTES = frozenset({"T", "mT", "H", "mH"})


def _transposed(node: cst.BaseExpression) -> bool:
    """Is ``node`` a transposed view written out (``x.transpose(0, 1)``, ``x.permute(...)``,
    ``x.t()``, ``x.mT``)?"""
    if type(node) is cst.Call and type(node.func) is cst.Attribute:
        return node.func.attr.value in _TRANSPOSING_METHODS
    return type(node) is cst.Attribute and node.attr.value in _TRANSPOSING_ATTRIBUTES


def _names_a_dtype(value) -> bool:
    """A name bound to ``torch`` dtypes on every path (``proj_type = torch.float16``, or
    ``torch.float32`` on another branch): ``.to(proj_type)`` converts, it does not move."""
    values = value.values if isinstance(value, Alternatives) else (value,)
    return all(isinstance(v, ModuleRef) and is_dtype_name(v.qualname) for v in values)
