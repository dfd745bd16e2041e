"""What the expression evaluator's parts share: reading a call's arguments, the tensor method
tables, and small facts about values and devices (:mod:`synclint.model.expressions`,
:mod:`synclint.model.calls`, :mod:`synclint.model.known_methods`). Package-internal."""

from __future__ import annotations

import re
from typing import Optional

import libcst as cst

from synclint.model import api
from synclint.model.bindings import ElementOf
from synclint.model.resolver import dotted
from synclint.model.values import (
    Alternatives,
    EventValue,
    HostValue,
    Storage,
    StreamValue,
)

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


#: A name that says it synchronizes: snake_case words (``cuda_sync``, ``synchronize_all``,
#: yolov5's ``time_synchronized``) or a camelCase word (cuda-python's ``cudaStreamSynchronize``,
#: ``cudaDeviceSynchronize``, or a first word: a C library's ``synchronizeStream`` through
#: ctypes); not ``async`` or ``Async``. Or one that waits for a device to go idle (slangpy's
#: ``device.wait_for_idle()``, Vulkan's ``vkDeviceWaitIdle``).
_SYNC_NAME = re.compile(
    r"(?i:(^|_)(sync|synced|synchroni[sz]ed?)(_|$))"
    r"|(?<=[a-z0-9])(Sync|Synced|Synchroni[sz]ed?)(?=[A-Z_]|$)"
    r"|^(sync|synchroni[sz]e)(?=[A-Z])"
    r"|(?i:(^|_)wait_(for_|until_)?idle$)|(?<=[a-z0-9])WaitIdle$"
)
_STREAM_ONLY_METHODS = {"wait_stream", "wait_event", "record_event"}
#: A setter's name: ``set_position_ids``, ``set_buffer`` (not the tensor method ``set_``).
_SETTER_NAME = re.compile(r"set_[A-Za-z0-9]")


#: A function named for a whole pass over the data (``train``, ``train_one_epoch``,
#: ``evaluate``, ``validate``, ``train_loop_func``): a loop over batches, which nearly always reads
#: its loss or metric on the host every iteration. Handed tensors, it is taken to synchronize
#: before it returns (``Op.opaque``), as a method of another object is: the caller's clock around
#: it is off by at most the tail of one iteration.
_RUNS_A_LOOP = re.compile(
    r"(?i:^(train|training|evaluate|evaluation|validate|validation|fit)(_|$)"
    r"|(^|_)(loop|epoch|epochs)(_|$))"
)


def runs_a_loop(name: str) -> bool:
    """Is ``name`` (a callee's last name) one of a function that runs a training or evaluation
    loop (:data:`_RUNS_A_LOOP`)?"""
    return _RUNS_A_LOOP.search(name) is not None


#: A function named for copying tensors to the host (YOLO ports' ``convert2cpu``, ``to_cpu``,
#: ``tensor2numpy``, ``to_numpy``, ``to_host``): handed device tensors, it reads them the
#: blocking way, as ``.cpu()`` and ``.numpy()`` do. Not a name that says it does not wait
#: (``async_to_cpu``, ``to_cpu_nonblocking``).
_COPIES_TO_THE_HOST = re.compile(r"(?i:(^|_|2)(cpu|numpy|np|host)$)")
_DOES_NOT_WAIT = re.compile(r"(?i:async|non_?blocking|prefetch)")


def copies_to_the_host(name: str) -> bool:
    """Is ``name`` (a callee's last name) one of a function that copies tensors to the host
    (:data:`_COPIES_TO_THE_HOST`)?"""
    return _COPIES_TO_THE_HOST.search(name) is not None and _DOES_NOT_WAIT.search(name) is None


def a_setter(node: cst.Call, name: str) -> bool:
    """A call of a function or method named ``set_<something>`` with one plain argument: it keeps
    the value (MindSpeed's ``set_actual_seq_len(buffer)``, right after the buffer's receive was
    started). A setter that copies data in takes its target too (``set_weights(model, w)``)."""
    return (
        _SETTER_NAME.match(name) is not None
        and len(node.args) == 1
        and node.args[0].keyword is None
        and not node.args[0].star
    )


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _positional(call: cst.Call) -> list[cst.BaseExpression]:
    return [arg.value for arg in call.args if arg.keyword is None and not arg.star]


def _is_true(node: Optional[cst.BaseExpression]) -> bool:
    return type(node) is cst.Name and node.value == "True"


def _may_be_true(node: Optional[cst.BaseExpression]) -> bool:
    """``True``, or a conditional one of whose arms is (``non_blocking=True if dev != cpu else
    False``: the copy is non-blocking where the code says it matters)."""
    if type(node) is cst.IfExp:
        return _may_be_true(node.body) or _may_be_true(node.orelse)
    return _is_true(node)


def _literal_bool(node: Optional[cst.BaseExpression]) -> Optional[bool]:
    if type(node) is cst.Name and node.value in ("True", "False"):
        return node.value == "True"
    return None


def _string(node: Optional[cst.BaseExpression]) -> Optional[str]:
    if type(node) is cst.SimpleString:
        return node.evaluated_value if isinstance(node.evaluated_value, str) else None
    return None


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
    kind = type(node)
    if kind is cst.List or kind is cst.Tuple or kind is cst.ListComp:
        return True
    if kind is cst.BinaryOperation and type(node.operator) in (cst.Add, cst.Multiply):
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


#: Every ``torch`` dtype attribute (PyTorch 2.x), aliases included.
_DTYPES = frozenset({
    "float", "float16", "float32", "float64", "half", "bfloat16", "double", "int", "int8",
    "int16", "int32", "int64", "long", "short", "bool", "uint8", "uint16", "uint32", "uint64",
    "complex32", "complex64", "complex128", "chalf", "cfloat", "cdouble",
    "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
    "float4_e2m1fn_x2", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
    "int1", "int2", "int3", "int4", "int5", "int6", "int7",
    "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7",
})


def is_dtype_expression(node: cst.BaseExpression) -> bool:
    """``torch.float16`` (a ``torch`` dtype by name) or ``x.dtype``."""
    text = dotted(node) or ""
    return is_dtype_name(text) or text.endswith(".dtype")


def is_dtype_name(qualname: str) -> bool:
    """``torch.float16`` and the other ``torch`` dtypes, by their qualified name."""
    return qualname.startswith("torch.") and qualname.rsplit(".", 1)[-1] in _DTYPES


def is_flag_parameter(param: cst.Param) -> bool:
    """A switch: a parameter with a boolean default, or annotated ``bool`` (see
    ``Interpreter.flag_parameter``)."""
    if type(param.default) is cst.Name and param.default.value in ("True", "False"):
        return True
    annotation = param.annotation.annotation if param.annotation is not None else None
    return type(annotation) is cst.Name and annotation.value == "bool"


def compares_a_written_device_to_cuda(test: cst.BaseExpression, bindings_of) -> bool:
    """Is ``test`` ``device == "cuda"`` where every value the scope gives ``device`` is a string
    written out (``for device in ["cuda", "cpu"]:``, or ``device = "cuda"`` and ``device =
    "cpu"``)? Then the test holds exactly where the program runs on the GPU: no other of those
    values names a CUDA device (a ``"cuda:1"`` among them would fail the test and still run
    there). ``bindings_of(name)`` is every value the scope binds ``name`` to, or None when that
    is not all there is to know (``Interpreter.local_bindings``)."""
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
        return False
    if type(test.comparisons[0].operator) is not cst.Equal:
        return False
    left, right = test.left, test.comparisons[0].comparator
    for name, constant in ((left, right), (right, left)):
        if type(name) is cst.Name and _string(constant) == "cuda":
            values = _written_strings(bindings_of(name.value))
            return bool(values) and all(v == "cuda" or not v.startswith("cuda") for v in values)
    return False


def _written_strings(bindings) -> Optional[list[str]]:
    """The strings a name's bindings are, each a string literal or an element of a list, tuple
    or set of them; None when one is anything else."""
    if not bindings:
        return None
    out: list[str] = []
    for value in bindings:
        if isinstance(value, ElementOf) and type(value.container) in (cst.List, cst.Tuple, cst.Set):
            items = [_string(e.value) for e in value.container.elements]
        elif type(value) is cst.IfExp:  # `"cuda" if torch.cuda.is_available() else "cpu"`
            items = [_string(value.body), _string(value.orelse)]
        else:
            items = [_string(value) if isinstance(value, cst.BaseExpression) else None]
        if not items or any(item is None for item in items):
            return None
        out.extend(items)
    return out


def _names_the_device(node: cst.BaseExpression) -> bool:
    """Is ``node`` the program's device, by its name (``device``, ``self.device``, ``args.device``,
    also as ``str(device)``)?"""
    if (
        type(node) is cst.Call and type(node.func) is cst.Name
        and node.func.value == "str" and len(node.args) == 1
    ):
        node = node.args[0].value
    name = dotted(node)
    return name is not None and name.rsplit(".", 1)[-1].lower().endswith("device")


def tests_for_the_gpu(test: cst.BaseExpression) -> bool:
    """:func:`chooses_the_gpu`, or ``device == "cuda"`` on a name that says device: where such a
    test is false, the program's device is not the GPU (its ``else`` arm runs on the host)."""
    if chooses_the_gpu(test):
        return True
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    return (
        type(target.operator) is cst.Equal
        and _string(target.comparator) == "cuda"
        and _names_the_device(test.left)
    )


def chooses_the_gpu(test: cst.BaseExpression) -> bool:
    """Is ``test`` the program's choice of the GPU, so that where it is false nothing runs on a
    device? A flag named for it (``if args.use_cuda:``, ``if use_gpu:``, a variable ``is_cuda``),
    or the type of the program's device (``if self.device.type == "cuda":``, ``DEVICE.type``,
    ``device.startswith("cuda")``, ``"cuda" in str(device)``: every GPU, not ``"cuda:0"``). Read like
    ``torch.cuda.is_available()`` (``api.DEVICE_PRESENT``)."""
    if type(test) is cst.Name and test.value in api.DEVICE_CHOSEN_NAMES:
        return True  # `is_cuda = device.type == "cuda"` (not `t.is_cuda`, one tensor's place)
    if type(test) in (cst.Name, cst.Attribute):
        name = dotted(test)
        return name is not None and name.rsplit(".", 1)[-1] in api.DEVICE_CHOSEN_FLAGS
    if (
        type(test) is cst.Call and type(test.func) is cst.Attribute
        and test.func.attr.value == "startswith" and len(test.args) == 1
        and _string(test.args[0].value) == "cuda"
    ):
        return _names_the_device(test.func.value)  # `device.startswith("cuda")`: any GPU
    if not (type(test) is cst.Comparison and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    if type(target.operator) is cst.In and _string(test.left) == "cuda":
        return _names_the_device(target.comparator)  # `"cuda" in str(device)`
    if type(target.operator) is not cst.Equal or _string(target.comparator) != "cuda":
        return False
    left = test.left
    if not (type(left) is cst.Attribute and left.attr.value == "type"):
        return False
    return _names_the_device(left.value)
