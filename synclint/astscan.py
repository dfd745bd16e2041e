"""Cheap questions about a file, asked of CPython's ``ast`` before libcst is involved.

CPython's parser is written in C and about ten times faster than libcst's; a rule whose precondition
is syntactic (a statement of some shape, a name being used) can rule a file out on the ``ast`` and
spare it the libcst parse and the model. Only statements are walked here, not every expression node,
because walking in Python costs more than parsing.
"""

from __future__ import annotations

import ast
from typing import Iterator

_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def iter_statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every statement in ``tree`` (nested blocks included: functions, classes, loops, ``try``,
    ``match``), in no particular order. Except handlers and match cases are walked into."""
    stack: list[ast.AST] = list(getattr(tree, "body", ()))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.stmt):
            yield node
        for field in _BLOCKS:
            block = getattr(node, field, None)
            if block:
                stack.extend(block)


def has_bare_method_call(tree: ast.AST, methods: frozenset[str]) -> bool:
    """Is there an expression statement ``<anything>.<method>(...)`` with ``method`` in ``methods``?"""
    for statement in iter_statements(tree):
        if type(statement) is ast.Expr:
            value = statement.value
            if type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr in methods:
                return True
    return False
