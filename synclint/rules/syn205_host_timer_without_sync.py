"""SYN205 host-timer-without-sync: a host clock delta around CUDA work, read before the host has
synchronized with that work.

CUDA calls return as soon as the work is queued, so ``t1 = time.perf_counter()`` right after
``model(x.cuda())`` measures the launch, not the work. The end reading must come after a host
synchronization (``torch.cuda.synchronize()``, a stream or event ``synchronize()``, or a blocking
read such as ``.item()``/``.cpu()`` on the stream that ran it). Only work the model knows runs on a
GPU counts, so clocks around CPU code are never flagged.
"""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from typing import Iterable

import libcst as cst

from synclint.astscan import (
    bound_names,
    call_starts,
    imports_or_names_module,
    iter_statements,
    line_numbers,
    named_uncalled,
    statement_extent,
)
from synclint.cstwalk import source_order
from synclint.diagnostics import Applicability, Diagnostic, Fix
from synclint.model import OpKind
from synclint.model.bindings import ElementOf, ReturnOf, Scope
from synclint.model.call_args import is_dtype_expression
from synclint.model.file_facts import ancestors, parent_map, whole_ast
from synclint.model.host_queries import dominates, unseen_cuda_work, waits_for
from synclint.model.resolver import dotted
from synclint.rules._common import functions, torch_name
from synclint.rules._intervals import (
    accumulated,
    compared_to_a_budget,
    Subtractions,
    interval_starts,
    paced_by_a_spin,
    measures_submission,
    subtracts_from,
)
from synclint.rules.base import FixKind, Rule, RuleContext

#: The wall-clock functions of ``time`` and ``timeit`` (``time`` itself is also the module's
#: name); CPU-time clocks are left out, as in ``api.HOST_CLOCKS``.
_CLOCK_FUNCTIONS = frozenset(
    {"perf_counter", "monotonic", "time_ns", "perf_counter_ns", "monotonic_ns", "default_timer"}
)
_CLOCKS = _CLOCK_FUNCTIONS | {"time"}
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEFINITIONS = (*_FUNCTIONS, ast.ClassDef)
#: Synchronizations written as such: ``torch.cuda.synchronize()``, a helper named for it, a stream's
#: or an event's ``synchronize()``.
_EXPLICIT_SYNCS = frozenset({"device", "helper", "stream", "event"})
#: What anchors a timed loop to the device's pace (see ``_timed_loop_synchronizes``).
_LOOP_ANCHORS = _EXPLICIT_SYNCS | {"blocking-read"}


def two_readings_in_a_scope(tree: ast.Module, text: str) -> bool:
    """Can SYN205 fire here? It pairs two clock readings of one function (or of the module's
    own statements): readings in helpers walked at their call sites are left to those helpers.
    So some scope must call a clock twice, unless a clock function is bound to another name
    (``now = time.perf_counter``, ``from time import time``): then any call may be a reading,
    and the file is kept. Most files that import ``time`` read it once per function (a
    timestamp, a timeout) and need no model for this rule. Calls are found in the text (any
    spelling; one in a string or comment only keeps more); ``text``'s line numbers are the
    tree's (see ``Rule.syntax_check``)."""
    names = bound_names(tree, text, _CLOCKS)
    if any(name in text and named_uncalled(name).search(text) for name in names - {"time"}):
        return True
    if _time_function_uncalled(tree, text):
        return True
    lines = line_numbers(text, sorted(call_starts(text, names)))
    if len(lines) < 2:
        return False
    outside = len(lines)  # readings in the module's own statements, not in a definition
    for statement in tree.body:
        if isinstance(statement, _DEFINITIONS):
            start, end = statement_extent(statement)
            outside -= bisect_right(lines, end) - bisect_left(lines, start)
    if outside >= 2:
        return True
    for statement in iter_statements(tree):
        if isinstance(statement, _FUNCTIONS):
            start, end = statement_extent(statement)
            if bisect_right(lines, end) - bisect_left(lines, start) >= 2:
                return True
    return False


def _time_function_uncalled(tree: ast.Module, text: str) -> bool:
    """Is the function ``time.time`` perhaps named without a call? As an attribute not called
    (``default_factory=time.time``), or as a bare name after ``from time import time``. A bare
    ``time`` is otherwise the module (``import time``, ``time.sleep``)."""
    for match in named_uncalled("time").finditer(text):
        if _after_a_dot(text, match.start()):
            return True
    for statement in iter_statements(tree):
        if type(statement) is ast.ImportFrom and statement.module == "time":
            if any(alias.name == "time" and alias.asname is None for alias in statement.names):
                return True
    return False


def _after_a_dot(text: str, index: int) -> bool:
    """Is the name at ``index`` perhaps an attribute: a ``.`` before it, across spaces, ``\\``
    continuations, blank lines and comment lines? A line of code with a ``#`` on the way counts
    as yes (the dot may come before a comment, and a ``#`` may be in a string)."""
    while True:
        index -= 1
        while index >= 0 and text[index] in " \t\f\\":
            index -= 1
        if index < 0:
            return False
        char = text[index]
        if char == ".":
            return True
        if char not in "\r\n":
            return False
        if char == "\n" and index and text[index - 1] == "\r":
            index -= 1
        line_start = max(text.rfind("\n", 0, index), text.rfind("\r", 0, index)) + 1
        line = text[line_start:index]
        if line.lstrip().startswith("#"):
            index = line_start  # a comment line: look above it
        elif "#" in line:
            return True


class HostTimerWithoutSync(Rule):
    code = "SYN205"
    name = "host-timer-without-sync"
    summary = (
        "a host clock delta around CUDA work with no host synchronization before the end reading"
    )
    fix_kind = FixKind.UNSAFE
    triggers = ("time", "timer")
    #: Host clocks resolve to ``time.*`` or ``timeit.*``: the identifier ``time`` or ``timeit`` must
    #: occur (in the import or the call), not merely the letters (``runtime``, ``timestamp``).
    trigger_pattern = (r"time(?<!\wtime)(?!\w)", r"timeit(?<!\wtimeit)(?!\w)")
    #: ... and in code, not only in comments or docstrings: imported, or used as a bare name;
    #: and read twice in one scope.
    syntax_check = staticmethod(
        lambda tree, text: imports_or_names_module(tree, frozenset({"time", "timeit"}), text)
        and two_readings_in_a_scope(tree, text)
    )

    def check(self, ctx: RuleContext) -> Iterable[Diagnostic]:
        reported: set[int] = set()
        parents = None
        for function in functions(ctx):
            # Readings in helpers walked at their call sites belong to those helpers' own deltas.
            clocks = [c for c in function.ops_of(OpKind.HOST_CLOCK) if not c.inlined]
            subtractions: Subtractions | None = None
            for end in clocks:
                if id(end.node) in reported:
                    continue
                parents = parents if parents is not None else parent_map(ctx)
                if subtractions is None:
                    subtractions = Subtractions.of(function.node)
                earlier = [c for c in clocks if c.index < end.index and c.node is not end.node]
                starts, since = interval_starts(end, earlier, parents, subtractions)
                if not starts or measures_submission(end.node, parents):
                    continue
                if compared_to_a_budget(end.node, parents) or paced_by_a_spin(end.node, since, parents):
                    continue  # a deadline, or the tick a loop paced on purpose: no measurement
                start = starts[-1]
                if since is None and _around_a_loop(start, end) and not subtracts_from(end.node, parents):
                    continue  # a reading paired, by position alone, with the previous iteration's
                work = [
                    w for w in unseen_cuda_work(function, start.index, end, parents)
                    if not _a_probe(w)
                    and not _converts_a_blocking_upload(function, w)
                    and not _exclusive(w.node, end.node, parents)
                ]
                if work:
                    work = [
                        w for w in work
                        if not _timed_loop_synchronizes(ctx, function, w, start, end, parents)
                    ]
                if not work or _timed_on_the_device(function, start, end, work):
                    continue
                reported.add(id(end.node))
                yield self._report(ctx, start, end, work[0])
            yield from self._timed_with_blocks(ctx, function, reported)

    def _timed_with_blocks(self, ctx: RuleContext, function, reported: set) -> Iterable[Diagnostic]:
        """``with timer(): y = x.to("cuda", non_blocking=True)`` where ``timer`` is a context
        manager of the file that reads a clock before its ``yield`` and subtracts that reading from
        one after it: the block is the interval, and the readings are the helper's, walked at the
        ``with`` (both made there: ``Op.call_site``). Reported at the ``with``'s context manager,
        without a fix: the synchronization belongs in the block or in the helper's exit."""
        readings: dict[int, list] = {}
        for clock in function.ops_of(OpKind.HOST_CLOCK):
            if clock.inlined and type(clock.call_site) is cst.With:
                readings.setdefault(id(clock.call_site), []).append(clock)
        parents = parent_map(ctx) if readings else None  # (cached per file)
        for clocks in readings.values():
            with_stmt = clocks[0].call_site
            if len(clocks) < 2 or id(with_stmt) in reported:
                continue
            end = clocks[-1]
            helper = next(
                (a for a in ancestors(ctx, end.node) if isinstance(a, cst.FunctionDef)), None
            )
            if helper is None or measures_submission(end.node, parents):
                continue
            starts, _ = interval_starts(end, clocks[:-1], parents, Subtractions.of(helper))
            if not starts:
                continue
            start = starts[-1]
            work = [
                w for w in unseen_cuda_work(function, start.index, end, parents)
                if not w.inlined and any(a is with_stmt.body for a in ancestors(ctx, w.node))
            ]
            if not work or _timed_on_the_device(function, start, end, work):
                continue
            reported.add(id(with_stmt))
            clock = end.clock or "the clock"
            manager = next(
                (
                    i.item for i in with_stmt.items
                    if type(i.item) is cst.Call
                    and (dotted(i.item.func) or "").rsplit(".", 1)[-1] == helper.name.value
                ),
                with_stmt.items[0].item,
            )
            yield ctx.diagnostic(
                self,
                manager,
                f"`{clock}()` is read when this `with` block ends, while CUDA work started in it "
                f"(line {ctx.line(work[0].site.node)}) may still be running: the delta measures "
                "the launch, not the work; synchronize before the block ends",
                related=[(work[0].site.node, "CUDA work not yet synchronized")],
                data={"clock": clock, "work": ctx.line(work[0].site.node)},
            )

    def _report(self, ctx: RuleContext, start, end, work) -> Diagnostic:
        clock = end.clock or "the clock"
        message = (
            f"`{clock}()` is read while CUDA work started after the first reading (line "
            f"{ctx.line(start.node)}) may still be running (line {ctx.line(work.site.node)}): the "
            "delta measures the launch, not the work; synchronize before the end reading"
        )
        return ctx.diagnostic(
            self,
            end.node,
            message,
            related=[
                (start.node, "first reading"),
                (work.site.node, "CUDA work not yet synchronized"),
            ],
            fix=insert_sync(ctx, end.node, "torch.cuda.synchronize()", Applicability.UNSAFE),
            data={"clock": clock, "start": ctx.line(start.node), "work": ctx.line(work.site.node)},
        )


def _timed_loop_synchronizes(ctx, function, work, start, end, parents) -> bool:
    """Is ``work`` in a loop whose body synchronizes the host on every iteration, before the
    work, and which the interval spans across at least one iteration boundary? Such a loop runs at
    the device's pace, so the delta is off by at most the tail of one iteration: the launch is not
    what is measured. Two shapes:

    - the interval spans the loop whole (``t0 = time.time()`` before it, the end reading after it;
      ``t1 = time_synchronized()`` at the top of the body, as in YOLO's ``detect.py``);
    - the interval starts before the loop, or later in the body (the previous iteration), and ends
      inside it: a training loop reporting throughput every few steps, with ``loss.item()`` on
      every step (fms-fsdp's ``train``);
    - the interval lies inside one iteration but its delta is added into a total
      (``time_tot += time.time() - t0``, TGL's ``train``), and the synchronization comes after
      the start reading: what one iteration leaves running is waited for inside the next one's
      interval, so the total is the loop's time less the gaps between iterations.

    A synchronization written as one counts, and a blocking read (``.item()``, ``.tolist()``) of a
    device tensor. A blocking copy (``x.cuda()`` of a batch) counts only where it copies from host
    memory on every pass of the loop (``_copies_from_the_host_each_pass``): a source rebound to
    the copy's result (``x = x.cuda()``) is already on the device from the second iteration on."""
    around_start = {id(a) for a in ancestors(ctx, start.node)}
    around_end = {id(a) for a in ancestors(ctx, end.node)}
    first, second = source_order(start.node), source_order(end.node)
    starts_later_in_body = first is not None and second is not None and first > second
    host_paced = _copies_from_the_host_each_pass(ctx, function)
    # Work and synchronizations in a helper walked at its call site are placed at that call
    # (`self.acc.append(self.accuracy(out, y))` in the timed loop).
    work_node = work.call_site or work.node
    anchors = [
        s for s in function.ops_of(OpKind.HOST_SYNC)
        if (s.sync_kind in _LOOP_ANCHORS or (s.sync_kind == "blocking-copy" and id(s.node) in host_paced))
        and waits_for(s, work)
        and dominates(*_placed(s, work), parents)
    ]
    around_syncs = [{id(a) for a in ancestors(ctx, s.call_site or s.node)} for s in anchors]
    summed = accumulated(end.node, parents)
    for loop in ancestors(ctx, work_node):
        if isinstance(loop, (cst.FunctionDef, cst.Lambda)):
            return False
        if not isinstance(loop, (cst.For, cst.While)):
            continue
        syncs = around_syncs
        if id(loop) in around_start or id(loop) in around_end:
            ends_inside = id(loop) in around_end
            if ends_inside and id(loop) in around_start and not starts_later_in_body and summed:
                # Only a synchronization after the start reading is inside an interval, and only
                # where none before it waits first for what the previous iteration left running.
                inside = [
                    (source_order(s.call_site or s.node) or -1) > (first or 0) for s in anchors
                ]
                if first is None or not all(
                    inside[k] for k, around in enumerate(around_syncs) if id(loop.body) in around
                ):
                    continue
                syncs = around_syncs
            elif not (ends_inside and (id(loop) not in around_start or starts_later_in_body)):
                continue
        if any(id(loop.body) in around for around in syncs):
            return True
    return False


def _placed(first, second) -> tuple:
    """The nodes that place two ops in the modelled function's control flow: each op's own,
    where both come from one walk of a helper at the same call (compared inside the helper),
    else each one's call site, where it was made in a helper walked there."""
    if first.call_site is not None and first.call_site is second.call_site:
        return first.node, second.node
    return first.call_site or first.node, second.call_site or second.node


def _copies_from_the_host_each_pass(ctx, function) -> set[int]:
    """The nodes (by id) of blocking copies (``batch[0].to(0)``) that, on each pass the model made
    of their loop, copied from memory known to be the host's. Such a copy waits for the current
    stream every time it runs (PyTorch's blocking copies end in a stream synchronization). The
    model walks a loop body twice, and a copy whose source was rebound to its result in the
    first pass (``x = x.cuda()``) copies from the device in the second, where no wait is
    emitted: so every copy made at the node must have its wait, from a source known to be host
    memory before the copy, and there must be two of them (a loop nested too deep to be walked
    twice proves nothing). A tensor of unknown device that is uploaded is taken for host memory
    because of the upload, which proves nothing for a tensor uploaded again and again (a
    parameter's ``w.cuda()``); it counts where each pass uploads another one that no work on a
    stream made, from a loader the function builds (``imgs, labels = next(it)`` then
    ``imgs.cuda()``: a batch made on the host, blocking on every step; not the caller's loader,
    :func:`_fed_by_the_caller`, nor ``h = layer(h.cuda())``). One pass over the function's ops."""
    copies: dict[int, list] = {}
    waits: dict[int, int] = {}
    made_on_a_stream: set[int] = set()
    for op in function.ops:
        if op.kind == OpKind.COPY:
            copies.setdefault(id(op.node), []).append(op)
        elif op.kind == OpKind.HOST_SYNC and op.sync_kind == "blocking-copy":
            waits[id(op.node)] = waits.get(id(op.node), 0) + 1
        if op.writes and op.kind not in _NOT_DEVICE_WORK:
            made_on_a_stream.update(s.root.id for s in op.writes)
    return {
        node for node, made in copies.items()
        if len(made) >= 2 and waits.get(node, 0) == len(made) and all(
            op.copy is not None and op.copy.src is not None and op.copy.src.on_host for op in made
        ) and (
            not any(op.copy.src_guessed for op in made)
            or (
                len({op.copy.src.root.id for op in made}) == len(made)
                and not any(op.copy.src.root.id in made_on_a_stream for op in made)
                and not _fed_by_the_caller(ctx, function, made[0].node)
            )
        )
    }


#: Calls that hand on what their first arguments iterate (``enumerate(loader)``, ``tqdm(it)``).
_ITERATING_WRAPPERS = frozenset({"enumerate", "iter", "next", "zip", "tqdm", "reversed", "islice"})


def _fed_by_the_caller(ctx, function, copy: cst.CSTNode) -> bool:
    """Does the tensor ``copy`` uploads (``image.cuda()``, ``imgs.bfloat16().cuda()``) come from
    something the caller handed in, a parameter or an attribute, through loops, ``next()`` and
    wrappers (``data_iter = logger.wrap(enumerate(data_loader))``; ``for i, (image, _) in
    data_iter``)? The caller's loader may yield device tensors already (DeepLearningExamples'
    prefetching loaders do), and then the upload copies nothing and waits for nothing. A loader
    this function builds (``iter(get_loader(args))``, ``DataLoader(ds)``) yields what the
    function can see it build, and so does one that every call of the function in the file
    passes in, built there by ``DataLoader(...)`` (``train(train_loader, model)`` from
    ``main``, bayesian-torch). Unknown shapes count as the caller's."""
    node = copy.func.value if type(copy) is cst.Call and type(copy.func) is cst.Attribute else None
    while type(node) in (cst.Call, cst.Attribute, cst.Subscript):
        node = node.func if type(node) is cst.Call else node.value
    if type(node) is not cst.Name:
        return True
    return _Fed(ctx, function.node).reaches(node)


def _host_loader_from_every_caller(ctx, function: cst.CSTNode, parameter: str) -> bool:
    """Does every call of ``function`` (a plain function of the file, called by its name, at
    least once) pass for ``parameter`` a ``DataLoader(...)``, or a name its caller binds only to
    one? Read from the whole file's ``ast`` (the callers may have been left out of the text libcst
    parsed: they need not be relevant to any rule)."""
    if type(function) is not cst.FunctionDef or type(parent_map(ctx).get(function)) is not cst.Module:
        return False
    params = function.params
    positional = [p.name.value for p in (*params.posonly_params, *params.params)]
    tree = whole_ast(ctx)
    if tree is None:
        return False
    calls = list(_calls_by_scope(tree, function.name.value))
    if not calls:
        return False
    for call, caller in calls:
        given = next((k.value for k in call.keywords if k.arg == parameter), None)
        if given is None and parameter in positional:
            index = positional.index(parameter)
            if any(isinstance(a, ast.Starred) for a in call.args[: index + 1]):
                return False
            given = call.args[index] if index < len(call.args) else None
        if _builds_a_data_loader(given):
            continue
        if not isinstance(given, ast.Name):
            return False
        bound = _assigned(caller, given.id)
        if not bound or not all(_builds_a_data_loader(v) for v in bound):
            return False
    return True


def _builds_a_data_loader(expr) -> bool:
    """``DataLoader(ds, ...)`` or ``torch.utils.data.DataLoader(...)`` (an ``ast`` node): a
    loader of host batches (pinned or not: a blocking upload of either waits for the current
    stream)."""
    if not isinstance(expr, ast.Call):
        return False
    func = expr.func
    name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
    return name == "DataLoader"


def _assigned(scope, name: str) -> list:
    """The values ``scope`` (a function, or the module's own statements) gives ``name`` by plain
    assignment; empty where it also binds it otherwise (a loop, a parameter, ``with ... as``)."""
    values: list = []
    body = scope.body if not isinstance(scope, ast.Module) else [
        s for s in scope.body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        arguments = scope.args
        if name in {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}:
            return []
    stores = 0
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
                stores += 1
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == name for t in node.targets
            ):
                values.append(node.value)
    return values if stores == len(values) else []


def _calls_by_scope(tree: ast.Module, name: str):
    """The calls of a function by its ``name`` (``ast`` nodes), each with the innermost function
    holding it, or the module for calls in its own statements."""
    stack = [(tree, tree)]
    while stack:
        node, scope = stack.pop()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
            yield node, scope
        inner = node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else scope
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))


class _Fed:
    """:func:`_fed_by_the_caller`'s walk from an expression back through the bindings of
    ``function`` (a class, not a closure: a closure calling itself is a reference cycle, which
    would hold the tree until the cyclic collector runs). A parameter it reaches is the caller's
    unless every caller hands it a data loader (:func:`_host_loader_from_every_caller`)."""

    def __init__(self, ctx, function: cst.CSTNode) -> None:
        self.ctx = ctx
        self.function = function
        self.scope = Scope(function)
        self.seen: set = set()

    def reaches(self, expr) -> bool:
        if isinstance(expr, ElementOf):
            return self.reaches(expr.container)
        if isinstance(expr, ReturnOf):
            return False
        if type(expr) is cst.Name:
            name = expr.value
            if name == "self":
                return True
            if name in self.scope.parameters:
                return not _host_loader_from_every_caller(self.ctx, self.function, name)
            if name in self.seen:
                return False
            self.seen.add(name)
            return any(self.reaches(v) for v in self.scope.bindings.get(name, ()))
        if type(expr) in (cst.Attribute, cst.Subscript):
            return self.reaches(expr.value)
        if type(expr) is cst.Call:
            func = expr.func
            if type(func) is cst.Name and func.value not in _ITERATING_WRAPPERS:
                return False  # a factory called here: the loader is built here
            if any(self.reaches(a.value) for a in expr.args if a.keyword is None):
                return True
            return (
                type(func) is cst.Attribute and func.attr.value in ("items", "values")
                and self.reaches(func.value)
            )
        if isinstance(expr, _LITERALS):
            return False  # `dev = torch.device("cuda")` in `xb = xb.to(dev)`: nobody's loader
        return True


_LITERALS = (cst.SimpleString, cst.ConcatenatedString, cst.Integer, cst.Float)


#: Ops that write a storage without device work: the caller's values at entry, host writes.
_NOT_DEVICE_WORK = (OpKind.ENTRY, OpKind.HOST_WRITE)


def _timed_on_the_device(function, start, end, work) -> bool:
    """Do events time the interval, or all of its unsynchronized ``work``, on the device (so the
    host delta measures the launch on purpose)?"""
    return _inside_timed_events(function, start, end) or all(
        _timed_by_events(function, w) for w in work
    )


def _inside_timed_events(function, start, end) -> bool:
    """Is the interval inside one that events time on the device (``start_event.record()``
    before the first reading, ``end_event.record()`` after the end reading, and
    ``start_event.elapsed_time(end_event)`` read)? Then the device's time is measured by the
    events, and the host clock measures the launch on purpose (``host_ms`` against
    ``device_ms``, a launch-overhead test)."""
    return any(
        recorded(first, -1, start.index) and recorded(last, end.index, timing)
        for first, last, timing, recorded in _event_timings(function)
    )


def _timed_by_events(function, work) -> bool:
    """Is ``work`` between the records of two events whose ``elapsed_time`` is read afterwards
    (``start_evt.record()``, the copy, ``end_evt.record()``, then ``enqueue_ms`` from the host
    clock and ``copy_ms = start_evt.elapsed_time(end_evt)`` after a synchronization)? Then the
    work's device time is measured by the events, and a host delta around it measures the
    enqueue on purpose, as in GPTQModel's pinned-copy benchmarks."""
    return any(
        recorded(first, -1, work.index) and recorded(last, work.index, timing)
        for first, last, timing, recorded in _event_timings(function)
    )


def _event_timings(function):
    """For each ``start.elapsed_time(end)`` read: the two events' keys, the read's op index, and
    ``recorded(key, after, before)``, which says whether the event was recorded strictly between
    those two op indices."""
    records = [r for r in function.ops_of(OpKind.RECORD_EVENT) if r.event is not None]

    def recorded(key: str, after: int, before: int) -> bool:
        return any(r.event.key == key and after < r.index < before for r in records)

    for timing in function.ops_of(OpKind.ELAPSED_TIME):
        if len(timing.events) == 2:
            first, last = timing.events
            yield first.key, last.key, timing.index, recorded


def _around_a_loop(start, end) -> bool:
    """Is ``start`` a reading further down the loop that ``end`` is in, from the previous
    iteration (``pre = time.perf_counter()`` at the top of the body, after the last iteration's
    ``duration = time.perf_counter() - pre`` at its bottom)?"""
    first, second = source_order(start.node), source_order(end.node)
    return first is not None and second is not None and first > second


#: Factories whose kernel only fills what they make (or makes nothing: ``torch.empty``).
_FILLS = frozenset({"torch.zeros", "torch.ones", "torch.empty", "torch.full", "torch.tensor"})
#: Elements a probe may have: its fill takes microseconds, far below any delta a host clock reports.
_PROBE_ELEMENTS = 1024


def _a_probe(work) -> bool:
    """Is ``work`` a factory of a few elements whose size is written out (``torch.zeros(1,
    device="cuda")``, ``torch.tensor([0.0], device=dev)``)? Such a tensor checks that CUDA works or
    holds a flag; its fill is too short to make a delta misleading, and work that later reads it
    is counted on its own. SeisProc's worker made one in a timed segment of host work."""
    call = work.node
    if work.qualname not in _FILLS or type(call) is not cst.Call:
        return False
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if work.qualname == "torch.tensor":
        return len(positional) == 1 and _literal_elements(positional[0]) is not None
    shape = positional[:1] if work.qualname == "torch.full" else positional
    if work.qualname == "torch.full" and len(positional) < 2:
        return False
    if len(shape) == 1 and type(shape[0]) in (cst.Tuple, cst.List):
        shape = [e.value for e in shape[0].elements if type(e) is cst.Element]
    if not shape or not all(type(size) is cst.Integer for size in shape):
        return False
    elements = 1
    for size in shape:
        elements *= int(size.evaluated_value)
    return elements <= _PROBE_ELEMENTS


#: Methods that convert a tensor element by element, or copy it whole, on its device.
_CONVERSIONS = frozenset({
    "float", "half", "double", "bfloat16", "long", "int", "short", "bool", "byte", "to",
    "clone", "contiguous",
})


def _converts_a_blocking_upload(function, work, depth: int = 0) -> bool:
    """Is ``work`` a conversion (``.float()``, ``.clone()``, ``.contiguous()``) of a tensor the
    host uploaded with a blocking copy, or of another such conversion? It touches each element
    once, at the device's bandwidth, far above the link's: a small part of the copy the host
    already waited for, too short to make a delta misleading (vggsfm's
    ``torch.from_numpy(K).to(device).float().clone()`` after a bundle adjustment on the host)."""
    call = work.node
    if (
        depth > 4
        or type(call) is not cst.Call
        or type(call.func) is not cst.Attribute
        or call.func.attr.value not in _CONVERSIONS
        or len(work.reads) != 1
        or (call.func.attr.value == "to" and not _to_a_dtype(call))
    ):
        return False
    read = work.reads[0]
    writers = [op for op in function.ops if op.index < work.index and any(w is read for w in op.writes)]
    source = writers[-1] if writers else None
    if source is None:
        return False
    copy = source.copy
    if copy is not None and copy.direction == "h2d":
        return not copy.non_blocking
    return _converts_a_blocking_upload(function, source, depth + 1)


def _to_a_dtype(call: cst.Call) -> bool:
    """``.to(torch.float16)``, ``.to(x.dtype)``, ``.to(dtype=...)``: a conversion, not a move to
    another device (``.to(f"cuda:{peer}")`` copies across GPUs, and the host does not wait)."""
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value != "dtype":
                return False
            continue
        if not is_dtype_expression(arg.value):
            return False
    return bool(call.args)


def _literal_elements(value: cst.BaseExpression) -> int | None:
    """How many numbers a literal (``0.0``, ``[1, 2]``, ``-1``) of at most ``_PROBE_ELEMENTS``
    holds; None for anything else."""
    if type(value) is cst.UnaryOperation:
        value = value.expression
    if type(value) in (cst.Integer, cst.Float):
        return 1
    if type(value) is cst.Name:
        return 1 if value.value in ("True", "False") else None
    if type(value) in (cst.List, cst.Tuple):
        total = 0
        for element in value.elements:
            if type(element) is not cst.Element:
                return None
            inner = _literal_elements(element.value)
            if inner is None:
                return None
            total += inner
        return total if total <= _PROBE_ELEMENTS else None
    return None


def _exclusive(a: cst.CSTNode, b: cst.CSTNode, parents) -> bool:
    """Are ``a`` and ``b`` in the two branches of one ``if`` (never both on one path)?"""
    path: dict[int, cst.CSTNode] = {}  # id(ancestor of a) -> its child towards a
    child, current = a, parents.get(a)
    while current is not None:
        path[id(current)] = child
        child, current = current, parents.get(current)
    child, current = b, parents.get(b)
    while current is not None and id(current) not in path:
        child, current = current, parents.get(current)
    if type(current) is not cst.If:
        return False
    sides = {id(path[id(current)]), id(child)}
    return sides == {id(current.body), id(current.orelse)}


def insert_sync(
    ctx: RuleContext, node: cst.CSTNode, text: str, applicability: Applicability
) -> Fix | None:
    """Insert ``text`` (spelled with the file's name for ``torch``) on its own line before the simple
    statement holding ``node``; None where that place is ambiguous (compound headers, one-line
    suites, files without ``import torch``)."""
    torch = torch_name(ctx)
    if torch is None:
        return None
    if not isinstance(ctx.positions.statement(node), cst.SimpleStatementLine):
        return None
    text = text.replace("torch.", f"{torch}.", 1) if text.startswith("torch.") else text
    return ctx.insert_before_statement(
        node, text, f"Insert `{text}` before this line", applicability
    )
