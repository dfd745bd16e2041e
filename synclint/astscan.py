"""Cheap questions about a file, asked of CPython's ``ast`` before libcst is involved.

CPython's parser is written in C and about ten times faster than libcst's; a rule whose precondition
is syntactic (a statement of some shape, a name being used) can rule a file out on the ``ast`` and
spare it the libcst parse and the model. Only statements are walked here, not every expression node,
because walking in Python costs more than parsing.
"""

from __future__ import annotations

import ast
import re
import symtable
import warnings
from functools import lru_cache
from itertools import chain
from typing import Iterator

_BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def python_parse(text: str, path: str) -> tuple[ast.Module | None, SyntaxError | None]:
    """CPython's syntax tree of ``text``, or its complaint: (tree, None) or (None, error). Both are
    None for input CPython gives up on otherwise (too deep, too large, NUL bytes)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return compile(text, path, "exec", ast.PyCF_ONLY_AST), None
    except SyntaxError as error:
        return None, error
    except (ValueError, RecursionError, MemoryError, OverflowError):
        return None, None


def compiles(text: str, path: str) -> bool:
    """Does ``text`` certainly parse? Asked of files that no rule can fire on, which need no tree.

    Python's symbol-table pass parses with the same parser as :func:`python_parse` but keeps the
    tree in C: about a quarter cheaper than building (and freeing) every ``ast`` node. It also
    rejects a few things the parser accepts (``nonlocal`` at module level), so False means only
    "ask :func:`python_parse`", never "does not parse"."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            symtable.symtable(text, path, "exec")
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False


def statement_extent(node: ast.stmt) -> tuple[int, int]:
    """First line (a decorator's, for a decorated definition) and last line of ``node``."""
    decorators = getattr(node, "decorator_list", ())
    start = min([node.lineno, *(d.lineno for d in decorators)])
    return start, node.end_lineno or node.lineno


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
    """Is there an expression statement ``<expr>.<method>(...)`` with ``method`` in ``methods``?"""
    for statement in iter_statements(tree):
        if type(statement) is ast.Expr:
            value = statement.value
            if (
                type(value) is ast.Call
                and type(value.func) is ast.Attribute
                and value.func.attr in methods
            ):
                return True
    return False


def has_with_call(tree: ast.AST) -> bool:
    """Is there a ``with`` (or ``async with``) statement over a call, ``with f(...):``?"""
    for statement in iter_statements(tree):
        if type(statement) in (ast.With, ast.AsyncWith):
            if any(type(item.context_expr) is ast.Call for item in statement.items):
                return True
    return False


def uses_identifier(tree: ast.AST, names: frozenset[str]) -> bool:
    """Is one of ``names`` used as a name or an attribute anywhere? (A full walk: ask it last.)"""
    for node in ast.walk(tree):
        kind = type(node)
        if (kind is ast.Name and node.id in names) or (
            kind is ast.Attribute and node.attr in names
        ):
            return True
    return False


def imports_or_names_module(
    tree: ast.AST, modules: frozenset[str], text: str | None = None
) -> bool:
    """Is one of ``modules`` imported (any form, any depth), or used as a bare name?

    synclint's import resolver qualifies an unimported bare ``time`` as the module ``time``, so a
    bare use counts as much as an import. Given the ``text`` of ``tree``, a bare use is looked for
    only where the text has ``time.`` (a module is used through its attributes): the full walk it
    needs otherwise costs more than parsing."""
    # Imports are mostly at the top: look there before walking every statement of the file.
    for statement in chain(getattr(tree, "body", ()), iter_statements(tree)):
        kind = type(statement)
        if kind is ast.Import:
            if any(alias.name.split(".")[0] in modules for alias in statement.names):
                return True
        elif kind is ast.ImportFrom:
            if (statement.module or "").split(".")[0] in modules:
                return True
            if any(alias.name in modules for alias in statement.names):
                return True
    if text is not None and not any(_attribute_of(module).search(text) for module in modules):
        return False
    return any(type(node) is ast.Name and node.id in modules for node in ast.walk(tree))


@lru_cache(maxsize=32)
def _attribute_of(name: str) -> re.Pattern:
    """``name`` as a whole word followed by ``.`` (literal first: fast to search)."""
    return re.compile(rf"{re.escape(name)}(?<!\w{re.escape(name)})\s*\.")
