"""Walking a loop body once per value of a test it asks more than once in each pass.

Why: MixtralKit's decode loop binds ``nxt = self.layers[i + 1] if i + 1 < n else None`` two or
three times in a pass and later asks ``if nxt is not None:`` of each. The first such arm rebinds
``h_store`` on the side stream; the second reads it there. One walk joins the first ``if``'s arms
and takes the second's arm from the joined state, so it keeps a path that skipped the rebinding and
still made the read (``h_store`` as made on the default stream): no pass can take it, since
``i + 1 < n`` has one value for the whole pass.

:mod:`~synclint.model.switch_split` walks a whole function once per value of a *parameter*; a test
of the loop's variables changes from pass to pass, so here each pass's body is walked once with the
test assumed true and once assumed false, and the two end states are joined: paths that mix the
values across passes stay (pass ``k`` true, pass ``k + 1`` false), paths that mix them within a pass
go. Only in a second walk of a function whose first walk found a stream hazard, so the cost
stays where it pays; and that walk only removes hazards of the first that touch an ``if`` asking
the test (``scopes._split_passes``): walking a body twice per pass joins two copies of every value
it makes, which blurs what the rest of the function knows.

The test must keep its value through the pass: no name or attribute in it is bound in the body, and
it calls and indexes nothing. A name bound in the body by ``a if test else None`` (or ``None if
test else a``), on the pass's straight line (not under an ``if``, a loop or a ``try``) and before
any test of it, stands for the test: ``if nxt is not None:`` is ``if i + 1 < n:``.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from synclint.cstwalk import walk
from synclint.model.resolver import dotted, without_not
from synclint.model.switch_split import OwnScopeVisitor, asked_key

#: Node types a test that keeps its value through a pass may not contain.
_VARYING = (
    cst.Call, cst.Subscript, cst.NamedExpr, cst.Await, cst.Yield, cst.Lambda,
    cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp,
)


def loop_switches(function: cst.FunctionDef, taken: Optional[tuple] = None) -> dict:
    """``{("loop", id(for_statement)): (values if true, values if false, the ifs asking)}`` for
    the ``for`` loops of ``function`` (not in nested functions) whose body asks one loop-constant
    test twice or more; each ``values`` maps the keys
    :func:`~synclint.model.switch_split.assumed_value` asks (the test's, and those of the names
    that stand for it) to their values on that side. ``taken``: the key the whole function is
    split on, if any (not split again per pass)."""
    loops = _ForLoops()
    walk(function.body, loops)
    found = {}
    for loop in loops.found:
        sides = _switch_of(loop, taken)
        if sides is not None:
            found[("loop", id(loop))] = sides
    return found


def _switch_of(loop: cst.For, taken: Optional[tuple]) -> Optional[tuple[dict, dict, tuple]]:
    body = _Body()
    walk(loop.body, body)
    aliases = {}  # name -> (its position, the test's key, whether not-None means the test holds)
    for position, name, value in _straight_line_aliases(loop.body, body.positions):
        if body.bound.get(name) != 1:
            continue
        test = value.test
        if not _keeps_its_value(test, body):
            continue
        key, positive = asked_key(test)
        set_when_true = type(value.orelse) is cst.Name and value.orelse.value == "None"
        aliases[name] = (position, key, set_when_true == positive)
    asked = [(test, _asked(test, position, aliases, body)) for position, test in body.tests]
    if any(key is _SPOILT for _, key in asked):
        return None
    counts: dict[tuple, int] = {}
    for _, key in asked:
        if key is not None:
            counts[key] = counts.get(key, 0) + 1
    repeated = next((key for key, n in counts.items() if n >= 2 and key != taken), None)
    if repeated is None:
        return None
    sides = []
    for value in (True, False):
        values = {repeated: value}
        for name, (_, key, set_when_true) in aliases.items():
            if key == repeated:
                is_set = value == set_when_true
                values[("none", name)] = not is_set
                values[("truth", name)] = is_set
        sides.append(values)
    return sides[0], sides[1], tuple(body.ifs[id(t)] for t, key in asked if key == repeated)


_SPOILT = object()


def _asked(test, position, aliases, body: "_Body"):
    """The key a test asks (a name standing for a test gives the test's key), None for a test that
    may change its value within the pass (``if pending:`` of a list the body appends to), :data:`_SPOILT`
    for a test of a standing name made before the name is bound in the pass (it asks the previous
    pass's value)."""
    stripped, _ = without_not(test)
    name = None
    if type(stripped) is cst.Name:
        name = stripped.value
    elif (
        type(stripped) is cst.Comparison
        and len(stripped.comparisons) == 1
        and type(stripped.left) is cst.Name
        and type(stripped.comparisons[0].operator) in (cst.Is, cst.IsNot)
        and type(stripped.comparisons[0].comparator) is cst.Name
        and stripped.comparisons[0].comparator.value == "None"
    ):
        name = stripped.left.value
    if name in aliases:
        alias_position, key, _ = aliases[name]
        return key if alias_position < position else _SPOILT
    if not _keeps_its_value(test, body):
        return None
    return asked_key(test)[0]


def _keeps_its_value(test: cst.BaseExpression, body: "_Body") -> bool:
    """No part of ``test`` is bound in the body, or changed in place there (``-1 in cache`` of a
    list the body stores into), and it calls and indexes nothing."""
    words = _Words()
    walk(test, words)
    return (
        not words.varying
        and not any(w in body.bound for w in words.found)
        and not any(c in body.mutated for c in words.chains)
    )


def _straight_line_aliases(body: cst.BaseSuite, positions: dict):
    """(position, name, the conditional expression) of ``name = a if test else None`` statements
    that run in every pass that reaches them: in the body itself or in ``with`` blocks in it."""
    if not isinstance(body, cst.IndentedBlock):
        return
    for statement in body.body:
        if type(statement) is cst.With:
            yield from _straight_line_aliases(statement.body, positions)
        elif type(statement) is cst.SimpleStatementLine:
            for small in statement.body:
                if (
                    type(small) is cst.Assign
                    and len(small.targets) == 1
                    and type(small.targets[0].target) is cst.Name
                    and type(small.value) is cst.IfExp
                    and _one_side_none(small.value)
                ):
                    yield positions[id(small)], small.targets[0].target.value, small.value


def _one_side_none(value: cst.IfExp) -> bool:
    sides = [s for s in (value.body, value.orelse) if type(s) is cst.Name and s.value == "None"]
    return len(sides) == 1


class _ForLoops(OwnScopeVisitor):
    def __init__(self) -> None:
        self.found: list[cst.For] = []

    def visit_For(self, node: cst.For) -> None:
        self.found.append(node)


class _Body(cst.CSTVisitor):
    """A loop body's ``if`` tests and bound names and attributes (with how often each is bound),
    with the pre-order positions of tests and assignments, and what it may change in place (the
    receivers of method calls, what it stores into or deletes from by index)."""

    def __init__(self) -> None:
        self.tests: list[tuple[int, cst.BaseExpression]] = []
        self.bound: dict[str, int] = {}
        self.mutated: set[str] = set()
        self.ifs: dict[int, cst.If] = {}  # test -> its `if`
        self.positions: dict[int, int] = {}
        self._count = 0

    def _bind(self, target: cst.BaseExpression) -> None:
        kind = type(target)
        if kind in (cst.Tuple, cst.List):
            for element in target.elements:
                self._bind(element.value)
        elif kind is cst.StarredElement:
            self._bind(target.value)
        elif kind in (cst.Name, cst.Attribute):
            text = dotted(target)  # (only a dotted name can be one a test reads)
            if text is not None:
                self.bound[text] = self.bound.get(text, 0) + 1
        elif kind is cst.Subscript:
            self._changes(target.value)

    def _changes(self, receiver: cst.BaseExpression) -> None:
        """``receiver`` may be changed in place: only a dotted name can be one a test reads
        (:class:`_Words`' chains)."""
        text = dotted(receiver)
        if text is not None:
            self.mutated.add(text)

    def visit_Call(self, node: cst.Call) -> None:
        if type(node.func) is cst.Attribute:
            self._changes(node.func.value)

    def visit_Del(self, node: cst.Del) -> None:
        self._bind(node.target)

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._count += 1
        return super().on_visit(node)

    def visit_If(self, node: cst.If) -> None:
        self.tests.append((self._count, node.test))
        self.ifs[id(node.test)] = node

    def visit_Assign(self, node: cst.Assign) -> None:
        self.positions[id(node)] = self._count
        for target in node.targets:
            self._bind(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._bind(node.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self._bind(node.name)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self._bind(node.name)
        return False


class _Words(cst.CSTVisitor):
    """What a test reads: ``found``, its names and dotted attributes and their prefixes
    (``self``, ``self.n_layers``); ``chains``, the whole dotted names it compares or tests; and
    whether it holds anything that can take another value within a pass (a call, an index, an
    assignment expression)."""

    def __init__(self) -> None:
        self.found: set[str] = set()
        self.chains: set[str] = set()
        self.varying = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _VARYING):
            self.varying = True
            return False
        return super().on_visit(node)

    def visit_Name(self, node: cst.Name) -> None:
        self.found.add(node.value)
        self.chains.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        text = dotted(node)
        if text is None:
            return True
        self.chains.add(text)
        parts = text.split(".")
        self.found.update(".".join(parts[: n + 1]) for n in range(len(parts)))
        return False


def under_the_tests(loops: dict) -> set[int]:
    """The ids of every node inside the ``if`` statements the split tests ask (their tests, arms
    and ``elif`` chains): what a path mixing the test's values within a pass can reach."""
    inside = _Inside()
    for _, _, ifs in loops.values():
        for statement in ifs:
            walk(statement, inside)
    return inside.found


class _Inside(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: set[int] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.found.add(id(node))
        return True
