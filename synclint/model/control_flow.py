"""Control flow for the interpreter: branches, loops, ``with`` blocks, ``try`` and ``match``.

Why a module of its own: the interpreter walks statements in program order, and most of what makes
its answers right on real code is decided where paths split and meet. An ``if`` runs each arm from
a copy of the state and joins them (:func:`synclint.model.state.join`), except where only one arm
can run (a constant switch), where an arm runs only without a device (``torch.cuda.is_available()``
and the program's other tests for the GPU), where the test is a configuration switch whose arms
keep their own waits, or where the test asks whether an optional stream or handle is set; a loop
body is walked twice, so that what one iteration leaves running meets the next; a ``with`` block
enters a stream or a ``@contextmanager`` helper and leaves it. :class:`ControlFlow` is a mixin of
:class:`~synclint.model.interpreter.Interpreter` and uses its state and helpers; the statement
dispatch (``st_<Node>``) finds these methods there like any other.
"""

from __future__ import annotations

from typing import Callable, Optional

import libcst as cst

from synclint.cstwalk import names_in, walk
from synclint.model import api
from synclint.model.call_args import chooses_the_gpu, compares_a_written_device_to_cuda
from synclint.model.bindings import Scope
from synclint.model.context_managers import enter as enter_context_manager
from synclint.model.device_arms import nones_only_without_a_device
from synclint.model.resolver import dotted, is_self_attribute, target_names, tested_set, without_not
from synclint.model.state import State, join, vc_join
from synclint.model.switch_split import assumed_value
from synclint.model.timeline import OpKind
from synclint.model.values import (
    HOST,
    Alternatives,
    EventValue,
    Storage,
    StreamValue,
    TupleValue,
    WorkValue,
    holds,
    holds_work,
)


class ForLoop:
    """An enclosing ``for`` loop, as the walk of its body knows it."""

    __slots__ = ("node_id", "variables", "walked", "varying", "pass_start")

    def __init__(self, node_id: int, variables: frozenset) -> None:
        self.node_id = node_id
        #: The names its target binds (``i`` in ``for i in range(n)``).
        self.variables = variables
        #: The pass of the body walked now (0, then 1: :meth:`ControlFlow.loop` walks it twice).
        self.walked = -1
        #: Names bound in the body from the variables, or stepped in it, so that they take another
        #: value each pass too (:meth:`ControlFlow.varies_by_iteration`).
        self.varying: set[str] = set()
        #: How many ops the function had when this pass began
        #: (``ExpressionEvaluator._previous_pass_element``).
        self.pass_start = 0

    def names(self) -> set[str]:
        """Its variables and the names that vary with them."""
        return self.variables | self.varying


def _compares_setup(
    test: cst.BaseExpression, setup: Callable[[cst.BaseExpression], bool]
) -> bool:
    """Is ``test`` a part of the object's set-up (``setup`` says which), or a comparison of such
    parts with constants and names (``self.workers > 1``)?"""
    parts = [test]
    if type(test) is cst.Comparison:
        parts = [test.left, *(c.comparator for c in test.comparisons)]
    return any(setup(p) for p in parts) and all(
        setup(p) or isinstance(p, (cst.Integer, cst.Float, cst.SimpleString, cst.Name))
        for p in parts
    )


def _configuration(node: cst.BaseExpression) -> bool:
    """``self.overlap``, or an attribute of one (``self.dev.type``): the object's set-up."""
    while type(node) is cst.Attribute and not is_self_attribute(node):
        node = node.value
    return is_self_attribute(node)


def _optional_tested(stmt: cst.If) -> Optional[str]:
    """The name ``stmt`` tests for being set (``if s is not None:`` / ``if s:``), with no
    ``else``: the key of the stream it would be, or None."""
    return tested_set(stmt.test) if stmt.orelse is None else None


def _waits_in(body: cst.BaseSuite) -> list[Optional[str]]:
    """For each statement of ``body`` itself, in order: the receiver of ``<receiver>.wait()`` when
    that is the whole statement (``handle.wait()``), or the event of ``<stream>.wait_event(e)``,
    else None (any other statement, or a compound one)."""
    lines = body.body if type(body) is cst.IndentedBlock else (body,)
    receivers: list[Optional[str]] = []
    for line in lines:
        if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            receivers.append(None)
            continue
        for small in line.body:
            call = small.value if type(small) is cst.Expr else None
            method = (
                call.func.attr.value
                if type(call) is cst.Call and type(call.func) is cst.Attribute
                else None
            )
            if method == "wait":
                receivers.append(dotted(call.func.value))
            elif method == "wait_event" and len(call.args) == 1:
                receivers.append(dotted(call.args[0].value))
            else:
                receivers.append(None)
    return receivers


def _waited_names(body: cst.BaseSuite) -> list[str]:
    """The plain names ``body`` calls ``.wait()`` on in its own statements (``handle.wait()``)."""
    return [r for r in _waits_in(body) if r is not None and "." not in r]


def _only_waits_on(body: cst.BaseSuite, name: str) -> bool:
    """Is ``body`` nothing but ``name.wait()`` calls (or waits of streams on ``name``)?"""
    return all(receiver == name for receiver in _waits_in(body))


def _enumerated(stmt: cst.For):
    """(counter, element target, the sequence) of ``for i, t in enumerate(xs):``, else None."""
    call, target = stmt.iter, stmt.target
    if not (
        type(call) is cst.Call
        and type(call.func) is cst.Name
        and call.func.value == "enumerate"
        and len(call.args) == 1
        and call.args[0].keyword is None
        and not call.args[0].star
        and isinstance(target, (cst.Tuple, cst.List))
        and len(target.elements) == 2
        and not any(type(e) is cst.StarredElement for e in target.elements)
    ):
        return None
    return target.elements[0].value, target.elements[1].value, call.args[0].value


def _counter_of(stmt: cst.For) -> Optional[tuple[str, int]]:
    """(name, first value) of the counter of ``for i in range(n)``, ``range(a, n)`` and
    ``range(a, n, k)`` with literal ``a`` and ``k > 0``, or ``for i, x in enumerate(xs)``; else
    None. From its second iteration on such a counter is past its first value."""
    enumerated = _enumerated(stmt)
    if enumerated is not None:
        return (enumerated[0].value, 0) if type(enumerated[0]) is cst.Name else None
    call = stmt.iter
    if not (
        type(stmt.target) is cst.Name
        and type(call) is cst.Call
        and type(call.func) is cst.Name
        and call.func.value == "range"
        and 1 <= len(call.args) <= 3
        and all(a.keyword is None and not a.star for a in call.args)
    ):
        return None
    args = [a.value for a in call.args]
    start = 0
    if len(args) >= 2:
        if type(args[0]) is not cst.Integer:
            return None
        start = int(args[0].evaluated_value)
    if len(args) == 3 and not (type(args[2]) is cst.Integer and int(args[2].evaluated_value) > 0):
        return None
    return stmt.target.value, start


class _Rebinds(cst.CSTVisitor):
    """Does a loop body bind ``name`` itself (``i += 1``, ``for i in ...``, ``(i := ...)``)?
    Then its value in a later iteration is not the loop's to say."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.found = False

    def _target(self, target) -> None:
        if self.name in target_names(target):
            self.found = True

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)


class _LeavesEarly(cst.CSTVisitor):
    """Can a loop body leave its pass early (``break``, ``continue``, ``return``, ``yield``)?"""

    def __init__(self) -> None:
        self.found = False

    def visit_Break(self, node: cst.Break) -> None:
        self.found = True

    def visit_Continue(self, node: cst.Continue) -> None:
        self.found = True

    def visit_Return(self, node: cst.Return) -> None:
        self.found = True

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True


class _Moduli(cst.CSTVisitor):
    """The texts ``K`` of every ``name % K`` in a loop body (a ring of ``K`` buffers or streams
    indexed by the loop's counter)."""

    def __init__(self, name: str, code: Callable[[cst.CSTNode], str]) -> None:
        self.name, self.code = name, code
        self.found: set[str] = set()

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if (
            type(node.operator) is cst.Modulo
            and type(node.left) is cst.Name
            and node.left.value == self.name
        ):
            self.found.add(self.code(node.right))


#: ``<counter> OP <literal>``: is it certainly true (True) or false (False) once the counter is past
#: its first value ``start``? By the literal ``v``, given ``counter >= start + 1``.
_PAST_START = {
    cst.GreaterThan: lambda v, start: True if v <= start else None,
    cst.GreaterThanEqual: lambda v, start: True if v <= start + 1 else None,
    cst.NotEqual: lambda v, start: True if v <= start else None,
    cst.Equal: lambda v, start: False if v <= start else None,
    cst.LessThan: lambda v, start: False if v <= start + 1 else None,
    cst.LessThanEqual: lambda v, start: False if v <= start else None,
}
#: The same comparison with its sides swapped (``0 < i`` is ``i > 0``).
_MIRRORED = {
    cst.GreaterThan: cst.LessThan,
    cst.LessThan: cst.GreaterThan,
    cst.GreaterThanEqual: cst.LessThanEqual,
    cst.LessThanEqual: cst.GreaterThanEqual,
    cst.Equal: cst.Equal,
    cst.NotEqual: cst.NotEqual,
}


class ControlFlow:
    """The interpreter's compound statements (see the module's docstring)."""

    def branch(self, *arms: Callable[[], None]) -> None:
        start = self.state
        result: Optional[State] = None
        for arm in arms:
            self.state = start.copy()
            arm()
            result = self.state if result is None else join(result, self.state)
        self.state = result if result is not None else start

    def flag_parameter(self, test: cst.BaseExpression) -> bool:
        """``if wait_current_stream:`` on a parameter with a boolean default: a configuration
        switch. Callers that turn it off take the ordering on themselves (Megatron's shared
        experts), so the guarded waits are kept at the join instead of being intersected away."""
        if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
            test = test.expression
        if type(test) is cst.Name:
            return test.value in self.flag_params
        # `if self.workers > 1:` / `if self.overlap:`: the object's configuration, fixed since
        # `__init__`; the other methods branch on it the same way.
        return _compares_setup(test, is_self_attribute)

    def configuration_test(self, test: cst.BaseExpression) -> bool:
        """A test of the object's set-up only, wider than :meth:`flag_parameter`: attributes of
        its attributes (``self.dev.type == "cuda"``) and such tests joined with ``and``/``or``
        (``self.use_streams and self.dev.type == "cuda"``). Its arms are only marked as the two
        sides of one switch (``Op.switches``: never paired as a race, nor a tensor made under one
        and used under the other); waits under it are joined as under any test (a
        synchronization under ``if self.enable_timing and ...:`` does not happen by default)."""
        test, _ = without_not(test)
        if type(test) is cst.BooleanOperation:
            return self.configuration_test(test.left) and self.configuration_test(test.right)
        return _compares_setup(test, _configuration)

    def constant_switch(self, test: cst.BaseExpression) -> Optional[bool]:
        """The value of an ``if`` test that is ``True`` or ``False`` written out, or a local name
        every binding of which in the scope is the same ``True`` or ``False`` (``side_stream =
        False`` ... ``if side_stream:``, a switch edited by hand), or ``not`` either; None
        otherwise."""
        test, negated = without_not(test)
        if type(test) is cst.Name and test.value in ("True", "False"):
            return (test.value == "True") != negated  # `if True:`, a block kept by hand
        if type(test) is not cst.Name or test.value not in self.bool_switches:
            return None
        values = self.local_bindings(test.value)
        if values is None or not all(type(v) is cst.Name for v in values):
            return None
        constants = {v.value for v in values}
        if constants not in ({"True"}, {"False"}):
            return None
        return (constants == {"True"}) != negated

    def tensor_type_test(self, test: cst.BaseExpression) -> Optional[bool]:
        """``isinstance(ids, torch.Tensor)`` (or ``torch.is_tensor(ids)``, or ``not`` either) where
        ``ids`` is known to be a tensor on the GPU (``scores.argmax(-1)`` of a CUDA tensor, handed to
        a helper that accepts a list too): the test is true. None otherwise: a parameter may be
        anything, and a value used only in arithmetic and indexing may be a NumPy array. And
        ``isinstance(loss, float)`` (``int``, ``bool``, ``str``) where ``loss`` is a tensor the
        function made (or an array: neither is a number): false."""
        test, negated = without_not(test)
        if type(test) is not cst.Call or not test.args:
            return None
        name = self.exprs.callee_name(test.func)
        host_type = False
        if name == "isinstance" and len(test.args) == 2:
            kind = test.args[1].value
            host_type = type(kind) is cst.Name and kind.value in api.PYTHON_SCALARS
            if not host_type and self.exprs.callee_name(kind) != "torch.Tensor":
                return None
        elif name != "torch.is_tensor" or len(test.args) != 1:
            return None
        value = self.state.env.get(test.args[0].value.value) if type(test.args[0].value) is cst.Name else None
        if not (isinstance(value, Storage) and value.tensor):
            return None
        if host_type:
            # `isinstance(loss, float)` on a tensor made here (or an array): false.
            return negated if value.root.origin == "local" else None
        if value.root.device != "cuda":
            return None
        return not negated

    def counter_guard(self, test: cst.BaseExpression) -> Optional[bool]:
        """The value of a test of an enclosing loop's counter in the body's second pass, which
        stands for the iterations after the first: ``if i > 0:`` (``i >= 1``, ``i != 0``, ``if
        i:``) is true there, ``if i == 0:`` false. So is ``if i >= K:`` where the body indexes a
        ring by ``i % K``: while ``i < K`` each element of the ring is used for the first time, so
        the warm-up iterations have nothing of an earlier one to wait for (flashpack refills
        pinned buffer ``i % K`` after synchronizing stream ``i % K``, from the ``K``-th chunk on).
        None when the test is anything else, or in the first pass."""
        test, negated = without_not(test)
        if type(test) is cst.Name:
            left, operator, right = test, cst.NotEqual, cst.Integer("0")
        elif type(test) is cst.Comparison and len(test.comparisons) == 1:
            left, operator, right = test.left, type(test.comparisons[0].operator), test.comparisons[0].comparator
            if type(left) is not cst.Name and type(right) is cst.Name:
                left, right, operator = right, left, _MIRRORED.get(operator)
        else:
            return None
        if type(left) is not cst.Name or operator not in _PAST_START:
            return None
        for stmt, (name, start), walked, learnt in reversed(self.counted_loops):
            if name != left.value:
                continue
            if walked.walked < 1 or self._rebinds(stmt, name, learnt):
                return None
            if type(right) is cst.Integer:
                value = _PAST_START[operator](int(right.evaluated_value), start)
            elif operator in (cst.GreaterThanEqual, cst.LessThan) and self._ring_size(stmt, name, learnt, right):
                value = operator is cst.GreaterThanEqual
            else:
                return None
            return None if value is None else value != negated
        return None

    @staticmethod
    def _rebinds(stmt: cst.For, name: str, learnt: dict) -> bool:
        if "rebinds" not in learnt:
            visitor = _Rebinds(name)
            walk(stmt.body, visitor)
            learnt["rebinds"] = visitor.found
        return learnt["rebinds"]

    def _ring_size(self, stmt: cst.For, name: str, learnt: dict, bound: cst.BaseExpression) -> bool:
        """Does the loop body index something by ``counter % bound`` (the same text)?"""
        if "moduli" not in learnt:
            visitor = _Moduli(name, self.model_code)
            walk(stmt.body, visitor)
            learnt["moduli"] = visitor.found
        return self.model_code(bound) in learnt["moduli"]

    def st_If(self, stmt: cst.If) -> None:
        """``if``/``elif``/``else`` as one n-way branch (iteratively: elif chains can be long).
        Each ``elif`` test is evaluated on the path where the earlier tests failed."""
        # The counter's test first: a pass split on `i == 0` (loop_split) stands for any pass,
        # the second pass of the walk for the passes after the first.
        switch = self.counter_guard(stmt.test) if self.counted_loops else None
        if switch is None and self.assumed:
            switch = assumed_value(stmt.test, self.assumed)
        if switch is None:
            switch = self.constant_switch(stmt.test)
        if switch is None:
            switch = self.tensor_type_test(stmt.test)
        if switch is not None:
            # Only one arm can run: the other is dead code, whatever it does.
            if switch:
                self.suite(stmt.body)
            elif type(stmt.orelse) is cst.If:
                self.st_If(stmt.orelse)
            elif stmt.orelse is not None:
                self.suite(stmt.orelse.body)
            return None
        flag_arms = self._flag_arms(stmt)
        if flag_arms is not None:
            return self._flag_branch(flag_arms)
        side = self._side_stream_tested(stmt)
        if side is not None:
            return self._optional_branch(stmt, side)
        # Before the test of an optional value: in `if recompute: work.wait()` the name tested
        # is a switch, and the handle waited on is what the branch is about (MindSpeed's
        # all-gather, started and waited under the same configuration flag).
        handle = self._conditional_handle_waited(stmt)
        if handle is not None:
            return self._optional_branch(stmt, handle, waited_on_every_path=True)
        if stmt.orelse is None and self._copy_source_on_the_device(stmt.test):
            self.exprs.condition(stmt.test)
            self.suite(stmt.body)
            return None
        optional = _optional_tested(stmt)
        if optional is not None and self._set_only_with_a_device(optional):
            # `event = torch.cuda.Event() if torch.cuda.is_available() else None` ... `if event:
            # event.synchronize()`: where the name is None there is no device, so no device
            # work is pending on that path, and what the arm does holds after it.
            self.exprs.condition(stmt.test)
            self.suite(stmt.body)
            return None
        if optional is not None:
            return self._optional_branch(stmt, optional)
        if stmt.orelse is None and self._device_present(stmt.test):
            # `if torch.cuda.is_initialized(): event.synchronize()`: where the test fails there is
            # no device work at all, so what the branch does (a synchronization) holds after it.
            self.exprs.condition(stmt.test)
            self.suite(stmt.body)
            return None
        start = self.state
        result: Optional[State] = None
        current: Optional[cst.CSTNode] = stmt
        # `if torch.cuda.is_available(): ... else: <CPU fallback>`: the other arms run only where
        # there is no device, so no device work is pending on them (their clocks cover it all).
        without_device = self._device_present(stmt.test)
        # `if self.use_streams and self.dev.type == "cuda": ... else: ...`: one switch's two sides.
        switch = (
            self._switch(stmt.test)
            if type(stmt.orelse) is cst.Else and self.configuration_test(stmt.test)
            else None
        )
        while True:
            if type(current) is cst.If:
                self.exprs.condition(current.test)
                failed_tests = self.state
                self.state = failed_tests.copy()
                self.guards.append(current.test)  # its text only if an `assert not` asks (costly)
                if without_device and current is not stmt:
                    self._nothing_on_the_device()  # what was issued before: vacuous here too
                try:
                    self._arm(current.body, switch)
                finally:
                    self.guards.pop()
                if without_device and current is not stmt:
                    self._nothing_on_the_device()
                result = self.state if result is None else join(result, self.state)
                self.state = failed_tests
                current = current.orelse
            else:
                if without_device:
                    self._nothing_on_the_device()  # what was issued before: vacuous here too
                if current is not None:
                    self._arm(current.body, switch and (switch[0], not switch[1]))
                if without_device:
                    self._nothing_on_the_device()
                result = join(result, self.state) if result is not None else self.state
                break
        self.state = result if result is not None else start

    def _side_stream_tested(self, stmt: cst.If) -> Optional[str]:
        """``if torch.cuda.current_stream() != s: s.wait_stream(torch.cuda.current_stream())``, or
        the test bound to a name first (Megatron's ``on_side_stream``), with no ``else``: the key
        of ``s``. Where the test fails, ``s`` is the current stream, so the block that then runs
        on ``s`` is ordered as if the wait had been made (:meth:`_optional_branch`)."""
        if stmt.orelse is not None:
            return None
        test = stmt.test
        if type(test) is cst.Name:
            test = self.stream_tests.get(test.value)
        if not (
            type(test) is cst.Comparison
            and len(test.comparisons) == 1
            and type(test.comparisons[0].operator) in (cst.NotEqual, cst.IsNot)
        ):
            return None
        left, right = test.left, test.comparisons[0].comparator
        for current, other in ((left, right), (right, left)):
            if isinstance(other, (cst.Name, cst.Attribute)) and self.exprs.is_current_stream_call(
                current
            ):
                stream = self.exprs.as_stream(other, self.exprs.ev(other))
                if stream is not None:
                    return stream.key
        return None

    def _copy_source_on_the_device(self, test: cst.BaseExpression) -> bool:
        """``if counts.is_cuda:`` (no ``else``) where ``counts`` is the source of a non-blocking
        copy made before: where the test fails the copy ran from host memory, synchronously, so
        nothing of it is pending on that path and the branch (``torch.cuda.synchronize()``) holds
        after it."""
        if not (type(test) is cst.Attribute and test.attr.value == "is_cuda" and type(test.value) is cst.Name):
            return False
        tested = self.state.env.get(test.value.value)
        if not isinstance(tested, Storage):
            return False
        root = tested.root
        return any(
            op.copy is not None and op.copy.non_blocking and op.copy.src is not None
            and op.copy.src.root is root
            for op in self.model.ops
        )

    def _nothing_on_the_device(self) -> None:
        """On a path where CUDA is unavailable nothing ran on a device: what the clocks say is
        pending there is vacuous. The host is taken to have seen it all, so that joining this
        path keeps the device path's facts (no synchronization op is emitted: none was written,
        and unlike :meth:`host_sees` nothing is marked as synchronized)."""
        self.state.host_vc = vc_join(self.state.host_vc, self._everything_issued())

    def _set_only_with_a_device(self, name: str) -> bool:
        """Is every binding of the local ``name`` in the scope ``X if <a device is present> else
        None`` (:meth:`_device_present`), or the same attribute of the object, which is set only
        with a device (``done = self.done``, :meth:`_made_only_with_a_device`)? Asked only of a
        name that holds something now (not ``None`` or a host value), so that most ``if x:``
        tests walk no scope."""
        held = self.state.env.get(name)
        if held is None or held is HOST or name in self._names_asked:
            return False  # (`t = Stream() if t else None`: asked again while asked)
        values = self.local_bindings(name)
        if values and all(is_self_attribute(v) for v in values):
            attributes = {v.attr.value for v in values}
            return len(attributes) == 1 and self._made_only_with_a_device(values[0])
        outer = self._names_asked
        self._names_asked = outer | {name}
        try:
            return self._each_made_with_a_device(values)
        finally:
            self._names_asked = outer

    def _each_made_with_a_device(self, values: Optional[list]) -> bool:
        """Is every value ``X if <a device is present> else None``?"""
        return bool(values) and all(
            type(v) is cst.IfExp
            and type(v.orelse) is cst.Name
            and v.orelse.value == "None"
            and self._device_present(v.test)
            for v in values
        )

    def _device_present(self, test: cst.BaseExpression) -> bool:
        """``torch.cuda.is_available()`` or ``torch.cuda.is_initialized()``, as an ``if`` test, or
        the program's choice of the GPU (``if args.use_cuda:``, ``if self.device.type == "cuda":``,
        :func:`~synclint.model.call_args.chooses_the_gpu`; ``if device == "cuda":`` in ``for
        device in ["cuda", "cpu"]:``, :func:`~synclint.model.call_args.compares_a_written_device_to_cuda`)."""
        if self._device_chosen(test) or compares_a_written_device_to_cuda(test, self.written_values):
            return True
        if type(test) is cst.Call:
            return False
        if type(test) is cst.BooleanOperation:
            # Where `a and b` fails, one of them failed: each must fail only without a device.
            # Where `a or b` fails, both failed: one of them failing so is enough.
            parts = (self._device_present(test.left), self._device_present(test.right))
            return all(parts) if type(test.operator) is cst.And else any(parts)
        name = tested_set(test)
        if name is not None and "." not in name:
            return self._set_only_with_a_device(name)  # `if done:`, `done = self.done`
        if type(test) is cst.Comparison and name is not None:
            test = test.left  # `if self.stream is not None:`
        return self._made_only_with_a_device(test)

    def _made_only_with_a_device(self, test: cst.BaseExpression) -> bool:
        """``if self.stream:`` where ``__init__`` sets the attribute only to ``X if <a device is
        present> else None`` (``torch.cuda.Stream() if checker.cudaAvailable else None``), or to
        a stream or event it makes and to ``None`` only in the arms of its tests that run without
        a device (``if self.device.type == "cuda": self.done = torch.cuda.Event() else:
        self.done = None``, :func:`~synclint.model.device_arms.nones_only_without_a_device`): where
        it is None there is no device. (A stream or an event is never false.) Two such streams
        are then present or absent together, which a join of the branches of the first ``if``
        cannot say on its own."""
        if not is_self_attribute(test):
            return False
        key = f"self.{test.attr.value}"
        held = self.state.env.get(key)
        if held is None or held is HOST:
            return False
        init = (self.class_methods or {}).get("__init__")
        if init is None:
            return False
        if self._init_scope is None or self._init_scope.node is not init:
            self._init_scope = Scope(init, "self")
            self._init_nones = nones_only_without_a_device(init, self._device_chosen)
        values = self._init_scope.bindings.get(key)
        if not values:
            return False
        made = [v for v in values if not (type(v) is cst.Name and v.value == "None")]
        if len(made) < len(values) and not self._init_nones.get(key, False):
            return False
        if all(type(v) is cst.Call for v in made):
            held_values = held.values if isinstance(held, Alternatives) else (held,)
            return all(
                v is HOST or (type(v) in (StreamValue, EventValue) and v.origin in ("created", "default"))
                for v in held_values
            )
        return len(made) == len(values) and self._each_made_with_a_device(made)

    def _device_chosen(self, test: cst.BaseExpression) -> bool:
        """``torch.cuda.is_available()`` (``api.DEVICE_PRESENT``) or the program's choice of the GPU
        (:func:`~synclint.model.call_args.chooses_the_gpu`): what :meth:`_device_present` knows
        without the names of the method interpreted now (so, also of a test of ``__init__``)."""
        if type(test) is cst.Call:
            return self.resolver.qualify(test.func) in api.DEVICE_PRESENT
        return chooses_the_gpu(test)

    #: The value a test is assumed to have in this walk: a parameter's predicate -> bool
    #: (``switch_split``), and ``("loop", id(for statement))`` -> the two sides a pass of that
    #: loop is walked with (``loop_split``). None in a function's ordinary walk.
    assumed: Optional[dict] = None
    #: Walking one side of a split pass: loops inside are not split again.
    splitting_a_loop = False
    _init_scope: Optional[Scope] = None
    _init_nones: Optional[dict] = None
    #: The local names :meth:`_set_only_with_a_device` is being asked about (a binding's test may
    #: test the name itself).
    _names_asked: frozenset = frozenset()

    def _flag_arms(self, stmt: cst.If) -> Optional[list]:
        """The arms of an ``if``/``elif``/``else`` whose every test is a configuration switch
        (:meth:`flag_parameter`; timm's ``if self.is_cuda: ... elif self.is_npu: ...``): each
        ``(test, body)``, then ``(None, else body or None)``. None when a test is not a switch."""
        arms: list = []
        current: Optional[cst.CSTNode] = stmt
        while type(current) is cst.If:
            if not self.flag_parameter(current.test):
                return None
            arms.append((current.test, current.body))
            current = current.orelse
        arms.append((None, current.body if current is not None else None))
        return arms

    def _flag_branch(self, arms: list) -> None:
        """Configuration switches: the arms are alternative set-ups, each self-consistent, so what
        any arm ordered holds after the join (see :meth:`flag_parameter`)."""
        start = self.state
        ends = []
        # `if self.stream: <on the stream> else: <without>`, the stream made only with a device:
        # the other arms run where there is none (as after `if torch.cuda.is_available():`).
        without_device = arms[0][0] is not None and self._made_only_with_a_device(arms[0][0])
        switch, polarity = self._switch(arms[0][0])
        for index, (test, body) in enumerate(arms):
            # Each test is evaluated where the tests before it failed; its arm starts there.
            if test is not None:
                self.exprs.condition(test)
            failed_tests = self.state
            self.state = failed_tests.copy()
            if without_device and index:
                self._nothing_on_the_device()
            if body is not None:
                self._arm(body, (switch, polarity == (index == 0)))
            if without_device and index:
                self._nothing_on_the_device()
            ends.append(self.state)
            self.state = failed_tests
        result = ends[0]
        for end in ends[1:]:
            result = join(result, end)
        for index, one in enumerate(ends):
            if one.dead:
                continue
            others = ends[:index] + ends[index + 1:]
            for key, vc in one.vc.items():
                result.vc[key] = vc_join(result.vc.get(key, {}), vc)
            if not (without_device and index):
                # (what the host "saw" on an arm without a device was vacuous, not a sync)
                result.host_vc = vc_join(result.host_vc, one.host_vc)
            # `if overlap: self.done.record()` ... `if overlap: ...; self.done.wait()`: an event
            # recorded on one arm only is waited, if at all, under the same switch.
            for key, event in one.events.items():
                before = start.events.get(key)
                unrecorded = before.recorded_by if before is not None else ()
                if event.recorded_by != unrecorded and all(
                    other.dead or other.events.get(key) is None
                    or other.events[key].recorded_by == unrecorded
                    for other in others
                ):
                    result.events[key] = event
        self.state = result

    def _arm(self, body: cst.BaseSuite, side: Optional[tuple]) -> None:
        """Walk one arm of an ``if``; ``side``: the switch and the side of it the arm is (see
        ``Op.switches``), or None for a test that is no switch."""
        if side is None:
            self.suite(body)
            return
        outer = self.switches
        self.switches = outer + (side,)
        try:
            self.suite(body)
        finally:
            self.switches = outer

    def _switch(self, test: cst.BaseExpression) -> tuple:
        """A switch's code without ``not`` (a name or attribute as written, without asking for the
        node's code), and whether its first arm runs where it is true."""
        test, negated = without_not(test)
        return dotted(test) or self.model_code(test), not negated

    def _conditional_handle_waited(self, stmt: cst.If) -> Optional[str]:
        """``if self.training and dist.is_initialized(): handle.wait()``, no ``else``, where the
        local ``handle`` holds only ``Work`` started under an ``if`` (VAR's quantizer), or only
        an event made under one (sglang's DeepSeek MoE: ``shared_event =
        self.alt_stream.record_event()`` when there is an alternate stream, then
        ``torch.cuda.current_stream().wait_event(shared_event)`` under the same tests written
        as one): the name of the handle, or None.

        The handle exists only where its ``if`` was taken, so code that waits on it under another
        test must mean the same condition (where the two differ it would fail on an unbound name
        or a stale handle): the wait is taken to cover every path the work was started on."""
        if stmt.orelse is not None:
            return None
        for name in _waited_names(stmt.body):
            value = self.state.env.get(name)
            values = value.values if isinstance(value, Alternatives) else (value,)
            handles = [v for v in values if isinstance(v, (WorkValue, EventValue))]
            if (
                handles
                and len(handles) == len(values)
                and all(h.conditional and (isinstance(h, WorkValue) or h.origin == "created")
                        for h in handles)
            ):
                return name
        return None

    def _optional_branch(self, stmt: cst.If, key: str, waited_on_every_path: bool = False) -> None:
        """``if s is not None: s.wait_stream(current)`` (no ``else``), then ``with stream(s):``.

        Where ``s`` is None, ``torch.cuda.stream(None)`` changes nothing: the block runs on the
        current stream, ordered as if the wait had been made. So what the guarded arm made ``s``
        wait for holds after the join; every other clock is joined as usual.
        ``waited_on_every_path``: see :meth:`_conditional_handle_waited`."""
        self.exprs.condition(stmt.test)
        start = self.state
        self.state = start.copy()
        self.guards.append(stmt.test)
        try:
            self.suite(stmt.body)
        finally:
            self.guards.pop()
        taken = self.state
        result = join(taken, start)
        # The stream's own key: `self.s` for an attribute, `s@3` for a local made at site 3.
        tested = self.exprs.as_stream(None, start.env.get(key))
        own = tested.key if tested is not None else key
        if not taken.dead and own in taken.vc:
            result.vc[own] = vc_join(result.vc.get(own, {}), taken.vc[own])
        handle = start.env.get(key)
        if not taken.dead and (
            (holds_work(handle) and (waited_on_every_path or _only_waits_on(stmt.body, key)))
            or (waited_on_every_path and holds(handle, EventValue))
        ):
            # `if recv_req is not None: recv_req.wait()`: where the handle is None, no work was
            # issued through it, so what waiting on it orders holds on both paths. (Not so for
            # an optional event: where it is None, the stream may have run work all the same.)
            for stream_key, vc in taken.vc.items():
                result.vc[stream_key] = vc_join(result.vc.get(stream_key, {}), vc)
        if not taken.dead and tested is not None and own != start.current.key:
            # `if s is not None: torch.cuda.current_stream().wait_stream(s)`: where `s` is None, no
            # work was ever issued on it, so what the arm learnt about `s` holds on both paths.
            for stream_key, vc in taken.vc.items():
                if vc.get(own, 0) > result.vc.get(stream_key, {}).get(own, 0):
                    result.vc[stream_key] = {**result.vc.get(stream_key, {}), own: vc[own]}
            if taken.host_vc.get(own, 0) > result.host_vc.get(own, 0):
                result.host_vc = {**result.host_vc, own: taken.host_vc[own]}
        self.state = result

    def iterates_callers_values(self, iterable: cst.BaseExpression) -> bool:
        """Does a loop or comprehension go over a parameter's or an attribute's elements
        (``tensors``, ``enumerate(tensors)``, ``self.send_ops``, ``losses.items()``)?"""
        sources = [iterable]
        if type(iterable) is cst.Call:
            sources += [a.value for a in iterable.args]
            func = iterable.func
            if type(func) is cst.Attribute and func.attr.value in ("items", "values") and not iterable.args:
                sources.append(func.value)
        return any(
            (type(n) is cst.Name and n.value in self.params) or is_self_attribute(n) for n in sources
        )

    def loop(self, body: Callable[[], None]) -> None:
        """Run a loop body twice so loop-carried hazards show; assume it runs at least once."""
        self.loop_depth += 1
        self.loop_starts.append(len(self.model.ops))
        outer_iteration = self.iteration
        body()
        after_first = self.state
        # Loops nested deeper than two levels are walked once: two passes per level would be
        # exponential in the nesting depth, and loop-carried hazards live in the inner loops.
        if not after_first.dead and self.loop_depth <= 2:
            # The second pass starts where the first ended; its end state stands for "the loop ran"
            # (joining with the first pass would pair its clocks with the second pass's accesses).
            self.state = after_first.copy()
            self.iteration = 1
            body()
            if self.state.dead:
                self.state = after_first
        self.iteration = outer_iteration
        self.loop_starts.pop()
        self.loop_depth -= 1

    def st_For(self, stmt: cst.For) -> None:
        iterable = self.exprs.ev(stmt.iter)
        if self._unrolled(stmt, iterable):
            return

        if self.iterates_callers_values(stmt.iter):
            # Elements of a parameter or of an attribute (`for t in tensors:`, `for op in
            # self.send_ops:`) were made before this call: the caller's values.
            self.param_elements.update(target_names(stmt.target))

        enumerated = _enumerated(stmt)
        loop = ForLoop(id(stmt), frozenset(target_names(stmt.target)))

        def body() -> None:
            loop.walked += 1
            loop.pass_start = len(self.model.ops)
            if enumerated is None:
                self.assign(stmt.target, self.exprs.element_of(iterable, stmt.target, stmt.iter), stmt)
            else:  # `for i, t in enumerate(xs)`: `t` is what `for t in xs` binds
                counter, target, source = enumerated
                self.assign(counter, HOST, stmt)
                self.assign(target, self.exprs.element_of(self.exprs.ev(source), target, source), stmt)
            sides = self.assumed.get(("loop", id(stmt))) if self.assumed else None
            if sides is None or self.splitting_a_loop:
                self.suite(stmt.body)
            else:
                self._split_pass(stmt.body, sides)

        counter = _counter_of(stmt)
        self.for_loops.append(loop)
        if counter is not None:
            self.counted_loops.append((stmt, counter, loop, {}))
        try:
            self.loop(body)
        finally:
            self.for_loops.pop()
            if counter is not None:
                self.counted_loops.pop()
        if stmt.orelse is not None:
            self.suite(stmt.orelse.body)

    def _split_pass(self, body: cst.BaseSuite, sides: tuple) -> None:
        """One pass of a loop body walked once per value of a test it asks twice
        (:mod:`~synclint.model.loop_split`), the two ends joined. Loops inside are not split
        again (two walks per level would be exponential in the nesting depth)."""
        start, outer = self.state, self.assumed
        ends = []
        self.splitting_a_loop = True
        try:
            for values in sides[:2]:
                self.state = start.copy()
                self.assumed = {**outer, **values}
                self.suite(body)
                ends.append(self.state)
        finally:
            self.assumed = outer
            self.splitting_a_loop = False
        self.state = join(ends[0], ends[1])

    def varies_by_iteration(
        self, targets: list[cst.BaseExpression], value: Optional[cst.BaseExpression]
    ) -> None:
        """Names bound in a ``for`` body from the loop's variables (``lo, hi = i * step, (i + 1)
        * step``), or stepped in it (``offset += n``; ``value`` None), take another value each
        pass, like the variables: a slice bounded by them (``out[:, lo:hi]``) is another region
        of the buffer in each pass (:meth:`Interpreter._other_iterations`), as ``out[:, i * step:(i
        + 1) * step]`` is."""
        names = {n for t in targets for n in target_names(t)}
        if not names:
            return
        if value is None:
            self.for_loops[-1].varying |= names
            return
        words = names_in(value)
        for loop in self.for_loops:
            if loop.names() & words:
                loop.varying |= names

    def _unrolled(self, stmt: cst.For, iterable) -> bool:
        """``for ev in (done_a, done_b): side.wait_event(ev)``: a loop over a literal tuple or
        list of two to four events or streams runs its body once with each, in order; walked so,
        every one is waited for (a generic loop binds one element for all). Not where the body
        can leave early (``break``, ``continue``, ``return``)."""
        if not (
            type(stmt.target) is cst.Name
            and type(stmt.iter) in (cst.Tuple, cst.List)
            and isinstance(iterable, TupleValue)
            and 2 <= len(iterable.items) <= 4
            and all(isinstance(v, (EventValue, StreamValue)) for v in iterable.items)
            and stmt.orelse is None
        ):
            return False
        leaves = _LeavesEarly()
        walk(stmt.body, leaves)
        if leaves.found:
            return False
        for item in iterable.items:
            if self.state.dead:
                break
            self.assign(stmt.target, item, stmt)
            self.suite(stmt.body)
        return True

    def st_While(self, stmt: cst.While) -> None:
        if self.exprs.query_poll(stmt.test):
            return  # `while not e.query(): ...` is a host synchronization on e
        self.exprs.condition(stmt.test)

        def body() -> None:
            self.suite(stmt.body)
            self.exprs.condition(stmt.test)

        self.loop(body)
        if stmt.orelse is not None:
            self.suite(stmt.orelse.body)

    def st_With(self, stmt: cst.With) -> None:
        opened = self.open_with(stmt)
        self.suite(stmt.body)
        self.close_with(opened)

    def open_with(self, stmt: cst.With) -> list:
        """Enter the contexts of ``stmt``'s items; return what :meth:`close_with` needs to leave
        them: the stream current before, how many block streams and graph captures were begun,
        and the exits of ``@contextmanager`` helpers walked on entry."""
        saved_current = self.state.current
        pushed = 0
        graph = 0
        exits = []
        for item in stmt.items:
            leave = enter_context_manager(self, item.item) if self.context_managers or self.class_methods else None
            if leave is not None:
                exits.append(leave)
                if item.asname is not None:
                    self.assign(item.asname.name, None, stmt)
                continue
            hint = dotted(item.asname.name) if item.asname is not None else None
            kind, value = self.exprs.context(item.item, hint)
            if kind in ("stream", "stream-itself") and isinstance(value, StreamValue):
                self.state.current = value
                self.block_streams.append(value)
                pushed += 1
            elif kind == "graph":
                self.emit(OpKind.GRAPH_CAPTURE, item.item)
                self.graph_depth += 1
                graph += 1
            if item.asname is not None and kind not in ("stream", "graph"):
                # `with torch.Stream(0) as s0:` binds the stream, whose `__enter__` returns it;
                # `torch.cuda.stream(s)`'s context returns nothing.
                self.assign(item.asname.name, value, stmt)
        return [saved_current, pushed, graph, exits]

    def close_with(self, opened: list, restore: bool = True) -> None:
        """Leave what :meth:`open_with` entered (once: a second call does nothing). ``restore=False``
        only closes the blocks, for a path that ended inside them."""
        if not opened:
            return
        saved_current, pushed, graph, exits = opened
        opened.clear()
        if restore:
            for leave in reversed(exits):
                leave()
        for _ in range(pushed):
            self.block_streams.pop()
        self.graph_depth -= graph
        if restore and not self.state.dead:
            self.state.current = saved_current

    def st_WithEntry(self, entry) -> None:
        """A ``@contextmanager`` helper's ``with`` around its ``yield``, on entry: its contexts
        stay open over the caller's block (:mod:`.context_managers`)."""
        entry.opened[:] = self.open_with(entry.stmt)

    def st_WithExit(self, exit_) -> None:
        self.close_with(exit_.entry.opened)

    def st_Try(self, stmt: cst.Try) -> None:
        start = self.state.copy()
        self.suite(stmt.body)
        if stmt.orelse is not None:
            self.suite(stmt.orelse.body)
        after_body = self.state
        result = after_body
        for handler in stmt.handlers:
            self.state = join(start, after_body)
            self.state.dead = False
            self.suite(handler.body)
            result = join(result, self.state)
        self.state = result
        if stmt.finalbody is not None:
            was_dead = self.state.dead
            self.state.dead = False
            self.suite(stmt.finalbody.body)
            self.state.dead = self.state.dead or was_dead

    st_TryStar = st_Try

    def st_Match(self, stmt) -> None:
        self.exprs.ev(stmt.subject)
        arms = [lambda case=case: self.suite(case.body) for case in stmt.cases]
        self.branch(*arms, lambda: None)
