"""The timeline: what a function enqueues, on which stream, and what orders it.

Happens-before is tracked with vector clocks, like PyTorch's CUDA sanitizer
(``torch/cuda/_sanitizer.py``) does at run time:

* every stream has a counter; an op enqueued on stream ``k`` gets ``seq = ++counter[k]``;
* ``op.vc`` is what the op's stream had waited for when the op was enqueued: ``op.vc[j] >= n`` means
  "the first ``n`` ops of stream ``j`` complete before this op starts";
* ``op.host_vc`` is what the host had *seen complete* when it issued the op (after
  ``synchronize()``, a blocking read, ...). Work the host enqueues later is ordered after that, on
  every stream, so ``host_vc`` is folded into each new op's ``vc``.

Rules query these records; they never walk the CST for stream semantics themselves.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Mapping, Optional

import libcst as cst

from synclint.model.values import EventValue, Storage, StreamValue


class OpKind(str, enum.Enum):
    ENTRY = "entry"  # a parameter (or imported attribute access) produced before the function began
    ACCESS = "access"  # tensor work on a stream: reads and writes storages
    COPY = "copy"  # .to / .cuda / .cpu / copy_ / pin_memory: see Op.copy
    CREATE_STREAM = "create-stream"
    CREATE_EVENT = "create-event"
    RECORD_EVENT = "record-event"
    WAIT_EVENT = "wait-event"
    WAIT_STREAM = "wait-stream"
    RECORD_STREAM = "record-stream"
    HOST_SYNC = "host-sync"
    HOST_READ = "host-read"  # the host reads tensor memory (CPU tensor ops, .item() results, print)
    HOST_WRITE = "host-write"  # the host writes a CPU tensor's memory
    HOST_CLOCK = "host-clock"
    ELAPSED_TIME = "elapsed-time"
    COLLECTIVE = "collective"
    WORK_WAIT = "work-wait"
    RELEASE = "release"  # the last local reference to a storage dies here
    SET_STREAM = "set-stream"
    GRAPH_CAPTURE = "graph-capture"  # entering `with torch.cuda.graph(g):`
    EVENT_QUERY = "event-query"


@dataclass(frozen=True)
class CopyInfo:
    non_blocking: bool
    direction: str  # "h2d", "d2h", "d2d", "h2h" or "unknown"
    src: Optional[Storage]
    dst: Optional[Storage]
    #: The source was taken for host memory because of this very copy (``x.cuda()`` of a tensor
    #: of unknown device), not known to be: it may be on the device already.
    src_guessed: bool = False


@dataclass(eq=False)
class Op:
    index: int
    kind: OpKind
    node: cst.CSTNode
    stream: StreamValue
    seq: int = 0
    vc: Mapping[str, int] = field(default_factory=dict)
    host_vc: Mapping[str, int] = field(default_factory=dict)
    iteration: int = 0
    in_loop: bool = False
    reads: tuple[Storage, ...] = ()
    writes: tuple[Storage, ...] = ()
    event: Optional[EventValue] = None
    events: tuple[EventValue, ...] = ()
    target: Optional[StreamValue] = None
    recorded_by: tuple["Op", ...] = ()
    block_stream: Optional[StreamValue] = None
    arg_is_current_stream: bool = False
    copy: Optional[CopyInfo] = None
    in_graph_capture: bool = False
    pending: tuple["Access", ...] = ()
    sync_kind: Optional[str] = None
    clock: Optional[str] = None
    qualname: Optional[str] = None
    #: For ENTRY ops made from another method's access: the op it stands for.
    origin_op: Optional["Op"] = None
    #: Free text for messages (e.g. "by the caller", "in `preload`").
    note: str = ""
    #: Made while walking a ``self.m()`` helper at its call site (its node is in the helper).
    inlined: bool = False
    #: For an inlined op: the statement of the function being modelled that made the outermost
    #: call (where the op happens in that function's control flow: its loops and branches).
    call_site: Optional[cst.CSTNode] = None
    #: The configuration switches (``if use_side_stream:``, ``if self.overlap:``) whose arms the
    #: op was made in: ``(switch, taken)`` pairs, the switch as its code without ``not``.
    #: Ops made under opposite arms of one switch never run in the same call.
    switches: tuple = ()
    #: A call the model cannot see into, handed tensors: a method of an object that is not a
    #: tensor (``engine.generate(ids)``, ``runner.capture(x)``) or a constructor
    #: (``BroadcastOperation(bucket=buf)``). It may launch work, and it may as well synchronize
    #: before it returns, and what it returns may be pooled, cached or something it was given (no
    #: known allocation stream). (A module's ``forward``, and calls of the object itself,
    #: ``model(x)``, are not opaque: launching work and returning is what they are for.)
    opaque: bool = False

    @property
    def on_device(self) -> bool:
        return self.kind in (OpKind.ENTRY, OpKind.ACCESS, OpKind.COPY, OpKind.COLLECTIVE)

    @property
    def site(self) -> "Op":
        """The op whose node a message should point at (imported accesses point at the original)."""
        return self.origin_op or self

    def __repr__(self) -> str:
        return f"<op {self.index} {self.kind.value} on {self.stream.key} seq={self.seq}>"


@dataclass(eq=False)
class Access:
    op: Op
    storage: Storage
    mode: str  # "read" or "write"
    stream: StreamValue
    region: Optional[str] = None  # the static slice accessed, None for the whole tensor
    guards: frozenset = frozenset()  # the `if` test nodes it was made under (see Interpreter.guard_text)
    #: For a slice whose bounds name a ``for`` loop's variable: (that loop's id, the pass of the
    #: loop body it was made in). See :meth:`Interpreter.access`.
    passes: tuple = ()

    @property
    def node(self) -> cst.CSTNode:
        return self.op.site.node


@dataclass(eq=False)
class Hazard:
    storage: Storage
    first: Access
    second: Access
    kind: str  # "read-after-write", "write-after-read", "write-after-write"
    common_producer: Optional[Op] = None


@dataclass(eq=False)
class LifetimeHazard:
    storage: Storage
    alloc: Optional[Op]
    use: Access
    release: Op
    #: "freed" (last reference dies here) or "handed-off" (returned to a caller that uses it on
    #: its current stream, with no ``record_stream``).
    how: str = "freed"
    #: Names bound to it where the release happens (for a fix that must name it there).
    names: tuple = ()
    #: Where the outermost loop around the release started in ``FunctionModel.ops`` (None outside
    #: loops): the loop's next pass repeats the work walked from there.
    loop_start: Optional[int] = None


def done_with(op: Op) -> dict[str, int]:
    """What is complete once device op ``op`` is: it, what ran before it on its stream, and what
    its stream had waited for (a blocking copy returns only then)."""
    after = dict(op.vc)
    after[op.stream.key] = max(after.get(op.stream.key, 0), op.seq)
    return after


def ordered(first: Op, second_vc: Mapping[str, int], second_stream: StreamValue) -> bool:
    """Does ``first``'s device work complete before work with ``second_vc`` on ``second_stream``?"""
    if first.stream.key == second_stream.key:
        return True
    return second_vc.get(first.stream.key, 0) >= first.seq


@dataclass(eq=False)
class FunctionModel:
    name: str
    node: cst.CSTNode
    ops: list[Op] = field(default_factory=list)
    hazards: list[Hazard] = field(default_factory=list)
    lifetime_hazards: list[LifetimeHazard] = field(default_factory=list)
    class_name: Optional[str] = None
    #: Set when the scope was too deep to analyse (nothing is reported for it).
    truncated: bool = False

    def ordered_before(self, a: Op, b: Op) -> bool:
        """``a``'s device work completes before ``b``'s device work starts."""
        return ordered(a, b.vc, b.stream)

    def host_has_seen(self, a: Op, at: Op) -> bool:
        """When ``at`` is issued, the host knows ``a``'s device work has completed."""
        if not a.on_device and a.kind not in (OpKind.RECORD_EVENT,):
            return True
        return at.host_vc.get(a.stream.key, 0) >= a.seq

    def ops_of(self, *kinds: OpKind) -> list[Op]:
        return [op for op in self.ops if op.kind in kinds]


@dataclass(eq=False)
class ModuleModel:
    functions: list[FunctionModel] = field(default_factory=list)
