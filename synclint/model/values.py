"""The abstract values the interpreter tracks: streams, events, tensor storages, collective handles.

A *storage* stands for the memory a tensor and all its views share: a view binds a new name to the
same :class:`Storage`. Identity matters, equality does not, so values compare by identity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

import libcst as cst

#: Names that say "host memory" (`cpu_backup`, `host_buf`, `pinned`): taken at their word.
HOST_NAME = re.compile(r"(^|_)(cpu|host|pinned)(_|$)", re.IGNORECASE)

#: How sure we are of a stream's identity. Only streams whose origins make them provably distinct
#: are compared for hazards (precision first): see :meth:`StreamValue.distinct_from`.
ORIGINS = ("default", "created", "attribute", "parameter", "unknown", "collective", "external")


@dataclass(eq=False)
class StreamValue:
    key: str
    label: str
    origin: str = "unknown"
    created_at: Optional[cst.CSTNode] = None
    #: For streams taken from a container (``self.streams[i]``): the container's key and the index
    #: text, so that ``streams[0]`` and ``streams[1]`` are distinct but ``streams[i]`` and
    #: ``streams[j]`` may alias.
    container: Optional[str] = None
    index: Optional[str] = None
    #: The variable of a loop over the whole container (``for s in self.streams:``): a wait it
    #: makes (``s.wait_stream(main)``), or a host synchronization of it, holds for every element,
    #: whatever index picks one later (``self.streams[i % n]``).
    every: bool = False
    #: Stored in an attribute, returned or handed to other code: it may do work later.
    escapes: bool = False
    #: For an element of a list of streams made one per GPU: the code naming its GPU
    #: (``self.devices[0]`` for ``self.streams[0]``, :class:`StreamList`).
    gpu: Optional[str] = None

    @property
    def is_default(self) -> bool:
        return self.origin == "default"

    @property
    def short(self) -> str:
        """The name used in ``data`` for confirm and JSON (``default``, ``s``, ``self.stream``)."""
        return "default" if self.is_default else self.key.split("@", 1)[0]

    def distinct_from(self, other: "StreamValue") -> bool:
        """True when the two are certainly different streams (so unordered work on them races)."""
        if self.key == other.key:
            return False
        sure = {"default", "created", "attribute", "collective"}
        if self.origin not in sure or other.origin not in sure:
            return False
        if self.container and self.container == other.container:
            both_literal = (self.index or "").isdigit() and (other.index or "").isdigit()
            return both_literal and self.index != other.index
        return True

    def __repr__(self) -> str:
        return f"<stream {self.key}>"


DEFAULT_KEY = "<default>"


def default_stream() -> StreamValue:
    return StreamValue(DEFAULT_KEY, "the default stream", "default")


@dataclass(eq=False)
class EventValue:
    key: str
    label: str
    enable_timing: Optional[bool] = None
    created_at: Optional[cst.CSTNode] = None
    origin: str = "created"
    #: Made under an ``if`` (``if self.alt_stream is not None: ... e = s.record_event()``).
    conditional: bool = False

    def __repr__(self) -> str:
        return f"<event {self.key}>"


@dataclass(eq=False)
class Storage:
    """The memory behind a tensor and its views."""

    id: int
    label: str
    alloc_stream: Optional[StreamValue] = None
    alloc_node: Optional[cst.CSTNode] = None
    #: The op that made it (set on the first write at ``alloc_node``).
    alloc_op: Optional[object] = None
    device: Optional[str] = None  # "cuda", "cpu" or None (unknown)
    pinned: Optional[bool] = None
    #: "param" (made by the caller), "attribute" (held by an object), "local" (made here).
    origin: str = "local"
    #: Set when a reference outlives the function: returned, stored in an attribute or a container,
    #: yielded, captured. Held references (FSDP-style) are correct, so escaped storages are never
    #: reported as freed too early *here*.
    escapes: bool = False
    #: Streams the tensor was handed to with ``record_stream``.
    recorded_streams: list = field(default_factory=list)
    #: Evidence that this is a tensor at all. Parameters and results of unknown calls start without
    #: it and gain it when used as a tensor (a tensor method, arithmetic, a torch function); hazards
    #: on values that never show evidence are dropped, because they are usually configs or modules.
    tensor: bool = True
    #: The result of a comparison (``mask = x > 0``): indexing with it selects as many elements as
    #: it holds true, a size the host reads from the device.
    mask: bool = False
    #: A part of what a call handed device tensors returned (``found, adv = attack(model, x)``):
    #: a flag the host tests (``if found:``) was computed from the device's results.
    from_device: bool = False
    #: For a static slice of another tensor (``buf[:, :n]``): the tensor it views and the slice's
    #: text. Accesses are recorded on the base; two different static slices are taken as disjoint
    #: (halo exchanges and bucket views write separate slices from separate streams).
    base: Optional["Storage"] = None
    region: Optional[str] = None
    #: Every name (local or ``self.`` attribute) it has been bound to: where to look for the
    #: references still alive, without scanning the whole environment.
    names: set = field(default_factory=set)

    @property
    def root(self) -> "Storage":
        return self.base.root if self.base is not None else self

    @property
    def on_host(self) -> bool:
        return self.device == "cpu"

    def __repr__(self) -> str:
        return f"<storage {self.label}#{self.id}>"


@dataclass(eq=False)
class WorkValue:
    """A collective's ``Work`` handle (``async_op=True``): ``wait()`` orders the *current stream*."""

    stream: StreamValue
    node: cst.CSTNode
    #: Started under an ``if`` (``if dist.is_initialized(): handle = all_reduce(...)``).
    conditional: bool = False
    #: The collective's op: waiting on the handle waits for it and for what it had waited for,
    #: whatever the joins since have made of its stream's clock (a handle started under one
    #: ``if`` and waited under another in a later pass, TransformerEngine's context-parallel
    #: all-to-all).
    op: Any = None


@dataclass(eq=False)
class ModuleRef:
    """A namespace such as ``torch.cuda`` (or an accelerator object that mirrors it)."""

    qualname: str


@dataclass(eq=False)
class StreamList:
    """A container of streams (``[torch.cuda.Stream() for _ in range(n)]``)."""

    key: str
    label: str
    #: ``[torch.cuda.Stream(device=d) for d in self.devices]``: element ``i`` was made for
    #: ``self.devices[i]`` (the iterated code, ``self.devices``), one stream per GPU.
    gpu_per_element: Optional[str] = None

    def element_gpu(self, index: str) -> Optional[str]:
        if self.gpu_per_element is None:
            return None
        return f"{self.gpu_per_element}[{index}]"


@dataclass(eq=False)
class StreamContextFactory:
    """``functools.partial(torch.cuda.stream, stream=s)``: calling it makes the context that
    enters ``s`` (timm's prefetcher picks ``with stream_context():`` per device this way)."""

    stream: "StreamValue"


@dataclass(eq=False)
class StreamContext:
    """``torch.cuda.stream(s)`` bound to a name and entered later (``ctx = torch.cuda.stream(s)``
    ... ``with ctx:``; diffusers' group offloading picks it or ``nullcontext()``): entering it
    makes ``s`` current (:meth:`ExpressionEvaluator.context`)."""

    stream: "StreamValue"


class HostValue:
    """Something that is certainly not a tensor, stream or event (numbers, strings, shapes)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<host>"


HOST = HostValue()


class ClockReading(HostValue):
    """A reading of a host clock (``time.time()``), or arithmetic on one: a number of seconds.
    Whatever it is combined with (``now - batch["start_time"]``, a timestamp of unknown kind) is
    host arithmetic, not a kernel."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<clock>"


CLOCK = ClockReading()


class GraphValue(HostValue):
    """A graph object whose ``with g:`` captures (``torch.accelerator.Graph()``): no tensor,
    stream or event itself."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<graph>"


GRAPH = GraphValue()


class CudaGraphValue(HostValue):
    """A ``torch.cuda.CUDAGraph()``: captured by ``with torch.cuda.graph(g):``, run by
    ``g.replay()``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<cuda graph>"


CUDA_GRAPH = CudaGraphValue()


@dataclass(eq=False)
class Alternatives:
    """A name bound to different values on different paths (after an ``if``)."""

    values: tuple

    def storages(self) -> list[Storage]:
        return [v for v in self.values if isinstance(v, Storage)]


def holds(value, kind) -> bool:
    """Is ``value`` a ``kind`` (a class, or a tuple of them), on every path or on some
    (``Alternatives``)?"""
    values = value.values if isinstance(value, Alternatives) else (value,)
    return any(isinstance(v, kind) for v in values)


def holds_work(value) -> bool:
    """A ``Work`` handle, on every path or on some (``Alternatives``)."""
    return holds(value, WorkValue)


def storages_of(value) -> list[Storage]:
    # Exact type tests: the model calls this about a million times on a large file, and none of
    # these classes has subclasses.
    kind = type(value)
    if kind is Storage:
        return [value]
    if kind is Alternatives:
        return value.storages()
    if kind is TupleValue:
        out: list[Storage] = []
        for item in value.items:
            out.extend(storages_of(item))
        return out
    return []


@dataclass(eq=False)
class TupleValue:
    """A tuple or list literal, kept so that ``a, b = x.chunk(2)`` and ``for t in (x, y)`` work."""

    items: tuple


#: The only classes of value :func:`storages_of` finds storages in: a hot loop can skip the call
#: for any other value.
STORAGE_HOLDERS = frozenset({Storage, Alternatives, TupleValue})
