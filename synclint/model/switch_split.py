"""Walking a function once per value of a parameter it tests more than once.

Why: ``if start_pos != 0: ... if mask.any(): ...`` (a host synchronization on the decode path),
then later ``if start_pos != 0: <read on a side stream>``. One walk joins the two arms of the first
``if`` and then takes the second ``if``'s arm from the joined state: it keeps a path that skipped
the synchronization and still made the read, which no call can take (the parameter is never
rebound). Walking the function once with the test assumed true and once assumed false removes
such paths; the findings are those of the two walks. It is done only for a function whose single
walk found a stream hazard, so the cost stays where it pays.
"""

from __future__ import annotations

from typing import Optional

import libcst as cst

from synclint.cstwalk import walk
from synclint.model.bindings import Scope
from synclint.model.resolver import without_not


def predicate(test: cst.BaseExpression) -> Optional[tuple[tuple, bool]]:
    """(the predicate ``test`` asks of a name, whether the test is that predicate or its
    negation): ``("truth", p)`` for ``p``; ``("eq", p, "0")`` for ``p == 0`` and, negated, for
    ``p != 0``; ``("none", p)`` for ``p is None`` and, negated, ``p is not None``; ``not`` flips.
    None for any other test."""
    test, negated = without_not(test)
    if type(test) is cst.Name:
        return ("truth", test.value), not negated
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    left, target = test.left, test.comparisons[0]
    if type(left) is not cst.Name:
        return None
    operator, right = type(target.operator), target.comparator
    if operator in (cst.Is, cst.IsNot) and type(right) is cst.Name and right.value == "None":
        return ("none", left.value), (operator is cst.Is) != negated
    if operator in (cst.Equal, cst.NotEqual) and isinstance(right, (cst.Integer, cst.SimpleString)):
        return ("eq", left.value, right.value), (operator is cst.Equal) != negated
    return None


def split_predicate(function: cst.FunctionDef) -> Optional[tuple]:
    """The predicate of a parameter that two or more ``if`` tests of ``function`` ask (not in
    nested functions), the parameter never bound in the body; None where there is none. The
    first such, in source order, when there are several."""
    finder = _IfTests(function)
    walk(function.body, finder)
    counts: dict[tuple, int] = {}
    for test in finder.tests:
        found = predicate(test)
        if found is not None:
            counts[found[0]] = counts.get(found[0], 0) + 1
    repeated = [key for key, n in counts.items() if n >= 2]
    if not repeated:
        return None
    scope = Scope(function)
    for key in repeated:
        name = key[1]
        if name in scope.parameters and name not in scope.bindings and name not in scope.shared:
            return key
    return None


_EMPTY_MODULE = cst.Module(body=[])


def asked_key(test: cst.BaseExpression) -> tuple[tuple, bool]:
    """(the key of what ``test`` asks, whether ``test`` asks it or its negation): its
    :func:`predicate` where it has one, else ``("expr", its text without its not s)``."""
    found = predicate(test)
    if found is not None:
        return found
    stripped, negated = without_not(test)
    return ("expr", _EMPTY_MODULE.code_for_node(stripped)), not negated


def assumed_value(test: cst.BaseExpression, assumed: dict) -> Optional[bool]:
    """The value ``test`` has under ``assumed`` (predicate -> value), or None."""
    found = predicate(test)
    if found is None and any(key[0] == "expr" for key in assumed):
        found = asked_key(test)
    if found is None or found[0] not in assumed:
        return None
    key, positive = found
    return assumed[key] == positive


class OwnScopeVisitor(cst.CSTVisitor):
    """A visitor that stays in the scope it starts in: nested functions, lambdas and classes
    run elsewhere, under other names."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


class _IfTests(OwnScopeVisitor):
    def __init__(self, function: cst.FunctionDef) -> None:
        self.function = function
        self.tests: list[cst.BaseExpression] = []

    def visit_If(self, node: cst.If) -> None:
        self.tests.append(node.test)
