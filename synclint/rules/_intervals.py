"""Host clock intervals: which earlier reading a clock reading ends a delta from.

Shared by SYN205 (a delta around CUDA work nothing synchronized) and SYN201 (a delta around work
that a stream wait was taken to finish). Both must pair readings the way the code subtracts them:
a reading bound to a name that is only ever subtracted starts an interval and ends none
(``bwd_start = time.time()``, also ``t0 = time.time() if profiling else 0``); one on the left of
a subtraction, or bound to a name subtracted from, ends the interval that starts at the reading
bound to the name it subtracts. And a delta whose destination is named for the submission
(``submit_ns=...``, ``launch_ms = ...``, ``stats["enqueue_time"] = ...``) measures the host's
side of asynchronous work on purpose: it is no mistaken measurement of the work.
"""

from __future__ import annotations

import re

import libcst as cst

from synclint.cstwalk import walk
from synclint.model.resolver import dotted
from synclint.rules._liveness import live_after_each

#: Words in a delta's destination that say it measures submitting the work, not the work.
_SUBMISSION = re.compile(r"submit|launch|enqueue", re.IGNORECASE)
#: ``cpu`` or ``host`` as a word of an identifier or key (``t_cpu_end``, ``cpu_prep``,
#: ``hostMs``; not ``ghost``, ``cpus``): a time named for the host's side of the work.
_HOST_SIDE = re.compile(
    r"(?:(?:^|[_\W])(?:cpu|host)|(?<=[a-z0-9])(?:Cpu|CPU|Host|HOST)|^(?:Cpu|CPU|Host|HOST))"
    r"(?=$|[_\W]|[A-Z0-9])"
)


#: Words that name the device's side too: ``cpu_gpu_time``, ``host_to_device_ms`` time a
#: transfer between the two, not the host's side alone.
_DEVICE_SIDE = re.compile(r"gpu|cuda|device|h2d|d2h", re.IGNORECASE)


def _names_host_time(text: str) -> bool:
    """Does ``text`` name a time of the submission (``launch_ms``) or of the host's side of the
    work (``cpu_prep``; not ``cpu_gpu_time``)? Such a delta measures what it says, not the
    device's work."""
    if _SUBMISSION.search(text):
        return True
    return bool(_HOST_SIDE.search(text)) and not _DEVICE_SIDE.search(text)


def subtracts_from(clock: cst.CSTNode, parents) -> bool:
    """Is the reading at ``clock`` itself the end of a delta, ``time.time() - last``? Across
    iterations only such a reading measures what ran since the previous one; a reading that
    starts this iteration's interval (``pre = time.perf_counter()``) measures nothing yet."""
    parent = parents.get(clock)
    return (
        type(parent) is cst.BinaryOperation
        and type(parent.operator) is cst.Subtract
        and parent.left is clock
    )


def accumulated(clock: cst.CSTNode, parents) -> bool:
    """Is the reading at ``clock`` the end of a delta added into a total (``time_tot +=
    time.time() - t0``, perhaps scaled)? Summed over a loop's iterations, such deltas measure the
    loop as a whole, less the gaps between them."""
    parent = parents.get(clock)
    if not (type(parent) is cst.BinaryOperation and type(parent.operator) is cst.Subtract):
        return False
    node, parent = parent, parents.get(parent)
    while type(parent) is cst.BinaryOperation:
        node, parent = parent, parents.get(parent)
    return type(parent) is cst.AugAssign and type(parent.operator) is cst.AddAssign and parent.value is node


def bound_key(clock: cst.CSTNode, parents) -> str | None:
    """What a reading is assigned to, dotted (``t0``, ``self._t0``), if it is: directly, or as one
    branch of a conditional expression whose other branch is no reading (``t0 =
    time.perf_counter_ns() if profiling else 0``)."""
    parent = parents.get(clock)
    if type(parent) is cst.IfExp and clock in (parent.body, parent.orelse):
        clock, parent = parent, parents.get(parent)
    if type(parent) is cst.Assign and parent.value is clock and len(parent.targets) == 1:
        return dotted(parent.targets[0].target)
    return None


def subtrahend(clock: cst.CSTNode, bound: str | None, parents, subtractions) -> str | None:
    """What the reading at ``clock`` is the end of a delta from, dotted: ``t0`` in
    ``time.time() - t0``, or in ``t1 - t0`` when the reading is bound to ``t1``."""
    parent = parents.get(clock)
    if type(parent) is cst.BinaryOperation and type(parent.operator) is cst.Subtract:
        if parent.left is clock:
            return dotted(parent.right)
        return None
    if bound is not None:
        return subtractions.subtracted_from.get(bound)
    return None


def interval_starts(end, earlier: list, parents, subtractions) -> tuple[list, str | None]:
    """The readings among ``earlier`` (ops, in order) that the interval ending at ``end`` may
    start at, and the name it subtracts when known. None of them when ``end`` ends no interval:
    it only starts one, or it is bound to a name nothing reads (a leftover)."""
    if type(parents.get(end.node)) is cst.Element or _stamped_in_a_slot(end.node, parents):
        # `t_prev = [time.time()]`: a first timestamp kept in a list, for a callback or a loop to
        # subtract later (stable-audio-3's step timer); `starts[j] = time.time()`, one request's
        # arrival kept in its slot (RWKV-Infer's scheduler): they start intervals and end none.
        return [], None
    bound = bound_key(end.node, parents)
    if (
        subtractions.only_subtracted(bound)
        or subtractions.a_stamp_of_the_class(end.node, bound, parents)
        or subtractions.never_read(bound)
        or subtractions.dead_binding(end.node, bound, parents)
    ):
        return [], None
    since = subtrahend(end.node, bound, parents, subtractions)
    if since is not None:
        # `time.time() - t0`, or `t1 = time.time()` with `t1 - t0`: the interval starts at the
        # reading bound to `t0` (in an earlier iteration too); in another method or the caller,
        # it covers work this scope cannot see.
        return [c for c in earlier if bound_key(c.node, parents) == since], since
    # The end of one delta (`time.time() - t0`) is no start of another.
    return [c for c in earlier if not subtracts_from(c.node, parents)], None


class _UsesOf(cst.CSTVisitor):
    """Where code puts a dotted name (``start``, ``self.feedback_time``) in a subtraction (on the
    right, a start; on the left), and how often it names an attribute at all and as an
    assignment's target."""

    def __init__(self, key: str) -> None:
        self.key = key
        self._last = key.rsplit(".", 1)[-1]
        self.subtracted = False
        self.subtracted_from = False
        self.mentions = 0
        self.assigned = 0

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == self._last and dotted(node) == self.key:
            self.mentions += 1

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if dotted(node.target) == self.key:
            self.assigned += 1

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if type(node.operator) is cst.Subtract:
            if dotted(node.right) == self.key:
                self.subtracted = True
            if dotted(node.left) == self.key:
                self.subtracted_from = True


def _stamped_in_a_slot(clock: cst.CSTNode, parents) -> bool:
    """Is the reading stored into an item at a computed index (``starts[j] = time.time()``)? Not
    at a written-out key (``t["end"] = time.time()``, which may well end an interval)."""
    parent = parents.get(clock)
    if not (type(parent) is cst.Assign and parent.value is clock and len(parent.targets) == 1):
        return False
    target = parent.targets[0].target
    return type(target) is cst.Subscript and not any(
        type(e.slice) is cst.Index
        and isinstance(e.slice.value, (cst.SimpleString, cst.Integer, cst.ConcatenatedString))
        for e in target.slice
    )


def paced_by_a_spin(clock: cst.CSTNode, since: str | None, parents) -> bool:
    """Is the reading at ``clock`` preceded, in its block, by a loop that spins until a deadline
    measured from the same start (``while time.time() - start < dt: time.sleep(1e-5)``)? A
    control loop keeping its tick rate: the delta is the tick the host paced on purpose, however
    far the device lags."""
    if since is None:
        return False
    statement = clock
    while statement is not None and not isinstance(statement, cst.BaseStatement):
        statement = parents.get(statement)
    block = parents.get(statement) if statement is not None else None
    if block is None or not hasattr(block, "body") or not isinstance(block.body, (list, tuple)):
        return False
    for sibling in block.body:
        if sibling is statement:
            return False
        if type(sibling) is cst.While and _subtracts(sibling.test, since):
            return True
    return False


def _subtracts(test: cst.BaseExpression, since: str) -> bool:
    """Does ``test`` hold a subtraction of ``since`` (``time.time() - start < dt``)?"""
    found = _UsesOf(since)
    walk(test, found)
    return found.subtracted


def measures_submission(clock: cst.CSTNode, parents) -> bool:
    """Is the delta ending at ``clock`` stored under a name that says it times the submission
    (``submit_ns=time.perf_counter_ns() - t0``, ``launch_ms = (time.perf_counter() - t0) *
    1e3``, ``stats["enqueue_s"] += time.time() - t0``), handed to a call beside a string that
    names the submission (``record("launch_ms", time.time() - t0)``), or measured from a start so
    named (``time.time() - launch_start``)? Only the expression holding the reading is followed,
    through arithmetic and parentheses, to an argument or an assignment."""
    node, parent = clock, parents.get(clock)
    if (
        type(parent) is cst.BinaryOperation
        and type(parent.operator) is cst.Subtract
        and parent.left is clock
        and _names_host_time(dotted(parent.right) or "")
    ):
        return True  # `time.perf_counter() - launch_start`: from the start of the launch
    while type(parent) is cst.BinaryOperation:
        node, parent = parent, parents.get(parent)
    if type(parent) is cst.Arg:
        if parent.keyword is not None:
            return _names_host_time(parent.keyword.value)
        # `self._record_timing("offload_launch_ms", (time.perf_counter() - t0) * 1e3)`: handed
        # to a recorder with a metric named for the launch.
        call = parents.get(parent)
        return type(call) is cst.Call and any(
            type(a.value) is cst.SimpleString and _names_host_time(a.value.value) for a in call.args
        )
    if type(parent) is cst.Assign and parent.value is node:
        targets = [t.target for t in parent.targets]
    elif isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.value is node:
        targets = [parent.target]
    else:
        return False
    return any(_names_host_time(_destination(t)) for t in targets)


#: The comparisons that test a delta against a budget.
_ORDERINGS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual)


def compared_to_a_budget(clock: cst.CSTNode, parents) -> bool:
    """Is the delta ending at ``clock`` only compared with a bound, where it is made (``while
    time.monotonic() - begin < seconds:``, ``if time.time() - t0 > timeout: raise ...``)? Then
    it is a deadline, a timeout or a throttle, not a measurement: it is never reported, and
    how late the GPU work runs does not change what the host asked of it. Only the expression
    holding the reading is followed, through arithmetic and parentheses."""
    node, parent = clock, parents.get(clock)
    while type(parent) is cst.BinaryOperation:
        node, parent = parent, parents.get(parent)
    if type(parent) is cst.ComparisonTarget:
        return type(parent.operator) in _ORDERINGS
    if type(parent) is cst.Comparison and parent.left is node:
        return len(parent.comparisons) == 1 and type(parent.comparisons[0].operator) in _ORDERINGS
    return False


def _destination(target: cst.BaseExpression) -> str:
    """The words naming an assignment target: a dotted name, or a subscript's string key."""
    if type(target) is cst.Subscript:
        keys = [
            e.slice.value.value
            for e in target.slice
            if type(e.slice) is cst.Index and type(e.slice.value) is cst.SimpleString
        ]
        return " ".join([dotted(target.value) or "", *keys])
    return dotted(target) or ""


class Subtractions(cst.CSTVisitor):
    """The names a scope subtracts from (``t1`` in ``t1 - t0``) and the names it subtracts
    (``t0``): a reading bound to a name that is only ever subtracted starts an interval, so
    pairing it with the reading before (the end of the previous interval, as in ``fwd_end`` then
    ``bwd_start``) measures nothing anybody computes."""

    def __init__(self) -> None:
        self.minuends: set[str] = set()
        self.subtrahends: set[str] = set()
        #: ``t1`` -> ``t0`` for the first ``t1 - t0`` (names, or dotted attributes on the right).
        self.subtracted_from: dict[str, str] = {}
        #: Every name read somewhere in the scope (not only assigned), nested scopes included.
        self.read: set[str] = set()
        self._targets: set[int] = set()
        #: The scope walked (set by :meth:`of`), and per name the liveness of its bindings there.
        self.scope: cst.CSTNode | None = None
        self._liveness: dict[str, dict | None] = {}
        self._stamps: dict[str, bool] = {}

    @classmethod
    def of(cls, scope: cst.CSTNode) -> "Subtractions":
        found = cls()
        walk(scope, found)
        found.scope = scope
        return found

    def a_stamp_of_the_class(self, clock: cst.CSTNode, bound: str | None, parents) -> bool:
        """Is the reading bound to an attribute (``self.feedback_time = time.time()``) that its
        class only ever subtracts (``time.time() - self.feedback_time > 1.0`` in a callback), or
        never reads at all? A freshness stamp: it starts intervals that other methods end, and
        ends none here. (One walk of the class per attribute.)"""
        if bound is None or not bound.startswith("self.") or bound.count(".") != 1:
            return False
        if bound not in self._stamps:
            node = parents.get(clock)
            while node is not None and type(node) is not cst.ClassDef:
                node = parents.get(node)
            uses = _UsesOf(bound)
            if node is not None:
                walk(node, uses)
            never_read = uses.mentions == uses.assigned
            self._stamps[bound] = (
                node is not None and (uses.subtracted or never_read) and not uses.subtracted_from
            )
        return self._stamps[bound]

    def dead_binding(self, clock: cst.CSTNode, name: str | None, parents) -> bool:
        """Is the reading at ``clock`` bound to a local ``name`` that is bound again before anything
        reads it (a warm-up loop's ``t1 = time.time()``, where the timed loop rebinds ``t1`` before
        ``t1 - t0``)? :mod:`synclint.rules._liveness` answers per binding."""
        if name is None or "." in name or self.scope is None:
            return False
        assign = parents.get(clock)
        if type(assign) is cst.IfExp:
            assign = parents.get(assign)
        if type(assign) is not cst.Assign:
            return False
        if name not in self._liveness:
            self._liveness[name] = live_after_each(self.scope, name)
        live = self._liveness[name]
        return live is not None and live.get(id(assign)) is False

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if type(node.operator) is cst.Subtract:
            if type(node.left) is cst.Name:
                self.minuends.add(node.left.value)
                right = dotted(node.right)
                if right is not None:
                    self.subtracted_from.setdefault(node.left.value, right)
            if type(node.right) is cst.Name:
                self.subtrahends.add(node.right.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if type(node.operator) is cst.SubtractAssign and type(node.value) is cst.Name:
            self.subtrahends.add(node.value.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if type(node.target) is cst.Name:
            self._targets.add(id(node.target))

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._targets:
            self.read.add(node.value)

    def only_subtracted(self, name: str | None) -> bool:
        return name is not None and name in self.subtrahends and name not in self.minuends

    def never_read(self, name: str | None) -> bool:
        """Is ``name`` a plain name the scope assigns and never reads?"""
        return name is not None and "." not in name and name not in self.read
