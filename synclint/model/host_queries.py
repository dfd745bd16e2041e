"""Queries about what the host knows, over the timeline model (for SYN201, SYN203-SYN206).

The model's vector clocks answer "has the host seen this device op complete?"
(:meth:`FunctionModel.host_has_seen`), which is what host clocks need. Event questions need one more
step: a ``RECORD_EVENT`` op carries no sequence number of its own, and the work it captures may be
invisible to the model (``fn()`` launching kernels in a helper). So "has the host seen
``end.record()`` complete?" is answered by an explicit host synchronization *after* the record that
covers it, on every path to the question: ``torch.cuda.synchronize()``, ``end.synchronize()``,
``stream.synchronize()`` or a blocking read on the recording stream, or a ``while not end.query()``
loop.
"""

from __future__ import annotations

from typing import Mapping, Optional

import libcst as cst

from synclint.cstwalk import source_order, walk
from synclint.model import FunctionModel, Op, OpKind, api
from synclint.model.call_args import chooses_the_gpu, tests_for_the_gpu
from synclint.model.resolver import dotted, tested_set

DEVICE_WORK = (OpKind.ACCESS, OpKind.COPY, OpKind.COLLECTIVE)
#: Host synchronizations that wait for every stream: written as one, a helper that makes one,
#: and ``obj.synchronize()`` on a value of unknown kind whose name does not say stream
#: (``runner.synchronize()``: taken for the device's, see ``CallSemantics.unknown_method``).
ALL_STREAM_SYNCS = frozenset({"device", "helper", "unknown"})


def is_cuda_work(op: Op) -> bool:
    """Device work known to run on a GPU: a collective, work on a side stream, or an op touching a
    CUDA tensor. Work on tensors of unknown device (``model(x)`` with ``x`` a parameter) is not
    counted, so host clocks around code that may be pure CPU stay quiet."""
    if op.kind not in DEVICE_WORK or not op.seq:
        return False
    if op.kind == OpKind.COLLECTIVE or op.qualname == api.GRAPH_REPLAY:
        return True
    if op.stream.origin in ("created", "attribute", "external") and not op.stream.is_default:
        return True
    if op.copy is not None and op.copy.direction in ("h2d", "d2h", "d2d"):
        return True
    return any(s.device == "cuda" for s in (*op.reads, *op.writes))


def covering_sync(
    function: FunctionModel, record: Op, at: Op, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> Optional[Op]:
    """A host synchronization after ``record`` and before ``at``, on every path to ``at``, that
    waits for what ``record`` captured."""
    event_key = record.event.key if record.event is not None else None
    covering = []
    for op in function.ops:
        if op.index <= record.index:
            continue
        if op.index >= at.index:
            break
        if not _covers(op, record, event_key, parents):
            continue
        if dominates(op.node, at.node, parents) or _runs_on_from(op.node, record.node, parents):
            return op
        if _both_where_the_event_is_set(op.node, at.node, parents):
            return op
        covering.append(op)
    return _synchronized_on_every_arm(covering, at, parents)


def _both_where_the_event_is_set(
    sync: cst.CSTNode, at: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    """``if t_end is not None: t_end.synchronize()``, then ``if t_begin is not None and t_end is
    not None: t_begin.elapsed_time(t_end)``: the synchronization runs wherever the event ``at``
    reads is set, and ``at`` runs only where it is set. The ``if`` around the synchronization
    (its nearest) tests that event and dominates ``at``; an ``if`` around ``at`` tests it too."""
    if not (type(at) is cst.Call and at.args):
        return False
    event = dotted(at.args[0].value)
    if event is None:
        return False
    guard = parents.get(sync)
    while guard is not None and type(guard) is not cst.If:
        if isinstance(guard, (cst.FunctionDef, cst.For, cst.While, cst.With, cst.Try)):
            return False
        guard = parents.get(guard)
    if guard is None or guard.orelse is not None or _set_test(guard.test) != {event}:
        return False
    if not dominates(guard, at, parents):
        return False
    node = parents.get(at)
    while node is not None and not isinstance(node, (cst.FunctionDef, cst.Module)):
        if type(node) is cst.If and event in _set_test(node.test) and node is not guard:
            return True
        node = parents.get(node)
    return False


def _set_test(test: cst.BaseExpression) -> set[str]:
    """The names an ``if`` test requires to be set: ``x is not None``, ``x``, and the conjuncts
    of ``a and b``."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        return _set_test(test.left) | _set_test(test.right)
    name = tested_set(test)
    return {name} if name is not None else set()


def _runs_on_from(
    later: cst.CSTNode, earlier: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    """Does ``later`` (after ``earlier``) run on every path on from ``earlier``: is each
    conditional construct around ``later`` around ``earlier`` too, with both in the same arm?

    Then a synchronization covers a record made in the same branch even where it does not
    dominate the read that follows the branch: recsys-examples re-times a short benchmark with
    ``if time1 < 1000: ...; ts_end.record(); torch.cuda.synchronize()``, after a first timing
    that was synchronized the same way, then reads ``ts_start.elapsed_time(ts_end)``."""
    common = _unconditional_climb(later, earlier, parents)
    # The nearest construct holding both must run them in sequence, not in two arms.
    return common is not _SKIPPABLE and common is not None and not isinstance(common, _CONDITIONAL)


def _synchronized_on_every_arm(
    covering: list[Op], at: Op, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> Optional[Op]:
    """One of ``covering``, if together they cover every arm of an ``if``/``else`` on every path to
    ``at`` (``if device.type == "mps": torch.mps.synchronize() else: torch.cuda.synchronize()``)."""
    if len(covering) < 2:
        return None
    nodes = [op.node for op in covering]
    for op in covering:
        node = parents.get(op.node)
        while node is not None and not isinstance(node, (cst.FunctionDef, cst.Module)):
            if type(node) is cst.If and dominates(node, at.node, parents):
                if _every_arm_contains(node, nodes, parents):
                    return op
                break
            node = parents.get(node)
    return None


def _every_arm_contains(
    stmt: cst.If, nodes: list, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    """Does each arm of ``stmt`` (its body, each ``elif``, and an ``else``, which must exist) run
    one of ``nodes`` whenever it runs?"""
    arm: cst.BaseSuite = stmt.body
    if not any(_runs_whenever(node, arm, parents) for node in nodes):
        return False
    orelse = stmt.orelse
    if type(orelse) is cst.If:
        return _every_arm_contains(orelse, nodes, parents)
    return orelse is not None and any(_runs_whenever(node, orelse.body, parents) for node in nodes)


def _runs_whenever(node: cst.CSTNode, block: cst.BaseSuite, parents) -> bool:
    """Is ``node`` inside ``block`` with no conditional construct between them?"""
    current = parents.get(node)
    while current is not None:
        if current is block:
            return True
        if isinstance(current, _CONDITIONAL) or isinstance(current, (cst.FunctionDef, cst.Lambda)):
            return False
        current = parents.get(current)
    return False


def _covers(
    op: Op, record: Op, event_key: Optional[str], parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    if op.kind == OpKind.HOST_SYNC:
        if op.sync_kind in ALL_STREAM_SYNCS:
            return True
        if op.sync_kind in ("event", "query") and op.event is not None:
            if op.event.key == event_key:
                return True
            # Another event recorded later on the same stream covers this record too.
            return any(
                r.stream.key == record.stream.key and r.index > record.index for r in op.recorded_by
            )
        if op.sync_kind in ("stream", "blocking-read") and op.target is not None:
            return op.target.key == record.stream.key
    if op.kind == OpKind.ELAPSED_TIME and any(e.key == event_key for e in op.events):
        # An earlier `start.elapsed_time(end)` that returned: it raises unless both events had
        # completed, so `end` is done from there on (until it is recorded again).
        return True
    if op.kind == OpKind.EVENT_QUERY and op.event is not None:
        if op.event.key == event_key:
            return polled_in_while(op.node, parents) or asserted(op.node, parents)
        # `assert end.query()` also covers `start`, recorded earlier on the same stream.
        return asserted(op.node, parents) and any(
            r.stream.key == record.stream.key and r.index > record.index for r in op.recorded_by
        )
    return False


#: Nodes whose children run only on some paths.
_CONDITIONAL = (cst.If, cst.Else, cst.ExceptHandler, cst.IfExp, cst.BooleanOperation, cst.MatchCase)


def dominates(
    first: cst.CSTNode, second: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    """Does every path to ``second`` pass ``first`` (ignoring exceptions; loops run)? True when each
    conditional construct around ``first`` also contains ``second``."""
    return _unconditional_climb(first, second, parents) is not _SKIPPABLE


#: What :func:`_unconditional_climb` returns when a conditional construct may skip the node.
_SKIPPABLE = object()


def _unconditional_climb(
    node: cst.CSTNode, other: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
):
    """Climb from ``node`` to the nearest construct around ``other`` too, and return it, unless a
    conditional construct on the way may skip ``node`` (then :data:`_SKIPPABLE`); None when the
    climb reaches the top without meeting ``other``'s ancestors."""
    around_other = _ancestor_ids(other, parents)
    child, current = node, parents.get(node)
    while current is not None:
        if id(current) in around_other:
            return current
        if (
            isinstance(current, _CONDITIONAL)
            and not _evaluated_first(current, child)
            and not _runs_wherever_there_is_a_device(current, child)
        ):
            return _SKIPPABLE
        child, current = current, parents.get(current)
    return None


#: The tests of ``if torch.cuda.is_available():`` (or ``is_initialized()``), however ``torch`` is
#: imported (``api.DEVICE_PRESENT`` without its ``torch.``: only the parents are known here, no
#: resolver).
_DEVICE_PRESENT_TESTS = tuple(sorted(name.split(".", 1)[1] for name in api.DEVICE_PRESENT))
_DOTTED_DEVICE_PRESENT_TESTS = tuple("." + test for test in _DEVICE_PRESENT_TESTS)


def _runs_wherever_there_is_a_device(construct: cst.CSTNode, child: cst.CSTNode) -> bool:
    """Is ``child`` the body of ``if torch.cuda.is_available():`` (or ``if args.use_cuda:``, ``if
    self.device.type == "cuda":``)? Where the test fails nothing ran on a device, so a
    synchronization there covers every path that has device work (the model's belief too:
    ``Interpreter.st_If``)."""
    if type(construct) is not cst.If or child is not construct.body:
        return False
    test = construct.test
    if chooses_the_gpu(test):
        return True  # `if args.use_cuda:`, `if self.device.type == "cuda":`
    if type(test) is not cst.Call or test.args:
        return False
    name = dotted(test.func)
    return name is not None and (
        name in _DEVICE_PRESENT_TESTS or name.endswith(_DOTTED_DEVICE_PRESENT_TESTS)
    )


def _evaluated_first(construct: cst.CSTNode, child: cst.CSTNode) -> bool:
    """Is ``child`` the part of a conditional construct that always runs: the test of an ``if``
    (``if not torch.isfinite(loss).all(): raise``) or of ``a if test else b``, or the left
    operand of ``and``/``or``?"""
    if isinstance(construct, (cst.If, cst.IfExp)):
        return child is construct.test
    if type(construct) is cst.BooleanOperation:
        return child is construct.left
    return False


def record_seen(
    function: FunctionModel, record: Op, at: Op, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    """When ``at`` is issued, has the host synchronized with the work ``record`` captured?

    Only a synchronization *after* the record counts: work launched between an earlier sync and the
    record may be invisible to the model (``fn()``), so vector clocks alone would be optimistic."""
    return covering_sync(function, record, at, parents) is not None


def unseen_cuda_work(
    function: FunctionModel,
    after: int,
    at: Op,
    parents: Optional[Mapping[cst.CSTNode, cst.CSTNode]] = None,
) -> list[Op]:
    """CUDA work enqueued after op index ``after`` and before ``at`` that the host has not seen
(work captured into a CUDA graph is not enqueued: it runs at replay).

    An opaque call (``engine.generate(ids)``, ``runner.capture(x)``: see ``Op.opaque``) may
    synchronize before it returns, so neither it nor the work before it is claimed unseen: only
    the work after the last one counts. With ``parents``, work followed by a host synchronization
    that covers it and runs whenever it runs (``if ...: ids = x.to("cpu")``, a blocking copy in the
    same branch) counts as seen too: the vector clocks forget it at the end of the branch."""
    between = [op for op in function.ops if after < op.index < at.index]
    for position in range(len(between) - 1, -1, -1):
        if between[position].opaque:
            between = between[position + 1 :]
            break
    # Work recorded inside a graph capture does not run there (only at replay): nothing to see.
    unseen = [
        op for op in between
        if is_cuda_work(op) and not op.in_graph_capture and not function.host_has_seen(op, at)
    ]
    if parents is None or not unseen:
        return unseen
    # Work in the `else` arm of a test for the GPU runs where the device is not the GPU.
    unseen = [op for op in unseen if not _on_the_host_arm(op.node, parents)]
    syncs = [op for op in between if op.kind == OpKind.HOST_SYNC]
    return [
        op for op in unseen
        if not any(_synchronizes(s, op, parents) for s in syncs)
        and not _every_arm_synchronizes(op, syncs, parents)
    ]


def _on_the_host_arm(node: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> bool:
    """Is ``node`` in the ``else`` arm of a test for the GPU (``if device == "cuda": ... else:``,
    ``if self.device.type == "cuda":``)? There the program's device is not the GPU, so work a
    guess put on it (an upload to a device parameter) runs on the host: the counterpart of
    :func:`_runs_wherever_there_is_a_device`."""
    child, current = node, parents.get(node)
    while current is not None and not isinstance(current, (cst.FunctionDef, cst.Lambda)):
        if type(current) is cst.If and child is current.orelse and tests_for_the_gpu(current.test):
            return True
        child, current = current, parents.get(current)
    return False


def _synchronizes(sync: Op, work: Op, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> bool:
    """Does ``sync``, after ``work``, wait for it, on every path through ``work``?"""
    if sync.index <= work.index or not waits_for(sync, work):
        return False
    return dominates(sync.node, work.node, parents) or flag_guarded(sync.node, work.node, parents)


def _every_arm_synchronizes(
    work: Op, syncs: list[Op], parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    """Is ``work`` followed by an ``if``/``elif``/``else`` that runs whenever it does and whose
    every arm waits for it (``if top3: y = y.topk(3)[1].cpu() else: y = y.max(0)[1].cpu()``)?
    No one synchronization covers every path then, but every path has one."""
    covering = [s for s in syncs if s.index > work.index and waits_for(s, work)]
    if len(covering) < 2:
        return False
    around_work = _ancestor_ids(work.node, parents)
    for sync in covering:
        node = parents.get(sync.node)
        while node is not None and not isinstance(node, (cst.FunctionDef, cst.Module)):
            if id(node) in around_work:
                break  # the work is inside: this construct does not follow it
            if type(node) is cst.If and _arms_synchronize(node, covering, parents) and dominates(
                node, work.node, parents
            ):
                return True
            node = parents.get(node)
    return False


def _arms_synchronize(
    branch: cst.If, syncs: list[Op], parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    """Does every arm of ``branch`` (``elif`` arms and the ``else`` included; without an ``else``
    a path skips them all) run one of ``syncs`` whenever it runs?"""
    orelse = branch.orelse
    if orelse is None:
        return False
    if not any(_unconditional_in(s.node, branch.body, parents) for s in syncs):
        return False
    if type(orelse) is cst.If:
        return _arms_synchronize(orelse, syncs, parents)
    return any(_unconditional_in(s.node, orelse.body, parents) for s in syncs)


def _unconditional_in(
    node: cst.CSTNode, block: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    """Is ``node`` inside ``block`` and run whenever ``block`` runs (no conditional construct
    between them may skip it)?"""
    return id(block) in _ancestor_ids(node, parents) and _unconditional_climb(
        node, block, parents
    ) not in (None, _SKIPPABLE)


def flag_guarded(
    sync: cst.CSTNode, work: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    """Is ``sync`` guarded only by ``if flag:`` tests whose flag is set ``True`` whenever ``work``
    runs? NVIDIA's resiliency checkpointing copies to the host and sets ``needs_sync = True`` in
    the same block, then calls ``torch.cuda.synchronize()`` under ``if needs_sync:``.

    The flag's other assignments must all come before ``work`` and outside every loop around it
    (a reset at the top of each iteration would leave only the last iteration covered)."""
    around_work = _ancestor_ids(work, parents)
    flags = []
    child, node = sync, parents.get(sync)
    while node is not None and id(node) not in around_work:
        if type(node) is cst.If:
            if child is not node.body or type(node.test) is not cst.Name:
                return False
            flags.append(node.test.value)
        elif isinstance(node, _CONDITIONAL):
            return False
        child, node = node, parents.get(node)
    if not flags:
        return False
    function = node
    while function is not None and not isinstance(function, (cst.FunctionDef, cst.Module)):
        function = parents.get(function)
    return function is not None and all(
        _set_true_with(flag, work, function, parents) for flag in flags
    )


def _set_true_with(
    flag: str, work: cst.CSTNode, scope: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]
) -> bool:
    """Is ``flag = True`` a statement of a block around ``work`` (so it runs whenever ``work``
    does), with every other assignment of ``flag`` before ``work`` and outside its loops?"""
    enclosing, loops = [], []
    node = parents.get(work)
    while node is not None and node is not scope:
        enclosing.append(node)
        if isinstance(node, (cst.For, cst.While)):
            loops.append(node)
        node = parents.get(node)
    set_here = set()
    for block in enclosing:
        if isinstance(block, (cst.IndentedBlock, cst.SimpleStatementSuite)):
            for statement in block.body:
                if _assigns(statement, flag) == "True":
                    set_here.add(id(statement))
    if not set_here:
        return False
    work_start = source_order(work)
    for statement, value in _assignments(scope, flag):
        if id(statement) in set_here:
            continue
        if value is None or work_start is None:
            return False
        order = source_order(statement)
        if order is None or order > work_start:
            return False
        if _ancestor_ids(statement, parents).intersection(map(id, loops)):
            return False  # reset inside a loop around the work
    return True


def _assigns(statement: cst.CSTNode, flag: str) -> Optional[str]:
    """``"True"``/``"False"`` for ``flag = True``/``flag = False`` written as a statement line;
    ``"other"`` for any other assignment of ``flag`` there; None when it assigns no ``flag``."""
    if type(statement) is not cst.SimpleStatementLine:
        return None
    for small in statement.body:
        if type(small) is cst.Assign and any(
            type(t.target) is cst.Name and t.target.value == flag for t in small.targets
        ):
            value = small.value
            single = len(small.targets) == 1
            if single and type(value) is cst.Name and value.value in ("True", "False"):
                return value.value
            return "other"
        if (
            isinstance(small, (cst.AugAssign, cst.AnnAssign))
            and type(small.target) is cst.Name
            and small.target.value == flag
        ):
            return "other"
    return None


def _assignments(scope: cst.CSTNode, flag: str) -> list:
    """Every statement in ``scope`` (not in nested functions or classes) that assigns ``flag``,
    with ``"True"``/``"False"``, or None for any other kind of assignment (a loop target, a
    ``with`` target and a walrus count as other)."""
    visitor = _FlagAssignments(scope, flag)
    walk(scope, visitor)
    return visitor.found


class _FlagAssignments(cst.CSTVisitor):
    def __init__(self, scope: cst.CSTNode, flag: str) -> None:
        self.scope, self.flag = scope, flag
        self.found: list = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.scope

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        kind = _assigns(node, self.flag)
        if kind is not None:
            self.found.append((node, None if kind == "other" else kind))

    def _target(self, node: cst.CSTNode, target: cst.CSTNode) -> None:
        if type(target) is cst.Name and target.value == self.flag:
            self.found.append((node, None))

    def visit_For(self, node: cst.For) -> None:
        self._target(node, node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._target(node, node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node, node.target)


def _ancestor_ids(node: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> set[int]:
    """The ids of the nodes around ``node``."""
    ids = set()
    node = parents.get(node)
    while node is not None:
        ids.add(id(node))
        node = parents.get(node)
    return ids


def waits_for(sync: Op, work: Op) -> bool:
    """Is the host synchronization ``sync``, made after ``work``, one that waits for it: a
    synchronization of every stream, or of the stream that ran it, or of an event whose every
    possible recording came after it on its stream (or on a stream that had waited for it)?"""
    if sync.sync_kind == "event":
        key, seq = work.stream.key, work.seq
        return bool(sync.recorded_by) and all(r.vc.get(key, 0) >= seq for r in sync.recorded_by)
    return sync.sync_kind in ALL_STREAM_SYNCS or (
        sync.sync_kind in ("stream", "blocking-read", "blocking-copy")
        and sync.target is not None
        and sync.target.key == work.stream.key
    )


def records_of(op: Op, event_key: str) -> list[Op]:
    return [r for r in op.recorded_by if r.event is not None and r.event.key == event_key]


def asserted(node: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> bool:
    """Is ``node`` asserted to be true (``assert end.query()``, or one operand of an ``and`` that
    is)? Code after the ``assert`` runs only where it held: cosmos-rl checks that the end event is
    done, after a blocking read, before it reads ``elapsed_time``."""
    child, current = node, parents.get(node)
    while type(current) is cst.BooleanOperation and type(current.operator) is cst.And:
        child, current = current, parents.get(current)
    return type(current) is cst.Assert and current.test is child


def polled_in_while(node: cst.CSTNode, parents: Mapping[cst.CSTNode, cst.CSTNode]) -> bool:
    """Is ``node`` inside the test of a ``while`` loop (``while not end.query(): ...``)?"""
    child, current = node, parents.get(node)
    while current is not None and not isinstance(current, (cst.FunctionDef, cst.Module)):
        if type(current) is cst.While and child is current.test:
            return True
        child, current = current, parents.get(current)
    return False
