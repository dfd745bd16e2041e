"""Which torch stream/event API a call names, through imports, aliases and accelerator wrappers.

The event, timing, transfer and API rules (SYN2xx, SYN3xx, SYN5xx) ask "is this call
``torch.cuda.Event``?" of code that writes it as ``torch.cuda.Event``, ``from torch.cuda import Event
as E``, ``import torch.cuda as tc``, ``get_accelerator().Event`` (DeepSpeed) or ``torch.Event``.
Matching spelled-out text would miss the aliases and, worse, match unrelated ``Event`` classes
(``threading.Event``!), so every name is resolved through the file's imports first, and a name that
was not imported from torch resolves to nothing.
"""

from __future__ import annotations

from functools import cached_property
from typing import Iterable

import libcst as cst

from synclint.cstwalk import walk
from synclint.model.resolver import dotted
from synclint.settings import AnalysisSettings

#: Classes whose instances are CUDA(-like) events. ``torch.Event`` takes ``device`` first.
EVENT_CLASSES = frozenset(
    {
        "torch.cuda.Event",
        "torch.cuda.streams.Event",
        "torch.xpu.Event",
        "torch.xpu.streams.Event",
        "torch.mps.event.Event",
        "torch.Event",
    }
)
#: Positional parameters of each event constructor, in order.
EVENT_PARAMETERS = {
    "torch.Event": ("device", "enable_timing", "blocking", "interprocess"),
}
DEFAULT_EVENT_PARAMETERS = ("enable_timing", "blocking", "interprocess", "external")

STREAM_CLASSES = frozenset(
    {"torch.cuda.Stream", "torch.cuda.streams.Stream", "torch.xpu.Stream", "torch.Stream"}
)
STREAM_PARAMETERS = {
    # `torch.Stream(device=None, *, priority=0)`, or rebuilt from a stream's three numbers:
    # `torch.Stream(stream_id, device_index, device_type, *, priority=0)`.
    "torch.Stream": ("device", "priority", "stream_id", "device_index", "device_type"),
}
#: How many positional arguments ``torch.Stream`` accepts: a device, or a stream's three numbers.
GENERIC_STREAM_POSITIONAL = (0, 1, 3)
DEFAULT_STREAM_PARAMETERS = (
    "device",
    "priority",
    "stream_id",
    "device_index",
    "device_type",
    "stream_ptr",
)
#: How many of a stream constructor's parameters may be passed positionally.
STREAM_POSITIONAL = 2

#: ``with <this>(s):`` makes ``s`` current.
STREAM_CONTEXTS = frozenset({"torch.cuda.stream", "torch.xpu.stream", "torch.cuda.StreamContext"})
#: ``with <this>(g):`` captures a CUDA graph.
GRAPH_CONTEXTS = frozenset({"torch.cuda.graph", "torch.cuda.graphs.graph"})

#: Functions that block the host until all work on the device is done.
DEVICE_SYNCHRONIZE = frozenset(
    {
        "torch.cuda.synchronize",
        "torch.xpu.synchronize",
        "torch.mps.synchronize",
        "torch.accelerator.synchronize",
    }
)

#: Prefixes under which a wrapper-returned accelerator object is read as ``torch.cuda``.
_ACCELERATOR_MODULE = "torch.cuda"


class ImportResolver:
    """Maps names in one module to the dotted names they were imported as.

    Imports anywhere in the file count (also those inside functions: ``import time`` in a method is
    common in benchmark code); a name bound twice to different modules keeps the first binding, which
    is good enough for the API names we ask about.
    """

    def __init__(self, module: cst.Module, settings: AnalysisSettings | None = None) -> None:
        self.module = module
        self.settings = settings or AnalysisSettings()
        self.wrappers = frozenset(self.settings.accelerator_wrappers)

    @cached_property
    def aliases(self) -> dict[str, str]:
        collector = _ImportCollector()
        walk(self.module, collector)
        aliases = dict(collector.aliases)
        # ``cuda = torch.cuda`` / ``accel = get_accelerator()`` at module level: module aliases.
        for stmt in self.module.body:
            for target, value in _simple_assignments(stmt):
                resolved = self._resolve(value, aliases)
                if resolved and (resolved.startswith("torch") or resolved == _ACCELERATOR_MODULE):
                    aliases.setdefault(target, resolved)
        return aliases

    def qualname(self, node: cst.BaseExpression | None) -> str | None:
        """The dotted name ``node`` refers to, or None when it is not an imported name."""
        if node is None:
            return None
        return self._resolve(node, self.aliases)

    def _resolve(self, node: cst.BaseExpression, aliases: dict[str, str]) -> str | None:
        kind = type(node)  # exact: libcst's classes are ABCs, slow to isinstance() against
        if kind is cst.Name:
            return aliases.get(node.value)
        if kind is cst.Attribute:
            base = self._resolve(node.value, aliases)
            return f"{base}.{node.attr.value}" if base else None
        if type(node) is cst.Call:
            callee = self._resolve(node.func, aliases)
            return _ACCELERATOR_MODULE if callee in self.wrappers else None
        return None


class _ImportCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.aliases: dict[str, str] = {}

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted(alias.name)
            if full is None:
                continue
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                self.aliases.setdefault(alias.asname.name.value, full)
            else:
                head = full.split(".")[0]
                self.aliases.setdefault(head, head)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or type(node.names) is cst.ImportStar:
            return
        base = dotted(node.module)
        if base is None:
            return
        for alias in node.names:
            name = dotted(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and type(alias.asname.name) is cst.Name:
                local = alias.asname.name.value
            self.aliases.setdefault(local, f"{base}.{name}")


def _simple_assignments(stmt: cst.CSTNode) -> Iterable[tuple[str, cst.BaseExpression]]:
    if type(stmt) is not cst.SimpleStatementLine:
        return
    for small in stmt.body:
        if type(small) is cst.Assign and len(small.targets) == 1:
            target = small.targets[0].target
            if type(target) is cst.Name:
                yield target.value, small.value


def capture_method(value: cst.BaseExpression | None) -> str | None:
    """``"capture_begin"`` or ``"capture_end"`` when ``value`` calls one: the two ends of a CUDA
    graph captured by hand (``g.capture_begin()`` ... ``g.capture_end()``), where work is
    recorded, not run. Asked of every expression statement the model walks: attribute tests only."""
    if value.__class__ is not cst.Call:
        return None
    func = value.func
    name = func.attr.value if func.__class__ is cst.Attribute else getattr(func, "value", None)
    return name if name == "capture_begin" or name == "capture_end" else None


def capture_call(statement: cst.CSTNode) -> str | None:
    """:func:`capture_method` of ``statement`` when it is that call alone, bare or assigned
    (warp's ``graph = wp.capture_end()`` returns the graph)."""
    if statement.__class__ is not cst.SimpleStatementLine or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)):
        return capture_method(small.value)
    return None


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def has_star_args(call: cst.Call) -> bool:
    return any(a.star for a in call.args)


def literal_bool(node: cst.BaseExpression) -> bool | None:
    if type(node) is cst.Name and node.value in {"True", "False"}:
        return node.value == "True"
    return None


def literal_string(node: cst.BaseExpression) -> str | None:
    if type(node) is cst.SimpleString:
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def leading_text(node: cst.BaseExpression) -> str | None:
    """The text a string starts with, when it is written out or built from a literal at run time
    (``"cuda:{}".format(i)``, ``f"cuda:{i}"``, ``"cuda:" + str(i)``, ``"cuda:%d" % i``): enough
    to tell the kind of device a string names, never which one, so never compare it whole."""
    text = literal_string(node)
    if text is not None:
        return text
    kind = type(node)
    if kind is cst.FormattedString and node.parts and type(node.parts[0]) is cst.FormattedStringText:
        return node.parts[0].value
    if kind is cst.BinaryOperation and type(node.operator) in (cst.Add, cst.Modulo):
        return literal_string(node.left)
    if kind is cst.Call and type(node.func) is cst.Attribute and node.func.attr.value == "format":
        return literal_string(node.func.value)
    return None


def event_parameters(qualname: str) -> tuple[str, ...]:
    return EVENT_PARAMETERS.get(qualname, DEFAULT_EVENT_PARAMETERS)


def stream_parameters(qualname: str) -> tuple[str, ...]:
    return STREAM_PARAMETERS.get(qualname, DEFAULT_STREAM_PARAMETERS)


def event_argument(call: cst.Call, qualname: str, name: str) -> cst.Arg | None:
    """The argument that binds parameter ``name`` of an event constructor call, if written."""
    found = keyword(call, name)
    if found is not None:
        return found
    params = event_parameters(qualname)
    args = positional(call)
    if name in params and params.index(name) < len(args):
        return args[params.index(name)]
    return None


def event_timing(call: cst.Call, qualname: str) -> bool | None:
    """Whether an event constructor call enables timing: True, False, or None when unknowable
    (``**kwargs``, a variable)."""
    params = event_parameters(qualname)
    if any(a.keyword is not None and a.keyword.value not in params for a in call.args):
        return None  # an invalid call (SYN501 reports it): nothing to conclude about timing
    arg = event_argument(call, qualname, "enable_timing")
    if arg is None:
        return None if has_star_args(call) else False
    return literal_bool(arg.value)
