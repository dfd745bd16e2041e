"""Which scopes are analysed, in what order, with what they inherit.

* Module-level helpers are summarised first (does calling it synchronize the host? does it return
  the current stream?), so callers see through them.
* Each function and the module body are interpreted on their own.
* A class is analysed as a whole: ``__init__`` first; its attributes (streams, events, buffers) seed
  every other method. Then each method runs once to learn what it leaves behind: attribute tensors
  accessed on some stream and not yet ordered before the caller's stream, and the events recorded
  after them. A second run of every method starts from all of that, so a buffer filled on
  ``self.stream`` in ``preload()`` and read in ``next()`` without a wait is a hazard, while an
  event handoff or a ``wait_stream`` in ``next()`` orders it.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Optional

import libcst as cst

from synclint.cstwalk import names_in, walk
from synclint.model.bindings import returned_values
from synclint.model.context_managers import is_context_manager
from synclint.model.interpreter import FunctionSummary, Interpreter
from synclint.model.loop_split import loop_switches, under_the_tests
from synclint.model.resolver import ImportResolver, dotted, is_self_attribute
from synclint.model.state import EventState
from synclint.model.switch_split import split_predicate
from synclint.model.timeline import Access, FunctionModel, ModuleModel, OpKind
from synclint.model.values import (
    Alternatives,
    EventValue,
    Storage,
    StreamList,
    StreamValue,
    TupleValue,
    WorkValue,
    holds,
    holds_work,
    storages_of,
)
from synclint.settings import AnalysisSettings
from synclint.slicing import WAIT_NAMES, called_on_others, instantiated


def build_module_model(
    module: cst.Module,
    settings: Optional[AnalysisSettings] = None,
    source: Optional[str] = None,
    code_for: Optional[Callable[[cst.CSTNode], str]] = None,
) -> ModuleModel:
    """The model of a parsed module. Pass the ``source`` text it was parsed from when you have it
    (regenerating it from the tree costs about as much as parsing). ``code_for`` gives a node's
    code, which the model compares (conditions, slices, process groups): ``module.code_for_node``
    unless the caller has it another way (the screen cuts it from the source)."""
    settings = settings or AnalysisSettings()
    resolver = ImportResolver(module, settings.accelerator_wrappers)
    builder = _Builder(module, resolver, settings, source, code_for or module.code_for_node)
    return builder.build()


class _Builder:
    def __init__(
        self,
        module: cst.Module,
        resolver: ImportResolver,
        settings: AnalysisSettings,
        source: Optional[str],
        code_for: Callable[[cst.CSTNode], str],
    ) -> None:
        self.module = module
        self.source = source
        self.code_for = code_for
        self.resolver = resolver
        self.settings = settings
        self.summaries: dict[str, FunctionSummary] = {}
        # id(function) -> (its last summary run, the summaries that run looked up)
        self._summary_runs: dict[int, tuple[Interpreter, dict]] = {}
        self.result = ModuleModel()
        self.interpreters: list[Interpreter] = []
        #: Functions and methods started as threads (``threading.Thread(target=worker)``): what
        #: they are handed comes from another thread, not from a caller on the same stream.
        text = source if source is not None else module.code
        self.thread_targets = _thread_targets(text)
        self.module_names = module_names(text)
        #: The file makes raw CUDA streams (cuda-python's ``cudaStreamCreate``, the driver's
        #: ``cuStreamCreate``): an ``ExternalStream`` here wraps one of them, a new stream.
        self.creates_raw_streams = "StreamCreate" in text
        self.names_a_device = names_a_device(text)
        self.module_constants = module_constants(module, text)
        self.bool_switches = _BoolSwitches(text)
        self.file_defines = lambda name: bool(re.search(rf"\bdef[ \t]+{re.escape(name)}\b", text))
        #: ``@contextmanager`` functions, walked where a ``with`` calls them.
        self.context_managers = {
            s.name.value: s
            for s in module.body
            if type(s) is cst.FunctionDef and is_context_manager(s)
        }
        self.event_makers = event_makers(module, text)
        #: Class name -> its methods that make the host wait (:meth:`summarise_methods`).
        self.synchronizing_methods: dict[str, dict[str, str]] = {}
        #: Attribute name -> the class its instances are made of (:class:`_AttributeClasses`);
        #: a callable of its own, not a method: interpreters hold it, and the builder holds them.
        self.attribute_class = _AttributeClassIndex(module)

    def interpreter(
        self, model: FunctionModel, counters: dict, attributes=None, summaries=None
    ) -> Interpreter:
        summaries = self.summaries if summaries is None else summaries
        interp = Interpreter(model, self.resolver, self.settings, summaries, counters, attributes)
        interp.model_code = self.code_for
        interp.module_names = self.module_names
        interp.external_streams_are_new = self.creates_raw_streams
        interp.file_names_a_device = self.names_a_device
        interp.module_constants = self.module_constants
        interp.context_managers = self.context_managers
        interp.event_makers = self.event_makers
        interp.synchronizing_methods = self.synchronizing_methods
        interp.attribute_class = self.attribute_class
        interp.bool_switches = self.bool_switches
        interp.file_defines = self.file_defines
        if model.name.rsplit(".", 1)[-1] in self.thread_targets:
            interp.from_callers_stream = False
        self.interpreters.append(interp)
        return interp

    def build(self) -> ModuleModel:
        functions = [s for s in self.module.body if type(s) is cst.FunctionDef]
        classes = [s for s in self.module.body if type(s) is cst.ClassDef]
        self.synchronizing_methods = self.summarise_methods(classes)
        self.summarise(functions)
        self.run_scope(FunctionModel("<module>", self.module), lambda i: i.run_module(self.module))
        for function in functions:
            self.run_function(function, name=function.name.value)
        for cls in classes:
            self.run_class(cls)
        for interp in self.interpreters:
            interp.close()
        return self.result

    # -- module-level helpers ----------------------------------------------------------------

    def summarise(self, functions: list[cst.FunctionDef]) -> None:
        """Summarise the helpers something in the module calls; a second round only when a helper
        turned out to synchronize (so a helper calling it is seen as synchronizing too).

        A caller learns only these facts of a helper (it synchronizes the device, it waits for the
        stream it is called on, it returns that stream, it returns a tensor it made on the
        device): :mod:`synclint.slicing` relies on it
        (it keeps the helpers relevant code names, not the callers of relevant code). Anything
        more passed from one top-level definition to another must be taught to the slicer too."""
        text = self.source if self.source is not None else self.module.code
        called = [f for f in functions if text.count(f"{f.name.value}(") > 1]  # more than its `def`
        for round_ in range(2):
            if round_ and not any(
                s.synchronizes or s.waits_for_current_stream for s in self.summaries.values()
            ):
                break
            for function in called:
                model = FunctionModel(function.name.value, function)
                seen = _SeenSummaries(self.summaries)
                interp = self.interpreter(model, {}, summaries=seen)
                self._summary_runs.pop(id(function), None)
                try:
                    interp.run_function(function, is_method=False)
                except RecursionError:
                    continue
                self._summary_runs[id(function)] = (interp, seen.seen)
                summary = FunctionSummary()
                summary.synchronizes = any(_synchronizes(op) for op in model.ops)
                summary.waits_for_current_stream = any(
                    _waits_for(op, interp.entry.key) for op in model.ops
                )
                summary.returns_current_stream = interp.returned_stream
                summary.waits_last = _waits_last(model.ops, interp.entry.key)
                summary.returns_device_tensor = _returns_a_device_tensor(function, interp)
                self.summaries[function.name.value] = summary

    def summarise_methods(self, classes: list[cst.ClassDef]) -> dict[str, dict[str, str]]:
        """Which methods of the file's classes make the host wait, for calls on an instance: those
        that synchronize the device (FluidMoE's ``with CommTimer() as timer: ...`` then
        ``timer.aggregate_ms()``, whose body opens with ``torch.cuda.synchronize()``) map to
        ``"device"``; those that read a tensor on the host (DoubleSparse's
        ``self.kv_cache.update(k, v)``, whose body copies ``k.cpu()``) to ``"stream"``: the host
        has waited for the stream the caller is on.

        Only methods that name ``synchronize`` or a blocking read (:data:`slicing.WAIT_NAMES`) are
        run, of classes the file calls (``C(``), and :mod:`synclint.slicing` keeps such a class
        when relevant code names it or calls one of those methods. A class whose ``__enter__`` returns something other than
        ``self`` is left out (``with C() as t`` would not bind an instance), and so are decorated
        methods and methods nothing but ``self`` calls (``.name(`` no more often than
        ``self.name(``). A node's code is not asked for: on the screen's mirror that would end the
        screen for every file with a class. Methods are summarised before the module's helpers,
        with none of their summaries: a method that synchronizes only through a helper is not
        seen to."""
        text = self.source if self.source is not None else self.module.code
        found: dict[str, dict[str, str]] = {}
        if not any(name in text for name in WAIT_NAMES):
            return found
        for cls in classes:
            if not instantiated(cls.name.value, bool(cls.bases or cls.keywords), text):
                continue
            methods = [s for s in cls.body.body if type(s) is cst.FunctionDef]
            if not all(_returns_self(m) for m in methods if m.name.value == "__enter__"):
                continue
            waiting: dict[str, str] = {}
            for method in methods:
                name = method.name.value
                if (
                    method.decorators
                    or not method.params.params
                    or not called_on_others(name, text)
                    or names_in(method.body).isdisjoint(WAIT_NAMES)
                ):
                    continue
                model = FunctionModel(f"{cls.name.value}.{name}", method, class_name=cls.name.value)
                interp = self.interpreter(model, {}, summaries={})
                try:
                    interp.run_function(method, is_method=True)
                except RecursionError:
                    continue
                if any(_synchronizes(op) for op in model.ops):
                    waiting[name] = "device"
                elif any(_waits_for(op, interp.entry.key) for op in model.ops):
                    waiting[name] = "stream"
            if waiting:
                found[cls.name.value] = waiting
        return found

    # -- functions ------------------------------------------------------------------------------

    def run_scope(
        self, model: FunctionModel, body, counters=None, attributes=None, done=None
    ) -> Interpreter:
        """Interpret a scope and record its model (``done``: an interpreter that already ran it)."""
        interp = done
        if interp is None:
            interp = self.interpreter(model, counters if counters is not None else {}, attributes)
            _guarded(model, lambda: body(interp))
        interp.finish()

        def again(assumed: dict) -> Interpreter:
            twin = FunctionModel(model.name, model.node, class_name=model.class_name)
            run = self.interpreter(twin, counters if counters is not None else {}, attributes)
            run.assumed = assumed
            _guarded(twin, lambda: body(run))
            run.finish()
            return run

        self.result.functions.extend(run.model for run in _split(interp, again))
        for nested in interp.nested:
            self.run_function(nested, name=f"{model.name}.{nested.name.value}")
        return interp

    def run_function(self, node: cst.FunctionDef, name: str) -> None:
        done = self._summary_run(node)
        model = done.model if done is not None else FunctionModel(name, node)
        self.run_scope(model, lambda i: i.run_function(node, is_method=False), done=done)

    def _summary_run(self, node: cst.FunctionDef) -> Optional[Interpreter]:
        """The helper's last summary run, when it is the run :meth:`run_function` would make: it
        started from nothing, as a function does, and every summary it looked up is still what
        it found then (a run is a function of what it looks up). Helpers are summarised for their
        callers and then analysed on their own: this spares the second, identical walk."""
        run = self._summary_runs.pop(id(node), None)
        if run is None:
            return None
        interp, seen = run
        if any(_facts(self.summaries.get(name)) != facts for name, facts in seen.items()):
            return None
        return interp

    # -- classes --------------------------------------------------------------------------------

    def run_class(self, cls: cst.ClassDef) -> None:
        methods = [s for s in cls.body.body if type(s) is cst.FunctionDef]
        self._methods = {m.name.value: m for m in methods}
        facts = _ClassFacts.of(cls)
        self._assigned = facts.assigned
        init = next((m for m in methods if m.name.value == "__init__"), None)
        # Private helpers called from the class are analysed where they are called (inlining),
        # not as entry points of their own.
        called = facts.called_elsewhere
        others = [
            m for m in methods
            if m is not init and not (m.name.value.startswith("_") and not m.name.value.startswith("__")
                                      and m.name.value in called)
        ]
        counters: dict[str, int] = {}
        self._returns = {}

        attributes: dict = {}
        init_exports = _Exports()
        init_interp = None
        if init is not None:
            interp = init_interp = self.method(cls, init, counters, {}, record=True)
            attributes = _attributes(interp)
            # What `__init__` does on the caller's stream (allocating and zeroing buffers) is
            # long done by the time other methods run; its side-stream work (a first prefetch) is not.
            init_exports = _Exports.of(interp, keep_entry_stream=False)

        # Round 1: learn what each method leaves open.
        exports = [init_exports]
        first_round = {}
        known_before = {k for k, v in attributes.items() if _informative(v)}
        for method in others:
            interp = self.method(cls, method, counters, attributes, init_exports, record=False)
            first_round[method.name.value] = interp
            for key, value in _attributes(interp).items():
                if _informative(value) or key not in attributes:
                    if not _informative(attributes.get(key)):
                        attributes[key] = value
            # A method the class calls itself is a helper: what it did on the stream it was called
            # on reaches the other methods through its callers, which walk it where they call it,
            # on their own streams. Only its work on streams it names itself is its own to export.
            exports.append(_Exports.of(interp, keep_entry_stream=method.name.value not in called))
        for method, export in zip(others, exports[1:]):
            if method.name.value in called:
                export.drop_closed_by(_callers(facts, method.name.value, first_round, init_interp))
        # Round 2: every method starts from everything any method (itself included) left open,
        # and sees through helpers that return a tensor made on an attribute stream.
        combined = _Exports.combine(exports)
        combined.close_handed_back(list(first_round.values()), init_interp)
        self._returns = self.method_returns(first_round)
        # Nothing for a second round to start from when no method put device work on any other
        # stream than the caller's (then no two methods' accesses can race), or when nothing new
        # was learned at all.
        single_stream = not any(
            op.on_device and op.stream.key != interp.entry.key
            for interp in [*first_round.values(), *([init_interp] if init_interp else [])]
            for op in interp.model.ops
        )
        # A non-blocking copy from or into host memory that a method leaves running races with
        # the next call's host writes on one stream too (SYN304: `self._cpu_buf.zero_()` at the
        # top of the method that uploads it at the bottom), so it is replayed as well.
        host_in_flight = any(
            a.op.copy is not None and a.op.copy.non_blocking and a.storage.on_host
            for e in exports for a in e.accesses
        )
        settled = not self._returns and not host_in_flight and (
            single_stream
            or (
                not any(e.accesses or e.events for e in exports[1:])
                and {k for k, v in attributes.items() if _informative(v)} == known_before
            )
        )
        for method in others:
            # Nothing new for a second round to start from when settled: it would repeat the first.
            seed = init_exports if settled else combined
            if settled:
                interp = first_round[method.name.value]
            else:
                interp = self.method(cls, method, counters, attributes, combined, record=False, returns=True)
            runs = _split(
                interp,
                lambda assumed, method=method, seed=seed: self.method(
                    cls, method, counters, attributes, seed, record=False, assumed=assumed,
                    returns=not settled,
                ),
            )
            for run in runs:
                self.result.functions.append(run.model)
                if method.name.value in called:
                    # Called from the class too: its parameters, and what other methods left
                    # open, are judged at those call sites, where they are bound to the caller's
                    # values and streams (and its waits).
                    run.model.hazards = [
                        h for h in run.model.hazards
                        if not (_parameter_entry(h.first.op) or _other_method_entry(h.first.op))
                    ]
            for nested in interp.nested:
                self.run_function(nested, name=f"{interp.model.name}.{nested.name.value}")

    _returns: dict = {}
    _methods: dict = {}
    _assigned: Optional[dict] = None

    def method_returns(self, interps) -> dict:
        out = {}
        for name, interp in interps.items():
            returned = interp.returned_storages
            if not returned or not all(s.tensor for s in returned):
                continue  # not known to return tensors (`success, ids = ...` may be anything)
            streams = {s.alloc_stream.key: s.alloc_stream for s in returned if s.alloc_stream}
            if len(streams) == 1:
                stream = next(iter(streams.values()))
                if stream.key.startswith("self."):
                    out[name] = stream
        return out

    def method(
        self, cls, node, counters, attributes, exports: "Optional[_Exports]" = None, record=True,
        assumed: Optional[dict] = None, returns: Optional[bool] = None,
    ):
        """Walk a method. ``record``: add its model to the module's; ``returns``: let it see
        through the class's helpers that return a tensor made on an attribute stream (as
        ``record`` by default: the second round's walks); ``assumed``: see ``switch_split``."""
        name = f"{cls.name.value}.{node.name.value}"
        model = FunctionModel(name, node, class_name=cls.name.value)
        interp = self.interpreter(model, counters, dict(attributes))
        if assumed:
            interp.assumed = assumed
        interp.class_methods = self._methods
        interp.assigned_attributes = self._assigned
        if record if returns is None else returns:
            interp.method_returns = dict(self._returns)
        if exports is not None:
            exports.seed(interp)
        _guarded(model, lambda: interp.run_function(node, is_method=True))
        interp.finish()
        if record:
            self.record(interp)
        return interp

    def record(self, interp: Interpreter) -> None:
        self.result.functions.append(interp.model)
        for nested in interp.nested:
            self.run_function(nested, name=f"{interp.model.name}.{nested.name.value}")


class _BoolSwitches:
    """``name in switches``: does the text set ``name`` to ``True`` or ``False`` somewhere
    (``side_stream = False``, ``debug: bool = True``)? Asked only of names an ``if`` tests, and
    answered by a plain text search (a regular expression over the file costs more)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.known: dict[str, bool] = {}

    def __contains__(self, name: str) -> bool:
        found = self.known.get(name)
        if found is None:
            text = self.text
            found = self.known[name] = any(
                f"{name}{spelling}" in text
                for spelling in (" = False", " = True", ": bool = False", ": bool = True")
            )
        return found


class _SeenSummaries:
    """The builder's summaries, remembering what one run looked up (name -> what it found)."""

    def __init__(self, summaries: dict[str, FunctionSummary]) -> None:
        self._summaries = summaries
        self.seen: dict[str, Optional[tuple[bool, ...]]] = {}

    def get(self, name: str, default=None):
        found = self._summaries.get(name, default)
        self.seen[name] = _facts(found)
        return found


def _synchronizes(op) -> bool:
    """Does ``op`` make the host wait for the whole device (what a helper's caller learns)?"""
    return op.kind == OpKind.HOST_SYNC and op.sync_kind in ("device", "helper", "unknown")


def _waits_last(ops, entry_key) -> bool:
    """Is the last op that waits (the device, or the stream the helper was called on) after the
    last op that does device work?"""
    last_wait = last_work = -1
    for index, op in enumerate(ops):
        if _synchronizes(op) or _waits_for(op, entry_key):
            last_wait = index
        elif op.on_device and op.kind != OpKind.ENTRY:
            last_work = index
    return last_wait > last_work


def _waits_for(op, stream_key) -> bool:
    """Does ``op`` make the host wait for the stream ``stream_key`` (a blocking read or copy on
    it, or a synchronize of it)?"""
    return (
        op.kind == OpKind.HOST_SYNC
        and op.sync_kind in ("blocking-read", "blocking-copy", "stream")
        and op.target is not None
        and op.target.key == stream_key
    )


def _returns_self(method: cst.FunctionDef) -> bool:
    """Does every ``return`` of ``method`` (there is one) give back its first parameter?"""
    params = method.params.params
    if not params:
        return False
    returns = returned_values(method)
    return bool(returns) and all(
        type(value) is cst.Name and value.value == params[0].name.value for value in returns
    )


def _returns_a_device_tensor(function: cst.FunctionDef, interp: Interpreter) -> Optional[int]:
    """Does every ``return`` of ``function`` give back tensors the helper made itself on the
    device (``return torch.randint(0, 10, shape, device="cuda")``, or a tuple of them, ``return
    ids, mask``)? 0 for one tensor, n for a tuple of n, None otherwise (a parameter handed back,
    a tensor of unknown device, returns of different shapes)."""
    values = returned_values(function)
    returned = interp.returned_storages
    if not values or not returned:
        return None
    sizes = {len(v.elements) if type(v) is cst.Tuple else 0 for v in values}
    if len(sizes) != 1:
        return None
    size = sizes.pop()
    if len(returned) != len(values) * max(size, 1):
        return None
    if not all(s.tensor and s.root.device == "cuda" and s.root.origin == "local" for s in returned):
        return None
    return size


def _facts(summary: Optional[FunctionSummary]) -> Optional[tuple[bool, ...]]:
    if summary is None:
        return None
    return (
        summary.synchronizes,
        summary.waits_for_current_stream,
        summary.returns_current_stream,
        summary.returns_device_tensor,
        summary.waits_last,
    )


def _split(interp: Interpreter, again: Callable[[dict], Interpreter]) -> list[Interpreter]:
    """The walks whose models stand for a function: its one walk, or, where that walk found a
    stream hazard and the function tests a parameter twice (:mod:`~synclint.model.switch_split`),
    a walk with the test assumed true and one with it assumed false (``again``). Each walk's
    hazards are then narrowed by :func:`_split_passes`."""
    model = interp.model
    if not (model.hazards or model.lifetime_hazards) or type(model.node) is not cst.FunctionDef:
        return [interp]
    key = split_predicate(model.node)
    loops = loop_switches(model.node, key)
    walks = [({}, interp)] if key is None else [
        ({key: value}, again({key: value})) for value in (True, False)
    ]
    return [_split_passes(run, assumed, loops, again) for assumed, run in walks]


def _split_passes(run: Interpreter, assumed: dict, loops: dict, again) -> Interpreter:
    """``run`` without the hazards that only a pass mixing the values of a loop-constant test
    makes (:mod:`~synclint.model.loop_split`): those that a walk splitting such loops per pass
    does not find, and that have an access, an allocation or a release under an ``if`` asking
    the test. Only those: walking a body twice per pass joins two copies of every value it
    makes, which blurs what the rest of the function knows (timm's NaFlex loader would lose a
    yielded tensor's missing ``record_stream``)."""
    model = run.model
    if not loops or not (model.hazards or model.lifetime_hazards):
        return run
    split = again({**assumed, **loops}).model
    inside = under_the_tests(loops)

    def under(*ops) -> bool:
        return any(
            op is not None and (id(op.node) in inside or id(op.call_site) in inside) for op in ops
        )

    found = {_hazard_key(h) for h in split.hazards}
    model.hazards = [
        h for h in model.hazards
        if _hazard_key(h) in found or not under(h.first.op, h.second.op)
    ]
    found = {_lifetime_key(h) for h in split.lifetime_hazards}
    model.lifetime_hazards = [
        h for h in model.lifetime_hazards
        if _lifetime_key(h) in found or not under(h.alloc, h.use.op, h.release)
    ]
    return run


def _hazard_key(hazard) -> tuple:
    return hazard.kind, id(hazard.first.op.node), id(hazard.second.op.node)


def _lifetime_key(hazard) -> tuple:
    return hazard.how, id(hazard.use.op.node), id(hazard.release.node)


def _guarded(model: FunctionModel, run) -> None:
    """Run an interpretation; on pathologically deep code report nothing for the scope rather than
    guess (``FunctionModel.truncated`` says so)."""
    try:
        run()
    except RecursionError:
        model.ops.clear()
        model.hazards.clear()
        model.lifetime_hazards.clear()
        model.truncated = True


def _parameter_entry(op) -> bool:
    return op.kind == OpKind.ENTRY and op.origin_op is None and op.note == "by the caller"


def _other_method_entry(op) -> bool:
    """An access another method left open, replayed at the start of this one (:meth:`_Exports.seed`)."""
    return op.kind == OpKind.ENTRY and op.origin_op is not None


#: ``Thread(..., target=worker, ...)`` or ``target=self.worker`` (arguments with one level of
#: brackets before it, ``args=(queue, device)``, are read through).
_THREAD_TARGET = re.compile(
    r"Thread\s*\((?:[^()]|\([^()]*\))*?\btarget\s*=\s*(?:self\s*\.\s*)?([A-Za-z_]\w*)"
)
#: The first of a thread's ``args`` when it is a name: a target that runs functions it is handed
#: (``Thread(target=self._guarded, args=(self._transfer_loop, "transfer"))``) runs them in the
#: thread. When the name is data (``args=(queue, device)``), no function of that name is there.
_THREAD_ARGUMENT = re.compile(
    r"Thread\s*\((?:[^()]|\([^()]*\))*?\bargs\s*=\s*[(\[]\s*(?:self\s*\.\s*)?([A-Za-z_]\w*)\s*[,)\]]"
)


#: A function handed to an executor: ``self.executor.submit(self.llm_job, prompt, ...)`` runs it on
#: one of the pool's threads (sglang-omni's talker), as ``Thread(target=...)`` does.
_SUBMITTED = re.compile(r"\.\s*submit\s*\(\s*(?:self\s*\.\s*)?([A-Za-z_]\w*)\s*[,)]")


def _thread_targets(text: str) -> set[str]:
    """The names a file starts threads with, or hands to an executor. Read from the whole file's
    text, not from the tree: the thread is usually started in another definition than the
    worker, one the slicer leaves out (:mod:`synclint.slicing`)."""
    names: set[str] = set()
    if "Thread" in text:
        names |= set(_THREAD_TARGET.findall(text)) | set(_THREAD_ARGUMENT.findall(text))
    if "submit" in text:
        names |= set(_SUBMITTED.findall(text))
    return names


#: Methods of ``torch.nn.Module`` that no tensor has.
_MODULE_ONLY = (
    r"(?:eval|train|parameters|named_parameters|buffers|named_buffers|modules|named_modules|"
    r"children|named_children|state_dict|load_state_dict|zero_grad|register_forward_hook|"
    r"register_forward_pre_hook|register_full_backward_hook|register_module|add_module|"
    r"get_submodule)"
)
_MODULE_CALL = re.compile(r"\.[ \t]*" + _MODULE_ONLY + r"[ \t]*\(")
#: What precedes such a call: a dotted name, then perhaps a move (``net.cuda().eval()``).
_RECEIVER = re.compile(
    r"(?<![\w.])([A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*)[ \t]*"
    r"(?:\.[ \t]*(?:cuda|to|half|float|bfloat16)[ \t]*\([^()\n]*\)[ \t]*)?\Z"
)


#: Words that show a file deals with a GPU or another accelerator (case is ignored).
_DEVICE_WORDS = re.compile(
    r"cuda|nccl|gpu|device|stream|accelerat|(?<![a-z])(?:xpu|npu|hpu|mlu|musa|rocm|hip)",
    re.IGNORECASE,
)


def event_makers(module: cst.Module, text: str) -> dict[str, cst.FunctionDef]:
    """The module's functions whose body binds a name to a new event and returns that name
    (``def mark(stream): ev = torch.cuda.Event(); ev.record(stream); return ev``). A summary cannot
    say which stream the caller's event is recorded on; walked at each call, the helper records it
    on the stream the caller passes, and the caller's ``wait_event(mark(s))`` orders what it
    should. Only short helpers (a dozen statements), to keep the walks cheap."""
    if "Event(" not in text:
        return {}
    found = {}
    for function in module.body:
        if type(function) is not cst.FunctionDef or type(function.body) is not cst.IndentedBlock:
            continue
        statements = function.body.body
        if len(statements) > 12:
            continue
        made, returned = set(), set()
        for statement in statements:
            if type(statement) is not cst.SimpleStatementLine:
                continue
            for small in statement.body:
                if (
                    type(small) is cst.Assign and len(small.targets) == 1
                    and type(small.targets[0].target) is cst.Name
                    and type(small.value) is cst.Call
                    and (dotted(small.value.func) or "").rsplit(".", 1)[-1] == "Event"
                ):
                    made.add(small.targets[0].target.value)
                elif type(small) is cst.Return and type(small.value) is cst.Name:
                    returned.add(small.value.value)
        if made & returned:
            found[function.name.value] = function
    return found


def module_constants(module: cst.Module, text: str) -> dict[str, cst.BaseExpression]:
    """The module's names bound exactly once by its top-level statements, and by nothing else
    there (``DEVICE = "cuda:0"``, ``device = torch.device("cpu")``): the value a function that
    neither binds nor declares the name reads. One that a ``global`` statement names anywhere in
    the file is left out (a function may set it)."""
    found: dict[str, cst.BaseExpression] = {}
    dropped: set[str] = set()
    for statement in module.body:
        if type(statement) is not cst.SimpleStatementLine:
            continue
        for small in statement.body:
            if type(small) not in (cst.Assign, cst.AnnAssign, cst.AugAssign):
                continue
            targets = [t.target for t in small.targets] if type(small) is cst.Assign else [small.target]
            for target in targets:
                if type(target) is not cst.Name:
                    continue
                if target.value in found or small.value is None or type(small) is cst.AugAssign:
                    dropped.add(target.value)
                else:
                    found[target.value] = small.value
    if found and "global" in text:
        for names in _GLOBAL_STATEMENT.findall(text):
            dropped.update(n.strip() for n in names.split(","))
    return {name: value for name, value in found.items() if name not in dropped}


_GLOBAL_STATEMENT = re.compile(r"\bglobal\s+([\w \t,]+)")


def names_a_device(text: str) -> bool:
    """Does the file name a GPU anywhere, in code or comments? PyTorch-BigGraph's parameter server
    sends and receives its CPU shared-memory tensors with gloo (``td.isend(...)``, then
    ``work.wait()`` around a host clock) in a file that never says ``cuda``, ``nccl`` or
    ``device``: nothing there runs on a GPU, and a host backend's ``Work.wait()`` blocks the host.
    In a file that names no GPU, ``work.wait()`` is taken as that host wait. The collective itself
    stays asynchronous work (gloo runs it on a background thread: its output is not to be read
    before the wait on either backend)."""
    return _DEVICE_WORDS.search(text) is not None


def module_names(text: str) -> frozenset[str]:
    """The names (dotted) a file calls a method of ``torch.nn.Module`` on that no tensor has
    (``model.eval()``, ``net.cuda().eval()``, ``self.encoder.parameters()``): modules, whose
    ``.cuda()``/``.to()`` moves parameters in place and returns the module, not a tensor copy
    (``model.cuda().eval()`` in fairseq's evaluation scripts). Read from the whole file's text:
    the module is often set up in another function than the one that moves it. The calls are
    found first and the receiver read backwards from each, on its line: a scan for receivers
    followed by calls would cost a cold run a few percent on large files."""
    names = set()
    for call in _MODULE_CALL.finditer(text):
        start = call.start()
        line_start = text.rfind("\n", 0, start) + 1
        receiver = _RECEIVER.search(text, max(line_start, start - 200), start)
        if receiver is not None:
            names.add(re.sub(r"[ \t]+", "", receiver.group(1)))
    return frozenset(names)


class _ClassFacts(cst.CSTVisitor):
    """One cheap walk over a class: which ``self.x`` it assigns anywhere and to what, and which
    methods other methods call as ``self.m(...)`` (no source regeneration: that costs as much as
    a parse)."""

    def __init__(self) -> None:
        #: Attribute name -> the values assigned to ``self.<name>`` (None: one not written out,
        #: as in ``self.a, self.b = pair`` or ``self.n += 1``).
        self.assigned: dict[str, list] = {}
        self.calls: dict[str, set[str]] = {}  # method -> names it calls on self
        self._method: list[str] = []

    @classmethod
    def of(cls_, node: cst.ClassDef) -> "_ClassFacts":
        facts = cls_()
        walk(node.body, facts)
        return facts

    @property
    def called_elsewhere(self) -> set[str]:
        return {name for caller, names in self.calls.items() for name in names if name != caller}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._method.append(node.name.value)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._method.pop()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if self._method and is_self_attribute(func):
            self.calls.setdefault(self._method[0], set()).add(func.attr.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._targets(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._targets(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._targets(node.target, None)

    def _targets(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        if is_self_attribute(target):
            self.assigned.setdefault(target.attr.value, []).append(value)
        elif type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self._targets(element.value, None)




class _AttributeClassIndex:
    """The class of this file every assignment to an attribute named ``attribute`` makes an
    instance of (``self.kv_cache = KVCache(...)``), or None (:class:`_AttributeClasses`). Asked
    only for a method that waits (``_Builder.summarise_methods``) called on an attribute, so the
    walk over the module is rare; done once."""

    __slots__ = ("_module", "_found")

    def __init__(self, module: cst.Module) -> None:
        self._module = module
        self._found: Optional[dict[str, Optional[str]]] = None

    def __call__(self, attribute: str) -> Optional[str]:
        if self._found is None:
            self._found = _AttributeClasses.of(self._module)
        return self._found.get(attribute)


class _AttributeClasses(cst.CSTVisitor):
    """Attribute name -> the class of this file every assignment to an attribute of that name
    makes an instance of, or None where some assignment binds anything else. ``self.cache =
    HostCache(n)``, and DoubleSparse's ``kv_cache = KVCache(...)`` then ``b.attention.kv_cache =
    kv_cache`` (a name bound in the same function to one call of a class) both count; ``= None``
    (a placeholder until then) binds nothing."""

    def __init__(self) -> None:
        self.found: dict[str, Optional[str]] = {}
        self._locals: list[dict[str, Optional[str]]] = [{}]

    @classmethod
    def of(cls_, module: cst.Module) -> dict[str, Optional[str]]:
        visitor = cls_()
        walk(module, visitor)
        return visitor.found

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._locals.append({})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._locals.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:  # `self.cache: HostCache` declares, binds nothing
            self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, None)

    def _made(self, value: Optional[cst.BaseExpression]) -> Optional[str]:
        if type(value) is cst.Call and type(value.func) is cst.Name:
            return value.func.value
        if type(value) is cst.Name:
            return self._locals[-1].get(value.value)
        return None

    def _bind(self, target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> None:
        if type(target) is cst.Name:
            names = self._locals[-1]
            made = self._made(value)
            names[target.value] = made if names.get(target.value, made) == made else None
        elif type(target) is cst.Attribute:
            if type(value) is cst.Name and value.value == "None":
                return
            name, made = target.attr.value, self._made(value)
            self.found[name] = made if self.found.get(name, made) == made else None
        elif type(target) in (cst.Tuple, cst.List):
            for element in target.elements:
                self._bind(element.value, None)


def _informative(value) -> bool:
    if isinstance(value, TupleValue):
        return any(_informative(item) for item in value.items)
    if isinstance(value, Alternatives):
        # `if dist.is_initialized(): self.handle = dist.all_reduce(..., async_op=True)`: a
        # Work on some paths is what other methods wait on (DINOv2's center update); so is an
        # event recorded on some paths (`self._in_flight_copy`, synchronized on the next call).
        return holds(value, (WorkValue, EventValue))
    return isinstance(value, (Storage, StreamValue, EventValue, StreamList, WorkValue))


def _opens_with_a_stream_sync(interp: Interpreter) -> Optional[str]:
    """The key of the attribute stream a method synchronizes the host with before it does
    anything else on any stream (its first op after the entry ops), or None."""
    first = next((op for op in interp.model.ops if op.kind != OpKind.ENTRY), None)
    if first is None or first.kind != OpKind.HOST_SYNC or first.target is None:
        return None
    return first.target.key if first.target.key.startswith("self.") else None


def _attributes(interp: Interpreter) -> dict:
    """Attribute bindings (``self.x``) at the end of a method, on any path."""
    return {k: v for k, v in interp.state.env.items() if k.startswith(("self.", "cls."))}


def _covered_by(access: Access, records) -> bool:
    """Did one of the event ``records``, on the access's stream, come after it?"""
    key = access.stream.key
    return any(r.stream.key == key and r.vc.get(key, 0) >= access.op.seq for r in records)


def _callers(facts: "_ClassFacts", name: str, runs: dict, init_interp) -> Optional[list]:
    """The first runs of the methods that call ``name``, or None when one of them was not run as
    an entry point (a private helper, walked only where it is called)."""
    found = []
    for caller, names in facts.calls.items():
        if name not in names or caller == name:
            continue
        run = init_interp if caller == "__init__" else runs.get(caller)
        if run is None:
            return None
        found.append(run)
    return found


def _leaves_open(interp: Interpreter, key: str) -> bool:
    """Does the run end with work on stream ``key`` that neither its entry stream nor the host
    waited for?"""
    state = interp.state
    last = state.issued.get(key, 0)
    return bool(last) and state.stream_vc(interp.entry.key).get(key, 0) < last and (
        state.host_vc.get(key, 0) < last
    )


class _Exports:
    """What a method leaves behind for the next method: open accesses and recorded events."""

    def __init__(self) -> None:
        self.accesses: list[Access] = []
        self.events: dict[str, tuple[EventValue, list[Access], tuple]] = {}

    def drop_closed_by(self, callers: Optional[list]) -> None:
        """Keep only the side-stream accesses some caller of this helper method leaves open:
        what every caller waits for before it returns cannot race with the next method
        (fast-reid's `prepare()` gathers on a side stream; its only caller, `forward_backward()`,
        then runs `forward()`, which makes the current stream wait for that stream). Called on its
        own from outside the class, the helper could leave it open: not assumed."""
        if not callers:
            return
        self.accesses = [
            a for a in self.accesses
            if any(_leaves_open(run, a.stream.key) for run in callers)
        ]

    @classmethod
    def of(cls, interp: Interpreter, keep_entry_stream: bool = True) -> "_Exports":
        out = cls()
        state = interp.state
        entry_vc = state.stream_vc(interp.entry.key)
        attribute_storages = {
            s.id: s
            for k, v in state.env.items()
            if k.startswith("self.")
            # The tensors kept in an attribute's container (`self.batch[k] = t`), on any path.
            for s in ([v] if isinstance(v, Storage) else storages_of(v) if k.endswith("[*]") else [])
        }
        # Handles kept in a container on the object (`self.works.append(work)`) are taken to be
        # waited, as every handle kept in a container is (`Interpreter.keep_in_container`):
        # MindSpeed's COC helper waits on them in `run_synchronize`, or returns `self.works` to
        # its caller. (A handle kept in a plain attribute, `self.handle = work`, is not: DINOv2's
        # centering never waits on it.)
        kept_work = {
            id(value.node)
            for name, bound in state.env.items()
            if name.startswith("self.") and name.endswith("[]") and holds_work(bound)
            for value in (bound.values if isinstance(bound, Alternatives) else (bound,))
            if isinstance(value, WorkValue)
        }
        for sid, storage in attribute_storages.items():
            for access in state.history.get(sid, ()):
                if not access.op.seq or (not keep_entry_stream and access.stream.key == interp.entry.key):
                    continue
                # Work on the caller's stream stays open for side streams; side-stream work the
                # caller's stream already waited for is closed.
                if access.stream.key != interp.entry.key and entry_vc.get(access.stream.key, 0) >= access.op.seq:
                    continue
                if state.host_vc.get(access.stream.key, 0) >= access.op.seq:
                    continue
                if id(access.op.node) in interp.handed_work or id(access.op.node) in kept_work:
                    continue  # a collective whose `Work` another holds (a callee, a container on
                    # the object, the caller it was returned to), to wait on it
                out.accesses.append(access)
        for name, bound in state.env.items():
            if not name.startswith("self."):
                continue
            # `self._in_flight = self._copy_async()` under a condition: an event on some paths
            # (None on the others) is still the event the next call waits on; so is each event of
            # a list of them (`self.ready = [torch.cuda.Event(), torch.cuda.Event()]`).
            kind = type(bound)
            values = bound.values if kind is Alternatives else bound.items if kind is TupleValue else (bound,)
            for value in values:
                if not isinstance(value, EventValue):
                    continue
                event_state = state.events.get(value.key)
                if event_state is None:
                    continue
                covered = [
                    a for a in out.accesses if event_state.vc.get(a.stream.key, 0) >= a.op.seq
                ]
                out.events[value.key] = (value, covered, event_state.recorded_by)
        return out

    @classmethod
    def combine(cls, many: Iterable["_Exports"]) -> "_Exports":
        out = cls()
        seen = set()
        for exports in many:
            for access in exports.accesses:
                key = (id(access.op.site), access.stream.key, access.mode, access.storage.id)
                if key not in seen:
                    seen.add(key)
                    out.accesses.append(access)
            for key, (event, covered, recorded) in exports.events.items():
                if key in out.events:
                    old = out.events[key]
                    out.events[key] = (event, old[1] + covered, old[2] + recorded)
                else:
                    out.events[key] = (event, list(covered), recorded)
        return out

    def close_handed_back(self, interps: list[Interpreter], init: Optional[Interpreter]) -> None:
        """Drop side-stream work covered by an event that some method makes the caller's stream
        wait on (``torch.cuda.current_stream().wait_event(self.load_done)`` in ``begin_layer``):
        that method is the class's hand-off point, which the caller is meant to call before the
        methods that use the work (``store_kv`` after ``begin_layer``). The order the caller keeps
        is not in the code (precision first; the same reading as an event recorded on the
        caller's stream, in :meth:`seed`)."""
        everyone = [*interps, *([init] if init is not None else [])]
        waited = {
            op.event.key
            for interp in everyone
            for op in interp.model.ops
            if op.kind == OpKind.WAIT_EVENT
            and op.event is not None
            and op.stream.key == interp.entry.key
        }
        # The records, not the event's state at the method's end: a record on one path only (a
        # helper that returns early) leaves no clock at the join, but it is what the wait is for.
        entries = {interp.entry.key for interp in everyone}
        records = [
            r for key, (_, _, recorded) in self.events.items() if key in waited
            for r in recorded if r.stream.key not in entries
        ]
        if records:
            self.accesses = [a for a in self.accesses if not _covered_by(a, records)]
        # Likewise a method that starts by waiting for a stream of the object on the host
        # (`wait_for_layer_load` opens with `self._recv_stream.synchronize()`): the caller calls
        # it before the methods that reuse what that stream was given.
        synced = {key for interp in interps if (key := _opens_with_a_stream_sync(interp))}
        if synced:
            self.accesses = [a for a in self.accesses if a.stream.key not in synced]

    def seed(self, interp: Interpreter) -> None:
        """Replay open accesses as ENTRY ops on their streams, before the method's first statement."""
        replayed: dict[int, object] = {}
        for access in self.accesses:
            op = interp.emit(
                OpKind.ENTRY,
                access.op.site.node,
                stream=access.stream,
                reads=(access.storage,) if access.mode == "read" else (),
                writes=(access.storage,) if access.mode == "write" else (),
                origin_op=access.op.site,
                note="in another method",
            )
            op.vc = {}
            interp.state.vc[access.stream.key] = {access.stream.key: op.seq}
            interp.access(op, access.storage, access.mode)
            replayed[id(access)] = op
        entry = interp.entry.key
        for key, (event, covered, recorded) in self.events.items():
            vc: dict = {}
            for access in covered:
                op = replayed.get(id(access))
                if op is not None:
                    vc[op.stream.key] = max(vc.get(op.stream.key, 0), op.seq)
            if recorded and all(r.stream.key == entry for r in recorded):
                # An event a method records on the caller's stream (`self.staging_free.record()` in
                # `end_layer`) is the class's hand-off point: the caller is meant to call it after
                # the other methods whose work on that stream it guards (`store_kv` between
                # `begin_layer` and `end_layer`). The order the caller keeps is not in the code, so
                # it covers what every method left open on that stream (precision first).
                for op in replayed.values():
                    if op.stream.key == entry:
                        vc[entry] = max(vc.get(entry, 0), op.seq)
            interp.state.events[key] = EventState(vc, tuple(recorded))
        interp.model.hazards.clear()
        interp._hazard_keys.clear()
