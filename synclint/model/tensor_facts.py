"""What is known about a tensor expression: is it a tensor, on which device, in pinned memory?

The transfer rules need these facts and must not guess: ``model.to(device)`` is an in-place
``nn.Module`` call while ``x.to(device)`` as a bare statement throws its result away; a
``non_blocking=True`` copy from a ``pin_memory()`` buffer overlaps while one from a fresh
``torch.tensor(...)`` does not. Facts come from how the value was made (factories with ``device=`` and
``pin_memory=``, ``.to(...)``/``.cuda()``/``.cpu()``/``.pin_memory()``, ``x.device``, DataLoader
``pin_memory=True``, ``torch.Tensor`` annotations), followed through assignments
(:mod:`synclint.model.bindings`). Anything not understood is ``None``: unknown.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from synclint.model.bindings import Bindings, Unknown
from synclint.model.torchapi import ImportResolver, keyword, leading_text, literal_bool

#: ``torch.<name>(...)`` calls that return a new tensor on the ``device=`` argument (default CPU).
FACTORIES = frozenset(
    "zeros ones empty full rand randn randint randperm arange linspace logspace eye tensor "
    "as_tensor empty_strided".split()
)
#: ``torch.<name>(x, ...)`` factories that follow ``x``'s device unless ``device=`` says otherwise.
LIKE_FACTORIES = frozenset("zeros_like ones_like empty_like full_like rand_like randn_like".split())
#: Tensor methods whose result lives where the receiver lives (pinned-ness not kept unless a view).
SAME_DEVICE_METHODS = frozenset(
    "clone detach float half double bfloat16 int long bool contiguous abs exp log sum mean "
    "softmax argmax max min reshape flatten squeeze unsqueeze permute t add mul sub div matmul".split()
)
#: Methods only tensors have: whatever the receiver, the result is a tensor.
TENSOR_ONLY_METHODS = frozenset({"detach", "contiguous"})
VIEW_METHODS = frozenset("view view_as narrow select expand transpose unbind as_strided".split())
#: ``torch.<name>(...)`` functions that return a tensor on their inputs' device.
TORCH_OPS = frozenset("cat stack matmul add mul where argmax softmax sigmoid relu bmm mm".split())
_PINNED_LOADERS = frozenset(
    {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
)


@dataclass(frozen=True)
class TensorFacts:
    device: str | None  # "cpu", "cuda" or None (unknown)
    pinned: bool | None  # only meaningful for CPU tensors
    how: str  # a few words saying why we believe it, for messages

    def join(self, other: "TensorFacts") -> "TensorFacts":
        return TensorFacts(
            self.device if self.device == other.device else None,
            self.pinned if self.pinned == other.pinned else None,
            self.how if self.how == other.how else f"{self.how} or {other.how}",
        )


UNKNOWN_TENSOR = TensorFacts(None, None, "a tensor")
#: What :meth:`TensorFactsResolver._existing_data` says of data made on the host, not a tensor.
_NEW_DATA = object()
#: Builtins whose results are host data ``torch.as_tensor`` copies into new memory.
_HOST_DATA_BUILTINS = frozenset({"list", "tuple", "range", "sorted", "reversed", "zip", "map"})


def device_of_literal(node: cst.BaseExpression, names: ImportResolver) -> str | None:
    """``"cuda:0"``, ``"cpu"``, ``torch.device("cpu")``, ``0`` (a CUDA index), ``f"cuda:{i}"``."""
    text = leading_text(node)
    if text is None and type(node) is cst.Call and names.qualname(node.func) == "torch.device":
        if node.args:
            text = leading_text(node.args[0].value)
    if text is None and type(node) is cst.Integer:
        return "cuda"
    if text is None:
        return None
    kind = text.split(":")[0]
    return kind if kind in {"cpu", "cuda"} else None


class TensorFactsResolver:
    def __init__(self, names: ImportResolver, bindings: Bindings) -> None:
        self.names = names
        self.bindings = bindings
        self._active: set[int] = set()

    def facts(
        self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0
    ) -> TensorFacts | None:
        """Facts about ``expr`` when it is known to be a tensor; None when it may not be one."""
        if depth > 8:
            return None
        if type(expr) is cst.Subscript:
            base = self.facts(expr.value, at, depth + 1)
            if base is not None:  # indexing a tensor: a view (slices) or a gathered copy
                views = all(type(e.slice) is cst.Slice for e in expr.slice)
                return TensorFacts(base.device, base.pinned if views else None, base.how)
        try:
            leaves = self.bindings.origins(expr, at)
        except Unknown:
            return self._annotated(expr, at)
        if not leaves:
            return None
        result: TensorFacts | None = None
        for leaf in leaves:
            if id(leaf) in self._active:
                continue  # ``x = x.to(...)``: the rebinding adds nothing to what the others say
            self._active.add(id(leaf))
            try:
                one = self._leaf(leaf, at, depth)
            finally:
                self._active.discard(id(leaf))
            if one is None:
                return None
            result = one if result is None else result.join(one)
        return result

    def device(self, expr: cst.BaseExpression, at: cst.CSTNode) -> str | None:
        facts = self.facts(expr, at)
        return facts.device if facts else None

    def target_device(self, node: cst.BaseExpression, at: cst.CSTNode) -> str | None:
        """The device a ``.to(...)`` target or ``device=`` argument names, if knowable."""
        literal = device_of_literal(node, self.names)
        if literal is not None:
            return literal
        if type(node) is cst.Attribute and node.attr.value == "device":
            return self.device(node.value, at)
        try:
            leaves = self.bindings.origins(node, at)
        except Unknown:
            return None
        devices = set()
        for leaf in leaves:
            if type(leaf) is cst.Attribute and leaf.attr.value == "device":
                devices.add(self.device(leaf.value, at))
            else:
                devices.add(device_of_literal(leaf, self.names))
        return devices.pop() if len(devices) == 1 else None

    def _annotated(self, expr: cst.BaseExpression, at: cst.CSTNode) -> TensorFacts | None:
        """A parameter annotated ``torch.Tensor`` / ``Tensor`` is a tensor on an unknown device."""
        if type(expr) is not cst.Name:
            return None
        function, _ = self.bindings.enclosing(at)
        if function is None:
            return None
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == expr.value and param.annotation is not None:
                annotation = param.annotation.annotation
                if self.names.qualname(annotation) == "torch.Tensor" or (
                    type(annotation) is cst.Attribute and annotation.attr.value == "Tensor"
                ):
                    return UNKNOWN_TENSOR
        return None

    def _leaf(self, leaf: cst.BaseExpression, at: cst.CSTNode, depth: int) -> TensorFacts | None:
        if type(leaf) is cst.Subscript:
            return None
        if type(leaf) is cst.BinaryOperation:
            left = self.facts(leaf.left, at, depth + 1)
            return TensorFacts(left.device, False, "arithmetic") if left else None
        if type(leaf) is cst.Comparison and len(leaf.comparisons) == 1:
            left = self.facts(leaf.left, at, depth + 1)
            return TensorFacts(left.device, False, "a comparison") if left else None
        if type(leaf) is not cst.Call:
            return None
        qualname = self.names.qualname(leaf.func) or ""
        if qualname.startswith("torch.") and qualname.count(".") == 1:
            return self._torch_function(leaf, qualname.split(".")[1], at, depth)
        if type(leaf.func) is cst.Attribute:
            return self._method(leaf, leaf.func.attr.value, leaf.func.value, at, depth)
        try:
            results = self.bindings.call_results(leaf, at)
        except Unknown:
            return None
        joined: TensorFacts | None = None
        for result in results:
            one = self.facts(result, result, depth + 1)
            if one is None:
                return None
            joined = one if joined is None else joined.join(one)
        return joined

    def _torch_function(self, call: cst.Call, name: str, at, depth: int) -> TensorFacts | None:
        device_arg = keyword(call, "device")
        pinned_arg = keyword(call, "pin_memory")
        pinned = literal_bool(pinned_arg.value) if pinned_arg is not None else False
        if name in ("as_tensor", "asarray") and device_arg is None and call.args:
            existing = self._existing_data(call.args[0].value, at, depth)
            if existing is not _NEW_DATA:
                return existing
        if name in FACTORIES or name == "from_numpy":
            if device_arg is None:
                return TensorFacts(
                    "cpu",
                    pinned,
                    f"`torch.{name}` without `pin_memory=True`"
                    if not pinned
                    else f"`torch.{name}(..., pin_memory=True)`",
                )
            device = self.target_device(device_arg.value, at)
            return TensorFacts(device, pinned if device == "cpu" else None, f"`torch.{name}`")
        if name in LIKE_FACTORIES and call.args:
            if device_arg is not None:
                device = self.target_device(device_arg.value, at)
            else:
                base = self.facts(call.args[0].value, at, depth + 1)
                device = base.device if base else None
            return TensorFacts(device, pinned if device == "cpu" else None, f"`torch.{name}`")
        if name in TORCH_OPS:
            first = self.facts(call.args[0].value, at, depth + 1) if call.args else None
            if first is not None and first.device is not None and name not in ("cat", "stack"):
                return TensorFacts(
                    first.device, False if first.device == "cpu" else None, f"`torch.{name}`"
                )
            return UNKNOWN_TENSOR
        return None

    def _existing_data(self, data: cst.BaseExpression, at, depth: int):
        """``torch.as_tensor(data)`` returns ``data`` itself where it is a tensor (no copy, no
        device change): its facts then, None where ``data`` may be a tensor made elsewhere (a
        parameter, an attribute: a caller's camera centre on the GPU), or :data:`_NEW_DATA`
        where it is made here of host data (a list, an array from a call)."""
        facts = self.facts(data, at, depth + 1)
        if facts is not None:
            return facts
        try:
            leaves = self.bindings.origins(data, at)
        except Unknown:
            return None
        if any(type(leaf) in (cst.Name, cst.Attribute) or self._may_return_a_tensor(leaf) for leaf in leaves):
            return None
        return _NEW_DATA

    def _may_return_a_tensor(self, leaf: cst.BaseExpression) -> bool:
        """A call that may hand back a tensor made elsewhere, maybe a pinned one
        (``batch.pin_memory()``, a context manager's ``yield self._mem``): a call of the file's
        code or of another module, not NumPy's, the builtins that make lists and tuples (host
        data ``torch.as_tensor`` copies into new pageable memory) or torch's own (whose facts
        :meth:`facts` knows)."""
        if type(leaf) is not cst.Call:
            return False
        qualname = self.names.qualname(leaf.func) or ""
        return not (
            qualname.startswith(("numpy.", "np.", "torch."))
            or qualname in _HOST_DATA_BUILTINS
        )

    def _method(self, call: cst.Call, name: str, receiver, at, depth: int) -> TensorFacts | None:
        if name == "pin_memory":
            base = self.facts(receiver, at, depth + 1)
            return TensorFacts("cpu", True, "`.pin_memory()`") if base else None
        if name in {"cuda", "cpu", "to"}:
            base = self.facts(receiver, at, depth + 1)
            if base is None:
                return None
            if name == "cuda":
                return TensorFacts("cuda", None, "`.cuda()`")
            if name == "cpu":
                # From the GPU: a new pageable tensor; already on the CPU: the tensor itself.
                pinned = (
                    False
                    if base.device == "cuda"
                    else (base.pinned if base.device == "cpu" else None)
                )
                return TensorFacts("cpu", pinned, "`.cpu()`")
            target = keyword(call, "device") or (call.args[0] if call.args else None)
            if target is None:
                return base
            if type(target.value) is cst.Attribute and target.value.attr.value.startswith(
                ("float", "half", "bfloat", "int", "long", "bool", "double")
            ):
                return base  # a dtype: same device
            device = self.target_device(target.value, at)
            if device is not None and device == base.device:
                return base  # .to() to where it already is returns the tensor itself
            pinned_arg = keyword(call, "pin_memory")
            return TensorFacts(
                device, False if device == "cpu" and pinned_arg is None else None, "`.to(...)`"
            )
        if name in VIEW_METHODS:
            return self.facts(receiver, at, depth + 1)
        if name in SAME_DEVICE_METHODS:
            base = self.facts(receiver, at, depth + 1)
            if base is None and name in TENSOR_ONLY_METHODS:
                return UNKNOWN_TENSOR
            return TensorFacts(base.device, None, base.how) if base else None
        return None
