"""``with helper(...):`` where ``helper`` is a generator context manager of the same module or
class (``@contextlib.contextmanager``): its code before the ``yield`` runs where the ``with``
starts, its code after the ``yield`` (or in the ``finally`` around it) where the block ends.

Why: stream code wraps its joins in such helpers. SGLang-FluentLLM's ``split_and_join(current,
alt)`` makes the side stream wait for the current stream on entry and the current stream wait for
the side stream on exit; judged without it, every side-stream block inside looks unordered.

Only the simple shape is walked: one ``yield``, either a statement of the body or alone in the
body of a top-level ``try`` (whose ``else`` and ``finally`` then run at exit). Anything else (a
``yield`` inside ``with torch.cuda.stream(s):``, several ``yield``s, ``async``) stays an unknown
context, as before. Each half is walked like an inlined method (:mod:`.inlining`), with the call's
arguments evaluated once; the exit half sees the arguments again but not the entry half's locals
(unknown there), and what the entry half makes is not released at the ``yield``, since the
generator's frame lives on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

import libcst as cst

from synclint.cstwalk import walk
from synclint.model.inlining import call_values, can_inline, inline_call
from synclint.model.resolver import dotted

if TYPE_CHECKING:  # pragma: no cover
    from synclint.model.interpreter import Interpreter


def is_context_manager(function: cst.FunctionDef) -> bool:
    """Is ``function`` a synchronous ``@contextmanager`` (``@contextlib.contextmanager``)?"""
    return function.asynchronous is None and any(
        (dotted(decorator.decorator) or "").rsplit(".", 1)[-1] == "contextmanager"
        for decorator in function.decorators
    )


def halves(function: cst.FunctionDef) -> Optional[tuple[list, list]]:
    """The statements run on entry and on exit, or None when the body is not of the simple shape."""
    if type(function.body) is not cst.IndentedBlock:
        return None
    statements = list(function.body.body)
    for index, statement in enumerate(statements):
        if _is_yield(statement):
            before, after = statements[:index], statements[index + 1 :]
            break
        if (
            type(statement) is cst.Try
            and type(statement.body) is cst.IndentedBlock
            and len(statement.body.body) == 1
            and _is_yield(statement.body.body[0])
        ):
            before = statements[:index]
            after = [
                *(_block(statement.orelse.body) if statement.orelse is not None else ()),
                *(_block(statement.finalbody.body) if statement.finalbody is not None else ()),
                *statements[index + 1 :],
            ]
            break
    else:
        return None
    counter = _Yields()
    walk(function.body, counter)
    return (before, after) if counter.count == 1 else None


def enter(interp: "Interpreter", node: cst.BaseExpression) -> Optional[Callable[[], None]]:
    """Walk the entry half of ``node`` when it calls a simple generator context manager of the
    module or class; return what walks the exit half (None, and nothing walked, otherwise)."""
    if type(node) is not cst.Call:
        return None
    function = _helper(interp, node.func)
    parts = halves(function) if function is not None else None
    if parts is None:
        return None
    before, after = parts
    values = call_values(interp, node.args)
    inline_call(interp, (), function, body=before, release=False, values=values)
    current = interp.state.current

    def leave() -> None:
        if interp.state.dead:
            return
        interp.state.current = current  # the exit runs in the context the entry ran in
        inline_call(interp, (), function, body=after, values=values)

    return leave


def _helper(interp: "Interpreter", func: cst.BaseExpression) -> Optional[cst.FunctionDef]:
    if type(func) is cst.Name:
        name = func.value
        return interp.context_managers[name] if can_inline(interp, name, interp.context_managers) else None
    if type(func) is cst.Attribute and type(func.value) is cst.Name and func.value.value == "self":
        name = func.attr.value
        method = interp.class_methods.get(name)
        if method is not None and can_inline(interp, name) and is_context_manager(method):
            return method
    return None


def _is_yield(statement: cst.CSTNode) -> bool:
    """Is ``statement`` a bare ``yield`` or ``yield value`` (not ``yield from``)?"""
    return (
        type(statement) is cst.SimpleStatementLine
        and len(statement.body) == 1
        and type(statement.body[0]) is cst.Expr
        and type(statement.body[0].value) is cst.Yield
        and type(statement.body[0].value.value) is not cst.From
    )


def _block(suite: cst.BaseSuite) -> list:
    return list(suite.body) if type(suite) is cst.IndentedBlock else []


class _Yields(cst.CSTVisitor):
    """Counts the ``yield``s of one function body (nested functions and lambdas are their own)."""

    def __init__(self) -> None:
        self.count = 0

    def visit_Yield(self, node: cst.Yield) -> None:
        self.count += 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False
