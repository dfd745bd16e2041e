"""Is a local name's value read before the name is bound again? Asked of one binding, not of the
name.

Why: a benchmark's warm-up loop often copies the timed loop's clock readings (``t1 =
time.time()``) and never uses them; the timed loop binds ``t1`` again before it computes ``t1 -
t0``. A rule that asks whether the *name* is read anywhere pairs the warm-up's leftover reading
with its start and reports an interval nobody measures. A backward liveness pass over the
scope's statements, for that one name, answers for the binding instead.

Conservative where it must guess: a name a nested function or ``global``/``nonlocal`` shares is
always live, as is any name after a ``raise``; ``with ... as`` and ``except ... as`` are not
taken to rebind it.
"""

from __future__ import annotations

from typing import Optional, Sequence

import libcst as cst

from synclint.cstwalk import walk
from synclint.model.bindings import Scope
from synclint.model.resolver import target_names


def live_after_each(scope: cst.CSTNode, name: str) -> Optional[dict[int, bool]]:
    """For each small statement of ``scope`` (ids; not those of nested functions): may ``name``
    be read after it before it is bound again? None when the name is shared with other code
    (a closure, ``global``, ``nonlocal``): then any binding may be read."""
    if _shared(scope, name):
        return None
    body = scope.body.body if type(scope) is cst.FunctionDef and type(scope.body) is cst.IndentedBlock else (
        scope.body if type(scope) is cst.Module else None
    )
    if body is None:
        return None
    liveness = _Liveness(name)
    liveness.block(body, False, (True, True))
    return liveness.out


class _Liveness:
    def __init__(self, name: str) -> None:
        self.name = name
        self.out: dict[int, bool] = {}
        #: Inside a ``try`` whose handlers may read the name: live after every statement.
        self.raising = False

    def reads(self, node: Optional[cst.CSTNode]) -> bool:
        if node is None:
            return False
        finder = _NameFinder(self.name)
        walk(node, finder)
        return finder.found

    def block(self, body: Sequence[cst.CSTNode], live: bool, loop: tuple[bool, bool]) -> bool:
        """Live-in of a statement list, given live-out ``live``; ``loop``: the liveness where a
        ``break`` and a ``continue`` of the innermost loop go."""
        for stmt in reversed(body):
            live = self.statement(stmt, live, loop)
        return live

    def suite(self, suite: cst.BaseSuite, live: bool, loop: tuple[bool, bool]) -> bool:
        return self.block(suite.body if type(suite) is cst.IndentedBlock else (suite,), live, loop)

    def statement(self, stmt: cst.CSTNode, live: bool, loop: tuple[bool, bool]) -> bool:
        kind = type(stmt)
        if kind in (cst.SimpleStatementLine, cst.SimpleStatementSuite):
            for small in reversed(stmt.body):
                live = live or self.raising  # (in a `try`: a handler may be next)
                self.out[id(small)] = live
                live = self.small(small, live, loop)
            return live
        if kind is cst.If:
            arms = self.suite(stmt.body, live, loop)
            if type(stmt.orelse) is cst.If:
                other = self.statement(stmt.orelse, live, loop)
            elif stmt.orelse is not None:
                other = self.suite(stmt.orelse.body, live, loop)
            else:
                other = live
            return self.reads(stmt.test) or arms or other
        if kind in (cst.For, cst.While):
            return self.loop(stmt, live)
        if kind is cst.With:
            return any(self.reads(item) for item in stmt.items) or self.suite(stmt.body, live, loop)
        if kind in (cst.Try, cst.TryStar):
            after = self.suite(stmt.finalbody.body, live, loop) if stmt.finalbody else live
            handled = any(self.suite(h.body, after, loop) for h in stmt.handlers)
            handled = handled or any(self.reads(h.type) for h in stmt.handlers)
            normal = self.suite(stmt.orelse.body, after, loop) if stmt.orelse else after
            outer, self.raising = self.raising, self.raising or handled
            try:
                return self.suite(stmt.body, normal or handled, loop) or handled
            finally:
                self.raising = outer
        if kind in (cst.FunctionDef, cst.ClassDef):
            return live or any(self.reads(d) for d in stmt.decorators)
        # `match` and anything newer: the name may be read anywhere in it.
        return live or self.reads(stmt)

    def loop(self, stmt, live: bool) -> bool:
        exit_live = self.suite(stmt.orelse.body, live, (True, True)) if stmt.orelse else live
        rebinds = type(stmt) is cst.For and self.name in target_names(stmt.target)
        test = stmt.test if type(stmt) is cst.While else None
        head = exit_live or self.reads(test)
        while True:
            body_in = self.suite(stmt.body, head, (live, head))
            new = exit_live or self.reads(test) or (False if rebinds else body_in)
            if new == head:
                break
            head = new
        return head or (type(stmt) is cst.For and self.reads(stmt.iter))

    def small(self, small: cst.BaseSmallStatement, live: bool, loop: tuple[bool, bool]) -> bool:
        kind = type(small)
        if kind is cst.Break:
            return loop[0]
        if kind is cst.Continue:
            return loop[1]
        if kind is cst.Return:
            return self.reads(small.value)
        if kind is cst.Raise:
            return True
        if kind is cst.Assign:
            bound = any(self.name in target_names(t.target) for t in small.targets)
            reads = self.reads(small.value) or any(
                self.reads(t.target) for t in small.targets if type(t.target) is not cst.Name
            )
            return reads or (live and not bound)
        if kind is cst.AnnAssign:
            bound = small.value is not None and type(small.target) is cst.Name and small.target.value == self.name
            return self.reads(small.value) or (live and not bound)
        if kind is cst.Del:
            target = small.target
            if type(target) is cst.Name and target.value == self.name:
                return False
            return live or self.reads(target)
        if kind in (cst.Global, cst.Nonlocal):
            return live
        return live or self.reads(small)


class _NameFinder(cst.CSTVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.found = False

    def visit_Name(self, node: cst.Name) -> bool:
        if node.value == self.name:
            self.found = True
        return False


def _shared(scope: cst.CSTNode, name: str) -> bool:
    """Does a function, lambda or class nested in ``scope`` name ``name``, or does the scope (or
    one nested in it) declare it ``global`` or ``nonlocal`` (:attr:`Scope.shared`)?"""
    if name in Scope(scope).shared:
        return True
    finder = _NestedReader(name, scope)
    walk(scope, finder)
    return finder.found


class _NestedReader(cst.CSTVisitor):
    """Is ``name`` named inside a function, lambda or class nested in ``scope``?"""

    def __init__(self, name: str, scope: cst.CSTNode) -> None:
        self.name = name
        self.scope = scope
        self.depth = 0
        self.found = False

    def _enter(self, node) -> None:
        if node is not self.scope:
            self.depth += 1

    def _leave(self, node) -> None:
        if node is not self.scope:
            self.depth -= 1

    visit_FunctionDef = visit_Lambda = visit_ClassDef = _enter
    leave_FunctionDef = leave_Lambda = leave_ClassDef = _leave

    def visit_Name(self, node: cst.Name) -> None:
        if self.depth and node.value == self.name:
            self.found = True
