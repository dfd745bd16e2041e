"""``with helper(...):`` where ``helper`` is a generator context manager of the same module or
class (``@contextlib.contextmanager``): its code before the ``yield`` runs where the ``with``
starts, its code after the ``yield`` (or in the ``finally`` around it) where the block ends.

Why: stream code wraps its joins in such helpers. SGLang-FluentLLM's ``split_and_join(current,
alt)`` makes the side stream wait for the current stream on entry and the current stream wait for
the side stream on exit; judged without it, every side-stream block inside looks unordered.

Only one ``yield`` is walked, on a straight path from the body: a statement of the body, or of
the body of a ``try`` (whose ``else`` and ``finally`` then run at exit) or of a ``with`` (whose
contexts are entered with the entry half and left with the exit half: Megatron-LM's
``stream_acquire_context`` yields inside ``with torch.cuda.stream(self.stream):``, so the caller's
block runs on that stream), nested in any order. Anything else (a ``yield`` under an ``if``,
several ``yield``s, ``async``) stays an unknown context, as before. Each half is walked like an
inlined method (:mod:`.inlining`), with the call's arguments evaluated once; the exit half starts
from the entry half's names (``current = torch.cuda.current_stream()`` on entry,
``current.wait_stream(side)`` on exit), and what the entry half makes is not released at the
``yield``, since the generator's frame lives on.
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


class WithEntry:
    """In an entry half: enter the contexts of ``stmt`` (a ``with`` around the ``yield``), and
    leave them open for the caller's block (:meth:`Interpreter.st_WithEntry`)."""

    __slots__ = ("stmt", "opened")

    def __init__(self, stmt: cst.With, opened: Optional[list] = None) -> None:
        self.stmt = stmt
        self.opened = opened  # where the interpreter keeps what it opened, until the exit half


class WithExit:
    """In an exit half: leave the contexts its :class:`WithEntry` opened."""

    __slots__ = ("entry",)

    def __init__(self, entry: WithEntry) -> None:
        self.entry = entry


def halves(function: cst.FunctionDef) -> Optional[tuple[list, list]]:
    """The statements run on entry and on exit, or None when the body is not of the simple shape.
    A ``with`` on the path to the ``yield`` stands as a :class:`WithEntry` at the end of the entry
    half and its :class:`WithExit` at the start of the exit half (templates: :func:`enter` makes
    fresh ones per call)."""
    if type(function.body) is not cst.IndentedBlock:
        return None
    parts = _split(list(function.body.body))
    if parts is None:
        return None
    counter = _Yields()
    walk(function.body, counter)
    return parts if counter.count == 1 else None


def _split(statements: list) -> Optional[tuple[list, list]]:
    """(before, after) the one ``yield`` reached from ``statements`` through ``try`` bodies and
    ``with`` bodies; None when there is no such path."""
    for index, statement in enumerate(statements):
        before, rest = statements[:index], statements[index + 1 :]
        if _is_yield(statement):
            return before, rest
        kind = type(statement)
        if kind is cst.Try and type(statement.body) is cst.IndentedBlock:
            inner = _split(list(statement.body.body))
            if inner is not None:
                after = [
                    *inner[1],
                    *(_block(statement.orelse.body) if statement.orelse is not None else ()),
                    *(_block(statement.finalbody.body) if statement.finalbody is not None else ()),
                ]
                return before + inner[0], after + rest
        elif kind is cst.With and statement.asynchronous is None and type(statement.body) is cst.IndentedBlock:
            inner = _split(list(statement.body.body))
            if inner is not None:
                entry = WithEntry(statement)
                return [*before, entry, *inner[0]], [*inner[1], WithExit(entry), *rest]
    return None


def _fresh(before: list, after: list) -> tuple[list, list]:
    """Copies of a split whose :class:`WithEntry` markers have a place of their own to keep what
    they open (one per ``with`` call of the helper: the same helper may be entered twice, nested)."""
    entries = {id(m): WithEntry(m.stmt, []) for m in before if type(m) is WithEntry}
    return (
        [entries.get(id(m), m) for m in before],
        [WithExit(entries[id(m.entry)]) if type(m) is WithExit else m for m in after],
    )


def enter(interp: "Interpreter", node: cst.BaseExpression) -> Optional[Callable[[], None]]:
    """Walk the entry half of ``node`` when it calls a simple generator context manager of the
    module or class; return what walks the exit half (None, and nothing walked, otherwise)."""
    if type(node) is not cst.Call:
        return None
    function = _helper(interp, node.func)
    parts = halves(function) if function is not None else None
    if parts is None:
        return None
    before, after = _fresh(*parts)
    entries = [m for m in before if type(m) is WithEntry]
    values = call_values(interp, node.args)
    frame: dict = {}  # the generator's locals, alive from the entry half to the exit half
    inline_call(
        interp, (), function, body=before, release=False, values=values,
        keep_stream=bool(entries), frame=frame,
    )
    current = interp.state.current

    def leave() -> None:
        if interp.state.dead:
            for entry in reversed(entries):  # the exit half is not walked: only close its blocks
                interp.close_with(entry.opened, restore=False)
            return
        interp.state.current = current  # the exit runs in the context the entry ran in
        inline_call(interp, (), function, body=after, values=values, frame=frame)

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
