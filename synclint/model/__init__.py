"""The stream timeline model: the one analysis every rule queries.

``build_module_model(module, settings)`` interprets each scope of a parsed module (the module body,
every function, every method with its class's attribute state) into a :class:`FunctionModel`: a list
of :class:`Op` in program order, with vector clocks that say what orders what, plus the hazards found
on the way. Rules are small queries over it (see ``synclint/rules/``); they should not re-derive
stream semantics from the CST.

Reading guide:

* :mod:`.values` - streams, events, tensor storages (views share one), collective handles.
* :mod:`.timeline` - :class:`Op`, :class:`OpKind`, :class:`Access`, :class:`Hazard`,
  :class:`LifetimeHazard`, :class:`FunctionModel` (``ordered_before``, ``host_has_seen``).
* :mod:`.resolver` - imports and aliases to canonical names (``torch.xpu.Stream`` ->
  ``torch.cuda.Stream``; configured accelerator wrappers such as ``get_accelerator()``).
* :mod:`.api` - what each PyTorch call and tensor method means.
* :mod:`.state` - the abstract state and the join of two paths.
* :mod:`.interpreter` - simple statements, bindings, hazards and lifetimes, with its compound
  statements mixed in from :mod:`.control_flow` (branches and their joins, loops walked twice,
  ``with``, ``try``, ``match``).
* :mod:`.expressions` - expressions and operators, with two parts mixed in: :mod:`.calls` (what
  a call means, by the name it resolves to) and :mod:`.known_methods` (methods on known streams,
  events, work handles and tensors: waits, records, copies, transfers); :mod:`.call_args` holds
  what they share.
* :mod:`.scopes` - module helpers, functions, classes (methods combined).

Queries rules use most:

* ``FunctionModel.hazards`` - unordered cross-stream accesses. ``Hazard.first`` / ``.second`` are
  :class:`Access` (op, storage, mode, stream); ``.second`` is later in program order (in a loop, it may
  be in the next iteration). ``Hazard.common_producer`` is set when both streams waited for a common
  producer but not for each other (SYN103).
* ``FunctionModel.lifetime_hazards`` - a storage used on a stream other than its allocation stream
  whose last reference dies (``how="freed"``) or is handed to the caller (``how="handed-off"``)
  before that use is ordered before the allocation stream's later work, with no ``record_stream``.
* Ops of kind HOST_READ / HOST_WRITE carry ``pending``: device accesses of the storage the host has
  not seen complete (SYN301 / SYN304). HOST_SYNC ops carry ``sync_kind``. WAIT_EVENT,
  ELAPSED_TIME and event HOST_SYNC carry ``recorded_by`` (the RECORD_EVENT ops that may have recorded
  the event before, on some path). HOST_CLOCK ops carry ``clock``. ``op.in_graph_capture``,
  ``op.in_loop``, ``op.block_stream`` and ``op.arg_is_current_stream`` describe the context.
* ``FunctionModel.ordered_before(a, b)`` and ``FunctionModel.host_has_seen(a, at)``.

Assumptions (documented in the rule pages, configurable in :class:`~synclint.settings.AnalysisSettings`):
parameters are produced on the caller's current stream before the function starts; unknown calls
neither synchronize nor switch streams, and read their tensor arguments on the current stream; a
stream whose identity is uncertain (a parameter, a value from an unknown call) is never reported as
racing, because it may be the current stream.

Precision heuristics, each learned from false positives on real projects (see
``benchmarks/triage.md``): values need evidence of being tensors before hazards on them are reported
(:attr:`Storage.tensor`); a helper named ``*sync*`` synchronizes; names such as ``cpu_*`` are host
memory, and so is the source of an upload; ``self.m(...)`` calls are walked at the call site
(:mod:`.inlining`); boolean flag parameters and ``self.`` configuration tests keep the waits they
guard; static slices of one buffer are disjoint; collectives keep their tensors alive and are ordered
among themselves by the framework; a stream created in a call and never handed out does no later
work.
"""

from synclint.model.scopes import build_module_model
from synclint.model.timeline import (
    Access,
    CopyInfo,
    FunctionModel,
    Hazard,
    LifetimeHazard,
    ModuleModel,
    Op,
    OpKind,
)
from synclint.model.values import EventValue, Storage, StreamValue

__all__ = [
    "Access",
    "CopyInfo",
    "EventValue",
    "FunctionModel",
    "Hazard",
    "LifetimeHazard",
    "ModuleModel",
    "Op",
    "OpKind",
    "Storage",
    "StreamValue",
    "build_module_model",
]
